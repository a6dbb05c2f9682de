"""`serve` tunes the allocators so that a long-running server's memory levels off.

Each case runs in a fresh interpreter: both settings are process-wide and meant to be set once.
"""

import os
import platform
import subprocess
import sys
import textwrap

import pytest

_GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"


def _run(code: str, environment: dict[str, str] | None = None) -> str:
    drop = {"ARROW_DEFAULT_MEMORY_POOL", "MALLOC_MMAP_THRESHOLD_"}
    env = {k: v for k, v in os.environ.items() if k not in drop} | (environment or {})
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


@pytest.mark.parametrize("environment, expected",
                         [({}, "system"), ({"ARROW_DEFAULT_MEMORY_POOL": "mimalloc"}, "mimalloc")])
def test_arrow_buffers_go_to_the_system_allocator_unless_told_otherwise(environment, expected):
    code = """
        import pyarrow as pa
        from mcp_memory.runtime.allocators import tune_for_long_running
        tune_for_long_running()
        print(pa.default_memory_pool().backend_name)
    """
    assert _run(code, environment) == expected


_KEYWORD_WRITES = """
    import sys, tempfile
    from pathlib import Path
    from mcp_memory.runtime.allocators import tune_for_long_running
    from mcp_memory.index.keywords import KeywordIndex

    def anonymous_mb():
        for line in open("/proc/self/status"):
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) / 1024

    if sys.argv[-1] == "tuned":
        print(tune_for_long_running(), file=sys.stderr)
    index = KeywordIndex(Path(tempfile.mkdtemp()) / "keywords")
    with index.writer() as writer:
        for i in range(2000):
            writer.add(f"c{i}", f"memory/topic-{i % 100}.md", f"note number {i} about the project", None)
    before = anonymous_mb()
    for i in range(60):
        with index.writer() as writer:
            writer.delete_path("memory/topic-1.md")
            writer.add(f"new-{i}", "memory/topic-1.md", f"a stored memory, number {i}", None)
    print(anonymous_mb() - before)
"""


@pytest.mark.skipif(not _GLIBC, reason="the mmap threshold is a glibc setting")
def test_keyword_write_transactions_give_their_memory_back():
    # Each transaction starts a Tantivy writer whose threads allocate and free large blocks.
    # With glibc's sliding mmap threshold, 50 transactions kept about 77 MB in thread arenas.
    grown = float(_run(_KEYWORD_WRITES.replace("sys.argv[-1]", "'tuned'")))
    assert grown < 15, f"resident memory grew by {grown:.0f} MB over 60 keyword-index transactions"


@pytest.mark.skipif(not _GLIBC, reason="the mmap threshold is a glibc setting")
def test_the_mmap_threshold_is_left_alone_when_the_environment_sets_it():
    code = """
        from mcp_memory.runtime.allocators import tune_for_long_running
        print(tune_for_long_running())
    """
    assert "malloc" in _run(code)
    assert "malloc" not in _run(code, {"MALLOC_MMAP_THRESHOLD_": "262144"})
