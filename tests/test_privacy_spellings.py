"""No spelling of a private file's name or path lets a shared caller see it.

Privacy is decided on the name the workspace gives a file, so that name must be one and the
same however the file is reached:

* names are compared as Unicode NFKC, case-folded text, so a private folder typed with a
  precomposed accent matches the decomposed name macOS stores, and fullwidth letters and
  ligatures match their plain spelling, in the patterns and in the file names alike;
* an extra path (``extra_paths``, ``[sessions] paths``) is resolved before the files below it
  are named, so ``memory/x/../private``, a linked parent folder or an absolute path into the
  workspace lead to the file's own workspace-relative name, and one file is listed once.

Each case drives a shared MCP client (in memory, as ``test_privacy.py`` does) and checks what
it gets from a search, the file listing and ``memory_get``.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from mcp import Client

from conftest import close_server, indexed_memory, write
from mcp_memory.config import Settings, load_settings
from mcp_memory.core.workspace import Workspace
from mcp_memory.runtime.service import MemoryService
from mcp_memory.server import create_server
from test_workspace import symlink

PUBLIC_FILE = "memory/2026-11-20.md"
SECRET = "Okafor"  # a word of every private line, never of a public one
PRIVATE_LINE = f"- HIVPOS result from Dr. {SECRET} at the Lyon clinic."
QUERY = f"HIVPOS result Dr. {SECRET} Lyon clinic"
NOT_SHARED = "is not a memory file shared with this client"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def _nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


def _settings(workspace: Path, private_paths: list[str], extra_paths: list[str] | None = None) -> Settings:
    overrides: dict[str, object] = {"privacy.private_paths": private_paths}
    if extra_paths is not None:
        overrides["extra_paths"] = extra_paths
    return load_settings(workspace, environ={}, overrides=overrides)


def _seed_public(workspace: Path) -> None:
    write(workspace, PUBLIC_FILE, "# 2026-11-20\n\n- The team deploys the billing service on Wednesdays.\n")


@dataclass
class SharedView:
    """What a shared caller got: search output, the listed file names, and each ``memory_get`` answer."""

    search: str
    listed: list[str]
    gets: dict[str, tuple[bool, str]]  # path asked -> (is_error, text)


async def _shared_view(settings: Settings, paths: list[str]) -> SharedView:
    service = MemoryService(settings, memory_factory=indexed_memory, start_delay=0, watch=False)
    server = create_server(settings, service, shared=True)
    try:
        async with Client(server) as client:
            search = await client.call_tool("memory_search", {"query": QUERY, "max_results": 20})
            listing = json.loads((await client.read_resource("memory://files")).contents[0].text)
            gets = {}
            for path in paths:
                got = await client.call_tool("memory_get", {"path": path})
                gets[path] = (got.is_error, json.dumps(got.model_dump(mode="json"), ensure_ascii=False))
    finally:
        close_server(service)
    return SharedView(json.dumps(search.model_dump(mode="json"), ensure_ascii=False),
                      [entry["path"] for entry in listing], gets)


def _assert_nothing_private(view: SharedView, private_names: list[str]) -> None:
    assert SECRET not in view.search, view.search
    assert view.listed == [PUBLIC_FILE]
    for name in private_names:
        assert name not in view.search
    for path, (is_error, text) in view.gets.items():
        assert is_error and NOT_SHARED in text, (path, text)
        assert SECRET not in text


def _owner_names(settings: Settings) -> list[str]:
    workspace = Workspace(settings.workspace, settings.extra_paths, settings.index_dir / "files.lock",
                          settings.sessions.paths)
    return [f.rel_path for f in workspace.list_files()]


# ----- Unicode spellings of patterns and names ---------------------------------------------------------
# (id, private_paths, the private file's name on disk)
UNICODE_CASES = [
    # A folder typed with a precomposed accent, stored decomposed (as macOS and copies from it do).
    ("decomposed-accent-folder", [_nfc("memory/santé/")], _nfd("memory/santé/notes.md")),
    # The other way round, and in another letter case.
    ("precomposed-folder-decomposed-pattern", [_nfd("memory/Zürich/")], _nfc("memory/zürich/notes.md")),
    ("decomposed-uppercase-folder", [_nfc("memory/büro/")], _nfd("memory/BÜRO/notes.md")),
    # A file name in fullwidth letters: MEMORY.md is private at any depth.
    ("fullwidth-file-name", ["MEMORY.md"], "memory/ＭＥＭＯＲＹ.md"),
    ("fullwidth-folder", ["memory/health/"], "memory/ｈｅａｌｔｈ/notes.md"),
    # A ligature (ĳ) in the folder on disk, plain letters in the pattern.
    ("ligature-folder", ["memory/ijsselmeer/"], "memory/ĳsselmeer/notes.md"),
    # The pattern spelled oddly, the folder plainly.
    ("fullwidth-pattern", ["memory/ｆｉｎａｎｃｅ/"], "memory/finance/notes.md"),
    ("letterlike-name", ["diary.md"], "memory/ⓓiary.md"),
]


@pytest.mark.anyio
@pytest.mark.parametrize(("private_paths", "on_disk"), [c[1:] for c in UNICODE_CASES],
                         ids=[c[0] for c in UNICODE_CASES])
async def test_private_patterns_match_every_unicode_spelling(workspace: Path, private_paths: list[str],
                                                             on_disk: str) -> None:
    _seed_public(workspace)
    write(workspace, on_disk, f"# Notes\n\n{PRIVATE_LINE}\n")
    settings = _settings(workspace, private_paths)
    assert on_disk in _owner_names(settings)  # the owner still has it, under the name it has on disk
    view = await _shared_view(settings, [on_disk, _nfc(on_disk), _nfd(on_disk)])
    _assert_nothing_private(view, [on_disk])


# ----- extra paths that reach a private folder by another spelling ----------------------------------------
def _dotdot(workspace: Path, tmp_path: Path) -> str:
    (workspace / "memory/x").mkdir(parents=True, exist_ok=True)
    return "memory/x/../private"


def _dotdot_absolute(workspace: Path, tmp_path: Path) -> str:
    (workspace / "memory/x").mkdir(parents=True, exist_ok=True)
    return f"{workspace}/memory/x/../private"


def _linked_workspace(workspace: Path, tmp_path: Path) -> str:
    symlink(tmp_path / "ws-link", workspace)
    return f"{tmp_path / 'ws-link'}/memory/private"


def _linked_memory_folder_outside(workspace: Path, tmp_path: Path) -> str:
    symlink(tmp_path / "elsewhere/notes", workspace / "memory")
    return f"{tmp_path / 'elsewhere/notes'}/private"


def _linked_parent_inside(workspace: Path, tmp_path: Path) -> str:
    symlink(workspace / "shortcut", workspace / "memory")
    return "shortcut/private"


def _file_through_linked_workspace(workspace: Path, tmp_path: Path) -> str:
    symlink(tmp_path / "ws-link", workspace)
    return f"{tmp_path / 'ws-link'}/memory/private/notes.md"


EXTRA_SPELLINGS: dict[str, Callable[[Path, Path], str]] = {
    "dotdot": _dotdot,
    "dotdot-absolute": _dotdot_absolute,
    "linked-workspace-absolute": _linked_workspace,
    "linked-memory-folder-outside": _linked_memory_folder_outside,
    "linked-parent-inside": _linked_parent_inside,
    "file-through-linked-workspace": _file_through_linked_workspace,
}


@pytest.mark.anyio
@pytest.mark.parametrize("spelling", list(EXTRA_SPELLINGS))
async def test_an_extra_path_spelled_another_way_stays_private(workspace: Path, tmp_path: Path,
                                                              spelling: str) -> None:
    _seed_public(workspace)
    write(workspace, "memory/private/notes.md", f"# Private\n\n{PRIVATE_LINE}\n")
    extra = EXTRA_SPELLINGS[spelling](workspace, tmp_path)
    settings = _settings(workspace, ["MEMORY.md", "memory/private/"], [extra])
    owner = _owner_names(settings)  # before the session, which may record an episode of itself
    alias = extra if extra.endswith(".md") else f"{extra}/notes.md"
    view = await _shared_view(settings, ["memory/private/notes.md", alias])
    _assert_nothing_private(view, [alias])
    # One file, one name: the extra path adds no second copy of it under the spelling it was reached by.
    assert owner == [PUBLIC_FILE, "memory/private/notes.md"]


@pytest.mark.anyio
@pytest.mark.parametrize("spelling", ["dotdot", "linked-workspace-absolute"])
async def test_a_private_folder_reached_only_by_an_extra_path_gets_its_own_name(workspace: Path, tmp_path: Path,
                                                                                spelling: str) -> None:
    """Outside ``memory/``, nothing else lists the file: its name must come from where it really is."""
    _seed_public(workspace)
    write(workspace, "notes/private/plan.md", f"# Plan\n\n{PRIVATE_LINE}\n")
    (workspace / "notes/x").mkdir(parents=True)
    if spelling == "dotdot":
        extra = "notes/x/../private"
    else:
        symlink(tmp_path / "ws-link", workspace)
        extra = f"{tmp_path / 'ws-link'}/notes/private"
    settings = _settings(workspace, ["MEMORY.md", "notes/private/"], [extra])
    owner = _owner_names(settings)
    view = await _shared_view(settings, ["notes/private/plan.md", f"{extra}/plan.md"])
    _assert_nothing_private(view, [f"{extra}/plan.md"])
    assert owner == [PUBLIC_FILE, "notes/private/plan.md"]


# ----- one file, one name, for the owner too --------------------------------------------------------------
def test_two_spellings_of_one_outside_folder_list_its_files_once(workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "team-notes"
    write(outside, "team.md", "# Team\n\n- Dana leads the mobile team.\n")
    symlink(tmp_path / "alias", tmp_path)  # a linked parent folder
    extras = [str(outside), f"{tmp_path / 'alias'}/team-notes", f"{outside}/../team-notes"]
    files = Workspace(workspace, extras).list_files()
    assert [f.rel_path for f in files] == [(outside / "team.md").as_posix()]


def test_two_spellings_of_one_sessions_folder_list_each_transcript_once(workspace: Path, tmp_path: Path) -> None:
    write(workspace, "sessions/a.jsonl", '{"role": "user", "content": "hello"}\n')
    (workspace / "sessions/x").mkdir()
    symlink(tmp_path / "ws-link", workspace)
    ws = Workspace(workspace, sessions_paths=["sessions", "sessions/x/..", f"{tmp_path / 'ws-link'}/sessions"])
    assert [f.rel_path for f in ws.session_files()] == ["sessions/a.jsonl"]
    assert [f.rel_path for f in ws.list_files()] == ["sessions/a.jsonl"]


def test_a_changed_file_is_named_as_the_listing_names_it(workspace: Path, tmp_path: Path) -> None:
    """The file watcher names changed files with ``rel_path``; listeners filter private ones by that name."""
    write(workspace, "memory/private/notes.md", "# Private\n")
    (workspace / "memory/x").mkdir()
    symlink(tmp_path / "ws-link", workspace)
    ws = Workspace(workspace)
    assert ws.rel_path(tmp_path / "ws-link/memory/private/notes.md") == "memory/private/notes.md"
    assert ws.rel_path(workspace / "memory/x/../private/notes.md") == "memory/private/notes.md"
