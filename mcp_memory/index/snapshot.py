"""``SearchSnapshot``: the chunk table of one index generation, held in memory for search.

The vectors and chunk metadata live in memory as a snapshot of the LanceDB table, refreshed
whenever the index generation changes: only the rows of the files changed since (see
``SearchSnapshot.replace_paths``), or all of them when that is not known. Exact cosine search
over a numpy matrix is faster than an ANN index at the sizes a memory reaches (and needs no
minutes-long index build).

The vectors are held as a list of read-only blocks of at most ``BLOCK_ROWS`` rows rather than
one matrix: a snapshot made by ``replace_paths`` shares every block the change left alone with
the snapshot it was made from (which searches in other threads may still be reading), takes the
kept rows of a touched block as views of it, and adds only the new rows. So a refresh after an
edit copies no old vectors and needs no memory for a second matrix. Now and then a few small
blocks are joined, so their number stays bounded (see ``_joined``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Collection, Sized
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar, cast

import numpy as np
import pyarrow as pa

from mcp_memory.core.privacy import PrivacyRules
from mcp_memory.core.scopes import ScopeFilter

if TYPE_CHECKING:
    from mcp_memory.core.chunking import Chunk

PieceT = TypeVar("PieceT", bound=Sized)

# Pieces the text column may be split into by replace_paths before small neighbours are
# joined (more with over MAX_TEXT_PIECES * TEXT_PIECE_ROWS / 2 rows: see _joined).
MAX_TEXT_PIECES = 512
TEXT_PIECE_ROWS = 1024  # the rows of a text chunk as LanceDB returns them
# Rows of a vector block as loaded. Large enough that a scan spends its time in the matrix
# products, not in calling them; small enough that joining two blocks costs little.
BLOCK_ROWS = 4096
# Vector blocks a snapshot may hold before small neighbours are joined (more with over
# MAX_BLOCKS * BLOCK_ROWS / 2 vectors, so that a join copies at most BLOCK_ROWS: see _joined).
MAX_BLOCKS = 64


@dataclass
class SearchSnapshot:
    """Chunk metadata and vectors of one index generation, held in memory for fast search."""

    ids: list[str]
    paths: list[str]
    start_lines: np.ndarray
    end_lines: np.ndarray
    dates: list[dt.date | None]
    texts: pa.ChunkedArray[pa.StringScalar]
    row_of: dict[str, int]
    blocks: tuple[np.ndarray, ...]  # read-only (k, d) float32 matrices, one after another the vectors of vector_rows
    vector_rows: np.ndarray  # row numbers that have a vector, ascending
    has_vector: np.ndarray  # per row: True when the row has a vector
    terms: dict[int, frozenset[str]] = field(default_factory=dict)  # analysed terms by row, filled lazily
    hidden: dict[PrivacyRules, np.ndarray] = field(default_factory=dict)  # rows of private files, by rules
    scoped: dict[ScopeFilter, np.ndarray | None] = field(default_factory=dict)  # rows each scope filter covers

    def hidden_mask(self, rules: PrivacyRules) -> np.ndarray:
        """Rows of the files ``rules`` call private (computed once per snapshot and rules)."""
        mask = self.hidden.get(rules)
        if mask is None:
            by_path = {p: rules.is_private(p) for p in set(self.paths)}
            mask = self.hidden[rules] = np.array([by_path[p] for p in self.paths], bool)
        return mask

    def scope_mask(self, scopes: ScopeFilter) -> np.ndarray | None:
        """Rows of the files ``scopes`` covers; None when it covers every row, so that a workspace
        without scopes searches as before (computed once per snapshot and filter)."""
        if scopes not in self.scoped:
            by_path = {p: scopes.covers(p) for p in set(self.paths)}
            self.scoped[scopes] = None if all(by_path.values()) else np.array([by_path[p] for p in self.paths], bool)
        return self.scoped[scopes]

    def similarities(self, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The rows that have a vector, and the dot product of each one's vector with ``query``.

        Empty when no row has a vector or ``query`` has another size than the vectors. One
        product per block, written straight into the result. ``einsum`` rather than BLAS: it
        sums each row alike wherever the row sits (BLAS does not, so a refreshed snapshot could
        score a row a hair differently from a reloaded one), it runs in the calling thread (a
        multi-threaded BLAS call per block waits for a second core each time, milliseconds on a
        busy machine), and a scan of 100k x 512 takes about 10 ms with it, no more than BLAS.
        """
        if not self.blocks or query.shape != (self.blocks[0].shape[1],):
            return self.vector_rows[:0], np.zeros(0, np.float32)
        sims = np.empty(len(self.vector_rows), np.result_type(self.blocks[0], query))
        at = 0
        for block in self.blocks:
            np.einsum("ij,j->i", block, query, out=sims[at : at + len(block)])
            at += len(block)
        return self.vector_rows, sims

    def vector(self, row: int) -> np.ndarray | None:
        """The vector of ``row`` as stored (None when it has none): a query that finds its neighbours."""
        if not self.has_vector[row]:
            return None
        at = int(np.searchsorted(self.vector_rows, row))
        for block in self.blocks:
            if at < len(block):
                found: np.ndarray = block[at]
                return found
            at -= len(block)
        return None

    @classmethod
    def from_arrow(cls, table: pa.Table) -> SearchSnapshot:
        # cast: id and path are non-nullable string columns (chunk_schema), so no None
        ids = cast("list[str]", table.column("id").to_pylist())
        has_vector, blocks = _arrow_vectors(table)
        return cls(
            ids=ids,
            paths=cast("list[str]", table.column("path").to_pylist()),
            start_lines=table.column("start_line").to_numpy(),
            end_lines=table.column("end_line").to_numpy(),
            dates=table.column("date").to_pylist(),
            texts=table.column("text"),
            row_of={cid: i for i, cid in enumerate(ids)},
            blocks=blocks,
            vector_rows=np.flatnonzero(has_vector),
            has_vector=has_vector,
        )

    def replace_paths(self, paths: Collection[str], rows: pa.Table) -> SearchSnapshot:
        """A new snapshot: this one without its rows of ``paths``, plus ``rows`` (their rows now).

        ``rows`` has the columns of ``from_arrow`` and holds only rows of ``paths`` (a path
        with none was deleted). Reloading a whole index of 100k chunks takes seconds; after an
        edit of one file this takes tens of milliseconds. This snapshot is left unchanged
        (searches in other threads may still be reading it). The kept rows stay in order and
        the new ones follow; the term and privacy caches move along with their rows. Vector
        blocks without a replaced row are shared with this snapshot (see the module docstring).
        """
        gone = set(paths)
        # cast: path is a non-nullable string column (chunk_schema), so no None
        new_paths = cast("list[str]", rows.column("path").to_pylist())
        if not gone.issuperset(new_paths):
            raise ValueError("replace_paths: rows of paths that are not being replaced")
        keep = np.fromiter((p not in gone for p in self.paths), bool, len(self.paths))
        runs = _runs(keep)

        ids: list[str] = []
        kept_paths: list[str] = []
        dates: list[dt.date | None] = []
        texts: list[pa.Array[Any]] = []
        for start, end in runs:
            ids.extend(self.ids[start:end])
            kept_paths.extend(self.paths[start:end])
            dates.extend(self.dates[start:end])
            texts.extend(self.texts.slice(start, end - start).chunks)  # zero-copy views
        # cast: id is a non-nullable string column (chunk_schema), so no None
        ids.extend(cast("list[str]", rows.column("id").to_pylist()))
        kept_paths.extend(new_paths)
        dates.extend(rows.column("date").to_pylist())
        texts.extend(rows.column("text").cast(self.texts.type).chunks)
        # Each edit splits the column into more views; joining all of them at once would copy
        # every text (over 100 MB at 100k chunks), so only the smallest neighbours are joined.
        text_limit = max(MAX_TEXT_PIECES, 2 * -(-len(ids) // TEXT_PIECE_ROWS))
        text_column = pa.chunked_array(_joined(texts, text_limit, pa.concat_arrays), self.texts.type)

        new_has_vector, new_blocks = _arrow_vectors(rows)
        has_vector = np.concatenate([self.has_vector[keep], new_has_vector])
        blocks = self._blocks_after(keep, new_blocks)

        terms, hidden = self._caches_after(keep, new_paths)
        return SearchSnapshot(
            ids=ids,
            paths=kept_paths,
            start_lines=np.concatenate([self.start_lines[keep], rows.column("start_line").to_numpy()]),
            end_lines=np.concatenate([self.end_lines[keep], rows.column("end_line").to_numpy()]),
            dates=dates,
            texts=text_column,
            row_of=self._row_of_after(keep, ids),
            blocks=blocks,
            vector_rows=np.flatnonzero(has_vector),
            has_vector=has_vector,
            terms=terms,
            hidden=hidden,
        )

    def _caches_after(self, keep: np.ndarray,
                      new_paths: list[str]) -> tuple[dict[int, frozenset[str]], dict[PrivacyRules, np.ndarray]]:
        """The term and privacy caches of the kept rows at their new places, and the new rows' privacy."""
        new_row = np.cumsum(keep) - 1  # where each kept row lands
        terms = {int(new_row[row]): found for row, found in dict(self.terms).items() if keep[row]}
        hidden = {}
        for rules, mask in dict(self.hidden).items():
            private = {p: rules.is_private(p) for p in set(new_paths)}
            hidden[rules] = np.concatenate([mask[keep], np.array([private[p] for p in new_paths], bool)])
        return terms, hidden

    def _blocks_after(self, keep: np.ndarray, new_blocks: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
        """The vector blocks ``replace_paths`` makes: this one's kept rows in order, then ``new_blocks``.

        A block with every row kept is this snapshot's own; a block that lost rows becomes
        views of its stretches of kept rows. Neither copies a vector.
        """
        if new_blocks and self.blocks and new_blocks[0].shape[1] != self.blocks[0].shape[1]:
            raise ValueError("replace_paths: the new rows' vectors have another size")
        kept = keep[self.vector_rows]  # per vector, in block order
        pieces: list[np.ndarray] = []
        at = 0
        for block in self.blocks:
            mask = kept[at : at + len(block)]
            at += len(block)
            if mask.all():
                pieces.append(block)
            else:
                pieces.extend(block[start:end] for start, end in _runs(mask))  # views of a read-only block
        pieces.extend(new_blocks)
        # Every block costs a call per search: past the limit, small neighbours are joined.
        limit = max(MAX_BLOCKS, 2 * -(-sum(len(piece) for piece in pieces) // BLOCK_ROWS))
        return tuple(_joined(pieces, limit, _stacked))

    @classmethod
    def from_chunks(cls, chunks: list[Chunk]) -> SearchSnapshot:
        """A snapshot of a few chunks without vectors (keyword-only recall, no vector index opened)."""
        return cls.from_arrow(pa.table({
            "id": pa.array([c.id for c in chunks], pa.string()),
            "path": pa.array([c.path for c in chunks], pa.string()),
            "start_line": pa.array([c.start_line for c in chunks], pa.int32()),
            "end_line": pa.array([c.end_line for c in chunks], pa.int32()),
            "date": pa.array([c.date for c in chunks], pa.date32()),
            "text": pa.array([c.text for c in chunks], pa.string()),
        }))

    @classmethod
    def empty(cls) -> SearchSnapshot:
        return cls([], [], np.zeros(0, np.int32), np.zeros(0, np.int32), [], pa.chunked_array([], pa.string()),
                   {}, (), np.zeros(0, np.int64), np.zeros(0, bool))

    def _row_of_after(self, keep: np.ndarray, ids: list[str]) -> dict[str, int]:
        """``row_of`` for the rows ``ids`` that ``replace_paths`` makes of the rows ``keep`` marks.

        Rows before the first one removed keep their numbers. When that is most of them (an
        edited file whose rows were appended by an earlier refresh, as a daily file written
        again and again), patching a copy is several times faster than building anew.
        """
        dropped = np.flatnonzero(~keep)
        first = int(dropped[0]) if len(dropped) else len(keep)
        if first >= len(keep) // 2 and len(self.row_of) == len(self.ids):
            row_of = self.row_of.copy()
            for cid in self.ids[first:]:
                del row_of[cid]
            row_of.update(zip(ids[first:], range(first, len(ids)), strict=True))
            if len(row_of) == len(ids):
                return row_of
        return dict(zip(ids, range(len(ids)), strict=True))  # a repeated id: the last row wins

    def __len__(self) -> int:
        return len(self.ids)

    def to_arrow(self, schema: pa.Schema) -> pa.Table:
        """The rows again as a table of ``schema`` (the columns ``from_arrow`` reads), to be saved."""
        columns: dict[str, Any] = {
            "id": self.ids,
            "path": self.paths,
            "start_line": self.start_lines,
            "end_line": self.end_lines,
            "date": pa.array(self.dates, pa.date32()),
            "text": self.texts.combine_chunks() if self.texts.num_chunks else pa.array([], pa.string()),
        }
        if "vector" in schema.names:
            dims = cast("pa.FixedSizeListType[Any, int]", schema.field("vector").type).list_size
            flat = np.zeros((len(self.ids), dims), np.float32)
            if self.blocks:
                flat[self.vector_rows] = np.concatenate(self.blocks)
            columns["vector"] = pa.FixedSizeListArray.from_arrays(
                pa.array(flat.ravel()), dims, mask=pa.array(~self.has_vector))
        return pa.Table.from_pydict(columns, schema=schema)


def _arrow_vectors(table: pa.Table) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """Per row whether it has a vector, and the vectors of those that have one, in blocks.

    Every block but the last holds ``BLOCK_ROWS`` vectors; each is read-only, so that snapshots
    can share it.
    """
    has_vector = np.zeros(table.num_rows, bool)
    if "vector" not in table.column_names or table.num_rows == 0:
        return has_vector, ()
    # cast: the vector column is a fixed-size list of float32 (chunk_schema)
    column = cast("pa.ChunkedArray[pa.FixedSizeListScalar[Any, int]]", table.column("vector"))
    has_vector = np.concatenate([np.asarray(chunk.is_valid()) for chunk in column.chunks])
    count = int(has_vector.sum())
    dims = column.type.list_size
    blocks = [np.empty((min(BLOCK_ROWS, count - start), dims), np.float32) for start in range(0, count, BLOCK_ROWS)]
    # Chunk by chunk straight into the blocks: no whole-column copy on the way.
    at = 0
    for chunk in column.chunks:
        flat = cast("pa.FixedSizeListArray[Any, int]", chunk).flatten()  # the non-null rows' values
        values = flat.to_numpy(zero_copy_only=False).reshape(-1, dims)
        done = 0
        while done < len(values):
            index, offset = divmod(at, BLOCK_ROWS)
            n = min(len(values) - done, BLOCK_ROWS - offset)
            blocks[index][offset : offset + n] = values[done : done + n]
            done += n
            at += n
    for block in blocks:
        block.flags.writeable = False
    return has_vector, tuple(blocks)


def _joined(pieces: list[PieceT], limit: int, join: Callable[[list[PieceT]], PieceT]) -> list[PieceT]:
    """``pieces`` without empty ones, the smallest two neighbours joined while there are over ``limit``.

    Each replacement adds a piece or two (the new rows; a touched piece cut in two), so their
    count would grow without end. The callers set ``limit`` to at least twice the number of
    full pieces (``BLOCK_ROWS`` or ``TEXT_PIECE_ROWS`` rows) that all rows fill: past it the
    pieces average under half a full one, so the smallest neighbours hold at most a full
    piece's rows. One join copies that much at most (a few megabytes, never the whole
    column), and a replacement needs about as many joins as it added pieces.
    """
    pieces = [piece for piece in pieces if len(piece)]
    while len(pieces) > limit:
        sizes = np.array([len(piece) for piece in pieces])
        i = int(np.argmin(sizes[:-1] + sizes[1:]))
        pieces[i : i + 2] = [join(pieces[i : i + 2])]
    return pieces


def _stacked(blocks: list[np.ndarray]) -> np.ndarray:
    """One read-only block of the rows of ``blocks``."""
    block = np.concatenate(blocks)
    block.flags.writeable = False
    return block


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """The (start, end) of each stretch of True in ``mask``."""
    edges = np.flatnonzero(np.diff(np.concatenate([[False], mask, [False]]).astype(np.int8)))
    return [(int(start), int(end)) for start, end in edges.reshape(-1, 2)]
