"""The offline reranker: evidence a first stage that scores whole chunks cannot see."""

from __future__ import annotations

from collections.abc import Sequence

from mcp_memory.rerank.base import RerankCandidate


class LocalReranker:
    name = "local"

    def rerank(self, query: str, candidates: Sequence[RerankCandidate]) -> list[float]:
        if not candidates:
            return []
        top = max(c.score for c in candidates) or 1.0
        return [c.score / top for c in candidates]
