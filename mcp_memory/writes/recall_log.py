"""Which memories recall injected, for which prompt, in which session.

The ledger keeps only what recall needs to avoid repeating itself (hashed keys per turn);
this log keeps what a person wants to see afterwards: the prompt (secrets redacted, cut
short) and the cited memories shown for it. One row per recall that injected something, in
the activity database (``activity.py``: pruned after 30 days; a failure to log never fails the
recall).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_memory.core.hits import SearchHit, cite
from mcp_memory.safety import redact_secrets
from mcp_memory.writes.activity import ActivityTable, json_list, safe_text

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
        return cite(self.path, self.start_line, self.end_line)


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
        self._table = ActivityTable(path, "recall_log", ["session TEXT", "prompt TEXT", "by_owner INTEGER",
                                                         "items TEXT"])

    def record(self, prompt: str, session: str | None, hits: list[SearchHit], by_owner: bool) -> None:
        """Log the memories shown for ``prompt``; nothing when none were. Never raises."""
        if not hits:
            return
        items = [{"id": h.id, "path": safe_text(h.path), "start": h.start_line, "end": h.end_line,
                  "snippet": safe_text(" ".join(h.snippet.split())[:MAX_SNIPPET])} for h in hits]
        shown = safe_text(" ".join(redact_secrets(safe_text(prompt)).split())[:MAX_PROMPT])
        self._table.append((time.time(), safe_text(session)[:200], shown, int(by_owner),
                            json.dumps(items, ensure_ascii=False)), "a recall")

    def recent(self, limit: int = 500) -> list[RecallEvent]:
        """The latest ``limit`` recalls, newest first."""
        return [_event(row) for row in self._table.newest(limit, "the recall log")]

    def close(self) -> None:
        self._table.close()


def _event(row: tuple[Any, ...]) -> RecallEvent:
    at, session, prompt, by_owner, raw = row
    items = [RecalledItem(str(i.get("id", "")), str(i.get("path", "")), int(i.get("start", 0)),
                          int(i.get("end", 0)), str(i.get("snippet", ""))) for i in json_list(raw)]
    return RecallEvent(float(at), str(session or ""), str(prompt or ""), items, bool(by_owner))

