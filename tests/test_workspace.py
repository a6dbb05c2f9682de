"""Which files are memory, safe path resolution, and reading files as UTF-8."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest

from conftest import write
from mcp_memory.core.workspace import PathError, Workspace, file_date, read_text


def symlink(link: Path, target: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.symlink(target, link, target_is_directory=target.is_dir())
    except (OSError, NotImplementedError) as exc:  # e.g. Windows without the privilege
        pytest.skip(f"symlinks unavailable: {exc}")


@pytest.fixture
def populated(workspace: Path, tmp_path: Path) -> tuple[Workspace, dict[str, dt.date | None]]:
    """A workspace with memory files, decoys, symlinks and extra paths; returns the expected listing."""
    write(workspace, "MEMORY.md", "# Curated\n- prefers tabs\n")
    write(workspace, "memory/2026-11-26.md", "# 2026-11-26\n- standup\n")
    write(workspace, "memory/2026-11-27-offsite.md", "- offsite day\n")
    write(workspace, "memory/projects.md", "# Projects\n")
    write(workspace, "memory/topics/db/lancedb.md", "# LanceDB\n")
    write(workspace, "memory/archive/2025-12-31.md", "- year end\n")
    # Decoys that are not memory.
    write(workspace, "README.md", "# readme\n")
    write(workspace, "memory/todo.txt", "not markdown\n")
    write(workspace, "memory/.trash/deleted.md", "# hidden folder\n")
    write(workspace, ".mcp-memory/cache.md", "# index folder\n")
    write(workspace, "notes/.obsidian/workspace.md", "# hidden inside an extra folder\n")
    outside = tmp_path / "outside"
    secret = write(outside, "secret.md", "# outside the workspace\n")
    symlink(workspace / "memory/linked-file.md", secret)
    symlink(workspace / "memory/linked-folder", outside)
    symlink(workspace / "notes/linked.md", secret)
    # Extra paths: a relative folder, a relative file, an absolute folder and an absolute file.
    write(workspace, "notes/ideas.md", "# Ideas\n")
    write(workspace, "notes/deep/er/plan.md", "# Plan\n")
    write(workspace, "notes/scratch.txt", "txt\n")
    write(workspace, "docs/guide.md", "# Guide\n")
    shared = tmp_path / "shared"
    write(shared, "team.md", "# Team\n")
    write(shared, "sub/2026-01-01.md", "# dated name outside memory/\n")
    people = write(tmp_path / "elsewhere", "people.md", "# People\n")
    # A symlinked extra path is refused too.
    symlink(tmp_path / "link-extra.md", secret)
    extras = ["notes", "docs/guide.md", str(shared), str(people), str(tmp_path / "link-extra.md")]
    expected = {
        "MEMORY.md": None,
        "memory/2026-11-26.md": dt.date(2026, 11, 26),
        "memory/2026-11-27-offsite.md": dt.date(2026, 11, 27),
        "memory/projects.md": None,
        "memory/topics/db/lancedb.md": None,
        "memory/archive/2025-12-31.md": dt.date(2025, 12, 31),
        "notes/ideas.md": None,
        "notes/deep/er/plan.md": None,
        "docs/guide.md": None,
        (shared / "team.md").as_posix(): None,
        (shared / "sub/2026-01-01.md").as_posix(): None,
        people.as_posix(): None,
    }
    return Workspace(workspace, extras), expected


# ----- listing ---------------------------------------------------------------------------------
def test_list_files_returns_exactly_the_memory_files(populated):
    ws, expected = populated
    files = ws.list_files()
    assert {f.rel_path: f.date for f in files} == expected
    assert [f.rel_path for f in files] == sorted(f.rel_path for f in files)
    for f in files:
        assert f.abs_path.is_file() and not f.abs_path.is_symlink()
        assert f.evergreen is (f.date is None)
        assert f.abs_path.read_text(encoding="utf-8")


def test_list_files_never_reads_outside_through_symlinks(populated, tmp_path):
    ws, _ = populated
    outside = (tmp_path / "outside").resolve()
    for f in ws.list_files():
        assert outside not in f.abs_path.resolve().parents


def test_extra_path_overlapping_memory_folder_is_not_duplicated(workspace):
    write(workspace, "memory/2026-11-26.md", "- day\n")
    write(workspace, "memory/topic.md", "# Topic\n")
    files = Workspace(workspace, ["memory", str(workspace / "memory" / "topic.md")]).list_files()
    assert [(f.rel_path, f.date) for f in files] == [
        ("memory/2026-11-26.md", dt.date(2026, 11, 26)),
        ("memory/topic.md", None),
    ]


def test_lowercase_memory_md_is_accepted(workspace):
    write(workspace, "memory.md", "# curated\n")
    assert [f.rel_path for f in Workspace(workspace).list_files()] == ["memory.md"]


def test_missing_extra_paths_and_empty_workspace_list_nothing(tmp_path):
    root = tmp_path / "new"
    ws = Workspace(root, ["does-not-exist", str(tmp_path / "nope.md")])
    assert ws.list_files() == []
    ws.ensure_exists()
    assert (root / "memory").is_dir()
    assert ws.list_files() == []


# ----- dates -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "rel,expected",
    [
        ("memory/2026-11-26.md", dt.date(2026, 11, 26)),
        ("memory/2024-02-29.md", dt.date(2024, 2, 29)),
        ("memory/sub/2026-01-05.md", dt.date(2026, 1, 5)),
        ("memory/2026-02-30.md", None),
        ("memory/2025-02-29.md", None),
        ("memory/2026-13-01.md", None),
        ("memory/notes.md", None),
        ("memory/26-11-2026.md", None),
        ("MEMORY.md", None),
        ("2026-11-26.md", None),
        ("notes/2026-11-26.md", None),
    ],
)
def test_file_date(rel, expected):
    assert file_date(rel) == expected


# ----- resolve ---------------------------------------------------------------------------------
@pytest.fixture
def simple(workspace: Path, tmp_path: Path) -> Workspace:
    write(workspace, "MEMORY.md", "# Curated\n")
    write(workspace, "memory/2026-11-26.md", "- day\n")
    write(workspace, "memory/x.md", "# X\n")
    write(workspace, "memory/notes.txt", "text\n")
    write(workspace, "README.md", "# readme\n")
    write(workspace, "memory/.trash/old.md", "# hidden\n")
    write(tmp_path, "x.md", "# outside, one level above the workspace\n")
    write(tmp_path, "extra/people.md", "# People\n")
    return Workspace(workspace, [str(tmp_path / "extra")])


@pytest.mark.parametrize(
    "given,rel",
    [
        ("MEMORY.md", "MEMORY.md"),
        ("memory/2026-11-26.md", "memory/2026-11-26.md"),
        ("./memory/x.md", "memory/x.md"),
        ("memory\\x.md", "memory/x.md"),
        ("  memory/x.md  ", "memory/x.md"),
    ],
)
def test_resolve_accepts_memory_files(simple, workspace, given, rel):
    found = simple.resolve(given)
    assert found.rel_path == rel
    assert found.abs_path == workspace / rel
    assert found.date == file_date(rel)


def test_resolve_accepts_an_absolute_extra_path(simple, tmp_path):
    target = (tmp_path / "extra" / "people.md").as_posix()
    assert simple.resolve(target).abs_path == tmp_path / "extra" / "people.md"


@pytest.mark.parametrize(
    "given,why",
    [
        ("../x.md", r"\.\."),
        ("memory/../../etc/passwd", r"\.\."),
        ("memory/../../x.md", r"\.\."),
        ("..\\x.md", r"\.\."),
        ("/etc/passwd", "markdown"),
        ("memory/notes.txt", "markdown"),
        ("memory/missing.md", "does not exist"),
        ("README.md", "not a memory file"),
        ("memory/.trash/old.md", "not a memory file"),
        ("", "empty"),
        ("   ", "empty"),
        ("memory/x.md\x00.txt", "NUL"),
    ],
)
def test_resolve_refuses_with_a_reason(simple, given, why):
    with pytest.raises(PathError, match=why):
        simple.resolve(given)


def test_resolve_refuses_an_absolute_markdown_file_outside(simple, tmp_path):
    with pytest.raises(PathError, match="not a memory file"):
        simple.resolve((tmp_path / "x.md").as_posix())


def test_resolve_does_not_decode_url_escapes(simple, tmp_path):
    # %2e%2e is "..": it must be taken literally, never reaching tmp_path/x.md.
    for given in ("%2e%2e/x.md", "%2E%2E/x.md", "memory/%2e%2e/%2e%2e/x.md", "..%2fx.md"):
        with pytest.raises(PathError):
            simple.resolve(given)


def test_resolve_refuses_symlink_pointing_outside(simple, workspace, tmp_path):
    symlink(workspace / "memory" / "evil.md", tmp_path / "x.md")
    with pytest.raises(PathError, match="symbolic link"):
        simple.resolve("memory/evil.md")


def test_resolve_refuses_file_under_symlinked_folder(simple, workspace, tmp_path):
    symlink(workspace / "memory" / "linked", tmp_path / "extra")
    with pytest.raises(PathError):
        simple.resolve("memory/linked/people.md")


def test_path_error_is_a_value_error():
    assert issubclass(PathError, ValueError)


# ----- read_text -------------------------------------------------------------------------------
def test_read_text_round_trips_utf8(tmp_path):
    path = tmp_path / "a.md"
    text = "# 会议\n- café ✓\n"
    path.write_bytes(text.encode("utf-8"))
    assert read_text(path) == text


def test_read_text_strips_bom(tmp_path):
    path = tmp_path / "bom.md"
    path.write_bytes(b"\xef\xbb\xbf# Title\nbody\n")
    assert read_text(path) == "# Title\nbody\n"


@pytest.mark.parametrize(
    "data",
    [
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00",
        bytes(range(256)) * 4,
        "# hello".encode("utf-16"),
    ],
)
def test_read_text_refuses_binary(tmp_path, data):
    path = tmp_path / "bad.md"
    path.write_bytes(data)
    with pytest.raises(UnicodeDecodeError):
        read_text(path)


@pytest.mark.parametrize(
    "data, lines",
    [
        ("caf\xe9 latin-1\nsecond line\n".encode("latin-1"), ["caf\ufffd latin-1", "second line"]),
        (b"# ok so far\n\xff\xfe broken\nfine\n", ["# ok so far", "\ufffd\ufffd broken", "fine"]),
        (b"# looks like text\x00but has a NUL\n- kept\n", ["# looks like text\ufffdbut has a NUL", "- kept"]),
        (b"bell \x07 and escape \x1b[31m\n- kept\n", ["bell \ufffd and escape \ufffd[31m", "- kept"]),
    ],
)
def test_damaged_text_reads_line_for_line(tmp_path, data, lines):
    """Bad bytes read as U+FFFD where they are; every valid line stays readable at its number."""
    path = tmp_path / "damaged.md"
    path.write_bytes(data)
    assert read_text(path).split("\n")[: len(lines)] == lines


def test_resolve_follows_every_change_of_a_folder_it_resolved_through(simple, workspace, tmp_path):
    """Resolving keeps each folder's names until the folder changes: a file added, removed,
    renamed or swapped for a link just after a resolve is answered as it is now."""
    simple.resolve("memory/x.md")
    write(workspace, "memory/new.md", "- added after the first resolve\n")
    assert simple.resolve("memory/new.md").rel_path == "memory/new.md"
    os.rename(workspace / "memory" / "new.md", workspace / "memory" / "Renamed.md")
    with pytest.raises(PathError, match="does not exist"):
        simple.resolve("memory/new.md")
    assert simple.resolve("memory/Renamed.md").rel_path == "memory/Renamed.md"
    (workspace / "memory" / "x.md").unlink()
    with pytest.raises(PathError, match="does not exist"):
        simple.resolve("memory/x.md")
    symlink(workspace / "memory" / "x.md", tmp_path / "x.md")
    with pytest.raises(PathError, match="symbolic link"):
        simple.resolve("memory/x.md")
    # A name spelled in another case is never taken for the file, whatever the file system.
    with pytest.raises(PathError):
        simple.resolve("memory/renamed.md")
