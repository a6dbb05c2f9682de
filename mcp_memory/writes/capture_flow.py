"""The capture flow: from a conversation's latest messages to dated bullets in today's file.

Guards first (capture's own runs, idempotency keys seen before), then the message filters,
an extractor (the one given, else the configured one, with the offline rules as fallback),
the fact checks (tasks and near-term plans are left out, whoever extracted them),
deduplication within the batch and against memory (``Similarity`` sees through capture's own
rewrites, so a line the compaction rescue kept verbatim counts), and one locked append
under a heading with the time and session. The pieces live in ``capture/``; this module
puts them together with the workspace, the index and the ledger.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcp_memory.capture import (
    Candidate,
    ChatModelExtractor,
    ExtractionError,
    Extractor,
    Fact,
    RuleExtractor,
    Skipped,
    check_fact,
    is_memory_run,
    select_candidates,
)
from mcp_memory.capture.facts import with_date
from mcp_memory.capture.filters import preview
from mcp_memory.capture.tasks import is_task
from mcp_memory.core.hits import MemoryLine
from mcp_memory.core.ledger import Ledger, clean_key
from mcp_memory.core.memory_ids import memory_body
from mcp_memory.core.scopes import check_name, daily_path, seen_from
from mcp_memory.core.transcripts import Message
from mcp_memory.index.engine import Engine
from mcp_memory.index.similarity import Similarity
from mcp_memory.safety import clean_memory_text
from mcp_memory.writes.edits import Editor

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CaptureResult:
    """What one capture wrote, what it left out and why, and who extracted the facts."""

    captured: list[MemoryLine]
    skipped: list[Skipped]
    extractor: str
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "captured": [{"citation": m.citation, "text": m.text} for m in self.captured],
            "skipped": [s.to_dict() for s in self.skipped],
            "extractor": self.extractor,
            "message": self.message,
        }


class CaptureFlow:
    def __init__(self, engine: Engine, similarity: Similarity, editor: Editor, ledger: Callable[[], Ledger]):
        self.engine = engine
        self.similarity = similarity
        self.editor = editor
        self._ledger = ledger  # opened on first use, without the index

    def capture(self, messages: list[Message], session_key: str | None = None, idempotency_key: str | None = None,
                extractor: Extractor | None = None, now: dt.datetime | None = None,
                include_private: bool = True, scope: str | None = None) -> CaptureResult:
        """Write the durable facts of a conversation's latest messages to today's daily file
        (of ``scope``: ``memory/scopes/<scope>/``; None: the global one)."""
        c = self.engine.settings.capture
        scope = check_name(scope) if scope is not None else None
        if is_memory_run(session_key):
            return CaptureResult([], [], "none", "skipped: this is a memory-capture run, which never captures itself")
        key = clean_key(idempotency_key)
        if key and self._ledger().seen(key):
            return CaptureResult([], [], "none", f"skipped: idempotency key {key!r} was captured already")
        candidates, skipped = select_candidates(list(messages), c.max_messages, c.min_chars, c.max_chars)
        if not candidates:
            return self._finish([], skipped, "none", key, "nothing capturable in the latest messages")
        now = now or dt.datetime.now()
        name, facts = self._extract(candidates, now.date(), extractor)
        unique = self._checked_unique(facts, now.date(), skipped)
        if len(unique) > c.max_facts:
            skipped.extend(Skipped(preview(f.text), f"over the limit of {c.max_facts} facts per capture")
                           for f in unique[c.max_facts:])
            unique = unique[: c.max_facts]
        if not unique:
            return self._finish([], skipped, name, key, "no durable facts found")
        rel = daily_path(scope, now.date())
        if not include_private and self.engine.privacy.is_private(rel):
            return CaptureResult([], skipped, name, "not captured: today's daily file is not shared with this client")
        return self._write(unique, skipped, name, key, now, session_key, include_private, scope)

    def _extract(self, candidates: list[Candidate], today: dt.date,
                 extractor: Extractor | None) -> tuple[str, list[Fact]]:
        extractor = extractor or self._configured_extractor()
        try:
            return extractor.name, extractor.extract(candidates, today)
        except ExtractionError as exc:
            log.warning("capture: %s; using the offline rules instead", exc)
            return f"rules (fallback: {exc})", RuleExtractor().extract(candidates, today)

    def _configured_extractor(self) -> Extractor:
        c = self.engine.settings.capture
        if c.llm_model and c.extractor in ("auto", "llm"):
            return ChatModelExtractor(c.llm_model, c.llm_base_url, c.llm_api_key, c.llm_timeout)
        return RuleExtractor()

    def _checked_unique(self, facts: list[Fact], today: dt.date, skipped: list[Skipped]) -> list[Fact]:
        """Facts that pass the checks (an extractor may echo anything), without repeats among themselves."""
        checked: list[Fact] = []
        for fact in facts:
            fact = Fact(with_date(clean_memory_text(str(fact.text or "")), today), fact.category, fact.source)
            reason = check_fact(fact) or _task_reason(fact)
            if reason:
                skipped.append(Skipped(preview(fact.text), reason))
            else:
                checked.append(fact)
        self.engine.open()
        kept: list[Fact] = []
        for fact in checked:
            if self.similarity.is_duplicate(memory_body(fact.text), [memory_body(k.text) for k in kept]) is not None:
                skipped.append(Skipped(preview(fact.text), "duplicate of another fact in this capture"))
            else:
                kept.append(fact)
        return kept

    def _write(self, unique: list[Fact], skipped: list[Skipped], name: str, key: str | None, now: dt.datetime,
               session_key: str | None, include_private: bool, scope: str | None = None) -> CaptureResult:
        workspace = self.engine.workspace
        rel = daily_path(scope, now.date())
        with self.editor.lock, workspace.locked():
            # Inside the cross-process lock: two processes capturing the same turn, or the
            # same fact, cannot both write it.
            if key and not self._ledger().claim(key):
                return CaptureResult([], skipped, name, f"skipped: idempotency key {key!r} was captured already")
            try:
                new = self._not_in_memory(unique, skipped, include_private, scope)
                fresh = self._completing_no_secret(rel, new, skipped)
                if not fresh:
                    return CaptureResult([], skipped, name, "every fact found is already in memory" if not new
                                         else "no fact written: each completes a secret with the memories before it")
                heading = f"## {now.strftime('%H:%M')} captured" + (f" (session {_session_label(session_key)})"
                                                                    if session_key else "")
                lines = [heading, "", *(f"- [{f.category}] {f.text}" for f in fresh)]
                prefix = [""] if (workspace.root / rel).exists() else []
                start, _ = workspace.append(rel, prefix + lines, new_file_header=f"# {now.date().isoformat()}\n\n")
                self.editor.embed_ahead([rel])
                self.editor.sync_edited(rel)
                self.editor.check_indexed(rel)
            except BaseException:
                if key:
                    self._ledger().release(key)
                raise
            self.editor.embed_edited(rel)
        first = start + len(prefix) + 2
        captured = [MemoryLine(rel, first + i, line) for i, line in enumerate(lines[2:])]
        return CaptureResult(captured, skipped, name, f"captured {len(captured)} memories into {rel}")

    def _completing_no_secret(self, rel: str, facts: list[Fact], skipped: list[Skipped]) -> list[Fact]:
        """The facts that complete no secret with the memories before them in ``rel`` (the file's
        last ones, then the facts before them here): ``safety/split_secrets.py``."""
        kinds = self.editor.split_secrets([(rel, fact.text) for fact in facts])
        for fact, kind in zip(facts, kinds, strict=True):
            if kind is not None:
                skipped.append(Skipped(preview(fact.text), f"completes a secret ({kind}) with the memories before it"))
        return [fact for fact, kind in zip(facts, kinds, strict=True) if kind is None]

    def _not_in_memory(self, facts: list[Fact], skipped: list[Skipped], include_private: bool,
                       scope: str | None = None) -> list[Fact]:
        fresh: list[Fact] = []
        bodies = [memory_body(f.text) for f in facts]
        duplicates = self.similarity.find_duplicates(bodies, [include_private] * len(facts),
                                                     [seen_from(scope)] * len(facts))
        for fact, duplicate in zip(facts, duplicates, strict=True):
            if duplicate is not None:
                skipped.append(Skipped(preview(fact.text), f"already in memory at {duplicate.citation}"))
            else:
                fresh.append(fact)
        return fresh

    def _finish(self, captured: list[MemoryLine], skipped: list[Skipped], name: str, key: str | None,
                message: str) -> CaptureResult:
        if key:
            self._ledger().claim(key)  # nothing to write, but the same turn need not be read again
        return CaptureResult(captured, skipped, name, message)


def _task_reason(fact: Fact) -> str | None:
    """Why a fact that reads as a task is not written (a model may file "needs to migrate X by Friday"
    as a decision); None for a lasting fact."""
    if is_task(memory_body(fact.text)):
        return "a task or near-term plan, not a lasting fact (the compaction rescue keeps open tasks)"
    return None


def _session_label(session_key: str | None) -> str:
    """A session key fit for a markdown heading: one line, no markup, at most 40 characters."""
    label = "".join(ch for ch in str(session_key or "") if ch.isalnum() or ch in "-_.:@")
    return label[:40] or "unnamed"
