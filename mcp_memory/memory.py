"""``Memory``: the one façade that the command line, the MCP server and the hooks call.

It owns the components of one workspace (files, embedder, indexes, sync, search) and opens
them lazily: constructing a ``Memory`` is instant, the first call that needs the index pays
for the slow imports.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import threading
from dataclasses import dataclass
from typing import Any

from mcp_memory.config import Settings
from mcp_memory.embedding import Embedder, EmbeddingError, create_embedder
from mcp_memory.embedding.cache import EmbeddingCache
from mcp_memory.index.keywords import KeywordIndex
from mcp_memory.index.state import IndexState
from mcp_memory.index.sync import Indexer, Progress, SyncReport
from mcp_memory.index.vectors import VectorStore
from mcp_memory.search import HybridSearcher, SearchError, SearchHit, SearchSnapshot
from mcp_memory.workspace import PathError, Workspace, read_text

log = logging.getLogger(__name__)

_CONFIGURED = object()  # sentinel: build the embedder the settings name

__all__ = ["Memory", "FileLines", "PathError", "SearchError", "SearchHit", "SyncReport"]


@dataclass(frozen=True)
class FileLines:
    path: str
    from_line: int
    to_line: int
    total_lines: int
    text: str


class Memory:
    """Search and read the memory of one workspace; keep its index in step with the files."""

    def __init__(self, settings: Settings, embedder: Any = _CONFIGURED):
        self.settings = settings
        self.workspace = Workspace(settings.workspace, settings.extra_paths)
        self._embedder_arg = embedder
        self._opened = False
        self._open_lock = threading.Lock()
        self._degraded: list[str] = []
        self._generation: str | None = None

    # ----- opening -------------------------------------------------------------------------
    def open(self) -> "Memory":
        with self._open_lock:
            if self._opened:
                return self
            self.workspace.ensure_exists()
            index_dir = self.settings.index_dir
            index_dir.mkdir(parents=True, exist_ok=True)
            self.embedder = self._load_embedder()
            dims = self.embedder.dimensions if self.embedder else 0
            self.state = IndexState(index_dir / "state.sqlite")
            self.cache = EmbeddingCache(index_dir / "embeddings.sqlite")
            self.store = VectorStore(self.settings.vector_uri, dims)
            self.keywords = KeywordIndex(index_dir / "tantivy")
            self.indexer = Indexer(
                self.settings, self.workspace, self.embedder, self.store, self.keywords, self.state, self.cache
            )
            self.searcher = HybridSearcher(self.keywords, self.embedder, self.settings.search)
            self._opened = True
        return self

    def _load_embedder(self) -> Embedder | None:
        if self._embedder_arg is not _CONFIGURED:
            return self._embedder_arg
        try:
            embedder = create_embedder(self.settings.embedding)
            if embedder is not None:
                _ = embedder.dimensions  # an OpenAI-compatible endpoint may need a probe call
            return embedder
        except (EmbeddingError, OSError) as exc:
            reason = f"embedder {self.settings.embedding.provider!r} unavailable ({exc}); keyword search only"
            log.warning(reason)
            self._degraded.append(reason)
            return None

    def close(self) -> None:
        if self._opened:
            self.state.close()
            self.cache.close()
            self._opened = False

    def __enter__(self) -> "Memory":
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----- indexing ------------------------------------------------------------------------
    def sync(self, progress: Progress | None = None) -> SyncReport:
        """Bring keyword rows and cached vectors up to date (fast; no new embeddings)."""
        self.open()
        return self.indexer.sync(progress)

    def backfill(self, progress: Progress | None = None, should_stop: Any = None) -> int:
        """Embed chunks still missing a vector (slow; resumable; one process at a time)."""
        self.open()
        try:
            return self.indexer.backfill(progress, should_stop)
        except EmbeddingError as exc:
            log.warning("embedding stopped: %s", exc)
            self._note_degraded(f"embedding failed: {exc}")
            return 0

    def index(self, progress: Progress | None = None) -> SyncReport:
        """Sync, then embed everything that is missing."""
        report = self.sync(progress)
        self.backfill(progress)
        return report

    # ----- reading -------------------------------------------------------------------------
    def search(
        self,
        query: str,
        max_results: int | None = None,
        min_score: float | None = None,
        path_prefix: str | None = None,
        after: dt.date | str | None = None,
        before: dt.date | str | None = None,
        today: dt.date | None = None,
    ) -> list[SearchHit]:
        """Ranked hits for ``query``; see ``search.py`` for how they are scored."""
        self.open()
        if not isinstance(query, str):
            raise SearchError("query must be a string")
        self._refresh_snapshot()
        try:
            return self.searcher.search(
                query, max_results, min_score, path_prefix, _as_date(after, "after"), _as_date(before, "before"), today
            )
        except EmbeddingError as exc:
            # The embedding endpoint is down: answer from keywords rather than fail.
            self._note_degraded(f"query embedding failed: {exc}")
            embedder, self.searcher.embedder = self.searcher.embedder, None
            try:
                return self.searcher.search(
                    query, max_results, min_score, path_prefix, _as_date(after, "after"),
                    _as_date(before, "before"), today,
                )
            finally:
                self.searcher.embedder = embedder

    def get(self, path: str, from_line: int | None = None, lines: int | None = None) -> FileLines:
        """Lines of one memory file (1-based ``from_line``; all lines when ``lines`` is None)."""
        memory_file = self.workspace.resolve(path)
        try:
            text = read_text(memory_file.abs_path)
        except UnicodeDecodeError:
            raise PathError(f"{path!r} is not valid UTF-8 text") from None
        all_lines = text.split("\n")
        if all_lines and all_lines[-1] == "":
            all_lines.pop()
        total = len(all_lines)
        start = 1 if from_line is None else int(from_line)
        if start < 1:
            raise PathError("from_line must be 1 or more")
        if lines is not None and int(lines) < 1:
            raise PathError("lines must be 1 or more")
        if start > max(total, 1):
            raise PathError(f"from_line {start} is past the end of {memory_file.rel_path} ({total} lines)")
        end = total if lines is None else min(total, start + int(lines) - 1)
        return FileLines(memory_file.rel_path, start, end, total, "\n".join(all_lines[start - 1 : end]))

    def status(self) -> dict[str, Any]:
        """What the index holds and how healthy it is."""
        self.open()
        self.store.refresh()
        self.keywords.reload()
        chunks = self.store.count()
        missing = self.store.count_missing_vectors()
        embedded_share = (chunks - missing) / chunks if chunks and self.embedder else (0.0 if self.embedder else None)
        degraded = list(self._degraded)
        if self.embedder is None and self.settings.embedding.provider == "none":
            degraded.append("keyword-only mode (embedding.provider = 'none')")
        elif missing:
            degraded.append(f"{missing} of {chunks} chunks not embedded yet: vector search covers the rest")
        fingerprint = self.state.get("fingerprint")
        return {
            "workspace": str(self.settings.workspace),
            "index_path": self.settings.vector_uri if "://" in self.settings.index_path else str(self.settings.index_dir),
            "files": len(self.workspace.list_files()),
            "indexed_files": len(self.state.files()),
            "chunks": chunks,
            "keyword_docs": self.keywords.count(),
            "embedder": {
                "provider": self.embedder.provider if self.embedder else "none",
                "model": self.embedder.model if self.embedder else "",
                "dimensions": self.embedder.dimensions if self.embedder else 0,
            },
            "embedded_share": None if embedded_share is None else round(embedded_share, 4),
            "fingerprint": json.loads(fingerprint) if fingerprint else None,
            "last_sync": self.state.get("last_sync") or None,
            "last_rebuild_reason": self.state.get("rebuild_reason") or None,
            "degraded": degraded,
        }

    # ----- internals -----------------------------------------------------------------------
    def _refresh_snapshot(self) -> None:
        generation = self.state.generation
        if generation == self._generation:
            return
        self.store.refresh()
        self.keywords.reload()
        self.searcher.set_snapshot(SearchSnapshot.from_arrow(self.store.to_arrow()))
        self._generation = generation

    def _note_degraded(self, reason: str) -> None:
        if reason not in self._degraded:
            self._degraded.append(reason)
        del self._degraded[:-5]


def _as_date(value: dt.date | str | None, name: str) -> dt.date | None:
    if value is None or value == "":
        return None
    if isinstance(value, dt.date):
        return value
    try:
        return dt.date.fromisoformat(str(value))
    except ValueError:
        raise SearchError(f"{name} must be a date like 2026-11-26, got {value!r}") from None
