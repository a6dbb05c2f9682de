"""``Rerankers``: the local reranker and the one the ``[rerank]`` settings name, built once on first use."""

from __future__ import annotations

import threading

from mcp_memory.config import Settings
from mcp_memory.index.engine import Engine
from mcp_memory.index.line_vectors import LineVectors
from mcp_memory.search.rerank.base import Reranker
from mcp_memory.search.rerank.local import LocalReranker


class Rerankers:
    def __init__(self, settings: Settings, engine: Engine, lines: LineVectors | None = None):
        self.settings = settings
        self.engine = engine
        self.lines = lines
        self._local: LocalReranker | None = None
        self._configured: Reranker | None = None
        self._lock = threading.Lock()

    def local(self) -> LocalReranker:
        """The offline reranker (always available)."""
        with self._lock:
            if self._local is None:
                self._local = LocalReranker(lambda terms: self.engine.keywords.idf(terms), lines=self.lines)
            return self._local

    def configured(self) -> Reranker:
        """The reranker ``rerank.provider`` names (``llm`` without a model: the local one)."""
        with self._lock:
            if self._configured is None:
                self._configured = self._build()
        return self._configured if self._configured is not None else self.local()

    def _build(self) -> Reranker | None:
        r = self.settings.rerank
        if r.provider == "http":
            from mcp_memory.search.rerank.http import HttpReranker

            return HttpReranker(r.base_url, r.model, r.api_key, r.timeout, r.retries)
        if r.provider == "llm" and r.model:
            from mcp_memory.search.rerank.llm import ChatReranker

            return ChatReranker(r.base_url, r.model, r.api_key, r.timeout, r.retries)
        return None

    def close(self) -> None:
        """Release the configured reranker's connections (an HTTP reranker keeps a pool)."""
        with self._lock:
            configured, self._configured = self._configured, None
        close = getattr(configured, "close", None)
        if callable(close):
            close()
