"""``POST /floor/clear``: the in-process work on the request body, answered as bytes;
``GET /floor/``: 200, for the server helper to wait for."""

from __future__ import annotations

import msgspec
from django.http import HttpRequest, HttpResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt

from benchmarks.api_load import in_process
from benchmarks.stack_floor import FLOOR_PATH, READY_PATH
from reduction_app.engine import InMemoryBackend

# One backend per worker, as the benchmark's in-process side keeps one: after the first
# clearing request the offloads are found stored, as they are in the real API.
_BACKEND = InMemoryBackend()


@csrf_exempt
def clear_floor(request: HttpRequest) -> HttpResponse:
    _, answer = in_process(request.body, _BACKEND)
    return HttpResponse(msgspec.json.encode(answer), content_type="application/json")


def ready(request: HttpRequest) -> HttpResponse:
    return HttpResponse(b"ok", content_type="text/plain")


urlpatterns = [path(FLOOR_PATH.lstrip("/"), clear_floor), path(READY_PATH.lstrip("/"), ready)]
