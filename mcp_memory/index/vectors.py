"""The chunk table in LanceDB: every chunk's citation data, text and (once embedded) vector.

A chunk is written as soon as its file is synced, with a null vector; the embedding
backfill fills vectors in later. So keyword search works within seconds of a first run,
and an interrupted backfill simply continues with the chunks still missing a vector.

``import lancedb`` takes over a second, so this module imports it only when the table is first used.
Its native library also stays mapped for the life of the process (tens of MB of a warm process),
so the row counts that start-up checks and status read are taken, while the table is not open,
from a caller that knows them (``counts_hint``: the search snapshot saved at the current index
generation) rather than from the table itself.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

import numpy as np
import pyarrow as pa

from mcp_memory.core.chunking import Chunk
from mcp_memory.index.snapshot import present_rows

if TYPE_CHECKING:
    from lancedb.db import DBConnection
    from lancedb.table import Table

log = logging.getLogger(__name__)
T = TypeVar("T")
# (rows, rows without a vector) of the table as it is now, or None when the caller does not know them.
CountsHint = Callable[[], "tuple[int, int] | None"]

TABLE_NAME = "chunks"

# LanceDB caches file metadata per table version (1 GB by default) and opened indexes (6 GB).
# Every small write makes a version, so a long-running server's cache grew with each store.
# Search reads an in-memory snapshot, never these caches, so small ones cost nothing.
METADATA_CACHE_BYTES = 4 * 1024 * 1024
INDEX_CACHE_BYTES = 4 * 1024 * 1024
# Every write makes a version (a store makes three); compacting merges small fragments and
# deletes old versions. It runs once this many fragments pile up, or this many versions were
# written since this handle last ran it: its cost (tens of milliseconds, a rewrite of the small
# fragments) is paid every twenty stores or so, rather than on each one.
COMPACT_AT_FRAGMENTS = 32
COMPACT_EVERY_VERSIONS = 60
# Versions older than this are deleted when compacting. Readers in other processes move to the
# newest version before each read, and a read takes well under a second, so a minute is a wide
# margin; without cleanup, every superseded version's files stayed on disk (77 MB after 300
# stores on a 2 MB table).
VERSION_RETENTION = dt.timedelta(minutes=1)
# Paths per ``path IN (...)`` filter: each filter is one scan of the path column.
PATHS_PER_FILTER = 200
SNAPSHOT_BATCH_ROWS = 16384  # rows per batch of a streamed whole-table read


def chunk_schema(dimensions: int) -> pa.Schema:
    """Arrow schema of the chunk table; no vector column in keyword-only mode (dimensions 0)."""
    fields: list[pa.Field[pa.DataType]] = [
        pa.field("id", pa.string(), nullable=False),
        pa.field("path", pa.string(), nullable=False),
        pa.field("start_line", pa.int32(), nullable=False),
        pa.field("end_line", pa.int32(), nullable=False),
        pa.field("date", pa.date32()),
        pa.field("heading", pa.string()),
        pa.field("text", pa.string(), nullable=False),
        pa.field("index_text", pa.string(), nullable=False),
    ]
    if dimensions:
        fields.append(pa.field("vector", pa.list_(pa.float32(), dimensions)))
    return pa.schema(fields)


def _sql_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


class VectorStore:
    """The LanceDB chunk table at ``uri`` (a folder or an object-store URI)."""

    def __init__(self, uri: str, dimensions: int):
        self.uri = uri
        self.dimensions = dimensions
        self.schema = chunk_schema(dimensions)
        self._handle: Table | None = None
        self._db: DBConnection | None = None
        self._compacted_at = 0
        self._connect_lock = threading.Lock()
        # While the table is not open, ``count()`` and ``count_missing_vectors()`` answer from this
        # when it knows (the engine sets it from a search snapshot loaded from its saved copy).
        self.counts_hint: CountsHint | None = None

    @property
    def _table(self) -> Table:
        """The open table, connected on first use.

        ``import lancedb`` costs over a second of CPU (it builds hundreds of pydantic models of a
        REST client we never call). A process whose search snapshot comes from its saved copy
        (``index/saved_snapshot.py``) and whose files did not change can answer searches
        without it; the first write or consistency check pays it.
        """
        if self._handle is None:
            with self._connect_lock:
                if self._handle is None:
                    import lancedb  # slow import: deferred until the table is really needed

                    session = lancedb.Session(
                        index_cache_size_bytes=INDEX_CACHE_BYTES, metadata_cache_size_bytes=METADATA_CACHE_BYTES
                    )
                    self._db = lancedb.connect(self.uri, session=session)
                    table = self._open_or_create(self._db)
                    self._compacted_at = int(table.version)
                    self._handle = table
        return self._handle

    @property
    def connected(self) -> bool:
        """Whether the table was opened (``import lancedb`` paid) by this handle."""
        return self._handle is not None

    def open(self) -> None:
        """Open the table now, so that what follows reads the table itself, not ``counts_hint``."""
        _ = self._table

    def _hinted_counts(self) -> tuple[int, int] | None:
        """The counts ``counts_hint`` gives while the table is not open; None once it is, or unknown."""
        if self._handle is not None or self.counts_hint is None:
            return None
        return self.counts_hint()

    def _open_or_create(self, db: DBConnection) -> Table:
        try:
            table = db.open_table(TABLE_NAME)
        except (FileNotFoundError, ValueError):
            return db.create_table(TABLE_NAME, schema=self.schema, exist_ok=True)
        if table.schema != self.schema:
            # A different embedding size or an older layout: the fingerprint check should have
            # caught this, but never write rows of the wrong shape.
            log.warning("chunk table layout changed: recreating it")
            return db.create_table(TABLE_NAME, schema=self.schema, mode="overwrite")
        return table

    def reset(self) -> None:
        """Drop every row (a full rebuild)."""
        _ = self._table  # connected, so that the connection exists
        assert self._db is not None
        self._handle = self._db.create_table(TABLE_NAME, schema=self.schema, mode="overwrite")
        self._compacted_at = self.version

    def refresh(self) -> None:
        """Look at the newest version (another process may have written)."""
        if self._handle is not None:  # a table not opened yet opens at its newest version
            self._handle.checkout_latest()

    @property
    def version(self) -> int:
        return int(self._table.version)

    # ----- writing (caller holds the workspace write lock) ---------------------------------
    def replace_paths(self, paths: Sequence[str], chunks: Sequence[Chunk], vectors: dict[str, np.ndarray]) -> None:
        """Delete every row of ``paths`` and add ``chunks`` (with cached vectors where known)."""
        self.refresh()  # write on top of the newest version, whoever made it
        for start in range(0, len(paths), PATHS_PER_FILTER):
            part = paths[start : start + PATHS_PER_FILTER]
            self._table.delete("path IN (" + ",".join(_sql_string(p) for p in part) + ")")
        if chunks:
            self._table.add(self._rows(chunks, vectors))

    def set_vectors(self, rows: pa.Table, vectors: np.ndarray) -> int:
        """Fill the vector of rows read by ``rows_missing_vectors``; rows deleted meanwhile stay deleted."""
        column = pa.FixedSizeListArray.from_arrays(
            pa.array(np.ascontiguousarray(vectors, np.float32).ravel()), self.dimensions
        )
        index = rows.schema.get_field_index("vector")
        rows = rows.set_column(index, self.schema.field("vector"), column)
        self.refresh()
        result = self._table.merge_insert("id").when_matched_update_all().execute(rows)
        return int(result.num_updated_rows)

    def compact(self, force: bool = False) -> bool:
        """Merge the small fragments left by many small writes and delete old versions.

        Runs when ``COMPACT_AT_FRAGMENTS`` fragments have piled up or ``COMPACT_EVERY_VERSIONS``
        versions were made since this handle last ran it (checking costs under a millisecond),
        or always with ``force``. Returns whether it ran.
        """
        try:
            # lancedb 0.40 annotates stats() as a TableStatistics, but it returns a dict
            fragments = int(self._table.stats()["fragment_stats"]["num_fragments"])  # type: ignore[index]
            due = fragments >= COMPACT_AT_FRAGMENTS or self.version - self._compacted_at >= COMPACT_EVERY_VERSIONS
            if not (due or force):
                return False
            self._table.optimize(cleanup_older_than=VERSION_RETENTION)
            self._compacted_at = self.version
            return True
        except Exception as exc:  # noqa: BLE001 - compaction is an optimisation, never a reason to fail a write
            log.warning("LanceDB compaction failed: %s", exc)
            return False

    # ----- reading -------------------------------------------------------------------------
    # Each read runs at the version this handle last saw. If another process's compaction has
    # deleted that version's files since (a handle idle for over VERSION_RETENTION), the read
    # fails; it is then retried once on the newest version.
    def count(self, where: str | None = None) -> int:
        hinted = self._hinted_counts() if where is None else None
        if hinted is not None:
            return hinted[0]
        return int(self._reading(lambda: self._table.count_rows(where)))

    def paths(self) -> set[str]:
        """Distinct file paths that have rows."""
        # cast: path is a non-nullable string column (chunk_schema), so no None
        return set(cast("list[str]", self._all_rows(["path"]).column("path").to_pylist()))

    def ids_and_paths(self) -> pa.Table:
        """The id and path of every row (consistency checks)."""
        return self._all_rows(["id", "path"])

    def count_missing_vectors(self) -> int:
        if not self.dimensions:
            return 0
        hinted = self._hinted_counts()
        return hinted[1] if hinted is not None else self.count("vector IS NULL")

    def rows_missing_vectors(self, limit: int) -> pa.Table:
        return self._reading(lambda: self._table.search().where("vector IS NULL").limit(limit).to_arrow())

    def to_arrow(self) -> pa.Table:
        """Every row and column."""
        return self._reading(lambda: self._table.to_arrow())

    @property
    def snapshot_columns(self) -> list[str]:
        """The columns search keeps in memory (not index_text or heading)."""
        return ["id", "path", "start_line", "end_line", "date", "text"] + (["vector"] if self.dimensions else [])

    @property
    def snapshot_schema(self) -> pa.Schema:
        return pa.schema([self.schema.field(name) for name in self.snapshot_columns])

    def vector_count(self) -> int:
        """How many rows have a vector (none without an embedder)."""
        return self.count() - self.count_missing_vectors() if self.dimensions else 0

    def snapshot_row_batches(self, with_vectors: int | None = None) -> tuple[int, Iterator[pa.RecordBatch]]:
        """How many rows have a vector (``with_vectors`` when the caller counted them), and every row
        with the snapshot columns, in batches.

        For a large table: its vectors are coded batch by batch (``SearchSnapshot.from_batches``)
        instead of being held whole in float32 first (2 GB at a million chunks).
        """
        columns = self.snapshot_columns

        def read() -> tuple[int, Iterator[pa.RecordBatch]]:
            total = int(self._table.count_rows())
            if total == 0:
                return 0, iter(())
            counted = total - self.count_missing_vectors() if with_vectors is None else with_vectors
            reader = self._table.search().select(columns).limit(total).to_batches(SNAPSHOT_BATCH_ROWS)
            return counted, iter(reader)

        return self._reading(read)

    def vector_sample(self, places: np.ndarray) -> np.ndarray:
        """The float32 vectors at ``places`` (sorted) among the rows that have one, in the order
        ``snapshot_row_batches`` gives them: a scan of the vector column alone, a batch at a time."""
        dims = self.dimensions

        def read() -> np.ndarray:
            out = np.empty((len(places), dims), np.float32)
            total = int(self._table.count_rows())
            if total == 0 or not len(places):
                return out[:0]
            seen = taken = 0
            for batch in self._table.search().select(["vector"]).limit(total).to_batches(SNAPSHOT_BATCH_ROWS):
                values = present_rows(batch.column("vector"))
                end = int(np.searchsorted(places, seen + len(values)))
                out[taken:end] = values[places[taken:end] - seen]
                taken, seen = end, seen + len(values)
            return out[:taken]

        return self._reading(read)

    def snapshot_rows_of(self, paths: Collection[str]) -> pa.Table:
        """The rows of ``paths`` (all read at this handle's version), with the snapshot columns."""
        columns = self.snapshot_columns
        wanted = sorted(set(paths))

        def read() -> pa.Table:
            parts = [self.schema.empty_table().select(columns)]
            for start in range(0, len(wanted), PATHS_PER_FILTER):
                where = "path IN (" + ",".join(_sql_string(p) for p in wanted[start : start + PATHS_PER_FILTER]) + ")"
                # limit(None): a plain (non-vector) query returns every matching row
                parts.append(self._table.search().where(where).select(columns).limit(None).to_arrow())
            return pa.concat_tables(parts)

        return self._reading(read)

    def _all_rows(self, columns: list[str]) -> pa.Table:
        def read() -> pa.Table:
            total = int(self._table.count_rows())
            if total == 0:
                return self.schema.empty_table().select(columns)
            return self._table.search().select(columns).limit(total).to_arrow()

        return self._reading(read)

    def _reading(self, read: Callable[[], T]) -> T:
        try:
            return read()
        except Exception as exc:  # noqa: BLE001 - LanceDB raises RuntimeError("lance error: Not found: ...")
            log.info("reading the chunk table failed (%s): retrying on the newest version", exc)
            self.refresh()
            return read()

    def _rows(self, chunks: Sequence[Chunk], vectors: dict[str, np.ndarray]) -> pa.Table:
        columns: dict[str, Any] = {
            "id": [c.id for c in chunks],
            "path": [c.path for c in chunks],
            "start_line": [c.start_line for c in chunks],
            "end_line": [c.end_line for c in chunks],
            "date": [c.date for c in chunks],
            "heading": [" > ".join(c.heading_path) for c in chunks],
            "text": [c.text for c in chunks],
            "index_text": [c.index_text for c in chunks],
        }
        if self.dimensions:
            flat = np.zeros((len(chunks), self.dimensions), np.float32)
            missing = np.ones(len(chunks), bool)
            for i, chunk in enumerate(chunks):
                if chunk.id in vectors:
                    flat[i] = vectors[chunk.id]
                    missing[i] = False
            columns["vector"] = pa.FixedSizeListArray.from_arrays(
                pa.array(flat.ravel()), self.dimensions, mask=pa.array(missing)
            )
        return pa.Table.from_pydict(columns, schema=self.schema)
