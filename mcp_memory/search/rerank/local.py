"""The offline reranker: evidence that a first stage scoring whole chunks cannot see.

The first stage scores a ~400-token chunk as one bag of words and one vector, so a chunk
where the query's words lie scattered over twenty lines ties with one where a single line
answers the question. This stage reads each candidate line by line:

* **line evidence**: the share of the query's weight (BM25's IDF of each term, so rare words
  count most) found within two adjacent lines, the best such window of the chunk;
* **phrases**: the share of the query's adjacent word pairs (stemmed) found in one line, so
  "masterpiece on wheels" beats a line that has the three words apart;
* **dates**: when the query names a day, month or year (``core/periods.py``), daily files of
  that period, or just after it, rise;
* the first stage's own fused score, which carries the semantic match;
* **closest line** (when line vectors exist, ``index/line_vectors.py``): how close the query is to
  the candidate's best line by multilingual-e5, spread over the candidates.

Word evidence (lines, phrases) counts only when some candidate holds a good share of the
query's words, so a query whose words the notes do not hold (another language) keeps the
first stage's order. A long query (the conversation so far) is read for its focus, the latest
user turn (``core/query_focus.py``); the first-stage scores carry the rest of it.

Measured on LoCoMo (``bench/locomo.py``, ``docs/benchmarks.md``), along with what did not
help: vectors per line from the default (chunk) model, rank fusion instead of score blending.
Weights are round numbers, not fitted.
"""

from __future__ import annotations

import copy
import datetime as dt
import logging
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise

from mcp_memory.core.analysis import WORDS_FOUND_HIGH, WORDS_FOUND_LOW, TermAnalyzer
from mcp_memory.core.periods import date_closeness, query_periods
from mcp_memory.core.query_focus import focus
from mcp_memory.index.line_vectors import LineVectors
from mcp_memory.search.rerank.base import RerankCandidate

FIRST_STAGE_WEIGHT = 0.6
LINE_EVIDENCE_WEIGHT = 0.4
PHRASE_WEIGHT = 0.2
DATE_WEIGHT = 0.3
WINDOW_LINES = 2
LINE_VECTOR_WEIGHT = 0.2
_CACHED_LINES = 50_000

log = logging.getLogger(__name__)

IdfLookup = Callable[[Iterable[str]], dict[str, float]]


class LocalReranker:
    name = "local"

    def __init__(self, idf: IdfLookup, analyzer: TermAnalyzer | None = None, lines: LineVectors | None = None):
        self._idf = idf
        self._analyzer = analyzer or TermAnalyzer()
        self._line_vectors = lines
        self._lines: OrderedDict[str, tuple[frozenset[str], frozenset[tuple[str, str]]]] = OrderedDict()
        self._today: dt.date | None = None

    def weighing_by(self, idf: IdfLookup) -> LocalReranker:
        """This reranker with another word weighting (the statistics a restricted caller may see)."""
        twin = copy.copy(self)
        twin._idf = idf
        return twin

    def on_day(self, today: dt.date) -> LocalReranker:
        """This reranker reading a day named without a year ("on May 4th") as the last one up to ``today``."""
        twin = copy.copy(self)
        twin._today = today
        return twin

    def prepare(self, query: str) -> None:
        """Start what reading ``query`` will need that takes long and no candidate: the line model's
        vector of its focus, embedded beside the first stage (``index/line_vectors.py``)."""
        if self._line_vectors is not None:
            self._line_vectors.embed_query_soon(focus(query))

    def rerank(self, query: str, candidates: Sequence[RerankCandidate]) -> list[float]:
        if not candidates:
            return []
        return blended(self.evidence(query, candidates))

    def evidence(self, query: str, candidates: Sequence[RerankCandidate]) -> Evidence:
        """What this reranker reads of each candidate (at least one), before any weight is applied."""
        # A long query (the conversation so far) is read for its focus, the latest turn: the
        # candidates' first-stage scores carry the rest of it (``core/query_focus.py``).
        query = focus(query)
        terms = self._analyzer.query_terms(query)
        weights = self._idf(terms) if terms else {}
        total = sum(weights.values())
        periods = query_periods(query, self._today or dt.date.today())
        phrases = _pairs(self._analyzer.sequence(query))
        lines = [self.line_evidence(c.text, weights, total)[0] for c in candidates]
        # Words are evidence only when the query's words are really found: an English question
        # over Chinese notes matches a stray English word here and there, which must not
        # outweigh the meaning the first stage found. Word evidence counts fully when some
        # candidate holds a good share of the query's weight, and not at all when none does.
        confidence = min(1.0, max(0.0, (max(lines) - WORDS_FOUND_LOW) / (WORDS_FOUND_HIGH - WORDS_FOUND_LOW)))
        return Evidence(
            first=[c.score for c in candidates], lines=lines, confidence=confidence,
            phrases=[self.phrase_share(c.text, phrases) for c in candidates] if phrases else None,
            dates=[date_closeness(periods, c.date) for c in candidates] if periods else None,
            closest=self._closest_lines(query, candidates))

    def _closest_lines(self, query: str, candidates: Sequence[RerankCandidate]) -> list[float] | None:
        """Each candidate's closest-line evidence (0..1), or None when there is none to hear."""
        if self._line_vectors is None:
            return None
        try:
            return self._line_vectors.best_line_scores(query, [c.text for c in candidates])
        except Exception as exc:  # noqa: BLE001 - extra evidence: without it the order is still sound
            log.warning("line vectors unavailable for precision search: %s", exc)
            return None

    def line_evidence(self, text: str, weights: dict[str, float], total: float) -> tuple[float, int]:
        """The best window's share of the query weight (0..1) and the index of its first line."""
        if total <= 0:
            return 0.0, 0
        asked = weights.keys()
        # Each line's terms that the query weighs: a line holds dozens of terms, a query a few.
        lines = [self._line(line)[0] & asked for line in text.split("\n")]
        best, best_at = 0.0, 0
        for i in range(len(lines)):
            window = frozenset().union(*lines[i : i + WINDOW_LINES])
            found = sum(weights[term] for term in window)
            if found > best:
                best, best_at = found, i
        return min(1.0, best / total), best_at

    def phrase_share(self, text: str, phrases: frozenset[tuple[str, str]]) -> float:
        """The largest share of ``phrases`` (adjacent term pairs) that one line of ``text`` holds."""
        return max(len(phrases & self._line(line)[1]) for line in text.split("\n")) / len(phrases)

    def _line(self, line: str) -> tuple[frozenset[str], frozenset[tuple[str, str]]]:
        """A line's analysed terms and adjacent term pairs (cached: candidates recur across queries)."""
        cached = self._lines.get(line)
        if cached is None:
            sequence = self._analyzer.sequence(line) if line.strip() else []
            cached = self._lines[line] = (frozenset(sequence), _pairs(sequence))
            if len(self._lines) > _CACHED_LINES:
                self._lines.popitem(last=False)
        return cached


@dataclass(frozen=True)
class Evidence:
    """What the local reranker reads of each candidate, in the candidates' order (each 0..1)."""

    first: list[float]  # the first stage's fused score
    lines: list[float]  # the best two-line window's share of the query's word weight
    confidence: float  # how far word evidence counts: some candidate holds a good share of the words
    phrases: list[float] | None  # the share of the query's word pairs one line holds (None: no pair)
    dates: list[float] | None  # closeness to a period the query names (None: it names none)
    closest: list[float] | None  # the closest line by the line model, spread (None: not heard)


@dataclass(frozen=True)
class Weights:
    """How much each kind of evidence counts (round numbers, checked across sets: bench/rerank_weights.py)."""

    first: float = FIRST_STAGE_WEIGHT
    lines: float = LINE_EVIDENCE_WEIGHT
    phrases: float = PHRASE_WEIGHT
    dates: float = DATE_WEIGHT
    line_vectors: float = LINE_VECTOR_WEIGHT


def blended(evidence: Evidence, weights: Weights = Weights()) -> list[float]:
    """Each candidate's score (0..1) from its evidence under ``weights``."""
    e, w = evidence, weights
    scale = (w.first + w.lines + (w.phrases if e.phrases is not None else 0.0)
             + (w.dates if e.dates is not None else 0.0))
    scores = []
    for i, first in enumerate(e.first):
        lexical = w.lines * e.lines[i]
        if e.phrases is not None:
            lexical += w.phrases * e.phrases[i]
        score = w.first * first + e.confidence * lexical
        if e.dates is not None:
            score += w.dates * e.dates[i]
        scores.append(score / scale)
    if e.closest is not None:
        scores = [(s + w.line_vectors * c) / (1 + w.line_vectors) for s, c in zip(scores, e.closest, strict=True)]
    return scores


def _pairs(sequence: list[str]) -> frozenset[tuple[str, str]]:
    return frozenset(pairwise(sequence))
