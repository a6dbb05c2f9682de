"""``SearchHit``: one cited search result, the record search, recall, the hooks and the server share.

Kept apart from ``index/hybrid.py`` so that code which only shows hits (the prompt hook formatting
what a running server found) does not pay for importing NumPy and Arrow.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field, fields
from typing import Any


def cite(path: str, start_line: int, end_line: int | None = None) -> str:
    """The one citation format: ``path#Lstart-Lend``, or ``path#Lline`` for a single line."""
    return f"{path}#L{start_line}" if end_line is None else f"{path}#L{start_line}-L{end_line}"


@dataclass(frozen=True)
class SearchHit:
    path: str
    start_line: int
    end_line: int
    score: float
    snippet: str
    source: str  # "memory" for MEMORY.md and memory/**, "extra" for configured extra paths, "sessions" for transcripts
    date: dt.date | None
    # Absolute relevance signals (the fused score is relative to the other candidates):
    keyword_coverage: float = 0.0  # share of the query's distinct keyword terms found in the chunk
    vector_similarity: float | None = None  # cosine to the query; None without a vector
    # The whole chunk the hit comes from; start_line/end_line may name a narrower span in it
    # (the lines that matched). 0: the same as start_line/end_line.
    chunk_start_line: int = 0
    chunk_end_line: int = 0
    # The memory (bullet or paragraph) holding the hit's best line: stable across re-indexing;
    # what reward, penalize and memory_get take. "" when the cited lines hold no memory.
    id: str = ""
    # The id of the memory that supersedes or duplicates this one (marked by the sleep cycle); "" when current.
    replaced_by: str = ""
    hop: int | None = None  # deep search: 1 = found by the query, 2 = by concepts of the first hits
    concepts: tuple[str, ...] = ()  # deep search: the concepts whose search found this hit

    def __post_init__(self) -> None:
        if not self.chunk_start_line:
            object.__setattr__(self, "chunk_start_line", self.start_line)
        if not self.chunk_end_line:
            object.__setattr__(self, "chunk_end_line", self.end_line)

    @property
    def citation(self) -> str:
        return cite(self.path, self.start_line, self.end_line)

    def to_dict(self) -> dict[str, Any]:
        """The hit's fields in order, the date as ISO text and the concepts as a list, plus its citation.

        Field by field rather than ``dataclasses.asdict``, which copies every value recursively and
        cost a search result more than its own conversion to JSON (every field is a plain value).
        """
        data = {name: getattr(self, name) for name in _HIT_FIELDS}
        data["date"] = self.date.isoformat() if self.date else None
        data["concepts"] = list(self.concepts)
        data["citation"] = self.citation
        return data


_HIT_FIELDS = tuple(f.name for f in fields(SearchHit))


@dataclass(frozen=True)
class SearchAnswer:
    """The hits of one search in a given mode, with what the caller should know about how they were found."""

    hits: list[SearchHit]
    mode: str = "default"  # "default", "precise" or "deep"
    warnings: list[str] = field(default_factory=list)  # e.g. a remote reranker failed and local ranking was used
    concepts: list[str] = field(default_factory=list)  # deep: the concepts followed in the second hop
    reranker: str | None = None  # precise: the reranker whose order the hits follow


@dataclass(frozen=True)
class MemoryLine:
    """One line of a memory file: what store writes, forget removes and duplicate checks find."""

    path: str
    line: int
    text: str
    score: float = 0.0

    @property
    def citation(self) -> str:
        return cite(self.path, self.line)
