"""Second-stage rerankers for precision search (see ``base.py``)."""

from mcp_memory.search.rerank.base import RerankCandidate, Reranker, RerankError
from mcp_memory.search.rerank.choice import Rerankers
from mcp_memory.search.rerank.local import LocalReranker

__all__ = ["LocalReranker", "RerankCandidate", "RerankError", "Reranker", "Rerankers"]
