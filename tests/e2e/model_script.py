"""The scripted model behind the end-to-end tests: what it answers, and what it was asked.

A real client (Claude Code, Codex, Gemini CLI, OpenClaw) talks to one of our model servers on
127.0.0.1 instead of a provider. Each wire format (``model_anthropic.py``, ``model_responses.py``,
``model_gemini.py``, ``model_openai_chat.py``) reads a request into an ``Exchange`` (the latest
user prompt, how many tool rounds followed it, which tools are offered), asks the ``Script`` for
the next ``Step`` (call a tool, or answer text) and writes it in its own format. Every request
body is kept in ``requests``, so a test asserts what the model saw.

A script is stateless: the step for a request is chosen from the prompt and the number of tool
rounds since it, so a client's retries and side requests (titles, token counts) get the same
answer each time. A ``Turn`` whose ``match`` is in the prompt plays its steps in order; a
prompt no turn matches gets the default reply. A tool call is never sent to a request that
offers no tools (a side request): it gets a plain reply instead.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit


@dataclass(frozen=True)
class ToolCall:
    """The model calls tool ``name`` with ``arguments`` (``namespace``: Codex's MCP namespace tool)."""

    name: str
    arguments: dict[str, Any]
    namespace: str | None = None


@dataclass(frozen=True)
class Reply:
    """The model answers ``text`` and ends its turn."""

    text: str


Step = ToolCall | Reply


@dataclass(frozen=True)
class Turn:
    """For a prompt holding ``match``: ``steps[n]`` answers the request after ``n`` tool rounds."""

    match: str
    steps: tuple[Step, ...]


@dataclass(frozen=True)
class Exchange:
    """What a wire format read of one request."""

    prompt: str  # the text of the latest user message that is not only tool results
    rounds: int  # tool calls answered since that message
    tools: tuple[str, ...]  # the names of the tools offered (Codex: namespace/tool)


@dataclass(frozen=True)
class Recorded:
    """One request the model server received: its path, its JSON body and what it meant."""

    path: str
    body: dict[str, Any]
    exchange: Exchange | None


@dataclass
class Script:
    """The turns a test plays; a prompt no turn matches gets ``default``."""

    turns: list[Turn] = field(default_factory=list)
    default: Reply = Reply("OK.")

    def step_for(self, exchange: Exchange) -> Step:
        for turn in self.turns:
            if turn.match in exchange.prompt:
                step = turn.steps[exchange.rounds] if exchange.rounds < len(turn.steps) else Reply("Done.")
                if isinstance(step, ToolCall) and not exchange.tools:
                    return self.default
                return step
        return self.default


# A wire format's handler: (path with query, JSON body) -> a JSON reply, or an iterator of SSE frames.
Handler = Callable[[str, dict[str, Any]], "dict[str, Any] | list[Any] | Iterator[bytes]"]


class ModelServer:
    """An HTTP server on a free loopback port, in a daemon thread, answering with ``handler``.

    Use as a context manager; ``base_url`` is ``http://127.0.0.1:PORT``. ``requests`` lists every
    request received, oldest first (safe to read while the client runs).
    """

    def __init__(self, handler: Handler):
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._handler = handler
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _make_request_handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def record(self, path: str, body: dict[str, Any], exchange: Exchange | None) -> None:
        with self._lock:
            self.requests.append(Recorded(path, body, exchange))

    def answer(self, path: str, body: dict[str, Any]) -> dict[str, Any] | list[Any] | Iterator[bytes]:
        return self._handler(path, body)

    def __enter__(self) -> ModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


def _make_request_handler(server: ModelServer) -> type[BaseHTTPRequestHandler]:
    class _RequestHandler(BaseHTTPRequestHandler):
        # HTTP/1.0: one response per connection, closed at its end (how an SSE stream without a
        # length ends).
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                self._send_json(400, {"error": {"message": "body is not JSON"}})
                return
            try:
                reply = server.answer(self.path, body if isinstance(body, dict) else {"body": body})
            except Exception as exc:  # a script error shows up in the client's output, not as a hang
                self._send_json(500, {"error": {"message": f"scripted model failed: {exc!r}"}})
                raise
            if isinstance(reply, (dict, list)):
                self._send_json(200, reply)
            else:
                self._send_stream(reply)

        def do_GET(self) -> None:
            # Model listings and health checks some clients make: an empty list is enough.
            self._send_json(200, {"object": "list", "data": [], "models": []})

        def _send_json(self, status: int, data: Any) -> None:
            raw = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def _send_stream(self, frames: Iterable[bytes]) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            for frame in frames:
                self.wfile.write(frame)
                self.wfile.flush()

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the recorded requests say what happened

    return _RequestHandler


def sse(data: Any, event: str | None = None) -> bytes:
    """One Server-Sent Event frame carrying ``data`` as JSON (or as is, when a string)."""
    text = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {text}\n\n".encode()


def route(path: str) -> str:
    """The path of a request without its query string."""
    return urlsplit(path).path


def arguments_json(call: ToolCall) -> str:
    return json.dumps(call.arguments)
