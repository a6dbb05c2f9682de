"""The utility tools: reward a memory that helped, penalize one that misled.

Learned utility raises or lowers a memory in every search mode and in recall. Changing it is
an edit: a read-only token may not, and neither may a shared caller (a team bot, a group chat:
many people's feedback would train the owner's memory).

No ``from __future__ import annotations``: the SDK evaluates the tools' annotations here.
"""

from typing import Annotated

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

from mcp_memory.errors import MemoryInputError
from mcp_memory.server.auth import require_write
from mcp_memory.server.context import ServerContext

FEEDBACK = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
MEMORY_ID = Field(description="The id of a search hit or recalled memory, e.g. m-3f2a9c1b7e4d")


class UtilityResult(BaseModel):
    memory_id: str
    utility_before: float = Field(description="Utility before this change: -1 (misleading) .. 0 (neutral) .. +1")
    utility: float = Field(description="Utility now")
    citation: str = Field(description="Where the memory is written (path#Lstart-Lend)")
    at: str


def register_utility_tools(server: MCPServer, app: ServerContext) -> None:
    """Register reward_memory_utility and penalize_memory_utility on ``server``."""

    @server.tool(title="Reward a memory", annotations=FEEDBACK)
    def reward_memory_utility(
        memory_id: Annotated[str, MEMORY_ID],
        reward: Annotated[float, Field(gt=0, le=1, description="How far toward +1 to move it, in (0, 1]")] = 0.2,
        ctx: Context | None = None,
    ) -> UtilityResult:
        """Reward a memory that helped you answer correctly: it ranks higher among comparable matches in
        every search and in recall. Call it after a recalled or searched memory proved right and useful."""
        return _change(app, ctx, memory_id, reward, penalize=False)

    @server.tool(title="Penalize a memory", annotations=FEEDBACK)
    def penalize_memory_utility(
        memory_id: Annotated[str, MEMORY_ID],
        penalty: Annotated[float, Field(gt=0, le=1, description="How far toward -1 to move it, in (0, 1]")] = 0.2,
        ctx: Context | None = None,
    ) -> UtilityResult:
        """Penalize a memory that misled you (wrong, outdated, or irrelevant where it ranked high): it sinks
        in every search and in recall. To remove a wrong memory altogether, use memory_forget."""
        return _change(app, ctx, memory_id, penalty, penalize=True)


def _change(app: ServerContext, ctx: Context | None, memory_id: str, amount: float, penalize: bool) -> UtilityResult:
    require_write(ctx)
    if not app.include_private(ctx):
        raise ToolError("this token is shared: it may search memory, not change what memories are worth")
    feedback = app.memory().feedback
    try:
        located = feedback.locate(memory_id)
        change = feedback.penalize(located.id, amount) if penalize else feedback.reward(located.id, amount)
    except MemoryInputError as exc:
        raise ToolError(str(exc)) from None
    data = change.to_dict()
    return UtilityResult(memory_id=change.memory_id, utility_before=data["utility_before"], utility=data["utility"],
                         citation=located.citation, at=data["at"])
