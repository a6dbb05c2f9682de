"""A process killed while it builds the compact snapshot or saves it: searches answer, nothing is lost.

The killed run is a real process, killed with SIGKILL (no cleanup, no ``finally``, locks dropped
by the kernel). It indexes new memories into a workspace past the compact size (lowered, so a
few hundred chunks take the path a million take) and is killed at one chosen step of what
follows the indexing: coding the vectors as int8, learning the cells (k-means), writing the
saved snapshot's temporary file, or just before that file is renamed into place. The child
announces the step and then waits there, so the kill lands in it every time.

After each kill, a new process searches (the oldest and the newest memories found), status
and doctor answer with no problem and no lock held, no temporary file of the killed save is
left behind, and the snapshot it saves is whole: the process after it loads that file and
answers exactly as the one that built the snapshot from the index. No markdown changed.
"""

from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc
import pytest

from conftest import HashEmbedder
from mcp_memory.config import Settings
from mcp_memory.index import compact
from mcp_memory.index.saved_snapshot import SavedTag, read_tag, save, saved_path
from mcp_memory.index.snapshot import CODES_COLUMN
from mcp_memory.memory import Memory
from test_compact_vectors import facts, found  # the same workspace of numbered facts

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")

ROOT = Path(__file__).resolve().parents[1]
DIMS = 64  # the HashEmbedder's default, which the killed run uses
COMPACT_FROM = 150
FIRST_FILES = 200  # indexed and saved compact before the killed run
NEW_FILES = 40  # what the killed run indexes

# The killed run: indexes the workspace (sync, vectors, then the snapshot loaded and saved, as
# ``mcp-memory index`` does) with the compact size lowered, and stops for good at ``step``.
_KILLED_RUN = textwrap.dedent("""
    import os, sys, time, types
    from mcp_memory.config import load_settings
    from mcp_memory.index import compact, saved_snapshot
    from mcp_memory.memory import Memory
    from tests.conftest import HashEmbedder

    workspace, step, compact_from = sys.argv[1], sys.argv[2], int(sys.argv[3])
    compact.COMPACT_FROM, compact.MIN_CANDIDATES = compact_from, 64

    def stop(marker):
        print(marker, flush=True)
        time.sleep(120)  # until killed
        sys.exit("not killed")

    def stopping_at(marker):
        def stopped(*args, **kwargs):
            stop(marker)
        return stopped

    if step == "coding":  # the int8 codes of the vectors read from the index
        compact.quantised = stopping_at(step)
    elif step == "cells":  # k-means on a sample of the codes
        compact.learn_centroids = stopping_at(step)
    elif step in ("writing", "renaming"):
        class Torn:
            # The temporary file, stopped at once half of the snapshot is written to it.
            def __init__(self, handle):
                self.handle, self.written = handle, 0
            def write(self, data):
                room = 16384 - self.written  # a few kilobytes in: the file is torn mid-write
                self.written += self.handle.write(bytes(data)[:room] if room < len(data) else data)
                if self.written >= 16384:
                    self.handle.flush()
                    stop(step)
                return len(data)
            def __getattr__(self, name):
                return getattr(self.handle, name)
            def __enter__(self):
                return self
            def __exit__(self, *exc):
                return self.handle.__exit__(*exc)

        patched = types.SimpleNamespace(**vars(os))  # the saved_snapshot module's own view of os
        if step == "writing":
            patched.fdopen = lambda *args, **kwargs: Torn(os.fdopen(*args, **kwargs))
        else:  # the file written whole, not yet renamed over the old one
            patched.replace = lambda *args: stop(step)
        saved_snapshot.os = patched

    print("started", flush=True)  # imports done: the work begins
    with Memory(load_settings(workspace, environ={}), embedder=HashEmbedder(), line_vectors=False) as memory:
        memory.index()
    print("finished", flush=True)
""")


def answers(memory: Memory) -> list[tuple[str, int, int, float]]:
    queries = ["crate 3 item0x3", "crate 1234 item123x4", f"crate {(FIRST_FILES + 7) * 10 + 1} holds", "fact crate"]
    return [(h.path, h.start_line, h.end_line, round(h.score, 6)) for q in queries for h in memory.search(q)]


def markdown(workspace: Path) -> dict[str, str]:
    return {str(p.relative_to(workspace)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(workspace.rglob("*.md"))}


def leftovers(settings: Settings) -> list[str]:
    return sorted(p.name for p in settings.index_dir.glob(".snapshot-*"))


def killed_at(settings: Settings, step: str) -> None:
    """Run the indexing child until it reaches ``step``, then SIGKILL it."""
    run = subprocess.Popen([sys.executable, "-c", _KILLED_RUN, str(settings.workspace), step, str(COMPACT_FROM)],
                           stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert run.stdout is not None and run.stdout.readline().strip() == "started"
        assert run.stdout.readline().strip() == step  # it stopped there (else it finished, or failed)
        os.kill(run.pid, signal.SIGKILL)
        assert run.wait(10) == -signal.SIGKILL
    finally:
        if run.poll() is None:
            run.kill()
            run.wait(10)


@pytest.fixture
def compact_workspace(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """A workspace past the (lowered) compact size, indexed and its compact snapshot saved."""
    monkeypatch.setattr(compact, "COMPACT_FROM", COMPACT_FROM)
    monkeypatch.setattr(compact, "MIN_CANDIDATES", 64)
    facts(settings.workspace, 0, FIRST_FILES)
    with Memory(settings, embedder=HashEmbedder(DIMS), line_vectors=False) as memory:
        memory.index()
        assert memory.engine.searcher.snapshot.compact
    with pa.OSFile(str(saved_path(settings.index_dir)), "rb") as source:
        assert CODES_COLUMN in pyarrow.ipc.open_file(source).schema.names  # saved compact
    return settings


def assert_whole_after_the_kill(settings: Settings, before: dict[str, str], stale_saved_file: bool = True) -> None:
    """Searches find the oldest and newest memories; the next save leaves a whole file and no leftover."""
    newest = FIRST_FILES + NEW_FILES - 1
    stale_tag = read_tag(saved_path(settings.index_dir))
    with Memory(settings, embedder=HashEmbedder(DIMS), line_vectors=False) as memory:
        if not stale_saved_file:  # kills at random moments: the next run indexes what they left
            memory.index()
        assert found(memory, 0, 0) and found(memory, newest, 4)  # the oldest memory and the newest
        if stale_saved_file:  # saved before the new memories: read from the index instead (into a new file)
            assert read_tag(saved_path(settings.index_dir)) != stale_tag
        status = memory.status()
        assert status.chunks == FIRST_FILES + NEW_FILES and status.embedded_share == 1.0
        report = memory.doctor()
        assert report.healthy, report.problems
        assert set(report.locks.values()) == {"free"}  # the killed run holds nothing
        assert memory.engine.searcher.snapshot.compact
        rebuilt = answers(memory)
    assert leftovers(settings) == []  # the killed save's temporary file is gone
    tag = read_tag(saved_path(settings.index_dir))
    with Memory(settings, embedder=HashEmbedder(DIMS), line_vectors=False) as memory:
        assert memory.engine.searchable_without_sync()  # the saved file is whole and current
        assert memory.engine.snapshot_from_saved and memory.engine.searcher.snapshot.compact
        assert answers(memory) == rebuilt
        assert not memory.engine.vectors.connected  # answered from the saved file alone
    assert read_tag(saved_path(settings.index_dir)) == tag
    assert markdown(settings.workspace) == before


@pytest.mark.parametrize("step", ["coding", "cells", "writing", "renaming"])
def test_a_run_killed_building_or_saving_the_compact_snapshot_loses_nothing(
        compact_workspace: Settings, step: str) -> None:
    facts(compact_workspace.workspace, FIRST_FILES, NEW_FILES)
    before = markdown(compact_workspace.workspace)
    killed_at(compact_workspace, step)
    if step in ("writing", "renaming"):  # the kill left its temporary file, as a real one does
        [temporary] = compact_workspace.index_dir.glob(".snapshot-*.tmp")
        whole = read_tag(temporary) is not None
        assert whole == (step == "renaming"), step  # torn mid-write, or written whole but not renamed
    assert_whole_after_the_kill(compact_workspace, before)


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("MCP_MEMORY_LONG_TESTS") != "1", reason="long version: set MCP_MEMORY_LONG_TESTS=1")
def test_runs_killed_at_random_moments_lose_nothing(compact_workspace: Settings) -> None:
    """No step chosen: plain runs killed after a random delay, each with new memories to index."""
    workspace = compact_workspace.workspace
    chance = random.Random(29)
    first, finished = FIRST_FILES, 0
    for _ in range(8):
        facts(workspace, first, NEW_FILES // 8)
        first += NEW_FILES // 8
        run = subprocess.Popen([sys.executable, "-c", _KILLED_RUN, str(workspace), "none", str(COMPACT_FROM)],
                               stdout=subprocess.PIPE, text=True, cwd=ROOT)
        assert run.stdout is not None and run.stdout.readline().strip() == "started"
        time.sleep(chance.uniform(0.0, 1.5))  # a run of five new files takes about 1.3 s here
        run.kill()
        out, _ = run.communicate(timeout=10)
        finished += "finished" in out
    assert first == FIRST_FILES + NEW_FILES
    assert finished < 4, finished  # most runs were killed on the way
    assert_whole_after_the_kill(compact_workspace, markdown(workspace), stale_saved_file=False)


def test_a_save_removes_only_the_temporaries_of_saves_no_longer_under_way(tmp_path: Path) -> None:
    """Another process saving right now keeps its temporary file; a killed one's goes."""
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    try:
        running = tmp_path / f".snapshot-{live.pid}-abc.tmp"
        killed = tmp_path / f".snapshot-{int(ended.stdout)}-def.tmp"
        unnamed_new, unnamed_old = tmp_path / ".snapshot-ghi.tmp", tmp_path / ".snapshot-jkl.tmp"
        for temporary in (running, killed, unnamed_new, unnamed_old):
            temporary.write_bytes(b"half a snapshot")
        two_hours_ago = time.time() - 7200
        os.utime(unnamed_old, (two_hours_ago, two_hours_ago))  # a save takes seconds, not hours
        path = tmp_path / "snapshot.arrow"
        rows = pa.table({"id": ["a"]})
        save(path, rows.schema, rows.to_batches(), SavedTag("1", "{}"))
        assert read_tag(path) == SavedTag("1", "{}")
        assert sorted(p.name for p in tmp_path.glob(".snapshot-*")) == sorted([running.name, unnamed_new.name])
    finally:
        live.kill()
        live.wait(10)
