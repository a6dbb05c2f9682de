"""Auto-capture: from the latest messages of a conversation to dated memory bullets.

messages -> ``filters`` (recall blocks stripped, secrets, injections, code, chatter out)
-> an extractor (``llm`` chat model or client sampling, else ``rules``) -> ``facts``
(third person, absolute dates) -> checked again -> deduplicated -> appended by ``Memory``.
"""

from __future__ import annotations

from mcp_memory.capture.base import Extractor
from mcp_memory.capture.facts import CATEGORIES, Fact
from mcp_memory.capture.filters import (
    MEMORY_RUN_MARKER,
    Candidate,
    Skipped,
    check_fact,
    is_memory_run,
    select_candidates,
    strip_recall_blocks,
)
from mcp_memory.capture.llm import (
    ChatModelExtractor,
    ExtractionError,
    FixedFacts,
    extraction_prompt,
    parse_facts,
)
from mcp_memory.capture.rules import RuleExtractor

__all__ = [
    "CATEGORIES",
    "MEMORY_RUN_MARKER",
    "Candidate",
    "ChatModelExtractor",
    "ExtractionError",
    "Extractor",
    "Fact",
    "FixedFacts",
    "RuleExtractor",
    "Skipped",
    "check_fact",
    "extraction_prompt",
    "is_memory_run",
    "parse_facts",
    "select_candidates",
    "strip_recall_blocks",
]
