"""The search snapshot follows the index by re-reading only the changed files' rows.

After every kind of write (store, edit, new file, deleted file, renamed file, forget, vector
backfill, a write by another process) the snapshot refreshed in place must hold exactly the
rows a full reload holds, and search must answer the same. Whenever the record of changes
cannot be trusted (a gap, a pruned record, a rebuild, rows it does not name, an error), the
snapshot is reloaded whole instead.
"""

from __future__ import annotations

import random
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from conftest import HashEmbedder, write
from mcp_memory.config import Settings, load_settings
from mcp_memory.core.analysis import TermAnalyzer
from mcp_memory.core.privacy import PrivacyRules
from mcp_memory.index import snapshot as snapshot_module
from mcp_memory.index import state as state_module
from mcp_memory.index.snapshot import SearchSnapshot
from mcp_memory.index.state import FileState, IndexState
from mcp_memory.index.vectors import VectorStore
from mcp_memory.memory import Memory

TESTS = Path(__file__).resolve().parent
WORDS = ["harbor", "lantern", "quartz", "meadow", "falcon", "ember", "cobalt", "willow", "saffron", "glacier",
         "orchid", "basalt", "tundra", "citrus", "marble", "velvet", "prism", "cedar", "comet", "dune", "fjord",
         "garnet", "heron", "ivory", "jasper", "kelp", "lagoon", "magnet", "nectar", "onyx", "pebble", "quill",
         "raven", "sierra", "thistle", "umber", "vortex", "walnut", "yarrow", "zephyr"]
QUERIES = ["harbor lantern", "quartz falcon meadow", "cobalt glacier", "orchid tundra basalt", "zephyr walnut",
           "comet dune", "the fjord heron"]
ODD = "memory/it's a \"quoted\" 50% back\\slash ü.md"  # quotes and the like in a LanceDB filter


def note(rng: random.Random, title: str, lines: int = 6) -> str:
    body = "\n".join("- " + " ".join(rng.sample(WORDS, 6)) for _ in range(lines))
    return f"# {title}\n\n{body}\n"


def seed(workspace: Path, files: int = 12) -> None:
    rng = random.Random(7)
    for i in range(files):
        write(workspace, f"memory/topics/t{i:02d}.md", note(rng, f"Topic {i}"))
    write(workspace, "memory/2026-03-01.md", "# 2026-03-01\n\n" + note(rng, "Day", 4))
    write(workspace, "MEMORY.md", "# Memory\n\n- evergreen harbor lantern quartz\n")
    write(workspace, ODD, note(rng, "Odd"))


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How often the snapshot was loaded whole, and how often by the rows of some paths."""
    counts = {"full": 0, "paths": 0}
    full, by_paths = VectorStore.snapshot_row_batches, VectorStore.snapshot_rows_of

    def counted_full(self: VectorStore, *args: Any) -> Any:
        counts["full"] += 1
        return full(self, *args)

    def counted_paths(self: VectorStore, paths: Any) -> pa.Table:
        counts["paths"] += 1
        return by_paths(self, paths)

    monkeypatch.setattr(VectorStore, "snapshot_row_batches", counted_full)
    monkeypatch.setattr(VectorStore, "snapshot_rows_of", counted_paths)
    return counts


def open_memory(settings: Settings, embedded: bool) -> Memory:
    memory = Memory(settings, embedder=HashEmbedder() if embedded else None)
    memory.index()
    return memory


def rows_by_id(snap: SearchSnapshot) -> dict[str, tuple[Any, ...]]:
    """Every row's data by chunk id, after checking the snapshot's parts agree with each other."""
    n = len(snap.ids)
    assert len(snap.paths) == len(snap.dates) == len(snap.texts) == len(snap.start_lines) == len(snap.end_lines) == n
    assert dict(snap.row_of) == {cid: i for i, cid in enumerate(snap.ids)}
    assert len(snap.row_of) == n, "duplicate chunk ids"
    assert snap.has_vector.shape == (n,)
    assert np.array_equal(snap.vector_rows, np.flatnonzero(snap.has_vector))
    assert all(len(block) and not block.flags.writeable for block in snap.blocks)
    vectors = np.concatenate(snap.blocks) if snap.blocks else np.zeros((0, 0), np.float32)
    assert vectors.shape[0] == len(snap.vector_rows)
    vector_of = {int(row): vectors[i] for i, row in enumerate(snap.vector_rows)}
    return {
        cid: (snap.paths[i], int(snap.start_lines[i]), int(snap.end_lines[i]), snap.dates[i], snap.texts[i].as_py(),
              None if i not in vector_of else tuple(vector_of[i].tolist()))
        for i, cid in enumerate(snap.ids)
    }


def full_reload(memory: Memory) -> SearchSnapshot:
    """The snapshot a fresh process would load (read without the counted methods)."""
    vectors = memory.engine.vectors
    vectors.refresh()
    return SearchSnapshot.from_arrow(vectors.to_arrow().select(vectors.snapshot_columns))


def answers(memory: Memory) -> list[list[tuple[Any, ...]]]:
    """Every query's hits; hits of equal score in a fixed order (ties may come in either order)."""
    out = []
    for query in QUERIES:
        hits = memory.search(query, max_results=8, min_score=0)
        out.append(sorted(((-h.score, h.path, h.start_line, h.end_line, h.snippet, h.vector_similarity)
                           for h in hits), key=lambda hit: hit[:4]))
    return out


def assert_like_full_reload(memory: Memory) -> SearchSnapshot:
    """The engine's current snapshot holds the rows of a full reload, and search answers alike."""
    engine = memory.engine
    engine.refresh_snapshot()
    refreshed = engine.searcher.snapshot
    full = full_reload(memory)
    assert rows_by_id(refreshed) == rows_by_id(full)
    got = answers(memory)
    engine.searcher.set_snapshot(full)
    try:
        assert got == answers(memory)
    finally:
        engine.searcher.set_snapshot(refreshed)
    return refreshed


def resync(memory: Memory) -> None:
    """Sync the files and give new rows their vectors, as the server's background loop does."""
    memory.sync()
    memory.backfill()


# ----- every kind of write -----------------------------------------------------------------------
@pytest.mark.parametrize("embedded", [True, False], ids=["vectors", "keyword-only"])
def test_every_write_refreshes_only_the_changed_rows(workspace, settings, reads, embedded):
    seed(workspace)
    memory = open_memory(settings, embedded)
    memory.search("warm")
    assert reads == {"full": 1, "paths": 0}
    rng = random.Random(11)

    def step(action: Any) -> None:
        before = dict(reads)
        action()
        memory.search("anything")
        assert reads["full"] == before["full"], "a full reload where the changed rows were enough"
        assert reads["paths"] > before["paths"]
        assert_like_full_reload(memory)

    step(lambda: memory.store("The harbor lantern was repainted cobalt on Tuesday", today=None))
    step(lambda: (write(workspace, "memory/topics/t03.md", note(rng, "Topic 3 edited", 9)), resync(memory)))
    step(lambda: (write(workspace, "memory/topics/new.md", note(rng, "A new topic")), resync(memory)))
    step(lambda: ((workspace / "memory/topics/t05.md").unlink(), resync(memory)))
    step(lambda: ((workspace / "memory/topics/t07.md").rename(workspace / "memory/topics/renamed.md"),
                  resync(memory)))
    step(lambda: (write(workspace, ODD, note(rng, "Odd, edited")), resync(memory)))
    # Two files at once, one of them shrinking to a single chunk.
    step(lambda: (write(workspace, "memory/topics/t01.md", "# One\n\n- saffron prism\n"),
                  write(workspace, "memory/topics/t02.md", note(rng, "Two", 30)), resync(memory)))
    step(lambda: memory.editor.forget(path="memory/topics/t00.md", line=3, confirm=True))
    # Several writes between two searches.
    step(lambda: [(write(workspace, f"memory/topics/t1{i}.md", note(rng, f"Again {i}")), resync(memory))
                  for i in range(2)])
    memory.close()


def test_term_and_privacy_caches_follow_their_rows(workspace, settings):
    seed(workspace)
    memory = open_memory(settings, embedded=True)
    engine = memory.engine
    memory.search("harbor")
    old = engine.searcher.snapshot
    analyzer = TermAnalyzer()
    for row in range(len(old)):
        engine.searcher.row_terms(old, row)
    rules = PrivacyRules.from_settings(["MEMORY.md", "memory/topics/t0*"])
    old.hidden_mask(rules)

    write(workspace, "memory/topics/t04.md", "# Four\n\n- a wholly new walnut yarrow line\n")
    write(workspace, "memory/topics/t00-new.md", "# New\n\n- fresh vortex umber\n")
    resync(memory)
    engine.refresh_snapshot()
    new = engine.searcher.snapshot
    assert new is not old
    assert new.terms, "the cached terms of unchanged rows are kept"
    for row, terms in new.terms.items():
        assert terms == analyzer.terms(new.texts[row].as_py())
    assert np.array_equal(new.hidden[rules], np.array([rules.is_private(p) for p in new.paths], bool))
    # The old snapshot, which a search in another thread may still hold, is untouched.
    assert rows_by_id(old) != rows_by_id(new)
    assert dict(old.row_of) == {cid: i for i, cid in enumerate(old.ids)}
    memory.close()


def test_backfilled_vectors_reach_the_snapshot(workspace, settings, reads):
    seed(workspace)
    memory = open_memory(settings, embedded=True)
    memory.search("warm")
    write(workspace, "memory/topics/late.md", note(random.Random(3), "Embedded later", 12))
    memory.sync()  # rows now, vectors later
    memory.search("warm")
    snap = memory.engine.searcher.snapshot
    late = [i for i, p in enumerate(snap.paths) if p == "memory/topics/late.md"]
    assert late and not snap.has_vector[late].any()
    assert_like_full_reload(memory)

    full_reads = reads["full"]
    assert memory.backfill() == len(late)
    memory.search("warm")
    snap = memory.engine.searcher.snapshot
    late = [i for i, p in enumerate(snap.paths) if p == "memory/topics/late.md"]
    assert snap.has_vector[late].all()
    assert reads["full"] == full_reads
    assert_like_full_reload(memory)
    memory.close()


# ----- another process ---------------------------------------------------------------------------
CHILD = """
import sys
sys.path[:0] = [{tests!r}, {root!r}]
from pathlib import Path
from conftest import HashEmbedder
from mcp_memory.config import load_settings
from mcp_memory.memory import Memory

ws = Path({workspace!r})
memory = Memory(load_settings(ws, environ={{}}), embedder=HashEmbedder())
memory.store("glacier saffron written by another process")
(ws / "memory/topics/t06.md").write_text("# Six\\n\\n- rewritten by another process: onyx quill\\n", encoding="utf-8")
(ws / "memory/topics/t08.md").unlink()
memory.sync()
memory.backfill()
memory.close()
"""


def test_a_write_by_another_process_is_seen_incrementally(workspace, settings, reads):
    seed(workspace)
    memory = open_memory(settings, embedded=True)
    memory.search("warm")
    script = CHILD.format(tests=str(TESTS), root=str(TESTS.parent), workspace=str(workspace))
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr

    full_reads = reads["full"]
    assert any("another process" in h.snippet for h in memory.search("glacier saffron"))
    assert "memory/topics/t06.md" in [h.path for h in memory.search("onyx quill")]
    assert "memory/topics/t08.md" not in memory.engine.searcher.snapshot.paths
    assert reads["full"] == full_reads
    assert_like_full_reload(memory)
    memory.close()


# ----- falling back to a full reload -------------------------------------------------------------
def legacy_bump(settings: Settings) -> None:
    """A generation change with no record, as a process running an older version writes it."""
    conn = sqlite3.connect(settings.index_dir / "state.sqlite")
    with conn:
        conn.execute("UPDATE meta SET value = 'legacy-token' WHERE key = 'generation'")
    conn.close()


def test_a_gap_in_the_record_means_a_full_reload(workspace, settings, reads):
    seed(workspace)
    memory = open_memory(settings, embedded=True)
    memory.search("warm")
    # A write that left no record, then one that did: the chain from the snapshot is broken.
    (workspace / "memory/topics/t09.md").unlink()
    memory.engine.vectors.replace_paths(["memory/topics/t09.md"], [], {})
    legacy_bump(settings)
    write(workspace, "memory/topics/t10.md", note(random.Random(5), "Ten"))
    resync(memory)
    full_reads = reads["full"]
    memory.search("warm")
    assert reads["full"] == full_reads + 1
    assert "memory/topics/t09.md" not in memory.engine.searcher.snapshot.paths
    assert_like_full_reload(memory)

    # From the reloaded snapshot on, changes are followed by their rows again.
    write(workspace, "memory/topics/t11.md", note(random.Random(6), "Eleven"))
    resync(memory)
    memory.search("warm")
    assert reads["full"] == full_reads + 1
    assert_like_full_reload(memory)
    memory.close()


def test_a_pruned_record_means_a_full_reload(workspace, settings, reads, monkeypatch):
    monkeypatch.setattr(state_module, "KEEP_CHANGES", 3)
    seed(workspace)
    memory = open_memory(settings, embedded=True)
    memory.search("warm")
    rng = random.Random(8)
    for i in range(4):
        write(workspace, f"memory/topics/t0{i}.md", note(rng, f"Pruned {i}"))
        resync(memory)
    full_reads = reads["full"]
    memory.search("warm")
    assert reads["full"] == full_reads + 1
    assert_like_full_reload(memory)
    memory.close()


@pytest.mark.parametrize("how", ["rebuild", "clear files"])
def test_a_rebuild_means_a_full_reload(workspace, settings, reads, how):
    seed(workspace)
    memory = open_memory(settings, embedded=True)
    memory.search("warm")
    if how == "rebuild":
        memory.engine.indexer.rebuild("a test rebuild")
    else:
        memory.engine.state.clear_files()
    resync(memory)
    full_reads = reads["full"]
    memory.search("warm")
    assert reads["full"] == full_reads + 1
    assert_like_full_reload(memory)
    memory.close()


def test_rows_the_record_does_not_name_mean_a_full_reload(workspace, settings, reads):
    seed(workspace)
    memory = open_memory(settings, embedded=True)
    memory.search("warm")
    # Rows deleted without a record (a process killed between its writes), then a recorded
    # write of one file (as after an edit: no full sync, which would notice the missing rows).
    memory.engine.vectors.replace_paths(["memory/topics/t04.md"], [], {})
    write(workspace, "memory/topics/t10.md", note(random.Random(5), "Ten"))
    memory.engine.sync(only={"memory/topics/t10.md"})
    full_reads, path_reads = reads["full"], reads["paths"]
    memory.search("warm")
    assert reads["paths"] == path_reads + 1 and reads["full"] == full_reads + 1
    assert "memory/topics/t04.md" not in memory.engine.searcher.snapshot.paths
    assert_like_full_reload(memory)
    memory.close()


def test_an_error_reading_the_changed_rows_means_a_full_reload(workspace, settings, reads, monkeypatch):
    seed(workspace)
    memory = open_memory(settings, embedded=True)
    memory.search("warm")

    def broken(self: VectorStore, paths: Any) -> pa.Table:
        raise RuntimeError("lance error: simulated")

    monkeypatch.setattr(VectorStore, "snapshot_rows_of", broken)
    write(workspace, "memory/topics/t10.md", note(random.Random(5), "Ten"))
    resync(memory)
    full_reads = reads["full"]
    memory.search("warm")
    assert reads["full"] == full_reads + 1
    assert_like_full_reload(memory)
    memory.close()


def test_switched_off_it_reloads_whole(workspace, settings, reads):
    seed(workspace)
    memory = open_memory(settings, embedded=True)
    memory.engine.incremental_snapshot = False
    memory.search("warm")
    write(workspace, "memory/topics/t10.md", note(random.Random(5), "Ten"))
    resync(memory)
    memory.search("warm")
    assert reads == {"full": 2, "paths": 0}
    assert_like_full_reload(memory)
    memory.close()


# ----- the record itself -------------------------------------------------------------------------
def test_the_record_names_the_paths_changed_since_a_generation(tmp_path: Path):
    state = IndexState(tmp_path / "state.sqlite")
    start = state.generation
    assert state.changes_since(start) == (start, frozenset())

    def file(path: str) -> FileState:
        return FileState(path, 1, 1, "h", 1)

    state.record_files([file("a.md"), file("b.md")], ["gone.md"])
    middle = state.generation
    state.bump_generation({"b.md", "c.md"})
    end = state.generation
    assert len({start, middle, end}) == 3
    assert state.changes_since(start) == (end, frozenset({"a.md", "b.md", "gone.md", "c.md"}))
    assert state.changes_since(middle) == (end, frozenset({"b.md", "c.md"}))
    assert state.changes_since(end) == (end, frozenset())
    assert state.changes_since("unknown") == (end, None)

    state.bump_generation()  # any row may have changed
    assert state.changes_since(end)[1] is None
    after_rebuild = state.generation
    state.bump_generation(["d.md"])
    assert state.changes_since(after_rebuild)[1] == frozenset({"d.md"})
    assert state.changes_since(end)[1] is None  # the rebuild lies in between

    state.clear_files()
    assert state.changes_since(after_rebuild)[1] is None
    state.close()


def test_the_record_is_pruned_to_the_last_generations(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(state_module, "KEEP_CHANGES", 5)
    state = IndexState(tmp_path / "state.sqlite")
    seen = [state.generation]
    for i in range(8):
        state.bump_generation([f"f{i}.md"])
        seen.append(state.generation)
    assert state.changes_since(seen[2])[1] is None  # its successor's entry is gone
    assert state.changes_since(seen[3]) == (seen[-1], frozenset({f"f{i}.md" for i in range(3, 8)}))
    count = sqlite3.connect(tmp_path / "state.sqlite").execute("SELECT COUNT(*) FROM changes").fetchone()[0]
    assert count == 5
    state.close()


def test_replace_paths_keeps_rows_of_other_paths_and_adds_new_ones():
    def table(rows: list[tuple[str, str, list[float] | None]]) -> pa.Table:
        return pa.table({
            "id": pa.array([r[0] for r in rows], pa.string()),
            "path": pa.array([r[1] for r in rows], pa.string()),
            "start_line": pa.array([1] * len(rows), pa.int32()),
            "end_line": pa.array([2] * len(rows), pa.int32()),
            "date": pa.array([None] * len(rows), pa.date32()),
            "text": pa.array([f"text of {r[0]}" for r in rows], pa.string()),
            "vector": pa.array([r[2] for r in rows], pa.list_(pa.float32(), 2)),
        })

    old = SearchSnapshot.from_arrow(table([("a1", "a", [1, 0]), ("b1", "b", None), ("b2", "b", [0, 1]),
                                           ("c1", "c", [1, 1])]))
    new = old.replace_paths({"b", "d"}, table([("b3", "b", [2, 2]), ("d1", "d", None)]))
    assert new.ids == ["a1", "c1", "b3", "d1"]
    assert rows_by_id(new) == rows_by_id(SearchSnapshot.from_arrow(
        table([("a1", "a", [1, 0]), ("c1", "c", [1, 1]), ("b3", "b", [2, 2]), ("d1", "d", None)])))
    assert len(old) == 4 and old.ids == ["a1", "b1", "b2", "c1"]  # untouched
    # Rows of the last file replaced: row numbers before it stay (row_of patched, not rebuilt).
    tail = new.replace_paths({"d"}, table([("d2", "d", [7, 7]), ("d3", "d", None)]))
    assert tail.ids == ["a1", "c1", "b3", "d2", "d3"]
    assert rows_by_id(tail)["d2"][-1] == (7.0, 7.0)
    assert dict(new.row_of) == {"a1": 0, "c1": 1, "b3": 2, "d1": 3}

    # Everything replaced by nothing, then rows added to an empty snapshot.
    emptied = new.replace_paths({"a", "b", "c", "d"}, table([]))
    assert len(emptied) == 0 and emptied.blocks == ()
    refilled = emptied.replace_paths({"e"}, table([("e1", "e", [3, 4])]))
    assert rows_by_id(refilled) == {"e1": ("e", 1, 2, None, "text of e1", (3.0, 4.0))}
    with pytest.raises(ValueError, match="not being replaced"):
        old.replace_paths({"a"}, table([("x1", "x", None)]))


def test_paths_in_the_record_are_exactly_the_changed_files(workspace, settings):
    """A sync records the files it rewrote; an untouched file is not re-read."""
    seed(workspace)
    memory = open_memory(settings, embedded=False)
    state = memory.engine.state
    before = state.generation
    write(workspace, "memory/topics/t02.md", "# Two\n\n- changed\n")
    (workspace / "memory/topics/t03.md").unlink()
    memory.sync()
    assert state.changes_since(before)[1] == {"memory/topics/t02.md", "memory/topics/t03.md"}
    memory.close()


def test_keyword_only_settings_follow_changes_too(workspace, reads):
    """Keyword-only mode by configuration (no vector column at all)."""
    seed(workspace)
    settings = load_settings(workspace, overrides={"embedding.provider": "none"}, environ={})
    memory = Memory(settings)
    memory.sync()
    memory.search("warm")
    write(workspace, "memory/topics/t02.md", "# Two\n\n- changed harbor\n")
    memory.sync()
    memory.search("warm")
    assert reads == {"full": 1, "paths": 1}
    assert_like_full_reload(memory)
    memory.close()


def vector_table(rows: list[tuple[str, str, list[float] | None]], dims: int = 2) -> pa.Table:
    return pa.table({
        "id": pa.array([r[0] for r in rows], pa.string()),
        "path": pa.array([r[1] for r in rows], pa.string()),
        "start_line": pa.array([1] * len(rows), pa.int32()),
        "end_line": pa.array([1] * len(rows), pa.int32()),
        "date": pa.array([None] * len(rows), pa.date32()),
        "text": pa.array([r[0] for r in rows], pa.string()),
        "vector": pa.array([r[2] for r in rows], pa.list_(pa.float32(), dims)),
    })


def test_a_vector_seen_by_an_old_snapshot_never_changes():
    snap = SearchSnapshot.from_arrow(vector_table([("a1", "a", [1, 2]), ("b1", "b", [3, 4])]))
    row = snap.blocks[0][1]  # a view that outlives its snapshot
    for i in range(4):
        snap = snap.replace_paths({"a"}, vector_table([("a1", "a", [10 + i, 20 + i])]))
        assert np.array_equal(row, [3, 4])
    assert np.array_equal(np.concatenate(snap.blocks), [[3, 4], [13, 23]])
    with pytest.raises(ValueError, match="read-only"):
        snap.blocks[0][0, 0] = 5


def test_an_edit_shares_the_untouched_vector_blocks(monkeypatch):
    monkeypatch.setattr(snapshot_module, "BLOCK_ROWS", 4)
    rows = [(f"f{i // 2}.{i % 2}", f"f{i // 2}", [float(i), 1.0]) for i in range(20)]  # ten files of two rows
    old = SearchSnapshot.from_arrow(vector_table(rows))
    assert [len(block) for block in old.blocks] == [4] * 5
    new = old.replace_paths({"f3"}, vector_table([("f3.new", "f3", [-1.0, 1.0])]))
    # f3 is rows 6 and 7, the second half of block 1: its first half stays, as a view of it.
    assert len(new.blocks) == 6
    assert all(new.blocks[i] is old.blocks[i] for i in (0, 2, 3, 4))
    assert new.blocks[1].base is old.blocks[1] and len(new.blocks[1]) == 2
    assert np.array_equal(new.blocks[5], [[-1.0, 1.0]])
    rows_of_new = [r for r in rows if r[1] != "f3"] + [("f3.new", "f3", [-1.0, 1.0])]
    assert rows_by_id(new) == rows_by_id(SearchSnapshot.from_arrow(vector_table(rows_of_new)))
    sims_rows, sims = new.similarities(np.array([1.0, 0.0], np.float32))
    assert sims_rows.tolist() == list(range(19))
    assert sims.tolist() == [float(i) for i in range(20) if i not in (6, 7)] + [-1.0]
    # A query of another size matches nothing (an index made with another embedder).
    assert len(new.similarities(np.ones(3, np.float32))[1]) == 0


def test_many_edits_keep_the_pieces_bounded(monkeypatch):
    # Up to 160 rows in blocks of 16: the floor of 20 blocks is the limit throughout; the
    # same for the pieces of the text column.
    monkeypatch.setattr(snapshot_module, "BLOCK_ROWS", 16)
    monkeypatch.setattr(snapshot_module, "MAX_BLOCKS", 20)
    monkeypatch.setattr(snapshot_module, "TEXT_PIECE_ROWS", 16)
    monkeypatch.setattr(snapshot_module, "MAX_TEXT_PIECES", 20)
    rng = random.Random(4)
    files = {f"f{i:02d}": [[float(i), float(j)] for j in range(3)] for i in range(40)}  # 120 rows, 8 blocks

    def table_of(paths: list[str]) -> pa.Table:
        return vector_table([(f"{path}.{j}", path, vector) for path in paths for j, vector in enumerate(files[path])])

    snap = SearchSnapshot.from_arrow(table_of(sorted(files)))
    order = sorted(files)
    for version in range(200):
        path = rng.choice(order)
        files[path] = [[float(version), float(j)] for j in range(rng.randrange(1, 5))]
        old_blocks = snap.blocks
        snap = snap.replace_paths({path}, table_of([path]))
        order = [p for p in order if p != path] + [path]
        assert len(snap.blocks) <= 20, version
        assert max(len(block) for block in snap.blocks) <= 16
        # Besides the new rows' block only the joins made new blocks (a cut adds one block, the
        # new rows another, so two joins at most); every other block is an old one or a view of one.
        fresh = [b for b in snap.blocks if not any(np.may_share_memory(b, o) for o in old_blocks)]
        assert len(fresh) <= 3, version
        assert np.array_equal(np.concatenate(snap.blocks),
                              np.array([v for p in order for v in files[p]], np.float32)), version
        assert snap.texts.num_chunks <= 20
        assert snap.texts.to_pylist() == [f"{p}.{j}" for p in order for j in range(len(files[p]))]


def test_a_reopened_memory_loads_its_snapshot_again(workspace, settings):
    seed(workspace)
    memory = open_memory(settings, embedded=False)
    assert memory.search("harbor lantern")
    memory.close()
    memory.open()
    assert memory.search("harbor lantern")
    memory.close()


def test_a_write_that_changed_no_rows_reads_nothing(workspace, settings, reads):
    seed(workspace)
    memory = open_memory(settings, embedded=True)
    memory.search("warm")
    before, generation = dict(reads), memory.engine.state.generation
    memory.engine.state.record_files([], [])
    assert memory.engine.state.changes_since(generation)[1] == frozenset()
    memory.search("warm")
    assert reads == before
    assert_like_full_reload(memory)
    memory.close()


def test_many_replacements_in_a_row_keep_every_row_right():
    """Replacements of random files (often the last one again), each checked against a model of the rows."""
    rng = random.Random(3)

    def rows_of(path: str, version: int) -> list[tuple[str, str, list[float] | None, int]]:
        count = rng.randrange(0, 4)
        return [(f"{path}#{version}.{i}", path, None if rng.random() < 0.2 else [rng.random(), rng.random(), 1.0],
                 i + 1) for i in range(count)]

    def table(rows: list[tuple[str, str, list[float] | None, int]]) -> pa.Table:
        return pa.table({
            "id": pa.array([r[0] for r in rows], pa.string()),
            "path": pa.array([r[1] for r in rows], pa.string()),
            "start_line": pa.array([r[3] for r in rows], pa.int32()),
            "end_line": pa.array([r[3] for r in rows], pa.int32()),
            "date": pa.array([None] * len(rows), pa.date32()),
            "text": pa.array([r[0] for r in rows], pa.string()),
            "vector": pa.array([r[2] for r in rows], pa.list_(pa.float32(), 3)),
        })

    files = {f"f{i}": rows_of(f"f{i}", 0) for i in range(8)}
    snap = SearchSnapshot.from_arrow(table([r for rows in files.values() for r in rows]))
    for version in range(1, 60):
        changed = set(rng.sample(sorted(files), rng.choice([1, 1, 1, 2, 3])))
        if rng.random() < 0.5:
            changed = {sorted(files)[-1]} | ({"f7"} if rng.random() < 0.5 else set())  # often the same file
        for path in changed:
            files[path] = rows_of(path, version)
        snap = snap.replace_paths(changed, table([r for path in sorted(changed) for r in files[path]]))
        # The model, not another snapshot: that would take the reusable memory this test is about.
        expected = {cid: (path, line, line, None, cid,
                          None if vector is None else tuple(np.asarray(vector, np.float32).tolist()))
                    for rows in files.values() for cid, path, vector, line in rows}
        assert rows_by_id(snap) == expected, version
