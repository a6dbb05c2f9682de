"""The ``Reranker`` interface: a second stage that reads the query and each candidate together.

Precision search takes the first stage's best candidates (hybrid search, without
diversification) and asks a reranker for one relevance score per candidate. Rerankers differ
in where they run (``local.py`` offline, ``http.py`` a cross-encoder endpoint, ``llm.py`` a chat
model); all of them answer the same way, and a remote one that cannot answer raises
``RerankError`` so that the caller falls back to the local one.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


class RerankError(Exception):
    """A reranker could not answer: unreachable, too slow, refused, or an answer that makes no sense."""


@dataclass(frozen=True)
class RerankCandidate:
    """One first-stage hit as a reranker reads it."""

    text: str  # the chunk's text
    path: str
    start_line: int  # the chunk's first line in its file
    date: dt.date | None  # the daily file's date; None for evergreen files
    score: float  # the first stage's fused score (0..1)


class Reranker(Protocol):
    name: str  # "local", "http", "llm" or "sampling": what the result reports

    def rerank(self, query: str, candidates: Sequence[RerankCandidate]) -> list[float]:
        """One score per candidate, in the candidates' order; higher is more relevant.

        Scores are comparable within one call only. Raises ``RerankError`` when it cannot answer.
        """
        ...
