"""Compact vectors for large memories: int8 codes, grouped in cells of similar vectors.

Below ``COMPACT_FROM`` vectors the search snapshot scores every float32 vector (exact, about
10 ms at 100k chunks). At a million chunks of 512 dimensions the float32 vectors alone take
2 GB and one full scan about 100 ms on two cores, so past that size the snapshot holds each
vector as int8 codes with one float32 scale (a quarter of the memory; the cosine read back
from the codes is within about 0.005 of the exact one), and gives each vector a cell: the
nearest of a few hundred centroids, learned by spherical k-means on a sample. A query scores
the centroids, then only the vectors of the closest cells (about ``PROBE_SHARE`` of them, at
least ``MIN_CANDIDATES``), from their codes.

Everything here is derived from the vectors in LanceDB and rebuilt from them whenever the
snapshot is loaded whole; nothing is lost when it is lost.
"""

from __future__ import annotations

import math

import numpy as np

COMPACT_FROM = 200_000  # vectors: from this many, a snapshot holds codes and cells instead of float32
PROBE_SHARE = 1 / 40  # of all vectors, scored for one query
MIN_CANDIDATES = 4096  # vectors scored for one query at least (when there are that many)
_TRAIN_PER_CELL = 40  # sample vectors per centroid for k-means
_TRAIN_ROUNDS = 8
_ASSIGN_ROWS = 16384  # vectors assigned to cells per matrix product
_FEW_ROWS = 256  # up to this many vectors are assigned without BLAS


def cell_count(vectors: int) -> int:
    """How many cells ``vectors`` vectors are grouped in: the square root, 16 to 2048.

    Measured at 250k vectors, probing a 40th of them: 500 cells found 0.96 of the exact top 10,
    250 cells 0.92; more cells cost more at load (each vector is compared with every centroid).
    """
    return max(16, min(2048, round(math.sqrt(vectors))))


def sample_positions(vectors: int) -> np.ndarray:
    """Which of ``vectors`` vectors (their places, sorted) the centroids are learned from: 40 a cell,
    drawn the same for the same count."""
    rng = np.random.default_rng(vectors)
    return np.sort(rng.choice(vectors, min(vectors, cell_count(vectors) * 40), replace=False))


def quantised(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row int8 codes and the float32 scale that multiplies them back (largest magnitude = 127)."""
    peak = np.abs(values).max(axis=1) if len(values) else np.zeros(0, np.float32)
    scales = (peak / 127.0).astype(np.float32)
    scales[scales == 0] = 1.0
    codes = np.rint(values / scales[:, None]).astype(np.int8)
    return codes, scales


def decoded(codes: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """The float32 rows the codes stand for."""
    rows: np.ndarray = codes.astype(np.float32) * scales[:, None]
    return rows


def learn_centroids(sample: np.ndarray, count: int, seed: int = 0) -> np.ndarray:
    """``count`` unit centroids of ``sample`` (rows of about unit length) by spherical k-means.

    A few rounds on a sample are enough: cells only choose which vectors are scored, and a
    query probes many of them.
    """
    rng = np.random.default_rng(seed)
    count = max(1, min(count, len(sample)))
    centroids = sample[rng.choice(len(sample), count, replace=False)].astype(np.float32)
    for _ in range(_TRAIN_ROUNDS):
        nearest = np.argmax(sample @ centroids.T, axis=1)
        sums = np.zeros_like(centroids)
        np.add.at(sums, nearest, sample)
        empty = np.flatnonzero(np.bincount(nearest, minlength=count) == 0)
        sums[empty] = sample[rng.choice(len(sample), len(empty), replace=False)]  # an empty cell starts again
        centroids = _unit(sums)
    centroids.flags.writeable = False
    return centroids


def nearest_cells(centroids: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Per row of ``values``, the index of its nearest centroid (by dot product), as int16."""
    cells = np.empty(len(values), np.int16)
    if len(values) <= _FEW_ROWS:  # an edit's rows: in this thread (a threaded BLAS call waits for a busy core)
        cells[:] = np.argmax(np.einsum("ij,kj->ik", values, centroids), axis=1)
        return cells
    for start in range(0, len(values), _ASSIGN_ROWS):
        part = values[start : start + _ASSIGN_ROWS]
        cells[start : start + len(part)] = np.argmax(part @ centroids.T, axis=1)
    return cells


def candidate_target(vectors: int) -> int:
    """How many vectors one query scores, of ``vectors``."""
    return min(vectors, max(MIN_CANDIDATES, int(vectors * PROBE_SHARE)))


def probed_cells(centroid_scores: np.ndarray, cell_sizes: np.ndarray, target: int) -> np.ndarray:
    """The closest cells (by ``centroid_scores``) that together hold at least ``target`` vectors."""
    order = np.argsort(-centroid_scores, kind="stable")
    reached = np.cumsum(cell_sizes[order])
    take = int(np.searchsorted(reached, target)) + 1
    return order[:take]


def _unit(rows: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    unit: np.ndarray = (rows / norms).astype(np.float32)
    return unit
