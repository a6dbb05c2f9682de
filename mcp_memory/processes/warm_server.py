"""``mcp-memory warm``: the one warm process of a workspace (see ``runtime/warm.py`` for the picture).

It opens the memory once (index, snapshot, model) and serves, on one loopback port:

* hook requests, exactly as the bridge of a ``serve`` does (``hooks.handle_request``);
* MCP clients: a stdio front (``runtime/front.py``) opens an authenticated stream (``bridge.open_stream``)
  and from then on the connection carries the client's JSON-RPC lines both ways. Each
  connection gets an ``MCPServer`` of its own (``create_server``), so its sessions, episodes,
  privacy (a ``--shared`` front) and default scope (the stream request's ``scope``) are its
  own, on the memory every client shares.

It holds ``warm-<uid>-<digest>.lock`` for its whole life: one process per workspace, user and
settings. It exits after ``[warm] idle_minutes`` with no client connected and no request, or
when its bridge file disappears (someone removed the index folder: a new process takes over).
Killed at any moment (``kill -9``), it loses nothing that was acknowledged: every write of
markdown is atomic and done before the reply goes out, and the fronts start or find another.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import threading
import time
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
from filelock import FileLock, Timeout

from mcp_memory import __version__
from mcp_memory.config import Settings
from mcp_memory.runtime.allocators import tune_for_long_running
from mcp_memory.runtime.bridge import STREAM_OP, BridgeServer
from mcp_memory.runtime.warm import WARM_ROLE, lock_path, settings_digest

log = logging.getLogger(__name__)

MAX_LINE_BYTES = 64 * 1024 * 1024  # one JSON-RPC message; the SDK's own stdio transport has no limit
IDLE_CHECK_SECONDS = 1.0


class WarmProcess:
    """Serves hooks and stdio fronts of one workspace from one memory until idle."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.digest = settings_digest(settings)
        self.idle_seconds = settings.warm.idle_minutes * 60
        self._clients = 0
        self._served = 0
        self._last_activity = time.monotonic()
        self._lock = threading.Lock()
        self._token: Any = None
        self._spawn: Any = None  # the task group's start_soon, once the loop runs
        self._bridge: BridgeServer | None = None
        from mcp_memory.runtime.service import MemoryService

        self.service = MemoryService(settings, sleep=True, start_delay=0.0)

    # ----- running ---------------------------------------------------------------------------
    def run(self) -> int:
        """Serve until idle; 0 also when another warm process already serves these settings."""
        lock = FileLock(str(lock_path(self.settings, self.digest)))
        try:
            lock.acquire(timeout=0)
        except Timeout:
            log.info("another warm process serves %s with these settings; exiting", self.settings.workspace)
            return 0
        # The long-running process of a workspace: the allocator settings `serve` applies, so memory
        # freed after each store or sync goes back instead of staying in per-thread heaps.
        tune_for_long_running()
        try:
            self.service.start()  # the index and the model load while the first clients connect
            anyio.run(self._main)
        finally:
            self.service.close()
            lock.release()
        log.info("warm process exits after serving %d clients", self._served)
        return 0

    async def _main(self) -> None:
        self._token = anyio.lowlevel.current_token()
        async with anyio.create_task_group() as group:
            self._spawn = group.start_soon
            self._bridge = BridgeServer(
                self.settings.index_dir, self._hook_request, streams=self, max_connections=32,
                about={"role": WARM_ROLE, "settings": self.digest, "version": __version__},
            ).start()
            log.info("warm process %d serving %s on port %d", os.getpid(), self.settings.workspace, self._bridge.port)
            try:
                async with anyio.create_task_group() as ending:
                    # Whichever comes first: the idle time, or a request to stop (kill, logout,
                    # an upgrade script). Either way the bridge file goes first, then the memory
                    # closes and the lock is freed; only kill -9 leaves a file to be found stale.
                    ending.start_soon(self._until_signal, ending.cancel_scope)
                    await self._until_idle()
                    ending.cancel_scope.cancel()
            finally:
                self._bridge.stop()
                group.cancel_scope.cancel()

    async def _until_signal(self, scope: anyio.CancelScope) -> None:
        if not hasattr(signal, "SIGTERM") or os.name != "posix":
            return
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
            async for signum in signals:
                log.info("stopping on signal %d", signum)
                scope.cancel()
                return

    async def _until_idle(self) -> None:
        assert self._bridge is not None
        while True:
            await anyio.sleep(IDLE_CHECK_SECONDS)
            with self._lock:
                clients, idle = self._clients, time.monotonic() - self._last_activity
            if clients == 0 and idle >= self.idle_seconds:
                log.info("idle for %.0f s with no client: exiting", idle)
                return
            if clients == 0 and not self._bridge.info_path.exists():
                log.info("the bridge file is gone (index folder removed?): exiting")
                return
            if clients == 0 and self.service.workspace_gone.is_set():
                log.info("the workspace folder was removed: exiting")
                return

    def _touch(self) -> None:
        with self._lock:
            self._last_activity = time.monotonic()

    # ----- hooks -----------------------------------------------------------------------------
    def _hook_request(self, request: dict[str, Any]) -> dict[str, Any]:
        from mcp_memory.clients.hooks import handle_request

        self._touch()
        try:
            return handle_request(self.service.memory(), request)
        finally:
            self._touch()

    # ----- MCP clients (the bridge's StreamHandler) ---------------------------------------------
    def refusal(self, request: dict[str, Any]) -> str | None:
        if request.get("op") != STREAM_OP:
            return "not a stream request"
        if request.get("settings") != self.digest:
            return "this warm process serves other settings"
        if request.get("scope") not in (None, "") and _stream_scope(request) is None:
            return "the stream's scope is not a scope name"
        with self._lock:
            if self._clients >= self.settings.warm.max_clients:
                return f"already serving {self._clients} clients"
            self._clients += 1  # counted from now: a burst of fronts cannot pass the cap together
            self._last_activity = time.monotonic()
        return None

    def __call__(self, conn: socket.socket, request: dict[str, Any]) -> None:
        shared = request.get("shared") is True
        scope = _stream_scope(request)
        try:
            anyio.from_thread.run_sync(self._spawn, self._serve_client, conn, shared, scope, token=self._token)
        except Exception:
            log.warning("could not start serving a client", exc_info=True)
            self._client_left()
            conn.close()

    async def _serve_client(self, conn: socket.socket, shared: bool, scope: str | None = None) -> None:
        from mcp_memory.runtime.stdio import serve_lines
        from mcp_memory.server import create_server

        writer: asyncio.StreamWriter | None = None
        try:
            with self._lock:
                self._served += 1
            server = create_server(self.settings, self.service, shared=shared, scope=scope)
            reader, writer = await asyncio.open_connection(sock=conn, limit=MAX_LINE_BYTES)
            await serve_lines(server, _Lines(reader, self._touch), _Out(writer, self._touch))
        except Exception:
            log.warning("a client's connection failed", exc_info=True)
        finally:
            if writer is not None:
                writer.close()
            else:
                conn.close()
            self._client_left()

    def _client_left(self) -> None:
        with self._lock:
            self._clients -= 1
            self._last_activity = time.monotonic()


def _stream_scope(request: dict[str, Any]) -> str | None:
    """The default scope a front sent with its stream; None when it sent none, or no scope name."""
    from mcp_memory.core.scopes import ScopeError, check_name

    value = request.get("scope")
    if value is None or value == "":
        return None
    try:
        return check_name(value)
    except ScopeError:
        return None


class _Lines:
    """The lines a front sends, as the SDK's stdio transport reads them (an async iterator)."""

    def __init__(self, reader: asyncio.StreamReader, touch: Any):
        self._reader = reader
        self._touch = touch

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        try:
            line = await self._reader.readline()
        except (ConnectionError, asyncio.LimitOverrunError, ValueError):
            raise StopAsyncIteration from None
        if not line:
            raise StopAsyncIteration
        self._touch()
        return line.decode("utf-8", "replace")


class _Out:
    """Where the SDK's stdio transport writes: the same connection, back to the front."""

    def __init__(self, writer: asyncio.StreamWriter, touch: Any):
        self._writer = writer
        self._touch = touch

    async def write(self, text: str) -> None:
        self._writer.write(text.encode("utf-8", "surrogatepass"))

    async def flush(self) -> None:
        self._touch()
        await self._writer.drain()
