"""The episode tool: list the sessions recorded under ``memory/episodes/``, newest first.

A shared caller sees only the episodes in files it may read (``privacy.private_paths`` on the
resolved path); an episode names memories by citation only, never by their text.

No ``from __future__ import annotations``: the SDK evaluates the tools' annotations here.
"""

from typing import Annotated

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

from mcp_memory.errors import MemoryInputError, SearchError
from mcp_memory.server.context import ServerContext
from mcp_memory.server.scoping import refuse_confined

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
DATE = "A day as YYYY-MM-DD"


class EpisodeSummary(BaseModel):
    citation: str = Field(description="The episode file, path#L1-Lend")
    path: str
    start: str = Field(description="When the session started (ISO 8601, UTC)")
    end: str = Field(description="When it ended (ISO 8601, UTC)")
    client: str
    session_key: str = Field(description="The client's id of the session, empty when unknown")
    tools: dict[str, int] = Field(description="Calls per tool")
    recalled: int = Field(description="How many memories the session recalled")
    stored: int = Field(description="How many memories it stored")
    decisions: list[str]
    errors: int = Field(description="How many errors it met")


class EpisodesResult(BaseModel):
    episodes: list[EpisodeSummary]


def register_episode_tools(server: MCPServer, app: ServerContext) -> None:
    """Register ``memory_episodes`` on ``server``."""

    @server.tool(title="List episodes", annotations=READ_ONLY)
    def memory_episodes(
        query: Annotated[str | None, Field(description="Only episodes a search of memory/episodes/ finds")] = None,
        after: Annotated[str | None, Field(description=f"{DATE}: only episodes ending on or after it")] = None,
        before: Annotated[str | None, Field(description=f"{DATE}: only episodes starting on or before it")] = None,
        max_results: Annotated[int, Field(ge=1, le=200, description="At most this many episodes")] = 20,
        ctx: Context | None = None,
    ) -> EpisodesResult:
        """List past sessions (episodes), newest first: when each ran, from which client, the tools it used,
        how many memories it recalled and stored, and its decisions. Read one with memory_get."""
        refuse_confined(ctx, "episodes record the sessions of every scope, so it cannot list them")
        memory = app.memory()
        try:
            episodes = memory.episodes.find(query, after, before, max_results, app.include_private(ctx))
        except (MemoryInputError, SearchError) as exc:
            raise ToolError(str(exc)) from None
        return EpisodesResult(episodes=[EpisodeSummary.model_validate(e.summary()) for e in episodes])
