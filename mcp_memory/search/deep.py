"""Deep search: search, follow the key concepts of the first hits, search again, merge.

Some questions name one thing and need another ("what did the friend who moved to Berlin
recommend?"): the first hits hold the bridge (a name, a place, a rare word, a date) and a
second search for it, together with the question, finds the rest. Concepts are taken
offline from the best lines of the first hits: words the question does not already hold,
weighted by how rare they are in the memory, names and dates first. At most two hops, the
second bounded in time; every hit says which hop found it and which concepts led there.

The first hop is a precision search; its three leading hits keep their places at the top, and
the rest of the list is the best of both hops by score (a second-hop hit at half its score for
the question and the concept), every file not listed yet before a second hit of a listed one.
On LoCoMo that order took multi-hop R@10 from 0.760 to 0.771 (keeping five leading hits, and a
listed file at half its score, before). Last, a memory that a later one among the first hits
updates is moved just below it (``core/updates.py``).
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace

from mcp_memory.config import Settings
from mcp_memory.core import updates
from mcp_memory.core.analysis import QUERY_STOPWORDS, TermAnalyzer, keyword_tokens
from mcp_memory.core.hits import SearchAnswer, SearchHit
from mcp_memory.core.query_focus import focus, is_long
from mcp_memory.core.requests import SearchRequest
from mcp_memory.index.engine import Engine
from mcp_memory.index.hybrid import Ranking
from mcp_memory.search.precision import PrecisionSearch, result_count, update_reserve
from mcp_memory.search.rerank.local import LocalReranker

SOURCE_HITS = 3  # the first hits whose best lines give the concepts
MAX_CONCEPTS = 4
KEPT_FIRST_HITS = 3  # first-hop hits that keep their places at the top
SECOND_HOP_DISCOUNT = 0.5  # a second-hop hit counts half its score for the question and the concept
SECOND_HOP_SECONDS = 0.5  # no new second-hop search starts after this long
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]")
_DATE = re.compile(r"^\d{4}(?:-\d{2}){0,2}$")
# A capitalised word after a lowercase word or a comma: a name, not the first word of a sentence.
_NAME = re.compile(r"(?<=[a-z,;] )[A-Z][\w'-]+")


class DeepSearch:
    def __init__(self, engine: Engine, settings: Settings, precise: Callable[[], PrecisionSearch],
                 local: Callable[[], LocalReranker]):
        self.engine = engine
        self.settings = settings
        self._precise = precise
        self._local = local
        self._analyzer = TermAnalyzer()

    def search(self, request: SearchRequest) -> SearchAnswer:
        k = result_count(request, self.settings, "max_results")
        # The first hop is a precise search: its leading hits are those of precision search,
        # and its wider list (the reranked candidates) is the pool the rest is chosen from.
        reranked = self._precise().rerank(replace(request, max_results=k))
        if not reranked.ranked:
            return SearchAnswer([], mode="deep", warnings=reranked.warnings)
        first = replace(reranked.ranking, ranked=reranked.ranked)
        leading = [row for row, _ in reranked.ranked[:KEPT_FIRST_HITS]]
        concepts = self.concepts(first)
        found: dict[int, tuple[float, list[str]]] = {}  # second-hop rows: best score, concepts that found them
        deadline = time.monotonic() + SECOND_HOP_SECONDS
        for concept in concepts:
            if time.monotonic() > deadline:
                break
            # A long query (the conversation so far) adds its focus, the latest turn, to the concept:
            # the whole of it would drown the concept's one word (``core/query_focus.py``).
            second = self.engine.rank(replace(request, query=f"{focus(first.query)} {concept}", max_results=k))
            for row, score in second.ranked:
                best, via = found.get(row, (0.0, []))
                found[row] = (max(best, score * SECOND_HOP_DISCOUNT), [*via, concept])
        # Hits past the k shown (both hops, then the first stage's: ``update_reserve``), so that a later
        # memory updating one of them can take its place.
        merged, rows = self._merge(first, leading, found, max(k, updates.SEARCH_WINDOW))
        searcher, listed, score_of = self.engine.searcher, dict(zip(rows, merged, strict=True)), dict(reranked.ranked)
        reserve = update_reserve(reranked, rows[k:], rows[:k])
        hits = searcher.settle(merged[:k], k,
                               lambda: [listed.get(row) or searcher.hit(first, row, score_of[row]) for row in reserve],
                               ranking=first, rows=rows[:k] + reserve)
        return SearchAnswer(hits, mode="deep", concepts=concepts, warnings=reranked.warnings,
                            reranker=reranked.reranker)

    def concepts(self, first: Ranking) -> list[str]:
        """Words of the first hits' best lines worth a second search, most telling first."""
        snap = first.snapshot
        query_terms = set(first.query_terms(self._analyzer))
        # The best lines are those of what is asked now (a long query's focus; a short query's own words).
        asked = set(self._analyzer.query_terms(focus(first.query))) if is_long(first.query) else query_terms
        weights = self.engine.searcher.idf(first, asked) if asked else {}
        total = sum(weights.values())
        local = self._local()
        counts: Counter[str] = Counter()
        surface: dict[str, str] = {}
        names: set[str] = set()
        for row, _ in first.ranked[:SOURCE_HITS]:
            lines = snap.text(row).split("\n")
            at = local.line_evidence("\n".join(lines), weights, total)[1]
            window = [line for line in lines[max(0, at - 1) : at + 3] if not line.lstrip().startswith("#")]
            text = " ".join(window)
            names.update(_NAME.findall(text))
            for token in set(keyword_tokens(text)):
                term = self._concept_term(token, query_terms)
                if term is not None:
                    counts[term] += 1
                    surface.setdefault(term, token)
        if not counts:
            return []
        rarity = self.engine.searcher.idf(first, counts)

        def weight(term: str) -> float:
            word = surface[term]
            boost = 1.5 if word in names or _DATE.match(word) else 1.0
            return rarity[term] * counts[term] * boost

        return [surface[t] for t in sorted(counts, key=weight, reverse=True)[:MAX_CONCEPTS]]

    def _concept_term(self, token: str, query_terms: set[str]) -> str | None:
        if token.lower() in QUERY_STOPWORDS or (len(token) < 3 and not _CJK.search(token)) or token.isdigit():
            return None
        if _CJK.search(token) and len(token) < 2:
            return None  # single CJK characters: their bigrams carry the meaning
        terms = self._analyzer.terms(token)
        if len(terms) != 1 or terms & query_terms:
            return None
        return next(iter(terms))

    def _merge(self, first: Ranking, kept: list[int], found: dict[int, tuple[float, list[str]]],
               k: int) -> tuple[list[SearchHit], list[int]]:
        """The leading hits, then the best of both hops by score, preferring files not listed yet;
        and the row of each."""
        searcher, paths = self.engine.searcher, first.snapshot.paths
        pool: dict[int, tuple[float, int, list[str]]] = {row: (score, 1, []) for row, score in first.ranked}
        for row, (score, via) in found.items():
            if row not in pool or pool[row][0] < score:
                # Found on both hops: it counts where it scores higher (the concept led to it).
                pool[row] = (score, 2, via)
        kept = [row for row in kept if row in pool]
        order = list(kept)
        shown = {paths[row] for row in kept}
        rest = [row for row in pool if row not in set(kept)]
        while rest and len(order) < k:
            # A deep search is for answers spread over several notes: a file already listed
            # comes after every file that is not.
            best = max(rest, key=lambda row: (paths[row] not in shown, pool[row][0]))
            rest.remove(best)
            order.append(best)
            shown.add(paths[best])
        hits = []
        for row in order[:k]:
            score, hop, via = pool[row]
            hits.append(replace(searcher.hit(first, row, score), hop=hop, concepts=tuple(via)))
        return hits, order[:k]
