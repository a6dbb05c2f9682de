"""Consolidation: memories said twice are kept once, and a changed statement retires the old one.

The sleep cycle (``sleep.py``) asks this module which list items to retire, then marks them in
place. Nothing is deleted or reworded: a retired item gets an HTML comment at the end of its
last line, ``<!-- superseded by m-… (path#Ln) -->`` or ``<!-- duplicate of m-… (path#Ln) -->``,
which markdown viewers hide, ids ignore (``core/memory_ids.py``), and search and recall read (the
item sinks in search and is never recalled).

Offline rules, on list items of ``memory/**`` (``MEMORY.md`` is the owner's curated file: its
items can retire others, but are never marked):

* **duplicate**: the same words (the same id), or a cosine at least ``capture.dedupe_threshold``
  (0.95): the first stated is kept, the later ones are marked;
* **superseded**: a later item that gives a new value to what the earlier stated, as
  ``core/updates.py`` reads two memories (the detector search uses too: "the staging host is
  db1" → "… db2", "prefers npm" → "now prefers pnpm, no longer npm", "Maya lives in Toronto" →
  "Maya moved to Vancouver", 改用, 搬到, 涨到), with a cosine of at least ``SUPERSEDE_COSINE``
  (lower when the later item says it changed: "now", "switched to", "no longer", "改用", "现在"...).
  Only dated items (a daily file or a trailing ``(YYYY-MM-DD)``) are compared by time; the earlier
  one is marked. A change read so wins over the duplicate test: the later value is never the one
  marked.

An item is only retired in favour of one seen wherever it is seen: of its own scope, or global
(``core/scopes.py``); a project's note never hides a global one, nor one of another project; and an
item of a shared file never in favour of one in a private file (``core/privacy.py``), whose citation
the mark would write into the shared file.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mcp_memory.core.analysis import keyword_tokens
from mcp_memory.core.hits import cite
from mcp_memory.core.memory_ids import retired_by, split_memories, statement_body
from mcp_memory.core.opposites import opposed
from mcp_memory.core.scopes import may_retire
from mcp_memory.core.updates import Statement, has_change_cue, supersedes
from mcp_memory.core.workspace import read_text
from mcp_memory.embedding import EmbeddingError
from mcp_memory.embedding.cache import embed_through_cache
from mcp_memory.index.engine import Engine
from mcp_memory.lifecycle.consolidation_judge import CANDIDATE_COSINE, MAX_PAIRS, ChatJudge, JudgeError

# The cosine a changed statement needs besides the text rules of core/updates.py: paraphrased
# updates sit at 0.5-0.9 ("works from the Berlin office" / "works remotely from Leipzig now": 0.52),
# and the rules, not the cosine, tell them from look-alikes (which reach 0.99: "turned the flag on"
# / "off"). A change said in words lowers it: updates across languages that a name or a Latin word
# ties sit at 0.38-0.49 ("Leo lives in Shanghai" / "Leo 搬到成都了": 0.49). Tuned on the dev half of
# bench/data/updates.jsonl (0.50 → 0.35: dev 0.848 → 0.891 of updates marked, no false mark there).
SUPERSEDE_COSINE = 0.65
SUPERSEDE_COSINE_WITH_CUE = 0.35
NEIGHBOURS = 8  # the closest items each item is compared with
_NUMBER = re.compile(r"\d+(?:[.:]\d+)*")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+")
_STATED = re.compile(r"\((\d{4}-\d{2}-\d{2})\)\s*(?:<!--.*-->\s*)?$")
_CATEGORY = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+\[([A-Za-z][\w-]{0,30})\]")
# Files the sleep cycle never marks: whole-file records other features own.
_OWNED = ("memory/episodes/", "memory/experience", "memory/archive")


@dataclass(frozen=True)
class Item:
    """One list item of a memory file."""

    path: str
    start_line: int  # 1-based
    end_line: int
    text: str  # the item's lines as written
    body: str  # its words, without markers, category or date
    id: str
    date: dt.date | None
    category: str | None
    curated: bool  # in MEMORY.md: can retire others, is never marked

    @property
    def citation(self) -> str:
        return cite(self.path, self.start_line)


@dataclass(frozen=True)
class Retirement:
    """One item to mark, and the item that makes it redundant."""

    kind: str  # "duplicate" or "superseded"
    item: Item
    by: Item
    similarity: float

    @property
    def mark(self) -> str:
        label = "duplicate of" if self.kind == "duplicate" else "superseded by"
        return f"<!-- {label} {self.by.id} ({self.by.citation}) -->"

    def to_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "path": self.item.path, "line": self.item.end_line, "text": self.item.text,
                "by": self.by.citation, "by_text": self.by.text, "similarity": round(self.similarity, 3)}


def collect_items(engine: Engine) -> list[Item]:
    """Every list item of the memory files that is not retired already."""
    items: list[Item] = []
    curated = engine.workspace.evergreen_path()
    for file in engine.workspace.list_files():
        if file.rel_path.startswith(_OWNED) or file.kind != "memory":
            continue
        try:
            lines = read_text(file.abs_path).split("\n")
        except (OSError, UnicodeDecodeError, ValueError):
            continue
        for unit in split_memories(lines):
            text = "\n".join(lines[unit.start : unit.end + 1])
            if not _ITEM.match(lines[unit.start]) or retired_by(text):
                continue
            stated = _STATED.search(lines[unit.end])
            date = dt.date.fromisoformat(stated.group(1)) if stated else file.date
            category = _CATEGORY.match(lines[unit.start])
            body = statement_body(text)
            items.append(Item(file.rel_path, unit.start + 1, unit.end + 1, text, body, unit.id, date,
                              category.group(1).lower() if category else None, file.rel_path == curated))
    return items


def plan_retirements(engine: Engine, items: list[Item], judge: ChatJudge | None = None,
                     warnings: list[str] | None = None) -> list[Retirement]:
    """Which items to mark, each at most once, and why. With a ``judge`` (a chat model), its verdicts
    replace the rules' on close dated pairs; if it fails, a line goes to ``warnings`` and the rules decide."""
    if len(items) < 2:
        return []
    neighbours = _neighbours(engine, items)
    same_fact_cosine = engine.embedder.same_fact_cosine if engine.embedder is not None else None
    pairs = sorted({(min(i, j), max(i, j)): cosine for i, close in neighbours.items() for j, cosine in close}.items())
    verdicts = _model_verdicts(items, pairs, judge, warnings) if judge is not None else {}
    planned: dict[int, Retirement] = {}
    for (i, j), cosine in pairs:
        found = verdicts[(i, j)] if (i, j) in verdicts else _judge(items[i], items[j], cosine, same_fact_cosine)
        if found is None:
            continue
        kind, old, new = found
        victim = i if old is items[i] else j
        if kind == "duplicate" and not _may_retire(engine, old.path, new.path) and _may_retire(engine, new.path,
                                                                                                  old.path):
            # A global memory repeated in a scope (a shared one in a private file): that copy goes.
            victim, new = (j if victim == i else i), old
        if items[victim].curated or victim in planned or not _may_retire(engine, items[victim].path, new.path):
            continue  # a scoped memory never retires a global one, nor a private one a shared one
        planned[victim] = Retirement(kind, items[victim], new, cosine)
    return list(planned.values())


def _may_retire(engine: Engine, path: str, keeper_path: str) -> bool:
    """Whether an item of ``path`` may be marked in favour of one of ``keeper_path``: the keeper is seen
    wherever the marked item is (its scope or the global memory; a shared file's keeper is shared),
    since the mark names the keeper in the marked item's file."""
    privacy = engine.privacy
    return may_retire(path, keeper_path) and (privacy.is_private(path) or not privacy.is_private(keeper_path))


def _model_verdicts(items: list[Item], pairs: list[tuple[tuple[int, int], float]], judge: ChatJudge,
                    warnings: list[str] | None) -> dict[tuple[int, int], tuple[str, Item, Item] | None]:
    """The chat model's reading of each close pair of dated items; {} (the rules decide) if it fails."""
    close = [((i, j), cosine) for (i, j), cosine in pairs
             if cosine >= CANDIDATE_COSINE and items[i].id != items[j].id and items[i].date and items[j].date]
    asked = [pair for pair, _ in sorted(close, key=lambda item: -item[1])[:MAX_PAIRS]]
    if not asked:
        return {}
    ordered = [_in_order(items[i], items[j]) for i, j in asked]
    try:
        answers = judge.judge([(a.body, str(a.date), b.body, str(b.date)) for a, b in ordered])
    except JudgeError as exc:
        if warnings is not None:
            warnings.append(f"{exc}; the offline rules decided")
        return {}
    out: dict[tuple[int, int], tuple[str, Item, Item] | None] = {}
    for pair, (first, later), verdict in zip(asked, ordered, answers, strict=True):
        if verdict == "superseded":
            out[pair] = ("superseded", first, later)
        elif verdict == "duplicate":
            out[pair] = ("duplicate", later, first)
        else:
            out[pair] = None
    return out


def _judge(a: Item, b: Item, cosine: float, same_fact_cosine: float | None = None) -> tuple[str, Item, Item] | None:
    """("duplicate" | "superseded", the item to retire, the one that stays), or None."""
    if a.id != b.id and opposed(a.body, b.body):
        return None  # an action and its reversal both happened
    if a.id != b.id and a.date is not None and b.date is not None and a.date != b.date:
        old, new = (a, b) if a.date < b.date else (b, a)
        gate = SUPERSEDE_COSINE_WITH_CUE if has_change_cue(new.text) else SUPERSEDE_COSINE
        # Across languages the words may not settle it: the cosine must then reach the model's mark.
        def same_fact(pairs: Sequence[tuple[str, str]]) -> list[bool]:
            return [same_fact_cosine is not None and cosine >= same_fact_cosine for _ in pairs]
        if cosine >= gate and supersedes(Statement(new.text, new.date), Statement(old.text, old.date), same_fact):
            return "superseded", old, new
    if a.id == b.id or (cosine >= 0.95 and _numbers(a.body) == _numbers(b.body)):
        first, later = _in_order(a, b)
        return "duplicate", later, first  # (kind, the item to retire, the one that stays)
    return None


def _numbers(text: str) -> list[str]:
    """The numbers a statement holds: "version 1.27" and "version 1.29" are not the same statement."""
    return _NUMBER.findall(text)


def _in_order(a: Item, b: Item) -> tuple[Item, Item]:
    """(the first stated, the later): MEMORY.md first, then by date, then by place."""
    def key(item: Item) -> tuple[int, dt.date, str, int]:
        return (0 if item.curated else 1, item.date or dt.date.min, item.path, item.start_line)
    return (a, b) if key(a) <= key(b) else (b, a)


def _neighbours(engine: Engine, items: list[Item]) -> dict[int, list[tuple[int, float]]]:
    """For each item, its closest items with their cosines (token overlap without an embedder)."""
    vectors = _vectors(engine, [item.body for item in items])
    out: dict[int, list[tuple[int, float]]] = {}
    if vectors is None:
        tokens = [set(keyword_tokens(item.body.lower())) for item in items]
        for i in range(len(items)):
            scores = [(j, len(tokens[i] & tokens[j]) / max(1, len(tokens[i] | tokens[j]))) for j in range(len(items))
                      if j != i]
            out[i] = sorted(scores, key=lambda pair: -pair[1])[:NEIGHBOURS]
        return out
    k = min(NEIGHBOURS, len(items) - 1)
    for start in range(0, len(items), 1024):
        block = vectors[start : start + 1024] @ vectors.T
        for offset, row in enumerate(block):
            i = start + offset
            row[i] = -1.0
            best = np.argpartition(-row, k - 1)[:k]
            out[i] = [(int(j), float(row[j])) for j in best]
    return out


def _vectors(engine: Engine, texts: list[str]) -> np.ndarray | None:
    if engine.embedder is None:
        return None
    try:
        vectors = embed_through_cache(engine.embedder, engine.cache, texts, "line", local_only=True)  # any file's lines
    except EmbeddingError as exc:
        engine.note_degraded(f"embedding failed: {exc}")
        return None
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1, norms)
