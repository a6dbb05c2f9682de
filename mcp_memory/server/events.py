"""Change events for memory files (2026-07-28 ``subscriptions/listen``), heard only by who may see them.

Files change in worker threads (a tool's edit) and in the service's file watcher thread (hand
edits); listeners live on the server's event loop. ``ChangeNotifier`` carries a change from
any thread onto that loop, and ``FileEventBus`` delivers it to each listener allowed to hear it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
from mcp.server import MCPServer
from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated, ServerEvent

from mcp_memory.server.resources import file_uri

log = logging.getLogger(__name__)


class FileEventBus:
    """The server's ``SubscriptionBus``: change events for memory files, delivered by who may see them.

    Whether a listener may see private files is decided when it subscribes (the
    ``subscriptions/listen`` request carries the caller's token). A shared listener hears
    nothing about a private file: no ``ResourceUpdated`` and no list change caused by it alone.
    """

    def __init__(self, may_see_private: Callable[[], bool], is_private: Callable[[str], bool]):
        self._may_see_private = may_see_private
        self._is_private = is_private
        self._listeners: dict[object, tuple[Callable[[ServerEvent], None], bool]] = {}

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        key = object()
        self._listeners[key] = (listener, self._may_see_private())
        return lambda: self._listeners.pop(key, None) and None

    async def publish(self, event: ServerEvent) -> None:
        self._deliver(event, shared_may_hear=True)
        await anyio.lowlevel.checkpoint()

    async def publish_file_changes(self, paths: set[str]) -> None:
        visible = {p for p in paths if not self._is_private(p)}
        self._deliver(ResourcesListChanged(), shared_may_hear=bool(visible))
        for path in sorted(paths):
            self._deliver(ResourceUpdated(uri=file_uri(path)), shared_may_hear=path in visible)
            await anyio.lowlevel.checkpoint()

    def _deliver(self, event: ServerEvent, shared_may_hear: bool) -> None:
        for listener, sees_private in list(self._listeners.values()):
            if not (sees_private or shared_may_hear):
                continue
            try:
                listener(event)
            except Exception:  # one bad listener must not starve the others
                log.exception("subscription listener raised")


class ChangeNotifier:
    """Publishes file changes on ``bus`` from any thread, once the server's event loop is known."""

    def __init__(self, bus: FileEventBus, subscribe: Callable[[Callable[[set[str]], None]], Callable[[], None]]):
        self._bus = bus
        self._subscribe = subscribe  # e.g. MemoryService.on_change; returns what unsubscribes
        self._loop_token: Any = None
        self._lock = threading.Lock()
        self._running = 0  # lifespans running now (the SDK runs one per SSE connection)
        self._unsubscribe: Callable[[], None] | None = None

    @asynccontextmanager
    async def lifespan(self, _server: MCPServer) -> AsyncIterator[None]:
        """The server's lifespan: it remembers the event loop, so other threads can publish on it,
        and listens for changes while any lifespan runs (a warm process drops the server of a
        client that left, and must not keep it listening)."""
        if self._loop_token is None:
            self._loop_token = anyio.lowlevel.current_token()
        with self._lock:
            if self._running == 0:
                self._unsubscribe = self._subscribe(self.notify_changed)
            self._running += 1
        try:
            yield None
        finally:
            with self._lock:
                self._running -= 1
                if self._running == 0 and self._unsubscribe is not None:
                    self._unsubscribe()
                    self._unsubscribe = None

    def notify_changed(self, paths: set[str]) -> None:
        """Tell listening clients that ``paths`` changed (nothing before the server runs)."""
        if self._loop_token is None:
            return

        async def publish() -> None:
            await self._bus.publish_file_changes(paths)

        try:
            anyio.from_thread.run(publish, token=self._loop_token)
        except Exception:  # a closed loop at shutdown: nobody is listening any more
            log.debug("could not publish a change event", exc_info=True)
