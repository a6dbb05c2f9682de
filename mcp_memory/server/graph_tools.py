"""The experience graph tools: log a cause → action → effect chain, query the chains, sum them up.

The chains live in ``memory/experience.md`` (``experience/graph.py``). Logging is an edit (refused to a
read-only token); a caller that may not see the experience file, when ``privacy.private_paths``
makes it private, gets nothing from it and cannot log to it.

No ``from __future__ import annotations``: the SDK evaluates the tools' annotations here.
"""

from typing import Annotated, Any, Literal

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

from mcp_memory.errors import MemoryInputError
from mcp_memory.server.auth import require_write
from mcp_memory.server.context import ServerContext
from mcp_memory.server.scoping import refuse_confined

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
EDIT = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
OutcomeName = Literal["success", "failure", "partial", "unknown"]


class ChainModel(BaseModel):
    id: str
    cause: str
    action: str
    effect: str = Field(description="The latest effect")
    outcome: str = Field(description="The latest outcome")
    tags: list[str]
    count: int = Field(description="How many times this chain was logged")
    outcomes: dict[str, int] = Field(description="Every outcome logged, with its count")
    first_seen: str
    last_seen: str
    path: str
    start_line: int
    end_line: int
    citation: str = Field(description="path#Lstart-Lend of the entry")


class GraphAddResultModel(BaseModel):
    status: Literal["added", "updated"] = Field(description="added: a new chain; updated: it repeated one")
    chain: ChainModel
    similarity: float | None = Field(None, description="For updated: how close it was to the existing chain")
    citation: str


class ChainHit(ChainModel):
    score: float = Field(description="Meaning and keyword match with the query, 0..1")


class GraphQueryResult(BaseModel):
    results: list[ChainHit]


class GraphSummaryResult(BaseModel):
    total: int
    by_outcome: dict[str, int] = Field(description="Chains by their latest outcome")
    patterns: list[dict[str, Any]] = Field(description="The most frequent causes, actions and tags")
    recent: list[dict[str, Any]] = Field(description="The latest chains, newest first")
    avoid: list[dict[str, Any]] = Field(description="Actions that failed at least as often as they worked")


def register_graph_tools(server: MCPServer, app: ServerContext) -> None:
    """Register ``memory_graph_add``, ``memory_graph_query`` and ``memory_graph_summary`` on ``server``."""

    @server.tool(title="Log an experience", annotations=EDIT)
    def memory_graph_add(
        cause: Annotated[str, Field(description="What was wrong or what prompted the action")],
        action: Annotated[str, Field(description="What was done")],
        effect: Annotated[str, Field(description="What came of it")],
        outcome: Annotated[OutcomeName, Field(description="How it went")],
        tags: Annotated[list[str], Field(description="A few topic words, e.g. nginx, deploy")] = [],  # noqa: B006
        ctx: Context | None = None,
    ) -> GraphAddResultModel:
        """Log a cause → action → effect chain AFTER completing a meaningful action or fix, whether it worked
        or not. Logging the same cause and action again (in other words or another language) updates that
        chain's count and outcomes instead of adding a new one."""
        require_write(ctx)
        refuse_confined(ctx, "experiences are logged in the global memory/experience.md, which it cannot change")
        memory = app.memory()
        try:
            result = memory.experience.add(cause, action, effect, outcome, tags, app.include_private(ctx))
        except MemoryInputError as exc:
            raise ToolError(str(exc)) from None
        app.notify_changed({result.chain.path})
        return GraphAddResultModel(status=result.status, chain=ChainModel.model_validate(result.chain.to_dict()),
                                   similarity=result.similarity, citation=result.chain.citation)

    @server.tool(title="Query experiences", annotations=READ_ONLY)
    def memory_graph_query(
        query: Annotated[str, Field(description="The situation or action to look up, in any language")],
        outcome_filter: Annotated[OutcomeName | None, Field(description="Only chains whose latest outcome is this")]
        = None,
        tags: Annotated[list[str] | None, Field(description="Only chains carrying all these tags")] = None,
        max_results: Annotated[int, Field(ge=1, le=50, description="Number of chains")] = 5,
        ctx: Context | None = None,
    ) -> GraphQueryResult:
        """Query the experience graph BEFORE a major action or fix: what was tried for similar causes, what
        worked and what failed. Each chain cites its entry as path#Lstart-Lend."""
        memory = app.memory()
        try:
            matches = memory.experience.query(query, outcome_filter, tags, max_results, app.include_private(ctx))
        except MemoryInputError as exc:
            raise ToolError(str(exc)) from None
        return GraphQueryResult(results=[ChainHit.model_validate({**m.chain.to_dict(), "score": m.score})
                                         for m in matches])

    @server.tool(title="Experience summary", annotations=READ_ONLY)
    def memory_graph_summary(ctx: Context | None = None) -> GraphSummaryResult:
        """Sum up the experience graph: chains by outcome, the most frequent causes, actions and tags, the
        latest chains, and the actions to avoid (they failed). Read it before planning work in a known area."""
        summary = app.memory().experience.summary(app.include_private(ctx))
        return GraphSummaryResult.model_validate(summary.to_dict())
