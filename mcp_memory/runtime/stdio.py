"""Serving MCP over stdio: the SDK's transport, plus an answer for every line it cannot read.

The SDK's stdio transport hands a line that is not a JSON-RPC message to the server as an
exception, and the server only logs it. A client that sent a request on such a line (a lone
surrogate in a query, ``params`` that is not an object, a wrong ``jsonrpc`` version) never gets
an answer and waits for its timeout. JSON-RPC 2.0 asks for an error instead: -32700 for text
that is not JSON, -32600 for JSON that is not a valid message, with the request's id when it
can be read and ``null`` otherwise. This module gives that answer and keeps the transport's
own safeguards (fd 1 points at stderr while serving, so stray prints never reach the wire).
"""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio
import mcp_types as types
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

log = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


def run_stdio(server: MCPServer) -> None:
    """Serve ``server`` over stdin and stdout until stdin closes."""
    lowlevel = getattr(server, "_lowlevel_server", None)
    if lowlevel is None:
        # An SDK without this attribute: serve as it does, unreadable lines unanswered.
        log.warning("stdio: cannot answer unreadable lines with this MCP SDK; serving without it")
        server.run()
        return

    anyio.run(serve_lines, server, None, None)


async def serve_lines(server: MCPServer, lines_in: Any, lines_out: Any) -> None:
    """Serve ``server`` over JSON-RPC lines until ``lines_in`` ends.

    ``lines_in`` is an async iterable of text lines and ``lines_out`` has async ``write`` and
    ``flush`` (an ``anyio.AsyncFile``, or the warm process's socket streams); None for both
    means the process's stdin and stdout. Unreadable lines are answered as described above.
    """
    lowlevel = server._lowlevel_server
    async with stdio_server(lines_in, lines_out) as (read_stream, write_stream):
        await lowlevel.run(
            _AnsweringReadStream(read_stream, write_stream), write_stream, lowlevel.create_initialization_options()
        )


def error_for_unreadable(exc: Exception) -> types.JSONRPCError | None:
    """The JSON-RPC error that answers a line the transport could not read, or None to stay silent.

    Silent for a blank line (it carries nothing) and for a malformed *response*: the client
    sent it to answer one of our requests, and an error carrying its id could be taken for the
    answer to a request of the client's own with the same id.
    """
    raw, parsed = _line_of(exc)
    if raw is not None and not raw.strip():
        return None
    if parsed is _UNPARSED:
        return _error(None, PARSE_ERROR, f"Parse error: the line is not JSON ({_first_error(exc)})")
    if isinstance(parsed, dict) and "method" not in parsed and ("result" in parsed or "error" in parsed):
        return None
    if isinstance(parsed, list):
        why = "batches are not part of MCP: send one message per line"
    elif parsed is not _UNKNOWN and not isinstance(parsed, dict):
        why = f"a message is a JSON object, not {type(parsed).__name__}"
    elif raw is not None:  # JSON that only Python's lenient parser reads
        why = (f"not strict JSON ({_first_error(exc)}): lone UTF-16 surrogate escapes such as \\ud800, "
               "NaN and Infinity are refused")
    else:
        kind = "JSONRPCRequest" if isinstance(parsed, dict) and "id" in parsed else "JSONRPCNotification"
        why = _first_error(exc, kind)
    # Only a request's own id is echoed: anything else might match a request the client made.
    request_id = _id_of(parsed) if isinstance(parsed, dict) and "method" in parsed else None
    return _error(request_id, INVALID_REQUEST, f"Invalid Request: {why}")


class _AnsweringReadStream:
    """The transport's read stream, without the lines it could not read: each is answered instead."""

    def __init__(self, inner: Any, write_stream: Any):
        self._inner = inner
        self._write_stream = write_stream

    @property
    def last_context(self) -> Any:
        # The SDK restores each message's sender context from here.
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                return item
            await self._answer(item)

    async def _answer(self, exc: Exception) -> None:
        error = error_for_unreadable(exc)
        if error is None:
            return
        log.warning("stdio: answered an unreadable line with error %s: %s", error.error.code, error.error.message)
        try:
            await self._write_stream.send(SessionMessage(error))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass  # shutting down: nobody is left to read the answer

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _AnsweringReadStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _AnsweringReadStream:
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.aclose()


_UNPARSED = object()  # not JSON at all
_UNKNOWN = object()  # JSON, but the error did not keep the message


def _line_of(exc: Exception) -> tuple[str | None, Any]:
    """The raw line (when the error kept it) and its JSON value (``_UNPARSED`` if it is not JSON).

    The transport validates with pydantic: a JSON syntax error keeps the raw line as its input;
    a shape error keeps the parsed value (the whole message for a missing field). Python's own
    parser is more lenient (lone surrogate escapes such as ``"\\ud800"``, ``NaN``), which is
    enough to find the id of a request that pydantic refused.
    """
    if not isinstance(exc, ValidationError):
        return None, _UNPARSED
    errors = exc.errors()
    for error in errors:
        if error.get("type") == "json_invalid":
            raw = error.get("input")
            if not isinstance(raw, str):
                return None, _UNPARSED
            try:
                return raw, json.loads(raw)
            except (ValueError, RecursionError):
                return raw, _UNPARSED
    # Not a syntax error: a "missing field" error, or one about the message's own type, keeps
    # the whole message as its input.
    for error in errors:
        if error.get("type") in ("missing", "model_type") or len(error.get("loc") or ()) <= 1:
            return None, error.get("input")
    return None, _UNKNOWN


def _id_of(message: Any) -> str | int | None:
    if isinstance(message, dict):
        request_id = message.get("id")
        if isinstance(request_id, str) or (isinstance(request_id, int) and not isinstance(request_id, bool)):
            return request_id
    return None


def _first_error(exc: Exception, kind: str = "JSONRPCRequest") -> str:
    """What is wrong with the line read as a message of ``kind`` (the transport tries each kind)."""
    if not isinstance(exc, ValidationError) or not exc.errors():
        return type(exc).__name__
    errors = exc.errors()
    error = next((e for e in errors if (e.get("loc") or ("",))[0] == kind), errors[0])
    loc = [str(part) for part in error.get("loc") or ()]
    where = ".".join(loc[1:] if loc and loc[0].startswith("JSONRPC") else loc)
    message = str(error.get("msg") or "invalid")
    return f"{where}: {message}" if where else message


def _error(request_id: str | int | None, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message[:500]))
