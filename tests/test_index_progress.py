"""``mcp-memory index`` reports each long phase on stderr: bars with time left on a terminal,
one line at each phase's start and end otherwise; stdout stays empty."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import write
from mcp_memory.cli import _ProgressBars, main


def test_index_into_a_log_prints_one_line_as_each_phase_starts_and_ends(workspace: Path, capsys) -> None:
    for i in range(3):
        write(workspace, f"memory/2026-11-0{i + 1}.md", f"# Day {i}\n\n- fact {i} about the zebracorn\n")
    assert main(["index", "-w", str(workspace), "--embedder", "none"]) == 0
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert "files: 3 to do" in lines
    assert any(re.fullmatch(r"files: 3 of 3 done in \d+\.\d s \(\d+\.\d files/s\)", line) for line in lines), err
    assert "\r" not in err  # no bar redrawn in a log
    assert not any(line.startswith("embeddings") for line in lines)  # keyword-only: that phase has nothing to do


def test_on_a_terminal_each_phase_is_a_bar_with_its_rate_and_time_left(capsys) -> None:
    with _ProgressBars(disable=False, terminal=True) as bars:
        bars.update("embeddings", 0, 256)
        bars.update("embeddings", 128, 256)
        bars.update("line vectors", 32, 64)
    err = capsys.readouterr().err
    assert re.search(r"embeddings: +50%.*128/256 \[\d\d:\d\d<\d\d:\d\d, .*chunk/s\]", err), err
    assert re.search(r"line vectors: +50%.*32/64 .*line/s\]", err), err


def test_a_phase_cut_short_still_ends_with_its_line(capsys) -> None:
    with _ProgressBars(disable=False, terminal=False) as bars:
        bars.update("embeddings", 0, 300)
        bars.update("embeddings", 128, 300)
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "embeddings: 300 to do"
    assert re.fullmatch(r"embeddings: 128 of 300 stopped after \d+\.\d s.*", err[1]), err


def test_quiet_prints_no_progress(capsys) -> None:
    with _ProgressBars(disable=True, terminal=False) as bars:
        bars.update("files", 0, 3)
        bars.update("files", 3, 3)
    assert capsys.readouterr().err == ""
