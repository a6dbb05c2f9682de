"""``Memory``: the one façade that the command line, the MCP server and the hooks call.

It owns the components of one workspace (files, embedder, indexes, sync, search) and opens
them lazily: constructing a ``Memory`` is instant, the first call that needs the index pays
for the slow imports.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
import threading
import time
from dataclasses import dataclass
from typing import Any

from mcp_memory.capture import (
    ChatModelExtractor, ExtractionError, Fact, RuleExtractor, Skipped, check_fact, is_memory_run, select_candidates,
    strip_recall_blocks,
)
from mcp_memory.capture.facts import with_date
from mcp_memory.capture.filters import preview as _preview
from mcp_memory.chunking import chunk_markdown
from mcp_memory.config import Settings
from mcp_memory.embedding import Embedder, EmbeddingError, create_embedder
from mcp_memory.embedding.cache import EmbeddingCache
from mcp_memory.errors import MemoryInputError, PathError, SearchError
from mcp_memory.index.keywords import KeywordIndex, keyword_tokens
from mcp_memory.index.state import IndexState
from mcp_memory.index.sync import Indexer, Progress, SyncReport
from mcp_memory.index.vectors import VectorStore
from mcp_memory.ledger import Ledger
from mcp_memory.recall import fit_to_budget, format_recall, is_relevant, recall_key
from mcp_memory.privacy import PrivacyRules, not_shared
from mcp_memory.safety import clean_memory_text, find_secrets, looks_like_injection
from mcp_memory.requests import SearchRequest
from mcp_memory.search import HybridSearcher, SearchHit, SearchSnapshot
from mcp_memory.transcripts import Message
from mcp_memory.workspace import MemoryFile, Workspace, read_text

log = logging.getLogger(__name__)

_CONFIGURED = object()  # sentinel: build the embedder the settings name

__all__ = [
    "CaptureResult", "FileInfo", "FileLines", "ForgetResult", "Memory", "MemoryInputError", "MemoryLine", "PathError",
    "SearchError", "SearchHit", "StoreResult", "SyncReport",
]


@dataclass(frozen=True)
class FileLines:
    path: str
    from_line: int
    to_line: int
    total_lines: int
    text: str




@dataclass(frozen=True)
class MemoryLine:
    """One line of a memory file: what store writes, forget removes and recall cites."""

    path: str
    line: int
    text: str
    score: float = 0.0

    @property
    def citation(self) -> str:
        return f"{self.path}#L{self.line}"


@dataclass(frozen=True)
class StoreResult:
    stored: bool  # False when a near-identical memory already existed
    memory: MemoryLine  # the new line, or the existing near-duplicate


@dataclass(eq=False)
class _StoreRequest:
    """One ``store`` call waiting to be written, and then its outcome."""

    text: str
    line: str  # the bullet as written
    path: str
    header: str  # for a new file
    include_private: bool
    written_at: int = 0
    duplicate_of: "_StoreRequest | None" = None
    result: StoreResult | None = None
    error: BaseException | None = None


@dataclass(frozen=True)
class ForgetResult:
    removed: MemoryLine | None
    candidates: list[MemoryLine]
    message: str


@dataclass(frozen=True)
class CaptureResult:
    """What one capture wrote, what it left out and why, and who extracted the facts."""

    captured: list[MemoryLine]
    skipped: list[Skipped]
    extractor: str
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "captured": [{"citation": m.citation, "text": m.text} for m in self.captured],
            "skipped": [s.to_dict() for s in self.skipped],
            "extractor": self.extractor,
            "message": self.message,
        }


@dataclass(frozen=True)
class FileInfo:
    path: str
    size: int
    date: dt.date | None
    evergreen: bool


MAX_MEMORY_CHARS = 4000
EDIT_EMBED_WAIT = 15.0  # at most this long store/capture wait for their new rows' vectors
PRIMER_MARGIN = 0.05  # standing rules may sit this far below the relevance floor (bench/recall.py)


class Memory:
    """Search and read the memory of one workspace; keep its index in step with the files."""

    def __init__(self, settings: Settings, embedder: Any = _CONFIGURED):
        self.settings = settings
        self.workspace = Workspace(settings.workspace, settings.extra_paths, settings.index_dir / "files.lock")
        self.privacy = PrivacyRules.from_settings(settings.privacy.private_paths)
        self._embedder_arg = embedder
        self._opened = False
        self._open_lock = threading.Lock()
        self._degraded: list[str] = []
        self._generation: str | None = None
        self._snapshot_lock = threading.Lock()
        self._edit_lock = threading.RLock()  # one edit at a time per process; files.lock across processes
        self._store_queue: list[_StoreRequest] = []  # stores waiting for the edit lock (group commit)
        self._store_queue_lock = threading.Lock()
        self._ledger: Ledger | None = None
        self._ledger_lock = threading.Lock()

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
            self.vectors = VectorStore(self.settings.vector_uri, dims)
            self.keywords = KeywordIndex(index_dir / "tantivy")
            self.indexer = Indexer(
                self.settings, self.workspace, self.embedder, self.vectors, self.keywords, self.state, self.cache
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

    def warm_up(self) -> None:
        """Pay one-time costs now rather than on the first search (model weights, snapshot)."""
        self.open()
        if self.embedder is not None:
            try:
                self.embedder.embed_query("warm up")
            except EmbeddingError as exc:
                self._note_degraded(f"query embedding failed: {exc}")
        self._refresh_snapshot()

    @property
    def ledger(self) -> Ledger:
        """Idempotency keys and recall history (opened on first use, without the index)."""
        with self._ledger_lock:
            if self._ledger is None:
                self._ledger = Ledger(self.settings.index_dir / "ledger.sqlite")
            return self._ledger

    def close(self) -> None:
        if self._ledger is not None:
            self._ledger.close()
            self._ledger = None
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
        return self._recovering(lambda: self.indexer.sync(progress))

    def backfill(self, progress: Progress | None = None, should_stop: Any = None, wait: float = 0) -> int:
        """Embed chunks still missing a vector (slow; resumable; one process at a time)."""
        self.open()
        try:
            return self.indexer.backfill(progress, should_stop, wait=wait)
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
    def search(self, request: SearchRequest | str, **options: Any) -> list[SearchHit]:
        """Ranked hits for a ``SearchRequest`` (or a query and ``SearchRequest.of`` options).

        See ``search.py`` for how hits are scored. ``include_private=False`` leaves out the
        files of ``privacy.private_paths``.
        """
        if not isinstance(request, SearchRequest):
            request = SearchRequest.of(request, **options)
        self.open()
        self._refresh_snapshot()
        hidden = None if request.include_private else self.privacy
        try:
            return self.searcher.search(request, hidden=hidden)
        except EmbeddingError as exc:
            # The embedding endpoint is down: answer from keywords rather than fail.
            self._note_degraded(f"query embedding failed: {exc}")
            return self.searcher.search(request, use_vectors=False, hidden=hidden)

    def is_private(self, rel_path: str) -> bool:
        """True for files of ``privacy.private_paths``, which shared clients never see.

        ``rel_path`` must be a resolved memory path (from ``Workspace.resolve`` or a hit),
        never a string a caller typed: see ``privacy.py``.
        """
        return self.privacy.is_private(rel_path)

    def resolve_visible(self, path: str, include_private: bool = True) -> MemoryFile:
        """The memory file ``path`` names, if this caller may read it; else PathError.

        A caller that may not see private files gets the same error for a private file, a
        missing one and a refused path, so errors reveal nothing about what exists.
        """
        if include_private:
            return self.workspace.resolve(path)
        try:
            memory_file = self.workspace.resolve(path)
        except PathError:
            raise PathError(not_shared(path)) from None
        if self.is_private(memory_file.rel_path):
            raise PathError(not_shared(path))
        return memory_file

    def get(self, path: str, from_line: int | None = None, lines: int | None = None,
            include_private: bool = True) -> FileLines:
        """Lines of one memory file (1-based ``from_line``; all lines when ``lines`` is None)."""
        memory_file = self.resolve_visible(path, include_private)
        try:
            text = read_text(memory_file.abs_path)
        except UnicodeDecodeError:
            raise PathError(f"{memory_file.rel_path!r} is a binary file, not text") from None
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

    def status(self, include_private: bool = True) -> dict[str, Any]:
        """What the index holds and how healthy it is.

        A caller that may not see private files gets a reduced view: the files it can see,
        the embedder and health, but no folder paths and no counts that include private files.
        """
        self.open()
        self._recovering(self._refresh_handles)
        chunks = self.vectors.count()
        missing = self.vectors.count_missing_vectors()
        embedded_share = (chunks - missing) / chunks if chunks and self.embedder else (0.0 if self.embedder else None)
        degraded = list(self._degraded) + (self.workspace.link_warnings() if include_private else [])
        if self.embedder is None and self.settings.embedding.provider == "none":
            degraded.append("keyword-only mode (embedding.provider = 'none')")
        elif missing:
            degraded.append(f"{missing} of {chunks} chunks not embedded yet: vector search covers the rest")
        embedder = {
            "provider": self.embedder.provider if self.embedder else "none",
            "model": self.embedder.model if self.embedder else "",
            "dimensions": self.embedder.dimensions if self.embedder else 0,
        }
        if not include_private:
            root = str(self.settings.workspace)
            return {
                "files": len(self.list_files(include_private=False)),
                "embedder": embedder,
                "embedded_share": None if embedded_share is None else round(embedded_share, 2),
                "last_sync": self.state.get("last_sync") or None,
                "degraded": [reason.replace(root, "<workspace>") for reason in degraded
                             if "chunks not embedded" not in reason],
            }
        fingerprint = self.state.get("fingerprint")
        return {
            "workspace": str(self.settings.workspace),
            "index_path": self.settings.vector_uri if "://" in self.settings.index_path else str(self.settings.index_dir),
            "files": len(self.workspace.list_files()),
            "indexed_files": len(self.state.files()),
            "chunks": chunks,
            "keyword_docs": self.keywords.count(),
            "embedder": embedder,
            "embedded_share": None if embedded_share is None else round(embedded_share, 4),
            "fingerprint": json.loads(fingerprint) if fingerprint else None,
            "last_sync": self.state.get("last_sync") or None,
            "last_rebuild_reason": self.state.get("rebuild_reason") or None,
            "degraded": degraded,
        }

    def doctor(self) -> Any:
        """The index checked against the files (``DoctorReport``); changes nothing."""
        from mcp_memory.index.doctor import diagnose

        self.open()
        return diagnose(self.indexer, self.workspace, self.state, self.vectors, self.keywords, self.settings.index_dir)

    def repair(self, progress: Progress | None = None) -> tuple[Any, Any]:
        """Fix what ``doctor`` finds; returns the reports before and after.

        File-level drift is fixed by a sync. Wrong rows (orphans, duplicates, counts that do not
        match, a stale fingerprint) rebuild the index from the files, reusing cached vectors.
        """
        before = self.doctor()
        if before.needs_rebuild:
            self.indexer.rebuild("repair: " + "; ".join(sorted({p.kind for p in before.problems})))
        self.sync(progress)
        self.backfill(progress)
        return before, self.doctor()

    def list_files(self, include_private: bool = True) -> list[FileInfo]:
        """Every memory file with its size and date."""
        out = []
        for f in self.workspace.list_files():
            if not include_private and self.is_private(f.rel_path):
                continue
            try:
                size = f.abs_path.stat().st_size
            except OSError:
                continue
            out.append(FileInfo(f.rel_path, size, f.date, f.evergreen))
        return out

    # ----- writing -------------------------------------------------------------------------
    def store(
        self, text: str, category: str | None = None, evergreen: bool = False, today: dt.date | None = None,
        include_private: bool = True,
    ) -> StoreResult:
        """Append one durable memory as a bullet to today's daily file (or MEMORY.md).

        A near-identical existing memory (similarity >= DEDUPE_THRESHOLD) is returned instead
        of writing a duplicate. The index covers the new line before this returns.
        """
        if not isinstance(text, str):
            raise MemoryInputError("text must be a string")
        # Control characters (NUL, ESC sequences, ...) never reach a file; see safety/text.py.
        text = " ".join(clean_memory_text(text).split())
        if not text:
            raise MemoryInputError("text is empty (or only control or invisible characters): nothing to store")
        if len(text) > MAX_MEMORY_CHARS:
            raise MemoryInputError(f"text is {len(text)} characters; a memory holds at most {MAX_MEMORY_CHARS}")
        secrets = find_secrets(text)
        if secrets:
            kinds = ", ".join(sorted({m.kind for m in secrets}))
            raise MemoryInputError(f"not stored: the text contains a secret ({kinds}); secrets are never written to memory")
        if looks_like_injection(text):
            raise MemoryInputError("not stored: the text reads as instructions to a model, not as a fact to remember")
        category = " ".join(clean_memory_text(category or "").split()).lower()
        if category and not all(c.isalnum() or c in "-_ " for c in category):
            raise MemoryInputError("category may hold letters, digits, spaces, '-' and '_' only")
        self.open()
        day = today or dt.date.today()
        path = self.workspace.evergreen_path() if evergreen else self.workspace.daily_path(day)
        if not include_private and self.is_private(path):
            # Writing there would tell a shared client the private file's length (the new line's number).
            where = "evergreen memories (MEMORY.md)" if evergreen else "today's daily file"
            raise MemoryInputError(f"not stored: {where} is not shared with this client; "
                                   + ("store it without evergreen" if evergreen else "ask the owner to store it"))
        request = _StoreRequest(
            text=text,
            line=f"- [{category}] {text}" if category else f"- {text}",
            path=path,
            header="# Memory\n\n" if evergreen else f"# {day.isoformat()}\n\n",
            include_private=include_private,
        )
        with self._store_queue_lock:
            self._store_queue.append(request)
        with self._edit_lock:
            # Group commit: whoever holds the edit lock writes every store queued meanwhile in
            # one append per file, one sync and one embedding pass. A caller whose request a
            # previous holder wrote finds its answer ready.
            if request.result is None and request.error is None:
                with self._store_queue_lock:
                    batch, self._store_queue = self._store_queue, []
                self._write_stores(batch)
        if request.error is not None:
            raise request.error
        assert request.result is not None
        return request.result

    def _write_stores(self, batch: list["_StoreRequest"]) -> None:
        """Write a batch of store requests; each gets its result or the error that stopped it."""
        try:
            with self.workspace.locked():  # no other process writes between the check and the append
                written: list[_StoreRequest] = []
                duplicates = self._find_duplicates([r.text for r in batch], [r.include_private for r in batch])
                for request, duplicate in zip(batch, duplicates):
                    if duplicate is not None:
                        request.result = StoreResult(False, duplicate)
                        continue
                    # A shared caller is only told about lines it could read.
                    earlier = [w for w in written if request.include_private or not self.is_private(w.path)]
                    request.duplicate_of = self._earlier_duplicate(request.text, earlier)
                    if request.duplicate_of is None:
                        written.append(request)
                paths = list(dict.fromkeys(r.path for r in written))
                for path in paths:
                    requests = [r for r in written if r.path == path]
                    start, _ = self.workspace.append(path, [r.line for r in requests], new_file_header=requests[0].header)
                    for offset, r in enumerate(requests):
                        r.written_at = start + offset
                if paths:
                    self._sync_edited(*paths)
                    for path in paths:
                        self._check_indexed(path)
                        self._embed_edited(path)
                for r in written:
                    r.result = StoreResult(True, MemoryLine(r.path, r.written_at, r.line))
                for r in batch:
                    if r.result is None and r.duplicate_of is not None:  # repeats a line written just now
                        first = r.duplicate_of
                        r.result = StoreResult(False, MemoryLine(first.path, first.written_at, first.line))
        except BaseException as exc:
            for r in batch:
                if r.result is None:
                    r.error = exc
            if not isinstance(exc, Exception):
                raise

    def _earlier_duplicate(self, text: str, written: list["_StoreRequest"]) -> "_StoreRequest | None":
        """The request earlier in the same batch that ``text`` nearly repeats, if any."""
        if not written:
            return None
        scores = self._similarities_exact_first(text, [w.text for w in written])
        best = max(range(len(written)), key=lambda i: scores[i])
        return written[best] if scores[best] >= self.settings.capture.dedupe_threshold else None

    def _embed_texts_ahead(self, texts: list[str]) -> None:
        """Embed many short texts in one call, so each comparison after it finds them cached."""
        if self.embedder is not None and len(texts) > 1:
            try:
                self._embed_cached(texts)
            except EmbeddingError:
                pass  # each comparison falls back on its own and notes the degradation

    def forget(
        self, query: str | None = None, path: str | None = None, line: int | None = None, confirm: bool = False,
        include_private: bool = True,
    ) -> ForgetResult:
        """Find memories to remove; remove one when it is certain which.

        ``path`` + ``line`` + ``confirm`` removes that line. ``query`` + ``confirm`` removes the
        best match only when it is a clear one; otherwise the candidates come back and nothing
        is removed.
        """
        self.open()
        if path is not None or line is not None:
            if path is None or line is None:
                raise MemoryInputError("give both path and line, or a query")
            target = self._read_line(path, int(line), include_private)
            if not confirm:
                return ForgetResult(None, [target], "call again with confirm=true to remove this line")
            return self._remove(target)
        if not query or not query.strip():
            raise MemoryInputError("give a query, or a path and line")
        candidates = self._memory_lines(query, limit=5, include_private=include_private)
        if not candidates:
            return ForgetResult(None, [], "no memory matches the query; nothing removed")
        if not confirm:
            return ForgetResult(None, candidates, "candidates only; call again with confirm=true, or with path and line")
        best = candidates[0]
        runner_up = candidates[1].score if len(candidates) > 1 else 0.0
        # Clear: a real match that stands well apart from the next one.
        if best.score >= 0.5 and best.score - runner_up >= 0.15:
            return self._remove(best)
        return ForgetResult(None, candidates, "no single clear match; nothing removed: pick one by path and line")

    def _remove(self, target: MemoryLine) -> ForgetResult:
        with self._edit_lock:
            try:
                self.workspace.remove_line(target.path, target.line, target.text)
            except PathError as exc:
                raise MemoryInputError(str(exc)) from None
            self._sync_edited(target.path)
        return ForgetResult(target, [], f"removed {target.citation}")

    def _read_line(self, path: str, line: int, include_private: bool = True) -> MemoryLine:
        lines = self.get(path, include_private=include_private)
        if not 1 <= line <= lines.total_lines:
            raise MemoryInputError(f"{lines.path} has no line {line} ({lines.total_lines} lines)")
        text = lines.text.split("\n")[line - 1]
        if not text.strip():
            raise MemoryInputError(f"{lines.path} line {line} is blank")
        return MemoryLine(lines.path, line, text.rstrip("\r"))

    def _sync_edited(self, *rels: str) -> None:
        self._recovering(lambda: self.indexer.sync(only=set(rels)))

    def _check_indexed(self, rel: str) -> None:
        """Refuse to report a write that search could not find (the file must be a memory file)."""
        try:
            self.workspace.resolve(rel)
        except PathError as exc:
            raise MemoryInputError(f"{rel} was written but is not readable as a memory file ({exc})") from None

    def _embed_edited(self, rel: str) -> None:
        """Give the edited file's new rows their vectors before the edit returns.

        When a backfill already runs (another thread or process), it picks up the new rows too:
        wait for them, up to ``EDIT_EMBED_WAIT``, instead of for that whole backfill.
        """
        if self.embedder is None:
            return
        deadline = time.monotonic() + EDIT_EMBED_WAIT
        where = f"path = '{rel.replace(chr(39), chr(39) * 2)}' AND vector IS NULL"
        while True:
            self.backfill()  # returns at once when another backfill holds the embed lock
            self.vectors.refresh()
            if self.vectors.count(where) == 0 or time.monotonic() > deadline:
                return
            time.sleep(0.05)

    def _memory_lines(self, text: str, limit: int, include_private: bool = True) -> list[MemoryLine]:
        """Lines of the best-matching chunks, ranked by their own similarity to ``text``."""
        return self._rank_lines(text, self._candidate_lines(text, include_private), limit)

    def _candidate_lines(self, text: str, include_private: bool = True) -> list[MemoryLine]:
        """The non-blank, non-heading lines of the five chunks that best match ``text``."""
        hits = self.search(text, max_results=5, min_score=0.0, include_private=include_private)
        return [MemoryLine(hit.path, number, raw) for hit, number, raw in self._hit_lines(hits)
                if raw.strip() and not raw.strip().startswith("#")]

    def _rank_lines(self, text: str, lines: list[MemoryLine], limit: int) -> list[MemoryLine]:
        if not lines:
            return []
        scores = self._similarities_exact_first(text, [_memory_body(m.text) for m in lines])
        ranked = sorted(zip(scores, lines), key=lambda pair: pair[0], reverse=True)[:limit]
        return [MemoryLine(m.path, m.line, m.text, round(float(s), 4)) for s, m in ranked]

    def _find_duplicates(self, texts: list[str], include_private: list[bool] | None = None) -> list[MemoryLine | None]:
        """For each text, the memory line it nearly repeats (similarity >= dedupe_threshold), or None.

        The texts are checked together: one embedding call for their searches, one for the texts
        and one for the candidate lines those searches bring back, instead of three per text. A
        group of queued stores (or a capture's facts) costs a fraction of checking each alone.
        """
        try:
            self.searcher.embed_queries_ahead(texts)  # does nothing for a lone text
        except EmbeddingError:
            pass  # each search falls back to keywords on its own and notes the degradation
        visible = include_private or [True] * len(texts)
        candidates = [self._candidate_lines(text, private) for text, private in zip(texts, visible)]
        if len(texts) > 1:  # a lone text's comparison embeds its candidate lines in one call anyway
            self._embed_texts_ahead(list(dict.fromkeys(
                [*texts, *(_memory_body(m.text) for lines in candidates for m in lines)])))
        threshold = self.settings.capture.dedupe_threshold
        found: list[MemoryLine | None] = []
        for text, lines in zip(texts, candidates):
            best = self._rank_lines(text, lines, limit=1)
            found.append(best[0] if best and best[0].score >= threshold else None)
        return found

    def _similarities(self, text: str, others: list[str]) -> list[float]:
        """Cosine similarity of embeddings when an embedder is ready, else token overlap."""
        if self.embedder is not None:
            try:
                vectors = self._embed_cached([text, *others])
                return [float(v) for v in vectors[1:] @ vectors[0]]
            except EmbeddingError as exc:
                self._note_degraded(f"embedding failed: {exc}")
        query = set(keyword_tokens(text.lower()))
        return [_overlap(query, set(keyword_tokens(o.lower()))) for o in others]

    def _embed_cached(self, texts: list[str]) -> Any:
        """Embeddings of short texts (memory lines), through the embedding cache.

        Every store and capture compares its text with the lines of the closest chunks; those
        lines repeat from call to call, so only new text is embedded.
        """
        import numpy as np

        from mcp_memory.embedding.cache import cache_key

        e = self.embedder
        assert e is not None
        keys = [cache_key(e.provider, e.model, e.dimensions, "line\n" + t) for t in texts]
        found = self.cache.get_many(list(set(keys)))
        missing = sorted({i for i, k in enumerate(keys) if k not in found}, key=lambda i: keys[i])
        if missing:
            fresh = e.embed_documents([texts[i] for i in missing])
            new = {keys[i]: fresh[j] for j, i in enumerate(missing)}
            self.cache.put_many(new)
            found.update(new)
        return np.stack([found[k] for k in keys])

    def _similarities_exact_first(self, text: str, others: list[str]) -> list[float]:
        # Case, spacing and punctuation never make two memories different.
        key = _letters(text)
        scores = self._similarities(text, others)
        return [1.0 if _letters(o) == key else s for o, s in zip(others, scores)]

    # ----- capture -------------------------------------------------------------------------
    def capture(
        self,
        messages: list[Message],
        session_key: str | None = None,
        idempotency_key: str | None = None,
        extractor: Any = None,
        now: dt.datetime | None = None,
        include_private: bool = True,
    ) -> CaptureResult:
        """Write the durable facts of a conversation's latest messages to today's daily file.

        Guards first (capture's own runs, idempotency keys seen before), then the message
        filters, an extractor (``extractor`` if given, else the configured one, with the
        offline rules as fallback), the fact checks, deduplication within the batch and
        against memory, and one locked append under a heading with the time and session.
        """
        c = self.settings.capture
        if is_memory_run(session_key):
            return CaptureResult([], [], "none", "skipped: this is a memory-capture run, which never captures itself")
        key = _clean_key(idempotency_key)
        if key and self.ledger.seen(key):
            return CaptureResult([], [], "none", f"skipped: idempotency key {key!r} was captured already")
        candidates, skipped = select_candidates(list(messages), c.max_messages, c.min_chars, c.max_chars)
        if not candidates:
            return self._finish_capture([], skipped, "none", key, "nothing capturable in the latest messages")

        now = now or dt.datetime.now()
        today = now.date()
        extractor = extractor or self._configured_extractor()
        name = extractor.name
        try:
            facts = extractor.extract(candidates, today)
        except ExtractionError as exc:
            log.warning("capture: %s; using the offline rules instead", exc)
            name = f"rules (fallback: {exc})"
            facts = RuleExtractor().extract(candidates, today)

        checked: list[Fact] = []
        for fact in facts:
            fact = Fact(with_date(clean_memory_text(str(fact.text or "")), today), fact.category, fact.source)
            reason = check_fact(fact)
            if reason:
                skipped.append(Skipped(_preview(fact.text), reason))
            else:
                checked.append(fact)
        self.open()
        unique = self._dedupe_batch(checked, skipped)
        if len(unique) > c.max_facts:
            skipped.extend(Skipped(_preview(f.text), f"over the limit of {c.max_facts} facts per capture")
                           for f in unique[c.max_facts:])
            unique = unique[: c.max_facts]
        if not unique:
            return self._finish_capture([], skipped, name, key, "no durable facts found")

        rel = self.workspace.daily_path(today)
        if not include_private and self.is_private(rel):
            return CaptureResult([], skipped, name, "not captured: today's daily file is not shared with this client")
        with self._edit_lock, self.workspace.locked():
            # Inside the cross-process lock: two processes capturing the same turn, or the
            # same fact, cannot both write it.
            if key and not self.ledger.claim(key):
                return CaptureResult([], skipped, name, f"skipped: idempotency key {key!r} was captured already")
            try:
                fresh: list[Fact] = []
                duplicates = self._find_duplicates([_memory_body(fact.text) for fact in unique],
                                                   [include_private] * len(unique))
                for fact, duplicate in zip(unique, duplicates):
                    if duplicate is not None:
                        skipped.append(Skipped(_preview(fact.text), f"already in memory at {duplicate.citation}"))
                    else:
                        fresh.append(fact)
                if not fresh:
                    return CaptureResult([], skipped, name, "every fact found is already in memory")
                heading = f"## {now.strftime('%H:%M')} captured" + (f" (session {_session_label(session_key)})"
                                                                    if session_key else "")
                lines = [heading, "", *(f"- [{f.category}] {f.text}" for f in fresh)]
                prefix = [""] if (self.workspace.root / rel).exists() else []
                start, _ = self.workspace.append(rel, prefix + lines, new_file_header=f"# {today.isoformat()}\n\n")
                self._sync_edited(rel)
                self._check_indexed(rel)
            except BaseException:
                if key:
                    self.ledger.release(key)
                raise
            self._embed_edited(rel)
        first = start + len(prefix) + 2
        captured = [MemoryLine(rel, first + i, line) for i, line in enumerate(lines[2:])]
        return CaptureResult(captured, skipped, name, f"captured {len(captured)} memories into {rel}")

    def _configured_extractor(self) -> Any:
        c = self.settings.capture
        if c.llm_model and c.extractor in ("auto", "llm"):
            return ChatModelExtractor(c.llm_model, c.llm_base_url, c.llm_api_key, c.llm_timeout)
        return RuleExtractor()

    def _finish_capture(self, captured: list[MemoryLine], skipped: list[Skipped], name: str, key: str | None,
                        message: str) -> CaptureResult:
        if key:
            self.ledger.claim(key)  # nothing to write, but the same turn need not be read again
        return CaptureResult(captured, skipped, name, message)

    def _dedupe_batch(self, facts: list[Fact], skipped: list[Skipped]) -> list[Fact]:
        """Facts without near-duplicates among themselves (the first of each group is kept)."""
        if len(facts) < 2:
            return facts
        kept: list[Fact] = []
        for fact in facts:
            bodies = [_memory_body(k.text) for k in kept]
            scores = self._similarities_exact_first(_memory_body(fact.text), bodies) if bodies else []
            if scores and max(scores) >= self.settings.capture.dedupe_threshold:
                skipped.append(Skipped(_preview(fact.text), "duplicate of another fact in this capture"))
            else:
                kept.append(fact)
        return kept

    # ----- recall ----------------------------------------------------------------------------
    def recall(
        self,
        prompt: str,
        session_key: str | None = None,
        max_items: int | None = None,
        budget_chars: int | None = None,
        min_score: float | None = None,
        keywords_only: bool = False,
        include_private: bool = True,
    ) -> str:
        """The ``<relevant-memories>`` block for a prompt, or "" when nothing relevant is found."""
        budget = self.settings.recall.budget_chars if budget_chars is None else max(100, int(budget_chars))
        hits = self.recall_hits(prompt, session_key, max_items, budget, min_score, keywords_only, include_private)
        return format_recall(hits, budget)

    def recall_hits(
        self,
        prompt: str,
        session_key: str | None = None,
        max_items: int | None = None,
        budget_chars: int | None = None,
        min_score: float | None = None,
        keywords_only: bool = False,
        include_private: bool = True,
    ) -> list[SearchHit]:
        """The memories ``recall`` shows for a prompt (within the budget), in order; [] when none.

        ``keywords_only`` answers from the keyword index and the files alone, without loading
        the vector index or the embedding model (seconds of imports): the path a hook takes
        when no server is running to answer it.

        With a ``session_key``, memories injected in that session's last ``repeat_turns``
        recalls are left out: the model still has them in its context.
        """
        r = self.settings.recall
        prompt = strip_recall_blocks(prompt or "")
        if is_memory_run(session_key) or len(prompt.strip()) < max(1, r.min_prompt_chars):
            return []
        max_items = r.max_items if max_items is None else max(1, int(max_items))
        budget = r.budget_chars if budget_chars is None else max(100, int(budget_chars))
        threshold = r.min_score if min_score is None else min_score
        pool = max_items * 2 + r.primer_items * 2
        if keywords_only:
            candidates, floor = self._keyword_hits(prompt, pool, threshold), None
            if not include_private:
                candidates = [h for h in candidates if not self.is_private(h.path)]
        else:
            candidates = self.search(prompt, max_results=pool, min_score=threshold, include_private=include_private)
            floor = self.relevance_floor()
        hits = [h for h in candidates
                if is_relevant(h, floor, r.min_keyword_coverage if h.vector_similarity is not None
                               else r.keyword_only_coverage)][: max_items * 2]
        session = _clean_key(session_key)
        turn = self.ledger.next_turn(session) if session else 0
        if turn == 1 and r.primer_items and not keywords_only:
            hits = self._standing_rules(prompt, candidates, hits, r.primer_items) + hits
        if session and r.repeat_turns > 0:
            recent = self.ledger.recalled_since(session, turn - r.repeat_turns)
            hits = [h for h in hits if recall_key(h) not in recent]
        hits = fit_to_budget(hits[:max_items], budget)
        if session:
            self.ledger.record_recall(session, turn, [recall_key(h) for h in hits])
        return hits

    def _standing_rules(self, prompt: str, candidates: list[SearchHit], gated: list[SearchHit],
                        limit: int) -> list[SearchHit]:
        """The [preference] and [decision] bullets of the candidates closest to the prompt, one line each.

        Lines already shown by a gated hit are left out. A line must still resemble the
        prompt (the relevance floor less ``PRIMER_MARGIN``, compared line by line rather than
        chunk by chunk), so an unrelated prompt primes nothing.
        """
        shown = {(h.path, n) for h in gated for n in range(h.start_line, h.end_line + 1)}
        lines = [(hit, number, raw.strip()) for hit, number, raw in self._hit_lines(candidates, skip=shown)
                 if _STANDING.match(raw)]
        floor = self.relevance_floor()
        if not lines or floor is None:
            return []
        scores = self._similarities(prompt, [_memory_body(text) for _, _, text in lines])
        ranked = sorted(zip(scores, lines), key=lambda pair: pair[0], reverse=True)
        return [
            SearchHit(path=hit.path, start_line=number, end_line=number, score=round(float(score), 4), snippet=text,
                      source=hit.source, date=hit.date, keyword_coverage=0.0, vector_similarity=round(float(score), 4))
            for score, (hit, number, text) in ranked[:limit] if score >= floor - PRIMER_MARGIN
        ]

    def _hit_lines(self, hits: list[SearchHit], skip: set[tuple[str, int]] | None = None,
                   ) -> list[tuple[SearchHit, int, str]]:
        """Each distinct (hit, line number, line text) the hits cover, reading every file once."""
        seen = set(skip or ())
        files: dict[str, list[str]] = {}
        out: list[tuple[SearchHit, int, str]] = []
        for hit in hits:
            if hit.path not in files:
                try:
                    files[hit.path] = self.get(hit.path).text.split("\n")
                except PathError:
                    files[hit.path] = []
            file_lines = files[hit.path]
            for number in range(hit.start_line, min(hit.end_line, len(file_lines)) + 1):
                if (hit.path, number) not in seen:
                    seen.add((hit.path, number))
                    out.append((hit, number, file_lines[number - 1].rstrip("\r")))
        return out

    def relevance_floor(self) -> float | None:
        """The cosine a hit needs to be recalled on meaning alone (None without an embedder)."""
        if self.embedder is None:
            return None
        return self.settings.recall.similarity_floor or self.embedder.relevance_floor

    def _keyword_hits(self, prompt: str, max_results: int, min_score: float) -> list[SearchHit]:
        """Keyword search whose hits are re-chunked from the files as they are now.

        A chunk whose file changed since it was indexed no longer has the same id, so it is
        left out: a citation never points at lines that hold other text.
        """
        folder = self.settings.index_dir / "tantivy"
        if not folder.is_dir():
            return []
        keywords = KeywordIndex(folder)
        found = keywords.search(prompt, max_results * self.settings.search.candidate_multiplier, None, None, None)
        wanted: dict[str, set[str]] = {}
        for hit in found.hits:
            wanted.setdefault(hit.path, set()).add(hit.id)
        chunks = []
        for path, ids in wanted.items():
            try:
                file = self.workspace.resolve(path)
                text = read_text(file.abs_path)
            except (PathError, OSError, UnicodeDecodeError, ValueError):
                continue
            c = self.settings.chunking
            chunks.extend(ch for ch in chunk_markdown(text, file.rel_path, file.date, c.tokens, c.overlap) if ch.id in ids)
        searcher = HybridSearcher(keywords, None, self.settings.search)
        searcher.set_snapshot(SearchSnapshot.from_chunks(chunks))
        return searcher.search(SearchRequest(prompt, max_results=max_results, min_score=min_score))

    def pending_embeddings(self) -> int:
        """Chunks whose vector is not computed yet (found by keywords only until then)."""
        self.open()
        return self.vectors.count_missing_vectors()

    # ----- internals -----------------------------------------------------------------------
    def _refresh_snapshot(self) -> None:
        with self._snapshot_lock:
            generation = self.state.generation
            if generation == self._generation:
                return
            rows = self._recovering(self._newest_rows)
            self.searcher.set_snapshot(SearchSnapshot.from_arrow(rows))
            self._generation = generation

    def _newest_rows(self) -> Any:
        self._refresh_handles()
        return self.vectors.snapshot_rows()

    def _refresh_handles(self) -> None:
        self.vectors.refresh()
        self.keywords.reload()

    def _recovering(self, action: Any) -> Any:
        """Run an index operation; if the index cannot be read, rebuild it from the files and retry once.

        The index is derived data: a folder deleted or damaged under a running process (a
        backup restore, a disk cleaner) costs a rebuild, never a failed call.
        """
        try:
            return action()
        except (EmbeddingError, PathError, SearchError, MemoryInputError):
            raise
        except Exception as exc:  # LanceDB and Tantivy raise plain OSError/ValueError/RuntimeError
            if self._index_readable():
                raise  # the index is fine: this failure is something else, and it is reported
            self._rebuild_unreadable_index(exc)
            return action()

    def _index_readable(self) -> bool:
        try:
            self._refresh_handles()
            self.vectors.count()
            self.keywords.count()
        except Exception:
            return False
        return True

    def _rebuild_unreadable_index(self, exc: Exception) -> None:
        log.warning("the index cannot be read (%s): reopening it and rebuilding from the files", exc)
        self._note_degraded(f"index rebuilt after a read error: {exc}")
        with self._open_lock:
            index_dir = self.settings.index_dir
            dims = self.embedder.dimensions if self.embedder else 0
            self.keywords = KeywordIndex(index_dir / "tantivy")  # a damaged folder is recreated empty
            self.vectors = VectorStore(self.settings.vector_uri, dims)  # a deleted table is recreated empty
            self.indexer.keywords = self.searcher.keywords = self.keywords
            self.indexer.vectors = self.vectors
            self._generation = None
        # Rows missing against the state table make the sync re-index every file (cached vectors).
        self.indexer.sync()

    def _note_degraded(self, reason: str) -> None:
        if reason not in self._degraded:
            self._degraded.append(reason)
        del self._degraded[:-5]


_STANDING = re.compile(r"^\s*[-*+]\s+\[(?:preference|decision)\]\s", re.IGNORECASE)
_LEARNED_DATE = re.compile(r"\s*\(\d{4}-\d{2}-\d{2}\)\s*$")  # "(2026-11-26)" closing a captured fact


def _clean_key(key: str | None) -> str | None:
    # One line, bounded, and valid UTF-8 (JSON admits lone surrogates; SQLite does not).
    key = " ".join(str(key or "").split())[:200].encode("utf-8", "replace").decode("utf-8")
    return key or None


def _session_label(session_key: str | None) -> str:
    """A session key fit for a markdown heading: one line, no markup, at most 40 characters."""
    label = "".join(ch for ch in str(session_key or "") if ch.isalnum() or ch in "-_.:@")
    return label[:40] or "unnamed"


def _memory_body(line: str) -> str:
    """A bullet's text without the bullet and category markers."""
    body = line.strip().removeprefix("- ").removeprefix("* ")
    if body.startswith("[") and "] " in body:
        body = body.split("] ", 1)[1]
    return _LEARNED_DATE.sub("", body)


_NOT_LETTER_OR_DIGIT = re.compile(r"[\W_]+")  # \w is exactly str.isalnum() plus "_"


def _letters(text: str) -> str:
    return _NOT_LETTER_OR_DIGIT.sub("", _memory_body(text).casefold())


def _overlap(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0
