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

from mcp_memory.core.scopes import ScopeFilter
from mcp_memory.server.resources import file_uri

log = logging.getLogger(__name__)


class FileEventBus:
    """The server's ``SubscriptionBus``: change events for memory files, delivered by who may see them.

    Whether a listener may see private files, and the scope its token is limited to, are
    decided when it subscribes (the ``subscriptions/listen`` request carries the caller's
    token). A shared listener hears nothing about a private file, a scoped one nothing about a
    file of another scope: no ``ResourceUpdated`` and no list change caused by such files alone.
    """

    def __init__(self, may_see_private: Callable[[], bool], is_private: Callable[[str], bool],
                 scope_limit: Callable[[], str | None] = lambda: None):
        self._may_see_private = may_see_private
        self._is_private = is_private
        self._scope_limit = scope_limit
        self._listeners: dict[object, tuple[Callable[[ServerEvent], None], bool, ScopeFilter | None]] = {}

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        key = object()
        limit = self._scope_limit()
        self._listeners[key] = (listener, self._may_see_private(),
                                ScopeFilter(frozenset({limit}), confined=True) if limit else None)
        return lambda: self._listeners.pop(key, None) and None

    async def publish(self, event: ServerEvent) -> None:
        self._deliver(event, lambda sees_private, scopes: True)
        await anyio.lowlevel.checkpoint()

    async def publish_file_changes(self, paths: set[str]) -> None:
        public = {p for p in paths if not self._is_private(p)}

        def hears(path: str) -> Callable[[bool, ScopeFilter | None], bool]:
            return lambda sees_private, scopes: ((sees_private or path in public)
                                                 and (scopes is None or scopes.covers(path)))

        self._deliver(ResourcesListChanged(), lambda sees_private, scopes: any(hears(p)(sees_private, scopes)
                                                                               for p in paths))
        for path in sorted(paths):
            self._deliver(ResourceUpdated(uri=file_uri(path)), hears(path))
            await anyio.lowlevel.checkpoint()

    def _deliver(self, event: ServerEvent, may_hear: Callable[[bool, ScopeFilter | None], bool]) -> None:
        for listener, sees_private, scopes in list(self._listeners.values()):
            if not may_hear(sees_private, scopes):
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
