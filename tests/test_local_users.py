"""What other users of the same machine can reach: the index folder, a new workspace, tokens.

The index holds copies of every note, private ones too, so it is its owner's alone whatever the
umask; a workspace the product creates is too. A token given as a command-line flag is readable by
every local user in the process list, so ``serve`` says so on stderr.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest

from conftest import write
from mcp_memory.config import load_settings
from mcp_memory.memory import Memory
from mcp_memory.processes.serve import ServeOptions, collect_tokens

pytestmark = pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX modes")


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def open_umask():
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def test_the_index_of_private_notes_is_closed_to_other_users(tmp_path: Path, open_umask: None) -> None:
    workspace = tmp_path / "notes"
    write(workspace, "MEMORY.md", "# Memory\n\n- The safe's code is the year the cat arrived.\n")
    settings = load_settings(workspace, overrides={"embedding.provider": "none"}, environ={})
    with Memory(settings) as memory:
        memory.index()
        assert memory.search("safe code cat")
    assert _mode(settings.index_dir) == 0o700
    # Every file under it is out of other users' reach through the folder, whatever its own mode.
    assert any(settings.index_dir.rglob("*"))


def test_an_index_folder_found_open_is_closed(tmp_path: Path, open_umask: None) -> None:
    workspace = tmp_path / "notes"
    write(workspace, "memory/2026-11-20.md", "# 2026-11-20\n\n- Deployed the billing service.\n")
    settings = load_settings(workspace, overrides={"embedding.provider": "none"}, environ={})
    settings.index_dir.mkdir(parents=True)
    settings.index_dir.chmod(0o755)
    with Memory(settings) as memory:
        memory.sync()
    assert _mode(settings.index_dir) == 0o700


def test_a_workspace_the_product_creates_is_its_owners_alone(tmp_path: Path, open_umask: None) -> None:
    created = tmp_path / "new-workspace"
    settings = load_settings(created, overrides={"embedding.provider": "none"}, environ={})
    with Memory(settings) as memory:
        memory.store("The standup moved to 10:00.")
    assert _mode(created) == 0o700
    existing = tmp_path / "mine"
    existing.mkdir(mode=0o755)
    existing.chmod(0o755)
    with Memory(load_settings(existing, overrides={"embedding.provider": "none"}, environ={})) as memory:
        memory.store("Invoices go out on the first Monday.")
    assert _mode(existing) == 0o755  # the user's own folder keeps the mode the user gave it


def test_a_token_on_the_command_line_is_called_out(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="mcp_memory.processes.serve"):
        tokens = collect_tokens(ServeOptions(token="t0ken-from-a-flag-123456", shared_tokens=["sh4red-flag-123456"]),
                                environ={})
    assert tokens.full == ["t0ken-from-a-flag-123456"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("--token and --shared-token given on the command line" in w and "$MCP_MEMORY_TOKEN" in w
               for w in warnings), warnings
    assert not any("t0ken-from-a-flag" in w for w in warnings)  # the warning never repeats the token
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="mcp_memory.processes.serve"):
        collect_tokens(ServeOptions(), environ={"MCP_MEMORY_TOKEN": "t0ken-from-the-env-123456"})
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]
