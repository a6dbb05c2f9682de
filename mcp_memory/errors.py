"""The errors a caller can cause, in one light module.

The server, the command line and the hooks import these at the top to turn them into tool
errors, exit codes and log lines, without importing the engine (LanceDB, NumPy) to do so.
"""

from __future__ import annotations


class MemoryInputError(ValueError):
    """A request the memory refuses as asked (empty text, no such line, a secret, ...)."""


class PathError(ValueError):
    """A path that is not a memory file of this workspace (or not one this caller may read)."""


class SearchError(ValueError):
    """A search request that cannot be answered as asked (bad filter values)."""


class WorkspaceGone(PathError):
    """The workspace folder was removed while a process had it open: nothing more is written there."""
