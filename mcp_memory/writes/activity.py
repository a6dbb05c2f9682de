"""The activity database: append-only tables of what happened, for people to look at afterwards.

``activity.sqlite`` sits beside the index and holds the write log (``write_log.py``) and the
recall log (``recall_log.py``). Like the ledger it is derived state: losing it loses history,
never memory. Each table is opened on first use and pruned of rows older than
``RETENTION_DAYS``; a failure to append or read is logged and never reaches the caller, whose
store, capture or recall has happened either way.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from mcp_memory.core.sqlite import open_shared

log = logging.getLogger(__name__)

RETENTION_DAYS = 30


class ActivityTable:
    """One append-only table with an ``at`` time column (seconds since the epoch)."""

    def __init__(self, path: Path, table: str, columns: list[str]):
        self.path = path
        self._table = table
        self._columns = columns  # "name TYPE", after the id and "at" columns
        self._names = ", ".join(["at", *(column.split()[0] for column in columns)])
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def append(self, values: tuple[Any, ...], what: str) -> None:
        """Add a row of ``values`` (``at`` first); ``what`` names it in the log line of a failure."""
        marks = ", ".join("?" * len(values))
        try:
            with self._lock:
                self._db().execute(f"INSERT INTO {self._table} ({self._names}) VALUES ({marks})", values)
        except (sqlite3.Error, OSError, ValueError) as exc:
            log.warning("could not log %s: %s", what, exc)

    def newest(self, limit: int, what: str) -> list[tuple[Any, ...]]:
        """The latest ``limit`` rows (``at`` first), newest first; none when the table cannot be read."""
        try:
            with self._lock:
                return self._db().execute(f"SELECT {self._names} FROM {self._table} ORDER BY at DESC, id DESC"
                                          " LIMIT ?", (max(1, int(limit)),)).fetchall()
        except (sqlite3.Error, OSError, ValueError) as exc:
            log.warning("could not read %s: %s", what, exc)
            return []

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = open_shared(self.path)
            conn.execute(f"CREATE TABLE IF NOT EXISTS {self._table} (id INTEGER PRIMARY KEY, at REAL, "
                         f"{', '.join(self._columns)})")
            conn.execute(f"CREATE INDEX IF NOT EXISTS {self._table}_by_time ON {self._table} (at)")
            conn.execute(f"DELETE FROM {self._table} WHERE at < ?", (time.time() - RETENTION_DAYS * 86400,))
            self._conn = conn
        return self._conn


def safe_text(text: object) -> str:
    """``text`` as valid UTF-8 (JSON and hook input admit lone surrogates; SQLite does not)."""
    return str(text or "").encode("utf-8", "replace").decode("utf-8")


def json_list(raw: object) -> list[dict[str, Any]]:
    """The objects of a stored JSON list; none when the text is not one."""
    try:
        data = json.loads(str(raw or "[]"))
    except ValueError:
        return []
    return [item for item in data if isinstance(item, dict)] if isinstance(data, list) else []
