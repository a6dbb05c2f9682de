"""Deep search: search, follow the key concepts of the first hits, search again, merge.

Some questions name one thing and need another ("what did the friend who moved to Berlin
recommend?"): the first hits hold the bridge (a name, a place, a rare word, a date) and a
second search for it, together with the question, finds the rest. Concepts are taken
offline from the best lines of the first hits: words the question does not already hold,
weighted by how rare they are in the memory, names and dates first. At most two hops, the
second bounded in time; every hit says which hop found it and which concepts led there.

The first hits keep their places at the top (a deep search never answers worse than the
default one there); second-hop hits fill the rest of the list by score.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace

from mcp_memory.analysis import QUERY_STOPWORDS, TermAnalyzer, keyword_tokens
from mcp_memory.config import Settings
from mcp_memory.engine import Engine
from mcp_memory.errors import SearchError
from mcp_memory.hits import SearchAnswer, SearchHit
from mcp_memory.requests import SearchRequest
from mcp_memory.rerank.local import LocalReranker
from mcp_memory.search import Ranking

MAX_RESULTS = 100
SOURCE_HITS = 3  # the first hits whose best lines give the concepts
MAX_CONCEPTS = 4
KEPT_FIRST_HITS = 5  # first-hop hits that keep their places at the top
SECOND_HOP_DISCOUNT = 0.5  # a second-hop hit counts for half the same score found directly
REPEATED_FILE_FACTOR = 0.5  # after the leading hits, a further hit from a file already listed
FIRST_HOP_POOL = 3  # the first hop reads this many times the hits asked for
SECOND_HOP_SECONDS = 0.5  # no new second-hop search starts after this long
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]")
_DATE = re.compile(r"^\d{4}(?:-\d{2}){0,2}$")


class DeepSearch:
    def __init__(self, engine: Engine, settings: Settings, local: Callable[[], LocalReranker]):
        self.engine = engine
        self.settings = settings
        self._local = local
        self._analyzer = TermAnalyzer()

    def search(self, request: SearchRequest) -> SearchAnswer:
        k = self.settings.search.max_results if request.max_results is None else int(request.max_results)
        if not 1 <= k <= MAX_RESULTS:
            raise SearchError(f"max_results must be between 1 and {MAX_RESULTS}, got {k}")
        lead = self.engine.rank(replace(request, max_results=k))
        if not lead.ranked:
            return SearchAnswer([], mode="deep")
        # The leading hits exactly as the default search ranks them; a wider pool for the rest.
        first = self.engine.rank(replace(request, max_results=k * FIRST_HOP_POOL))
        if first.snapshot is not lead.snapshot:
            first = lead  # the index changed in between: row numbers differ, keep to one snapshot
        leading = [row for row, _ in lead.ranked[:KEPT_FIRST_HITS]]
        concepts = self.concepts(first)
        found: dict[int, tuple[float, list[str]]] = {}  # second-hop rows: best score, concepts that found them
        deadline = time.monotonic() + SECOND_HOP_SECONDS
        for concept in concepts:
            if time.monotonic() > deadline:
                break
            second = self.engine.rank(replace(request, query=f"{first.query} {concept}", max_results=k))
            for row, score in second.ranked:
                best, via = found.get(row, (0.0, []))
                found[row] = (max(best, score * SECOND_HOP_DISCOUNT), [*via, concept])
        return SearchAnswer(self._merge(first, leading, found, k), mode="deep", concepts=concepts)

    def concepts(self, first: Ranking) -> list[str]:
        """Words of the first hits' best lines worth a second search, most telling first."""
        snap = first.snapshot
        query_terms = set(first.query_terms(self._analyzer))
        weights = self.engine.keywords.idf(query_terms) if query_terms else {}
        total = sum(weights.values())
        local = self._local()
        counts: Counter[str] = Counter()
        surface: dict[str, str] = {}
        for row, _ in first.ranked[:SOURCE_HITS]:
            lines = snap.texts[row].as_py().split("\n")
            at = local.line_evidence("\n".join(lines), weights, total)[1]
            for token in set(keyword_tokens(" ".join(lines[max(0, at - 1) : at + 3]))):
                term = self._concept_term(token, query_terms)
                if term is not None:
                    counts[term] += 1
                    surface.setdefault(term, token)
        if not counts:
            return []
        rarity = self.engine.keywords.idf(counts)

        def weight(term: str) -> float:
            word = surface[term]
            boost = 1.5 if word[:1].isupper() or _DATE.match(word) else 1.0
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
               k: int) -> list[SearchHit]:
        """The leading hits, then the best of the rest, preferring files not shown yet."""
        searcher, paths = self.engine.searcher, first.snapshot.paths
        pool: dict[int, tuple[float, int, list[str]]] = {row: (score, 1, []) for row, score in first.ranked}
        kept = [row for row in kept if row in pool] if first.ranked else []
        for row, (score, via) in found.items():
            if row not in pool:
                pool[row] = (score, 2, via)
        order = list(kept)
        shown = {paths[row] for row in kept}
        rest = [row for row in pool if row not in set(kept)]
        while rest and len(order) < k:
            # A deep search is for questions whose answer spreads over several notes: a file
            # already in the list counts for less than one that is not.
            best = max(rest, key=lambda row: pool[row][0] * (REPEATED_FILE_FACTOR if paths[row] in shown else 1.0))
            rest.remove(best)
            order.append(best)
            shown.add(paths[best])
        hits = []
        for row in order[:k]:
            score, hop, via = pool[row]
            hits.append(replace(searcher.hit(first, row, score), hop=hop, concepts=tuple(via)))
        return hits
