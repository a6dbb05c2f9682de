"""Folders the product makes for its own files: readable by their owner alone.

The index folder holds copies of every note (chunks in LanceDB and Tantivy, texts in the saved
snapshot, activity and embedding caches), the private files' too, so its mode must not follow the
umask: under the usual 022 every local user could read MEMORY.md's text out of the index even where
the file itself is closed to them. A folder made here is 0700; an index folder found open to others
is closed (it is derived data of this user's, never meant to be shared through the file system).
"""

from __future__ import annotations

import os
from pathlib import Path

PRIVATE_MODE = 0o700


def make_private_folder(path: Path) -> None:
    """Create ``path`` (and any missing parent) as 0700, or close it to others if it exists open.

    Parents that already exist keep their mode; on systems without POSIX owners nothing is changed."""
    path.mkdir(parents=True, exist_ok=True, mode=PRIVATE_MODE)
    getuid = getattr(os, "getuid", None)
    if getuid is None:
        return
    try:
        status = path.stat()
        if status.st_mode & 0o077 and status.st_uid == getuid():
            path.chmod(PRIVATE_MODE)
    except OSError:
        pass  # a folder someone else owns, or a file system without modes: left as it is
