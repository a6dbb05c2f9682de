"""The search snapshot saved beside the index, so a new process can search without LanceDB.

A process that starts cold (the warm process a client's first prompt hook starts, a CLI search)
spends most of its start in ``import lancedb``: over a second of CPU, two or three on a busy
machine, before it can read the chunk table into its search snapshot. Yet search itself only
reads that snapshot (``index/snapshot.py``). So the snapshot is saved as one Arrow IPC file,
``<index_dir>/snapshot.arrow``, tagged with the index generation and fingerprint it holds.
A process whose state database names the same generation and fingerprint maps the file in
milliseconds and imports LanceDB only when it first writes or checks the table; the chunks' texts,
most of the file, are read from it one by one as searches need them (``MappedFile``).

When it is written:

* after a process loaded the whole table from LanceDB (the rows are at hand: one write);
* when a long-running process closes (the warm process after its idle time, a server on exit),
  with the snapshot it kept current through every edit.

Any other write to the index replaces the generation, so a saved file older than the index is
never read; a process killed before saving costs the next one the slow path, nothing else.
A process killed while saving leaves its temporary file (as large as the snapshot) beside the
index, never read; the next save removes it once its writer is gone.
The file holds the memory's text, private files included, like the index beside it: it is
readable by its owner only.
"""

from __future__ import annotations

import ctypes
import logging
import mmap
import os
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc

log = logging.getLogger(__name__)

SNAPSHOT_FILE = "snapshot.arrow"
_GENERATION_KEY = b"mcp_memory.generation"
_FINGERPRINT_KEY = b"mcp_memory.fingerprint"
_TEMPORARY_PREFIX = ".snapshot-"  # then the writer's pid, a dash, a random part, ".tmp"
_LEFTOVER_AGE = 3600.0  # seconds: a save takes seconds, so a temporary this old is a killed one's


@dataclass(frozen=True)
class SavedTag:
    """What a saved snapshot was taken of: the index generation and the index fingerprint."""

    generation: str
    fingerprint: str


def saved_path(index_dir: Path) -> Path:
    return index_dir / SNAPSHOT_FILE


def read_tag(path: Path) -> SavedTag | None:
    """The tag of the saved snapshot at ``path`` (its footer only); None without a readable one."""
    try:
        with pa.OSFile(str(path), "rb") as source:
            metadata = pyarrow.ipc.open_file(source).schema.metadata or {}
    except (OSError, pa.ArrowInvalid):
        return None
    generation, fingerprint = metadata.get(_GENERATION_KEY), metadata.get(_FINGERPRINT_KEY)
    if generation is None or fingerprint is None:
        return None
    return SavedTag(generation.decode(), fingerprint.decode())


class MappedFile:
    """A saved snapshot's file, mapped read-only: its rows are read in place, without a copy.

    The chunks' text is most of a snapshot (1.3 GB of a million chunks of short memories), and a
    search reads the text of a few dozen rows. Read through the mapping, each would bring its
    neighbourhood into the process (the system maps the page cache in blocks of up to megabytes),
    so ``read`` takes a text's bytes with ``pread`` instead: what search reads stays in the page
    cache, out of the process's memory. Nothing a reader maps changes under it: every save writes
    a new file and renames it over this one, which lives on unnamed until its last reader lets go.
    """

    def __init__(self, path: Path):
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            self._mapping = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)  # ValueError for an empty file
        except BaseException:
            os.close(fd)
            raise
        self._fd: int | None = fd
        self.buffer = pa.py_buffer(self._mapping)  # the rows' buffers point into this
        self.start = self.buffer.address
        self.end = self.start + self.buffer.size

    def holds(self, address: int) -> bool:
        return self.start <= address < self.end

    def read(self, address: int, length: int) -> bytes:
        """``length`` bytes of the file at the mapped ``address``, read without touching the mapping."""
        if self._fd is None:
            raise ValueError("the saved snapshot's file is closed")
        return os.pread(self._fd, length, address - self.start)

    def __del__(self) -> None:
        fd, self._fd = getattr(self, "_fd", None), None
        if fd is not None:
            os.close(fd)


@dataclass(frozen=True)
class Loaded:
    """The rows of a saved snapshot, and the mapped file they are read from (None when read into memory)."""

    rows: pa.Table
    source: MappedFile | None


def load(path: Path, wanted: SavedTag) -> Loaded | None:
    """The rows saved at ``path`` if they were saved with tag ``wanted``; else None.

    The rows are mapped from the file (``MappedFile``) where a file in use can be renamed over;
    elsewhere (Windows) they are read into memory. The schema metadata the rows were saved with
    stays, less the tag.
    """
    try:
        source = MappedFile(path) if os.name == "posix" else None
        with pa.BufferReader(source.buffer) if source is not None else pa.OSFile(str(path), "rb") as handle:
            reader = pyarrow.ipc.open_file(handle)
            metadata = reader.schema.metadata or {}
            table = reader.read_all() if _tagged(metadata, wanted) else None
    except FileNotFoundError:
        return None
    except (OSError, ValueError, pa.ArrowInvalid) as exc:  # torn, empty or foreign: the slow path reads the index
        log.info("the saved search snapshot could not be read (%s): reading the index", exc)
        return None
    if table is None:
        return None
    kept = {key: value for key, value in metadata.items() if key not in (_GENERATION_KEY, _FINGERPRINT_KEY)}
    return Loaded(table.replace_schema_metadata(kept or None), source)  # what the rows carry besides the tag


def release_unused_memory() -> None:
    """Give the memory Arrow and the C heap freed back to the system: after the texts read from
    LanceDB are dropped for the saved file's (``Engine.refresh_snapshot``), 1.3 GB at a million
    chunks; after a large table was read into the file (``large_load.py``), 0.4 GB of the C heap."""
    pa.default_memory_pool().release_unused()
    _trim_c_heap()


def _trim_c_heap() -> None:
    """glibc keeps the pages of freed allocations for reuse; ``malloc_trim`` returns them."""
    if not sys.platform.startswith("linux"):
        return
    try:
        trim = ctypes.CDLL(None).malloc_trim  # glibc's; another C library may not have it
    except (OSError, AttributeError):
        return
    trim(0)


def _tagged(metadata: dict[bytes, bytes], wanted: SavedTag) -> bool:
    return (metadata.get(_GENERATION_KEY) == wanted.generation.encode()
            and metadata.get(_FINGERPRINT_KEY) == wanted.fingerprint.encode())


def save(path: Path, schema: pa.Schema, batches: Iterable[pa.RecordBatch], tag: SavedTag) -> None:
    """Write the rows, ``batches`` of ``schema``, tagged ``tag``, atomically (a temporary file renamed
    over the old one). The batches are written as they come: only one is held at a time."""
    metadata = {**(schema.metadata or {}),
                _GENERATION_KEY: tag.generation.encode(), _FINGERPRINT_KEY: tag.fingerprint.encode()}
    schema = schema.with_metadata(metadata)
    remove_leftovers(path.parent)
    fd, temporary = tempfile.mkstemp(prefix=f"{_TEMPORARY_PREFIX}{os.getpid()}-", suffix=".tmp",
                                     dir=path.parent)  # mode 0600
    try:
        with os.fdopen(fd, "wb") as handle, pyarrow.ipc.new_file(handle, schema) as writer:
            for batch in batches:
                writer.write_batch(batch)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def remove_leftovers(folder: Path) -> None:
    """Remove the temporary files of saves killed before their rename.

    Nothing else ever removes them, and each is as large as the snapshot. A temporary is a
    leftover when the process named in it no longer runs, or (a pid reused, a name without
    one) when it is older than any save takes; one of a save under way is left alone.
    """
    now = time.time()
    for temporary in folder.glob(f"{_TEMPORARY_PREFIX}*.tmp"):
        writer = _writer_pid(temporary.name)
        try:
            if (writer is None or _running(writer)) and now - temporary.stat().st_mtime < _LEFTOVER_AGE:
                continue
            temporary.unlink()
        except OSError:  # removed meanwhile by another process, or not ours to remove
            continue
        log.info("removed %s, left by a save that was killed", temporary.name)


def _writer_pid(name: str) -> int | None:
    """The pid in a temporary's name (``.snapshot-<pid>-<random>.tmp``), None in another name."""
    pid, dash, _ = name[len(_TEMPORARY_PREFIX):].partition("-")
    return int(pid) if dash and pid.isdigit() else None


def _running(pid: int) -> bool:
    if pid == os.getpid() or sys.platform == "win32":
        return True  # this process's own save in another thread; on Windows signal 0 would end the process
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # (EPERM) it runs, as another user
        return True
    return True
