"""Utility feedback: reward a memory that helped, penalize one that misled, find one by its id.

The ids come from search hits and recall blocks (``core/memory_ids.py``); the utility they earn is
kept by ``core/utility.py`` and weighed into every search mode and recall. A reward or penalty
names a memory that must exist now in a file the caller may see: an id that no file holds
(a typo, a memory since edited or removed) is refused with a clear error, so learned state
never accumulates for nothing.
"""

from __future__ import annotations

from mcp_memory.core.memory_ids import is_memory_id
from mcp_memory.core.memory_lookup import LocatedMemory, MemoryLookup
from mcp_memory.core.reading import Reader
from mcp_memory.core.utility import UtilityChange, UtilityStore
from mcp_memory.errors import MemoryInputError


class Feedback:
    def __init__(self, reader: Reader, naming: MemoryLookup, store: UtilityStore):
        self.reader = reader
        self.naming = naming
        self.store = store

    def locate(self, memory_id: str, include_private: bool = True) -> LocatedMemory:
        """Where the memory ``memory_id`` is written (its first place, MEMORY.md and evergreen files first)."""
        if not isinstance(memory_id, str) or not is_memory_id(memory_id.strip()):
            raise MemoryInputError(f"{str(memory_id)[:80]!r} is not a memory id (ids look like m-3f2a9c1b7e4d: "
                                   "take them from the id field of a search hit or a recalled memory)")
        files = self.reader.list_files(include_private)
        ordered = sorted(files, key=lambda f: (f.date is not None, f.path))
        found = self.naming.find(memory_id.strip(), [f.path for f in ordered])
        if not found:
            raise MemoryInputError(f"no memory has the id {memory_id.strip()}: it was edited or removed since, "
                                   "or it was never an id here (search again for a current one)")
        return found[0]

    def locate_many(self, memory_ids: list[str], include_private: bool = True) -> dict[str, LocatedMemory]:
        """Where each of ``memory_ids`` is written now (ids no visible file holds are left out)."""
        wanted = {i.strip() for i in memory_ids if isinstance(i, str) and is_memory_id(i.strip())}
        if not wanted:
            return {}
        ordered = sorted(self.reader.list_files(include_private), key=lambda f: (f.date is not None, f.path))
        return self.naming.find_many(wanted, [f.path for f in ordered])

    def reward(self, memory_id: str, amount: float = 0.2, include_private: bool = True) -> UtilityChange:
        """Raise a memory's utility: it helped answer correctly."""
        located = self.locate(memory_id, include_private)
        return self.store.reward(located.id, amount)

    def penalize(self, memory_id: str, amount: float = 0.2, include_private: bool = True) -> UtilityChange:
        """Lower a memory's utility: it was wrong, stale or misleading."""
        located = self.locate(memory_id, include_private)
        return self.store.penalize(located.id, amount)
