"""A small client for the Reduction Lab REST API: plain HTTP, standard library only, and
:class:`LabBackend`, the engine's storage backend on it (offloads stored in the Lab).

Importing it loads neither Django nor the engine, so any agent can vendor it.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, NoReturn, cast

__all__ = ["LabBackend", "ReductionAPIError", "ReductionClient"]


class ReductionAPIError(Exception):
    """The API answered with an error; ``status``, ``detail`` and ``field`` say which."""

    def __init__(self, status: int, detail: str, field: str | None = None) -> None:
        self.status = status
        self.detail = detail
        self.field = field
        super().__init__(f"HTTP {status}: {detail}")


class _Context:
    """The context ``clear`` answered last for a conversation, and what it was asked with."""

    def __init__(self, revision: int, messages: list[Any], shape: Any) -> None:
        self.revision = revision
        self.messages = list(messages)
        self.shape = shape

    def continues(self, messages: list[Any], shape: Any) -> bool:
        """Whether ``messages`` is this context plus new messages, asked for alike."""
        kept = self.messages
        return shape == self.shape and len(messages) >= len(kept) and messages[: len(kept)] == kept


class ReductionClient:
    """Calls ``/api/v1/`` of a Reduction Lab server with a bearer key.

    For example::

        client = ReductionClient("http://127.0.0.1:8000", api_key="rl_...")
        out = client.truncate(tool_name="grep", tool_call_id="call_1", result=big_text,
                              conversation_id="run-42")
        cleared = client.clear(messages, conversation_id="run-42", tools=tools)
        text = client.read_file("/tmp/trunc/call_1", offset=0, limit=200)
    """

    contexts_kept = 16
    """The conversations whose last context the client keeps, to send only what follows."""

    def __init__(self, base_url: str, api_key: str, *, timeout: float = 60.0) -> None:
        self.base_url = base_url.rstrip("/") + "/api/v1"
        self.api_key = api_key
        self.timeout = timeout
        self._contexts: dict[str, _Context] = {}
        self.last_sent = 0
        """How many messages the last :meth:`clear` sent (only the new ones when it
        continued its last context)."""

    def _request(
        self, method: str, path: str, body: Any = None, query: dict[str, Any] | None = None
    ) -> Any:
        url = self.base_url + path
        if query:
            url += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})
        data = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(url, data=data, method=method)
        request.add_header("Authorization", f"Bearer {self.api_key}")
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = response.read()
                kind = response.headers.get("Content-Type", "")
        except urllib.error.HTTPError as exc:
            self._raise_for(exc)
        except urllib.error.URLError as exc:
            # urllib wraps only what failed while the request was being sent; a server
            # resets the connection then when it refuses a body too big to read through.
            if data is not None and isinstance(exc.reason, (ConnectionResetError, BrokenPipeError)):
                raise ReductionAPIError(
                    413,
                    f"the server closed the connection while the request body of {len(data)} "
                    "bytes was being sent, as it does with a body far over its size limit",
                ) from exc
            raise
        if not raw:
            return None
        if kind.startswith("application/json"):
            return json.loads(raw)
        # The server stores a tool's lone surrogates (undecodable bytes read with
        # surrogateescape) as UTF-8 writes any other code point; read them back the same.
        return raw.decode("utf-8", "surrogatepass")

    @staticmethod
    def _raise_for(exc: urllib.error.HTTPError) -> NoReturn:
        payload = exc.read()
        try:
            error = json.loads(payload)
            raise ReductionAPIError(exc.code, error.get("detail", ""), error.get("field")) from None
        except (ValueError, AttributeError):
            raise ReductionAPIError(exc.code, payload.decode("utf-8", "replace")) from None

    def _object(
        self, method: str, path: str, body: Any = None, query: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """A JSON object answer (every operation but the raw file's)."""
        return cast("dict[str, Any]", self._request(method, path, body, query))

    @staticmethod
    def _config(config: dict[str, Any] | None, config_id: int | None) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if config is not None:
            out["config"] = config
        if config_id is not None:
            out["config_id"] = config_id
        return out

    def truncate(
        self,
        *,
        tool_name: str,
        result: str | dict[str, Any],
        tool_call_id: str = "",
        arguments: str = "",
        conversation_id: str | None = None,
        config: dict[str, Any] | None = None,
        config_id: int | None = None,
    ) -> dict[str, Any]:
        """Run truncation on one tool result; ``["result"]`` is what to put in the conversation."""
        body = {
            "tool_name": tool_name,
            "tool_call_id": tool_call_id,
            "arguments": arguments,
            "result": result,
            "conversation_id": conversation_id,
            **self._config(config, config_id),
        }
        return self._object("POST", "/truncate", body)

    def clear(
        self,
        messages: list[Any],
        *,
        format: str = "openai_chat",
        tools: list[dict[str, Any]] | None = None,
        system: Any = None,
        conversation_id: str | None = None,
        config: dict[str, Any] | None = None,
        config_id: int | None = None,
    ) -> dict[str, Any]:
        """Run the clear phase; ``["messages"]`` is the whole context to send to the model.

        With a ``conversation_id``, a context that continues the one this client got last
        time for it (that list plus new messages, the same format, tools and system) is
        sent as only its new messages with ``previous_revision``; the server rebuilds the
        rest. When the server no longer has that revision (409), the whole context is
        sent instead. Either way the answer is the same."""
        config_fields = self._config(config, config_id)
        body: dict[str, Any] = {
            "format": format,
            "messages": messages,
            "tools": tools or [],
            "conversation_id": conversation_id,
            **config_fields,
        }
        if system is not None:
            body["system"] = system
        last = self._contexts.pop(conversation_id, None) if conversation_id else None
        shape = (format, tools or [], system, config_fields)
        if last is not None and last.continues(messages, shape):
            new = messages[len(last.messages) :]
            continued = {
                "format": format,
                "messages": new,
                "conversation_id": conversation_id,
                "previous_revision": last.revision,
                **config_fields,
            }
            try:
                answer = self._object("POST", "/clear", continued)
            except ReductionAPIError as exc:
                if exc.status != 409:
                    raise
            else:
                self.last_sent = len(new)
                start = answer["from_index"]
                answer["messages"] = [*messages[:start], *answer["messages"]]
                self._remember(conversation_id, answer, shape)
                return answer
        answer = self._object("POST", "/clear", body)
        self.last_sent = len(messages)
        self._remember(conversation_id, answer, shape)
        return answer

    def _remember(self, conversation_id: str | None, answer: dict[str, Any], shape: Any) -> None:
        if not conversation_id or answer.get("revision") is None:
            return
        self._contexts[conversation_id] = _Context(answer["revision"], answer["messages"], shape)
        while len(self._contexts) > self.contexts_kept:
            self._contexts.pop(next(iter(self._contexts)))

    def read_file(self, path: str, *, offset: int = 0, limit: int = 2000) -> dict[str, Any]:
        """The read_file tool: numbered lines of an offloaded file."""
        return self._object(
            "GET", "/files/read", query={"path": path, "offset": offset, "limit": limit}
        )

    def raw_file(self, path: str) -> str:
        """The exact content of an offloaded file."""
        return cast(str, self._request("GET", "/files/raw", query={"path": path}))

    def write_file(
        self, path: str, content: str, *, conversation_id: str | None = None
    ) -> dict[str, Any]:
        """Store ``content`` at ``path`` (the same content again is a no-op; other content
        at a taken path is an error, 409); the file as ``files()`` lists it."""
        body = {"path": path, "content": content, "conversation_id": conversation_id}
        return self._object("POST", "/files", body)

    def read_file_tool(self) -> dict[str, Any]:
        """The read_file tool definitions (``openai``, ``anthropic``, ``responses``)."""
        return self._object("GET", "/tools/read_file")

    def events(self, **filters: Any) -> dict[str, Any]:
        return self._object("GET", "/events", query=filters)

    def files(self, **filters: Any) -> dict[str, Any]:
        return self._object("GET", "/files", query=filters)


class LabBackend:
    """The engine's storage backend (``write``, ``read``) on a Reduction Lab server: what
    an agent running the engine in its own process offloads is stored in the Lab, listed
    in its file browser under ``conversation_id``, and read back from there.

    For example::

        client = ReductionClient("http://127.0.0.1:8000", api_key="rl_...")
        config = ReductionConfig(backend=LabBackend(client, conversation_id="run-42"))

    A failed write raises :class:`ReductionAPIError` (the engine reports it as its
    ``OffloadError``, caused by it); a read of a path the Lab does not hold raises
    ``FileNotFoundError``, any other failure :class:`ReductionAPIError`.
    """

    max_path_chars = 500
    """The longest path the Lab stores: the engine's config check refuses a longer root."""

    def __init__(self, client: ReductionClient, *, conversation_id: str | None = None) -> None:
        self.client = client
        self.conversation_id = conversation_id

    def write(self, request: Any) -> None:
        """Store ``request.content`` at ``request.file_path`` (an engine ``WriteRequest``)."""
        self.client.write_file(
            request.file_path, request.content, conversation_id=self.conversation_id
        )

    def read(self, path: str) -> str:
        """The content stored at ``path``, in any conversation of the key's workspace (a
        path holds one content across them)."""
        try:
            return self.client.raw_file(path)
        except ReductionAPIError as exc:
            if exc.status == 404:
                raise FileNotFoundError(f"file not found: {path}") from exc
            raise
