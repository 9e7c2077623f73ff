"""A fake OpenAI chat server on 127.0.0.1 for tests: scripted replies, every request kept.

    with OpenAIServer([Reply(tool_calls=[ToolCall("call_1", "ls", '{"path":"."}')]),
                       Reply(content="Done.", prompt_tokens=90, cached_tokens=64)]) as server:
        client = openai.OpenAI(base_url=server.url, api_key="x")
        ...                 # server.requests: the JSON bodies received, in order
Each ``POST /v1/chat/completions`` takes the next :class:`Reply` (none left: HTTP 500);
``stream=True`` answers as server-sent events (usage in a last chunk when asked for).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

__all__ = ["OpenAIServer", "Reply", "ToolCall"]


@dataclass(frozen=True)
class ToolCall:
    """One tool call of a reply; ``arguments`` is sent exactly as given (a JSON string)."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Reply:
    """One scripted answer: assistant text, tool calls, or both, and its usage."""

    content: str | None = None
    tool_calls: Sequence[ToolCall] = ()
    prompt_tokens: int = 10
    completion_tokens: int = 5
    cached_tokens: int = 0
    model: str = "gpt-4o-2024-08-06"

    def message(self) -> dict[str, Any]:
        """The assistant message of this reply, as OpenAI sends it."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in self.tool_calls
            ]
        return message

    def usage(self) -> dict[str, Any]:
        """The ``usage`` object of this reply."""
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
            "prompt_tokens_details": {"cached_tokens": self.cached_tokens},
        }


@dataclass
class OpenAIServer:
    """The server, started on entering and stopped on leaving the ``with`` block."""

    replies: Sequence[Reply]
    requests: list[dict[str, Any]] = field(default_factory=list)
    url: str = ""  # "http://127.0.0.1:PORT/v1", set on entering
    _left: list[Reply] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    def __enter__(self) -> OpenAIServer:
        self._left = list(self.replies)
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"] or 0)))
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(HTTPStatus.NOT_FOUND, {"error": {"message": self.path}})
                    return
                owner.requests.append(body)
                if not owner._left:
                    self._send(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": {"message": "none"}})
                    return
                reply = owner._left.pop(0)
                number = len(owner.requests)
                if body.get("stream"):
                    self._stream(reply, number, body.get("stream_options") or {})
                else:
                    self._send(HTTPStatus.OK, _completion(reply, number))

            def _send(self, status: HTTPStatus, data: dict[str, Any]) -> None:
                raw = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def _stream(self, reply: Reply, number: int, options: dict[str, Any]) -> None:
                self.send_response(HTTPStatus.OK)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for chunk in _chunks(reply, number, bool(options.get("include_usage"))):
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")

            def log_message(self, format: str, *args: Any) -> None:
                pass  # the test's output stays quiet

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        assert self._server is not None and self._thread is not None
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


def _completion(reply: Reply, number: int) -> dict[str, Any]:
    finish = "tool_calls" if reply.tool_calls else "stop"
    return {
        "id": f"chatcmpl-{number}",
        "object": "chat.completion",
        "created": 1_764_921_600 + number,
        "model": reply.model,
        "choices": [{"index": 0, "message": reply.message(), "finish_reason": finish}],
        "usage": reply.usage(),
    }


def _chunks(reply: Reply, number: int, usage: bool) -> Iterator[dict[str, Any]]:
    base = {
        "id": f"chatcmpl-{number}",
        "object": "chat.completion.chunk",
        "created": 1_764_921_600 + number,
        "model": reply.model,
    }
    delta: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.tool_calls:
        delta["tool_calls"] = [
            {"index": i, **call} for i, call in enumerate(reply.message()["tool_calls"])
        ]
    yield {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
    finish = "tool_calls" if reply.tool_calls else "stop"
    yield {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}
    if usage:
        yield {**base, "choices": [], "usage": reply.usage()}
