"""Keeping the index in step with the markdown files, safely from many processes.

Two phases:

1. ``Indexer.sync``: find changed files (size and mtime as a fast path, then a content
   hash), re-chunk only those, and replace their rows in LanceDB and Tantivy. Vectors come
   from the embedding cache where known; other chunks get a null vector. This takes
   seconds, so keyword search is usable right away.
2. ``Indexer.backfill``: embed the chunks still missing a vector, in batches, and fill the
   vectors in. Search uses whatever is ready at any moment.

Who writes: every write transaction (a batch of files, or a batch of vectors) holds the
workspace write lock, a file lock in the index folder, for a short time. Any process can
write; they take turns. Tantivy's own one-writer lock is therefore never contended, and
LanceDB never sees two writers. The expensive part, computing embeddings, runs outside the
write lock under a separate ``embed`` lock that only one process holds, so two processes
never embed the same chunks twice; the others simply skip the backfill. Each sync transaction,
and each backfill at its end, compacts the vector table once enough small fragments or versions
have piled up (``VectorStore.compact``), which also deletes versions no reader can still use.

Crash safety: a file's state row is written only after its rows are in both indexes, and a
re-sync of a file first deletes all of its rows. An interrupted run therefore redoes the
unfinished files on the next start, never leaving duplicates.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import os
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import cast

import numpy as np
from filelock import FileLock, Timeout

from mcp_memory.config import Settings
from mcp_memory.core.chunking import Chunk, chunk_markdown
from mcp_memory.core.folders import make_private_folder
from mcp_memory.core.privacy import PrivacyRules
from mcp_memory.core.session_source import count_messages, render_transcript
from mcp_memory.core.workspace import (
    MAX_FILE_BYTES,
    MemoryFile,
    PathError,
    Workspace,
    decode_memory_bytes,
)
from mcp_memory.embedding import Embedder
from mcp_memory.embedding.cache import EmbeddingCache, embed_kept_private, text_key
from mcp_memory.index.keywords import KeywordIndex
from mcp_memory.index.state import FileState, IndexState
from mcp_memory.index.vectors import VectorStore

log = logging.getLogger(__name__)

SCHEMA_VERSION = 2  # bump when the row layout, chunk ids or keyword tokens change
WRITE_LOCK_TIMEOUT = 120.0
FILES_PER_TRANSACTION = 100

Progress = Callable[[str, int, int], None]  # (phase, done, total)


@dataclass
class SyncReport:
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # path -> reason
    chunks_written: int = 0
    rebuilt: str = ""  # why the whole index was rebuilt, if it was
    seconds: float = 0.0

    @property
    def touched(self) -> bool:
        return bool(self.added or self.changed or self.removed or self.rebuilt)


def fingerprint(settings: Settings, embedder: Embedder | None) -> dict[str, object]:
    """Everything that makes existing rows incompatible when it changes."""
    return {
        "schema": SCHEMA_VERSION,
        "provider": embedder.provider if embedder else "none",
        "model": embedder.model if embedder else "",
        "dimensions": embedder.dimensions if embedder else 0,
        "chunk_tokens": settings.chunking.tokens,
        "chunk_overlap": settings.chunking.overlap,
    }


class Indexer:
    """Brings the LanceDB and Tantivy indexes in line with the workspace files."""

    def __init__(
        self,
        settings: Settings,
        workspace: Workspace,
        embedder: Embedder | None,
        store: VectorStore,
        keywords: KeywordIndex,
        state: IndexState,
        cache: EmbeddingCache,
        privacy: PrivacyRules,
    ):
        self.settings = settings
        self.privacy = privacy  # whose chunks' vectors stay off a shared vector store
        self.workspace = workspace
        self.embedder = embedder
        self.vectors = store
        self.keywords = keywords
        self.state = state
        self.cache = cache
        index_dir = settings.index_dir
        make_private_folder(index_dir)
        self._write_lock = FileLock(str(index_dir / "write.lock"), timeout=WRITE_LOCK_TIMEOUT)
        self._embed_lock = FileLock(str(index_dir / "embed.lock"), timeout=0)
        self.fingerprint = fingerprint(settings, embedder)
        # The last check of rows against the state took LanceDB's counts from the search snapshot
        # saved at this generation (``VectorStore.counts_hint``), not from the table: the table
        # itself is checked before this process first writes to it.
        self._rows_checked_by_hint = False

    # ----- phase 1 -------------------------------------------------------------------------
    def sync(self, progress: Progress | None = None, only: Collection[str] | None = None) -> SyncReport:
        """Sync every file, or just the paths in ``only`` (after an edit by this program)."""
        started = time.monotonic()
        report = SyncReport()
        with self._write_lock:
            self._check_fingerprint(report)
            orphans = set()
            if only is None:
                orphans = self._orphan_paths()
                # Counts the saved snapshot gave (the table still closed) are checked again before a write.
                self._rows_checked_by_hint = not self.vectors.connected
        todo, removed, known = self._changed_files(only, orphans, report)
        if (todo or removed) and self._rows_checked_by_hint:
            # About to write: check the table itself first, as a full sync at start would have
            # (rows a killed run left, a table folder deleted under its state).
            with self._write_lock:
                self.vectors.open()
                orphans = self._orphan_paths()
                self._rows_checked_by_hint = False
            if only is not None and (orphans or not self.state.files()):
                only = None  # rows to repair: every file is synced, as at start, not just those asked for
            todo, removed, known = self._changed_files(only, orphans, report)

        total = len(todo) + len(removed)
        done = 0
        if progress:
            progress("files", 0, total)
        for start in range(0, max(len(todo), 1), FILES_PER_TRANSACTION):
            batch = todo[start : start + FILES_PER_TRANSACTION]
            batch_removed = removed if start == 0 else []
            if not batch and not batch_removed:
                break
            self._sync_batch(batch, batch_removed, known, orphans, report)
            done += len(batch) + len(batch_removed)
            if progress:
                progress("files", done, total)
        self.state.set("last_sync", dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))
        report.seconds = time.monotonic() - started
        if report.touched:
            log.info(
                "sync: %d added, %d changed, %d removed, %d chunks in %.2fs",
                len(report.added), len(report.changed), len(report.removed),
                report.chunks_written, report.seconds,
            )
        return report

    def files_changed(self) -> bool:
        """Whether a sync would change anything: a file added, changed or removed since the last
        one, or settings that rebuild the index. Reads the folder and the state database only."""
        if self.state.get("fingerprint") != json.dumps(self.fingerprint, sort_keys=True):
            return True
        todo, removed, _ = self._changed_files(None, set(), SyncReport())
        return bool(todo or removed)

    def _changed_files(self, only: Collection[str] | None, orphans: set[str], report: SyncReport,
                       ) -> tuple[list[tuple[MemoryFile, os.stat_result]], list[str], dict[str, FileState]]:
        """The files to (re)index with their stat, the paths to drop, and the state rows they were compared with."""
        files = self.workspace.list_files() if only is None else self._memory_files_among(only)
        known = self.state.files()
        if only is not None:
            known = {p: f for p, f in known.items() if p in only}
        on_disk = {f.rel_path: f for f in files}
        todo: list[tuple[MemoryFile, os.stat_result]] = []
        for memory_file in files:
            try:
                stat = memory_file.abs_path.stat()
            except OSError as exc:
                report.skipped[memory_file.rel_path] = f"cannot stat: {exc}"
                continue
            previous = known.get(memory_file.rel_path)
            if previous and previous.mtime_ns == stat.st_mtime_ns and previous.size == stat.st_size:
                continue
            if previous and memory_file.kind == "sessions" and not self._grown_enough(memory_file, previous, stat):
                continue
            todo.append((memory_file, stat))
        removed = sorted((set(known) | orphans) - set(on_disk))
        return todo, removed, known

    def _memory_files_among(self, rels: Collection[str]) -> list[MemoryFile]:
        """The memory files among ``rels``, looked up one by one rather than by walking them all.

        An edit by this program syncs one or two files; a walk of a workspace of a thousand
        files costs more than the sync itself. A path that no longer names a memory file is
        left out, so its rows are removed.
        """
        found = []
        for rel in sorted(set(rels)):
            try:
                memory_file = self.workspace.resolve(rel)
            except PathError:
                continue
            if memory_file.rel_path == rel:
                found.append(memory_file)
        return found

    def _sync_batch(
        self,
        batch: list[tuple[MemoryFile, os.stat_result]],
        removed: list[str],
        known: dict[str, FileState],
        orphans: set[str],
        report: SyncReport,
    ) -> None:
        # Read and chunk outside the lock; only the index writes hold it.
        prepared: list[tuple[MemoryFile, FileState, list[Chunk]]] = []
        unchanged: list[FileState] = []
        for memory_file, stat in batch:
            result = self._prepare(memory_file, stat, known.get(memory_file.rel_path), report)
            if result is None:
                continue
            if isinstance(result, FileState):
                unchanged.append(result)
            else:
                prepared.append(result)

        with self._write_lock:
            # Another process may have synced some of these files meanwhile.
            current = self.state.files()
            prepared = [p for p in prepared if not _same(current.get(p[1].path), p[1])]
            removed = [p for p in removed if p in current or p in orphans]
            if not prepared and not removed and not unchanged:
                return
            chunks = [c for _, _, file_chunks in prepared for c in file_chunks]
            vectors = self._cached_vectors(chunks)
            paths = [state.path for _, state, _ in prepared] + removed
            self.vectors.replace_paths(paths, chunks, vectors)
            with self.keywords.writer() as writer:
                for path in paths:
                    writer.delete_path(path)
                writer.add_many((c.id, c.path, c.index_text, c.date) for c in chunks)
            self.state.record_files([state for _, state, _ in prepared] + unchanged, removed)
            self.vectors.compact()

        for _, state, file_chunks in prepared:
            (report.changed if state.path in known else report.added).append(state.path)
            report.chunks_written += len(file_chunks)
        report.removed.extend(removed)

    def _prepare(
        self, memory_file: MemoryFile, stat: os.stat_result, previous: FileState | None, report: SyncReport
    ) -> tuple[MemoryFile, FileState, list[Chunk]] | FileState | None:
        rel = memory_file.rel_path
        if stat.st_size > MAX_FILE_BYTES:
            report.skipped[rel] = f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MB"
            log.warning("skipping %s: %s", rel, report.skipped[rel])
            return None
        try:
            data = memory_file.abs_path.read_bytes()
            text = decode_memory_bytes(data) if data else ""
        except UnicodeDecodeError:
            report.skipped[rel] = "binary content, not text"
            log.warning("skipping %s: binary content, not text", rel)
            return None
        except OSError as exc:
            report.skipped[rel] = f"cannot read: {exc}"
            log.warning("skipping %s: %s", rel, exc)
            return None
        digest = hashlib.sha256(data).hexdigest()
        if previous and previous.hash == digest:
            # Touched but not changed: remember the new mtime so the fast path works next time.
            return FileState(rel, stat.st_mtime_ns, stat.st_size, digest, previous.chunks)
        if memory_file.kind == "sessions":
            text = render_transcript(data)
        damaged = text.count("\ufffd") - data.count("\ufffd".encode("utf-8"))
        if damaged > 0:
            log.warning("%s has %d damaged characters (invalid UTF-8 or control bytes): they read as U+FFFD, "
                        "the rest of the file is indexed", rel, damaged)
        chunks = chunk_markdown(
            text,
            path=rel,
            date=memory_file.date,
            tokens=self.settings.chunking.tokens,
            overlap=self.settings.chunking.overlap,
        )
        return memory_file, FileState(rel, stat.st_mtime_ns, stat.st_size, digest, len(chunks)), chunks

    def _grown_enough(self, transcript: MemoryFile, previous: FileState, stat: os.stat_result) -> bool:
        """Whether a transcript that changed is worth indexing again: it was rewritten, or it grew by
        ``sessions.delta_bytes`` or ``delta_messages`` since it was indexed (a live session
        appends a line per message; re-indexing it each time would cost more than it finds)."""
        s = self.settings.sessions
        if stat.st_size < previous.size:
            return True
        if stat.st_size - previous.size >= s.delta_bytes:
            return True
        try:
            with transcript.abs_path.open("rb") as handle:
                handle.seek(previous.size)
                return count_messages(handle.read(s.delta_bytes)) >= s.delta_messages
        except OSError:
            return True

    def _check_fingerprint(self, report: SyncReport) -> None:
        wanted = json.dumps(self.fingerprint, sort_keys=True)
        stored = self.state.get("fingerprint")
        if stored == wanted:
            return
        if stored:
            report.rebuilt = f"index fingerprint changed from {stored} to {wanted}"
            log.warning("%s: rebuilding the index", report.rebuilt)
            self.state.set("rebuild_reason", report.rebuilt)
        self.vectors.reset()
        with self.keywords.writer() as writer:
            writer.delete_all()
        self.state.clear_files()
        self.state.set("fingerprint", wanted)
        self.state.bump_generation(None)  # every row may have changed: readers reload everything

    def rebuild(self, reason: str) -> None:
        """Empty both indexes and the state table; the next sync re-indexes every file."""
        with self._write_lock:
            log.warning("rebuilding the index: %s", reason)
            self.state.set("rebuild_reason", reason)
            self.vectors.reset()
            with self.keywords.writer() as writer:
                writer.delete_all()
            self.state.clear_files()
            self.state.bump_generation(None)  # every row may have changed: readers reload everything

    def _orphan_paths(self) -> set[str]:
        """Paths with rows in the index but no state row: left by a run killed mid-batch."""
        expected = sum(f.chunks for f in self.state.files().values())
        self.vectors.refresh()
        self.keywords.reload()
        if not self.vectors.connected and self.vectors.count() != expected:
            self.vectors.open()  # the saved snapshot's count disagrees with the state: ask the table itself
        if self.vectors.count() < expected or self.keywords.count() < expected:
            # Rows went missing (an index folder deleted or damaged): re-sync every file.
            log.warning("index holds fewer rows than its files need: re-syncing every file")
            self.state.clear_files()
            expected = 0
        if self.vectors.count() == expected and self.keywords.count() == expected:
            return set()
        known = set(self.state.files())
        orphans = self.vectors.paths() - known
        if self.keywords.count() != self.vectors.count():
            # Tantivy holds rows LanceDB does not: re-sync everything the keyword index may hold.
            orphans |= self.keywords.all_paths() - known
        return orphans

    def _cached_vectors(self, chunks: list[Chunk]) -> dict[str, np.ndarray]:
        if self.embedder is None or not chunks:
            return {}
        keys = {c.id: text_key(self.embedder, c.index_text) for c in chunks}
        # Local only: this runs under the write lock, and the backfill asks the shared tier.
        found = self.cache.get_many(list(set(keys.values())), local_only=True)
        return {cid: found[key] for cid, key in keys.items() if key in found}

    # ----- phase 2 -------------------------------------------------------------------------
    def backfill(
        self,
        progress: Progress | None = None,
        should_stop: Callable[[], bool] | None = None,
        wait: float = 0,
    ) -> int:
        """Embed chunks that have no vector yet. Returns how many got one in this call.

        When another process or thread is already embedding this workspace, waits up to
        ``wait`` seconds for it (it embeds whatever is missing, new rows included), then
        returns 0.
        """
        if self.embedder is None:
            return 0
        try:
            self._embed_lock.acquire(timeout=wait)
        except Timeout:
            log.info("another process is embedding this workspace; not embedding here")
            return 0
        try:
            return self._backfill_locked(progress, should_stop)
        finally:
            self._embed_lock.release()

    def _backfill_locked(self, progress: Progress | None, should_stop: Callable[[], bool] | None) -> int:
        assert self.embedder is not None
        batch_size = max(1, self.embedder.batch_size)
        self.vectors.refresh()
        total = self.vectors.count_missing_vectors()
        if not total and not self.vectors.connected:
            return 0  # the saved snapshot says every row has its vector: no need to open the table
        done = 0
        if progress:
            progress("embeddings", 0, total)
        while not (should_stop and should_stop()):
            self.vectors.refresh()
            rows = self.vectors.rows_missing_vectors(batch_size)
            if rows.num_rows == 0:
                break
            # cast: index_text is a non-nullable string column (chunk_schema), so no None
            texts = cast("list[str]", rows.column("index_text").to_pylist())
            paths = cast("list[str]", rows.column("path").to_pylist())
            vectors = embed_kept_private(self.embedder, self.cache, texts, [self.privacy.is_private(p) for p in paths])
            with self._write_lock:
                self.vectors.set_vectors(rows, vectors)
                # The files whose rows got vectors: readers re-read just those rows.
                self.state.bump_generation(set(cast("list[str]", rows.column("path").to_pylist())))
            done += rows.num_rows
            if progress:
                progress("embeddings", done, max(total, done))
        if done:
            # Once at the end: compacting between batches of a long backfill rewrote the growing
            # table again and again (3.5x the disk after a first index of 9,600 chunks).
            with self._write_lock:
                self.vectors.compact()
        return done


def _same(a: FileState | None, b: FileState) -> bool:
    return a is not None and a.hash == b.hash and a.mtime_ns == b.mtime_ns and a.size == b.size
