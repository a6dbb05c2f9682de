"""The prompts: recall (the message with its memories first), capture, and flush before compaction."""

from __future__ import annotations

from typing import Annotated

from mcp.server import MCPServer
from mcp.server.mcpserver import Context, UserMessage
from pydantic import Field

from mcp_memory.server.context import ServerContext
from mcp_memory.server.scoping import SEARCH_SCOPE

CAPTURE_PROMPT = """\
Review the conversation so far and extract the durable facts, preferences and decisions worth remembering \
in later sessions: what the user prefers, what was decided and why, names, projects, conventions, dates.
Save each one with the memory_store tool, one fact per call: a short, self-contained sentence in the third \
person with absolute dates (for example "The user prefers pnpm over npm and yarn (2026-11-26)"), in the \
language of the conversation, with a category (preference, decision, entity, fact or other). Use \
evergreen=true for lasting facts about the user. Skip small talk, passing details, secrets, passwords and \
API keys, and anything already in memory."""

FLUSH_PROMPT = """\
The conversation is about to be compacted and older messages will be dropped. Write the lasting notes now: \
call memory_store for each durable fact, preference or decision from this session that is not in memory yet \
(one fact per call, third person, absolute dates). If there is nothing to store, reply with nothing else."""


FEEDBACK_NOTE = (
    "(After answering: reward_memory_utility with the id of a memory that helped, penalize_memory_utility "
    "with the id of one that was wrong or misleading. Before a major action check memory_graph_query; "
    "after one, log it with memory_graph_add.)"
)


def register_prompts(server: MCPServer, app: ServerContext) -> None:
    """Register the ``recall``, ``capture`` and ``flush`` prompts on ``server``."""

    @server.prompt(title="Recall")
    def recall(
        message: Annotated[str, Field(description="The user's message")],
        session_key: Annotated[str | None, Field(description="Session id (no repeats within its last turns)")] = None,
        scope: Annotated[str | None, Field(description=SEARCH_SCOPE)] = None,
        ctx: Context | None = None,
    ) -> list[UserMessage]:
        """The message, preceded by the memories relevant to it (and on a session's first, the pinned rules)."""
        private = app.include_private(ctx)
        scopes = app.searched(ctx, scope)
        rules = app.memory().rules.first_recall_block(session_key, include_private=private)
        block = app.memory().recall(message, session_key=session_key, include_private=private, scopes=scopes)
        head = "\n\n".join(part for part in (rules, f"{block}\n{FEEDBACK_NOTE}" if block else "") if part)
        return [UserMessage(f"{head}\n\n{message}" if head else message)]

    @server.prompt(title="Capture")
    def capture() -> str:
        """Ask the model to save the durable facts of this conversation with memory_store."""
        return CAPTURE_PROMPT

    @server.prompt(title="Flush before compaction")
    def flush() -> str:
        """Ask the model to write lasting notes before the context is compacted."""
        return FLUSH_PROMPT
