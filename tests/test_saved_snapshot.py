"""A new process searches from the saved search snapshot, never from a stale one.

The saved copy (``index/saved_snapshot.py``) spares a cold process ``import lancedb`` and the
read of the chunk table; it may only ever be read when it holds exactly what the index holds.
Each test asks what a user would: the same hits as before, the newest memory found, no error.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

from conftest import HashEmbedder, write
from mcp_memory.config import Settings, load_settings
from mcp_memory.index.saved_snapshot import read_tag, saved_path
from mcp_memory.index.snapshot import SearchSnapshot
from mcp_memory.memory import Memory
from mcp_memory.runtime.service import MemoryService

QUERY = "which harbor does the ferry leave from"


def seeded(workspace: Path) -> None:
    write(workspace, "MEMORY.md", "# Memory\n\n- The ferry leaves from the north harbor at dawn.\n")
    write(workspace, "memory/2026-03-01.md", "# 2026-03-01\n\n- Lunch was soup.\n- The lantern needs oil.\n")
    write(workspace, "memory/topics/boats.md", "# Boats\n\n- The red boat is moored at pier four.\n")


def memory_of(settings: Settings, dims: int = 64) -> Memory:
    return Memory(settings, embedder=HashEmbedder(dims))


def answers(memory: Memory, query: str = QUERY) -> list[tuple[str, int, int, float]]:
    return [(h.path, h.start_line, h.end_line, round(h.score, 6)) for h in memory.search(query)]


@pytest.fixture
def indexed(settings: Settings) -> Settings:
    """A workspace indexed and searched once: the search saved the snapshot."""
    seeded(settings.workspace)
    with memory_of(settings) as memory:
        memory.index()
        assert answers(memory)
    return settings


def test_a_new_process_answers_from_the_saved_snapshot_without_opening_lancedb(indexed: Settings) -> None:
    with memory_of(indexed) as first:
        expected = answers(first)
    assert read_tag(saved_path(indexed.index_dir)) is not None
    with memory_of(indexed) as memory:
        assert memory.engine.searchable_without_sync()
        assert answers(memory) == expected
        assert "ferry" in memory.search(QUERY)[0].snippet
        assert not memory.engine.vectors.connected  # the chunk table was never opened


def test_a_write_after_saving_makes_the_saved_copy_unused(indexed: Settings) -> None:
    with memory_of(indexed) as writer:
        writer.store("The ferry now leaves from the south harbor.", category="fact")
    with memory_of(indexed) as memory:
        assert memory.engine.searchable_without_sync() is False  # saved before the store: stale
        texts = " ".join(h.snippet for h in memory.search(QUERY))
        assert "south harbor" in texts


def test_a_file_edited_while_nothing_ran_is_synced_before_searching(indexed: Settings) -> None:
    write(indexed.workspace, "memory/topics/boats.md", "# Boats\n\n- The blue ferry docks at the east harbor.\n")
    with memory_of(indexed) as memory:
        assert memory.engine.searchable_without_sync() is False
        memory.sync()
        texts = " ".join(h.snippet for h in memory.search(QUERY))
        assert "east harbor" in texts and "pier four" not in texts


def test_another_embedder_never_reads_vectors_saved_by_the_first(indexed: Settings) -> None:
    with memory_of(indexed, dims=32) as memory:
        assert memory.engine.searchable_without_sync() is False
        memory.sync()
        memory.backfill()
        hits = memory.search(QUERY)
        assert hits and "ferry" in hits[0].snippet


@pytest.mark.parametrize("damage", [b"", b"not an arrow file at all", None])
def test_a_damaged_saved_copy_costs_only_the_slow_path(indexed: Settings, damage: bytes | None) -> None:
    path = saved_path(indexed.index_dir)
    if damage is None:
        path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])  # torn mid-write
    else:
        path.write_bytes(damage)
    with memory_of(indexed) as memory:
        assert memory.engine.searchable_without_sync() is False
        assert "ferry" in memory.search(QUERY)[0].snippet
    assert read_tag(path) is not None  # rewritten by the search that read the index


def test_the_saved_copy_is_readable_by_its_owner_only(indexed: Settings) -> None:
    if sys.platform == "win32":
        pytest.skip("POSIX modes")
    assert saved_path(indexed.index_dir).stat().st_mode & 0o077 == 0


def test_a_service_saves_its_current_snapshot_when_it_closes(indexed: Settings) -> None:
    service = MemoryService(indexed, memory_factory=lambda s: memory_of(s), start_delay=0.0, watch=False)
    try:
        memory = service.memory(timeout=60)
        memory.store("The ferry timetable changes in winter.", category="fact")
        assert "winter" in " ".join(h.snippet for h in memory.search("ferry timetable winter"))
    finally:
        service.close()
    with memory_of(indexed) as memory:
        assert memory.engine.searchable_without_sync()  # saved at close, after the store
        assert "winter" in " ".join(h.snippet for h in memory.search("ferry timetable winter"))
        assert not memory.engine.vectors.connected


def test_a_service_serves_searches_while_its_first_sync_runs(indexed: Settings,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """With a current saved copy, a search is answered before the first sync ends."""
    release = threading.Event()
    original = Memory.sync

    def slow_sync(self: Memory, *args: object, **kwargs: object) -> object:
        release.wait(30)  # the sync (and its import of LanceDB) is held up
        return original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Memory, "sync", slow_sync)
    service = MemoryService(indexed, memory_factory=lambda s: memory_of(s), start_delay=0.0, watch=False)
    try:
        memory = service.memory(timeout=20)
        assert "ferry" in memory.search(QUERY)[0].snippet
    finally:
        release.set()
        service.close()


def test_settings_loaded_from_disk_agree_on_the_tag(workspace: Path) -> None:
    """The tag compares the fingerprint a process computes from its settings: two processes of
    the same settings agree (a second load of the same workspace reads the saved copy)."""
    seeded(workspace)
    settings = load_settings(workspace=workspace)
    with memory_of(settings) as memory:
        memory.index()
        memory.search(QUERY)
    with memory_of(load_settings(workspace=workspace)) as memory:
        assert memory.engine.searchable_without_sync()


def test_indexing_saves_the_snapshot_for_the_first_session(settings: Settings) -> None:
    """``mcp-memory index`` (no search) leaves a saved snapshot: the first client's warm process
    answers at once."""
    seeded(settings.workspace)
    with memory_of(settings) as memory:
        memory.index()
    with memory_of(settings) as memory:
        assert memory.engine.searchable_without_sync()
        assert "ferry" in memory.search(QUERY)[0].snippet


def _texts_by_id(snapshot: SearchSnapshot) -> dict[str, str]:
    return {snapshot.ids[row]: snapshot.text(row) for row in range(len(snapshot))}


def test_texts_read_from_the_mapped_file_are_the_index_texts_through_edits_and_newer_saves(
        indexed: Settings) -> None:
    """The saved file is mapped and each text read from it on demand: what search reads is what
    LanceDB holds, after an edit (new rows in memory beside the file's), and after another
    process saved a newer file over it (the reader keeps reading the one it mapped)."""
    write(indexed.workspace, "memory/2026-03-02.md",
          "# 2026-03-02\n\n- 渡轮从北港出发 ⛴️, then the café «Ré» at the pier.\n" + "- filler line\n" * 40)
    with memory_of(indexed) as writer:
        writer.sync()
        assert answers(writer)  # saves the snapshot of this generation
    with memory_of(indexed) as memory:
        assert answers(memory)
        mapped = memory.engine.searcher.snapshot
        assert mapped.source is not None  # loaded from the saved file, texts left in it
        from_index = memory.engine._newest_snapshot()[0]  # the same rows, read from LanceDB
        assert from_index.source is None
        assert _texts_by_id(mapped) == _texts_by_id(from_index)
        # Another process saves a newer file over the mapped one: this reader's texts stay its own.
        write(indexed.workspace, "memory/topics/boats.md", "# Boats\n\n- The blue boat is at pier nine.\n")
        with memory_of(indexed) as other:
            other.sync()
            assert answers(other)
        assert _texts_by_id(mapped) == _texts_by_id(from_index)
        # The edit reaches this process: its snapshot is the mapped one with the file's rows replaced.
        memory.sync()
        assert answers(memory)
        edited = memory.engine.searcher.snapshot
        assert edited.source is mapped.source
        assert _texts_by_id(edited) == _texts_by_id(memory.engine._newest_snapshot()[0])
        assert any("pier nine" in text for text in _texts_by_id(edited).values())


def test_a_snapshot_read_from_lancedb_goes_on_with_the_texts_of_the_file_it_saved(settings: Settings) -> None:
    seeded(settings.workspace)
    with memory_of(settings) as memory:
        memory.index()
        saved_path(settings.index_dir).unlink(missing_ok=True)
        memory.engine._generation = None  # the next search reads LanceDB, as a first process does
        expected = answers(memory)
        snapshot = memory.engine.searcher.snapshot
        assert snapshot.source is not None and read_tag(saved_path(settings.index_dir)) is not None
        assert _texts_by_id(snapshot) == _texts_by_id(memory.engine._newest_snapshot()[0])
        assert answers(memory) == expected
