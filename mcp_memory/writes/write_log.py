"""What was stored and captured: when, in which session, by which extractor, and what was left out and why.

The markdown files say what was written, not what a capture skipped or which extractor ran,
so each store and capture appends one row to the activity database (``activity.py``) for
the dashboard's timeline: derived state, pruned after 30 days, and a failure to log never
fails the write it describes.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp_memory.core.hits import MemoryLine
from mcp_memory.writes.activity import ActivityTable, json_list, safe_text

if TYPE_CHECKING:
    from mcp_memory.writes.capture_flow import CaptureResult
    from mcp_memory.writes.edits import StoreResult

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
        self._table = ActivityTable(path, "writes", ["kind TEXT", "session TEXT", "extractor TEXT", "message TEXT",
                                                     "by_owner INTEGER", "written TEXT", "skipped TEXT"])

    def record(self, event: WriteEvent) -> None:
        """Append ``event``; a failure is logged, never raised (the write it describes happened)."""
        written = [{"path": safe_text(m.path), "line": m.line, "text": safe_text(m.text[:MAX_TEXT])}
                   for m in event.written]
        skipped = [{"text": safe_text(s.text[:MAX_TEXT]), "reason": safe_text(s.reason[:MAX_TEXT])}
                   for s in event.skipped]
        self._table.append((event.at, event.kind, safe_text(event.session[:200]), safe_text(event.extractor[:200]),
                            safe_text(event.message[:MAX_TEXT]), int(event.by_owner),
                            json.dumps(written, ensure_ascii=False), json.dumps(skipped, ensure_ascii=False)),
                           f"a {event.kind}")

    def recent(self, limit: int = 500) -> list[WriteEvent]:
        """The latest ``limit`` events, newest first."""
        return [_event(row) for row in self._table.newest(limit, "the write log")]

    def close(self) -> None:
        self._table.close()


def _event(row: tuple[Any, ...]) -> WriteEvent:
    at, kind, session, extractor, message, by_owner, written, skipped = row
    lines = [MemoryLine(str(w.get("path", "")), int(w.get("line", 0)), str(w.get("text", "")))
             for w in json_list(written)]
    skips = [SkippedText(str(s.get("text", "")), str(s.get("reason", ""))) for s in json_list(skipped)]
    return WriteEvent(float(at), str(kind), str(session or ""), str(extractor or ""), str(message or ""), lines,
                      skips, bool(by_owner))

