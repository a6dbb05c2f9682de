"""``SearchSnapshot``: the chunk table of one index generation, held in memory for search.

The vectors and chunk metadata live in memory as a snapshot of the LanceDB table, reloaded
whenever the index generation changes; exact cosine search over a numpy matrix is faster
than an ANN index at the sizes a memory reaches (and needs no minutes-long index build).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pyarrow as pa

from mcp_memory.privacy import PrivacyRules

if TYPE_CHECKING:
    from mcp_memory.chunking import Chunk


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
        if "vector" in table.column_names and table.num_rows:
            # cast: the vector column is a fixed-size list of float32 (chunk_schema)
            column = cast("pa.FixedSizeListArray[Any, int]", table.column("vector").combine_chunks())
            valid = np.asarray(column.is_valid())
            vector_rows = np.flatnonzero(valid)
            if len(vector_rows):
                dims = column.type.list_size
                flat = column.filter(pa.array(valid)).flatten().to_numpy(zero_copy_only=False)
                vectors = np.ascontiguousarray(flat.reshape(len(vector_rows), dims), np.float32)
            else:
                vectors = np.zeros((0, 0), np.float32)
        else:
            vector_rows = np.zeros(0, np.int64)
            vectors = np.zeros((0, 0), np.float32)
        has_vector = np.zeros(len(ids), bool)
        has_vector[vector_rows] = True
        return cls(
            ids=ids,
            paths=cast("list[str]", table.column("path").to_pylist()),
            start_lines=table.column("start_line").to_numpy(),
            end_lines=table.column("end_line").to_numpy(),
            dates=table.column("date").to_pylist(),
            texts=table.column("text"),
            row_of={cid: i for i, cid in enumerate(ids)},
            vectors=vectors,
            vector_rows=vector_rows,
            has_vector=has_vector,
        )

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

    def __len__(self) -> int:
        return len(self.ids)
