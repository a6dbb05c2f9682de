"""The tools: search, get, store, forget, capture, recall and status.

Each is a plain function the SDK runs in a worker thread; it asks ``Memory`` and turns the
answer into a result model. Errors the model should see are raised as ``ToolError`` with a
clear message. An edit is refused to a read-only token, and a private file is never served to
a shared caller (``ServerContext.include_private``).

No ``from __future__ import annotations`` here, on purpose: the SDK reads each tool's
signature by evaluating its annotations in this module's namespace, and the capture tool's
sampling resolver is a closure over its server's settings, which only an annotation
evaluated where the tool is defined can name.
"""

import datetime as dt
from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver import Context, Resolve, Sample
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CreateMessageResult, SamplingMessage, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from mcp_memory.config import CaptureSettings
from mcp_memory.errors import MemoryInputError, PathError, SearchError
from mcp_memory.requests import SearchRequest
from mcp_memory.server.auth import require_write
from mcp_memory.server.context import ServerContext
from mcp_memory.server.models import (
    CapturedLine,
    CaptureResultModel,
    ChatMessage,
    ForgetResultModel,
    GetResult,
    Hit,
    RecallResult,
    SearchResult,
    StoreResultModel,
)
from mcp_memory.transcripts import (
    TranscriptError,
    message_from_record,
    messages_from_json,
)

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
EDIT = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
REMOVE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False)


def register_tools(server: MCPServer, app: ServerContext) -> None:
    """Register every tool on ``server``."""
    for register in (_register_search, _register_get, _register_store, _register_forget, _register_capture,
                     _register_recall, _register_status):
        register(server, app)


def _register_search(server: MCPServer, app: ServerContext) -> None:
    @server.tool(title="Search memory", annotations=READ_ONLY)
    def memory_search(
        query: Annotated[str, Field(description="What to look for, in any language")],
        max_results: Annotated[int, Field(ge=1, le=50, description="Number of hits")] = 6,
        min_score: Annotated[float | None, Field(ge=0, le=1, description="Drop hits scoring below this")] = None,
        path_prefix: Annotated[str | None, Field(description="Only files whose path starts with this")] = None,
        after: Annotated[str | None, Field(description="Only daily files dated on or after YYYY-MM-DD")] = None,
        before: Annotated[str | None, Field(description="Only daily files dated on or before YYYY-MM-DD")] = None,
        ctx: Context | None = None,
    ) -> SearchResult:
        """Search the memory (hybrid keyword + semantic). Each hit cites path#Lstart-Lend."""
        try:
            request = SearchRequest.of(query, max_results=max_results, min_score=min_score, path_prefix=path_prefix,
                                       after=after, before=before, include_private=app.include_private(ctx))
            hits = app.memory().search(request)
        except SearchError as exc:
            raise ToolError(str(exc)) from None
        return SearchResult(results=[Hit.model_validate(h.to_dict()) for h in hits])


def _register_get(server: MCPServer, app: ServerContext) -> None:
    @server.tool(title="Read memory file", annotations=READ_ONLY)
    def memory_get(
        path: Annotated[str, Field(description="Workspace-relative path, e.g. memory/2026-11-26.md")],
        from_line: Annotated[int | None, Field(ge=1, description="First line, 1-based")] = None,
        line_count: Annotated[int | None, Field(ge=1, description="Number of lines")] = None,
        ctx: Context | None = None,
    ) -> GetResult:
        """Read lines of a memory file (MEMORY.md, memory/**/*.md or a configured extra path)."""
        try:
            result = app.memory().get(path, from_line, line_count, include_private=app.include_private(ctx))
        except PathError as exc:
            raise ToolError(str(exc)) from None
        return GetResult.model_validate(result, from_attributes=True)


def _register_store(server: MCPServer, app: ServerContext) -> None:
    @server.tool(title="Store a memory", annotations=EDIT)
    def memory_store(
        text: Annotated[str, Field(description="One durable fact, preference or decision, as a sentence")],
        category: Annotated[str | None, Field(description="preference, decision, entity, fact or other")] = None,
        evergreen: Annotated[bool, Field(description="True: MEMORY.md (lasting); False: today's daily log")] = False,
        ctx: Context | None = None,
    ) -> StoreResultModel:
        """Save one memory as a bullet in today's daily file (or MEMORY.md). Near-duplicates are not written twice."""
        require_write(ctx)
        try:
            result = app.memory().store(text, category, evergreen, include_private=app.include_private(ctx))
        except (MemoryInputError, PathError) as exc:
            raise ToolError(str(exc)) from None
        m = result.memory
        if result.stored:
            app.notify_changed({m.path})
        message = (f"stored at {m.citation}" if result.stored
                   else f"not stored: a near-identical memory exists at {m.citation}")
        line = CapturedLine.model_validate(m, from_attributes=True).model_dump()
        return StoreResultModel.model_validate({"stored": result.stored, **line, "message": message})


def _register_forget(server: MCPServer, app: ServerContext) -> None:
    @server.tool(title="Forget a memory", annotations=REMOVE)
    def memory_forget(
        query: Annotated[str | None, Field(description="Describe the memory to remove")] = None,
        path: Annotated[str | None, Field(description="File of the line to remove")] = None,
        line: Annotated[int | None, Field(ge=1, description="Line number to remove")] = None,
        confirm: Annotated[bool, Field(description="False: only list candidates; True: remove")] = False,
        ctx: Context | None = None,
    ) -> ForgetResultModel:
        """Remove one memory line. Without confirm, returns the candidates; with confirm, removes the
        single clear match (or the exact path and line)."""
        require_write(ctx)
        try:
            result = app.memory().forget(query, path, line, confirm, include_private=app.include_private(ctx))
        except (MemoryInputError, PathError) as exc:
            raise ToolError(str(exc)) from None
        if result.removed:
            app.notify_changed({result.removed.path})
        return ForgetResultModel.model_validate(result, from_attributes=True)


def _register_capture(server: MCPServer, app: ServerContext) -> None:
    def sample_facts(messages: list[ChatMessage], session_key: str | None, ctx: Context) -> Sample | None:
        """The resolver of ``sampled``: this server's capture settings decide whether to sample."""
        return sampling_request(app.settings.capture, messages, session_key, ctx)

    @server.tool(title="Capture memories from a conversation", annotations=EDIT)
    def memory_capture(
        messages: Annotated[list[ChatMessage], Field(description="The conversation, oldest first; the latest "
                                                                 "capture.max_messages (10) are read")],
        session_key: Annotated[str | None, Field(description="Session id, shown in the heading; keys holding "
                                                             ":memory-capture: are never captured")] = None,
        idempotency_key: Annotated[str | None, Field(description="A key captured before captures nothing "
                                                                 "again (in any process)")] = None,
        sampled: Annotated[CreateMessageResult | None, Resolve(sample_facts)] = None,
        ctx: Context | None = None,
    ) -> CaptureResultModel:
        """Save the durable facts, preferences and decisions the user stated in these messages, as dated
        bullets in today's daily file. Recalled <relevant-memories> blocks, secrets, prompt injections,
        code, markup and chatter are never captured; the result says what was skipped and why."""
        # Lazy: the capture package compiles the secret and injection filters (~70 ms), a cost
        # for the first capture rather than for every server's handshake.
        from mcp_memory.capture import FixedFacts

        require_write(ctx)
        try:
            parsed = messages_from_json([_plain(m) for m in messages])
        except TranscriptError as exc:
            raise ToolError(str(exc)) from None
        extractor = None
        if sampled is not None:
            text = sampled.content.text if isinstance(sampled.content, TextContent) else ""
            extractor = FixedFacts(text, name="sampling")
        try:
            result = app.memory().capture(parsed, session_key=session_key, idempotency_key=idempotency_key,
                                          extractor=extractor, include_private=app.include_private(ctx))
        except (MemoryInputError, PathError) as exc:
            raise ToolError(f"not captured: {exc}") from None
        if result.captured:
            app.notify_changed({m.path for m in result.captured})
        return CaptureResultModel.model_validate(result, from_attributes=True)


def _register_recall(server: MCPServer, app: ServerContext) -> None:
    @server.tool(title="Recall memories for a prompt", annotations=READ_ONLY)
    def memory_recall(
        prompt: Annotated[str, Field(description="The user's message")],
        session_key: Annotated[str | None, Field(description="Session id: memories recalled in its last "
                                                             "few turns are not repeated")] = None,
        ctx: Context | None = None,
    ) -> RecallResult:
        """The <relevant-memories> block for a prompt (what the recall prompt injects)."""
        return RecallResult(context=app.memory().recall(prompt, session_key=session_key,
                                                        include_private=app.include_private(ctx)))


def _register_status(server: MCPServer, app: ServerContext) -> None:
    @server.tool(title="Memory status", annotations=READ_ONLY)
    def memory_status(ctx: Context | None = None) -> dict[str, Any]:
        """Files, chunks, embedder, share embedded, last sync and any degraded mode."""
        return app.memory().status(include_private=app.include_private(ctx)).to_dict()


def sampling_request(capture: CaptureSettings, messages: list[ChatMessage], session_key: str | None,
                     ctx: Context) -> Sample | None:
    """Ask the client's model to extract the facts, when the settings and the client allow it."""
    # Lazy for the same reason as in memory_capture: the capture filters are slow to compile.
    from mcp_memory.capture import extraction_prompt, is_memory_run, select_candidates

    if capture.extractor not in ("auto", "sampling") or (capture.extractor == "auto" and capture.llm_model):
        return None
    caps = ctx.client_capabilities
    if caps is None or caps.sampling is None or is_memory_run(session_key):
        return None
    parsed = [m for m in (message_from_record(_plain(x)) for x in messages) if m is not None]
    candidates, _ = select_candidates(parsed, capture.max_messages, capture.min_chars, capture.max_chars)
    if not candidates:
        return None
    system, user = extraction_prompt(candidates, dt.date.today())
    return Sample([SamplingMessage(role="user", content=TextContent(type="text", text=user))],
                  system_prompt=system, max_tokens=800, temperature=0)


def _plain(message: Any) -> Any:
    return message.model_dump() if isinstance(message, BaseModel) else message
