"""The tools' result models: they give clients an output schema and structured content.

A model that carries a record of the engine is derived from that record's dataclass
(``fields_of``), so a field added, renamed or retyped there is one here too and the output
schema follows. Models whose record lives in a module too heavy to load before the protocol
handshake (capture results, forget results: they pull in the capture filters and the index)
declare their few fields here, and are filled with ``model_validate(..., from_attributes=True)``
from the record itself, so a field renamed there fails loudly instead of drifting.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, get_type_hints

from pydantic import BaseModel, Field, field_validator

from mcp_memory.core.hits import MemoryLine, SearchHit
from mcp_memory.core.reading import FileLines

# SearchHit's absolute relevance signals: the hooks read them, clients get the fused score only.
RELEVANCE_SIGNALS = ("keyword_coverage", "vector_similarity")
# What only deep search fills in: the other modes leave these fields out of their hits.
DEEP_FIELDS = ("hop", "concepts")


def fields_of(record: type, drop: tuple[str, ...] = (), **changes: Any) -> dict[str, Any]:
    """The annotations of a model with ``record``'s dataclass fields, for its ``__annotations__``.

    The fields keep their order, names and types, less ``drop``; each of ``changes`` retypes
    the field of that name or, when there is none, is added at the end. Defaults are not
    carried over: every field of a result is required on the wire. Pydantic reads a model's
    fields from its class annotations, so assigning these to ``__annotations__`` derives the
    model from the dataclass. A type checker sees a model class without those fields: build
    such models with ``model_validate``, from the record (``from_attributes``) or a dict.
    """
    hints = get_type_hints(record)
    annotations = {f.name: hints[f.name] for f in dataclasses.fields(record) if f.name not in drop}
    annotations.update(changes)
    return annotations


# Comments, not docstrings, on these models: a model's docstring becomes a description in its schema.
class Hit(BaseModel):
    # One search hit as SearchHit.to_dict() puts it, without the relevance signals and deep search's fields.
    __annotations__ = fields_of(SearchHit, drop=RELEVANCE_SIGNALS + DEEP_FIELDS, date=str | None, citation=str)


class DeepHit(BaseModel):
    # One deep search hit: a Hit plus the hop that found it and the concepts that led there.
    __annotations__ = fields_of(SearchHit, drop=RELEVANCE_SIGNALS, date=str | None, concepts=list[str],
                                citation=str)


class SearchResult(BaseModel):
    results: list[Hit]


class PrecisionSearchResult(BaseModel):
    results: list[Hit]
    warnings: list[str] = Field(description="What the caller should know, e.g. a reranker failed and the "
                                            "local one ordered the hits")
    reranker: str | None = Field(description="Whose order the hits follow: local, http, llm or sampling "
                                             "(null when nothing was found)")


class DeepSearchResult(BaseModel):
    results: list[DeepHit]
    concepts: list[str] = Field(description="The concepts of the first hits that the second hop searched for")
    warnings: list[str]


class GetResult(BaseModel):
    __annotations__ = fields_of(FileLines)


class CapturedLine(BaseModel):
    # A memory line with its citation (path#Lline).
    __annotations__ = fields_of(MemoryLine, drop=("score",), citation=str)


class MemoryLineModel(BaseModel):
    # A memory line with its citation, and its similarity to the query when it was ranked.
    __annotations__ = fields_of(MemoryLine, drop=("score",), citation=str, score=float | None)
    score = None

    @field_validator("score", mode="before")
    @classmethod
    def _unranked_has_no_score(cls, score: float | None) -> float | None:
        return score or None  # MemoryLine.score is 0.0 for a line that was not ranked


class StoreResultModel(BaseModel):
    # StoreResult holds a MemoryLine: the wire flattens it between the flag and a message.
    __annotations__ = {
        "stored": Annotated[bool, Field(description="False when a near-identical memory already existed")],
        **fields_of(MemoryLine, drop=("score",), citation=str),
        "message": str,
    }


# ForgetResult and CaptureResult live with the edits and the capture flow, which load the index
# and the capture filters (~70 ms of regexes): these restate their few fields.
class ForgetResultModel(BaseModel):
    removed: MemoryLineModel | None
    candidates: list[MemoryLineModel]
    message: str


class SkippedItem(BaseModel):
    text: str = Field(description="A preview, secrets redacted")
    reason: str


class CaptureResultModel(BaseModel):
    captured: list[CapturedLine]
    skipped: list[SkippedItem]
    extractor: str = Field(description="rules, llm or sampling; a fallback says why")
    message: str


class RecallResult(BaseModel):
    context: str = Field(description="The <relevant-memories> block, or empty when nothing is relevant")


class ChatMessage(BaseModel):
    # One message of the conversation given to memory_capture.

    role: str = Field(description="user or assistant (other roles are ignored)")
    content: str | list[dict[str, Any]] = Field(description="Text, or content blocks with type 'text'")
