"""An index run killed in the middle of embedding, while another process searches: nothing is lost.

The run is a real process, killed with SIGKILL (no cleanup, locks dropped by the kernel) after
some batches of chunk vectors were written; the next run embeds only what is missing, and the
searching process keeps answering throughout.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from mcp_memory.config import Settings
from mcp_memory.memory import Memory
from tests.conftest import HashEmbedder, write

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")

_SLOW_INDEX = textwrap.dedent("""
    import sys, time
    from mcp_memory.config import load_settings
    from mcp_memory.memory import Memory
    from tests.conftest import HashEmbedder

    class Slow(HashEmbedder):
        def embed_documents(self, texts):
            time.sleep(0.3)  # a batch takes a while, so the kill lands in the middle
            return super().embed_documents(texts)

    settings = load_settings(sys.argv[1], environ={})
    with Memory(settings, embedder=Slow(), line_vectors=False) as memory:
        memory.sync()
        print("synced", flush=True)
        memory.backfill()
        print("done", flush=True)
""")


def _notes(workspace: Path, count: int) -> None:
    for i in range(count):
        write(workspace, f"memory/notes/n{i:03d}.md", f"# Note {i}\n\nFact number {i} about widget{i} and gadget{i}.\n")


def test_an_index_killed_mid_embedding_loses_nothing_and_the_next_run_finishes(settings: Settings) -> None:
    _notes(settings.workspace, 120)
    run = subprocess.Popen([sys.executable, "-c", _SLOW_INDEX, str(settings.workspace)], stdout=subprocess.PIPE,
                           text=True, cwd=Path(__file__).resolve().parents[1])
    try:
        assert run.stdout is not None and run.stdout.readline().strip() == "synced"
        with Memory(settings, embedder=HashEmbedder(), line_vectors=False) as reader:
            # While the other process embeds, keyword search already finds every note.
            deadline = time.monotonic() + 60
            embedded = 0
            while time.monotonic() < deadline:
                assert [h.path for h in reader.search("widget7 gadget7")][:1] == ["memory/notes/n007.md"]
                embedded = 120 - reader.pending_embeddings()
                if embedded >= 16:  # two batches written
                    break
                time.sleep(0.1)
            assert 16 <= embedded < 120, embedded
        os.kill(run.pid, signal.SIGKILL)
        run.wait(10)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait(10)

    working = HashEmbedder()
    with Memory(settings, embedder=working, line_vectors=False) as resumed:
        assert not resumed.sync().touched  # the files were all indexed before the kill
        left = resumed.pending_embeddings()
        assert 0 < left <= 120 - embedded
        assert resumed.backfill() == left
        assert sum(working.calls) == left  # the vectors written before the kill are kept
        status = resumed.status()
        assert status.chunks == 120 and status.embedded_share == 1.0
        ids = resumed.engine.vectors.to_arrow().column("id").to_pylist()
        assert len(ids) == len(set(ids)) == 120 == resumed.engine.keywords.count()
        assert [h.path for h in resumed.search("widget42 gadget42")][:1] == ["memory/notes/n042.md"]
