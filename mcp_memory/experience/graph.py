"""The experience graph: cause → action → effect chains, kept in ``memory/experience.md``.

A chain records what was wrong (cause), what was done about it (action), what came of it
(effect) and how it went (outcome). Logging the same cause and action again, in other words
or in another language, does not write a second entry: the existing chain counts one more
sighting, keeps a tally of outcomes and shows the latest effect. Querying the chains before a
similar action tells what worked and what failed.

The file is ordinary markdown, readable and editable by hand; it is parsed on every call
(cached by size and modification time), so a hand edit counts from the next call on. An entry
is a ``## `` heading followed by ``- field: value`` lines; everything else in the file is left
byte for byte as it is. Writes are a read-check-rewrite under the workspace files lock with an
atomic replace, so two processes logging the same chain end with one entry counted twice.

Two chains are the same when both their causes and their actions are close: the smaller of the
two similarities (embedding cosine, or token overlap without an embedder) must reach a
threshold. Taking the smaller keeps near misses apart: the same cause with another action, or
the same action for another cause, has one low similarity.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import re
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from mcp_memory.core.analysis import keyword_tokens, query_tokens
from mcp_memory.core.hits import cite
from mcp_memory.core.opposites import opposed
from mcp_memory.core.reading import Reader
from mcp_memory.core.workspace import decode_memory_bytes
from mcp_memory.errors import MemoryInputError, PathError
from mcp_memory.index.engine import Engine
from mcp_memory.index.similarity import Similarity
from mcp_memory.safety import clean_memory_text
from mcp_memory.safety.lines import checked_line
from mcp_memory.writes.edits import Editor

EXPERIENCE_FILE = "memory/experience.md"
OUTCOMES = ("success", "failure", "partial", "unknown")
MAX_FIELD_CHARS = 500
MAX_TAGS = 20
MAX_TAG_CHARS = 50
# Smallest of the cause and action similarities for two chains to be one. Chosen on the first
# half of bench/data/chains.json (bench/graph.py --calibrate) and checked on the second half.
DUPLICATE_THRESHOLD = 0.46
KEYWORD_DUPLICATE_THRESHOLD = 0.6  # token overlap (Jaccard) when no embedder is ready
QUERY_SEMANTIC_WEIGHT = 0.7  # the rest of a query score is keyword coverage
QUERY_FLOOR = 0.2  # below this cosine, a chain sharing no keyword with the query is not a match
SUMMARY_SIZE = 5

_HEADER = ("# Experience\n\nCause → action → effect chains: what was tried and what came of it. Edit freely;"
           " keep each entry's `- field: value` lines.\n")
_HEADING = re.compile(r"^##\s+\S")
_FIELD = re.compile(r"^[-*]\s+([A-Za-z][A-Za-z _]*?)\s*:\s?(.*)$")
_FIELDS = ("cause", "action", "effect", "outcome", "tags", "count", "outcomes", "first seen", "last seen", "id")
_NOT_LETTER_OR_DIGIT = re.compile(r"[\W_]+")

Outcome = Literal["success", "failure", "partial", "unknown"]


@dataclass(frozen=True)
class Chain:
    """One cause → action → effect chain as the file holds it."""

    id: str
    cause: str
    action: str
    effect: str
    outcome: str  # the latest outcome
    tags: tuple[str, ...] = ()
    count: int = 1
    outcomes: dict[str, int] = field(default_factory=dict)  # every outcome seen, with its count
    first_seen: str = ""  # YYYY-MM-DD
    last_seen: str = ""
    start_line: int = 0  # the entry's heading
    end_line: int = 0  # its last field line

    @property
    def path(self) -> str:
        return EXPERIENCE_FILE

    @property
    def citation(self) -> str:
        return cite(EXPERIENCE_FILE, self.start_line, self.end_line)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "cause": self.cause, "action": self.action, "effect": self.effect,
                "outcome": self.outcome, "tags": list(self.tags), "count": self.count,
                "outcomes": dict(self.outcomes), "first_seen": self.first_seen, "last_seen": self.last_seen,
                "path": self.path, "start_line": self.start_line, "end_line": self.end_line,
                "citation": self.citation}


@dataclass(frozen=True)
class GraphAddResult:
    status: Literal["added", "updated"]
    chain: Chain  # as written now
    similarity: float | None = None  # for "updated": how close the logged chain was to it


@dataclass(frozen=True)
class ChainMatch:
    chain: Chain
    score: float


@dataclass(frozen=True)
class GraphSummary:
    total: int
    by_outcome: dict[str, int]
    patterns: list[dict[str, Any]]  # {"kind": cause|action|tag, "text", "count"}, most frequent first
    recent: list[dict[str, Any]]  # the latest chains, newest first
    avoid: list[dict[str, Any]]  # actions that failed at least as often as they worked

    def to_dict(self) -> dict[str, Any]:
        return {"total": self.total, "by_outcome": dict(self.by_outcome), "patterns": self.patterns,
                "recent": self.recent, "avoid": self.avoid}


# ----- checking what a caller logs -----------------------------------------------------------
@dataclass(frozen=True)
class _Draft:
    cause: str
    action: str
    effect: str
    outcome: str
    tags: tuple[str, ...]


def check_chain(cause: object, action: object, effect: object, outcome: object, tags: object) -> _Draft:
    """The cleaned chain, or ``MemoryInputError`` naming the field that cannot be written and why."""
    if not isinstance(outcome, str) or outcome.strip().lower() not in OUTCOMES:
        raise MemoryInputError(f"outcome must be one of {', '.join(OUTCOMES)} (got {str(outcome)[:40]!r})")
    return _Draft(_checked_field("cause", cause), _checked_field("action", action),
                  _checked_field("effect", effect), outcome.strip().lower(), _checked_tags(tags))


def _checked_field(name: str, value: object, limit: int = MAX_FIELD_CHARS) -> str:
    return checked_line(value, name, limit)


def _checked_tags(tags: object) -> tuple[str, ...]:
    """Tags lowercased, trimmed and deduplicated, each checked like a field."""
    if tags is None:
        return ()
    if not isinstance(tags, list | tuple):
        raise MemoryInputError("tags must be a list of strings")
    cleaned: list[str] = []
    for i, tag in enumerate(tags):
        text = _checked_field(f"tags[{i}]", tag, MAX_TAG_CHARS).lower()
        if "," in text:
            raise MemoryInputError(f"tags[{i}] contains a comma; give each tag as its own list item")
        cleaned.append(text)
    unique = tuple(dict.fromkeys(cleaned))
    if len(unique) > MAX_TAGS:
        raise MemoryInputError(f"{len(unique)} tags; at most {MAX_TAGS} are allowed")
    return unique


# ----- the file ------------------------------------------------------------------------------
def parse_chains(text: str) -> list[Chain]:
    """Every entry of an experience file: a ``## `` heading followed by ``- field: value`` lines.

    Fields a hand edit left out get defaults; a heading whose fields lack a cause or an action
    is ordinary text, not an entry.
    """
    lines = [line.rstrip("\r") for line in text.split("\n")]
    chains: list[Chain] = []
    i = 0
    while i < len(lines):
        if not _HEADING.match(lines[i]):
            i += 1
            continue
        values: dict[str, str] = {}
        j = i + 1
        while j < len(lines) and (match := _FIELD.match(lines[j])):
            key = match[1].lower().replace("_", " ").strip()
            if key in _FIELDS:
                values.setdefault(key, match[2].strip())
            j += 1
        if values.get("cause") and values.get("action") and j > i + 1:
            chains.append(_chain_from(values, i + 1, j))
        i = j if j > i + 1 else i + 1
    return chains


def _chain_from(values: dict[str, str], start: int, end: int) -> Chain:
    cause, action = values["cause"], values["action"]
    outcome = values.get("outcome", "").lower()
    outcome = outcome if outcome in OUTCOMES else "unknown"
    count = _int(values.get("count", ""), 1)
    tally = _parse_tally(values.get("outcomes", "")) or {outcome: count}
    tags = tuple(dict.fromkeys(t.strip().lower() for t in values.get("tags", "").split(",") if t.strip()))
    return Chain(id=values.get("id") or chain_id(cause, action), cause=cause, action=action,
                 effect=values.get("effect", ""), outcome=outcome, tags=tags, count=count, outcomes=tally,
                 first_seen=_date(values.get("first seen", "")), last_seen=_date(values.get("last seen", "")),
                 start_line=start, end_line=end)


def render_chain(chain: Chain) -> list[str]:
    """The lines of one entry (heading first)."""
    tally = ", ".join(f"{name} {n}" for name, n in chain.outcomes.items() if n > 0)
    lines = [f"## {_short(chain.cause)} → {_short(chain.action)}",
             f"- cause: {chain.cause}",
             f"- action: {chain.action}",
             f"- effect: {chain.effect}",
             f"- outcome: {chain.outcome}",
             f"- tags: {', '.join(chain.tags)}",
             f"- count: {chain.count}",
             f"- outcomes: {tally}",
             f"- first seen: {chain.first_seen}",
             f"- last seen: {chain.last_seen}",
             f"- id: {chain.id}"]
    return [line.rstrip() for line in lines]


def chain_id(cause: str, action: str) -> str:
    """A short stable id for a chain, from the words of its first cause and action."""
    key = f"{_letters(cause)}\n{_letters(action)}".encode()
    return "exp-" + hashlib.sha1(key).hexdigest()[:10]


def _replace_entry(data: bytes, chain: Chain, lines: list[str]) -> bytes:
    """``data`` with the entry of ``chain`` replaced by ``lines``; every other byte kept."""
    raw = data.split(b"\n")
    raw[chain.start_line - 1 : chain.end_line] = [line.encode("utf-8") for line in lines]
    return b"\n".join(raw)


def _append_entry(data: bytes | None, lines: list[str]) -> tuple[bytes, int]:
    """``data`` (or a new file) with an entry added at the end, and the entry's first line."""
    old = data if data is not None else _HEADER.encode("utf-8")
    if old and not old.endswith(b"\n"):
        old += b"\n"
    if old and not old.endswith(b"\n\n"):
        old += b"\n"  # a blank line before the heading
    start = old.count(b"\n") + 1
    return old + ("\n".join(lines) + "\n").encode("utf-8"), start


# ----- scoring -------------------------------------------------------------------------------
def best_duplicate(cause_scores: Sequence[float], action_scores: Sequence[float],
                   threshold: float) -> tuple[int, float] | None:
    """The index of the chain both of whose similarities reach ``threshold`` (the closest), or None."""
    best: tuple[int, float] | None = None
    for i, (c, a) in enumerate(zip(cause_scores, action_scores, strict=True)):
        score = min(c, a)
        if score >= threshold and (best is None or score > best[1]):
            best = (i, score)
    return best


def keyword_coverage(query: str, text: str) -> float:
    """Share of the query's content tokens that ``text`` holds."""
    wanted = set(query_tokens(query.lower()))
    if not wanted:
        return 0.0
    return len(wanted & set(keyword_tokens(text.lower()))) / len(wanted)


def chain_text(chain: Chain) -> str:
    """What a query is compared with."""
    return f"{chain.cause}; {chain.action}; {chain.effect}; {' '.join(chain.tags)}"


# ----- the graph -----------------------------------------------------------------------------
class ExperienceGraph:
    """Adds, finds and sums up the chains of one workspace's experience file."""

    def __init__(self, engine: Engine, reader: Reader, similarity: Similarity, editor: Editor):
        self.engine = engine
        self.reader = reader
        self.similarity = similarity
        self.editor = editor
        self._cache: tuple[tuple[int, int, int], list[Chain]] | None = None
        self._cache_lock = threading.Lock()

    # ----- add -------------------------------------------------------------------------------
    def add(self, cause: str, action: str, effect: str, outcome: str, tags: Sequence[str] | None = None,
            include_private: bool = True, today: dt.date | None = None) -> GraphAddResult:
        """Log one chain: a new entry, or one more sighting of the chain it repeats."""
        draft = check_chain(cause, action, effect, outcome, list(tags) if isinstance(tags, tuple) else tags)
        if not include_private and self.engine.privacy.is_private(EXPERIENCE_FILE):
            raise MemoryInputError(f"not written: {EXPERIENCE_FILE} is not shared with this client; "
                                   "ask the owner to log it")
        self.engine.open()
        day = (today or dt.date.today()).isoformat()
        workspace = self.engine.workspace
        with workspace.locked():  # no other process writes between the check and the rewrite
            data = self._read_bytes()
            chains = parse_chains(decode_memory_bytes(data)) if data is not None else []
            found = self._find_duplicate(draft, chains)
            if found is not None:
                old, score = chains[found[0]], found[1]
                chain = _merged(old, draft, day)
                new = _replace_entry(data or b"", old, render_chain(chain))
                result = GraphAddResult("updated", chain, round(score, 4))
            else:
                chain = Chain(chain_id(draft.cause, draft.action), draft.cause, draft.action, draft.effect,
                              draft.outcome, draft.tags, 1, {draft.outcome: 1}, day, day)
                new, start = _append_entry(data, render_chain(chain))
                chain = replace(chain, start_line=start, end_line=start + len(render_chain(chain)) - 1)
                result = GraphAddResult("added", chain)
            try:
                workspace.replace_bytes(EXPERIENCE_FILE, data, new)
            except PathError as exc:
                raise MemoryInputError(f"not written: {exc}") from None
        self._keep_index_in_step()
        return result

    def _read_bytes(self) -> bytes | None:
        """The file's bytes, None when it does not exist; refused when it is not a plain memory file."""
        if not os.path.lexists(self.engine.workspace.root / EXPERIENCE_FILE):
            return None
        try:
            return self.engine.workspace.resolve(EXPERIENCE_FILE).abs_path.read_bytes()
        except (PathError, OSError) as exc:
            raise MemoryInputError(f"not written: {exc}") from None

    def _find_duplicate(self, draft: _Draft, chains: list[Chain]) -> tuple[int, float] | None:
        if not chains:
            return None
        embedded = self.engine.embedder is not None
        causes = self._scores(draft.cause, [c.cause for c in chains])
        actions = self._scores(draft.action, [c.action for c in chains])
        # An action and its reversal embed close together ("added X" / "removed X"): never the same chain.
        actions = [0.0 if opposed(draft.action, c.action) else score for c, score in zip(chains, actions, strict=True)]
        return best_duplicate(causes, actions, DUPLICATE_THRESHOLD if embedded else KEYWORD_DUPLICATE_THRESHOLD)

    def _scores(self, text: str, others: list[str]) -> list[float]:
        """Similarities, 1.0 where only case, spacing and punctuation differ."""
        key = _letters(text)
        scores = self.similarity.similarities(text, others)
        return [1.0 if _letters(o) == key else s for o, s in zip(others, scores, strict=True)]

    def _keep_index_in_step(self) -> None:
        """Sync the file and embed its new rows, so an ordinary search finds the chain at once."""
        self.editor.sync_edited(EXPERIENCE_FILE)
        self.editor.check_indexed(EXPERIENCE_FILE)
        self.editor.embed_edited(EXPERIENCE_FILE)

    # ----- reading ---------------------------------------------------------------------------
    def chains(self, include_private: bool = True) -> list[Chain]:
        """Every chain of the file, in file order; none for a caller that may not see the file."""
        if not include_private and self.engine.privacy.is_private(EXPERIENCE_FILE):
            return []
        path = self.engine.workspace.root / EXPERIENCE_FILE
        if not os.path.lexists(path):
            return []
        try:
            memory_file = self.reader.resolve_visible(EXPERIENCE_FILE, include_private)
            info = os.stat(memory_file.abs_path)
            key = (info.st_mtime_ns, info.st_size, info.st_ino)
            with self._cache_lock:
                if self._cache is not None and self._cache[0] == key:
                    return list(self._cache[1])
            chains = parse_chains(decode_memory_bytes(memory_file.abs_path.read_bytes()))
        except (PathError, OSError, UnicodeDecodeError):
            return []
        with self._cache_lock:
            self._cache = (key, chains)
        return list(chains)

    def query(self, query: str, outcome_filter: str | None = None, tags: Sequence[str] | None = None,
              max_results: int = 5, include_private: bool = True) -> list[ChainMatch]:
        """Chains matching ``query`` (meaning and keywords), best first, filtered by outcome and tags."""
        if not isinstance(query, str) or not " ".join(clean_memory_text(query).split()):
            raise MemoryInputError("query is empty")
        query = " ".join(clean_memory_text(query).split())
        if outcome_filter is not None and outcome_filter.strip().lower() not in OUTCOMES:
            raise MemoryInputError(f"outcome_filter must be one of {', '.join(OUTCOMES)}")
        if max_results < 1:
            raise MemoryInputError("max_results must be 1 or more")
        wanted_tags = set(_checked_tags(list(tags) if tags is not None else None))
        chains = [c for c in self.chains(include_private)
                  if (outcome_filter is None or c.outcome == outcome_filter.strip().lower())
                  and wanted_tags <= set(c.tags)]
        if not chains:
            return []
        self.engine.open()
        texts = [chain_text(c) for c in chains]
        cosines = self.similarity.similarities(query, texts) if self.engine.embedder is not None else None
        matches = []
        for i, chain in enumerate(chains):
            keywords = keyword_coverage(query, texts[i])
            if cosines is None:
                score = keywords
            elif keywords == 0 and cosines[i] < QUERY_FLOOR:
                score = 0.0
            else:
                score = QUERY_SEMANTIC_WEIGHT * max(cosines[i], 0.0) + (1 - QUERY_SEMANTIC_WEIGHT) * keywords
            if score > 0:
                matches.append(ChainMatch(chain, round(score, 4)))
        matches.sort(key=lambda m: (-m.score, -m.chain.count))
        return matches[:max_results]

    def summary(self, include_private: bool = True, size: int = SUMMARY_SIZE) -> GraphSummary:
        """Totals, the most frequent causes, actions and tags, the latest chains and the actions to avoid."""
        chains = self.chains(include_private)
        by_outcome = {name: sum(c.outcome == name for c in chains) for name in OUTCOMES}
        recent = sorted(enumerate(chains), key=lambda pair: (pair[1].last_seen, pair[0]), reverse=True)[:size]
        failing = [c for c in chains if c.outcomes.get("failure", 0) > 0
                   and c.outcomes.get("failure", 0) >= c.outcomes.get("success", 0)]
        failing.sort(key=lambda c: (c.outcomes.get("failure", 0), c.last_seen), reverse=True)
        return GraphSummary(
            total=len(chains), by_outcome=by_outcome, patterns=_patterns(chains, size),
            recent=[_brief(c) for _, c in recent],
            avoid=[{**_brief(c), "effect": c.effect, "failures": c.outcomes.get("failure", 0)}
                   for c in failing[:size]])


def _merged(old: Chain, draft: _Draft, day: str) -> Chain:
    """``old`` seen once more: count, tally, latest effect and outcome, tags joined, last seen."""
    tally = dict(old.outcomes)
    tally[draft.outcome] = tally.get(draft.outcome, 0) + 1
    return replace(old, effect=draft.effect, outcome=draft.outcome, tags=tuple(dict.fromkeys([*old.tags, *draft.tags])),
                   count=old.count + 1, outcomes=tally, first_seen=old.first_seen or day, last_seen=day)


def _patterns(chains: list[Chain], size: int) -> list[dict[str, Any]]:
    """The most frequent causes, actions and tags, each weighed by how often its chains were seen."""
    out: list[dict[str, Any]] = []
    for kind in ("cause", "action", "tag"):
        counts: Counter[str] = Counter()
        shown: dict[str, str] = {}
        for chain in chains:
            values = chain.tags if kind == "tag" else (getattr(chain, kind),)
            for value in values:
                key = _letters(value) or value
                shown.setdefault(key, value)
                counts[key] += chain.count
        out += [{"kind": kind, "text": shown[key], "count": n} for key, n in counts.most_common(size)]
    return out


def _brief(chain: Chain) -> dict[str, Any]:
    return {"id": chain.id, "cause": chain.cause, "action": chain.action, "outcome": chain.outcome,
            "count": chain.count, "last_seen": chain.last_seen, "citation": chain.citation}


def _parse_tally(text: str) -> dict[str, int]:
    tally: dict[str, int] = {}
    for part in text.split(","):
        words = part.split()
        if len(words) == 2 and words[0].lower() in OUTCOMES:
            tally[words[0].lower()] = tally.get(words[0].lower(), 0) + _int(words[1], 0)
    return {k: v for k, v in tally.items() if v > 0}


def _int(text: str, default: int) -> int:
    try:
        return max(1, int(text.strip())) if default else max(0, int(text.strip()))
    except ValueError:
        return default


def _date(text: str) -> str:
    try:
        return dt.date.fromisoformat(text.strip()).isoformat()
    except ValueError:
        return ""


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _letters(text: str) -> str:
    return _NOT_LETTER_OR_DIGIT.sub("", text.casefold())
