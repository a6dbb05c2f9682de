"""``ServerContext``: what the tools, prompts and resources of one server share."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError

from mcp_memory.config import Settings
from mcp_memory.core.scopes import ScopeFilter
from mcp_memory.runtime.service import MemoryService
from mcp_memory.server import scoping
from mcp_memory.server.auth import may_see_private

if TYPE_CHECKING:  # importing mcp_memory.memory loads LanceDB and NumPy: for annotations only
    from mcp_memory.memory import Memory


@dataclass(frozen=True)
class ServerContext:
    """The per-server state every handler reads: one is built by ``create_server`` and passed to
    the functions that register the tools, prompts and resources."""

    settings: Settings  # the settings ``service`` was built with
    service: MemoryService
    shared: bool  # every caller is shared: the private files are never served
    notify_changed: Callable[[set[str]], None]  # tells listening clients that these files changed
    scope: str | None = None  # the default scope of this server's callers (None: the global memory)

    def memory(self) -> Memory:
        """The open memory; a tool error (the client sees why) while it cannot be opened."""
        try:
            return self.service.memory()
        except (TimeoutError, RuntimeError) as exc:
            raise ToolError(str(exc)) from None

    def include_private(self, ctx: Context | None) -> bool:
        """Whether this caller's request may include the private files (see ``auth.may_see_private``)."""
        return may_see_private(ctx, self.shared)

    def searched(self, ctx: Context | None, scope: str | None = None) -> ScopeFilter:
        """The scopes this caller's search covers, given the ``scope`` it named (see ``scoping.py``)."""
        return scoping.searched(self.scope, ctx, scope)

    def written(self, ctx: Context | None, scope: str | None = None) -> str | None:
        """The scope this caller's write goes into (None: the global memory; see ``scoping.py``)."""
        return scoping.written(self.scope, ctx, scope)
