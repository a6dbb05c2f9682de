"""Scopes: the memories of one project or agent, beside the global memory every scope sees.

A scope is a folder, not a field: ``memory/scopes/<name>/`` holds the scope's daily files
(``memory/scopes/<name>/YYYY-MM-DD.md``), its curated file (``memory/scopes/<name>/MEMORY.md``)
and any topic files. Everything outside ``memory/scopes/`` is global. So the markdown stays the
source of truth, a file's scope is read from its path alone (nothing to parse, nothing to keep
in step), and moving a note between scopes is moving it between folders.

Names are lowercase letters, digits, ``-`` and ``_``, 1 to 64 characters: a name can never
climb out of its folder. ``global`` is not a name but the global memory.

What a caller asks for, as one string (a tool's ``scope``, ``--scope``):

* nothing: the default scope (``[scopes] default``, ``$MCP_MEMORY_SCOPE``, ``serve --scope``,
  a hook's working directory), or the global memory when there is none;
* ``"name"``: that scope; ``"a,b"``: several (searches only);
* ``"global"``: the global memory alone;
* ``"*"``: every scope (searches only).

Searches always cover the global memory too; stores and captures go into exactly one scope,
or into the global memory. This module is light (the standard library only): the hooks and
the stdio front import it.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from mcp_memory.errors import MemoryInputError, SearchError

SCOPES_DIR = "memory/scopes"
GLOBAL = "global"  # names the global memory where a scope is asked for
EVERY = "*"
MAX_NAME_CHARS = 64
_NAME = re.compile(r"^[a-z0-9_-]{1,64}$")
_NOT_NAME = re.compile(r"[^a-z0-9_-]+")
# Global files that record the sessions of every scope: a caller confined to one scope never sees them.
_SESSION_RECORDS = ("memory/episodes/",)


class ScopeError(MemoryInputError, SearchError):
    """A scope name or request that cannot be honoured (a bad name, a scope this caller may not use)."""


@dataclass(frozen=True)
class ScopeFilter:
    """The files a search covers: the global memory and the scopes named (all of them when ``every``).

    ``confined``: the caller may use these scopes only (a scoped token), so global files that
    record the sessions of every scope (``memory/episodes/``) are left out as well.
    Hashable: a snapshot keeps the rows each filter covers.
    """

    names: frozenset[str] = frozenset()
    every: bool = False
    confined: bool = False
    with_global: bool = True  # False: the scopes alone (what a scoped token may remove)

    def covers(self, path: str) -> bool:
        """Whether the file at workspace-relative ``path`` is visible through this filter."""
        scope = scope_of(path)
        if scope is None:
            return self.with_global and not (self.confined and is_session_record(path))
        return self.every or scope in self.names


GLOBAL_ONLY = ScopeFilter()
ALL_SCOPES = ScopeFilter(every=True)


# ----- names and paths ----------------------------------------------------------------------------
def check_name(value: object) -> str:
    """``value`` as a scope name (surrounding spaces dropped); ``ScopeError`` says why it is not one."""
    if not isinstance(value, str):
        raise ScopeError(f"a scope name must be a string, not {type(value).__name__}")
    name = value.strip()
    if name == GLOBAL:
        raise ScopeError("'global' names the global memory, not a scope")
    if not _NAME.match(name):
        shown = name if len(name) <= 80 else name[:80] + "…"
        raise ScopeError(f"{shown!r} is not a scope name: use 1 to {MAX_NAME_CHARS} lowercase letters, digits, "
                         "'-' or '_'")
    return name


def scope_of(path: str) -> str | None:
    """The scope a memory file belongs to (``memory/scopes/<name>/...``); None for a global file.

    Compared without regard to letter case, as file systems that ignore it would: a folder a
    person named ``memory/scopes/Web`` is scope ``web``. A folder whose name is no valid name
    still keeps its files out of the global memory (only ``"*"`` covers them).
    """
    parts = PurePosixPath(path.replace("\\", "/").removeprefix("./")).parts
    if len(parts) < 4 or parts[0].casefold() != "memory" or parts[1].casefold() != "scopes":
        return None
    return parts[2].casefold()


def is_session_record(path: str) -> bool:
    """A global file recording sessions of every scope (an episode)."""
    return path.replace("\\", "/").casefold().startswith(_SESSION_RECORDS)


def scope_folder(name: str) -> str:
    """The workspace-relative folder of a scope (the name checked first)."""
    return f"{SCOPES_DIR}/{check_name(name)}"


def daily_path(scope: str | None, day: dt.date) -> str:
    """The daily file of ``scope`` (None: the global ``memory/YYYY-MM-DD.md``)."""
    return f"{scope_folder(scope)}/{day.isoformat()}.md" if scope else f"memory/{day.isoformat()}.md"


def evergreen_path(scope: str) -> str:
    """A scope's curated file. Named ``MEMORY.md`` like the global one, it is private like it by
    default (``privacy.private_paths`` matches the name at any depth)."""
    return f"{scope_folder(scope)}/MEMORY.md"


def seen_from(scope: str | None) -> ScopeFilter:
    """What a memory written into ``scope`` (None: global) is compared with for duplicates: the
    memories seen wherever it is seen. A scoped write never compares with session records, so a
    scoped caller is never shown one as "already in memory"."""
    return ScopeFilter(frozenset({scope}), confined=True) if scope else GLOBAL_ONLY


def may_retire(path: str, keeper_path: str) -> bool:
    """Whether a memory in ``path`` may be retired in favour of one in ``keeper_path``: only when the
    keeper is seen wherever the retired one is (the same scope, or the global memory)."""
    keeper = scope_of(keeper_path)
    return keeper is None or keeper == scope_of(path)


# ----- what a caller asks for ---------------------------------------------------------------------
def write_scope(value: str | None, default: str | None = None) -> str | None:
    """Where a store or capture goes: a scope name, or None for the global memory.

    ``value`` None or "" takes ``default``; ``"global"`` is the global memory; several scopes
    or ``"*"`` are refused (a memory is written once, into one place).
    """
    if value is None or not value.strip():
        return check_name(default) if default else None
    value = value.strip()
    if value == GLOBAL:
        return None
    if value == EVERY or "," in value:
        raise ScopeError(f"a memory is written into one scope, or 'global'; got {value!r}")
    return check_name(value)


def read_filter(value: str | None, default: str | None = None) -> ScopeFilter:
    """What a search covers: ``value`` (a name, names joined by commas, ``"global"`` or ``"*"``),
    else the ``default`` scope; always the global memory as well."""
    if value is None or not value.strip():
        return ScopeFilter(frozenset({check_name(default)})) if default else GLOBAL_ONLY
    value = value.strip()
    if value == EVERY:
        return ALL_SCOPES
    if value == GLOBAL:
        return GLOBAL_ONLY
    names = [part.strip() for part in value.split(",")]
    return ScopeFilter(frozenset(check_name(n) for n in names if n and n != GLOBAL))


def confine(requested: ScopeFilter, limit: str) -> ScopeFilter:
    """``requested`` for a caller that may use scope ``limit`` only: ``"*"`` becomes that scope,
    another scope is refused (``ScopeError``)."""
    others = sorted(requested.names - {limit})
    if others:
        raise ScopeError(f"this token is limited to scope {limit!r}: it cannot search {', '.join(others)!r}")
    names = requested.names if not requested.every else frozenset({limit})
    return ScopeFilter(names, confined=True)


# ----- the default scope --------------------------------------------------------------------------
def normalize(raw: str) -> str | None:
    """A scope name made from a folder name (``My Project.v2`` → ``my-project-v2``); None when nothing is left."""
    name = _NOT_NAME.sub("-", raw.strip().lower()).strip("-")[:MAX_NAME_CHARS].strip("-")
    return name if name and name != GLOBAL and _NAME.match(name) else None


def scope_from_cwd(cwd: str | os.PathLike[str] | None) -> str | None:
    """The scope of a client's working directory: the name of its git repository's root folder, else
    of the folder itself; None for no folder, the file system's root or the home folder."""
    if not cwd:
        return None
    folder = Path(cwd).expanduser()
    if not folder.is_absolute():
        return None  # relative to what? a hook's cwd is absolute
    root = _git_root(folder) or folder
    try:
        if root == Path.home():
            return None
    except RuntimeError:  # no home folder known
        pass
    return normalize(root.name) if root.name else None


def _git_root(folder: Path) -> Path | None:
    """The nearest folder at or above ``folder`` holding ``.git`` (a folder, or a worktree's file)."""
    for candidate in (folder, *folder.parents):
        try:
            if (candidate / ".git").exists():
                return candidate
        except OSError:
            return None
    return None


def default_scope(configured: str, from_cwd: bool, cwd: str | os.PathLike[str] | None = None) -> str | None:
    """A hook's scope: the configured default (``[scopes] default``, ``$MCP_MEMORY_SCOPE``, ``--scope``)
    first, else (``from_cwd``) the scope of the client's working directory, else None (global)."""
    if configured.strip():
        return check_name(configured)
    return scope_from_cwd(cwd) if from_cwd else None
