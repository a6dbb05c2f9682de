"""Many small writes keep the vector table small on disk and readable by every handle.

Each ``memory_store`` makes several LanceDB versions and fragments. These tests check what a
user of a long-running server sees: the index folder does not grow with every store, stores do
not slow down, and a second handle (another process, in real life) that last looked at a
version since deleted by compaction still answers without an error or a rebuild.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from conftest import HashEmbedder, write
from mcp_memory.index import vectors as vectors_module
from mcp_memory.memory import Memory


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def fragments(memory: Memory) -> int:
    memory.engine.vectors.refresh()
    return int(memory.engine.vectors._table.stats()["fragment_stats"]["num_fragments"])


def finds(memory: Memory, query: str, needle: str) -> bool:
    """Whether one of the top hits cites lines holding ``needle``."""
    for hit in memory.search(query, max_results=3):
        cited = memory.get(hit.path, hit.start_line, hit.end_line - hit.start_line + 1).text
        if needle in cited:
            return True
    return False


def versions(memory: Memory) -> int:
    return len(memory.engine.vectors._table.list_versions())


# no_retention is exactly what LanceDB warns about: no other handle may still be reading.
pytestmark = pytest.mark.filterwarnings("ignore:optimize.cleanup_older_than=0. removes every version:UserWarning")


@pytest.fixture
def no_retention(monkeypatch):
    """Compaction deletes every superseded version at once (the shipped margin is a minute)."""
    monkeypatch.setattr(vectors_module, "VERSION_RETENTION", dt.timedelta(0))


def seeded_memory(workspace: Path, settings) -> Memory:
    for i in range(20):
        write(workspace, f"memory/topic{i}.md", f"# Topic {i}\n\n" + "".join(
            f"- note {i}.{j} about the {j}th alpha service of team beta{i}\n" for j in range(15)))
    memory = Memory(settings, embedder=HashEmbedder())
    memory.index()
    return memory


def test_many_stores_keep_fragments_and_versions_bounded(workspace, settings, no_retention):
    memory = seeded_memory(workspace, settings)
    lance_dir = settings.index_dir / "lance"
    for i in range(60):
        result = memory.store(f"The team picked library lib{i} for subsystem number {i}", today=dt.date(2026, 11, 26))
        assert result.stored
    assert fragments(memory) < vectors_module.COMPACT_AT_FRAGMENTS
    # Without cleanup every store left about five versions behind (300+ here).
    assert versions(memory) < 2 * vectors_module.COMPACT_AT_FRAGMENTS
    size_after_60 = folder_bytes(lance_dir)
    for i in range(60, 120):
        memory.store(f"The team picked library lib{i} for subsystem number {i}", today=dt.date(2026, 11, 26))
    # Twice the stores, not twice the folder: the folder holds the live table and a few versions.
    assert folder_bytes(lance_dir) < 1.5 * size_after_60
    assert finds(memory, "library lib7 for subsystem number 7", "lib7 for subsystem number 7")
    memory.close()


def test_a_stale_handle_reads_after_another_handle_compacted(workspace, settings, no_retention):
    writer = seeded_memory(workspace, settings)
    reader = Memory(settings, embedder=HashEmbedder())
    assert reader.search("alpha service of team beta3", max_results=1)  # pins its current version
    for i in range(80):  # enough writes for at least two compactions, each deleting old versions
        writer.store(f"Decision {i}: the gateway uses retry budget {i} per minute", today=dt.date(2026, 11, 26))
    assert fragments(writer) < vectors_module.COMPACT_AT_FRAGMENTS

    # A read with no refresh first: the reader's version has been deleted from disk.
    assert reader.pending_embeddings() == 0
    status = reader.status()
    assert status.chunks == writer.status().chunks
    assert not any("rebuilt" in reason for reason in status.degraded)
    assert finds(reader, "gateway retry budget 42 per minute", "retry budget 42 per minute")
    stored = reader.store("The reader handle also writes after the compaction", today=dt.date(2026, 11, 26))
    assert stored.stored
    assert not any("rebuilt" in reason for reason in reader.status().degraded)
    writer.close()
    reader.close()
