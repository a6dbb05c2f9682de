"""The tools: search (default, precision and deep), get, store, forget, capture, recall and status.

Every search, store, capture and recall takes an optional ``scope`` (``core/scopes.py``): searches
cover it plus the global memory, writes go into it; the connection's default scope applies
when none is named, and a scoped token never reaches past its own (``scoping.py``).

Each is a plain function the SDK runs in a worker thread; it asks ``Memory`` and turns the
answer into a result model. Errors the model should see are raised as ``ToolError`` with a
clear message. An edit is refused to a read-only token, and a private file is never served to
a shared caller (``ServerContext.include_private``).

No ``from __future__ import annotations`` here, on purpose: the SDK reads each tool's
signature by evaluating its annotations in this module's namespace, and the capture tool's
sampling resolver is a closure over its server's settings, which only an annotation
evaluated where the tool is defined can name.

Two tools may ask the client's model through MCP sampling: memory_capture (to extract facts)
and precision_memory_search (to order the candidates, when ``rerank.provider`` is "llm"
without a model). Either way the model's answer is only ever a better result: without
sampling, or with an answer that makes no sense, the tool does what it does offline.
"""

import datetime as dt
import logging
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import anyio.to_thread
from mcp import MCPError
from mcp.server import MCPServer
from mcp.server.mcpserver import Context, Resolve, Sample
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.message import ServerMessageMetadata
from mcp.types import CreateMessageRequest, CreateMessageResult, SamplingMessage, TextContent, ToolAnnotations
from mcp.types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import BaseModel, Field, ValidationError

from mcp_memory.config import CaptureSettings, RerankSettings
from mcp_memory.core.requests import SearchRequest
from mcp_memory.core.transcripts import (
    TranscriptError,
    message_from_record,
    messages_from_json,
)
from mcp_memory.errors import MemoryInputError, PathError, SearchError
from mcp_memory.server.auth import require_write
from mcp_memory.server.context import ServerContext
from mcp_memory.server.models import (
    CapturedLine,
    CaptureResultModel,
    ChatMessage,
    DeepHit,
    DeepSearchResult,
    ForgetResultModel,
    GetResult,
    Hit,
    PrecisionSearchResult,
    RecallResult,
    SearchResult,
    StoreResultModel,
)
from mcp_memory.server.scoping import SEARCH_SCOPE, WRITE_SCOPE, check_visible, removable

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
EDIT = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
REMOVE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False)

log = logging.getLogger(__name__)


def register_tools(server: MCPServer, app: ServerContext) -> None:
    """Register every tool on ``server``."""
    for register in (_register_search, _register_precision_search, _register_deep_search, _register_get,
                     _register_store, _register_forget, _register_capture, _register_recall, _register_status):
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
        source: Annotated[Literal["memory", "extra", "sessions"] | None,
                          Field(description="Only hits of this source: memory files, extra paths, or conversation "
                                            "transcripts (when [sessions] paths are configured)")] = None,
        scope: Annotated[str | None, Field(description=SEARCH_SCOPE)] = None,
        ctx: Context | None = None,
    ) -> SearchResult:
        """Search the memory (hybrid keyword + semantic): the fast default. Each hit cites path#Lstart-Lend.
        For the few exact best hits use precision_memory_search; for questions that connect several
        memories, deep_memory_search."""
        try:
            request = SearchRequest.of(query, max_results=max_results, min_score=min_score, path_prefix=path_prefix,
                                       after=after, before=before, include_private=app.include_private(ctx),
                                       source=source, scopes=app.searched(ctx, scope))
            hits = app.memory().search(request)
        except SearchError as exc:
            raise ToolError(str(exc)) from None
        return SearchResult(results=[Hit.model_validate(h.to_dict()) for h in hits])


# top_k and max_results of the precision and deep tools: beyond this a "search" is a dump of the memory.
MAX_HITS = 50


def _register_precision_search(server: MCPServer, app: ServerContext) -> None:
    async def sample_order(query: str, top_k: int, min_score: float | None, path_prefix: str | None,
                           after: str | None, before: str | None, scope: str | None,
                           ctx: Context) -> Sample | CreateMessageResult | SamplingSkipped:
        """The resolver of ``sampled``: the client's model orders the candidates, when the settings ask for it."""
        if not wants_sampled_rerank(app.settings.rerank):
            return SamplingSkipped()
        try:
            request = SearchRequest.of(query, max_results=top_k, min_score=min_score, path_prefix=path_prefix,
                                       after=after, before=before, include_private=app.include_private(ctx),
                                       scopes=app.searched(ctx, scope))
        except (SearchError, ToolError):
            return SamplingSkipped()  # the tool body reports the bad input
        return await rerank_sampling(app, request, ctx)

    @server.tool(title="Precision search", annotations=READ_ONLY)
    def precision_memory_search(
        query: Annotated[str, Field(description="The question or what to look for, in any language")],
        top_k: Annotated[int, Field(ge=1, le=MAX_HITS, description="Number of hits")] = 5,
        min_score: Annotated[float | None, Field(ge=0, le=1, description="Drop hits scoring below this")] = None,
        path_prefix: Annotated[str | None, Field(description="Only files whose path starts with this")] = None,
        after: Annotated[str | None, Field(description="Only daily files dated on or after YYYY-MM-DD")] = None,
        before: Annotated[str | None, Field(description="Only daily files dated on or before YYYY-MM-DD")] = None,
        scope: Annotated[str | None, Field(description=SEARCH_SCOPE)] = None,
        sampled: Annotated[CreateMessageResult | SamplingSkipped | None, Resolve(sample_order)] = None,
        ctx: Context | None = None,
    ) -> PrecisionSearchResult:
        """Search the memory when the exact answer matters: the best candidates of memory_search are read
        again together with the query and reordered, so the first few hits are the right ones. Slower than
        memory_search; ask for few hits (top_k). Each hit cites path#Lstart-Lend."""
        # Lazy: the reranker module is only needed once a precision search runs.
        from mcp_memory.search.rerank.llm import SampledReranker

        try:
            request = SearchRequest.of(query, max_results=top_k, min_score=min_score, path_prefix=path_prefix,
                                       after=after, before=before, include_private=app.include_private(ctx),
                                       scopes=app.searched(ctx, scope))
            warnings: list[str] = []
            reranker = None
            if isinstance(sampled, CreateMessageResult):
                reranker = SampledReranker(sampled.content.text if isinstance(sampled.content, TextContent) else "")
            elif isinstance(sampled, SamplingSkipped) and sampled.warning:
                warnings.append(sampled.warning)
            answer = app.memory().precise_search(request, reranker=reranker)
        except SearchError as exc:
            raise ToolError(str(exc)) from None
        return PrecisionSearchResult(results=[Hit.model_validate(h.to_dict()) for h in answer.hits],
                                     warnings=[*warnings, *answer.warnings], reranker=answer.reranker)


def _register_deep_search(server: MCPServer, app: ServerContext) -> None:
    @server.tool(title="Deep search", annotations=READ_ONLY)
    def deep_memory_search(
        query: Annotated[str, Field(description="The question, in any language")],
        max_results: Annotated[int, Field(ge=1, le=MAX_HITS, description="Number of hits")] = 8,
        path_prefix: Annotated[str | None, Field(description="Only files whose path starts with this")] = None,
        after: Annotated[str | None, Field(description="Only daily files dated on or after YYYY-MM-DD")] = None,
        before: Annotated[str | None, Field(description="Only daily files dated on or before YYYY-MM-DD")] = None,
        scope: Annotated[str | None, Field(description=SEARCH_SCOPE)] = None,
        ctx: Context | None = None,
    ) -> DeepSearchResult:
        """Search the memory for a question that connects several memories ("what does the friend who moved
        to Berlin do?", "what happened after the trip to X?"): a precision search, then searches again for the
        people, places and events its first hits name, and merges both. Each hit says which hop found it (1: the
        question, 2: a concept) and through which concepts. Slower than memory_search."""
        try:
            request = SearchRequest.of(query, max_results=max_results, path_prefix=path_prefix, after=after,
                                       before=before, include_private=app.include_private(ctx),
                                       scopes=app.searched(ctx, scope))
            answer = app.memory().deep_search(request)
        except SearchError as exc:
            raise ToolError(str(exc)) from None
        return DeepSearchResult(results=[DeepHit.model_validate(h.to_dict()) for h in answer.hits],
                                concepts=list(answer.concepts), warnings=list(answer.warnings))


def _register_get(server: MCPServer, app: ServerContext) -> None:
    @server.tool(title="Read memory file", annotations=READ_ONLY)
    def memory_get(
        path: Annotated[str, Field(description="Workspace-relative path, e.g. memory/2026-11-26.md, or the id "
                                               "of a memory (m-3f2a9c1b7e4d) to read just that memory")],
        from_line: Annotated[int | None, Field(ge=1, description="First line, 1-based")] = None,
        line_count: Annotated[int | None, Field(ge=1, description="Number of lines")] = None,
        ctx: Context | None = None,
    ) -> GetResult:
        """Read lines of a memory file (MEMORY.md, memory/**/*.md or a configured extra path), or one memory
        by the id a search hit or recalled memory carries."""
        try:
            result = app.memory().get(path, from_line, line_count, include_private=app.include_private(ctx))
            check_visible(ctx, result.path, path)
        except (PathError, MemoryInputError) as exc:
            raise ToolError(str(exc)) from None
        return GetResult.model_validate(result, from_attributes=True)


def _register_store(server: MCPServer, app: ServerContext) -> None:
    @server.tool(title="Store a memory", annotations=EDIT)
    def memory_store(
        text: Annotated[str, Field(description="One durable fact, preference or decision, as a sentence")],
        category: Annotated[str | None, Field(description="preference, decision, entity, fact or other")] = None,
        evergreen: Annotated[bool, Field(description="True: MEMORY.md (lasting); False: today's daily log")] = False,
        scope: Annotated[str | None, Field(description=WRITE_SCOPE)] = None,
        ctx: Context | None = None,
    ) -> StoreResultModel:
        """Save one memory as a bullet in today's daily file (or MEMORY.md), of the scope given or the
        connection's. Near-duplicates are not written twice."""
        require_write(ctx)
        where = app.written(ctx, scope)
        try:
            result = app.memory().store(text, category, evergreen, include_private=app.include_private(ctx),
                                        scope=where)
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
        scope: Annotated[str | None, Field(description="Where a query looks: as for memory_search")] = None,
        ctx: Context | None = None,
    ) -> ForgetResultModel:
        """Remove one memory line. Without confirm, returns the candidates; with confirm, removes the
        single clear match (or the exact path and line)."""
        require_write(ctx)
        where = removable(app.scope, ctx, scope)
        try:
            result = app.memory().editor.forget(query, path, line, confirm, include_private=app.include_private(ctx),
                                                scopes=where)
        except (MemoryInputError, PathError) as exc:
            raise ToolError(str(exc)) from None
        if result.removed:
            app.notify_changed({result.removed.path})
        return ForgetResultModel.model_validate(result, from_attributes=True)


def _register_capture(server: MCPServer, app: ServerContext) -> None:
    async def sample_facts(messages: list[ChatMessage], session_key: str | None,
                           ctx: Context) -> Sample | CreateMessageResult | None:
        """The resolver of ``sampled``: this server's capture settings decide whether to sample. A
        client that refuses the request leaves the capture to the rules, as one without sampling does."""
        sample = sampling_request(app.settings.capture, messages, session_key, ctx)
        if sample is None:
            return None
        answer = await _asked(sample, ctx)
        if isinstance(answer, str):
            if answer:
                log.warning("capture falls back to the rules: %s", answer)
            return None
        return answer

    @server.tool(title="Capture memories from a conversation", annotations=EDIT)
    def memory_capture(
        messages: Annotated[list[ChatMessage], Field(description="The conversation, oldest first; the latest "
                                                                 "capture.max_messages (10) are read")],
        session_key: Annotated[str | None, Field(description="Session id, shown in the heading; keys holding "
                                                             ":memory-capture: are never captured")] = None,
        idempotency_key: Annotated[str | None, Field(description="A key captured before captures nothing "
                                                                 "again (in any process)")] = None,
        scope: Annotated[str | None, Field(description=WRITE_SCOPE)] = None,
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
        where = app.written(ctx, scope)
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
                                          extractor=extractor, include_private=app.include_private(ctx), scope=where)
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
        scope: Annotated[str | None, Field(description=SEARCH_SCOPE)] = None,
        ctx: Context | None = None,
    ) -> RecallResult:
        """The <relevant-memories> block for a prompt (what the recall prompt injects)."""
        scopes = app.searched(ctx, scope)
        return RecallResult(context=app.memory().recall(prompt, session_key=session_key,
                                                        include_private=app.include_private(ctx), scopes=scopes))


def _register_status(server: MCPServer, app: ServerContext) -> None:
    @server.tool(title="Memory status", annotations=READ_ONLY)
    def memory_status(ctx: Context | None = None) -> dict[str, Any]:
        """Files, chunks, embedder, share embedded, last sync, any degraded mode, and the processes serving."""
        from mcp_memory.runtime.warm import serving_processes

        status = app.memory().status(include_private=app.include_private(ctx)).to_dict()
        return {**status, "processes": serving_processes(app.settings)}


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


@dataclass(frozen=True)
class SamplingSkipped:
    """Precision search did not get an order from the client's model; ``warning`` says what the caller lost."""

    warning: str | None = None  # None: sampling was not wanted, or there was nothing to order


def wants_sampled_rerank(rerank: RerankSettings) -> bool:
    """Whether the settings leave the reranking to the client's model (``llm`` without a model of its own)."""
    return rerank.provider == "llm" and not rerank.model


async def rerank_sampling(app: ServerContext, request: SearchRequest,
                          ctx: Context) -> Sample | CreateMessageResult | SamplingSkipped:
    """Ask the client's model to order the candidates of ``request``; what it said, or why it was not asked.

    The prompt holds the very candidates the tool body reranks, found with the caller's own
    ``include_private``: a shared caller's model never reads a private file. A client that
    refuses the request (``_asked``) costs a warning instead of failing the whole call.
    """
    # Lazy: the reranker module is only needed once a precision search samples.
    from mcp_memory.search.rerank.llm import listwise_prompt

    unavailable = SamplingSkipped("the client offers no sampling, so the local reranker ordered these hits "
                                  "(set rerank.model to rerank with a chat model of your own)")
    if not request.query.strip():
        return SamplingSkipped()  # nothing is found, so nothing is lost
    caps = ctx.client_capabilities
    if caps is None or caps.sampling is None:
        return unavailable
    try:
        # In a worker thread, as the tools run: opening the memory may wait, ranking takes a while.
        ranking, candidates = await anyio.to_thread.run_sync(lambda: app.memory().precision.candidates(request))
    except SearchError:
        return SamplingSkipped()  # the tool body reports it
    if not candidates:
        return SamplingSkipped()
    system, user = listwise_prompt(ranking.query, candidates)
    sample = Sample([SamplingMessage(role="user", content=TextContent(type="text", text=user))],
                    system_prompt=system, max_tokens=8 * len(candidates) + 64, temperature=0)
    answer = await _asked(sample, ctx)
    if isinstance(answer, str):
        return unavailable if not answer else SamplingSkipped(f"{answer}; the local reranker ordered these hits")
    return answer


async def _asked(sample: Sample, ctx: Context) -> Sample | CreateMessageResult | str:
    """``sample`` for the SDK to send, or the client's answer to it, or why there is none.

    Under 2026-07-28 the ``Sample`` travels in the tool call's retries (returned as it is). Under a
    handshake protocol the request is sent here rather than by the SDK, so that a client that
    refuses it (its user declines) or answers something else costs the caller a fallback instead
    of failing the whole call: the reason is returned ("" when the session cannot send requests).
    """
    version = ctx.protocol_version
    if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
        return sample
    session = ctx.session
    if not session.can_send_request:
        return ""
    try:
        result: CreateMessageResult = await session.send_request(
            CreateMessageRequest(params=sample.params), CreateMessageResult,
            metadata=ServerMessageMetadata(related_request_id=ctx.request_id))
    except MCPError as exc:
        return f"the client did not answer the sampling request ({exc})"
    except ValidationError:
        return "the client's answer to the sampling request is not a message"
    return result


def _plain(message: Any) -> Any:
    return message.model_dump() if isinstance(message, BaseModel) else message
