"""A ``Memory`` kept warm for a long-running process (the MCP server).

Start-up must be fast: an MCP client waits for the handshake, and ``import lancedb`` alone
takes seconds. So the service opens the memory in a background thread shortly after the
process starts, syncs it, embeds what is missing, then watches the files and re-syncs
after each burst of changes (debounced). Requests that need the memory wait for it to open.
With ``sleep=True`` (``serve``), the sleep cycle runs when it is due and no request came for
``[sleep] quiet_minutes``: never in the middle of a burst of requests. The same servers sync the
notes with their git remote at start and every ``[sync] interval_minutes`` when that is set.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from mcp_memory.config import INDEX_DIRNAME, Settings

if TYPE_CHECKING:
    from mcp_memory.memory import Memory

log = logging.getLogger(__name__)

OPEN_TIMEOUT = 120.0  # seconds a request waits for the memory to open
WATCH_DEBOUNCE_MS = 1500
SLEEP_CHECK_SECONDS = 60.0  # how often the service asks whether the sleep cycle is due
EARLY_SYNC_DELAY = 0.5  # seconds between searchable (from the saved snapshot) and the first sync


class MemoryService:
    def __init__(self, settings: Settings, memory_factory: Callable[[Settings], Memory] | None = None,
                 start_delay: float = 0.5, watch: bool = True, sleep: bool = False,
                 sleep_check_seconds: float = SLEEP_CHECK_SECONDS):
        self.settings = settings
        self._sleep = sleep
        self._sleep_check = sleep_check_seconds
        self._last_request = time.monotonic()
        self._factory = memory_factory
        self._start_delay = start_delay
        self._watch = watch
        self._memory: Memory | None = None
        self._error: BaseException | None = None
        self._opened = threading.Event()
        self._stop = threading.Event()
        self.workspace_gone = threading.Event()  # the watched workspace folder was removed
        self._thread: threading.Thread | None = None
        self._listeners: list[Callable[[set[str]], None]] = []
        self._lines_due = threading.Event()  # set after each backfill: line vectors may be missing
        self._lines_thread: threading.Thread | None = None

    # ----- lifecycle -----------------------------------------------------------------------
    def start(self) -> None:
        """Open, sync, embed and watch in the background (idempotent)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="mcp-memory-service", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def close(self, timeout: float = 30.0) -> None:
        """Stop, wait up to ``timeout`` for the background thread, and close the memory if it opened."""
        self.stop()
        if self._thread is not None:
            self._thread.join(timeout)
        if self._lines_thread is not None:
            self._lines_thread.join(timeout)  # stops between batches of 32 lines (about a second)
        if self._opened.is_set() and self._error is None and self._memory is not None:
            try:
                self._memory.engine.save_snapshot()  # the next process searches without LanceDB
            except Exception:  # a cache: never a reason to fail closing
                log.exception("could not save the search snapshot")
            self._memory.close()

    def on_change(self, listener: Callable[[set[str]], None]) -> Callable[[], None]:
        """Call ``listener(paths)`` after a sync caused by file changes on disk; returns what
        stops that (a warm process serves one client after another)."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            try:
                self._listeners.remove(listener)
            except ValueError:
                pass

        return unsubscribe

    def memory(self, timeout: float = OPEN_TIMEOUT) -> Memory:
        """The open memory; starts it if needed and waits for it to open."""
        self._last_request = time.monotonic()
        self.start()
        if not self._opened.wait(timeout):
            raise TimeoutError(f"the memory index did not open within {timeout:.0f} s")
        if self._error is not None:
            raise RuntimeError(f"the memory index could not be opened: {self._error}") from self._error
        assert self._memory is not None
        return self._memory

    # ----- the background thread -------------------------------------------------------------
    def _run(self) -> None:
        # Let the protocol handshake go first: heavy imports hold the interpreter for seconds.
        if self._stop.wait(self._start_delay):
            return
        try:
            from mcp_memory.memory import Memory

            memory = (self._factory or Memory)(self.settings)
            memory.open(warm=True)
            if _searchable_early(memory):
                # The saved search snapshot is current and no file changed: searches start now
                # (a cold first prompt hook gets semantic recall within its wait). The sync below
                # checks the index against the snapshot's counts and needs no LanceDB either; the
                # first write opens the chunk table (``index/vectors.py``, ``counts_hint``).
                self._memory = memory
                self._opened.set()
                # A file changed since the check above costs the sync ``import lancedb``, which holds
                # the interpreter: let the first request (often a prompt hook already waiting) go first.
                self._stop.wait(EARLY_SYNC_DELAY)
            memory.sync()
            memory.engine.warm_up()
            self._memory = memory
        except BaseException as exc:  # reported to every request instead of crashing the server
            log.exception("could not open the memory index")
            self._error = exc
            self._opened.set()
            return
        self._opened.set()
        if memory.line_vectors is not None:
            self._lines_thread = threading.Thread(target=self._embed_lines, args=(memory,),
                                                  name="mcp-memory-line-vectors", daemon=True)
            self._lines_thread.start()
        self._backfill(memory)
        if self._sleep and self.settings.sleep.interval_hours > 0:
            threading.Thread(target=self._sleep_when_due, args=(memory,), name="mcp-memory-sleep", daemon=True).start()
        if self._sleep and self.settings.sync.interval_minutes > 0:  # the periodic jobs of a server
            threading.Thread(target=self._git_sync_every, args=(memory,), name="mcp-memory-git-sync",
                             daemon=True).start()
        if self._watch:
            self._watch_files(memory)

    def _backfill(self, memory: Memory) -> None:
        try:
            memory.backfill(should_stop=self._stop.is_set, lines=False)
        except Exception:
            log.exception("embedding in the background failed")
        self._lines_due.set()

    def _embed_lines(self, memory: Memory) -> None:
        """Line vectors after each backfill, in a thread of their own: the first time they take
        about 30 ms a line, and neither the file watcher nor a request waits for them."""
        asked = memory.line_vectors.asked if memory.line_vectors is not None else threading.Event()
        while not self._stop.is_set():
            # Also when a precise search read candidates whose lines have no vector yet.
            if not self._lines_due.wait(1.0) and not asked.is_set():
                continue
            self._lines_due.clear()
            memory.fill_line_vectors(should_stop=self._stop.is_set)

    def _sleep_when_due(self, memory: Memory) -> None:
        """Run the sleep cycle when it is due and the server has been quiet (one process at a time:
        the cycle's own lock makes any other process skip)."""
        quiet = self.settings.sleep.quiet_minutes * 60
        retry_at = 0.0
        while not self._stop.wait(self._sleep_check):
            now = time.monotonic()
            if now < retry_at or now - self._last_request < quiet or not memory.sleep.due():
                continue
            try:
                report = memory.sleep.run()
            except Exception:
                log.exception("the sleep cycle failed; it is tried again in an hour")
                retry_at = now + 3600
                continue
            if report.ran:
                log.info("sleep cycle: %d memories retired, %d chains archived", len(report.retired),
                         len(report.chains_moved))

    def _git_sync_every(self, memory: Memory) -> None:
        """Sync the notes through git now and every ``[sync] interval_minutes`` (see ``team/git_sync.py``).

        A failure (remote unreachable, say) is logged and tried again at the next interval.
        """
        from mcp_memory.team.git_sync import GitSyncError

        interval = self.settings.sync.interval_minutes * 60
        while not self._stop.is_set():
            try:
                report = memory.git_sync()
            except GitSyncError as exc:
                log.warning("git sync: %s", exc)
            except Exception:
                log.exception("git sync failed")
            else:
                if report.changed:
                    log.info("git sync: %d files committed, %d pulled, %d commits pushed", len(report.committed),
                             len(report.pulled), report.pushed)
                for conflict in report.conflicts:
                    log.warning("git sync conflict in %s: %s", conflict.path, conflict.resolution)
            if self._stop.wait(interval):
                return

    def _watch_files(self, memory: Memory) -> None:
        from watchfiles import watch

        logging.getLogger("watchfiles").setLevel(logging.WARNING)  # it logs every change at INFO
        roots = [self.settings.workspace, *[p for p in memory.workspace.extra_paths if p.exists()],
                 *[p for p in memory.workspace.sessions_paths if p.exists()]]
        caught_up = False
        try:
            # yield_on_timeout: an empty batch once a second tells us the watcher is running, so
            # one more sync then catches edits made between the first sync and the watch start.
            for changes in watch(*roots, watch_filter=_is_memory_change, debounce=WATCH_DEBOUNCE_MS,
                                 stop_event=self._stop, raise_interrupt=False, recursive=True,
                                 rust_timeout=1000, yield_on_timeout=True):
                if not changes and caught_up:
                    continue
                caught_up = True
                if not self.settings.workspace.is_dir():
                    log.warning("the workspace folder %s was removed: this process stops watching it",
                                self.settings.workspace)
                    self.workspace_gone.set()
                    return
                paths = {memory.workspace.rel_path(Path(p)) for _, p in changes}
                try:
                    report = memory.sync()
                except Exception:
                    log.exception("sync after a file change failed")
                    continue
                if report.touched:
                    self._backfill(memory)
                    for listener in list(self._listeners):
                        try:
                            listener(paths)
                        except Exception:
                            log.exception("change listener failed")
        except Exception:
            log.exception("file watcher stopped")


def _searchable_early(memory: Memory) -> bool:
    try:
        return memory.engine.searchable_without_sync()
    except Exception as exc:  # noqa: BLE001 - the sync that follows recovers or reports it
        log.info("searching before the first sync is not possible: %s", exc)
        return False


def _is_memory_change(_change: object, path: str) -> bool:
    parts = Path(path).parts
    return path.lower().endswith((".md", ".jsonl")) and INDEX_DIRNAME not in parts and not any(
        p.startswith(".") for p in parts[-3:-1]
    )
