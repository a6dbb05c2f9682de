"""An edit's snapshot shares the per-row lists of the rows it keeps, and reads as a plain rebuild.

``SearchSnapshot.replace_paths`` keeps ids, paths and dates as shared pieces (``RowList``) and
renumbers rows stretch by stretch (``KeptRows``), so that an edit of one file costs about its
rows at a million chunks. Whatever the pieces, every read must equal a snapshot rebuilt from
the same rows, through many edits, and the caches carried over (privacy, scopes, cell sizes)
must equal those computed afresh.
"""

from __future__ import annotations

import datetime as dt
import random

import numpy as np
import pyarrow as pa
import pytest

from mcp_memory.core.privacy import PrivacyRules
from mcp_memory.core.scopes import ScopeFilter
from mcp_memory.index import compact, row_list
from mcp_memory.index.row_list import KeptRows, RowList
from mcp_memory.index.snapshot import SearchSnapshot

DIMS = 8
RULES = PrivacyRules(("memory/private/**",))
WEB = ScopeFilter(frozenset({"web"}))


def test_a_row_list_after_many_edits_reads_as_a_plain_list(monkeypatch):
    monkeypatch.setattr(row_list, "PIECE_ROWS", 8)
    monkeypatch.setattr(row_list, "MAX_PIECES", 6)
    rng = random.Random(3)
    plain = list(range(40))
    values = RowList.of(plain)
    assert [len(piece) for piece in values.pieces] == [8] * 5
    for version in range(300):
        keep = np.array([rng.random() > (0.3 if version % 10 == 0 else 0.02) for _ in plain], bool)
        added = [1000 + version * 10 + i for i in range(rng.randrange(0, 6))]
        before, before_pieces = list(values), values.pieces
        values = values.after(KeptRows.of(keep), added)
        plain = [v for v, k in zip(plain, keep, strict=True) if k] + added
        assert values == plain and list(values) == plain and len(values) == len(plain), version
        assert [values[i] for i in range(-len(plain), len(plain))] == plain + plain
        assert values[3:17] == plain[3:17] and values[::3] == plain[::3]
        assert all((v in values) for v in plain[:5]) and -1 not in values
        assert len(values.pieces) <= max(6, 2 * -(-len(plain) // 8)), version
        assert list(before_pieces) and before == [v for piece in before_pieces for v in piece]  # untouched
    with pytest.raises(IndexError):
        values[len(plain)]


def test_an_edit_shares_the_pieces_it_leaves_whole(monkeypatch):
    monkeypatch.setattr(row_list, "PIECE_ROWS", 4)
    values = RowList.of([f"r{i}" for i in range(16)])
    keep = np.ones(16, bool)
    keep[5:7] = False  # two rows in the middle of the second piece
    after = values.after(KeptRows.of(keep), ["new"])
    assert after == [f"r{i}" for i in range(16) if i not in (5, 6)] + ["new"]
    shared = [piece is old for piece, old in zip(after.pieces, values.pieces, strict=False)]
    assert shared == [True, False, False, False]
    assert after.pieces[3] is values.pieces[2] and after.pieces[4] is values.pieces[3]


@pytest.mark.parametrize("gaps", [1, 3, 9])
def test_kept_rows_renumber_as_a_count_of_the_kept_rows_does(gaps):
    rng = np.random.default_rng(gaps)
    keep = np.ones(500, bool)
    for start in rng.choice(490, gaps, replace=False):
        keep[start : start + rng.integers(1, 10)] = False
    kept = KeptRows.of(keep)
    assert np.array_equal(kept.mask(), keep) and kept.count == int(keep.sum())
    values = rng.integers(0, 100, 500)
    assert np.array_equal(kept.take(values), values[keep])
    expected = np.where(keep, np.cumsum(keep) - 1, -1)
    rows = rng.permutation(np.concatenate([np.arange(500), [-1, -1]]))
    assert np.array_equal(kept.new_rows(rows), np.where(rows >= 0, expected[rows], -1))
    assert KeptRows.of(np.ones(0, bool)).take(values).shape == (0,)


def _table(files: dict[str, list[tuple[str, list[float] | None]]], order: list[str]) -> pa.Table:
    rows = [(cid, path, vector) for path in order for cid, vector in files[path]]
    day = dt.date(2026, 3, 1)
    return pa.table({
        "id": pa.array([r[0] for r in rows], pa.string()),
        "path": pa.array([r[1] for r in rows], pa.string()),
        "start_line": pa.array([int(r[0].rsplit(".", 1)[1]) * 3 + 1 for r in rows], pa.int32()),
        "end_line": pa.array([int(r[0].rsplit(".", 1)[1]) * 3 + len(r[0]) % 3 + 1 for r in rows], pa.int32()),
        "date": pa.array([day + dt.timedelta(days=len(r[0]) % 5) if "daily" in r[1] else None for r in rows],
                         pa.date32()),
        "text": pa.array([f"text of {r[0]}" for r in rows], pa.string()),
        "vector": pa.array([r[2] for r in rows], pa.list_(pa.float32(), DIMS)),
    })


def _file(rng: np.random.Generator, path: str, version: int) -> list[tuple[str, list[float] | None]]:
    return [(f"{path}#{version}.{j}", None if rng.random() < 0.1 else rng.standard_normal(DIMS).tolist())
            for j in range(int(rng.integers(1, 6)))]


@pytest.mark.parametrize("compact_from", [10**9, 100])
def test_many_edits_read_as_a_rebuild_from_the_same_rows(monkeypatch, compact_from):
    monkeypatch.setattr(row_list, "PIECE_ROWS", 16)
    monkeypatch.setattr(row_list, "MAX_PIECES", 8)
    monkeypatch.setattr(compact, "COMPACT_FROM", compact_from)
    rng = np.random.default_rng(5)
    names = ([f"memory/topics/t{i:02d}.md" for i in range(30)] + [f"memory/private/p{i}.md" for i in range(5)]
             + [f"memory/scopes/web/w{i}.md" for i in range(5)] + [f"memory/daily{i}.md" for i in range(5)])
    files = {path: _file(rng, path, 0) for path in names}
    order = list(names)
    snap = SearchSnapshot.from_arrow(_table(files, order))
    query = rng.standard_normal(DIMS).astype(np.float32)
    compacts = 0
    for version in range(1, 80):
        snap.hidden_mask(RULES)
        snap.scope_mask(WEB)
        if snap.compact:
            snap.nearest(query, 5)  # its cell sizes, which the next snapshot carries over
        edited = [str(p) for p in rng.choice(names, int(rng.integers(1, 4)), replace=False)]
        for path in edited:
            files[path] = [] if rng.random() < 0.15 else _file(rng, path, version)
        order = [p for p in order if p not in edited] + edited
        snap = snap.replace_paths(edited, _table(files, edited))
        rebuilt = SearchSnapshot.from_arrow(_table(files, order))
        assert snap.ids == rebuilt.ids and snap.paths == rebuilt.paths and snap.dates == rebuilt.dates, version
        assert snap.texts.to_pylist() == rebuilt.texts.to_pylist()
        assert np.array_equal(snap.start_lines, rebuilt.start_lines)
        assert np.array_equal(snap.end_lines, rebuilt.end_lines)
        assert np.array_equal(snap.has_vector, rebuilt.has_vector)
        assert np.array_equal(snap.vector_rows, rebuilt.vector_rows)
        assert dict(snap.row_of) == dict(rebuilt.row_of) == {cid: row for row, cid in enumerate(rebuilt.ids)}
        assert snap.path_codes is not None and [snap.path_code_of[p] for p in snap.paths] == snap.path_codes.tolist()
        # Carried over from the snapshot before: as computed afresh.
        assert np.array_equal(snap.hidden[RULES], rebuilt.hidden_mask(RULES))
        assert np.array_equal(snap.scoped[WEB], rebuilt.scope_mask(WEB))  # type: ignore[arg-type]
        compacts += snap.compact  # once compact, a snapshot stays so (rebuilt or not)
        if snap.compact:
            assert snap.cells is not None and snap._cell_sizes is not None
            assert np.array_equal(snap._cell_sizes, np.bincount(snap.cells, minlength=len(snap.cell_sizes())))
        else:
            assert np.array_equal(np.concatenate(snap.blocks), np.concatenate(rebuilt.blocks))
    assert compacts == (0 if compact_from > 10**6 else 79)
