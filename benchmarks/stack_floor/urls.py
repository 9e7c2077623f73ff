"""``POST /floor/clear``: the in-process work on the request body, answered as bytes;
``POST /floor/body``: the body read, ``{}`` answered; ``GET /floor/``: 200, for the
server helper to wait for."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt

from benchmarks.api_load import in_process
from benchmarks.stack_floor import BODY_PATH, FLOOR_PATH, READY_PATH
from reduction_app.engine import InMemoryBackend

# One backend per worker, as the benchmark's in-process side keeps one: after the first
# clearing request the offloads are found stored, as they are in the real API.
_BACKEND = InMemoryBackend()


@csrf_exempt
def clear_floor(request: HttpRequest) -> HttpResponse:
    _, _, encoded = in_process(request.body, _BACKEND)
    return HttpResponse(encoded, content_type="application/json")


@csrf_exempt
def body_only(request: HttpRequest) -> HttpResponse:
    request.body  # noqa: B018  # read, as any view of it must
    return HttpResponse(b"{}", content_type="application/json")


def ready(request: HttpRequest) -> HttpResponse:
    return HttpResponse(b"ok", content_type="text/plain")


urlpatterns = [
    path(FLOOR_PATH.lstrip("/"), clear_floor),
    path(BODY_PATH.lstrip("/"), body_only),
    path(READY_PATH.lstrip("/"), ready),
]
