"""``SearchRequest``: one search as asked, from the MCP tool, the command line or a hook down to the searcher.

Every layer passes the same object instead of restating its parameters, so a new option
(a search mode, a scope) is one field here and one place that reads it.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from mcp_memory.core.scopes import ScopeFilter
from mcp_memory.errors import SearchError

SOURCES = ("memory", "extra", "sessions")


@dataclass(frozen=True)
class SearchRequest:
    query: str
    max_results: int | None = None  # None: the configured default
    min_score: float | None = None  # None: the configured default
    path_prefix: str | None = None  # only files whose workspace path starts with this
    after: dt.date | None = None  # only daily files dated on or after this day
    before: dt.date | None = None  # only daily files dated on or before this day
    include_private: bool = True  # False: the files of privacy.private_paths are left out
    today: dt.date | None = None  # the day recency is measured from (None: today)
    source: str | None = None  # only hits of this source: "memory", "extra" or "sessions" (None: all)
    scopes: ScopeFilter | None = None  # only files of these scopes and the global memory (None: every file)

    @classmethod
    def of(cls, query: str, *, max_results: int | None = None, min_score: float | None = None,
           path_prefix: str | None = None, after: dt.date | str | None = None, before: dt.date | str | None = None,
           include_private: bool = True, today: dt.date | None = None, source: str | None = None,
           scopes: ScopeFilter | None = None) -> SearchRequest:
        """A request from loosely typed input (dates as ``YYYY-MM-DD`` strings); ``SearchError`` if malformed."""
        if not isinstance(query, str):
            raise SearchError("query must be a string")
        if source not in (None, "", *SOURCES):
            raise SearchError(f"source must be one of {', '.join(SOURCES)}, got {source!r}")
        return cls(query, max_results, min_score, path_prefix or None, as_date(after, "after"),
                   as_date(before, "before"), include_private, today, source or None, scopes)

    @classmethod
    def coerce(cls, request: SearchRequest | str, **options: Any) -> SearchRequest:
        """``request`` itself, or a request of that query and ``of``'s ``options``."""
        return request if isinstance(request, SearchRequest) else cls.of(request, **options)


def as_date(value: dt.date | str | None, name: str) -> dt.date | None:
    """``value`` as a date; "" and None are no date; ``SearchError`` names the field otherwise."""
    if value is None or value == "":
        return None
    if isinstance(value, dt.date):
        return value
    try:
        return dt.date.fromisoformat(str(value))
    except ValueError:
        raise SearchError(f"{name} must be a date like 2026-11-26, got {value!r}") from None
