"""Which memories recall injected, for which prompt, in which session.

The ledger keeps only what recall needs to avoid repeating itself (hashed keys per turn);
this log keeps what a person wants to see afterwards: the prompt (secrets redacted, cut
short) and the cited memories shown for it. One row per recall that injected something, in
``activity.sqlite`` beside the index; rows older than ``RETENTION_DAYS`` are pruned, and a
failure to log never fails the recall.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_memory.hits import SearchHit
from mcp_memory.safety import redact_secrets
from mcp_memory.sqlite import open_shared

log = logging.getLogger(__name__)

RETENTION_DAYS = 30
MAX_PROMPT = 500
MAX_SNIPPET = 240


@dataclass(frozen=True)
class RecalledItem:
    id: str
    path: str
    start_line: int
    end_line: int
    snippet: str

    @property
    def citation(self) -> str:
        return f"{self.path}#L{self.start_line}-L{self.end_line}"


@dataclass(frozen=True)
class RecallEvent:
    at: float  # seconds since the epoch
    session: str
    prompt: str
    items: list[RecalledItem] = field(default_factory=list)
    by_owner: bool = True  # made for a caller that may see the private files


class RecallLog:
    """The append-only log of recalls of one workspace (opened on first use)."""

    def __init__(self, path: Path):
        self.path = path
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = open_shared(self.path)
            conn.execute("CREATE TABLE IF NOT EXISTS recall_log (id INTEGER PRIMARY KEY, at REAL, session TEXT,"
                         " prompt TEXT, by_owner INTEGER, items TEXT)")
            conn.execute("CREATE INDEX IF NOT EXISTS recall_log_by_time ON recall_log (at)")
            conn.execute("DELETE FROM recall_log WHERE at < ?", (time.time() - RETENTION_DAYS * 86400,))
            self._conn = conn
        return self._conn

    def record(self, prompt: str, session: str | None, hits: list[SearchHit], by_owner: bool) -> None:
        """Log the memories shown for ``prompt``; nothing when none were. Never raises."""
        if not hits:
            return
        items = [{"id": h.id, "path": _safe(h.path), "start": h.start_line, "end": h.end_line,
                  "snippet": _safe(" ".join(h.snippet.split())[:MAX_SNIPPET])} for h in hits]
        shown = _safe(" ".join(redact_secrets(_safe(prompt)).split())[:MAX_PROMPT])
        try:
            with self._lock:
                self._db().execute(
                    "INSERT INTO recall_log (at, session, prompt, by_owner, items) VALUES (?, ?, ?, ?, ?)",
                    (time.time(), _safe(session)[:200], shown, int(by_owner), json.dumps(items, ensure_ascii=False)))
        except (sqlite3.Error, OSError, ValueError) as exc:
            log.warning("could not log a recall: %s", exc)

    def recent(self, limit: int = 500) -> list[RecallEvent]:
        """The latest ``limit`` recalls, newest first."""
        try:
            with self._lock:
                rows = self._db().execute("SELECT at, session, prompt, by_owner, items FROM recall_log"
                                          " ORDER BY at DESC, id DESC LIMIT ?", (max(1, int(limit)),)).fetchall()
        except (sqlite3.Error, OSError, ValueError) as exc:
            log.warning("could not read the recall log: %s", exc)
            return []
        return [_event(row) for row in rows]

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def _event(row: tuple[Any, ...]) -> RecallEvent:
    at, session, prompt, by_owner, raw = row
    try:
        data = json.loads(str(raw or "[]"))
    except ValueError:
        data = []
    items = [RecalledItem(str(i.get("id", "")), str(i.get("path", "")), int(i.get("start", 0)),
                          int(i.get("end", 0)), str(i.get("snippet", "")))
             for i in (data if isinstance(data, list) else []) if isinstance(i, dict)]
    return RecallEvent(float(at), str(session or ""), str(prompt or ""), items, bool(by_owner))


def _safe(text: object) -> str:
    """``text`` as valid UTF-8 (JSON and hook input admit lone surrogates; SQLite does not)."""
    return str(text or "").encode("utf-8", "replace").decode("utf-8")
