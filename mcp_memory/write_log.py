"""What was stored and captured: when, in which session, by which extractor, and what was left out and why.

The markdown files say what was written, not what a capture skipped or which extractor ran,
so each store and capture appends one row here (``activity.sqlite`` beside the index) for
the dashboard's timeline. Like the ledger it is derived state: losing it loses history,
never memory. Rows older than ``RETENTION_DAYS`` are pruned, and a failure to log never
fails the write it describes.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp_memory.hits import MemoryLine
from mcp_memory.sqlite import open_shared

if TYPE_CHECKING:
    from mcp_memory.capture_flow import CaptureResult
    from mcp_memory.edits import StoreResult

log = logging.getLogger(__name__)

RETENTION_DAYS = 30
MAX_TEXT = 300  # characters of one logged line or skipped text


@dataclass(frozen=True)
class SkippedText:
    text: str
    reason: str


@dataclass(frozen=True)
class WriteEvent:
    """One store or capture as it happened."""

    at: float  # seconds since the epoch
    kind: str  # "store" or "capture"
    session: str  # the session key given ("" when none)
    extractor: str  # the capture's extractor ("" for a store)
    message: str
    written: list[MemoryLine] = field(default_factory=list)
    skipped: list[SkippedText] = field(default_factory=list)
    by_owner: bool = True  # made for a caller that may see the private files


def store_event(text: str, result: StoreResult, by_owner: bool) -> WriteEvent:
    """The event of one store: the line written, or the attempt skipped as a duplicate."""
    if result.stored:
        return WriteEvent(time.time(), "store", "", "", "stored", [result.memory], [], by_owner)
    reason = f"already in memory at {result.memory.citation}"
    return WriteEvent(time.time(), "store", "", "", reason, [], [SkippedText(" ".join(str(text).split()), reason)],
                      by_owner)


def capture_event(session: str | None, result: CaptureResult, by_owner: bool) -> WriteEvent:
    """The event of one capture: its extractor, the lines written, what was skipped and why."""
    return WriteEvent(time.time(), "capture", session or "", result.extractor, result.message, list(result.captured),
                      [SkippedText(s.text, s.reason) for s in result.skipped], by_owner)


class WriteLog:
    """The append-only log of stores and captures of one workspace (opened on first use)."""

    def __init__(self, path: Path):
        self.path = path
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = open_shared(self.path)
            conn.execute("CREATE TABLE IF NOT EXISTS writes (id INTEGER PRIMARY KEY, at REAL, kind TEXT, session TEXT,"
                         " extractor TEXT, message TEXT, by_owner INTEGER, written TEXT, skipped TEXT)")
            conn.execute("CREATE INDEX IF NOT EXISTS writes_by_time ON writes (at)")
            conn.execute("DELETE FROM writes WHERE at < ?", (time.time() - RETENTION_DAYS * 86400,))
            self._conn = conn
        return self._conn

    def record(self, event: WriteEvent) -> None:
        """Append ``event``; a failure is logged, never raised (the write it describes happened)."""
        written = [{"path": _safe(m.path), "line": m.line, "text": _safe(m.text[:MAX_TEXT])} for m in event.written]
        skipped = [{"text": _safe(s.text[:MAX_TEXT]), "reason": _safe(s.reason[:MAX_TEXT])} for s in event.skipped]
        try:
            with self._lock:
                self._db().execute(
                    "INSERT INTO writes (at, kind, session, extractor, message, by_owner, written, skipped)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (event.at, event.kind, _safe(event.session[:200]), _safe(event.extractor[:200]),
                     _safe(event.message[:MAX_TEXT]),
                     int(event.by_owner), json.dumps(written, ensure_ascii=False),
                     json.dumps(skipped, ensure_ascii=False)))
        except (sqlite3.Error, OSError, ValueError) as exc:
            log.warning("could not log a %s: %s", event.kind, exc)

    def recent(self, limit: int = 500) -> list[WriteEvent]:
        """The latest ``limit`` events, newest first."""
        try:
            with self._lock:
                rows = self._db().execute(
                    "SELECT at, kind, session, extractor, message, by_owner, written, skipped FROM writes"
                    " ORDER BY at DESC, id DESC LIMIT ?", (max(1, int(limit)),)).fetchall()
        except (sqlite3.Error, OSError, ValueError) as exc:
            log.warning("could not read the write log: %s", exc)
            return []
        return [_event(row) for row in rows]

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def _event(row: tuple[Any, ...]) -> WriteEvent:
    at, kind, session, extractor, message, by_owner, written, skipped = row
    lines = [MemoryLine(str(w.get("path", "")), int(w.get("line", 0)), str(w.get("text", "")))
             for w in _json_list(written)]
    skips = [SkippedText(str(s.get("text", "")), str(s.get("reason", ""))) for s in _json_list(skipped)]
    return WriteEvent(float(at), str(kind), str(session or ""), str(extractor or ""), str(message or ""), lines,
                      skips, bool(by_owner))


def _json_list(raw: object) -> list[dict[str, Any]]:
    try:
        data = json.loads(str(raw or "[]"))
    except ValueError:
        return []
    return [item for item in data if isinstance(item, dict)] if isinstance(data, list) else []


def _safe(text: object) -> str:
    """``text`` as valid UTF-8 (JSON and hook input admit lone surrogates; SQLite does not)."""
    return str(text or "").encode("utf-8", "replace").decode("utf-8")
