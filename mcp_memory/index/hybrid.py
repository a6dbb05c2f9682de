"""Hybrid search: candidates from BM25 and vectors, fused, decayed, diversified, filtered.

1. Candidates: the top ``max_results × candidate_multiplier`` from each index (more when
   filters are set, so that filtering leaves enough).
2. Fusion: each list's scores are min-max normalised over its own candidates, then
   ``vector_weight × vector + text_weight × text``; a chunk missing from one list scores 0
   there. When no vectors are ready (keyword-only mode, or embeddings still filling in),
   the text score alone is used. A long query (the conversation so far) is fused twice, as a
   whole and by its focus, the latest turn, and the two blended (``long_query.py``).
3. Dates: a query that names a day, month or year (``core/periods.py``; "on May 4th" is the
   last May 4th up to the request's day) raises the daily files of that period by
   ``NAMED_DATE_BOOST``. Temporal decay: chunks of dated daily files are multiplied by
   ``0.5 ** (age / half_life)``; evergreen files (``MEMORY.md``, topic files) never decay.
4. MMR: results are picked greedily by ``λ × relevance − (1 − λ) × max similarity`` to what
   was already picked, so near-duplicate chunks (overlaps, repeated notes) don't crowd out
   other memories. Similarity is the Jaccard overlap of the two chunks' keyword terms.
5. Utility: when memories were rewarded or penalized (``core/utility.py``), the best candidates'
   scores are multiplied by the utility factor of the memory each would be named by; a memory
   the sleep cycle retired (superseded, or a duplicate) is halved.
6. ``min_score`` and ``max_results`` cut the list.
7. Changed facts (``core/updates.py``): among the first hits and a few after them, a memory that
   a later one updates ("prefers npm" → "now prefers pnpm") is moved just below it and names it
   in ``replaced_by``; the later one takes its place, coming in from below the cut if need be.

Each hit carries the ``id`` of the memory holding its best line (``core/memory_ids.py``), taken
from the whole file when the file still holds that line (``core/memory_lookup.py``). A tie between
a few lines (a daily log's bullets that share only the query's "user") goes to the line closest to
the query by meaning (``memory_vectors.py``), not to the first.

The vectors and chunk metadata live in memory as a ``SearchSnapshot`` (``snapshot.py``).
"""

from __future__ import annotations

import datetime as dt
import heapq
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache, partial
from typing import TYPE_CHECKING

import numpy as np

from mcp_memory.config import SearchSettings
from mcp_memory.core import updates
from mcp_memory.core.analysis import TermAnalyzer, jaccard, keyword_tokens
from mcp_memory.core.hits import SearchHit
from mcp_memory.core.memory_ids import RETIRED_MARK, retired_by, unit_at
from mcp_memory.core.periods import Period, date_closeness, named_periods
from mcp_memory.core.privacy import PrivacyRules
from mcp_memory.core.query_focus import focus, is_long
from mcp_memory.core.requests import SearchRequest
from mcp_memory.core.scopes import ScopeFilter
from mcp_memory.core.session_source import is_transcript
from mcp_memory.embedding import Embedder
from mcp_memory.errors import SearchError
from mcp_memory.index.keywords import KeywordIndex
from mcp_memory.index.later_memories import later_neighbours
from mcp_memory.index.long_query import FOCUS_SHARE, blend, heard, leading_rows
from mcp_memory.index.memory_vectors import MemoryVectors
from mcp_memory.index.snapshot import SearchSnapshot
from mcp_memory.index.visible_keywords import VisibleKeywords, excluded_rows, visible_keywords

if TYPE_CHECKING:
    from mcp_memory.core.memory_lookup import MemoryLookup
    from mcp_memory.core.utility import UtilityStore

MAX_QUERY_CHARS = 4000
# A conversation as the query (60-150 words: at most 934 characters on LoCoMo's, 691 on the
# bilingual dialogues') is embedded whole; a pasted transcript's end takes 21 ms to embed, 30 at
# 1,500 characters, the largest part of a precise search of one (docs/benchmarks.md).
EMBEDDED_QUERY_CHARS = 1000
RETIRED_FACTOR = 0.5  # a superseded or duplicate memory (marked by the sleep cycle) sinks this much
NAMED_DATE_BOOST = 0.5  # how much the daily files of the period a query names rise (bench/memorybank.py)
# A tie for a hit's best line is settled by meaning between a daily log's few short bullets: at most
# TIED_LINES lines of at most TIED_LINE_CHARS characters. Any other tie (a conversation's long turns,
# each naming its speaker) keeps the first line: embedding those cost a first search over a LoCoMo
# workspace 2.5-3.5 ms p50 and 15 ms p95 and changed no figure, and the hit cites the lines around it.
TIED_LINES = 4
TIED_LINE_CHARS = 160
_NOT_MEMORY = ("#", "```", "~~~")  # headings and fences: never the line a hit is named by in a tie


@dataclass(frozen=True)
class Named:
    """The memory a hit is named by: its id, and the id of what retired it (None when current)."""

    id: str | None
    replaced_by: str | None  # longer queries are cut: neither BM25 nor a 512-token model uses more


@dataclass
class Ranking:
    """Rows of one snapshot ranked for one query, best first, with the vector scores behind them."""

    snapshot: SearchSnapshot
    query: str
    ranked: list[tuple[int, float]]  # (row, score)
    vector_scores: dict[int, float]  # cosine of each vector candidate to the query
    _query_terms: frozenset[str] | None = None
    reserve: list[tuple[int, float]] = field(default_factory=list)  # the rows that would come next (``rank(reserve=)``)
    allowed: np.ndarray | None = None  # per row: whether the request may see it (None: every row)
    # The keyword statistics of the files the caller may see, when it may not see them all
    # (``visible_keywords.py``); None: the whole index's.
    keyword_stats: VisibleKeywords | None = None
    # The periods the query names, and the query's words that name them ("may", "4th")
    periods: list[Period] = field(default_factory=list)
    date_terms: frozenset[str] = frozenset()
    # A long query's focus, when it was heard (``long_query.py``): what the hits' lines are chosen by.
    focus: str | None = None
    _asked_terms: frozenset[str] | None = None

    @property
    def asked(self) -> str:
        """What the query asks: its focus when it has one, else the query."""
        return self.focus or self.query

    def query_terms(self, analyzer: TermAnalyzer) -> frozenset[str]:
        if self._query_terms is None:
            self._query_terms = frozenset(analyzer.query_terms(self.query))
        return self._query_terms

    def asked_terms(self, analyzer: TermAnalyzer) -> frozenset[str]:
        """The analysed words of what the query asks (``asked``)."""
        if self.focus is None:
            return self.query_terms(analyzer)
        if self._asked_terms is None:
            self._asked_terms = frozenset(analyzer.query_terms(self.focus))
        return self._asked_terms


class HybridSearcher:
    """Answers queries from a snapshot plus the live keyword index."""

    def __init__(self, keywords: KeywordIndex, embedder: Embedder | None, settings: SearchSettings,
                 naming: MemoryLookup | None = None, utility: UtilityStore | None = None,
                 memory_vectors: MemoryVectors | None = None, visible: VisibleKeywords | None = None):
        self.keywords = keywords
        # Given when the snapshot holds a few rows of the index only (keyword-only recall): the
        # keyword statistics its restricted caller may see, read from the whole index.
        self.visible = visible
        self.analyzer = TermAnalyzer()
        self.embedder = embedder
        self.settings = settings
        self.naming = naming  # names a hit by the memory in its file (else by the chunk's lines alone)
        self.utility = utility  # learned utility; None: not weighed
        self.memory_vectors = memory_vectors  # single memories' vectors (None: no embedder)
        self.snapshot = SearchSnapshot.empty()
        self._query_vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        # Which rows carry the sleep cycle's retired mark, for the snapshot named (read per row once).
        self._retired_rows: tuple[weakref.ref[SearchSnapshot], dict[int, bool]] = (weakref.ref(self.snapshot), {})
        # The keyword statistics each kind of restricted caller sees, for the snapshot named.
        self._visible: tuple[weakref.ref[SearchSnapshot], dict[tuple[object, object], VisibleKeywords | None]] = (
            weakref.ref(self.snapshot), {})

    def set_snapshot(self, snapshot: SearchSnapshot) -> None:
        self.snapshot = snapshot

    def search(self, request: SearchRequest, use_vectors: bool = True,
               hidden: PrivacyRules | None = None) -> list[SearchHit]:
        """Ranked hits for ``request``; ``hidden``: files left out (a shared caller's private ones)."""
        ranking = self.rank(request, use_vectors, hidden, reserve=updates.SEARCH_WINDOW)
        hits = [self.hit(ranking, row, score) for row, score in ranking.ranked]
        return self.settle(hits, len(hits), lambda: [self.hit(ranking, row, score) for row, score in ranking.reserve],
                           ranking, [row for row, _ in ranking.ranked])

    def settle(self, hits: list[SearchHit], keep: int, more: Callable[[], list[SearchHit]] | None = None,
               ranking: Ranking | None = None, rows: list[int] | None = None) -> list[SearchHit]:
        """The first ``keep`` hits, a memory that a later one among them (or among ``more``, the hits
        that would follow, or the memories closest to it: ``ranking`` and the ``rows`` of the hits,
        ``later_memories.py``) updates moved just below it, with ``replaced_by`` (``core/updates.py``)."""
        near = None
        if ranking is not None and rows is not None:
            near = partial(later_neighbours, self, ranking, rows)
        return updates.settle(hits, self.statement, keep, more, near, self.same_fact)

    @property
    def same_fact(self) -> updates.SameFact | None:
        """Whether two memories say the same thing by the embedder (across languages; ``memory_vectors.py``)."""
        return self.memory_vectors.same_fact if self.memory_vectors is not None else None

    def statement(self, hit: SearchHit) -> updates.Statement | None:
        """The memory a hit is named by, with its date; None when undated or already retired."""
        return updates.statement_of(hit, self.naming)

    def rank(self, request: SearchRequest, use_vectors: bool = True, hidden: PrivacyRules | None = None,
             diversify: bool = True, utility: bool = True, reserve: int = 0) -> Ranking:
        """Rows of the snapshot ranked for ``request``: filtered, fused, decayed, weighed by ``utility``,
        cut and (``diversify``) MMR; the rows that would follow, up to ``reserve`` in all, in ``Ranking.reserve``."""
        s = self.settings
        k = s.max_results if request.max_results is None else int(request.max_results)
        if k < 1:
            raise SearchError("max_results must be at least 1")
        k = min(k, 1000)
        threshold = s.min_score if request.min_score is None else float(request.min_score)
        path_prefix, after, before, today = request.path_prefix, request.after, request.before, request.today
        if after and before and after > before:
            raise SearchError(f"after ({after}) is later than before ({before})")
        query = clean_query(request.query)
        snap = self.snapshot
        empty = Ranking(snap, query, [], {})
        if not query.strip() or len(snap) == 0:
            return empty

        allowed = self._filter_mask(snap, path_prefix, after, before, request.source, request.scopes)
        pool = k * s.candidate_multiplier
        if allowed is not None:
            pool = max(pool * 10, 200)
        # Private files are not a filter that thins the candidates: both stages leave them out before
        # they pick (Tantivy by path, the vector scan by mask), so a shared caller's pool, and hence
        # its ranking, is the owner's over the files it may see.
        if hidden is not None and hidden.patterns:
            visible = ~snap.hidden_mask(hidden)
            allowed = visible if allowed is None else allowed & visible
        stats = self._visible_keywords(snap, hidden, request.scopes)

        def scored(text: str) -> tuple[dict[int, float], dict[int, float]]:
            """Fused scores of the candidates for ``text``, and their cosines."""
            keyword_scores, confidence, every_match = self._keyword_candidates(
                snap, text, pool, allowed, path_prefix, after, before, stats
            )
            cosines = self._vector_candidates(snap, text, pool, allowed) if use_vectors else {}
            return self._fuse(snap, keyword_scores, confidence, cosines, every_match), cosines

        fused, vector_scores = scored(query)
        # A long query (the conversation so far) is also ranked by its focus, the latest turn (long_query.py).
        now = clean_query(focus(request.query)) if is_long(request.query) else ""
        heard_focus = None
        if now.strip() and now != query:
            now_fused, now_cosines = scored(now)
            share = FOCUS_SHARE * heard(self.analyzer.query_terms(now), stats.idf if stats is not None
                                        else self.keywords.idf,
                                        (self.row_terms(snap, row) for row in leading_rows(now_fused)))
            if share > 0:
                fused = blend(fused, now_fused, share)
                # A hit's cosine (and its keyword share, ``hit``) is the better of the whole query's and
                # the focus's: the recall gate reads them, and a long prompt may be about either.
                vector_scores = {row: max(vector_scores.get(row, -1.0), now_cosines.get(row, -1.0))
                                 for row in dict.fromkeys([*vector_scores, *now_cosines])}
                heard_focus = now
        if not fused:
            return empty

        today = today or dt.date.today()
        # A query that names a day, month or year ("what did I say on May 4th?") is about the
        # daily notes of then: theirs rise (days around it do not: the reranker leans that way).
        named = dates_named(query, today)
        periods = [period for period, _ in named]
        date_terms = frozenset(t for _, words in named for t in self.analyzer.query_terms(words))
        if periods:
            for row in fused:
                if date_closeness(periods, snap.dates[row]) >= 1.0:
                    fused[row] *= 1.0 + NAMED_DATE_BOOST
        if s.decay_enabled:
            for row in fused:
                date = snap.dates[row]
                if date is not None:
                    age = max(0, (today - date).days)
                    fused[row] *= 0.5 ** (age / s.half_life_days)
        if utility:
            self._weigh_memories(snap, fused, heard_focus or query, max(k * 5, 50))

        ranked = sorted(fused.items(), key=lambda item: item[1], reverse=True)
        ranked = [(row, score) for row, score in ranked if score >= threshold]
        if diversify and s.mmr_enabled and len(ranked) > 1:
            picked = _mmr(ranked[: max(k * 3, 20)], partial(self.row_terms, snap), s.mmr_lambda, k)
            chosen = {row for row, _ in picked}
            # What would follow, by relevance: only read for memories that update one of the hits.
            return Ranking(snap, query, picked, vector_scores,
                           reserve=[pair for pair in ranked[: max(k, reserve)] if pair[0] not in chosen],
                           allowed=allowed, keyword_stats=stats, periods=periods, date_terms=date_terms,
                           focus=heard_focus)
        return Ranking(snap, query, ranked[:k], vector_scores, reserve=ranked[k : max(k, reserve)], allowed=allowed,
                       keyword_stats=stats, periods=periods, date_terms=date_terms, focus=heard_focus)

    def idf(self, ranking: Ranking, terms: Iterable[str]) -> dict[str, float]:
        """BM25's IDF of each analysed term as the caller of ``ranking`` may see it."""
        if ranking.keyword_stats is not None:
            return ranking.keyword_stats.idf(terms)
        return self.keywords.idf(terms)

    def _visible_keywords(self, snap: SearchSnapshot, hidden: PrivacyRules | None,
                          scopes: ScopeFilter | None) -> VisibleKeywords | None:
        """The keyword statistics of what a caller hidden ``hidden`` files, or confined to ``scopes``,
        may see; None when it may see every row (once per snapshot and kind of caller)."""
        hidden = hidden if hidden is not None and hidden.patterns else None
        confined = scopes if scopes is not None and scopes.confined else None
        if hidden is None and confined is None:
            return None
        if self.visible is not None:
            return self.visible
        seen, cache = self._visible
        if seen() is not snap:
            cache = {}
            self._visible = (weakref.ref(snap), cache)
        key = (hidden, confined)
        if key not in cache:
            unseen = excluded_rows(snap.hidden_mask(hidden) if hidden is not None else None,
                                   snap.scope_mask(confined) if confined is not None else None)
            cache[key] = visible_keywords(self.keywords, snap, unseen) if unseen is not None else None
        return cache[key]

    def diversify(self, snap: SearchSnapshot, ranked: list[tuple[int, float]], k: int) -> list[tuple[int, float]]:
        """``ranked`` reordered by MMR as ``rank`` does (unchanged when MMR is off), at most ``k`` rows."""
        s = self.settings
        if not s.mmr_enabled or len(ranked) < 2:
            return ranked[:k]
        return _mmr(ranked, partial(self.row_terms, snap), s.mmr_lambda, k)

    def hit(self, ranking: Ranking, row: int, score: float) -> SearchHit:
        """The cited hit for one ranked row."""
        snap = ranking.snapshot
        held = self.row_terms(snap, row)
        if ranking.date_terms and date_closeness(ranking.periods, snap.dates[row]) >= 1.0:
            # A daily note of the day the query names says that day, in its file's name: the
            # query's words for it ("May 4th") count as found, as its other words do.
            held = held | ranking.date_terms
        coverage = _covered(ranking.query_terms(self.analyzer), held)
        if ranking.focus is not None:  # a long query's hit: the better share of its whole and of its focus
            coverage = max(coverage, _covered(ranking.asked_terms(self.analyzer), held))
        # The line a hit is named by, cited around and quoted is the one that answers what is asked now.
        return self._hit(snap, row, score, ranking.asked, coverage, self._similarity(ranking, row))

    def _similarity(self, ranking: Ranking, row: int) -> float | None:
        """The cosine of ``row`` to the query: from the vector candidates, or, for a row that came by
        its keywords alone, from its own vector (its cosine is low, not unknown: recall's gate must
        not judge it by keywords alone, as it would a memory with no vector yet). None when the
        search ran without vectors or the row has none."""
        found = ranking.vector_scores.get(row)
        if found is not None or not ranking.vector_scores or self.embedder is None:
            return found
        vector = ranking.snapshot.vector(row)
        if vector is None:
            return None
        vector = vector.astype(np.float32)
        cosine = float(np.dot(vector, self._query_vector(ranking.query)))
        if ranking.focus is not None:  # a long query: the closer of the whole and what it asks now
            cosine = max(cosine, float(np.dot(vector, self._query_vector(ranking.focus))))
        return cosine

    def named(self, snap: SearchSnapshot, row: int, query: str) -> Named:
        """The memory a hit on ``row`` for ``query`` is named by (its best line's)."""
        lines = snap.text(row).split("\n")
        return self._named(snap, row, lines, self.best_line(lines, query))

    def best_line(self, lines: list[str], query: str) -> int | None:
        """The index of the line holding the query's most telling words (``best_lines``), or None when
        none holds any. A tie between a few memory lines is settled by meaning: the line whose vector
        is closest to the query's. A daily log's bullets often share only the query's commonest word
        ("user", 用户), and the first of them used to name the hit whatever it said."""
        tied = best_lines(lines, query)
        memories = [i for i in tied if not lines[i].lstrip().startswith(_NOT_MEMORY)]
        if (len(memories) < 2 or len(memories) > TIED_LINES or self.memory_vectors is None
                or any(len(lines[i]) > TIED_LINE_CHARS for i in memories)):
            return tied[0] if tied else None
        with self._lock:  # the search embedded its query already; a hit named for another text has none
            vector = self._query_vectors.get(query)
        closest = None if vector is None else self.memory_vectors.closest(vector, [lines[i] for i in memories])
        return tied[0] if closest is None else memories[closest]

    def memory_factors(self, snap: SearchSnapshot, rows: list[int], query: str) -> list[float] | None:
        """Each row's multiplier for ``query``: its memory's utility factor, halved when the memory
        was retired (superseded or a duplicate); None when no row needs one."""
        store = self.utility
        learned = store is not None and store.active()
        marked = [self._marked_retired(snap, row) for row in rows]
        if not learned and not any(marked):
            return None
        factors = []
        for row, has_mark in zip(rows, marked, strict=True):
            if not learned and not has_mark:
                factors.append(1.0)
                continue
            named = self.named(snap, row, query)
            factor = store.factor(named.id) if store is not None and learned else 1.0
            factors.append(factor * (RETIRED_FACTOR if named.replaced_by else 1.0))
        return factors

    def _marked_retired(self, snap: SearchSnapshot, row: int) -> bool:
        """Whether the chunk of ``row`` carries a retired mark: asked of the best 50 rows of every search,
        so remembered per snapshot rather than read out of its text column each time."""
        seen, marks = self._retired_rows
        if seen() is not snap:
            marks = {}
            self._retired_rows = (weakref.ref(snap), marks)
        marked = marks.get(row)
        if marked is None:
            marked = marks[row] = RETIRED_MARK in snap.text(row)
        return marked

    def _weigh_memories(self, snap: SearchSnapshot, fused: dict[int, float], query: str, pool: int) -> None:
        """The best ``pool`` candidates' scores multiplied by their memories' factors."""
        top = heapq.nlargest(pool, fused, key=fused.__getitem__)
        factors = self.memory_factors(snap, top, query)
        if factors is None:
            return
        for row, factor in zip(top, factors, strict=True):
            fused[row] *= factor
        high = max(fused.values())
        if high > 1.0:  # scores stay within 0..1, the best at most 1
            for row in fused:
                fused[row] /= high

    def _named(self, snap: SearchSnapshot, row: int, lines: list[str], best: int | None) -> Named:
        path, chunk_start, chunk_end = snap.paths[row], int(snap.start_lines[row]), int(snap.end_lines[row])
        index = 0 if best is None else best
        if self.naming is not None:
            # A chunk's lines are its file's, one for one, unless it is a piece of one long line.
            whole = len(lines) == chunk_end - chunk_start + 1
            found = (self.naming.unit_at(path, chunk_start + index, lines[index]) if whole
                     else self.naming.unit_at(path, chunk_start))
            if found is not None:
                return Named(found.id, retired_by(found.text))
        unit = unit_at(lines, index)
        if unit is None:
            return Named(None, None)
        return Named(unit.id, retired_by("\n".join(lines[unit.start : unit.end + 1])))

    def row_terms(self, snap: SearchSnapshot, row: int) -> frozenset[str]:
        cached = snap.terms.get(row)
        if cached is None:
            cached = snap.terms[row] = self.analyzer.terms(snap.text(row))
        return cached

    # ----- candidates ----------------------------------------------------------------------
    def _keyword_candidates(self, snap: SearchSnapshot, query: str, pool: int, allowed: np.ndarray | None,
                            path_prefix: str | None, after: dt.date | None, before: dt.date | None,
                            stats: VisibleKeywords | None = None) -> tuple[dict[int, float], float, bool]:
        """Keyword scores by row; how much of the query's IDF weight the best match covers (0..1); and
        whether these are every chunk that matches (fewer than asked for), not just the best ones.
        With ``stats`` (a caller who may not see every file), Tantivy picks the candidates among the
        files the caller may see, and each word weighs what it weighs among those files."""
        scores: dict[int, float] = {}
        prefix = _clean_prefix(path_prefix) if path_prefix else None
        excluded = stats.excluded if stats is not None else ()
        result = self.keywords.search(query, pool, prefix, after, before, excluded, stats)
        for hit in result.hits:
            row = snap.row_of.get(hit.id)
            if row is not None and (allowed is None or allowed[row]):
                scores[row] = hit.score
        every_match = len(result.hits) < pool
        if not scores or result.query_weight <= 0:
            return scores, 0.0, every_match
        return scores, min(1.0, max(scores.values()) / result.query_weight), every_match

    def _vector_candidates(self, snap: SearchSnapshot, query: str, pool: int,
                           allowed: np.ndarray | None) -> dict[int, float]:
        if self.embedder is None or len(snap.vector_rows) == 0:
            return {}
        rows, sims = snap.nearest(self._query_vector(query), pool, allowed)
        return dict(zip(rows.tolist(), sims.tolist(), strict=True))

    def embed_queries_ahead(self, queries: list[str]) -> None:
        """Embed several queries in one call, so the searches for them find their vectors cached."""
        if self.embedder is None:
            return
        with self._lock:
            missing = list(dict.fromkeys(
                q for q in map(clean_query, queries) if q.strip() and q not in self._query_vectors))
        if len(missing) < 2:
            return  # one query gains nothing: its search embeds it
        vectors = self.embedder.embed_queries([_embedded_part(q) for q in missing])
        with self._lock:
            for query, vector in zip(missing, vectors, strict=False):  # whatever the embedder returned
                self._remember_query_vector(query, vector)

    def _query_vector(self, query: str) -> np.ndarray:
        assert self.embedder is not None
        with self._lock:
            cached = self._query_vectors.get(query)
            if cached is not None:
                self._query_vectors.move_to_end(query)
                return cached
        vector = self.embedder.embed_query(_embedded_part(query))
        with self._lock:
            self._remember_query_vector(query, vector)
        return vector

    def _remember_query_vector(self, query: str, vector: np.ndarray) -> None:
        """Cache a query's vector, keeping the 256 most recent (the caller holds the lock)."""
        self._query_vectors[query] = vector
        self._query_vectors.move_to_end(query)
        while len(self._query_vectors) > 256:
            self._query_vectors.popitem(last=False)

    def _fuse(self, snap: SearchSnapshot, text: dict[int, float], text_confidence: float,
              vector: dict[int, float], every_match: bool = False) -> dict[int, float]:
        wt, wv = self.settings.text_weight, self.settings.vector_weight
        if not vector:
            wt, wv = 1.0, 0.0
        elif not text:
            wt, wv = 0.0, 1.0
        total = wt + wv
        wt, wv = wt / total, wv / total
        # Min-max scaling treats the weakest candidate as the rest of the index, which it stands for
        # when the list was cut at ``pool``. When the list holds every match (a rare word, a small
        # memory), the rest scores 0: the weakest match keeps its share instead of counting as no
        # match ("releases": of three notes that say it, the third would have scored nothing).
        nt, nv = _min_max(text, 0.0 if every_match else None), _min_max(vector)
        if vector:
            # When the best keyword match covers little of the query (only common words, or
            # an English query over Chinese notes), keyword ranks say little: scale them down.
            nt = {row: value * text_confidence for row, value in nt.items()}
        has_vector = snap.has_vector  # the snapshot these rows belong to, even if a refresh landed since
        fused: dict[int, float] = {}
        for row in set(nt) | set(nv):
            t = nt.get(row, 0.0)
            # A chunk still waiting for its vector is judged by its keywords alone, rather
            # than losing to every embedded neighbour while the backfill runs.
            v = nv.get(row, 0.0) if has_vector[row] else t
            fused[row] = wt * t + wv * v
        return fused

    # ----- filters and output ------------------------------------------------------------
    def _filter_mask(self, snap: SearchSnapshot, path_prefix: str | None,
                     after: dt.date | None, before: dt.date | None, source: str | None = None,
                     scopes: ScopeFilter | None = None) -> np.ndarray | None:
        in_scope = snap.scope_mask(scopes) if scopes is not None else None
        if not path_prefix and not after and not before and not source:
            return in_scope
        mask = np.ones(len(snap), bool) if in_scope is None else in_scope.copy()
        if source:
            mask &= snap.per_path(lambda path: source_of(path) == source)
        if path_prefix:
            prefix = _clean_prefix(path_prefix)
            mask &= snap.per_path(lambda path: path.startswith(prefix))
        if after or before:
            low, high = after or dt.date.min, before or dt.date.max
            # Evergreen files have no date, so a date range leaves them out.
            mask &= np.array([d is not None and low <= d <= high for d in snap.dates], bool)
        return mask

    def _hit(self, snap: SearchSnapshot, row: int, score: float, query: str, coverage: float,
             similarity: float | None) -> SearchHit:
        path = snap.paths[row]
        source = source_of(path)
        chunk_start, chunk_end = int(snap.start_lines[row]), int(snap.end_lines[row])
        text = snap.text(row)
        # The chunk's text is its file lines, one for one, unless it is a piece of one long line.
        lines = text.split("\n")
        best = self.best_line(lines, query)
        memory = self._named(snap, row, lines, best)
        start, end = chunk_start, chunk_end
        if len(lines) == chunk_end - chunk_start + 1:
            start, end = narrow_span(chunk_start, chunk_end, best, self.settings.citation_lines)
            # The snippet comes from the cited lines, so what is shown is what the citation names.
            lines = lines[start - chunk_start : end - chunk_start + 1]
            text = "\n".join(lines)
            best = None if best is None else best - (start - chunk_start)
        return SearchHit(
            path=path,
            start_line=start,
            end_line=end,
            score=round(float(score), 4),
            snippet=_snippet(text, query, self.settings.snippet_chars, best),
            source=source,
            date=snap.dates[row],
            keyword_coverage=round(coverage, 4),
            vector_similarity=None if similarity is None else round(similarity, 4),
            chunk_start_line=chunk_start,
            chunk_end_line=chunk_end,
            id=memory.id or "",
            replaced_by=memory.replaced_by or "",
        )


def _covered(terms: frozenset[str], held: frozenset[str]) -> float:
    return len(terms & held) / len(terms) if terms else 0.0


def source_of(path: str) -> str:
    """"memory" (MEMORY.md, memory/**), "sessions" (a transcript) or "extra" (configured extra paths)."""
    if is_transcript(path):
        return "sessions"
    return "memory" if path.startswith("memory/") or path.lower() == "memory.md" else "extra"


def clean_query(query: str) -> str:
    """``query`` as search reads it (``Ranking.query``): its first ``MAX_QUERY_CHARS``, valid UTF-8."""
    # Lone surrogates (legal in JSON, not in UTF-8) would break the embedder.
    return (query or "")[:MAX_QUERY_CHARS].encode("utf-8", "replace").decode("utf-8")


def _clean_prefix(prefix: str) -> str:
    return prefix.replace("\\", "/").removeprefix("./")


def dates_named(query: str, today: dt.date) -> list[tuple[Period, str]]:
    """The periods a query names and the words naming them, as search reads them: in the part of a
    long query that is embedded, its end (a date named early in a pasted transcript is not what is
    asked, and reading 4,000 characters cost 1.5 ms)."""
    return named_periods(_embedded_part(clean_query(query)), today)


def _embedded_part(query: str) -> str:
    """What of ``query`` (already cut to ``MAX_QUERY_CHARS``) the embedder reads: all of it up to
    ``EMBEDDED_QUERY_CHARS``; beyond, its end, from a word's start when one is near. The 4,000
    characters of a pasted transcript took 45-100 ms to embed, and their vector, a mean over a
    thousand tokens and more, says no more of what is asked than its last part does; the keywords
    still read all 4,000 characters."""
    if len(query) <= EMBEDDED_QUERY_CHARS:
        return query
    tail = query[-EMBEDDED_QUERY_CHARS:]
    space = next((i for i, char in enumerate(tail[:100]) if char.isspace()), None)
    return tail[space + 1 :] if space is not None else tail


def _min_max(scores: dict[int, float], low: float | None = None) -> dict[int, float]:
    """``scores`` scaled to 0..1 between ``low`` (by default the lowest of them) and the highest."""
    if not scores:
        return {}
    high = max(scores.values())
    low = min(scores.values()) if low is None else low
    if high - low < 1e-12:
        return {row: 1.0 for row in scores}
    return {row: (value - low) / (high - low) for row, value in scores.items()}


def _mmr(ranked: list[tuple[int, float]], terms: Callable[[int], frozenset[str]], lam: float,
         k: int) -> list[tuple[int, float]]:
    """Up to ``k`` of ``ranked``, picked greedily by ``lam × score − (1 − lam) × closest``, where
    ``closest`` is the highest Jaccard similarity of a row's ``terms`` to a row picked before;
    ties go to the row ranked first.

    A row's similarity to what is picked only grows, so a score computed against the first few
    picks is an upper bound of its score now. Each round therefore brings only the leading row
    up to date, until the leading row is up to date: that row is the one a comparison with
    every pick would choose, for a fraction of the comparisons.
    """
    chosen: list[tuple[int, float]] = []
    rest = list(ranked)
    closest = [0.0] * len(rest)  # each candidate's highest similarity to the picks it was compared with
    compared = [0] * len(rest)  # how many of the picks (the first ones) that is
    while rest and len(chosen) < k:
        scores = [lam * score - (1 - lam) * close for (_, score), close in zip(rest, closest, strict=True)]
        while True:
            best = max(range(len(rest)), key=scores.__getitem__)
            if compared[best] == len(chosen):
                break
            row_terms = terms(rest[best][0])
            for picked_row, _ in chosen[compared[best] :]:
                closest[best] = max(closest[best], jaccard(row_terms, terms(picked_row)))
            compared[best] = len(chosen)
            scores[best] = lam * rest[best][1] - (1 - lam) * closest[best]
        chosen.append(rest.pop(best))
        closest.pop(best)
        compared.pop(best)
    return chosen


def best_lines(lines: list[str], query: str) -> list[int]:
    """The indexes of the lines holding the query's most telling words, tied, in order; [] when
    none holds any.

    A word counts more the fewer lines hold it, so among many near-identical bullets the one
    with the distinguishing name wins over the first line with a common word.
    """
    lowered = [line.lower() for line in lines]
    whole = "\n".join(lowered)
    present = [t for t in _query_words(query) if t in whole]  # most lines then check a word or two
    line_terms = [{t for t in present if t in line} for line in lowered]
    holding: dict[str, int] = {}  # how many lines hold each word
    for found in line_terms:
        for t in found:
            holding[t] = holding.get(t, 0) + 1
    if not holding:
        return []
    weight = {t: 1.0 / n for t, n in holding.items()}
    scores = [sum(weight[t] for t in found) for found in line_terms]
    top = max(scores)
    return [i for i, score in enumerate(scores) if score == top]


@lru_cache(maxsize=64)
def _query_words(query: str) -> frozenset[str]:
    """The words of ``query`` that ``best_lines`` looks for (every hit of a search asks for the same query's)."""
    return frozenset(t for t in keyword_tokens(query.lower()) if len(t) > 1)


def narrow_span(start_line: int, end_line: int, best: int | None, max_lines: int) -> tuple[int, int]:
    """At most ``max_lines`` lines of a chunk around its best line (the whole chunk when it is short
    or when no line matched: a citation never points away from what was found)."""
    if best is None or end_line - start_line + 1 <= max_lines:
        return start_line, end_line
    first = max(start_line, min(start_line + best - max_lines // 4, end_line - max_lines + 1))
    return first, first + max_lines - 1


def _snippet(text: str, query: str, limit: int, best: int | None = None) -> str:
    """The chunk text, or a window of ``limit`` characters around ``best`` (the best matching line)."""
    if len(text.strip()) <= limit:
        return text.strip()
    lines = text.split("\n")
    if best is None or best >= len(lines):
        start = 0
    else:
        line_start = sum(len(line) + 1 for line in lines[:best])
        # Some context before the line, and the line itself inside the window even when it is long.
        start = max(0, min(line_start - limit // 4, line_start + len(lines[best]) - limit))
    start = min(start, len(text) - limit)
    piece = text[start : start + limit]
    return ("…" if start > 0 else "") + piece + ("…" if start + limit < len(text) else "")
