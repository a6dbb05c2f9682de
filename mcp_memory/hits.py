"""``SearchHit``: one cited search result, the record search, recall, the hooks and the server share.

Kept apart from ``search.py`` so that code which only shows hits (the prompt hook formatting
what a running server found) does not pay for importing NumPy and Arrow.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class SearchHit:
    path: str
    start_line: int
    end_line: int
    score: float
    snippet: str
    source: str  # "memory" for MEMORY.md and memory/**, "extra" for configured extra paths
    date: dt.date | None
    # Absolute relevance signals (the fused score is relative to the other candidates):
    keyword_coverage: float = 0.0  # share of the query's distinct keyword terms found in the chunk
    vector_similarity: float | None = None  # cosine to the query; None without a vector

    @property
    def citation(self) -> str:
        return f"{self.path}#L{self.start_line}-L{self.end_line}"

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["date"] = self.date.isoformat() if self.date else None
        data["citation"] = self.citation
        return data


@dataclass(frozen=True)
class MemoryLine:
    """One line of a memory file: what store writes, forget removes and duplicate checks find."""

    path: str
    line: int
    text: str
    score: float = 0.0

    @property
    def citation(self) -> str:
        return f"{self.path}#L{self.line}"
