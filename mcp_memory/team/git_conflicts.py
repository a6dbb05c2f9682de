"""Conflicts that the union merge cannot settle, settled by keeping both sides.

Memory files merge by union (``.gitattributes``), so appends from two machines never conflict.
What is left is rare: a binary file changed on both sides, a file deleted on one side and
changed on the other, a text file outside the union rule edited in the same place. None of
them may lose a line, and the repository must not stay in the middle of a merge, so each is
settled here and the merge is committed:

* a text file: git's conflict markers become readable lines naming each side, both sides kept
  in the file for a person to choose (``[sync conflict: ...]``);
* a binary file: this machine's version stays at its path, the other side's is written beside
  it as ``<name>.sync-conflict-<commit>.<ext>``;
* deleted on one side, changed on the other: the changed version is kept;
* deleted on both: gone.

Each conflict is reported with what was done, so a person can look at it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from mcp_memory.team.git_cli import Git

__all__ = ["GitConflict", "settle_conflicts"]

_OURS, _BASE, _THEIRS, _END = "<" * 7, "|" * 7, "=" * 7, ">" * 7
_REGULAR = ("100644", "100755")


@dataclass(frozen=True)
class GitConflict:
    """One file the merge could not combine by itself, and what sync did with it."""

    path: str  # relative to the workspace
    resolution: str  # in words
    files: tuple[str, ...]  # the files that now hold the sides (one, or the file and its sibling)

    def to_dict(self) -> dict[str, object]:
        return {"path": self.path, "resolution": self.resolution, "files": list(self.files)}


def settle_conflicts(git: Git, root: Path, theirs_label: str, theirs_commit: str) -> list[GitConflict]:
    """Settle every unmerged path of the merge in progress in ``root`` and stage the result.

    ``theirs_label`` names the other side in the readable markers ("origin/main"), and
    ``theirs_commit`` (a short hash) names the sibling files of binary conflicts.
    """
    stages = _unmerged(git)
    settled = []
    for path in sorted(stages):
        settled.append(_settle(git, root, path, stages[path], theirs_label, theirs_commit))
    for conflict in settled:
        present = [name for name in (conflict.path, *conflict.files) if (root / name).exists()]
        gone = [name for name in (conflict.path,) if not (root / name).exists()]
        if present:
            git.run("add", "-f", "--", *present)
        if gone:
            git.run("rm", "-q", "--cached", "--ignore-unmatch", "--", *gone)
    return settled


def _unmerged(git: Git) -> dict[str, dict[int, tuple[str, str]]]:
    """Each unmerged path (workspace-relative) with its stages: {1 base, 2 ours, 3 theirs: (mode, object)}."""
    out: dict[str, dict[int, tuple[str, str]]] = {}
    for record in git.run("ls-files", "-u", "-z").stdout.split(b"\0"):
        if not record:
            continue
        info, _, name = record.partition(b"\t")
        mode, obj, stage = info.decode("ascii").split()
        out.setdefault(os.fsdecode(name), {})[int(stage)] = (mode, obj)
    return out


def _settle(git: Git, root: Path, path: str, stages: dict[int, tuple[str, str]], theirs_label: str,
            theirs_commit: str) -> GitConflict:
    target = root / path
    ours, theirs = stages.get(2), stages.get(3)
    if ours is None and theirs is None:
        target.unlink(missing_ok=True)
        return GitConflict(path, "deleted on both sides", ())
    if ours is None or theirs is None:
        side = ours or theirs
        assert side is not None
        kept = git.blob(side[1]) or b""
        _write(target, kept, side[0])
        where = "here" if ours is not None else f"on {theirs_label}"
        other = f"on {theirs_label}" if ours is not None else "here"
        return GitConflict(path, f"changed {where} and deleted {other}: the changed version is kept", (path,))
    ours_bytes, theirs_bytes = git.blob(ours[1]) or b"", git.blob(theirs[1]) or b""
    if ours[0] in _REGULAR and theirs[0] in _REGULAR and not _binary(ours_bytes) and not _binary(theirs_bytes):
        current = target.read_bytes() if target.is_file() and not target.is_symlink() else b""
        if _OURS.encode() in current:
            _write(target, readable_markers(current, theirs_label), ours[0])
            return GitConflict(path, "changed in the same place on both sides: both versions are kept in the "
                                     "file between [sync conflict] lines", (path,))
    sibling = _sibling(path, theirs_commit)
    _write(target, ours_bytes, ours[0])
    _write(root / sibling, theirs_bytes, theirs[0])
    return GitConflict(path, f"changed on both sides: this machine's version is kept at {path}, the version of "
                             f"{theirs_label} at {sibling}", (path, sibling))


def readable_markers(text: bytes, theirs_label: str) -> bytes:
    """Git's conflict markers as lines a person reads in any viewer (every line of both sides kept).

    Markers count only in their order (ours, optionally base, then theirs, then the end), so a
    line of seven ``=`` outside a conflict (a setext heading underline) stays as it is.
    """
    out = []
    section = ""  # "", "ours", "base" or "theirs": where in a conflict the line is
    for line in text.splitlines(keepends=True):
        head, bare = line[:7].decode("latin-1"), line.rstrip(b"\r\n")
        marked = len(bare) == 7 or line[7:8] == b" "
        if not section and head == _OURS and marked:
            section, line = "ours", b"[sync conflict: this machine's version]\n"
        elif section == "ours" and head == _BASE and marked:
            section, line = "base", b"[sync conflict: the version both started from]\n"
        elif section in ("ours", "base") and bare == _THEIRS.encode():
            section, line = "theirs", f"[sync conflict: the version of {theirs_label}]\n".encode()
        elif section == "theirs" and head == _END and marked:
            section, line = "", b"[end of sync conflict]\n"
        out.append(line)
    return b"".join(out)


def _sibling(path: str, commit: str) -> str:
    """``memory/photo.png`` → ``memory/photo.sync-conflict-1a2b3c4.png``: beside it, same extension."""
    pure = PurePosixPath(path)
    return str(pure.with_name(f"{pure.stem}.sync-conflict-{commit}{pure.suffix}"))


def _binary(data: bytes) -> bool:
    """Git's own test: a NUL byte in the first 8000 bytes."""
    return b"\0" in data[:8000]


def _write(path: Path, data: bytes, mode: str) -> None:
    """Replace a file atomically (a crash leaves the old file or the new one, never half of one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink():
        path.unlink()
    temporary = path.with_name(f".{path.name}.sync-tmp")
    temporary.write_bytes(data)
    if mode == "100755":
        temporary.chmod(0o755)
    os.replace(temporary, path)
