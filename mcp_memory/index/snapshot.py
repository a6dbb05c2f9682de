"""``SearchSnapshot``: the chunk table of one index generation, held in memory for search.

The vectors and chunk metadata live in memory as a snapshot of the LanceDB table, refreshed
whenever the index generation changes: only the rows of the files changed since (see
``SearchSnapshot.replace_paths``), or all of them when that is not known. Exact cosine search
over numpy matrices is fast enough up to a few hundred thousand chunks (and needs no
minutes-long index build); past that, see "compact" below.

The vectors are held as a list of read-only blocks of at most ``BLOCK_ROWS`` rows rather than
one matrix: a snapshot made by ``replace_paths`` shares every block the change left alone with
the snapshot it was made from (which searches in other threads may still be reading), takes the
kept rows of a touched block as views of it, and adds only the new rows. So a refresh after an
edit copies no old vectors and needs no memory for a second matrix. Now and then a few small
blocks are joined, so their number stays bounded (see ``row_list.joined``). The ids, paths and
dates are held alike, as shared pieces of Python lists (``index/row_list.py``), and the numpy
columns are cut by the stretches of rows an edit keeps (``KeptRows``): so an edit of one file
costs about its own rows, plus a memory copy of the small per-row arrays, whatever the size of
the workspace.

From ``compact.COMPACT_FROM`` vectors on, a snapshot is compact (``index/compact.py``): its
blocks hold int8 codes (with ``scales``, one per vector) instead of float32, each vector has a
cell, and a search scores only the vectors of the cells closest to the query (``nearest``). A
snapshot that grows past the size by refreshes becomes compact at that refresh.
"""

from __future__ import annotations

import base64
import bisect
import datetime as dt
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pyarrow as pa

from mcp_memory.core.privacy import PrivacyRules
from mcp_memory.core.scopes import ScopeFilter
from mcp_memory.index import compact
from mcp_memory.index.row_index import RowIndex
from mcp_memory.index.row_list import KeptRows, RowList, joined
from mcp_memory.index.saved_snapshot import MappedFile

if TYPE_CHECKING:
    from mcp_memory.core.chunking import Chunk

# Pieces the text column may be split into by replace_paths before small neighbours are
# joined (more with over MAX_TEXT_PIECES * TEXT_PIECE_ROWS / 2 rows: see row_list.joined).
MAX_TEXT_PIECES = 512
TEXT_PIECE_ROWS = 1024  # the rows of a text chunk as LanceDB returns them
# Rows of a vector block as loaded. Large enough that a scan spends its time in the matrix
# products, not in calling them; small enough that joining two blocks costs little.
BLOCK_ROWS = 4096
# Vector blocks a snapshot may hold before small neighbours are joined (more with over
# MAX_BLOCKS * BLOCK_ROWS / 2 vectors, so that a join copies at most BLOCK_ROWS: see row_list.joined).
MAX_BLOCKS = 64
# The columns and schema metadata a compact snapshot is saved with (``to_arrow``, ``from_arrow``).
CODES_COLUMN, SCALE_COLUMN, CELL_COLUMN = "vector_codes", "vector_scale", "vector_cell"
CENTROIDS_KEY, CENTROID_SHAPE_KEY = b"mcp_memory.centroids", b"mcp_memory.centroid_shape"


@dataclass
class SearchSnapshot:
    """Chunk metadata and vectors of one index generation, held in memory for fast search."""

    # Per row, in shared pieces (``index/row_list.py``): an edit copies the rows it touches, not the list.
    ids: RowList[str]
    paths: RowList[str]
    start_lines: np.ndarray
    end_lines: np.ndarray
    dates: RowList[dt.date | None]
    texts: pa.ChunkedArray[pa.StringScalar]
    row_of: RowIndex  # row by chunk id
    # read-only (k, d) matrices, one after another the vectors of vector_rows: float32, or int8 codes when compact
    blocks: tuple[np.ndarray, ...]
    vector_rows: np.ndarray  # row numbers that have a vector, ascending
    has_vector: np.ndarray  # per row: True when the row has a vector
    terms: dict[int, frozenset[str]] = field(default_factory=dict)  # analysed terms by row, filled lazily
    hidden: dict[PrivacyRules, np.ndarray] = field(default_factory=dict)  # rows of private files, by rules
    scoped: dict[ScopeFilter, np.ndarray | None] = field(default_factory=dict)  # rows each scope filter covers
    # Compact snapshots only: per block, each code row's scale; per vector, its cell; the cells' centroids.
    scales: tuple[np.ndarray, ...] = ()
    cells: np.ndarray | None = None
    centroids: np.ndarray | None = None
    # Per row a number for its path, and the numbers by path: which rows an edit replaces, found in numpy.
    path_codes: np.ndarray | None = field(default=None, repr=False)
    path_code_of: dict[str, int] = field(default_factory=dict, repr=False)
    _cell_sizes: np.ndarray | None = field(default=None, repr=False)
    _block_ends: np.ndarray | None = field(default=None, repr=False)
    # The saved file the texts are mapped from (``index/saved_snapshot.py``), or None: texts there are
    # read with ``pread`` (``text``), so that what search reads stays out of the process's memory.
    source: MappedFile | None = field(default=None, repr=False)
    _text_starts: list[int] = field(default_factory=list, repr=False)  # first row of each texts chunk
    _text_pieces: list[_TextPiece | None] | None = field(default=None, repr=False)  # see _text_pieces

    def text(self, row: int) -> str:
        """The text of ``row``'s chunk."""
        source = self.source
        if source is None:
            return self.texts[row].as_py()
        if self._text_pieces is None:
            self._text_starts, self._text_pieces = _text_pieces(self.texts, source)
        at, index = row, 0
        if len(self._text_pieces) > 1:
            index = bisect.bisect_right(self._text_starts, row) - 1
            at = row - self._text_starts[index]
        piece = self._text_pieces[index]
        if piece is None:  # an edit's new rows, in memory
            return self.texts.chunk(index)[at].as_py()
        address, ends, offset = piece
        start = ends[offset + at]
        return source.read(address + start, ends[offset + at + 1] - start).decode("utf-8")

    @property
    def compact(self) -> bool:
        """Whether the vectors are held as int8 codes in cells (``index/compact.py``)."""
        return self.centroids is not None

    def hidden_mask(self, rules: PrivacyRules) -> np.ndarray:
        """Rows of the files ``rules`` call private (computed once per snapshot and rules; an edit's
        snapshot carries it over, see ``_caches_after``)."""
        mask = self.hidden.get(rules)
        if mask is None:
            mask = self.hidden[rules] = self.per_path(rules.is_private)
        return mask

    def scope_mask(self, scopes: ScopeFilter) -> np.ndarray | None:
        """Rows of the files ``scopes`` covers; None when it covers every row, so that a workspace
        without scopes searches as before (computed once per snapshot and filter; carried over
        like ``hidden_mask``)."""
        if scopes not in self.scoped:
            mask = self.per_path(scopes.covers)
            self.scoped[scopes] = None if mask.all() else mask
        return self.scoped[scopes]

    def per_path(self, of_path: Callable[[str], bool]) -> np.ndarray:
        """Per row ``of_path`` of its path, asked once per path (a filter by file, not by row)."""
        if self.path_codes is None:
            by_path = {p: of_path(p) for p in set(self.paths)}
            return np.array([by_path[p] for p in self.paths], bool)
        # path_code_of holds the paths in code order (codes are given in order of first sight)
        by_code = np.array([of_path(p) for p in self.path_code_of], bool)
        return by_code[self.path_codes] if len(self.path_codes) else np.zeros(0, bool)

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
        if self.compact:
            query = query.astype(np.float32, copy=False)
            sims = np.empty(len(self.vector_rows), np.float32)
            at = 0
            for block, scale in zip(self.blocks, self.scales, strict=True):
                np.einsum("ij,j->i", block.astype(np.float32), query, out=sims[at : at + len(block)])
                sims[at : at + len(block)] *= scale
                at += len(block)
            return self.vector_rows, sims
        sims = np.empty(len(self.vector_rows), np.result_type(self.blocks[0], query))
        at = 0
        for block in self.blocks:
            np.einsum("ij,j->i", block, query, out=sims[at : at + len(block)])
            at += len(block)
        return self.vector_rows, sims

    def nearest(self, query: np.ndarray, pool: int, allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Up to ``pool`` rows (of those ``allowed`` marks; None: all) whose vectors are closest to ``query``,
        and their dot products, in no particular order.

        Exact below the compact size: every vector is scored. A compact snapshot scores the
        vectors of the cells closest to the query (more cells while a filter leaves fewer than
        ``pool`` of them; every allowed vector when a filter leaves few), from their codes.
        """
        if not self.compact:
            rows, sims = self.similarities(query)
            if allowed is not None:
                keep = allowed[rows]
                sims, rows = sims[keep], rows[keep]
            return _top(rows, sims, pool)
        if query.shape != (self.blocks[0].shape[1],):
            return self.vector_rows[:0], np.zeros(0, np.float32)
        query = query.astype(np.float32, copy=False)
        assert self.cells is not None and self.centroids is not None
        allowed_vectors = None if allowed is None else allowed[self.vector_rows]
        target = compact.candidate_target(len(self.vector_rows))
        if allowed_vectors is not None and int(allowed_vectors.sum()) <= target:
            positions = np.flatnonzero(allowed_vectors)  # a narrow filter: score every vector it leaves
        else:
            centroid_scores = np.einsum("ij,j->i", self.centroids, query)
            sizes = self.cell_sizes()
            while True:
                chosen = np.zeros(len(self.centroids), bool)
                chosen[compact.probed_cells(centroid_scores, sizes, target)] = True
                mask = chosen[self.cells]
                if allowed_vectors is not None:
                    mask &= allowed_vectors
                if int(mask.sum()) >= pool or chosen.all():
                    break
                target *= 4  # a filter left too few in the closest cells: look further
            positions = np.flatnonzero(mask)
        return _top(self.vector_rows[positions], self._scores_at(positions, query), pool)

    def cell_sizes(self) -> np.ndarray:
        """How many vectors each cell holds (computed once per snapshot)."""
        assert self.cells is not None and self.centroids is not None
        if self._cell_sizes is None:
            self._cell_sizes = np.bincount(self.cells, minlength=len(self.centroids))
        return self._cell_sizes

    def _scores_at(self, positions: np.ndarray, query: np.ndarray) -> np.ndarray:
        """The dot products with ``query`` of the vectors at ``positions`` (ascending), from their codes."""
        if self._block_ends is None:
            self._block_ends = np.cumsum([len(block) for block in self.blocks])
        ends = self._block_ends
        cuts = np.searchsorted(positions, ends)  # where each block's positions end
        sims = np.empty(len(positions), np.float32)
        lo = 0
        for index, hi in enumerate(cuts):
            if hi > lo:
                local = positions[lo:hi] - (ends[index] - len(self.blocks[index]))
                np.einsum("ij,j->i", self.blocks[index][local].astype(np.float32), query, out=sims[lo:hi])
                sims[lo:hi] *= self.scales[index][local]
            lo = int(hi)
        return sims

    def vector(self, row: int) -> np.ndarray | None:
        """The vector of ``row`` as stored, float32 (read back from its codes when compact; None when it
        has none): a query that finds its neighbours."""
        if not self.has_vector[row]:
            return None
        at = int(np.searchsorted(self.vector_rows, row))
        for index, block in enumerate(self.blocks):
            if at < len(block):
                found: np.ndarray = block[at]
                if self.compact:
                    found = compact.decoded(block[at : at + 1], self.scales[index][at : at + 1])[0]
                return found
            at -= len(block)
        return None

    @classmethod
    def from_arrow(cls, table: pa.Table, source: MappedFile | None = None) -> SearchSnapshot:
        """The snapshot of ``table``: LanceDB's rows (float32 ``vector``), or a saved snapshot's
        (``to_arrow``: float32, or the codes, cells and centroids of a compact one), mapped from
        ``source`` when given.

        Raises ValueError when compact columns do not fit together (a damaged file).
        """
        # cast: id and path are non-nullable string columns (chunk_schema), so no None
        ids = cast("list[str]", table.column("id").to_pylist())
        path_codes, path_code_of = _path_codes(table.column("path"))
        if CODES_COLUMN in table.column_names:
            has_vector, vectors = _saved_codes(table)
        else:
            has_vector, blocks, scales = _arrow_vectors(table)
            vectors = _Vectors(blocks, scales)
            if scales:
                vectors = _with_cells(vectors)
        return cls(
            ids=RowList.of(ids),
            paths=RowList.of(cast("list[str]", table.column("path").to_pylist())),
            start_lines=table.column("start_line").to_numpy(),
            end_lines=table.column("end_line").to_numpy(),
            dates=RowList.of(table.column("date").to_pylist()),
            texts=table.column("text"),
            row_of=RowIndex.of(ids),
            blocks=vectors.blocks,
            vector_rows=np.flatnonzero(has_vector),
            has_vector=has_vector,
            scales=vectors.scales,
            cells=vectors.cells,
            centroids=vectors.centroids,
            path_codes=path_codes,
            path_code_of=path_code_of,
            source=source,
        )

    @classmethod
    def from_batches(cls, schema: pa.Schema, vectors: int, batches: Iterator[pa.RecordBatch],
                     ) -> tuple[SearchSnapshot, pa.Table | None]:
        """The snapshot of a table of ``schema`` read in batches (``vectors`` of its rows with a vector),
        and the table when it was read whole (below the compact size; None above it).

        From ``compact.COMPACT_FROM`` vectors the float32 vectors of each batch are coded as it
        comes, so the whole column is never held in float32 (2 GB at a million chunks).
        """
        if vectors < compact.COMPACT_FROM:
            read = list(batches)
            table = pa.Table.from_batches(read) if read else schema.empty_table()
            return cls.from_arrow(table), table
        rest: list[pa.RecordBatch] = []
        has_vector: list[np.ndarray] = []
        coder = _Coder(quantise=True)
        for batch in batches:
            column = batch.column("vector")
            has_vector.append(np.asarray(column.is_valid(), bool))
            coder.add(present_rows(column))
            # Copied, not kept as views: a batch that came through the C data interface frees its
            # buffers only when none of its columns is referenced any more, and the texts and ids
            # kept here would hold every batch's float32 vectors (2 GB at a million chunks).
            others = batch.drop_columns(["vector"])
            copies = [pa.concat_arrays([column]) for column in others.columns]
            rest.append(pa.RecordBatch.from_arrays(copies, schema=others.schema))
        blocks, scales = coder.finish()
        table = pa.Table.from_batches(rest)
        snapshot = cls.from_arrow(table)  # no vector column: the vectors are set below
        mask = np.concatenate(has_vector) if has_vector else np.zeros(0, bool)
        if len(mask) != len(snapshot):
            raise ValueError("the rows and their vectors do not add up")
        coded = _with_cells(_Vectors(blocks, scales)) if blocks else _Vectors(())
        snapshot.blocks, snapshot.scales = coded.blocks, coded.scales
        snapshot.cells, snapshot.centroids = coded.cells, coded.centroids
        snapshot.has_vector, snapshot.vector_rows = mask, np.flatnonzero(mask)
        return snapshot, None

    def replace_paths(self, paths: Collection[str], rows: pa.Table) -> SearchSnapshot:
        """A new snapshot: this one without its rows of ``paths``, plus ``rows`` (their rows now).

        ``rows`` has the columns of ``from_arrow`` and holds only rows of ``paths`` (a path
        with none was deleted). Reloading a whole index of 100k chunks takes seconds; after an
        edit of one file this takes tens of milliseconds. This snapshot is left unchanged
        (searches in other threads may still be reading it). The kept rows stay in order and
        the new ones follow; the term, privacy and scope caches move along with their rows. Vector
        blocks without a replaced row are shared with this snapshot (see the module docstring).
        """
        gone = set(paths)
        # cast: path is a non-nullable string column (chunk_schema), so no None
        new_paths = cast("list[str]", rows.column("path").to_pylist())
        if not gone.issuperset(new_paths):
            raise ValueError("replace_paths: rows of paths that are not being replaced")
        kept, path_codes, path_code_of = self._kept_rows(gone, new_paths)

        # cast: id is a non-nullable string column (chunk_schema), so no None
        ids = self.ids.after(kept, cast("list[str]", rows.column("id").to_pylist()))
        texts: list[pa.Array[Any]] = []
        for start, end in kept.runs:
            texts.extend(self.texts.slice(start, end - start).chunks)  # zero-copy views
        texts.extend(rows.column("text").cast(self.texts.type).chunks)
        # Each edit splits the column into more views; joining all of them at once would copy
        # every text (over 100 MB at 100k chunks), so only the smallest neighbours are joined.
        text_limit = max(MAX_TEXT_PIECES, 2 * -(-len(ids) // TEXT_PIECE_ROWS))
        text_column = pa.chunked_array(joined(texts, text_limit, pa.concat_arrays), self.texts.type)

        new_has_vector, new_blocks, _ = _arrow_vectors(rows, quantise=False)
        kept_vectors, kept_vector_rows = self._kept_vectors(kept)
        vectors = self._vectors_after(kept_vectors, new_blocks)

        terms, hidden, scoped = self._caches_after(kept, new_paths)
        snapshot = SearchSnapshot(
            ids=ids,
            paths=self.paths.after(kept, new_paths),
            start_lines=np.concatenate([kept.take(self.start_lines), rows.column("start_line").to_numpy()]),
            end_lines=np.concatenate([kept.take(self.end_lines), rows.column("end_line").to_numpy()]),
            dates=self.dates.after(kept, rows.column("date").to_pylist()),
            texts=text_column,
            row_of=self.row_of.after(kept, ids, kept.count),
            blocks=vectors.blocks,
            vector_rows=np.concatenate([kept_vector_rows, np.flatnonzero(new_has_vector) + kept.count]),
            has_vector=np.concatenate([kept.take(self.has_vector), new_has_vector]),
            terms=terms,
            hidden=hidden,
            scoped=scoped,
            scales=vectors.scales,
            cells=vectors.cells,
            centroids=vectors.centroids,
            path_codes=path_codes,
            path_code_of=path_code_of,
            source=self.source,  # the kept rows' texts are still views of its mapping
        )
        if vectors.centroids is not None and vectors.centroids is self.centroids and self._cell_sizes is not None:
            # The same cells: their sizes less the dropped vectors', plus the new ones' (no count of every vector).
            assert self.cells is not None and vectors.cells is not None
            cells = len(self.centroids)
            dropped = [self.cells[start:end] for start, end in kept_vectors.gaps()]
            added = vectors.cells[kept_vectors.count :]
            snapshot._cell_sizes = (self._cell_sizes + np.bincount(added, minlength=cells)
                                    - np.bincount(np.concatenate([added[:0], *dropped]), minlength=cells))
        return snapshot

    def _kept_rows(self, gone: set[str], new_paths: list[str]) -> tuple[KeptRows, np.ndarray | None, dict[str, int]]:
        """The rows that stay (their path is not in ``gone``); the path numbers of the rows after."""
        if self.path_codes is None:
            return KeptRows.of(np.fromiter((p not in gone for p in self.paths), bool, len(self.paths))), None, {}
        code_of = self.path_code_of
        kept = KeptRows.of(~np.isin(self.path_codes, [code_of[p] for p in gone if p in code_of]))
        unseen = [p for p in dict.fromkeys(new_paths) if p not in code_of]
        if unseen:  # a new dict: this snapshot's is left as it is
            code_of = {**code_of, **{p: len(code_of) + i for i, p in enumerate(unseen)}}
        new_codes = np.array([code_of[p] for p in new_paths], np.int32)
        return kept, np.concatenate([kept.take(self.path_codes), new_codes]), code_of

    def _kept_vectors(self, kept: KeptRows) -> tuple[KeptRows, np.ndarray]:
        """The vectors (by place in block order) of the ``kept`` rows, and the rows they will have."""
        runs: list[tuple[int, int]] = []
        rows: list[np.ndarray] = [self.vector_rows[:0]]
        bounds = np.searchsorted(self.vector_rows, np.array(kept.runs, np.int64).reshape(-1, 2)).tolist()
        at = 0  # the first row of each kept stretch after the edit
        for (start, end), (low, high) in zip(kept.runs, bounds, strict=True):
            if high > low:
                runs.append((low, high))
                rows.append(self.vector_rows[low:high] - (start - at))
            at += end - start
        return KeptRows(tuple(runs), len(self.vector_rows)), np.concatenate(rows)

    def _caches_after(self, kept: KeptRows, new_paths: list[str],
                      ) -> tuple[dict[int, frozenset[str]], dict[PrivacyRules, np.ndarray],
                                 dict[ScopeFilter, np.ndarray | None]]:
        """The term, privacy and scope caches of the kept rows at their new places, and the new
        rows' privacy and scope (asking each filter about the new paths only: a whole mask asks
        about every path, a tenth of a second at a million chunks)."""
        old_terms = dict(self.terms)
        moved = kept.new_rows(np.fromiter(old_terms, np.int64, len(old_terms)))  # where each row lands
        terms = {int(row): found for row, found in zip(moved, old_terms.values(), strict=True) if row >= 0}
        hidden = {}
        for rules, mask in dict(self.hidden).items():
            private = {p: rules.is_private(p) for p in set(new_paths)}
            hidden[rules] = np.concatenate([kept.take(mask), np.array([private[p] for p in new_paths], bool)])
        scoped: dict[ScopeFilter, np.ndarray | None] = {}
        for scopes, covered in dict(self.scoped).items():
            by_path = {p: scopes.covers(p) for p in set(new_paths)}
            if covered is None and all(by_path.values()):
                scoped[scopes] = None
            else:
                old = np.ones(kept.count, bool) if covered is None else kept.take(covered)
                scoped[scopes] = np.concatenate([old, np.array([by_path[p] for p in new_paths], bool)])
        return terms, hidden, scoped

    def _vectors_after(self, kept_vectors: KeptRows, new_blocks: tuple[np.ndarray, ...]) -> _Vectors:
        """The vectors ``replace_paths`` makes: this one's kept vectors in order, then ``new_blocks`` (float32).

        A compact snapshot's new vectors are coded and put in its cells; an exact one that
        reaches the compact size becomes compact (once: a few seconds at that size).
        """
        if new_blocks and self.blocks and new_blocks[0].shape[1] != self.blocks[0].shape[1]:
            raise ValueError("replace_paths: the new rows' vectors have another size")
        kept = kept_vectors.mask()  # per vector, in block order
        if not self.compact:
            blocks, _ = self._blocks_after(kept, new_blocks, ())
            if sum(len(block) for block in blocks) >= compact.COMPACT_FROM:
                return _with_cells(_Vectors(*_coded(blocks)))
            return _Vectors(blocks)
        assert self.cells is not None and self.centroids is not None
        coded_blocks, coded_scales = _coded(new_blocks)
        blocks, scales = self._blocks_after(kept, coded_blocks, coded_scales)
        new_cells = [compact.nearest_cells(self.centroids, block) for block in new_blocks]
        return _Vectors(blocks, scales, np.concatenate([kept_vectors.take(self.cells), *new_cells]), self.centroids)

    def _blocks_after(self, kept: np.ndarray, new_blocks: tuple[np.ndarray, ...],
                      new_scales: tuple[np.ndarray, ...]) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
        """This snapshot's blocks without the vectors ``kept`` does not mark, then ``new_blocks``;
        and their scales alike when compact.

        A block with every row kept is this snapshot's own; a block that lost rows becomes
        views of its stretches of kept rows. Neither copies a vector.
        """
        pieces: list[np.ndarray] = []
        scale_pieces: list[np.ndarray] = []
        scales = self.scales or (None,) * len(self.blocks)
        at = 0
        for block, scale in zip(self.blocks, scales, strict=True):
            mask = kept[at : at + len(block)]
            at += len(block)
            if mask.all():
                pieces.append(block)
                if scale is not None:
                    scale_pieces.append(scale)
            else:
                for start, end in _runs(mask):
                    pieces.append(block[start:end])  # views of a read-only block
                    if scale is not None:
                        scale_pieces.append(scale[start:end])
        pieces.extend(new_blocks)
        scale_pieces.extend(new_scales)
        # Every block costs a call per search: past the limit, small neighbours are joined (the
        # scales by the same sizes, so the same neighbours).
        limit = max(MAX_BLOCKS, 2 * -(-sum(len(piece) for piece in pieces) // BLOCK_ROWS))
        joined_scales = tuple(joined(scale_pieces, limit, _stacked)) if self.compact else ()
        return tuple(joined(pieces, limit, _stacked)), joined_scales

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
        return cls(RowList.of([]), RowList.of([]), np.zeros(0, np.int32), np.zeros(0, np.int32), RowList.of([]),
                   pa.chunked_array([], pa.string()),
                   RowIndex.of([]), (), np.zeros(0, np.int64), np.zeros(0, bool))

    def __len__(self) -> int:
        return len(self.ids)

    def to_batches(self, schema: pa.Schema) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
        """The rows again, to be saved: the schema they are written with, and the rows in batches
        of the columns ``from_arrow`` reads (``schema``'s), one batch per vector block.

        Each batch is built when asked for, from its own rows: saving never holds a second copy of
        the texts or the vectors (1.8 GB at a million chunks), and a batch's vectors are exactly one
        block, which a load takes as it is. A compact snapshot saves its codes, scales and cells
        instead of ``schema``'s float32 vector column, and its centroids in the schema metadata.
        """
        with_vectors = "vector" in schema.names
        dims = cast("pa.FixedSizeListType[Any, int]", schema.field("vector").type).list_size if with_vectors else 0
        saved = saved_schema(schema, self.centroids if self.compact else None)
        return saved, self._batches(saved, dims)

    def _batches(self, saved: pa.Schema, dims: int) -> Iterator[pa.RecordBatch]:
        """``to_batches``' batches: a batch ends where the next vector block's first row starts."""
        kept = [i for i, block in enumerate(self.blocks) if len(block)] if dims else []
        firsts = np.cumsum([len(self.blocks[i]) for i in kept])[:-1]
        ends = [int(self.vector_rows[at]) for at in firsts] + [len(self)]
        if not kept:  # no vectors to follow: batches of a block's rows
            ends = [*range(BLOCK_ROWS, len(self), BLOCK_ROWS), len(self)]
        row = vector = 0
        for number, end in enumerate(ends):
            index = kept[number] if kept else -1
            arrays = [pa.array(self.ids[row:end], saved.field("id").type),
                      pa.array(self.paths[row:end], saved.field("path").type),
                      pa.array(self.start_lines[row:end], saved.field("start_line").type),
                      pa.array(self.end_lines[row:end], saved.field("end_line").type),
                      pa.array(self.dates[row:end], pa.date32()),
                      self._text_span(row, end, saved.field("text").type)]
            if dims:
                has = self.has_vector[row:end]
                count = int(has.sum())
                block = self.blocks[index] if count else np.zeros((0, dims), np.float32)
                if len(block) != count:
                    raise ValueError("the snapshot's vector blocks do not follow its rows")
                arrays.append(vector_column(block, has, dims))
                if self.compact:
                    assert self.cells is not None
                    scale = np.zeros(end - row, np.float32)
                    scale[has] = self.scales[index] if count else ()
                    cell = np.zeros(end - row, np.int16)
                    cell[has] = self.cells[vector : vector + count]
                    arrays += [pa.array(scale), pa.array(cell)]
                vector += count
            yield pa.RecordBatch.from_arrays(arrays, schema=saved)
            row = end

    def _text_span(self, start: int, end: int, kind: pa.DataType) -> pa.Array[Any]:
        """The texts of rows ``start`` to ``end`` as one array: a copy of these rows' texts alone."""
        if not self.texts.num_chunks:
            return pa.array([], kind)
        return self.texts.slice(start, end - start).combine_chunks().cast(kind)


def saved_schema(schema: pa.Schema, centroids: np.ndarray | None) -> pa.Schema:
    """The schema a snapshot of a table of ``schema`` is saved with: with ``centroids`` (compact),
    codes, scales and cells instead of the float32 vector column, and the centroids in its metadata."""
    fields = [schema.field(name) for name in ("id", "path", "start_line", "end_line", "date", "text")]
    if "vector" not in schema.names:
        return pa.schema(fields)
    if centroids is None:
        return pa.schema([*fields, schema.field("vector")])
    dims = cast("pa.FixedSizeListType[Any, int]", schema.field("vector").type).list_size
    fields += [pa.field(CODES_COLUMN, pa.list_(pa.int8(), dims)), pa.field(SCALE_COLUMN, pa.float32()),
               pa.field(CELL_COLUMN, pa.int16())]
    metadata: dict[bytes | str, bytes | str] = {
        CENTROIDS_KEY: base64.b64encode(np.ascontiguousarray(centroids).tobytes()),
        CENTROID_SHAPE_KEY: f"{centroids.shape[0]},{centroids.shape[1]}".encode()}
    return pa.schema(fields, metadata=metadata)


def present_rows(column: pa.Array[Any]) -> np.ndarray:
    """The values of a fixed-size list column (vectors, codes) as a matrix of its non-null rows:
    ``flatten`` leaves the null rows out, a view of the column's buffer when it has none."""
    flat = cast("pa.FixedSizeListArray[Any, int]", column)
    return flat.flatten().to_numpy(zero_copy_only=False).reshape(-1, flat.type.list_size)


def vector_column(block: np.ndarray, has: np.ndarray, dims: int) -> pa.FixedSizeListArray[Any, int]:
    """A fixed-size list column of ``block``'s vectors at the rows ``has`` marks, null elsewhere."""
    if has.all():
        return pa.FixedSizeListArray.from_arrays(pa.array(np.ascontiguousarray(block).ravel()), dims)
    full = np.zeros((len(has), dims), block.dtype)
    full[has] = block
    return pa.FixedSizeListArray.from_arrays(pa.array(full.ravel()), dims, mask=pa.array(~has))


@dataclass(frozen=True)
class _Vectors:
    """A snapshot's vector fields: blocks, and when compact, their scales, the cells and centroids."""

    blocks: tuple[np.ndarray, ...]
    scales: tuple[np.ndarray, ...] = ()
    cells: np.ndarray | None = None
    centroids: np.ndarray | None = None


def _path_codes(column: pa.ChunkedArray[Any]) -> tuple[np.ndarray, dict[str, int]]:
    """Per row a number for its path (from the path column), and the numbers by path."""
    encoded = column.combine_chunks().dictionary_encode() if len(column) else None
    if encoded is None:
        return np.zeros(0, np.int32), {}
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int32)
    # cast: path is a non-nullable string column (chunk_schema), so no None
    paths = cast("list[str]", encoded.dictionary.to_pylist())
    return codes, {path: i for i, path in enumerate(paths)}


def _top(rows: np.ndarray, sims: np.ndarray, pool: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``pool`` rows with the highest ``sims`` (all when there are no more), in no order."""
    if pool < len(sims):
        top = np.argpartition(-sims, pool - 1)[:pool]
        return rows[top], sims[top]
    return rows, sims


def _coded(blocks: tuple[np.ndarray, ...] | list[np.ndarray]) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    """Read-only int8 codes and scales of float32 ``blocks``."""
    codes, scales = [], []
    for block in blocks:
        code, scale = compact.quantised(block)
        code.flags.writeable = scale.flags.writeable = False
        codes.append(code)
        scales.append(scale)
    return tuple(codes), tuple(scales)


def _with_cells(vectors: _Vectors) -> _Vectors:
    """``vectors`` (coded) with centroids learned from a sample of them and each vector's cell."""
    count = sum(len(block) for block in vectors.blocks)
    cells = compact.cell_count(count)
    picked = compact.sample_positions(count)
    starts = np.cumsum([0, *(len(block) for block in vectors.blocks)])
    which = np.searchsorted(starts, picked, side="right") - 1
    parts = []
    for b in np.unique(which):
        local = picked[which == b] - starts[b]
        parts.append(compact.decoded(vectors.blocks[b][local], vectors.scales[b][local]))
    sample = np.concatenate(parts)
    centroids = compact.learn_centroids(sample, cells)
    assigned = np.concatenate([compact.nearest_cells(centroids, compact.decoded(block, scale))
                               for block, scale in zip(vectors.blocks, vectors.scales, strict=True)])
    return _Vectors(vectors.blocks, vectors.scales, assigned, centroids)


# Where a texts chunk's strings lie in the mapped file: its data's address, its offsets, its first offset.
_TextPiece = tuple[int, memoryview, int]


def _text_pieces(texts: pa.ChunkedArray[pa.StringScalar],
                 source: MappedFile) -> tuple[list[int], list[_TextPiece | None]]:
    """For each chunk of ``texts``, its first row and, when its strings are in ``source``'s mapping,
    where (None for a chunk in memory: an edit's new rows, or joined pieces)."""
    starts: list[int] = []
    pieces: list[_TextPiece | None] = []
    row = 0
    for chunk in texts.chunks:
        starts.append(row)
        row += len(chunk)
        _, offsets, data = chunk.buffers()
        if data is None or offsets is None or chunk.null_count or not source.holds(data.address):
            pieces.append(None)
            continue
        ends = memoryview(offsets).cast("q" if pa.types.is_large_string(chunk.type) else "i")
        pieces.append((data.address, ends, chunk.offset))
    return starts, pieces


def _saved_codes(table: pa.Table) -> tuple[np.ndarray, _Vectors]:
    """Per row whether it has a vector, and the compact vectors of a saved compact snapshot.

    Each saved batch's codes are taken where they lie (in the mapped file, when no row of the
    batch lacks a vector), in blocks of at most ``BLOCK_ROWS``: a load copies no codes.
    """
    metadata = table.schema.metadata or {}
    try:
        shape = tuple(int(n) for n in metadata[CENTROID_SHAPE_KEY].split(b","))
        centroids = np.frombuffer(base64.b64decode(metadata[CENTROIDS_KEY]), np.float32).reshape(shape).copy()
    except (KeyError, ValueError) as exc:
        raise ValueError(f"the saved snapshot's centroids cannot be read: {exc}") from exc
    # cast: the codes column is a fixed-size list of int8 (to_batches)
    column = cast("pa.ChunkedArray[pa.FixedSizeListScalar[Any, int]]", table.column(CODES_COLUMN))
    dims = column.type.list_size
    if dims != shape[1]:
        raise ValueError(f"the saved snapshot's codes have {dims} dimensions, its centroids {shape[1]}")
    scale_column = table.column(SCALE_COLUMN)
    if [len(c) for c in column.chunks] != [len(c) for c in scale_column.chunks]:
        raise ValueError("the saved snapshot's codes and scales are not saved alike")
    masks, blocks, block_scales = [], [], []
    for codes_chunk, scale_chunk in zip(column.chunks, scale_column.chunks, strict=True):
        valid = np.asarray(codes_chunk.is_valid(), bool)
        codes = present_rows(codes_chunk).astype(np.int8, copy=False)
        scales = scale_chunk.to_numpy(zero_copy_only=False).astype(np.float32)[valid]
        if len(codes) != len(scales):
            raise ValueError("the saved snapshot's codes and scales do not fit together")
        codes.flags.writeable = scales.flags.writeable = False
        masks.append(valid)
        blocks += [codes[at : at + BLOCK_ROWS] for at in range(0, len(codes), BLOCK_ROWS)]
        block_scales += [scales[at : at + BLOCK_ROWS] for at in range(0, len(scales), BLOCK_ROWS)]
    has_vector = np.concatenate(masks) if masks else np.zeros(0, bool)
    cells = table.column(CELL_COLUMN).to_numpy().astype(np.int16)[has_vector]
    if len(cells) != int(has_vector.sum()) or (len(cells) and (cells.min() < 0 or cells.max() >= shape[0])):
        raise ValueError("the saved snapshot's codes, scales and cells do not fit together")
    centroids.flags.writeable = False
    return has_vector, _Vectors(tuple(blocks), tuple(block_scales), cells, centroids)


def _arrow_vectors(table: pa.Table, quantise: bool | None = None,
                   ) -> tuple[np.ndarray, tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    """Per row whether it has a vector; the vectors of those that have one, in blocks; their scales.

    Every block but the last holds ``BLOCK_ROWS`` vectors; each is read-only, so that snapshots
    can share it. With ``quantise`` (by default: from ``compact.COMPACT_FROM`` vectors) each
    block is coded as soon as it is filled, so a large table never needs its vectors twice in
    float32; the scales are empty otherwise.
    """
    has_vector = np.zeros(table.num_rows, bool)
    if "vector" not in table.column_names or table.num_rows == 0:
        return has_vector, (), ()
    # cast: the vector column is a fixed-size list of float32 (chunk_schema)
    column = cast("pa.ChunkedArray[pa.FixedSizeListScalar[Any, int]]", table.column("vector"))
    has_vector = np.concatenate([np.asarray(chunk.is_valid()) for chunk in column.chunks])
    if quantise is None:
        quantise = int(has_vector.sum()) >= compact.COMPACT_FROM
    coder = _Coder(quantise)
    # Chunk by chunk straight into the blocks: no whole-column copy on the way.
    for chunk in column.chunks:
        coder.add(present_rows(chunk))
    blocks, scales = coder.finish()
    return has_vector, blocks, scales


class _Coder:
    """Vectors gathered into read-only blocks of ``BLOCK_ROWS``, each coded once full when ``quantise``."""

    def __init__(self, quantise: bool):
        self.quantise = quantise
        self.blocks: list[np.ndarray] = []
        self.scales: list[np.ndarray] = []
        self.current: np.ndarray | None = None  # the block being filled, float32
        self.at = 0  # rows of it filled

    def add(self, values: np.ndarray) -> None:
        done = 0
        while done < len(values):
            if self.current is None:
                self.current, self.at = np.empty((BLOCK_ROWS, values.shape[1]), np.float32), 0
            n = min(len(values) - done, BLOCK_ROWS - self.at)
            self.current[self.at : self.at + n] = values[done : done + n]
            done += n
            self.at += n
            if self.at == BLOCK_ROWS:
                self._close()

    def finish(self) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
        if self.current is not None and self.at:
            self.current = self.current[: self.at].copy()  # the last block, no longer than its rows
            self._close()
        return tuple(self.blocks), tuple(self.scales)

    def _close(self) -> None:
        assert self.current is not None
        block = self.current
        if self.quantise:
            block, scale = compact.quantised(block)
            scale.flags.writeable = False
            self.scales.append(scale)
        block.flags.writeable = False
        self.blocks.append(block)
        self.current = None


def _stacked(blocks: list[np.ndarray]) -> np.ndarray:
    """One read-only block of the rows of ``blocks``."""
    block = np.concatenate(blocks)
    block.flags.writeable = False
    return block


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """The (start, end) of each stretch of True in ``mask``."""
    edges = np.flatnonzero(np.diff(np.concatenate([[False], mask, [False]]).astype(np.int8)))
    return [(int(start), int(end)) for start, end in edges.reshape(-1, 2)]
