"""The ``mcp-memory`` command line, as a user runs it: output on stdout, messages on stderr, exit codes.

Most tests call ``mcp_memory.cli.main`` in-process with ``--embedder none`` (no model load);
two run ``python -m mcp_memory`` in a subprocess; one (``integration``) uses the real default
embedder.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import server_env, write
from mcp_memory import __version__
from mcp_memory.cli import main

DAILY = "memory/2026-11-20.md"
DAILY_TEXT = (
    "# 2026-11-20\n"
    "line two: deployed the zebracorn service\n"
    "line three: rolled back the quokka cache\n"
    "line four: wrote the postmortem\n"
    "line five: went home\n"
)
STATUS_KEYS = {
    "workspace", "index_path", "files", "indexed_files", "chunks", "embedder",
    "embedded_share", "fingerprint", "last_sync", "degraded",
}


@pytest.fixture
def ws(workspace: Path) -> Path:
    write(workspace, "MEMORY.md", "# Preferences\n\nThe user prefers pnpm over npm and yarn.\n")
    write(workspace, DAILY, DAILY_TEXT)
    write(workspace, "memory/projects/database.md", "# Database\n\nWe chose PostgreSQL as the main database.\n")
    return workspace


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def clean_env(**extra: str) -> dict[str, str]:
    return server_env(**extra)


# ----- index, search, status, get ---------------------------------------------------------------
def test_index_then_search_json(ws, capsys):
    code, out, err = run(capsys, "index", "-w", str(ws), "--embedder", "none", "-q")
    assert code == 0
    assert out == ""  # results only; the summary is a message
    assert "3 files" in err and "3 added" in err

    code, out, err = run(capsys, "search", "zebracorn service", "-w", str(ws), "--embedder", "none",
                         "--json", "-k", "2")
    assert code == 0
    hits = json.loads(out)
    assert isinstance(hits, list) and 1 <= len(hits) <= 2
    top = hits[0]
    assert top["path"] == DAILY
    assert top["citation"] == f"{DAILY}#L{top['start_line']}-L{top['end_line']}"
    assert top["date"] == "2026-11-20"
    assert top["source"] == "memory"
    assert "zebracorn" in top["snippet"]
    assert 0 <= top["score"] <= 1

    code, out, _ = run(capsys, "search", "pnpm yarn npm", "-w", str(ws), "--embedder", "none", "--json", "-k", "2")
    assert code == 0
    assert [h["path"] for h in json.loads(out)] == ["MEMORY.md"]


def test_search_human_output_shows_citation_and_score(ws, capsys):
    run(capsys, "index", "-w", str(ws), "--embedder", "none", "-q")
    code, out, err = run(capsys, "search", "PostgreSQL", "-w", str(ws), "--embedder", "none")
    assert code == 0
    first = out.splitlines()[0]
    assert re.fullmatch(r"1\. memory/projects/database\.md#L\d+-L\d+  score \d\.\d{3}  id m-[0-9a-f]{12}", first), first
    assert "We chose PostgreSQL as the main database." in out

    code, out, err = run(capsys, "search", "zebracorn", "-w", str(ws), "--embedder", "none")
    assert re.match(rf"1\. {re.escape(DAILY)}#L1-L5  score \d\.\d{{3}}  2026-11-20  id m-[0-9a-f]{{12}}$",
                    out.splitlines()[0])

    code, out, err = run(capsys, "search", "kubernetes", "-w", str(ws), "--embedder", "none")
    assert code == 0 and out == "" and "no results" in err


def test_search_bad_filter_exits_2(ws, capsys):
    code, out, err = run(capsys, "search", "x", "-w", str(ws), "--embedder", "none",
                         "--after", "2026-12-01", "--before", "2026-11-01")
    assert code == 2 and out == "" and "later than" in err
    code, out, err = run(capsys, "search", "x", "-w", str(ws), "--embedder", "none", "--after", "soon")
    assert code == 2 and out == "" and "after must be a date" in err


def test_status_json_has_the_documented_keys(ws, capsys):
    code, out, _err = run(capsys, "status", "-w", str(ws), "--embedder", "none", "--json")
    assert code == 0
    status = json.loads(out)
    assert set(status) >= STATUS_KEYS
    assert status["workspace"] == str(ws.resolve())
    assert status["index_path"] == str(ws.resolve() / ".mcp-memory")
    assert status["files"] == status["indexed_files"] == 3  # status syncs first
    assert status["chunks"] >= 3
    assert status["embedder"]["provider"] == "none"
    assert status["embedded_share"] is None
    assert status["fingerprint"]["provider"] == "none"
    assert status["last_sync"]
    assert any("keyword-only" in d for d in status["degraded"])

    code, out, _ = run(capsys, "status", "-w", str(ws), "--embedder", "none")
    assert code == 0
    assert re.search(r"^files\s+3 on disk, 3 indexed$", out, re.M)
    assert re.search(r"^embedded\s+n/a \(keyword-only\)$", out, re.M)


def test_status_says_when_line_vectors_stop_at_the_newest_files(ws, capsys, monkeypatch):
    # The background gives vectors to the newest files' lines up to rerank.line_vector_limit; a
    # user reading "2 of 2" must learn that older lines come only when a search reads them.
    monkeypatch.setenv("MCP_MEMORY_RERANK_LINE_VECTOR_LIMIT", "2")
    code, out, _ = run(capsys, "status", "-w", str(ws))
    assert code == 0
    row = re.search(r"^line vectors\s+(.*)$", out, re.M)
    assert row is not None, out
    assert re.fullmatch(r"\d+ of 2 lines of the newest files; older ones when a precise search reads them "
                        r"\(precision search\)", row.group(1)), row.group(1)
    monkeypatch.setenv("MCP_MEMORY_RERANK_LINE_VECTOR_LIMIT", "1000")
    code, out, _ = run(capsys, "status", "-w", str(ws))
    row = re.search(r"^line vectors\s+(.*)$", out, re.M)
    assert row is not None and re.fullmatch(r"\d+ of \d+ lines \(precision search\)", row.group(1)), out


def test_get_prints_exactly_the_requested_lines(ws, capsys):
    code, out, _err = run(capsys, "get", DAILY, "-w", str(ws), "--from", "2", "--lines", "2")
    assert code == 0
    assert out == "line two: deployed the zebracorn service\nline three: rolled back the quokka cache\n"

    code, out, _ = run(capsys, "get", DAILY, "-w", str(ws), "--from", "4", "--lines", "10")
    assert out == "line four: wrote the postmortem\nline five: went home\n"

    code, out, _ = run(capsys, "get", DAILY, "-w", str(ws), "--from", "2", "--lines", "1", "--json")
    data = json.loads(out)
    assert data == {"path": DAILY, "from_line": 2, "to_line": 2, "total_lines": 5,
                    "text": "line two: deployed the zebracorn service"}


@pytest.mark.parametrize(
    "path, message",
    [
        ("../x.md", "leaves the workspace"),
        ("memory/nope.md", "does not exist"),
        ("mcp-memory.toml", "not a markdown"),
    ],
)
def test_get_refuses_paths_outside_the_memory(ws, capsys, path, message):
    (ws.parent / "x.md").write_text("secret\n", encoding="utf-8")
    code, out, err = run(capsys, "get", path, "-w", str(ws))
    assert code == 2
    assert out == ""
    assert message in err and err.startswith("mcp-memory: ")


def test_get_past_the_end_exits_2(ws, capsys):
    code, out, err = run(capsys, "get", DAILY, "-w", str(ws), "--from", "9")
    assert code == 2 and out == "" and "past the end" in err


def test_bad_config_exits_2_with_a_message(ws, capsys):
    (ws / "mcp-memory.toml").write_text('[search]\nmax_resultz = 3\n', encoding="utf-8")
    code, out, err = run(capsys, "search", "x", "-w", str(ws))
    assert code == 2
    assert out == ""
    assert "configuration error" in err and "max_resultz" in err

    (ws / "mcp-memory.toml").write_text('[embedding]\nprovider = "nonsense"\n', encoding="utf-8")
    code, out, err = run(capsys, "status", "-w", str(ws))
    assert code == 2 and "provider" in err


def test_no_command_exits_2(capsys):
    code, out, err = run(capsys)
    assert code == 2
    assert out == ""
    assert "usage" in err.lower()


def test_search_json_stays_valid_json_when_logs_are_printed(ws, capsys):
    run(capsys, "index", "-w", str(ws), "--embedder", "none", "-q")
    (ws / "memory" / "projects" / "database.md").unlink()  # the next sync logs what it does
    code, out, err = run(capsys, "search", "zebracorn", "-w", str(ws), "--embedder", "none", "--json", "-vv")
    assert code == 0
    assert "sync:" in err and "1 removed" in err  # the log line went to stderr...
    hits = json.loads(out)  # ...and stdout is still one JSON document
    assert hits[0]["path"] == DAILY


def test_workspace_config_file_selects_keyword_only_mode(ws, capsys):
    (ws / "mcp-memory.toml").write_text('[embedding]\nprovider = "none"\n', encoding="utf-8")
    code, out, _ = run(capsys, "status", "-w", str(ws), "--json")
    assert code == 0
    assert json.loads(out)["embedder"]["provider"] == "none"


# ----- as a separate program ---------------------------------------------------------------------
def test_python_dash_m_version():
    result = subprocess.run([sys.executable, "-m", "mcp_memory", "--version"],
                            capture_output=True, text=True, timeout=60, env=clean_env())
    assert result.returncode == 0
    assert result.stdout.strip() == f"mcp-memory {__version__}"


def test_python_dash_m_search_uses_the_workspace_from_the_environment(ws, tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "mcp_memory", "search", "quokka cache", "--json", "--embedder", "none"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env=clean_env(MCP_MEMORY_WORKSPACE=str(ws)),
    )
    assert result.returncode == 0, result.stderr
    hits = json.loads(result.stdout)
    assert hits[0]["path"] == DAILY
    assert hits[0]["start_line"] <= 3 <= hits[0]["end_line"]
    assert (ws / ".mcp-memory").is_dir()  # the index went into the workspace from the environment


# ----- the real embedder -------------------------------------------------------------------------
@pytest.mark.integration
def test_real_embedder_finds_notes_across_languages(workspace, capsys):
    write(workspace, "memory/projects/database.md", "# 数据库\n\n我们决定使用 PostgreSQL 作为主数据库\n")
    write(workspace, "MEMORY.md", "# Preferences\n\nThe user prefers pnpm over npm and yarn\n")
    write(workspace, "memory/2026-11-20.md",
          "# 2026-11-20\n\nThe team standup moved to 10am on Mondays; Carol is on holiday next week.\n")

    code, _, err = run(capsys, "index", "-w", str(workspace), "-q")
    assert code == 0, err
    code, out, _ = run(capsys, "status", "-w", str(workspace), "--json")
    status = json.loads(out)
    assert status["embedder"]["provider"] == "local"
    assert status["embedded_share"] == 1.0

    code, out, _ = run(capsys, "search", "which database did we choose", "-w", str(workspace), "--json", "-k", "2")
    assert code == 0
    assert "memory/projects/database.md" in [h["path"] for h in json.loads(out)]

    code, out, _ = run(capsys, "search", "包管理器", "-w", str(workspace), "--json", "-k", "2")
    assert code == 0
    assert "MEMORY.md" in [h["path"] for h in json.loads(out)]
