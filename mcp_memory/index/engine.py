"""``Engine``: the opened index of one workspace, kept readable.

It owns the derived parts (embedder, state, embedding cache, vectors, keywords, indexer,
searcher), opens them lazily (constructing is instant; the first call that needs the index
pays for the slow imports), refreshes the in-memory search snapshot when another process
changed the index, and rebuilds the index from the files when it cannot be read: the index
is derived data, so a folder deleted or damaged under a running process costs a rebuild,
never a failed call.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import logging
import os
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, TypeVar

from mcp_memory.config import Settings
from mcp_memory.core.folders import make_private_folder
from mcp_memory.core.hits import SearchHit
from mcp_memory.core.memory_lookup import MemoryLookup
from mcp_memory.core.privacy import PrivacyRules
from mcp_memory.core.recall import floor_for_size
from mcp_memory.core.requests import SearchRequest
from mcp_memory.core.utility import UtilityStore
from mcp_memory.core.workspace import Workspace
from mcp_memory.embedding import Embedder, EmbeddingError, create_embedder
from mcp_memory.embedding.cache import EmbeddingCache
from mcp_memory.embedding.shared import SharedVectors, shared_vectors
from mcp_memory.errors import MemoryInputError, PathError, SearchError
from mcp_memory.index import compact, large_load, saved_snapshot
from mcp_memory.index.hybrid import HybridSearcher, Ranking
from mcp_memory.index.keywords import KeywordIndex
from mcp_memory.index.memory_vectors import MemoryVectors
from mcp_memory.index.snapshot import SearchSnapshot
from mcp_memory.index.state import IndexState
from mcp_memory.index.sync import Indexer, Progress, SyncReport
from mcp_memory.index.vectors import VectorStore

if TYPE_CHECKING:
    import pyarrow as pa

log = logging.getLogger(__name__)

CONFIGURED = object()  # sentinel: build the embedder the settings name
MAX_DEGRADED = 5  # reasons kept for status
# More changed paths than this since the snapshot's generation: reload the snapshot whole
# (each 200 paths cost one scan of LanceDB's path column, and a reload reads everything once).
MAX_INCREMENTAL_PATHS = 2000
T = TypeVar("T")


class Engine:
    """The derived index of one workspace: open, searched, synced and repaired in place."""

    def __init__(self, settings: Settings, workspace: Workspace, embedder: object = CONFIGURED,
                 utility: UtilityStore | None = None):
        self.settings = settings
        self.workspace = workspace
        self.naming = MemoryLookup(workspace)  # which memory a hit names (core/memory_ids.py)
        self.utility = utility  # learned utility that search weighs in; None: not weighed
        self.privacy = PrivacyRules.from_settings(settings.privacy.private_paths)
        self.degraded: list[str] = []  # why the engine works with less than it should, newest last
        self._embedder_arg = embedder
        self._opened = False
        self._open_lock = threading.Lock()
        self._model_loading: threading.Thread | None = None
        self._generation: str | None = None  # of the search snapshot; None: load it whole
        self._snapshot_lock = threading.Lock()
        # Refresh the snapshot by the changed files' rows when possible (off: always reload it whole).
        self.incremental_snapshot = True
        self.snapshot_from_saved = False  # the snapshot was loaded from its saved copy, not from LanceDB

    # ----- opening -------------------------------------------------------------------------
    def open(self, warm: bool = False) -> Engine:
        """Open the index; ``warm`` also starts loading the model's weights in the background.

        A server opens with ``warm``: the weights load while LanceDB is imported and the index
        opened (about a second each, mostly in native code and I/O), so that a cold start pays
        about the longer of the two rather than their sum. ``warm_up`` waits for them.
        """
        with self._open_lock:
            if self._opened:
                return self
            self.workspace.ensure_exists()
            index_dir = self.settings.index_dir
            make_private_folder(index_dir)
            self.embedder = self._load_embedder()
            dims = self.embedder.dimensions if self.embedder else 0
            if warm and self._model_loading is None:
                self._model_loading = threading.Thread(target=self._warm_embedder, name="mcp-memory-warm-model",
                                                       daemon=True)
                self._model_loading.start()
            self.state = IndexState(index_dir / "state.sqlite")
            # With an object-store index_path, vectors other machines computed are a second tier.
            self.shared: SharedVectors | None = shared_vectors(self.settings, self.embedder)
            self.cache = EmbeddingCache(index_dir / "embeddings.sqlite", self.shared)
            self.vectors = VectorStore(self.settings.vector_uri, dims)
            self.keywords = KeywordIndex(index_dir / "tantivy")
            self.indexer = Indexer(
                self.settings, self.workspace, self.embedder, self.vectors, self.keywords, self.state, self.cache,
                self.privacy,
            )
            memory_vectors = MemoryVectors(self.embedder, self.cache) if self.embedder is not None else None
            self.searcher = HybridSearcher(self.keywords, self.embedder, self.settings.search, self.naming,
                                           self.utility, memory_vectors)
            self._generation = None  # the new searcher's snapshot is empty: the next search loads it whole
            self._opened = True
        return self

    @property
    def is_open(self) -> bool:
        return self._opened

    def close(self) -> None:
        if self._opened:
            self.state.close()
            self.cache.close()
            self.keywords.close()
            self._opened = False

    def _load_embedder(self) -> Embedder | None:
        if self._embedder_arg is not CONFIGURED:
            return self._embedder_arg  # type: ignore[return-value]  # an Embedder or None, from the caller
        try:
            embedder = create_embedder(self.settings.embedding)
            if embedder is not None:
                _ = embedder.dimensions  # an OpenAI-compatible endpoint may need a probe call
            return embedder
        except (EmbeddingError, OSError) as exc:
            reason = f"embedder {self.settings.embedding.provider!r} unavailable ({exc}); keyword search only"
            log.warning(reason)
            self.degraded.append(reason)
            return None

    def warm_up(self) -> None:
        """Pay one-time costs now rather than on the first search (model weights, snapshot)."""
        self.open()
        self.refresh_snapshot()
        if self._model_loading is not None:
            self._model_loading.join()  # started by open(warm=True)
        else:
            self._warm_embedder()

    def _warm_embedder(self) -> None:
        if self.embedder is not None:
            try:
                self.embedder.embed_query("warm up")
            except EmbeddingError as exc:
                self.note_degraded(f"query embedding failed: {exc}")

    # ----- indexing ------------------------------------------------------------------------
    def sync(self, progress: Progress | None = None, only: set[str] | None = None) -> SyncReport:
        """Bring keyword rows and cached vectors up to date (fast; no new embeddings)."""
        self.check_present()
        self.open()
        return self.recovering(lambda: self.indexer.sync(progress, only=only))

    def check_present(self) -> None:
        """Refuse to touch the disk once the workspace folder was removed while open.

        Writing the index would make the folder again (``.mcp-memory/`` with its tables and
        locks) seconds after its owner deleted it; the first open still makes a new workspace.
        """
        if self._opened:
            self.workspace.check_present()

    def backfill(self, progress: Progress | None = None, should_stop: Callable[[], bool] | None = None,
                 wait: float = 0) -> int:
        """Embed chunks still missing a vector (slow; resumable; one process at a time)."""
        self.check_present()
        self.open()
        try:
            return self.indexer.backfill(progress, should_stop, wait=wait)
        except EmbeddingError as exc:
            log.warning("embedding stopped: %s", exc)
            self.note_degraded(f"embedding failed: {exc}")
            return 0

    # ----- searching -----------------------------------------------------------------------
    def chunk_texts(self) -> Iterator[str]:
        """The text of every indexed chunk, evergreen files first, then daily files newest first.

        Read as the caller goes: the line vectors want only the newest lines (their default limit,
        6,000 lines, is reached within about 1,000 chunks), and a million texts read at once took seconds."""
        self.open()
        self.refresh_snapshot()
        snap = self.searcher.snapshot
        dates = list(snap.dates)  # one pass over its pieces, not a lookup per row
        newest = sorted(range(len(dates)), key=lambda row: dates[row] or dt.date.max, reverse=True)
        return (snap.text(row) for row in newest)

    def search(self, request: SearchRequest) -> list[SearchHit]:
        """Ranked hits; private files left out unless the request includes them."""
        self.open()
        self.refresh_snapshot()
        hidden = None if request.include_private else self.privacy
        try:
            return self.searcher.search(request, hidden=hidden)
        except EmbeddingError as exc:
            # The embedding endpoint is down: answer from keywords rather than fail.
            self.note_degraded(f"query embedding failed: {exc}")
            return self.searcher.search(request, use_vectors=False, hidden=hidden)

    def rank(self, request: SearchRequest, diversify: bool = True, utility: bool = True) -> Ranking:
        """Ranked rows of the current snapshot (what ``search`` turns into hits), for later stages."""
        self.open()
        self.refresh_snapshot()
        hidden = None if request.include_private else self.privacy
        try:
            return self.searcher.rank(request, hidden=hidden, diversify=diversify, utility=utility)
        except EmbeddingError as exc:
            self.note_degraded(f"query embedding failed: {exc}")
            return self.searcher.rank(request, use_vectors=False, hidden=hidden, diversify=diversify, utility=utility)

    def relevance_floor(self) -> float | None:
        """The cosine a memory needs to count as related to a prompt on meaning alone (episodes, the
        standing rules of a first recall); None without an embedder."""
        self.open()
        if self.embedder is None:
            return None
        return self.settings.recall.similarity_floor or self.embedder.relevance_floor

    def recall_floor(self) -> float | None:
        """The stricter cosine auto-recall asks of a memory it injects unasked: ``recall.similarity_floor``
        when set, else the embedder's ``recall_floor`` (else ``relevance_floor``) raised for a workspace
        of more vectors than it was chosen on, where chance reaches higher (``floor_for_size``)."""
        floor = self.relevance_floor()
        if floor is None or self.settings.recall.similarity_floor or self.embedder is None:
            return floor
        return self._for_size(self.embedder.recall_floor or floor, self.embedder)

    def topic_floor(self) -> float | None:
        """The cosine below which auto-recall takes a keyword match for chance (None: not known),
        raised as ``recall_floor`` is in a workspace of more vectors than it was chosen on: the
        match recall weighs is the closest in meaning of the many that share the prompt's words
        (on 2,541 facts, unrelated prompts came in on two common words at 0.15-0.18)."""
        self.open()
        if self.embedder is None or self.embedder.topic_floor is None:
            return None
        return self._for_size(self.embedder.topic_floor, self.embedder)

    def _for_size(self, floor: float, embedder: Embedder) -> float:
        """``floor`` for the number of vectors the search snapshot holds (``core/recall.floor_for_size``)."""
        return floor_for_size(floor, len(self.searcher.snapshot.vector_rows), embedder.noise_spread)

    def refresh_snapshot(self) -> None:
        """Bring the search snapshot up to the index generation, if that changed (any process wrote).

        When the state database knows every path changed since the snapshot's generation,
        only those paths' rows are read again; otherwise (a rebuild, a gap in the record, an
        error) the whole snapshot is reloaded. Both give the same rows.
        """
        with self._snapshot_lock:
            generation = self.state.generation
            if generation == self._generation:
                return
            if self._generation is not None and self.incremental_snapshot:
                try:
                    if self._refresh_changed_paths(self._generation):
                        return
                except Exception as exc:  # noqa: BLE001 - an optimisation: any failure means a full reload
                    log.info("reading the changed rows failed (%s): reloading the whole snapshot", exc)
            if self._generation is None and self._adopt_saved(generation):
                return
            loaded = self.recovering(lambda: self._newest_snapshot(generation))
            if loaded is None:
                return  # read into the saved file, which the search now reads
            snapshot, rows = loaded
            self.searcher.set_snapshot(snapshot)
            self._generation = generation
            self.snapshot_from_saved = False
            # A compact snapshot is saved compact: the next process loads codes and cells, not float32 to code again.
            if rows is None:
                self._save_rows(*snapshot.to_batches(self.vectors.snapshot_schema), generation)
            else:
                self._save_rows(rows.schema, iter(rows.to_batches()), generation)
            if self._texts_from_saved(snapshot, generation):
                del snapshot, rows  # the last references to the texts read from LanceDB
                saved_snapshot.release_unused_memory()

    # ----- the saved snapshot (index/saved_snapshot.py) ------------------------------------
    def adopt_saved_snapshot(self) -> None:
        """Search from the saved snapshot, before any sync, when it is of the index's generation
        (nothing is read from LanceDB); a sync then checks the index by its row counts."""
        self.open()
        with self._snapshot_lock:
            if self._generation is None:
                self._adopt_saved(self.state.generation)

    def _adopt_saved(self, generation: str) -> bool:
        """Search from the saved snapshot if it is of ``generation`` (no LanceDB read); whether it
        was. The caller holds the snapshot lock."""
        saved = self._saved_rows(generation)
        if saved is None:
            return False
        try:
            snapshot = SearchSnapshot.from_arrow(saved.rows, saved.source)
        except (ValueError, TypeError, KeyError) as exc:  # a damaged file: LanceDB has the rows
            log.info("the saved search snapshot could not be read (%s): reading the index", exc)
            # Its tag still matches, so it would never be saved over: removed, it is saved anew.
            saved_snapshot.saved_path(self.settings.index_dir).unlink(missing_ok=True)
            return False
        self.searcher.set_snapshot(snapshot)
        self._generation = generation
        self.snapshot_from_saved = True
        # The table's counts while this generation holds: start-up checks need no LanceDB.
        counts = (len(snapshot), len(snapshot) - len(snapshot.vector_rows))
        self.vectors.counts_hint = lambda: counts if self.state.generation == generation else None
        return True

    def _load_through_saved(self, generation: str, vectors: int) -> bool:
        """Read the table (``vectors`` of its rows with a vector, the compact size or more) into the
        saved file a batch at a time and search from that file (``large_load.py``); whether it did.
        Where a file in use cannot be renamed over (Windows), or when the file cannot be written,
        the caller reads the table into memory."""
        tag = self._saved_tag(generation)
        if os.name != "posix" or self.state.get("fingerprint") != tag.fingerprint:
            return False
        path = saved_snapshot.saved_path(self.settings.index_dir)
        if saved_snapshot.read_tag(path) != tag:
            centroids = large_load.centroids_of(self.vectors.vector_sample(compact.sample_positions(vectors)), vectors)
            schema = self.vectors.snapshot_schema
            try:
                saved_snapshot.save(path, *large_load.saved_batches(schema, self.vectors.snapshot_row_batches()[1],
                                                                    centroids), tag)
            except OSError as exc:  # a full disk, a read-only folder: the table is read into memory
                log.info("could not save the search snapshot (%s): reading the index into memory", exc)
                return False
            finally:
                saved_snapshot.release_unused_memory()  # what the batches held
        return self._adopt_saved(generation)

    def _texts_from_saved(self, snapshot: SearchSnapshot, generation: str) -> bool:
        """After a load from LanceDB, search on with the texts of the file just saved, mapped
        (``SearchSnapshot.text``), instead of a copy of every text held for the process's life:
        when the file holds the same rows in the same order (the snapshot lock held). Whether it did."""
        loaded = self._saved_rows(generation)
        if loaded is None or loaded.source is None or loaded.rows.num_rows != len(snapshot):
            return False
        if loaded.rows.column("id").to_pylist() != list(snapshot.ids):
            return False  # saved by another process, its rows in its own order
        self.searcher.set_snapshot(dataclasses.replace(snapshot, texts=loaded.rows.column("text"),
                                                       source=loaded.source, _text_starts=[], _text_pieces=None))
        return True

    def _saved_tag(self, generation: str) -> saved_snapshot.SavedTag:
        return saved_snapshot.SavedTag(generation, json.dumps(self.indexer.fingerprint, sort_keys=True))

    def _saved_rows(self, generation: str) -> saved_snapshot.Loaded | None:
        tag = self._saved_tag(generation)
        if self.state.get("fingerprint") != tag.fingerprint:
            return None  # the next sync rebuilds the index: nothing saved is of use
        return saved_snapshot.load(saved_snapshot.saved_path(self.settings.index_dir), tag)

    def _save_rows(self, schema: pa.Schema, batches: Iterator[pa.RecordBatch], generation: str) -> None:
        path = saved_snapshot.saved_path(self.settings.index_dir)
        tag = self._saved_tag(generation)
        try:
            if saved_snapshot.read_tag(path) != tag:
                saved_snapshot.save(path, schema, batches, tag)
        except OSError as exc:  # a cache: a full disk or a read-only folder costs the next start time
            log.info("could not save the search snapshot: %s", exc)

    def save_snapshot(self, load: bool = False) -> None:
        """Save the search snapshot, brought up to the index generation, for the next process.

        A long-running process calls this when it closes: it kept the snapshot current through
        every edit, so the next process to start can search without reading LanceDB. With
        ``load`` (after indexing), a process that never searched loads the snapshot to save it.
        """
        if not self._opened or (self._generation is None and not load):
            return  # never searched: nothing loaded to save
        self.check_present()  # a removed workspace is not made again for a cache
        self.refresh_snapshot()
        with self._snapshot_lock:
            generation, snapshot = self._generation, self.searcher.snapshot
        if generation is not None:
            self._save_rows(*snapshot.to_batches(self.vectors.snapshot_schema), generation)

    def searchable_without_sync(self) -> bool:
        """Whether searches may start before the first sync: the search snapshot came from its
        saved copy at the index's generation and no memory file changed since that index."""
        self.open()
        self.refresh_snapshot()
        return self.snapshot_from_saved and not self.indexer.files_changed()

    def _refresh_changed_paths(self, since: str) -> bool:
        """Replace the snapshot's rows of the paths changed since generation ``since``; False if unsure."""
        generation, paths = self.state.changes_since(since)
        if paths is None or len(paths) > MAX_INCREMENTAL_PATHS:
            return False
        self.refresh_handles()  # after reading the generation: the rows are at least that new
        snapshot = self.searcher.snapshot
        if paths:
            snapshot = snapshot.replace_paths(paths, self.vectors.snapshot_rows_of(paths))
        if len(snapshot) != self.vectors.count():
            # Rows changed that the record does not name (a write by a process that keeps no
            # record, rows lost under a running process): trust only a full reload.
            log.info("the changed rows do not add up to the index: reloading the whole snapshot")
            return False
        self.searcher.set_snapshot(snapshot)
        self._generation = generation
        return True

    def _newest_snapshot(self, generation: str | None = None) -> tuple[SearchSnapshot, pa.Table | None] | None:
        """The snapshot of the whole table as it is now, and the rows read (None when read compact).
        With the ``generation`` it is read at, a table of compact size goes to the saved file instead,
        which the search then reads (``_load_through_saved``): None."""
        self.refresh_handles()
        vectors = self.vectors.vector_count()
        if generation is not None and vectors >= compact.COMPACT_FROM and self._load_through_saved(generation, vectors):
            return None
        return SearchSnapshot.from_batches(self.vectors.snapshot_schema, *self.vectors.snapshot_row_batches(vectors))

    def refresh_handles(self) -> None:
        self.vectors.refresh()
        self.keywords.reload()

    # ----- recovery ------------------------------------------------------------------------
    def recovering(self, action: Callable[[], T]) -> T:
        """Run an index operation; if the index cannot be read, rebuild it from the files and retry once."""
        try:
            return action()
        except (EmbeddingError, PathError, SearchError, MemoryInputError):
            raise
        except Exception as exc:  # LanceDB and Tantivy raise plain OSError/ValueError/RuntimeError
            self.check_present()  # an index gone with its workspace is not rebuilt there
            if self._index_readable():
                raise  # the index is fine: this failure is something else, and it is reported
            self._rebuild_unreadable_index(exc)
            return action()

    def _index_readable(self) -> bool:
        try:
            self.refresh_handles()
            self.vectors.open()  # the table itself, not the counts a saved snapshot gave
            self.vectors.count()
            self.keywords.count()
        except Exception:  # noqa: BLE001 - a probe: whatever LanceDB or Tantivy raise, the index is not readable
            return False
        return True

    def _rebuild_unreadable_index(self, exc: Exception) -> None:
        log.warning("the index cannot be read (%s): reopening it and rebuilding from the files", exc)
        self.note_degraded(f"index rebuilt after a read error: {exc}")
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

    def note_degraded(self, reason: str) -> None:
        if reason not in self.degraded:
            self.degraded.append(reason)
        del self.degraded[:-MAX_DEGRADED]
