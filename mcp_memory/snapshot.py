"""``SearchSnapshot``: the chunk table of one index generation, held in memory for search.

The vectors and chunk metadata live in memory as a snapshot of the LanceDB table, refreshed
whenever the index generation changes: only the rows of the files changed since (see
``SearchSnapshot.replace_paths``), or all of them when that is not known. Exact cosine search
over a numpy matrix is faster than an ANN index at the sizes a memory reaches (and needs no
minutes-long index build).
"""

from __future__ import annotations

import datetime as dt
import threading
import weakref
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pyarrow as pa

from mcp_memory.privacy import PrivacyRules

if TYPE_CHECKING:
    from mcp_memory.chunking import Chunk

# Pieces the text column may be split into by replace_paths before they are joined again.
MAX_TEXT_PIECES = 512
# Spare rows of a new vector matrix buffer, so that a few new chunks fit in it next time.
MATRIX_HEADROOM = 256


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
    vectors: np.ndarray  # (m, d) for the rows in vector_rows
    vector_rows: np.ndarray  # row numbers that have a vector
    has_vector: np.ndarray  # per row: True when the row has a vector
    terms: dict[int, frozenset[str]] = field(default_factory=dict)  # analysed terms by row, filled lazily
    hidden: dict[PrivacyRules, np.ndarray] = field(default_factory=dict)  # rows of private files, by rules
    lineage: _Lineage = field(default_factory=lambda: _Lineage(), repr=False, compare=False)

    def hidden_mask(self, rules: PrivacyRules) -> np.ndarray:
        """Rows of the files ``rules`` call private (computed once per snapshot and rules)."""
        mask = self.hidden.get(rules)
        if mask is None:
            by_path = {p: rules.is_private(p) for p in set(self.paths)}
            mask = self.hidden[rules] = np.array([by_path[p] for p in self.paths], bool)
        return mask

    @classmethod
    def from_arrow(cls, table: pa.Table) -> SearchSnapshot:
        # cast: id and path are non-nullable string columns (chunk_schema), so no None
        ids = cast("list[str]", table.column("id").to_pylist())
        has_vector, vectors, lineage = _arrow_vectors(table, pooled=True)
        return cls(
            ids=ids,
            paths=cast("list[str]", table.column("path").to_pylist()),
            start_lines=table.column("start_line").to_numpy(),
            end_lines=table.column("end_line").to_numpy(),
            dates=table.column("date").to_pylist(),
            texts=table.column("text"),
            row_of={cid: i for i, cid in enumerate(ids)},
            vectors=vectors,
            vector_rows=np.flatnonzero(has_vector),
            has_vector=has_vector,
            lineage=lineage,
        )

    def replace_paths(self, paths: Collection[str], rows: pa.Table) -> SearchSnapshot:
        """A new snapshot: this one without its rows of ``paths``, plus ``rows`` (their rows now).

        ``rows`` has the columns of ``from_arrow`` and holds only rows of ``paths`` (a path
        with none was deleted). Reloading a whole index of 100k chunks takes seconds; after an
        edit of one file this takes tens of milliseconds. This snapshot is left unchanged
        (searches in other threads may still be reading it). The kept rows stay in order and
        the new ones follow; the term and privacy caches move along with their rows.
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
        text_column = pa.chunked_array(texts, self.texts.type)
        if text_column.num_chunks > MAX_TEXT_PIECES:
            # Each edit splits the column into more views: join them now and then (one copy).
            text_column = pa.chunked_array([text_column.combine_chunks()], self.texts.type)

        new_has_vector, new_vectors, _ = _arrow_vectors(rows, pooled=False)
        has_vector = np.concatenate([self.has_vector[keep], new_has_vector])
        vectors, lineage = self._vectors_after(keep, new_vectors)

        new_row = np.cumsum(keep) - 1  # where each kept row lands
        terms = {int(new_row[row]): found for row, found in dict(self.terms).items() if keep[row]}
        hidden = {}
        for rules, mask in dict(self.hidden).items():
            private = {p: rules.is_private(p) for p in set(new_paths)}
            hidden[rules] = np.concatenate([mask[keep], np.array([private[p] for p in new_paths], bool)])

        return SearchSnapshot(
            ids=ids,
            paths=kept_paths,
            start_lines=np.concatenate([self.start_lines[keep], rows.column("start_line").to_numpy()]),
            end_lines=np.concatenate([self.end_lines[keep], rows.column("end_line").to_numpy()]),
            dates=dates,
            texts=text_column,
            row_of=self._row_of_after(keep, ids),
            vectors=vectors,
            vector_rows=np.flatnonzero(has_vector),
            has_vector=has_vector,
            terms=terms,
            hidden=hidden,
            lineage=lineage,
        )

    def _vectors_after(self, keep: np.ndarray, new_vectors: np.ndarray) -> tuple[np.ndarray, _Lineage]:
        """The matrix ``replace_paths`` makes: this one's kept rows in order, then ``new_vectors``.

        Rows before the first one removed stay where they are. When the reused memory still
        holds this snapshot's parent's matrix, the leading rows both kept unchanged are not
        copied again.
        """
        kept = keep[self.vector_rows]
        pieces = [self.vectors[start:end] for start, end in _runs(kept)] + [new_vectors]
        pieces = [piece for piece in pieces if len(piece)]
        if len({piece.shape[1] for piece in pieces}) > 1:
            raise ValueError("replace_paths: the new rows' vectors have another size")
        dropped = np.flatnonzero(~kept)
        same_rows = int(dropped[0]) if len(dropped) else len(kept)
        lineage = _Lineage(parent=self.lineage.token, same_rows=same_rows)
        if not pieces:
            return np.zeros((0, 0), np.float32), lineage
        matrix, holds = _BUFFERS.matrix(sum(len(piece) for piece in pieces), pieces[0].shape[1], lineage.token,
                                        held=self.lineage.parent)
        done = min(self.lineage.same_rows, same_rows) if holds else 0  # rows already in place
        at = 0
        for piece in pieces:
            skip = min(len(piece), max(0, done - at))
            matrix[at + skip : at + len(piece)] = piece[skip:]
            at += len(piece)
        matrix.flags.writeable = False
        return matrix, lineage

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
                   {}, np.zeros((0, 0), np.float32), np.zeros(0, np.int64), np.zeros(0, bool))

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


def _arrow_vectors(table: pa.Table, pooled: bool) -> tuple[np.ndarray, np.ndarray, _Lineage]:
    """Per row whether it has a vector, the (m, d) float32 matrix of those it has, and its lineage.

    ``pooled``: the matrix of a whole snapshot, in reusable memory (see ``_MatrixBuffers``);
    otherwise a few rows in ordinary memory.
    """
    has_vector = np.zeros(table.num_rows, bool)
    if "vector" not in table.column_names or table.num_rows == 0:
        return has_vector, np.zeros((0, 0), np.float32), _Lineage()
    # cast: the vector column is a fixed-size list of float32 (chunk_schema)
    column = cast("pa.ChunkedArray[pa.FixedSizeListScalar[Any, int]]", table.column("vector"))
    has_vector = np.concatenate([np.asarray(chunk.is_valid()) for chunk in column.chunks])
    count = int(has_vector.sum())
    if count == 0:
        return has_vector, np.zeros((0, 0), np.float32), _Lineage()
    dims = column.type.list_size
    lineage = _Lineage()
    matrix = _BUFFERS.matrix(count, dims, lineage.token)[0] if pooled else np.empty((count, dims), np.float32)
    # Chunk by chunk straight into the matrix: no whole-column copy on the way.
    at = 0
    for chunk in column.chunks:
        flat = cast("pa.FixedSizeListArray[Any, int]", chunk).flatten()  # the non-null rows' values
        values = flat.to_numpy(zero_copy_only=False).reshape(-1, dims)
        matrix[at : at + len(values)] = values
        at += len(values)
    matrix.flags.writeable = False
    return has_vector, matrix, lineage


@dataclass(frozen=True)
class _Lineage:
    """Where a snapshot's vector matrix came from: its leading rows may be in reusable memory already."""

    token: object = field(default_factory=object)  # this matrix
    parent: object | None = None  # the matrix of the snapshot this one was made from by replace_paths
    same_rows: int = 0  # leading rows equal to the parent's


class _MatrixBuffers:
    """Memory for vector matrices, kept for the next matrix once nothing uses it.

    A refresh after an edit builds a new matrix (200 MB at 100k chunks of 512 floats; copying
    it takes about 20 ms into memory already in use). Fresh memory from the operating system
    costs far more where each page faults on its first touch: ten times more on a virtual
    machine that hands freed memory back to its host within seconds. So the memory of the
    matrix a replaced snapshot dropped is kept, one spare at most, and the next matrix reuses it.
    The spare remembers whose matrix it held: after an edit of a file whose rows sit at the end
    (a daily file written again and again), most of it already holds the rows wanted.

    A matrix is a read-only view of an intermediate array over the memory; numpy makes every
    view of the matrix (a row, a slice) a view of that array, so the memory counts as free only
    when the last of them is gone, and no array can ever see it rewritten.
    """

    def __init__(self) -> None:
        self._spare: tuple[np.ndarray, object] | None = None  # memory, and the token of the matrix it held
        self._lock = threading.RLock()  # a release can run in any thread, even inside matrix()

    def matrix(self, rows: int, dims: int, token: object, held: object | None = None) -> tuple[np.ndarray, bool]:
        """A writable, C-contiguous (rows, dims) float32 array for the matrix ``token``.

        Also whether the array still holds the matrix ``held`` (else its content is undefined).
        """
        size = rows * dims
        with self._lock:
            spare, self._spare = self._spare, None
        memory, holds = (None, False) if spare is None else (spare[0], spare[1] is held)
        if memory is None or not size <= len(memory) <= 2 * size + MATRIX_HEADROOM * dims:
            # Room to grow by a few files without new memory.
            memory = np.empty(size + (rows // 16 + MATRIX_HEADROOM) * dims, np.float32)
            holds = False
        owner = np.frombuffer(memory.data, np.float32)  # the base of every view handed out
        done = weakref.finalize(owner, self._release, memory, token)
        done.atexit = False
        return owner[:size].reshape(rows, dims), holds

    def _release(self, memory: np.ndarray, token: object) -> None:
        with self._lock:
            self._spare = (memory, token)  # the latest: its size fits the next matrix best


_BUFFERS = _MatrixBuffers()


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """The (start, end) of each stretch of True in ``mask``."""
    edges = np.flatnonzero(np.diff(np.concatenate([[False], mask, [False]]).astype(np.int8)))
    return [(int(start), int(end)) for start, end in edges.reshape(-1, 2)]
