"""Reading, changing and writing a client's configuration file without harming it.

A client's file holds the user's other servers, hooks and settings: an edit here reads the
whole file, changes only our entries, and writes the result atomically (a temporary file in
the same folder, then a rename), so a crash leaves either the old file or the new one. A file
that cannot be parsed is refused before anything is written: rewriting what we cannot read
would lose the user's configuration. A symbolic link (dotfiles kept elsewhere) is followed,
so the link stays and its target changes. TOML is edited with tomlkit, which keeps comments
and layout.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class SetupError(ValueError):
    """A configuration file that cannot be read or written as asked; nothing was written."""


@dataclass(frozen=True)
class Edit:
    """One file's content before (None: missing) and after, and what we put there."""

    path: Path
    before: str | None
    after: str
    what: str  # for people: "MCP server memory", "hooks SessionStart, Stop"

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        """The unified diff of the change ("" when there is none)."""
        import difflib  # only a dry run needs it: every command line builds the setup parser

        old = (self.before or "").splitlines(keepends=True)
        new = self.after.splitlines(keepends=True)
        lines = difflib.unified_diff(old, new, "/dev/null" if self.before is None else str(self.path),
                                     str(self.path))
        return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def target(path: Path) -> Path:
    """The file to read and write: a symbolic link's target, so the link survives the write."""
    return path.resolve() if path.is_symlink() else path


def read_text(path: Path) -> str | None:
    """The file's text, or None when it does not exist."""
    try:
        return target(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise SetupError(f"cannot read {path}: {exc}; nothing was written") from None


def json_edit(path: Path, what: str, *changes: Callable[[dict[str, Any]], None]) -> Edit:
    """The edit that applies ``changes`` in turn to the JSON object in ``path`` (an empty one when missing).

    The file is rewritten (two-space indent) only when its data changes, so running twice, or
    on a file that already has our entries, leaves it byte for byte as it was.
    """
    before = read_text(path)
    data = _parse_json(path, before)
    changed = copy.deepcopy(data)
    for change in changes:
        change(changed)
    if before is not None and changed == data:
        return Edit(path, before, before, what)
    return Edit(path, before, json.dumps(changed, indent=2, ensure_ascii=False) + "\n", what)


def _parse_json(path: Path, text: str | None) -> dict[str, Any]:
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SetupError(f"cannot parse {path} as JSON ({exc}); nothing was written. Fix the file (comments "
                         f"and trailing commas are not JSON), or add the entry by hand") from None
    if not isinstance(data, dict):
        raise SetupError(f"{path} does not hold a JSON object; nothing was written")
    return data


def child(data: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    """``data[key]``, created as an empty object when missing; refused when it is not an object."""
    value = data.setdefault(key, {})
    if not isinstance(value, dict):
        raise SetupError(f"{path}: {key!r} is not an object; nothing was written")
    return value


def merged_entry(existing: Any, ours: dict[str, Any]) -> dict[str, Any]:
    """Our server entry over the user's: keys we do not set (``disabled``, ``alwaysAllow``...) and
    variables we do not set in ``env`` stay."""
    entry = dict(existing) if isinstance(existing, dict) else {}
    old_env = entry.get("env")
    if not isinstance(old_env, dict):
        old_env = {}
    entry.update(ours)
    if "env" in ours:
        entry["env"] = {**old_env, **ours["env"]}
    return entry


def write_atomically(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` in one rename, keeping an existing file's permissions."""
    import tempfile

    path = target(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode: int | None = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(temporary, mode)
        else:
            os.chmod(temporary, 0o644 & ~_umask())
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current
