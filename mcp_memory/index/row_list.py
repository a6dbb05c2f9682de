"""``RowList``: a search snapshot's per-row Python values (chunk ids, paths, dates), in shared pieces.

A snapshot made after an edit keeps every row of the files left alone. Held as one Python list
per column, each such snapshot copied a million references per column at a million chunks
(about 30 ms for ids, paths and dates together on an idle machine), whatever the size of
the edit. A ``RowList`` holds its values as a tuple of pieces instead: the list made after an
edit shares every piece the edit left whole, copies only the kept part of a piece it cut (at
most ``PIECE_ROWS`` values) and adds the new rows as a piece of their own; so an edit costs
about the rows it touches plus a step per piece. Now and then small neighbours are joined, so
the number of pieces stays bounded (``joined``).

Pieces are never changed once made: a snapshot in use by another thread keeps reading its own.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence, Sized
from dataclasses import dataclass
from typing import Any, TypeVar, overload

import numpy as np

T = TypeVar("T")
PieceT = TypeVar("PieceT", bound=Sized)

PIECE_ROWS = 4096  # values per piece as loaded
MAX_PIECES = 64  # pieces a list may hold before small neighbours are joined (more for long lists: see after)
_FEW_GAPS = 4  # KeptRows.new_rows: up to this many stretches dropped, renumbered without a table


class RowList(Sequence[T]):
    """A read-only list of one value per snapshot row, held as shared pieces."""

    __slots__ = ("_pieces", "_starts")

    def __init__(self, pieces: Iterable[list[T]]):
        self._pieces = tuple(piece for piece in pieces if piece)
        starts = [0]
        for piece in self._pieces:
            starts.append(starts[-1] + len(piece))
        self._starts = starts  # the first row of each piece, then the number of rows

    @classmethod
    def of(cls, values: Sequence[T]) -> RowList[T]:
        """The list of ``values`` (copied), in pieces of ``PIECE_ROWS``."""
        return cls(list(values[start : start + PIECE_ROWS]) for start in range(0, len(values), PIECE_ROWS))

    @property
    def pieces(self) -> tuple[list[T], ...]:
        """The pieces, in row order (to be read, never changed)."""
        return self._pieces

    def __len__(self) -> int:
        return self._starts[-1]

    @overload
    def __getitem__(self, row: int) -> T: ...

    @overload
    def __getitem__(self, row: slice) -> list[T]: ...

    def __getitem__(self, row: int | slice) -> T | list[T]:
        if isinstance(row, slice):
            start, stop, step = row.indices(len(self))
            if step != 1:
                return [self[i] for i in range(start, stop, step)]
            return list(itertools.chain.from_iterable(self._spans(start, stop)))
        if row < 0:
            row += len(self)
        if not 0 <= row < len(self):
            raise IndexError("row out of range")
        at = bisect.bisect_right(self._starts, row) - 1
        return self._pieces[at][row - self._starts[at]]

    def __iter__(self) -> Iterator[T]:
        return itertools.chain.from_iterable(self._pieces)

    def __contains__(self, value: object) -> bool:
        return any(value in piece for piece in self._pieces)

    def __eq__(self, other: object) -> bool:
        """Equal to a list, tuple or ``RowList`` of the same values in the same order."""
        if not isinstance(other, RowList | list | tuple):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # equal to lists, so unhashable like them

    def __repr__(self) -> str:
        return f"RowList({list(self)!r})"

    def after(self, kept: KeptRows, added: list[T]) -> RowList[T]:
        """The list of the ``kept`` rows, then ``added``.

        A piece inside a run is shared, the part of a piece a run cuts is copied; this list is
        left unchanged.
        """
        pieces: list[list[T]] = []
        for start, end in kept.runs:
            pieces.extend(self._spans(start, end))
        pieces.append(list(added))
        total = kept.count + len(added)
        # Every edit adds a piece or two (the new rows; a cut piece in two): past the limit the
        # smallest neighbours are joined, as the snapshot's vector blocks are.
        limit = max(MAX_PIECES, 2 * -(-total // PIECE_ROWS))
        return RowList(joined(pieces, limit, _chained))

    def _spans(self, start: int, end: int) -> Iterator[list[T]]:
        """The values of rows ``start`` to ``end``: whole pieces as they are, cut ones as copies."""
        at = max(0, bisect.bisect_right(self._starts, start) - 1)
        while start < end and at < len(self._pieces):
            piece, first = self._pieces[at], self._starts[at]
            lo, hi = start - first, min(end, self._starts[at + 1]) - first
            yield piece if lo == 0 and hi == len(piece) else piece[lo:hi]
            start = first + hi
            at += 1


def joined(pieces: list[PieceT], limit: int, join: Callable[[list[PieceT]], PieceT]) -> list[PieceT]:
    """``pieces`` without empty ones, the smallest two neighbours joined while there are over ``limit``.

    Each replacement adds a piece or two (the new rows; a touched piece cut in two), so their
    count would grow without end. The callers set ``limit`` to at least twice the number of
    full pieces that all rows fill: past it the pieces average under half a full one, so the
    smallest neighbours hold at most a full piece's rows. One join copies that much at most (a
    few megabytes, never the whole column), and a replacement needs about as many joins as it
    added pieces.
    """
    pieces = [piece for piece in pieces if len(piece)]
    while len(pieces) > limit:
        sizes = [len(piece) for piece in pieces]
        i = min(range(len(pieces) - 1), key=lambda k: sizes[k] + sizes[k + 1])
        pieces[i : i + 2] = [join(pieces[i : i + 2])]
    return pieces


def _chained(pieces: list[list[Any]]) -> list[Any]:
    return [value for piece in pieces for value in piece]


@dataclass(frozen=True)
class KeptRows:
    """The rows an edit keeps of a snapshot's ``total``: stretches ``runs`` of (start, end), ascending.

    An edit keeps all rows but one file's few, so its kept rows are a handful of stretches;
    taking them as slices, and renumbering rows stretch by stretch, costs a copy of the kept
    values rather than a pass of a million-row mask per column.
    """

    runs: tuple[tuple[int, int], ...]
    total: int

    @classmethod
    def of(cls, keep: np.ndarray) -> KeptRows:
        """The rows ``keep`` marks."""
        gone = np.flatnonzero(~keep)
        if not len(gone):
            return cls(((0, len(keep)),) if len(keep) else (), len(keep))
        breaks = np.flatnonzero(np.diff(gone) > 1)
        gap_starts = gone[np.concatenate([[0], breaks + 1])]
        gap_ends = gone[np.concatenate([breaks, [len(gone) - 1]])] + 1
        starts, ends = [0, *gap_ends.tolist()], [*gap_starts.tolist(), len(keep)]
        return cls(tuple((s, e) for s, e in zip(starts, ends, strict=True) if e > s), len(keep))

    @property
    def count(self) -> int:
        return sum(end - start for start, end in self.runs)

    def gaps(self) -> list[tuple[int, int]]:
        """The stretches of rows not kept."""
        edges = [0, *(edge for run in self.runs for edge in run), self.total]
        return [(s, e) for s, e in zip(edges[::2], edges[1::2], strict=True) if e > s]

    def take(self, values: np.ndarray) -> np.ndarray:
        """The kept rows of ``values`` (one per row), in order."""
        return np.concatenate([values[start:end] for start, end in self.runs]) if self.runs else values[:0]

    def mask(self) -> np.ndarray:
        """Per row whether it is kept."""
        keep = np.ones(self.total, bool)
        for start, end in self.gaps():
            keep[start:end] = False
        return keep

    def new_rows(self, rows: np.ndarray) -> np.ndarray:
        """Where each of ``rows`` (row numbers before the edit; -1: none) lands after it; -1 when not kept."""
        rows = np.asarray(rows, np.int64)
        gaps = self.gaps()
        if len(gaps) <= _FEW_GAPS:  # a few passes over ``rows``, no table of every row
            moved = rows.copy()
            for start, end in gaps:
                moved[(rows >= start) & (rows < end)] = -1
                moved[rows >= end] -= end - start
            return moved
        new_row = np.full(self.total, -1, np.int64)
        at = 0
        for start, end in self.runs:
            new_row[start:end] = np.arange(at, at + end - start)
            at += end - start
        moved = np.full(len(rows), -1, np.int64)
        alive = rows >= 0
        moved[alive] = new_row[rows[alive]]
        return moved
