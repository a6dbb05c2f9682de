"""Which files are memory, and safe access to them.

The workspace is the source of truth. Memory files are:

* ``MEMORY.md`` (curated, evergreen; ``memory.md`` is accepted too),
* ``memory/YYYY-MM-DD.md`` (daily logs, dated by their name),
* any other ``memory/**/*.md`` (topic files, evergreen),
* ``extra_paths``: files or folders (recursive ``*.md``) from the settings.

Every file has one name, decided on where it really is. An extra or sessions path is resolved
(``..``, linked parent folders) before anything below it is named, so a file inside the
workspace gets its workspace-relative name (``memory/private/notes.md``) however the path
was spelled in the settings; privacy, which is decided on that name, cannot be got around by
spelling a path another way. A file reached twice (by two paths, or through the memory folder
and an extra path) is listed once, under its first name.

Links are never followed, and nothing outside this set is read: a symbolic link (to a file
or a folder) is not memory, and neither is a file with more than one hard link (it may be
the same file as one elsewhere, outside the workspace). Writes check every component of
their path, so a symlinked ``memory/`` folder is refused rather than written through. To
keep memory in a synced folder (Dropbox, an Obsidian vault), make that folder the
workspace: the workspace root itself is resolved once, at start.

A file damaged by other tools (invalid UTF-8, a stray NUL) is still memory: its bad bytes
read as U+FFFD, its valid lines are indexed and served, and appends keep every byte of it.
Only files that look binary are skipped.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import re
import stat
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from mcp_memory.core.session_source import TRANSCRIPT_SUFFIX, is_transcript, render_transcript
from mcp_memory.errors import PathError, WorkspaceGone

__all__ = ["MemoryFile", "PathError", "Workspace", "decode_memory_bytes", "file_date", "read_text"]

log = logging.getLogger(__name__)

FileId = tuple[int, int]  # (st_dev, st_ino): one file, whatever path reaches it

_DAILY_NAME = re.compile(r"^(\d{4})-(\d{2})-(\d{2})(?:[-_ ].*)?\.md$", re.IGNORECASE)
MAX_FILE_BYTES = 64 * 1024 * 1024  # larger files are skipped with a warning
_BINARY_SHARE = 0.10  # a file whose first 8 KB are more than 10 % control bytes is binary, not damaged text
_CONTROL_BYTES = bytes([*range(0x00, 0x09), *range(0x0E, 0x20), 0x7F])
# Characters that a memory file's text never shows: they read as U+FFFD (line breaks kept).
_UNSHOWABLE = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")


@dataclass(frozen=True)
class MemoryFile:
    """One markdown file that belongs to the memory."""

    rel_path: str  # workspace-relative, POSIX separators; absolute (resolved) for extra paths outside it
    abs_path: Path
    date: dt.date | None  # the day of a daily log; None for evergreen files
    kind: str = "memory"  # "memory" (markdown) or "sessions" (a JSONL transcript, see session_source.py)

    @property
    def evergreen(self) -> bool:
        return self.date is None


def file_date(rel_path: str) -> dt.date | None:
    """The date of a daily log (``memory/2026-11-26.md``), else None (evergreen)."""
    # The parts PurePosixPath would give, without its cost (every listing dates every file).
    if rel_path.startswith("/"):
        return None
    parts = [part for part in rel_path.split("/") if part not in ("", ".")]
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

    def __init__(self, root: Path, extra_paths: list[str] | tuple[str, ...] = (), lock_path: Path | None = None,
                 sessions_paths: list[str] | tuple[str, ...] = ()):
        self.root = Path(root)
        # Where the root really is: files found below resolved extra paths are named against it.
        self._real_root = _resolved(self.root) or Path(os.path.abspath(self.root))
        # As configured (made absolute): each listing resolves them (see _real_location).
        self.extra_paths = [self._resolve_extra(p) for p in extra_paths]
        self.sessions_paths = [self._resolve_extra(p) for p in sessions_paths]
        # Every edit of a memory file by this program happens under this lock, in any process.
        self._lock = FileLock(str(lock_path or self.root / ".mcp-memory" / "files.lock"), timeout=60)
        self._seen = self.root.is_dir()  # see check_present
        self._listings = _FolderListings()

    def _resolve_extra(self, raw: str) -> Path:
        """A configured path made absolute (``~`` expanded, relative to the root); not yet resolved."""
        path = Path(raw).expanduser()
        return path if path.is_absolute() else self.root / path

    def ensure_exists(self) -> None:
        """Create the workspace folder (and ``memory/``) if missing. A workspace made here is its owner's
        alone (0700): it holds personal notes, whatever the umask; one that exists keeps its mode."""
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        (self.root / "memory").mkdir(parents=True, exist_ok=True)
        self._seen = True

    def check_present(self) -> None:
        """``WorkspaceGone`` when the workspace folder this process saw was removed since.

        A folder that never existed is made by the first write (a new workspace); one that was
        there and went away was removed by its owner, and nothing makes it again.
        """
        if self.root.is_dir():
            self._seen = True
        elif self._seen:
            raise WorkspaceGone(f"the workspace folder {self.root} was removed; nothing is written "
                                "(make it again, or point the client at another workspace)")

    def _lock_folder(self) -> None:
        self.check_present()
        Path(self._lock.lock_file).parent.mkdir(parents=True, exist_ok=True)

    # ----- listing -------------------------------------------------------------------------
    def list_files(self) -> list[MemoryFile]:
        """Every memory file, sorted by relative path, without following symlinks.

        Each file is listed once, under its canonical name: the curated file and ``memory/``
        first, then the extra paths, whose files already listed (by ``(st_dev, st_ino)``) are
        left out, so no spelling of an extra path adds a second, differently named copy.
        """
        found: dict[str, MemoryFile] = {}
        seen: set[FileId] = set()
        for name in ("MEMORY.md", "memory.md"):
            path = self.root / name
            file_id = _regular_file_id(path)
            # On case-insensitive file systems both names are the same file: keep one.
            if file_id is not None and file_id not in seen:
                seen.add(file_id)
                found[name] = MemoryFile(name, path, None)
        prefix = os.path.join(os.fspath(self.root), "")
        for path, file_id in _walk_entries(self.root / "memory", ".md"):
            text = os.fspath(path)
            # Below the root by construction: its relative path is a slice (relative_to costs more).
            rel = text[len(prefix):].replace(os.sep, "/") if text.startswith(prefix) else self.rel_path(path)
            found[rel] = MemoryFile(rel, path, file_date(rel))
            seen.add(file_id)
        for extra in self.extra_paths:
            real = _real_location(extra, "extra path")
            for path, file_id in _files_under(real, ".md") if real is not None else []:
                if file_id in seen:
                    continue  # already listed under its canonical name
                seen.add(file_id)
                rel, where = self._located(path)
                found.setdefault(rel, MemoryFile(rel, where, None))
        for transcript in self.session_files():
            found.setdefault(transcript.rel_path, transcript)
        return [found[k] for k in sorted(found)]

    def session_files(self) -> list[MemoryFile]:
        """The JSONL transcripts of ``[sessions] paths`` (files, or folders searched recursively).

        Named and deduplicated as the extra paths are (``list_files``): on where they really are.
        """
        out = []
        seen: set[FileId] = set()
        for configured in self.sessions_paths:
            real = _real_location(configured, "sessions path")
            for path, file_id in _files_under(real, TRANSCRIPT_SUFFIX) if real is not None else []:
                if file_id not in seen:
                    seen.add(file_id)
                    rel, where = self._located(path)
                    out.append(MemoryFile(rel, where, None, "sessions"))
        return out

    def read_memory(self, memory_file: MemoryFile) -> str:
        """The text of a memory file as search sees it: markdown as it is, a transcript rendered."""
        if memory_file.kind == "sessions":
            return render_transcript(memory_file.abs_path.read_bytes())
        return read_text(memory_file.abs_path)

    def link_warnings(self, limit: int = 5) -> list[str]:
        """Memory locations left out because they are links (a common surprise), for ``status``.

        The top-level names each get their own line; links found deeper in ``memory/`` are
        summed up in one line naming the first ``limit`` of them.
        """
        warnings = []
        for name in ("MEMORY.md", "memory.md", "memory"):
            kind = _link_kind(self.root / name)
            if kind == "symbolic link":
                warnings.append(f"{name} is a symbolic link: it is not read and nothing is written through it "
                                "(to keep memory in a synced folder, make that folder the workspace)")
            elif kind:
                warnings.append(f"{name} has {kind}: it is not read (copy it to break the link)")
        deeper = _linked_below(self.root / "memory", self.root)
        if deeper:
            shown = ", ".join(f"{rel} ({kind})" for rel, kind in deeper[:limit])
            more = f" and {len(deeper) - limit} more" if len(deeper) > limit else ""
            warnings.append(f"{len(deeper)} linked files or folders under memory/ are not read: {shown}{more}")
        return warnings

    def rel_path(self, path: Path) -> str:
        """The name of the file at ``path``: workspace-relative POSIX inside the workspace, else absolute POSIX.

        Decided on where the file really is, as ``list_files`` names it: ``..`` and linked
        folders on the way are resolved (a relative ``path`` is taken from the root). The file
        itself is not followed when it is a link: links are not memory, whatever they point at.
        """
        absolute = path if path.is_absolute() else self.root / path
        return self._located(_real_parent(absolute))[0]

    def _located(self, real: Path) -> tuple[str, Path]:
        """(name, path to open) of a file at the resolved path ``real``.

        Inside the workspace the name is workspace-relative and the file is opened below the
        root, as the ``memory/`` walk opens it; outside, both are the resolved absolute path.
        """
        try:
            rel = real.relative_to(self._real_root).as_posix()
        except ValueError:
            return real.as_posix(), real
        return rel, self.root / rel

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
        if is_transcript(cleaned):
            for transcript in self.session_files():
                if transcript.rel_path == cleaned:
                    return transcript
            raise PathError(f"{rel_path!r} is not a transcript of the configured sessions paths")
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
                if cleaned in self._listings.names(self.root) and _is_regular_file(self.root / cleaned):
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
                if part not in self._listings.names(folder):
                    return None
                folder = folder / part
                if not _is_regular_file(folder) if is_file else (folder.is_symlink() or not folder.is_dir()):
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
        self._lock_folder()
        return self._lock

    def append(self, rel_path: str, lines: list[str], new_file_header: str = "") -> tuple[int, int]:
        """Append lines to a memory file (created with ``new_file_header`` if missing).

        Returns the 1-based line range the new lines occupy. The file is rewritten atomically
        under the workspace file lock, so concurrent appends from several processes all land.
        """
        self._lock_folder()
        with self._lock:
            path = self._writable(rel_path)
            # Bytes, not text: a file damaged by another tool keeps every byte it had.
            old = path.read_bytes() if path.exists() else new_file_header.encode("utf-8")
            if old and not old.endswith(b"\n"):
                old += b"\n"
            start = old.count(b"\n") + 1
            _atomic_write(path, old + ("\n".join(lines) + "\n").encode("utf-8"))
        return start, start + len(lines) - 1

    def write_file(self, rel_path: str, text: str) -> None:
        """Replace the whole text of one memory file (created if missing), atomically under the file lock.

        For files a feature owns as a whole (an episode); every other file stays as it is.
        """
        self._lock_folder()
        with self._lock:
            _atomic_write(self._writable(rel_path), text.encode("utf-8"))

    def remove_file(self, rel_path: str, expected: bytes) -> None:
        """Delete one memory file a feature owns as a whole, only if it still holds ``expected``.

        For a record moved elsewhere (an episode that became private): its new copy is written
        first, so a failure in between leaves two copies, never none.
        """
        self._lock_folder()
        with self._lock:
            path = self._writable(rel_path)
            if not path.exists():
                return
            if path.read_bytes() != expected:
                raise PathError(f"{rel_path} changed since it was read; it was left in place")
            path.unlink()

    def replace_bytes(self, rel_path: str, expected: bytes | None, new: bytes) -> None:
        """Replace a memory file's bytes with ``new`` only if it still holds ``expected`` (None: missing).

        For a read-check-rewrite under ``locked()``: the caller edits the bytes it read (so bytes
        it did not touch stay exactly as they were) and a change made meanwhile is refused.
        """
        self._lock_folder()
        with self._lock:
            path = self._writable(rel_path)
            current = path.read_bytes() if path.exists() else None
            if current != expected:
                raise PathError(f"{rel_path} changed since it was read; nothing was written")
            _atomic_write(path, new)

    def remove_line(self, rel_path: str, line: int, expected: str) -> None:
        """Delete one line, only if it still holds ``expected``; every other byte is kept."""
        self._lock_folder()
        with self._lock:
            path = self._writable(rel_path)
            data = path.read_bytes()
            # Lines are split at "\n" only, as everywhere else (U+2028 or a form feed is text);
            # a "\n" byte never occurs inside a UTF-8 sequence, so byte lines are text lines.
            texts = decode_memory_bytes(data).split("\n")
            raw_lines = data.split(b"\n")
            count = len(texts) - 1 if texts[-1] == "" else len(texts)
            if not 1 <= line <= count or texts[line - 1].rstrip("\r") != expected:
                raise PathError(f"{rel_path} line {line} changed since it was read; nothing was removed")
            del raw_lines[line - 1]
            _atomic_write(path, b"\n".join(raw_lines))

    def _writable(self, rel_path: str) -> Path:
        """The path to write ``rel_path`` at, once every component of it is checked.

        Each folder on the way must be a real folder inside the workspace (created if missing)
        and the file, if present, a regular file with one link: a write never goes through a
        symbolic link or a hard link to somewhere else, where search would never find it.
        """
        cleaned = rel_path.replace("\\", "/")
        if cleaned not in ("MEMORY.md", "memory.md") and not cleaned.startswith("memory/"):
            raise PathError(f"{rel_path!r}: only MEMORY.md and files under memory/ can be written")
        parts = cleaned.split("/")
        if ".." in parts or "" in parts or "." in parts or not cleaned.endswith(".md"):
            raise PathError(f"{rel_path!r} is not a writable memory file")
        if any(part.startswith(".") for part in parts[:-1]):
            raise PathError(f"{rel_path!r} is in a hidden folder, which is not memory")
        self.check_present()
        folder = self.root
        for part in parts[:-1]:
            folder = folder / part
            try:
                info = os.lstat(folder)
            except FileNotFoundError:
                try:
                    folder.mkdir()
                except FileExistsError:
                    pass  # another process made it meanwhile: checked just below
                info = os.lstat(folder)
            if stat.S_ISLNK(info.st_mode):
                raise PathError(
                    f"{folder.relative_to(self.root).as_posix()}/ is a symbolic link: memory is never written through "
                    "links (to keep memory in a synced folder, make that folder the workspace)")
            if not stat.S_ISDIR(info.st_mode):
                raise PathError(f"{folder.relative_to(self.root).as_posix()} is not a folder")
        path = self.root / cleaned
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            return path
        if stat.S_ISLNK(info.st_mode):
            raise PathError(f"{rel_path!r} is a symbolic link; links are not followed")
        if not stat.S_ISREG(info.st_mode):
            raise PathError(f"{rel_path!r} is not a regular file")
        if info.st_nlink > 1:
            raise PathError(f"{rel_path!r} has {info.st_nlink} hard links; a linked file is not memory "
                            "(copy it to break the link)")
        return path


def _atomic_write(path: Path, data: bytes) -> None:
    """Write to a temporary file beside ``path`` and rename it over: readers see old or new, never half.

    An existing file keeps its permissions; a new one gets what the umask gives (0644 under
    the usual 022, 0600 under 077), as any other program's new file would.
    """
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    """The process umask, read without changing it where the system allows."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    if sys.platform == "win32":
        return 0o022
    mask = os.umask(0o022)  # no other way to read it: set and restore at once
    os.umask(mask)
    return mask


def read_text(path: Path) -> str:
    """Read a memory file as text; raises UnicodeDecodeError for a binary file.

    A damaged text file reads anyway: invalid UTF-8 and control characters become U+FFFD,
    line for line, so its valid lines stay readable and searchable where they are.
    """
    return decode_memory_bytes(path.read_bytes())


def decode_memory_bytes(data: bytes) -> str:
    """The text of a memory file's bytes (see ``read_text``)."""
    head = data[:8192]
    controls = len(head) - len(head.translate(None, _CONTROL_BYTES))  # counted in C: a read of every hit's file
    if controls > 0.3 * len(head) or (controls >= 4 and controls > _BINARY_SHARE * len(head)):
        raise UnicodeDecodeError("utf-8", head[:1], 0, 1, "binary content (control bytes)")
    return _UNSHOWABLE.sub("\ufffd", data.decode("utf-8-sig", errors="replace"))


class _FolderListings:
    """The names in each folder a path was resolved through, read again when the folder changes.

    Resolving checks each part's spelling against its folder's listing; a folder of ten thousand
    daily logs takes a millisecond to list, and a search resolves a few files. A folder's
    modification time changes whenever a name in it is added, removed or renamed, so the names
    are kept with the folder's inode and modification time and listed again when either moves.
    """

    _MAX_FOLDERS = 256

    def __init__(self) -> None:
        self._names: dict[Path, tuple[tuple[int, int], frozenset[str]]] = {}

    def names(self, folder: Path) -> frozenset[str]:
        """The names in ``folder`` (OSError when it cannot be listed)."""
        info = os.stat(folder)
        key = (info.st_ino, info.st_mtime_ns)
        cached = self._names.get(folder)
        if cached is not None and cached[0] == key:
            return cached[1]
        names = frozenset(os.listdir(folder))
        if len(self._names) >= self._MAX_FOLDERS:
            self._names.clear()
        self._names[folder] = (key, names)
        return names


def _is_regular_file(path: Path) -> bool:
    """A regular file with a single link: symbolic and hard links are not followed."""
    return _regular_file_id(path) is not None


def _regular_file_id(path: Path) -> FileId | None:
    """The identity of ``path`` when it is a regular file with a single link (else None: not memory)."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino) if stat.S_ISREG(info.st_mode) and info.st_nlink == 1 else None


def _resolved(path: Path) -> Path | None:
    """``path`` resolved (``..`` and every link on the way), or None when it cannot be (a loop of links)."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # a symlink loop: RuntimeError before Python 3.13
        return None


def _real_parent(path: Path) -> Path:
    """``path`` with its folders resolved and its last part kept: a link there is named, never followed."""
    parent = _resolved(path.parent)
    return path if parent is None else parent / path.name


def _real_location(configured: Path, what: str) -> Path | None:
    """Where a configured extra or sessions path really is, or None when it is not read.

    The path itself must not be a symbolic link (links are not memory, here as anywhere), but
    the folders leading to it may be spelled any way, ``..`` and linked parents included:
    they are resolved, so files below get the names they have when reached directly.
    """
    if configured.is_symlink():
        log.warning("%s %s is a symbolic link: skipped", what, configured)
        return None
    real = _resolved(configured)
    if real is None:
        log.warning("%s %s cannot be resolved (a loop of links?): skipped", what, configured)
    return real


def _files_under(real: Path, suffix: str) -> list[tuple[Path, FileId]]:
    """The files ending with ``suffix`` at a resolved extra or sessions path: itself, or those below it."""
    if real.is_dir():
        return _walk_entries(real, suffix)
    file_id = _regular_file_id(real) if real.name.lower().endswith(suffix) else None
    return [] if file_id is None else [(real, file_id)]


def _link_kind(path: Path) -> str | None:
    """ "symbolic link", "N hard links" for a multiply linked markdown file, or None."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISLNK(info.st_mode):
        return "symbolic link"
    if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
        return f"{info.st_nlink} hard links"
    return None


def _linked_below(folder: Path, root: Path) -> list[tuple[str, str]]:
    """(workspace path, kind) of the links under ``folder`` that the listing skips, sorted."""
    if folder.is_symlink() or not folder.is_dir():
        return []
    found: list[tuple[str, str]] = []
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        base = Path(dirpath)
        for name in sorted(dirnames):
            if not name.startswith(".") and (base / name).is_symlink():
                found.append(((base / name).relative_to(root).as_posix() + "/", "symbolic link"))
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and not (base / d).is_symlink()]
        for name in filenames:
            kind = _link_kind(base / name) if name.lower().endswith(".md") else None
            if kind:
                found.append(((base / name).relative_to(root).as_posix(), kind))
    return sorted(found)


def _walk_entries(folder: Path, suffix: str) -> list[tuple[Path, FileId]]:
    """Recursive files ending with ``suffix`` under a folder, each with its identity; symlinked files and
    folders are skipped. The identity comes from the stat the walk makes anyway, so deduplicating costs nothing."""
    if folder.is_symlink() or not folder.is_dir():
        return []
    out: list[tuple[Path, FileId]] = []
    # scandir, not os.walk: the entries' types come with the listing, so only candidate files cost an lstat.
    pending = [os.fspath(folder)]
    while pending:
        try:
            with os.scandir(pending.pop()) as listing:
                entries = list(listing)
        except OSError:
            continue
        for entry in entries:
            try:
                # Hidden folders (such as the index folder) and symlinked folders are not memory.
                if entry.is_dir(follow_symlinks=False):
                    if not entry.name.startswith("."):
                        pending.append(entry.path)
                    continue
                if not entry.name.lower().endswith(suffix):
                    continue
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            # A regular file with a single link: symbolic and hard links are not followed.
            if stat.S_ISREG(info.st_mode) and info.st_nlink == 1:
                out.append((Path(entry.path), (info.st_dev, info.st_ino)))
    return out
