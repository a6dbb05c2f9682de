"""What the index knows about the files it was built from, in a small SQLite database.

``files`` holds each synced file's size, mtime and content hash (the fast path for a
no-change re-sync). ``meta`` holds the index fingerprint, the time of the last sync, the
reason of the last rebuild, and a ``generation`` token that every write replaces so that
readers in any process can tell cheaply that they must reload.

``changes`` records, for each of the last ``KEEP_CHANGES`` generations, the generation it
replaced and the paths whose rows that write changed (or "everything", for a rebuild). It is
written in the same transaction as the generation, so a reader holding the search snapshot of
generation G can ask which paths changed since G and reload only their rows. Each entry names
its predecessor, so the chain from G to the current generation is complete or visibly broken
(pruned, or a writer that keeps no record): then the reader reloads everything.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from mcp_memory.core.sqlite import open_shared

# Generations whose changes are kept. A reader further behind reloads its whole snapshot,
# which by then costs little more than reading the rows of that many changes.
KEEP_CHANGES = 1000


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
        # paths: a JSON list of the paths whose rows changed, or NULL when any row may have.
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS changes (seq INTEGER PRIMARY KEY AUTOINCREMENT,"
            " generation TEXT NOT NULL, previous TEXT NOT NULL, paths TEXT)"
        )
        self._lock = threading.Lock()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (the caller holds ``_lock``): all of it is seen, or none."""
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield self._conn
            self._conn.execute("COMMIT")
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise

    # ----- files ---------------------------------------------------------------------------
    def files(self) -> dict[str, FileState]:
        with self._lock:
            rows = self._conn.execute("SELECT path, mtime_ns, size, hash, chunks FROM files").fetchall()
        return {row[0]: FileState(*row) for row in rows}

    def record_files(self, updated: list[FileState], removed: list[str]) -> None:
        """Store the state rows of files whose index rows were just written or deleted.

        Starts a new generation whose changes are these paths (a file only touched, its
        rows unchanged, is among them: reading its rows again costs little).
        """
        with self._lock, self._write() as conn:
            conn.executemany("DELETE FROM files WHERE path = ?", [(p,) for p in removed])
            conn.executemany(
                "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?)",
                [(f.path, f.mtime_ns, f.size, f.hash, f.chunks) for f in updated],
            )
            self._bump_generation([f.path for f in updated] + list(removed))

    def clear_files(self) -> None:
        """Forget every file (its rows are about to be rewritten); readers must reload everything."""
        with self._lock, self._write() as conn:
            conn.execute("DELETE FROM files")
            self._bump_generation(None)

    # ----- meta ----------------------------------------------------------------------------
    def get(self, key: str, default: str = "") -> str:
        with self._lock:
            row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else default

    def set(self, key: str, value: str) -> None:
        with self._lock:
            self._conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def bump_generation(self, paths: Collection[str] | None = None) -> None:
        """Start a new generation after a write that changed the rows of ``paths`` (None: any row)."""
        with self._lock, self._write():
            self._bump_generation(paths)

    def _bump_generation(self, paths: Collection[str] | None) -> None:
        """Replace the generation token and record what changed (inside a write transaction)."""
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        previous = row[0] if row else "0"
        generation = f"{time.time_ns()}"
        if generation == previous:  # a coarse clock: tokens must differ, or readers miss the write
            generation += "+"
        self._conn.execute("INSERT OR REPLACE INTO meta VALUES ('generation', ?)", (generation,))
        listed = None if paths is None else json.dumps(sorted(set(paths)), ensure_ascii=False)
        self._conn.execute(
            "INSERT INTO changes (generation, previous, paths) VALUES (?, ?, ?)", (generation, previous, listed)
        )
        self._conn.execute(
            "DELETE FROM changes WHERE seq <= (SELECT MAX(seq) FROM changes) - ?", (KEEP_CHANGES,)
        )

    @property
    def generation(self) -> str:
        return self.get("generation", "0")

    def changes_since(self, generation: str) -> tuple[str, frozenset[str] | None]:
        """The current generation, and the paths whose rows changed since ``generation``.

        The paths are None when they are not all known: the record was pruned past
        ``generation``, a write recorded no paths (a rebuild), or a writer left no record.
        Both answers come from one read transaction, so they agree with each other.
        """
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                row = self._conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
                current = row[0] if row else "0"
                if current == generation:
                    return current, frozenset()
                entries = self._conn.execute(
                    "SELECT generation, previous, paths FROM changes"
                    " WHERE seq >= (SELECT MIN(seq) FROM changes WHERE previous = ?) ORDER BY seq",
                    (generation,),
                ).fetchall()
            finally:
                self._conn.execute("COMMIT")
        changed: set[str] = set()
        expected = generation
        for entry_generation, previous, listed in entries:
            if previous != expected or listed is None:
                return current, None  # a link is missing, or that write may have changed any row
            changed.update(json.loads(listed))
            expected = entry_generation
            if expected == current:
                return current, frozenset(changed)
        return current, None  # the record does not reach the current generation

    def close(self) -> None:
        with self._lock:
            self._conn.close()
