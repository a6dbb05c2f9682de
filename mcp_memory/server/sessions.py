"""Sessions as the server sees them: the tool calls of each client, written as an episode when it ends.

``SessionTracker`` is a middleware of the SDK (it sees every inbound message, before and after
its handler) and watches ``tools/call`` only: the tool, whether it failed, and what its result
recalled, stored or decided. It never changes a request or a result.

A session is the calls of one client name (from the ``initialize`` request's ``clientInfo``,
or the 2026-07-28 request envelope's) within one transport session (the ``mcp-session-id``
header over Streamable HTTP; the process for stdio, whose client is the one that started it).
It ends, and its episode is written if it did real work (``episodes.is_real_work``):

* after ``episodes.idle_minutes`` without a tool call (a background thread checks);
* when the server's lifespan ends: the stdio client disconnected, the HTTP server stops, an
  SSE connection closes, an in-memory client leaves.

A server knows no client-side session key, so the episode writer merges its record with the
hook's by client and time window (see ``experience/episodes.py``).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio.to_thread
from mcp.server import MCPServer
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from pydantic import BaseModel

from mcp_memory.experience.episodes import SERVER, Episode, is_real_work, normal_client, note_tool_result

log = logging.getLogger(__name__)

Lifespan = Callable[[MCPServer], AbstractAsyncContextManager[Any]]
Clock = Callable[[], dt.datetime]


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class SessionTracker:
    """Observes tool calls per session and hands each finished session's episode to ``write``."""

    def __init__(self, write: Callable[[Episode], object], idle_minutes: float, clock: Clock = _now):
        self._write = write
        self._idle = dt.timedelta(minutes=idle_minutes)
        self._clock = clock
        self._sessions: dict[str, Episode] = {}
        self._worked: set[str] = set()  # sessions with a successful call that is real work
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._sweeper: threading.Thread | None = None

    # ----- the middleware -------------------------------------------------------------------
    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method != "tools/call" or ctx.request_id is None:
            return await call_next(ctx)
        name = ctx.params.get("name") if ctx.params else None
        tool = name if isinstance(name, str) else "unknown"
        key, client = _session_of(ctx)
        try:
            result = await call_next(ctx)
        except Exception as exc:
            self.observe(key, client, tool, None, str(exc) or type(exc).__name__)
            raise
        self.observe(key, client, tool, result, None)
        return result

    def observe(self, key: str, client: str, tool: str, result: HandlerResult, failure: str | None) -> None:
        """Record one tool call of session ``key`` (``failure``: the protocol error it raised)."""
        try:
            data = result.model_dump(by_alias=True) if isinstance(result, BaseModel) else result
            now = self._clock()
            with self._lock:
                episode = self._sessions.get(key)
                if episode is None:
                    episode = self._sessions[key] = Episode.observed(SERVER, client, now)
                episode.see(now)
                episode.count_tool(SERVER, tool)
                if _note_result(episode, tool, data if isinstance(data, dict) else {}, failure) and is_real_work(tool):
                    self._worked.add(key)
            self._ensure_sweeper()
        except Exception:  # observing must never break serving
            log.exception("could not observe a tool call for the episode")

    # ----- ending sessions --------------------------------------------------------------------
    def flush_idle(self) -> int:
        """Write the sessions idle for longer than the setting; returns how many ended."""
        cutoff = self._clock() - self._idle
        with self._lock:
            ended = [k for k, e in self._sessions.items() if e.end <= cutoff]
            episodes = [(self._sessions.pop(k), self._take_worked(k)) for k in ended]
        for episode, worked in episodes:
            self._finish(episode, worked)
        return len(episodes)

    def flush_all(self) -> None:
        """Write every open session (the server is going away) and stop the idle check."""
        self._stop.set()
        with self._lock:
            episodes = [(e, k in self._worked) for k, e in self._sessions.items()]
            self._sessions, self._worked = {}, set()
        for episode, worked in episodes:
            self._finish(episode, worked)

    def _take_worked(self, key: str) -> bool:
        worked = key in self._worked
        self._worked.discard(key)
        return worked

    def _finish(self, episode: Episode, worked: bool) -> None:
        # A session whose every call failed (bad input a client retried, then gave up) did no work.
        if not worked or not episode.has_work():
            return
        try:
            self._write(episode)
        except Exception:
            log.exception("could not write the episode of a session")

    def wrap_lifespan(self, inner: Lifespan) -> Lifespan:
        """``inner``, then every open session written when the lifespan ends."""

        @asynccontextmanager
        async def lifespan(server: MCPServer) -> AsyncIterator[Any]:
            self._stop.clear()
            try:
                async with inner(server) as state:
                    yield state
            finally:
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(self.flush_all)

        return lifespan

    def _ensure_sweeper(self) -> None:
        with self._lock:
            if self._sweeper is not None and self._sweeper.is_alive():
                return
            self._stop.clear()
            self._sweeper = threading.Thread(target=self._sweep, name="mcp-memory-episodes", daemon=True)
            self._sweeper.start()

    def _sweep(self) -> None:
        interval = max(0.05, min(self._idle.total_seconds() / 4, 30.0))
        while not self._stop.wait(interval):
            self.flush_idle()
            with self._lock:
                if not self._sessions:
                    self._sweeper = None
                    return


def _session_of(ctx: ServerRequestContext[Any, Any]) -> tuple[str, str]:
    """(session key, client name) of a request."""
    client = "unknown"
    params = getattr(ctx.session, "client_params", None)
    name = getattr(getattr(params, "client_info", None), "name", None)
    if isinstance(name, str):
        client = normal_client(name)
    transport = ""
    headers = getattr(ctx.request, "headers", None)
    if headers is not None:
        transport = str(headers.get("mcp-session-id") or "")
    return f"{transport}|{client}", client


def _note_result(episode: Episode, tool: str, data: dict[str, Any], failure: str | None) -> bool:
    """Note one call's outcome in ``episode``; whether it succeeded."""
    if failure is not None or data.get("isError") or data.get("is_error"):
        episode.add_error(tool, failure or _error_text(data))
        return False
    episode.mark_fixed(tool, f"a later {tool} call succeeded")
    structured = data.get("structuredContent", data.get("structured_content"))
    if structured is None:
        structured = _json_text(data)
    note_tool_result(episode, structured)
    return True


def _error_text(data: dict[str, Any]) -> str:
    for block in data.get("content") or []:
        if isinstance(block, dict) and isinstance(block.get("text"), str):
            return str(block["text"])
    return "error"


def _json_text(data: dict[str, Any]) -> Any:
    text = _error_text(data)
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return None
