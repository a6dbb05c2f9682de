"""Opening the small SQLite databases that several processes share (state, cache, ledger)."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

OPEN_TIMEOUT = 60.0


def open_shared(path: Path, timeout: float = OPEN_TIMEOUT) -> sqlite3.Connection:
    """A connection in WAL mode (readers never block the writer), safe to open from many processes.

    Switching a brand-new file to WAL needs a moment of exclusive access, and SQLite reports
    "database is locked" at once instead of waiting when two processes try it together, so the
    switch is retried until ``timeout``.
    """
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)  # the index folder: see core/folders.py
    conn = sqlite3.connect(str(path), timeout=timeout, check_same_thread=False, isolation_level=None)
    deadline = time.monotonic() + timeout
    delay = 0.01
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return conn
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                conn.close()
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.2)
