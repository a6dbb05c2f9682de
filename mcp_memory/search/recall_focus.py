"""What of a recalled hit a model is shown: the memories that matched, not their whole chunk.

A search hit is a chunk (a dozen bullets under a heading) narrowed to the lines around its best
line. Recall injects text before every answer, so it shows less: the memory (list item,
paragraph, table row) the hit is named by (``core/memory_ids.py``), and any other memory of the
narrowed lines that matches the prompt at least as well, each cited on its own lines. In the best
hit, a turn of a logged conversation comes with the turns that answer it (``core/exchanges.py``),
cited as one range. Two kinds
of text are the product's own bookkeeping, not memories, and are never shown unless the prompt
asks about past sessions:

* episodes (``memory/episodes/``): which tools a session used, what it recalled and stored;
* the fields of an experience chain or an episode that only count or date things
  (``- count: 3``, ``- last seen: ...``, ``- none``).
"""

from __future__ import annotations

import functools
import re
from dataclasses import replace

from mcp_memory.core.analysis import TermAnalyzer
from mcp_memory.core.exchanges import exchange
from mcp_memory.core.hits import SearchHit
from mcp_memory.core.memory_ids import retired_by, without_marks
from mcp_memory.core.memory_lookup import LocatedMemory, MemoryLookup
from mcp_memory.core.privacy import EPISODES_DIR

MAX_EXTRA = 2  # memories shown beside the one a hit is named by
# Hits, from the best, whose conversation turns come with the turns that answer them: the best
# hit is the likeliest answer, and the others' answers would mostly add text the prompt does not
# need (bench/conversational_recall.py: precision by characters).
EXCHANGE_HITS = 1
_CJK_CHAR = re.compile(r"^[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]$")
_BOOKKEEPING_LINE = re.compile(
    r"^\s*[-*]\s+(?:none|(?:count|outcomes?|first seen|last seen|tags|records|start|end|client|session)\s*:)",
    re.IGNORECASE)
_ABOUT_SESSIONS = re.compile(
    r"\b(?:last|previous|earlier|past|prior|other|recent)\s+(?:session|conversation|chat)s?\b"
    r"|\b(?:session|episode)s?\b.{0,40}\b(?:before|ago|yesterday|earlier)\b"
    r"|\bwhat (?:did|have) (?:we|i|you) (?:do|done|work(?:ed)? on|decide|discuss)"
    r"|\blast time\b|\bepisodes?\b"
    r"|上次|上一次|之前的(?:会话|对话|聊天)|以前的(?:会话|对话)|上回", re.IGNORECASE)


def asks_about_sessions(prompt: str) -> bool:
    """Whether the prompt asks about past sessions (then episodes may be recalled)."""
    return bool(_ABOUT_SESSIONS.search(prompt))


def is_bookkeeping(path: str) -> bool:
    """Whether a file holds the product's records of sessions rather than memories."""
    return path.replace("\\", "/").startswith(EPISODES_DIR + "/")


def focus(hits: list[SearchHit], prompt: str, naming: MemoryLookup) -> list[SearchHit]:
    """Each hit as the memories of it that matched ``prompt`` (one hit per memory shown).

    A hit whose file cannot be read as memories any more is left as it is (its text is what
    search matched); one that holds only bookkeeping lines is dropped.
    """
    sessions = asks_about_sessions(prompt)
    terms = _terms(prompt)
    out: list[SearchHit] = []
    kept = [hit for hit in hits if sessions or not is_bookkeeping(hit.path)]
    for rank, hit in enumerate(kept):
        units = naming.units_between(hit.path, hit.chunk_start_line, hit.chunk_end_line)
        if not units:
            out.append(hit)
            continue
        real = [u for u in units if not _BOOKKEEPING_LINE.match(u.text) and not retired_by(u.text)]
        shown: list[range] = []
        for index in _matched(hit, real, terms):
            # A turn of a logged conversation comes with the turns that answer it (core/exchanges.py).
            turns = exchange(real, index) if rank < EXCHANGE_HITS else range(index, index + 1)
            if shown and turns.start < shown[-1].stop:
                shown[-1] = range(shown[-1].start, max(shown[-1].stop, turns.stop))
            else:
                shown.append(turns)
        out.extend(_as_hit(hit, real[turns.start: turns.stop]) for turns in shown)
    return out


def _matched(hit: SearchHit, real: list[LocatedMemory], terms: set[str]) -> list[int]:
    """Indices (into ``real``, in order) of the memory a hit is named by (unless another near its
    best line matches the prompt's words better), then of the others near it that match at least
    half as well."""
    if not real:
        return []
    near = [i for i, u in enumerate(real) if u.end_line >= hit.start_line and u.start_line <= hit.end_line] \
        or list(range(len(real)))
    scores = _word_scores([real[i] for i in near], terms)
    named = next((k for k, i in enumerate(near) if real[i].id and real[i].id == hit.id), None)
    best = max(range(len(near)), key=lambda k: (scores[k], k == named, -k))
    main = named if named is not None and scores[named] >= scores[best] else best
    extra = [k for k in range(len(near)) if k != main and scores[k] > 0 and scores[k] >= scores[main] / 2]
    extra = sorted(extra, key=lambda k: -scores[k])[:MAX_EXTRA]
    return [near[k] for k in sorted([main, *extra])]


def _word_scores(units: list[LocatedMemory], terms: set[str]) -> list[float]:
    """How much of the prompt each memory holds: a word counts more the fewer of them hold it
    (as ``index.hybrid.best_lines`` weighs lines), so a shared "the user" decides nothing."""
    found = [terms & memory_terms(u.text) for u in units]
    weight = {t: 1.0 / sum(t in f for f in found) for t in terms if any(t in f for f in found)}
    return [sum(weight[t] for t in f) for f in found]


def _as_hit(hit: SearchHit, units: list[LocatedMemory]) -> SearchHit:
    """``hit`` as these consecutive memories (one, or a turn and those that answer it), named by the first."""
    text = "\n".join(line.strip() for unit in units for line in without_marks(unit.text).split("\n") if line.strip())
    first, last = units[0], units[-1]
    # The hit is these memories now: its chunk range too (a hook receives it over the bridge as such).
    return replace(hit, start_line=first.start_line, end_line=last.end_line, chunk_start_line=first.start_line,
                   chunk_end_line=last.end_line, snippet=text, id=first.id or hit.id)


def _terms(text: str) -> set[str]:
    """The prompt's distinct search terms (stemmed as the keyword index stems them), without
    single CJK characters, which match too much."""
    return {t for t in _analyzer().query_terms(text) if not _CJK_CHAR.match(t)} if text else set()


@functools.lru_cache(maxsize=8192)
def memory_terms(text: str) -> frozenset[str]:
    """A memory's terms, as the keyword index holds them: the same memories come back prompt after
    prompt, and analysing them was a fifth of a recall's time on the dialogues."""
    return _analyzer().terms(text)


@functools.cache
def _analyzer() -> TermAnalyzer:
    return TermAnalyzer()
