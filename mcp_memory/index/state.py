"""What the index knows about the files it was built from, in a small SQLite database.

``files`` holds each synced file's size, mtime and content hash (the fast path for a
no-change re-sync). ``meta`` holds the index fingerprint, the time of the last sync, the
reason of the last rebuild, and a ``generation`` counter that every write bumps so that
readers in any process can tell cheaply that they must reload.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path

from mcp_memory.sqlite import open_shared


@dataclass(frozen=True)
class FileState:
    path: str
    mtime_ns: int
    size: int
    hash: str
    chunks: int


class IndexState:
    def __init__(self, path: Path):
        self._conn = open_shared(path)  # creates the folder too
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, mtime_ns INTEGER, size INTEGER,"
            " hash TEXT, chunks INTEGER)"
        )
        self._conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
        self._lock = threading.Lock()

    # ----- files ---------------------------------------------------------------------------
    def files(self) -> dict[str, FileState]:
        with self._lock:
            rows = self._conn.execute("SELECT path, mtime_ns, size, hash, chunks FROM files").fetchall()
        return {row[0]: FileState(*row) for row in rows}

    def record_files(self, updated: list[FileState], removed: list[str]) -> None:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.executemany("DELETE FROM files WHERE path = ?", [(p,) for p in removed])
                self._conn.executemany(
                    "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?)",
                    [(f.path, f.mtime_ns, f.size, f.hash, f.chunks) for f in updated],
                )
                self._bump_generation()
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise

    def clear_files(self) -> None:
        with self._lock:
            self._conn.execute("DELETE FROM files")

    # ----- meta ----------------------------------------------------------------------------
    def get(self, key: str, default: str = "") -> str:
        with self._lock:
            row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else default

    def set(self, key: str, value: str) -> None:
        with self._lock:
            self._conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def bump_generation(self) -> None:
        with self._lock:
            self._bump_generation()

    def _bump_generation(self) -> None:
        self._conn.execute(
            "INSERT INTO meta VALUES ('generation', ?) ON CONFLICT(key) DO UPDATE SET value = ?",
            (f"{time.time_ns()}", f"{time.time_ns()}"),
        )

    @property
    def generation(self) -> str:
        return self.get("generation", "0")

    def close(self) -> None:
        with self._lock:
            self._conn.close()
