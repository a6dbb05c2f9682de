"""Precision search: the hybrid search's best candidates, read again together with the query.

The first stage (``index/hybrid.py``) ranks chunks by BM25 and one vector per chunk; it is fast
but coarse. Here its top ``rerank.candidates`` hits, undiversified, go to a ``Reranker``
(``search/rerank/``): offline by default, a cross-encoder endpoint or a chat model when configured.
A remote reranker that fails costs a warning, never the answer: the local one takes over.
Utility (how much a memory helped before, ``core/utility.py``) weighs in at ``_weigh``, after the
reranker: the candidates are the first stage's unweighed order, so it counts once. Last, a memory
that a later one among the first hits updates is moved just below it (``core/updates.py``), so no
reranker undoes it; the first stage's leading hits are read for such updates too (``update_reserve``).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from itertools import chain, islice, zip_longest

from mcp_memory.config import Settings
from mcp_memory.core import updates
from mcp_memory.core.hits import SearchAnswer
from mcp_memory.core.requests import SearchRequest
from mcp_memory.core.utility import weighted
from mcp_memory.errors import SearchError
from mcp_memory.index.engine import Engine
from mcp_memory.index.hybrid import Ranking, clean_query
from mcp_memory.search.rerank.base import RerankCandidate, Reranker, RerankError
from mcp_memory.search.rerank.local import LocalReranker

log = logging.getLogger(__name__)

MAX_RESULTS = 100


@dataclass(frozen=True)
class Reranked:
    """Rows of one first-stage ranking in the reranker's order, with its scores (0..1)."""

    ranking: Ranking  # the first stage: its snapshot and query
    ranked: list[tuple[int, float]]  # (row, score), best first
    warnings: list[str]
    reranker: str | None  # the reranker whose order this is; None when there were no candidates


class PrecisionSearch:
    def __init__(self, engine: Engine, settings: Settings, local: Callable[[], Reranker],
                 configured: Callable[[], Reranker]):
        self.engine = engine
        self.settings = settings
        self._local = local
        self._configured = configured

    def candidates(self, request: SearchRequest) -> tuple[Ranking, list[RerankCandidate]]:
        """The first stage's best rows for ``request``, as a reranker reads them."""
        pool = max(self.settings.rerank.candidates, result_count(request, self.settings))
        # A long query is ranked by its whole and by its focus alike (``index/long_query.py``).
        ranking = self.engine.rank(replace(request, max_results=pool, min_score=0.0), diversify=False, utility=False)
        snap = ranking.snapshot
        return ranking, [
            RerankCandidate(snap.text(row), snap.paths[row], int(snap.start_lines[row]), snap.dates[row],
                            score)
            for row, score in ranking.ranked
        ]

    def search(self, request: SearchRequest, reranker: Reranker | None = None) -> SearchAnswer:
        """The ``max_results`` best hits after reranking; ``reranker``: this one instead of the configured one."""
        k = result_count(request, self.settings)
        reranked = self.rerank(request, reranker)
        searcher, ranking, rows = self.engine.searcher, reranked.ranking, reranked.ranked
        shown = [row for row, _ in rows[:k]]
        score_of, reserve = dict(rows), update_reserve(reranked, [], shown)
        # The hits past the k shown are read only when one shown could have been updated by one of
        # them; every memory of their chunks is (a chunk is named by the one closest to the query).
        hits = searcher.settle([searcher.hit(ranking, row, score) for row, score in rows[:k]], k,
                               lambda: [searcher.hit(ranking, row, score_of[row]) for row in reserve],
                               ranking, shown + reserve)
        return SearchAnswer(hits, mode="precise", warnings=reranked.warnings, reranker=reranked.reranker)

    def rerank(self, request: SearchRequest, reranker: Reranker | None = None) -> Reranked:
        """The first stage's candidates for ``request`` in the reranker's order, above ``min_score``."""
        result_count(request, self.settings)
        wanted = reranker or self._configured()
        if isinstance(wanted, LocalReranker):
            wanted.prepare(clean_query(request.query))  # the query as the ranking will hold it
        ranking, candidates = self.candidates(request)
        if not candidates:
            return Reranked(ranking, [], [], None)
        chosen = _seeing(wanted, ranking, request.today)
        warnings: list[str] = []
        try:
            scores = chosen.rerank(ranking.query, candidates)
            if len(scores) != len(candidates):
                raise RerankError(f"{len(scores)} scores for {len(candidates)} candidates")
        except RerankError as exc:
            if chosen.name == "local":
                raise SearchError(f"precision search failed: {exc}") from None
            warning = f"the {chosen.name} reranker failed ({exc}); the local reranker ordered these hits"
            log.warning(warning)
            warnings.append(warning)
            chosen = _seeing(self._local(), ranking, request.today)
            scores = chosen.rerank(ranking.query, candidates)
        scores = self._weigh(ranking, scores)
        threshold = self.settings.search.min_score if request.min_score is None else float(request.min_score)
        order = sorted(range(len(candidates)), key=lambda i: scores[i], reverse=True)
        ranked = [(ranking.ranked[i][0], scores[i]) for i in order if scores[i] >= threshold]
        # The same diversification as the default search, on the reranked order: near-identical
        # chunks (overlaps, a note repeated across days) do not take several of the top places.
        ranked = self._diversify(ranking, ranked, result_count(request, self.settings))
        return Reranked(ranking, ranked, warnings, chosen.name)

    def _diversify(self, ranking: Ranking, ranked: list[tuple[int, float]], k: int) -> list[tuple[int, float]]:
        """The first ``k`` of ``ranked`` picked by MMR as the default search picks its hits, on scores
        spread over 0..1 as the first stage's are (reranker scores are bunched, which would let the
        diversity term outweigh relevance); the rest follow in the reranker's order. MMR picks one
        at a time, so its first ``k`` are the same however many more it would pick, and ordering
        all 30 candidates cost a precise search at 10k chunks about 10 ms of term comparisons."""
        if len(ranked) < 2:
            return ranked
        high, low = ranked[0][1], ranked[-1][1]
        spread = {row: (score - low) / (high - low) if high > low else 1.0 for row, score in ranked}
        order = self.engine.searcher.diversify(ranking.snapshot, [(row, spread[row]) for row, _ in ranked], k)
        picked = {row for row, _ in order}
        score_of = dict(ranked)
        return [(row, score_of[row]) for row, _ in order] + [pair for pair in ranked if pair[0] not in picked]

    def _weigh(self, ranking: Ranking, scores: list[float]) -> list[float]:
        """Scores clipped to 0..1, then raised or lowered by each memory's utility."""
        clipped = [min(1.0, max(0.0, float(s))) for s in scores]
        rows = [row for row, _ in ranking.ranked]
        factors = self.engine.searcher.memory_factors(ranking.snapshot, rows, ranking.asked)
        if factors is None:
            return clipped
        # Weighed on the scores spread over 0..1, as the first stage's are: reranker scores are
        # bunched, and the same factor on them would outweigh relevance (measured in bench/utility.py).
        low, high = min(clipped), max(clipped)
        if high - low < 1e-9:
            return weighted(clipped, factors)
        spread = weighted([(s - low) / (high - low) for s in clipped], factors)
        return [low + value * (high - low) for value in spread]


def update_reserve(reranked: Reranked, after: Sequence[int], taken: Collection[int]) -> list[int]:
    """The rows past the ``taken`` ones shown that changed facts read (``core/updates.py``), up to
    its window: ``after`` (a caller's own next rows), the reranker's next and the first stage's
    leading rows, in turn.

    A reranker that reads words (an English cross-encoder, the local reranker's line evidence) may
    put far down a later memory worded in another language than the query ("办公室宽带涨到每月 75
    欧元" for "what do we pay for the office internet"), which the first stage found by meaning;
    either order may hold the update of a memory shown."""
    kept = {row for row, _ in reranked.ranked}  # above the request's score floor
    first_stage = [row for row, _ in reranked.ranking.ranked if row in kept]
    turns = chain.from_iterable(zip_longest(after, [row for row, _ in reranked.ranked], first_stage))
    rows = (row for row in dict.fromkeys(turns) if row is not None and row not in taken)
    return list(islice(rows, max(0, updates.SEARCH_WINDOW - len(taken))))


def result_count(request: SearchRequest, settings: Settings, name: str = "top_k") -> int:
    """How many hits ``request`` asks for; a SearchError naming the argument (``name``) when out of range."""
    k = settings.search.max_results if request.max_results is None else int(request.max_results)
    if not 1 <= k <= MAX_RESULTS:
        raise SearchError(f"{name} must be between 1 and {MAX_RESULTS}, got {k}")
    return k


def _seeing(reranker: Reranker, ranking: Ranking, today: dt.date | None) -> Reranker:
    """``reranker``, weighing words as the caller of ``ranking`` may see them (``index/visible_keywords.py``),
    and reading a day named without a year against the request's day."""
    if not isinstance(reranker, LocalReranker):
        return reranker
    if ranking.keyword_stats is not None:
        reranker = reranker.weighing_by(ranking.keyword_stats.idf)
    return reranker.on_day(today or dt.date.today())
