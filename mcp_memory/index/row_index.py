"""``RowIndex``: a search snapshot's row number by chunk id, carried across refreshes.

Keyword hits come back from Tantivy as chunk ids, and each search turns them into snapshot
rows. A dict of every id costs a rebuild on every refresh (the kept rows move up): about 0.2 s
at a million chunks, more than the whole search. So the index keeps the dict it was built with
(``base``: id → the row it had then), an array of where each of those rows is now (-1: gone),
and a small dict of the ids added since. A refresh renumbers the array in numpy (stretch by
stretch of kept rows: ``KeptRows``) and the small dict in Python; when the added ids outgrow
an eighth of the rows, the index is built anew (at most once per that many added rows).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import numpy as np

from mcp_memory.index.row_list import KeptRows

_REBUILD_SHARE = 8  # added ids past 1/8 of the rows (and past _REBUILD_MIN): build anew
_REBUILD_MIN = 1024


class RowIndex(Mapping[str, int]):
    """Chunk id → row of one snapshot (a repeated id: its last row)."""

    __slots__ = ("_added", "_base", "_current", "_rows")

    def __init__(self, base: dict[str, int], current: np.ndarray, added: dict[str, int], rows: int):
        self._base = base  # id → row when the index was built (shared by every index made from it)
        self._current = current  # per row when built: its row now, or -1 when gone
        self._added = added  # id → row, for the ids of rows added since (these win over base)
        self._rows = rows  # rows of the snapshot

    @classmethod
    def of(cls, ids: Sequence[str]) -> RowIndex:
        """The index of rows ``ids``."""
        base = dict(zip(ids, range(len(ids)), strict=True))  # a repeated id: the last row wins
        return cls(base, np.arange(len(ids), dtype=np.int64), {}, len(ids))

    def get(self, cid: str, default: int | None = None) -> int | None:  # type: ignore[override]
        row = self._added.get(cid)
        if row is not None:
            return row
        built = self._base.get(cid)
        if built is None:
            return default
        now = int(self._current[built])
        return now if now >= 0 else default

    def __getitem__(self, cid: str) -> int:
        row = self.get(cid)
        if row is None:
            raise KeyError(cid)
        return row

    def __iter__(self) -> Iterator[str]:
        for cid, built in self._base.items():
            if cid not in self._added and self._current[built] >= 0:
                yield cid
        yield from self._added

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def after(self, kept: KeptRows, ids: Sequence[str], first_new: int) -> RowIndex:
        """The index once the ``kept`` rows are kept, in order, and ``ids[first_new:]`` follow.

        ``ids`` are all the rows' ids after the change (the kept rows' first). This index is
        left unchanged: searches in other threads may still read it.
        """
        moved = kept.new_rows(np.fromiter(self._added.values(), np.int64, len(self._added)))
        added = {cid: int(row) for cid, row in zip(self._added, moved, strict=True) if row >= 0}
        added.update(zip(ids[first_new:], range(first_new, len(ids)), strict=True))
        if len(added) > max(_REBUILD_MIN, len(ids) // _REBUILD_SHARE):
            return RowIndex.of(ids)
        return RowIndex(self._base, kept.new_rows(self._current), added, len(ids))
