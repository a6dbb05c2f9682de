"""Which files are memory, and safe access to them.

The workspace is the source of truth. Memory files are:

* ``MEMORY.md`` (curated, evergreen; ``memory.md`` is accepted too),
* ``memory/YYYY-MM-DD.md`` (daily logs, dated by their name),
* any other ``memory/**/*.md`` (topic files, evergreen),
* ``extra_paths``: files or folders (recursive ``*.md``) from the settings.

Symbolic links are never followed, and nothing outside this set is read.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from filelock import FileLock

log = logging.getLogger(__name__)

_DAILY_NAME = re.compile(r"^(\d{4})-(\d{2})-(\d{2})(?:[-_ ].*)?\.md$", re.IGNORECASE)
MAX_FILE_BYTES = 64 * 1024 * 1024  # larger files are skipped with a warning


class PathError(ValueError):
    """A path that is not a memory file of this workspace."""


@dataclass(frozen=True)
class MemoryFile:
    """One markdown file that belongs to the memory."""

    rel_path: str  # workspace-relative, POSIX separators; absolute for extra paths outside it
    abs_path: Path
    date: dt.date | None  # the day of a daily log; None for evergreen files

    @property
    def evergreen(self) -> bool:
        return self.date is None


def file_date(rel_path: str) -> dt.date | None:
    """The date of a daily log (``memory/2026-11-26.md``), else None (evergreen)."""
    parts = PurePosixPath(rel_path).parts
    if len(parts) < 2 or parts[0] != "memory":
        return None
    match = _DAILY_NAME.match(parts[-1])
    if not match:
        return None
    try:
        return dt.date(int(match[1]), int(match[2]), int(match[3]))
    except ValueError:
        return None


class Workspace:
    """A folder of memory files plus configured extra paths."""

    def __init__(self, root: Path, extra_paths: list[str] | tuple[str, ...] = (), lock_path: Path | None = None):
        self.root = Path(root)
        self.extra_paths = [self._resolve_extra(p) for p in extra_paths]
        # Every edit of a memory file by this program happens under this lock, in any process.
        self._lock = FileLock(str(lock_path or self.root / ".mcp-memory" / "files.lock"), timeout=60)

    def _resolve_extra(self, raw: str) -> Path:
        path = Path(raw).expanduser()
        return path if path.is_absolute() else self.root / path

    def ensure_exists(self) -> None:
        """Create the workspace folder (and ``memory/``) if missing."""
        (self.root / "memory").mkdir(parents=True, exist_ok=True)

    # ----- listing -------------------------------------------------------------------------
    def list_files(self) -> list[MemoryFile]:
        """Every memory file, sorted by relative path, without following symlinks."""
        found: dict[str, MemoryFile] = {}
        for name in ("MEMORY.md", "memory.md"):
            path = self.root / name
            if _is_regular_file(path):
                rel = self.rel_path(path)
                # On case-insensitive file systems both names are the same file: keep one.
                if not any(os.path.samefile(path, f.abs_path) for f in found.values()):
                    found[rel] = MemoryFile(rel, path, None)
        for path in _walk_markdown(self.root / "memory"):
            rel = self.rel_path(path)
            found[rel] = MemoryFile(rel, path, file_date(rel))
        for extra in self.extra_paths:
            if extra.is_symlink():
                log.warning("extra path %s is a symbolic link: skipped", extra)
                continue
            candidates = [extra] if extra.is_file() else _walk_markdown(extra)
            for path in candidates:
                if path.suffix.lower() != ".md" or not _is_regular_file(path):
                    continue
                rel = self.rel_path(path)
                found.setdefault(rel, MemoryFile(rel, path, None))
        return [found[k] for k in sorted(found)]

    def rel_path(self, path: Path) -> str:
        """Workspace-relative POSIX path, or the absolute POSIX path for files outside it."""
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return path.as_posix()

    # ----- safe resolution -----------------------------------------------------------------
    def resolve(self, rel_path: str) -> MemoryFile:
        """Map a user-supplied path to one of the memory files, or raise PathError saying why.

        Only paths that ``list_files`` would return are admitted, so ``../``, absolute paths
        outside the extra paths, symlinks, and non-markdown files are all refused.
        """
        if not isinstance(rel_path, str) or not rel_path.strip():
            raise PathError("path is empty")
        if "\x00" in rel_path:
            raise PathError("path contains a NUL character")
        cleaned = rel_path.strip().replace("\\", "/")
        while cleaned.startswith("./"):
            cleaned = cleaned[2:]
        if any(part == ".." for part in cleaned.split("/")):
            raise PathError(f"{rel_path!r} leaves the workspace ('..' is not allowed)")
        if not cleaned.lower().endswith(".md"):
            raise PathError(f"{rel_path!r} is not a markdown memory file")
        direct = self._resolve_without_listing(cleaned)
        if direct is not None:
            return direct
        for memory_file in self.list_files():
            if memory_file.rel_path == cleaned:
                return memory_file
        candidate = Path(cleaned) if cleaned.startswith("/") else self.root / cleaned
        try:
            is_link, exists = candidate.is_symlink(), candidate.exists()
        except OSError:  # a name too long for the file system, and the like
            raise PathError(f"{rel_path[:80]!r}... is not a memory file") from None
        if is_link:
            raise PathError(f"{rel_path!r} is a symbolic link; links are not followed")
        if exists:
            raise PathError(
                f"{rel_path!r} is not a memory file (memory files are MEMORY.md, memory/**/*.md "
                "and the configured extra paths)"
            )
        raise PathError(f"{rel_path!r} does not exist")

    def _resolve_without_listing(self, cleaned: str) -> MemoryFile | None:
        """The memory file that ``cleaned`` names, found without walking the workspace.

        Searches, recall and every duplicate check read the files of their hits, so resolving
        must not cost a walk of every memory file (30 ms for 1,100 files). This answers only when
        it is sure that ``list_files`` holds exactly this entry: the same rules (no symlinked file
        or folder, no hidden folder, a regular ``.md`` file) and the same spelling, letter case
        included, since a case-insensitive file system would open ``Memory/X.md`` as
        ``memory/x.md``. Anything else (``memory.md`` beside ``MEMORY.md``, extra paths, refusals)
        takes the full listing, whose answers and error messages are the reference.
        """
        if cleaned == "MEMORY.md" or (cleaned == "memory.md" and not _is_regular_file(self.root / "MEMORY.md")):
            try:
                if cleaned in os.listdir(self.root) and _is_regular_file(self.root / cleaned):
                    return MemoryFile(cleaned, self.root / cleaned, None)
            except OSError:
                pass
            return None
        parts = cleaned.split("/")
        if len(parts) < 2 or parts[0] != "memory" or "" in parts:
            return None
        folder = self.root
        try:
            for depth, part in enumerate(parts):
                is_file = depth == len(parts) - 1
                if depth not in (0, len(parts) - 1) and part.startswith("."):
                    return None  # hidden folder
                if part not in os.listdir(folder):
                    return None
                folder = folder / part
                if folder.is_symlink() or not (folder.is_file() if is_file else folder.is_dir()):
                    return None
        except OSError:
            return None
        return MemoryFile(cleaned, self.root / cleaned, file_date(cleaned))

    # ----- edits (locked, atomic) ------------------------------------------------------------
    def evergreen_path(self) -> str:
        """The curated file: an existing ``memory.md`` is used as it is, else ``MEMORY.md``."""
        if not (self.root / "MEMORY.md").exists() and _is_regular_file(self.root / "memory.md"):
            return "memory.md"
        return "MEMORY.md"

    def daily_path(self, day: dt.date) -> str:
        return f"memory/{day.isoformat()}.md"

    def locked(self) -> FileLock:
        """The cross-process edit lock, to hold around a read-check-append sequence (re-entrant)."""
        Path(self._lock.lock_file).parent.mkdir(parents=True, exist_ok=True)
        return self._lock

    def append(self, rel_path: str, lines: list[str], new_file_header: str = "") -> tuple[int, int]:
        """Append lines to a memory file (created with ``new_file_header`` if missing).

        Returns the 1-based line range the new lines occupy. The file is rewritten atomically
        under the workspace file lock, so concurrent appends from several processes all land.
        """
        path = self._writable(rel_path)
        Path(self._lock.lock_file).parent.mkdir(parents=True, exist_ok=True)
        with self._lock:
            old = read_text(path) if path.exists() else new_file_header
            if old and not old.endswith("\n"):
                old += "\n"
            start = old.count("\n") + 1
            _atomic_write(path, old + "\n".join(lines) + "\n")
        return start, start + len(lines) - 1

    def remove_line(self, rel_path: str, line: int, expected: str) -> None:
        """Delete one line, only if it still holds ``expected``; every other byte is kept."""
        path = self._writable(rel_path)
        Path(self._lock.lock_file).parent.mkdir(parents=True, exist_ok=True)
        with self._lock:
            # Lines are split at "\n" only, as everywhere else (U+2028 or a form feed is text).
            lines = read_text(path).split("\n")
            count = len(lines) - 1 if lines[-1] == "" else len(lines)
            if not 1 <= line <= count or lines[line - 1].rstrip("\r") != expected:
                raise PathError(f"{rel_path} line {line} changed since it was read; nothing was removed")
            del lines[line - 1]
            _atomic_write(path, "\n".join(lines))

    def _writable(self, rel_path: str) -> Path:
        cleaned = rel_path.replace("\\", "/")
        if cleaned not in ("MEMORY.md", "memory.md") and not cleaned.startswith("memory/"):
            raise PathError(f"{rel_path!r}: only MEMORY.md and files under memory/ can be written")
        if ".." in cleaned.split("/") or not cleaned.endswith(".md"):
            raise PathError(f"{rel_path!r} is not a writable memory file")
        path = self.root / cleaned
        if path.is_symlink():
            raise PathError(f"{rel_path!r} is a symbolic link; links are not followed")
        path.parent.mkdir(parents=True, exist_ok=True)
        return path


def _atomic_write(path: Path, text: str) -> None:
    """Write to a temporary file beside ``path`` and rename it over: readers see old or new, never half."""
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_text(path: Path) -> str:
    """Read a memory file as UTF-8; raises UnicodeDecodeError for binary or non-UTF-8 content."""
    data = path.read_bytes()
    if b"\x00" in data[:8192]:
        raise UnicodeDecodeError("utf-8", data[:1], 0, 1, "binary content (NUL byte)")
    return data.decode("utf-8-sig")


def _is_regular_file(path: Path) -> bool:
    return not path.is_symlink() and path.is_file()


def _walk_markdown(folder: Path) -> list[Path]:
    """Recursive ``*.md`` under a folder; symlinked files and folders are skipped."""
    if folder.is_symlink() or not folder.is_dir():
        return []
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        base = Path(dirpath)
        # Hidden folders (such as the index folder) and symlinked folders are not memory.
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and not (base / d).is_symlink()]
        for name in filenames:
            if name.lower().endswith(".md"):
                path = base / name
                if _is_regular_file(path):
                    out.append(path)
    return out
