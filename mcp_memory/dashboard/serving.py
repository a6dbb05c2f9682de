"""The HTTP server under the dashboard: security headers on every response, an access log without queries.

The SDK builds the Starlette app (``/mcp`` or ``/sse``, then the dashboard's routes) and
would run it with uvicorn's default logging, whose access log prints every request line,
query string included: a search query, or a token a person pasted into a link. So the
server is run here instead: the same app, wrapped so that every response (the
framework's own 404 and 405, static files, ``/mcp``) carries the security headers, and
an access log on stderr that names the path, never the query.
"""

from __future__ import annotations

import copy
import logging
import socket
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    # Nothing leaves in a Referer to another site; same-origin, not no-referrer: under
    # no-referrer a browser sends "Origin: null" with the dashboard's own forms.
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
_RAW_HEADERS = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in HEADERS.items()]


class SecureHeaders:
    """ASGI wrapper adding ``HEADERS`` to every HTTP response that does not set them itself.

    Outside the whole Starlette app, so the responses of its error handling (unknown path,
    wrong method, an unhandled error) carry them too. Streamed responses (SSE) pass as they
    are: only the start message is touched.
    """

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers}
                headers.extend((name, value) for name, value in _RAW_HEADERS if name not in present)
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_secured)


def secure_headers(app: ASGIApp) -> ASGIApp:
    """``app`` with the security headers on every response it sends."""
    return SecureHeaders(app)


class HideQueries(logging.Filter):
    """Cuts the query string off the request line of uvicorn's access log records."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) == 5 and isinstance(args[2], str) and "?" in args[2]:
            record.args = (args[0], args[1], args[2].split("?", 1)[0] + "?[query not logged]", args[3], args[4])
        return True


def log_config() -> dict[str, Any]:
    """uvicorn's logging configuration, with its access log on stderr and without query strings."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config.setdefault("filters", {})["hide_queries"] = {"()": HideQueries}
    access = config["handlers"]["access"]
    access["filters"] = ["hide_queries"]
    access["stream"] = "ext://sys.stderr"  # logs go to stderr, like every other log of the server
    return config


def run_http(app: ASGIApp, *, host: str = "127.0.0.1", port: int = 0, log_level: str = "info",
             sockets: list[socket.socket] | None = None) -> None:
    """Serve ``app`` (wrapped in the security headers) with uvicorn until interrupted."""
    import uvicorn

    config = uvicorn.Config(secure_headers(app), host=host, port=port, log_level=log_level.lower(),
                            log_config=log_config())
    uvicorn.Server(config).run(sockets=sockets)
