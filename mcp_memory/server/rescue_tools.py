"""The compaction rescue tool: what a session's last compaction rescued, or a rescue now.

Clients with a ``PreCompact`` hook rescue through ``mcp-memory hook claude-code pre-compact``;
``compress_context`` shows the result. Clients without hooks pass the messages about to be
compacted (or the transcript file) and the tool rescues from them first.

A transcript path makes the server read a file, so only a caller that may see everything
(not a shared caller) may pass one, and only an absolute path to a readable regular
``.jsonl`` file reached through no link. Rescuing writes, so a read-only token may only look.

No ``from __future__ import annotations``: the SDK evaluates the tools' annotations here.
"""

from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

from mcp_memory.core.hits import cite
from mcp_memory.errors import MemoryInputError, PathError
from mcp_memory.lifecycle.rescue import checked_transcript_path
from mcp_memory.server.auth import require_write
from mcp_memory.server.context import ServerContext
from mcp_memory.server.models import ChatMessage
from mcp_memory.server.scoping import WRITE_SCOPE, visible

EDIT = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


class RescuedLine(BaseModel):
    citation: str = Field(description="Where the line is written, path#Lline")
    text: str


class RescueSkip(BaseModel):
    text: str = Field(description="A short preview, secrets redacted")
    reason: str


class CompressContextResult(BaseModel):
    session_key: str
    rescued: list[RescuedLine] = Field(description="The lines the session's last compaction rescued")
    rescued_at: str | None = Field(description="When that rescue ran (local time, ISO 8601)")
    ran_now: bool = Field(description="Whether this call rescued from the messages or transcript it was given")
    skipped: list[RescueSkip] = Field(description="What this call left out, and why")
    message: str


def register_rescue_tools(server: MCPServer, app: ServerContext) -> None:
    """Register ``compress_context`` on ``server``."""

    @server.tool(title="Rescue context before compaction", annotations=EDIT)
    def compress_context(
        session_key: Annotated[str, Field(min_length=1, description="The session whose context is compacted")],
        reason: Annotated[str | None, Field(description="Why the context is compacted (shown in the answer)")] = None,
        messages: Annotated[list[ChatMessage] | None, Field(description="The messages about to be compacted, "
                                                                        "oldest first; rescued first")] = None,
        transcript_path: Annotated[str | None, Field(description="Absolute path of the session's .jsonl "
                                                                 "transcript; rescued first")] = None,
        scope: Annotated[str | None, Field(description=WRITE_SCOPE)] = None,
        ctx: Context | None = None,
    ) -> CompressContextResult:
        """Before a conversation is compacted, keep what it would lose: decisions, open tasks, commands and
        fixes that worked, files touched, errors and causes, as bullets in today's daily file. Without
        messages or transcript_path, returns what the session's last compaction rescued."""
        include_private = app.include_private(ctx)
        memory = app.memory()
        ran, skipped, message = False, [], ""
        if messages is not None or transcript_path is not None:
            require_write(ctx)
            where = app.written(ctx, scope)
            source = _source(messages, transcript_path, include_private)
            try:
                result = memory.rescuer.rescue(source, session_key, include_private=include_private, scope=where)
            except (MemoryInputError, PathError) as exc:
                raise ToolError(str(exc)) from None
            if result.path:
                app.notify_changed({result.path})
            ran, message = True, result.message
            skipped = [RescueSkip(text=s.text, reason=s.reason) for s in result.skipped]
        last = memory.rescuer.last(session_key, include_private)
        if last is not None and not visible(ctx, last.path):
            last = None  # rescued into another scope: as if nothing was
        lines = [RescuedLine(citation=cite(last.path, last.start_line + i), text=f"- [{item.kind}] {item.text}")
                 for i, item in enumerate(last.items)] if last else []
        if not message:
            message = (f"the last compaction rescued {len(lines)} items" if last
                       else "nothing rescued for this session yet")
        if reason:
            message = f"{message} (reason given: {' '.join(reason.split())[:200]})"
        return CompressContextResult(session_key=session_key, rescued=lines, rescued_at=last.at if last else None,
                                     ran_now=ran, skipped=skipped, message=message)

    def _source(messages: list[ChatMessage] | None, transcript_path: str | None,
                include_private: bool) -> Any:
        """What to rescue from: the messages (with their content blocks), or a checked transcript path."""
        if messages is not None and transcript_path is not None:
            raise ToolError("give messages or transcript_path, not both")
        if transcript_path is not None:
            if not include_private:
                raise ToolError("a shared caller cannot pass transcript_path (the server would read a file for "
                                "it); pass the messages instead")
            try:
                return checked_transcript_path(transcript_path)
            except MemoryInputError as exc:
                raise ToolError(str(exc)) from None
        return [m.model_dump() for m in messages or []]
