"""A large table read into the saved snapshot file a batch at a time, then searched from that file.

From ``compact.COMPACT_FROM`` vectors a snapshot is compact: int8 codes in cells. Reading such a
table into memory first and saving it after held every chunk's text and code at once (3.3 GB at
a million chunks, 1.3 GB of it texts), though a process searches from the saved file just as
well (``Engine._adopt_saved``: the texts and codes stay in the file, read where they lie). So a
load of that size goes straight to the file, in two passes over the table:

1. the vectors alone, to learn the cells' centroids from the same sample an in-memory load would
   draw (``compact.sample_positions``);
2. every column, each batch coded, given its cells and written as it comes.

Only one batch and the sample are held at a time. The file is then what the process searches.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import numpy as np
import pyarrow as pa

from mcp_memory.index import compact
from mcp_memory.index.snapshot import present_rows, saved_schema, vector_column


def centroids_of(sample: np.ndarray, vectors: int) -> np.ndarray:
    """The centroids of ``vectors`` vectors, learned from their ``sample`` (float32, at
    ``compact.sample_positions(vectors)``) as the snapshot learns them: from the decoded codes."""
    codes, scales = compact.quantised(sample)
    return compact.learn_centroids(compact.decoded(codes, scales), compact.cell_count(vectors))


def saved_batches(schema: pa.Schema, batches: Iterator[pa.RecordBatch],
                  centroids: np.ndarray) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """The rows of ``batches`` (a table of ``schema``, float32 ``vector``) as a compact snapshot's
    saved batches: the schema to write and the batches, each coded and given its cells when asked for."""
    saved = saved_schema(schema, centroids)
    dims = cast("pa.FixedSizeListType[Any, int]", schema.field("vector").type).list_size
    return saved, (_coded(batch, saved, dims, centroids) for batch in batches)


def _coded(batch: pa.RecordBatch, saved: pa.Schema, dims: int, centroids: np.ndarray) -> pa.RecordBatch:
    column = batch.column("vector")
    has = np.asarray(column.is_valid(), bool)
    codes, scales = compact.quantised(present_rows(column))
    scale = np.zeros(len(has), np.float32)
    scale[has] = scales
    cell = np.zeros(len(has), np.int16)
    cell[has] = compact.nearest_cells(centroids, compact.decoded(codes, scales))
    plain = [batch.column(name).cast(saved.field(name).type)
             for name in ("id", "path", "start_line", "end_line", "date", "text")]
    return pa.RecordBatch.from_arrays([*plain, vector_column(codes, has, dims), pa.array(scale), pa.array(cell)],
                                      schema=saved)
