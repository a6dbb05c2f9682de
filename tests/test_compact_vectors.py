"""Large memories: a compact snapshot (int8 codes in cells) finds what the exact scan finds.

``compact.COMPACT_FROM`` is lowered so that a few thousand vectors, or a few hundred chunks
of a real workspace, take the path a million chunks take. Each test checks what a user sees:
the nearest memories found, a filter obeyed, a new memory found, a removed one gone, a
damaged saved file never costing an answer.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc
import pytest

from conftest import HashEmbedder, write
from mcp_memory.config import Settings
from mcp_memory.index import compact, saved_snapshot
from mcp_memory.index.engine import Engine
from mcp_memory.index.saved_snapshot import Loaded, SavedTag, load, read_tag, save, saved_path
from mcp_memory.index.snapshot import CELL_COLUMN, CODES_COLUMN, SearchSnapshot
from mcp_memory.memory import Memory

DIMS = 64


def rows(count: int, prefix: str, rng: np.random.Generator, centres: np.ndarray) -> tuple[pa.Table, np.ndarray]:
    """``count`` chunk rows of files ``prefix/N.md`` (ten rows a file), vectors clustered round ``centres``."""
    vectors = centres[np.arange(count) % len(centres)] + 0.3 * rng.standard_normal((count, DIMS)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    table = pa.table({
        "id": [f"{prefix}-{i}" for i in range(count)],
        "path": [f"{prefix}/{i // 10}.md" for i in range(count)],
        "start_line": pa.array(np.arange(count, dtype=np.int32)),
        "end_line": pa.array(np.arange(count, dtype=np.int32)),
        "date": pa.array([None] * count, pa.date32()),
        "text": [f"text {i}" for i in range(count)],
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), DIMS),
    })
    return table, vectors


@pytest.fixture
def small_compact_size(monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(compact, "COMPACT_FROM", 2000)
    monkeypatch.setattr(compact, "MIN_CANDIDATES", 256)
    return 2000


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(7)


@pytest.fixture
def centres(rng: np.random.Generator) -> np.ndarray:
    return rng.standard_normal((60, DIMS)).astype(np.float32)


def top_ids(snapshot: SearchSnapshot, query: np.ndarray, k: int = 10, allowed: np.ndarray | None = None) -> list[str]:
    found, sims = snapshot.nearest(query, max(k, 40), allowed)
    return [snapshot.ids[row] for row in found[np.argsort(-sims)][:k]]


def near(vector: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    query = vector + 0.1 * rng.standard_normal(DIMS).astype(np.float32)
    return (query / np.linalg.norm(query)).astype(np.float32)


def test_a_large_snapshot_is_compact_and_finds_what_the_exact_scan_finds(
        small_compact_size: int, rng: np.random.Generator, centres: np.ndarray) -> None:
    table, vectors = rows(12000, "t", rng, centres)
    snapshot = SearchSnapshot.from_arrow(table)
    assert snapshot.compact
    assert all(block.dtype == np.int8 for block in snapshot.blocks)
    assert sum(block.nbytes for block in snapshot.blocks) == vectors.size  # a byte a dimension
    recalls = []
    for i in rng.integers(0, len(vectors), 40):
        query = near(vectors[i], rng)
        exact = {f"t-{j}" for j in np.argsort(-(vectors @ query))[:10]}
        recalls.append(len(exact & set(top_ids(snapshot, query))) / 10)
    assert np.mean(recalls) >= 0.95
    # Scores are cosines to within the codes' rounding.
    found, sims = snapshot.nearest(vectors[5], 5)
    assert np.allclose(sims, vectors[found] @ vectors[5], atol=0.01)


def test_a_small_snapshot_stays_exact(small_compact_size: int, rng: np.random.Generator, centres: np.ndarray) -> None:
    table, vectors = rows(500, "t", rng, centres)
    snapshot = SearchSnapshot.from_arrow(table)
    assert not snapshot.compact
    query = near(vectors[3], rng)
    assert top_ids(snapshot, query) == [f"t-{j}" for j in np.argsort(-(vectors @ query))[:10]]


def test_a_filter_leaving_few_rows_gets_exactly_those(
        small_compact_size: int, rng: np.random.Generator, centres: np.ndarray) -> None:
    table, vectors = rows(6000, "t", rng, centres)
    snapshot = SearchSnapshot.from_arrow(table)
    allowed = np.zeros(len(snapshot), bool)
    allowed[rng.choice(len(snapshot), 30, replace=False)] = True
    # A query far from every allowed row: the closest cells hold none of them.
    query = near(vectors[int(np.flatnonzero(~allowed)[0])], rng)
    found, _ = snapshot.nearest(query, 40, allowed)
    assert sorted(found.tolist()) == np.flatnonzero(allowed).tolist()
    wide = np.ones(len(snapshot), bool)
    wide[: len(snapshot) // 2] = False
    found, _ = snapshot.nearest(query, 40, wide)
    assert len(found) == 40 and wide[found].all()


def test_edits_of_a_compact_snapshot_find_new_rows_and_drop_removed_ones(
        small_compact_size: int, rng: np.random.Generator, centres: np.ndarray) -> None:
    table, vectors = rows(6000, "t", rng, centres)
    snapshot = SearchSnapshot.from_arrow(table)
    removed_query = near(vectors[15], rng)
    assert "t-15" in top_ids(snapshot, removed_query)
    fresh, fresh_vectors = rows(10, "t", rng, rng.standard_normal((10, DIMS)).astype(np.float32))
    fresh = fresh.set_column(0, "id", pa.array([f"new-{i}" for i in range(10)]))
    edited = snapshot.replace_paths(["t/0.md", "t/1.md"], fresh)  # t-0..t-19 replaced by new-0..new-9
    assert edited.compact and len(edited) == 6000 - 20 + 10
    assert len(edited.cells) == len(edited.vector_rows) == sum(len(s) for s in edited.scales)
    assert top_ids(edited, fresh_vectors[3])[0] == "new-3"
    assert not any(found.startswith("t-1") and len(found) == 4 for found in top_ids(edited, removed_query))
    assert "t-15" not in top_ids(edited, removed_query)
    assert "t-15" in top_ids(snapshot, removed_query)  # the snapshot searches may still read is unchanged


def test_a_snapshot_growing_past_the_size_becomes_compact(
        small_compact_size: int, rng: np.random.Generator, centres: np.ndarray) -> None:
    snapshot = SearchSnapshot.from_arrow(rows(1500, "a", rng, centres)[0])
    assert not snapshot.compact
    added, vectors = rows(1000, "b", rng, centres)
    grown = snapshot.replace_paths([f"b/{i}.md" for i in range(100)], added)
    assert grown.compact and len(grown) == 2500
    assert top_ids(grown, vectors[42])[0] == "b-42"


def test_a_compact_snapshot_saved_and_loaded_answers_alike(
        small_compact_size: int, rng: np.random.Generator, centres: np.ndarray) -> None:
    table, vectors = rows(6000, "t", rng, centres)
    snapshot = SearchSnapshot.from_arrow(table)
    saved_schema, batches = snapshot.to_batches(table.schema)
    saved = pa.Table.from_batches(list(batches), schema=saved_schema)
    assert CODES_COLUMN in saved.column_names and "vector" not in saved.column_names
    loaded = SearchSnapshot.from_arrow(saved)
    assert loaded.compact
    for i in (1, 99, 4321):
        query = near(vectors[i], rng)
        assert top_ids(loaded, query) == top_ids(snapshot, query)


def _saved_and_mapped(snapshot: SearchSnapshot, schema: pa.Schema, folder: Path) -> tuple[SearchSnapshot, Loaded]:
    tag = SavedTag("generation", "fingerprint")
    save(folder / "snapshot.arrow", *snapshot.to_batches(schema), tag)
    loaded = load(folder / "snapshot.arrow", tag)
    assert loaded is not None and loaded.source is not None
    return SearchSnapshot.from_arrow(loaded.rows, loaded.source), loaded


def test_a_compact_snapshot_with_unembedded_rows_and_edits_is_saved_and_read_back_row_for_row(
        small_compact_size: int, rng: np.random.Generator, centres: np.ndarray, tmp_path: Path) -> None:
    table, vectors = rows(6000, "t", rng, centres)
    embedded = np.ones(6000, bool)
    embedded[::10] = False  # a tenth of the chunks not embedded yet
    column = pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), DIMS, mask=pa.array(~embedded))
    table = table.set_column(table.schema.get_field_index("vector"), "vector", column)
    added, _ = rows(300, "b", rng, centres)
    # An edit leaves blocks of other sizes: the kept rows of touched blocks, and the new rows.
    edited = SearchSnapshot.from_arrow(table).replace_paths(["t/7.md", *(f"b/{i}.md" for i in range(30))], added)
    loaded, _ = _saved_and_mapped(edited, table.schema, tmp_path)
    assert loaded.compact and list(loaded.ids) == list(edited.ids)
    assert np.array_equal(loaded.has_vector, edited.has_vector)
    for row in range(0, len(edited), 7):
        assert loaded.text(row) == edited.text(row)
        before, after = edited.vector(row), loaded.vector(row)
        assert (before is None) == (after is None)
        assert before is None or np.array_equal(before, after)
    for i in (1, 99, 4321):
        query = near(vectors[i], rng)
        assert top_ids(loaded, query) == top_ids(edited, query)


def test_a_saved_compact_snapshot_is_searched_from_the_file_without_a_copy_of_its_codes(
        small_compact_size: int, rng: np.random.Generator, centres: np.ndarray, tmp_path: Path) -> None:
    table, vectors = rows(9000, "t", rng, centres)
    snapshot = SearchSnapshot.from_arrow(table)
    loaded, file = _saved_and_mapped(snapshot, table.schema, tmp_path)
    assert file.source is not None and len(loaded.blocks) == len(snapshot.blocks) > 1
    assert all(file.source.holds(block.ctypes.data) for block in loaded.blocks)
    for i in (5, 4567, 8999):
        query = near(vectors[i], rng)
        assert top_ids(loaded, query) == top_ids(snapshot, query)


# ----- through a real index (LanceDB, Tantivy) ------------------------------------------------------
def facts(workspace: Path, first: int, count: int) -> None:
    """``count`` topic files of five facts each, file numbers from ``first``."""
    for n in range(first, first + count):
        lines = "\n".join(f"- Fact {n}-{j}: the crate numbered {n * 10 + j} holds item{n}x{j}." for j in range(5))
        write(workspace, f"memory/topics/f{n:04d}.md", f"# Facts {n}\n\n{lines}\n")


def found(memory: Memory, n: int, j: int) -> bool:
    return any(f"item{n}x{j}" in hit.snippet for hit in memory.search(f"crate {n * 10 + j} item{n}x{j}"))


@pytest.fixture
def compact_workspace(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setattr(compact, "COMPACT_FROM", 150)
    monkeypatch.setattr(compact, "MIN_CANDIDATES", 64)
    facts(settings.workspace, 0, 60)  # 60 files, a chunk each
    return settings


def test_a_workspace_growing_past_the_size_while_searched_keeps_answering(compact_workspace: Settings) -> None:
    workspace = compact_workspace.workspace
    with Memory(compact_workspace, embedder=HashEmbedder(DIMS)) as memory:
        memory.index()
        assert found(memory, 7, 2)
        assert not memory.engine.searcher.snapshot.compact
        for first in range(60, 300, 60):
            facts(workspace, first, 60)
            memory.index()  # sync and embed
            assert found(memory, first + 5, 1), first  # the newest memory is found at once
            assert found(memory, 7, 2), first  # and the oldest
        snapshot = memory.engine.searcher.snapshot
        assert snapshot.compact and len(snapshot) >= 300
    with Memory(compact_workspace, embedder=HashEmbedder(DIMS)) as memory:
        assert found(memory, 250, 3)
        assert memory.engine.searcher.snapshot.compact


def corrupt_cells(path: Path) -> None:
    """Rewrite the saved compact snapshot, tag kept, with cells that name no centroid."""
    with pa.OSFile(str(path), "rb") as source:
        table = pyarrow.ipc.open_file(source).read_all()
    metadata = table.schema.metadata
    broken = table.set_column(table.column_names.index(CELL_COLUMN), CELL_COLUMN,
                              pa.array(np.full(table.num_rows, 30000, np.int16)))
    broken = broken.replace_schema_metadata(metadata)
    with pa.OSFile(str(path), "wb") as sink, pyarrow.ipc.new_file(sink, broken.schema) as writer:
        writer.write_table(broken)


@pytest.mark.parametrize("damage", ["cells", "torn", "temporary"])
def test_a_damaged_compact_file_costs_no_answer_and_is_repaired(compact_workspace: Settings, damage: str) -> None:
    facts(compact_workspace.workspace, 60, 140)
    with Memory(compact_workspace, embedder=HashEmbedder(DIMS)) as memory:
        memory.index()
        assert found(memory, 150, 4)
        assert memory.engine.searcher.snapshot.compact
    path = saved_path(compact_workspace.index_dir)
    tag = read_tag(path)
    assert tag is not None
    with pa.OSFile(str(path), "rb") as source:
        assert CODES_COLUMN in pyarrow.ipc.open_file(source).schema.names  # saved compact
    if damage == "cells":
        corrupt_cells(path)
        assert read_tag(path) == tag  # the tag alone does not tell
    elif damage == "torn":  # a process killed while writing over the file in place
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    else:  # killed mid-save: a half-written temporary file beside a missing snapshot
        (path.parent / ".snapshot-killed.tmp").write_bytes(path.read_bytes()[:1000])
        path.unlink()
    with Memory(compact_workspace, embedder=HashEmbedder(DIMS)) as memory:
        assert found(memory, 150, 4)
        assert found(memory, 3, 0)
        assert memory.engine.searcher.snapshot.compact
    assert read_tag(path) == tag  # saved again, whole
    with Memory(compact_workspace, embedder=HashEmbedder(DIMS)) as memory:
        assert found(memory, 199, 2)
        assert memory.engine.snapshot_from_saved


def _answers(memory: Memory) -> list[list[tuple[str, float]]]:
    return [[(hit.citation, hit.score) for hit in memory.search(f"crate {n * 10 + 2} item{n}x2")] for n in (3, 77, 150)]


def test_a_large_table_is_read_into_the_saved_file_and_searched_from_it_with_the_same_answers(
        compact_workspace: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """A load of compact size writes the file a batch at a time and searches from it (its texts and
    codes stay in the file): the same cells and answers as a load into memory."""
    facts(compact_workspace.workspace, 60, 140)
    with Memory(compact_workspace, embedder=HashEmbedder(DIMS)) as memory:
        memory.index()
    path = saved_path(compact_workspace.index_dir)
    path.unlink()
    with monkeypatch.context() as patched:
        patched.setattr(Engine, "_load_through_saved", lambda self, *args: False)
        with Memory(compact_workspace, embedder=HashEmbedder(DIMS)) as memory:
            in_memory = _answers(memory)
            centroids = memory.engine.searcher.snapshot.centroids
            assert not memory.engine.snapshot_from_saved  # read into memory, then saved
    path.unlink()  # saved by that load: the next one reads the table again
    with Memory(compact_workspace, embedder=HashEmbedder(DIMS)) as memory:
        assert _answers(memory) == in_memory
        snapshot = memory.engine.searcher.snapshot
        assert snapshot.compact and snapshot.source is not None and memory.engine.snapshot_from_saved
        assert snapshot.centroids is not None and centroids is not None
        assert np.array_equal(snapshot.centroids, centroids)  # the same sample, in the same order
    assert read_tag(path) is not None


def test_a_large_table_that_cannot_be_saved_is_read_into_memory(
        compact_workspace: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    facts(compact_workspace.workspace, 60, 140)
    with Memory(compact_workspace, embedder=HashEmbedder(DIMS)) as memory:
        memory.index()
    saved_path(compact_workspace.index_dir).unlink()

    def disk_full(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(saved_snapshot, "save", disk_full)
    with Memory(compact_workspace, embedder=HashEmbedder(DIMS)) as memory:
        assert found(memory, 150, 4) and found(memory, 3, 0)
        assert memory.engine.searcher.snapshot.compact and not memory.engine.snapshot_from_saved
    assert not saved_path(compact_workspace.index_dir).exists()
    assert not list(compact_workspace.index_dir.glob(".snapshot-*.tmp"))


@pytest.mark.parametrize("rebuild_min", [4, 1_000_000])
def test_row_numbers_by_id_stay_right_through_many_edits(
        monkeypatch: pytest.MonkeyPatch, rng: np.random.Generator, centres: np.ndarray, rebuild_min: int) -> None:
    """Keyword hits are turned into rows by id: after any run of edits, each id names its row, a removed one none."""
    from mcp_memory.index import row_index

    monkeypatch.setattr(row_index, "_REBUILD_MIN", rebuild_min)  # 4: rebuilt now and then; else only patched
    table, _ = rows(400, "t", rng, centres)
    snapshot = SearchSnapshot.from_arrow(table)
    removed: set[str] = set()
    for edit in range(40):
        path = f"t/{int(rng.integers(0, 40))}.md"
        count = int(rng.integers(0, 12))
        fresh, _ = rows(count, "t", rng, centres)
        fresh = fresh.set_column(0, "id", pa.array([f"e{edit}-{i}" for i in range(count)]))
        fresh = fresh.set_column(1, "path", pa.array([path] * count, pa.string()))
        before = {cid for cid, p in zip(snapshot.ids, snapshot.paths, strict=True) if p == path}
        snapshot = snapshot.replace_paths([path], fresh)
        removed |= before
        assert dict(snapshot.row_of) == {cid: row for row, cid in enumerate(snapshot.ids)}
        assert all(snapshot.row_of.get(cid) is None for cid in removed)
        assert snapshot.path_codes is not None
        assert [snapshot.path_code_of[p] for p in snapshot.paths] == snapshot.path_codes.tolist()


def test_a_compact_row_gives_back_its_vector(small_compact_size: int, rng: np.random.Generator,
                                             centres: np.ndarray) -> None:
    """A shown memory looks for its later neighbours with its own vector: read back from the codes."""
    table, vectors = rows(6000, "t", rng, centres)
    snapshot = SearchSnapshot.from_arrow(table)
    vector = snapshot.vector(4444)
    assert vector is not None and vector.dtype == np.float32
    assert np.allclose(vector, vectors[4444], atol=0.01)
    assert top_ids(snapshot, vector)[0] == "t-4444"
