"""`mcp-memory doctor` finds where the index and the files disagree, and `--repair` fixes it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import HashEmbedder, write
from mcp_memory.config import Settings
from mcp_memory.memory import Memory


def _memory(settings: Settings) -> Memory:
    return Memory(settings, embedder=HashEmbedder())


def _kinds(report) -> dict[str, set]:
    out: dict[str, set] = {}
    for problem in report.problems:
        out.setdefault(problem.kind, set()).add(problem.path)
    return out


def _indexed(workspace: Path, settings: Settings) -> Memory:
    write(workspace, "MEMORY.md", "# Memory\n\n- The user prefers pnpm over npm.\n")
    write(workspace, "memory/2026-11-20.md", "# 2026-11-20\n\n- Deployed the zebracorn service.\n")
    write(workspace, "memory/2026-11-21.md", "# 2026-11-21\n\n- Met Priya about the budget.\n")
    memory = _memory(settings)
    memory.index()
    return memory


def test_a_fresh_index_is_healthy(workspace: Path, settings: Settings):
    with _indexed(workspace, settings) as memory:
        report = memory.doctor()
    assert report.healthy, report.problems
    assert report.files_on_disk == report.files_indexed == 3
    assert report.rows == report.keyword_documents == 3 and report.missing_vectors == 0
    assert set(report.locks) == {"write.lock", "embed.lock", "files.lock"}
    assert set(report.locks.values()) == {"free"}


def test_file_drift_is_found_and_repaired_by_a_sync(workspace: Path, settings: Settings):
    with _indexed(workspace, settings) as memory:
        write(workspace, "MEMORY.md", "# Memory\n\n- The user prefers bun now.\n")
        (workspace / "memory" / "2026-11-20.md").unlink()
        write(workspace, "memory/topics/new.md", "# New\n\n- A topic note about quokkas.\n")
        kinds = _kinds(memory.doctor())
        assert kinds == {"changed since indexed": {"MEMORY.md"}, "gone from disk": {"memory/2026-11-20.md"},
                         "missing from index": {"memory/topics/new.md"}}
        before, after = memory.repair()
        assert not before.needs_rebuild and after.healthy, after.problems
        assert memory.search("quokkas")[0].path == "memory/topics/new.md"
        assert "memory/2026-11-20.md" not in {h.path for h in memory.search("zebracorn")}


def test_orphan_and_duplicate_rows_are_found_and_rebuilt(workspace: Path, settings: Settings):
    with _indexed(workspace, settings) as memory:
        rows = memory.engine.vectors.to_arrow()
        memory.engine.vectors._table.add(rows.slice(0, 1))  # a duplicated chunk row (a write that ran twice)
        orphan = rows.slice(1, 1).to_pylist()[0]
        orphan.update(id="f" * 32, path="memory/ghost.md")
        memory.engine.vectors._table.add([orphan])  # rows of a file the index does not know
        report = memory.doctor()
        kinds = _kinds(report)
        assert "duplicate rows" in kinds and kinds["orphan rows"] == {"memory/ghost.md"}
        assert "keyword index size" in kinds and report.needs_rebuild
        before, after = memory.repair()
        assert before.needs_rebuild and after.healthy, after.problems
        assert after.rows == 3 and after.keyword_documents == 3
        hits = memory.search("zebracorn")
        assert hits[0].path == "memory/2026-11-20.md"
        assert "memory/ghost.md" not in {h.path for h in hits} and len({h.citation for h in hits}) == len(hits)
        assert memory.engine.state.get("rebuild_reason").startswith("repair:")


def test_doctor_command_exit_codes_and_json(workspace: Path, settings: Settings):
    _indexed(workspace, settings).close()
    base = [sys.executable, "-m", "mcp_memory", "doctor", "--workspace", str(workspace), "--embedder", "none"]
    # The index was built with the fake embedder: the default settings ask for another fingerprint.
    proc = subprocess.run(base, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "fingerprint" in proc.stdout and "--repair" in proc.stdout
    proc = subprocess.run([*base, "--repair", "--json"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert not data["before"]["healthy"] and data["after"]["healthy"]
    assert data["after"]["files_indexed"] == 3
    proc = subprocess.run(base, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "the index matches the files" in proc.stdout
