"""The later memories closest to a statement a search shows: where its update may be.

A query finds the memory whose words it shares. When the fact has changed since, the update is
often worded unlike the query ("which editor does the user like" finds "favourite editor is
Sublime Text", not "now mostly writes in Zed"), so it is not among the hits that changed facts
(``core/updates.py``) read; or its chunk is, named by another memory of a daily log that the
query's words fit better. This module looks for it from the statement's side: the chunks whose
vectors are closest to the statement's chunk, those its own words find in the keyword index, and
the other memories of the chunks the result shows. Only rows the request may see (its filters,
privacy and scopes) and dated later than the statement are kept; the text rules of
``core/updates.py`` then decide whether any is an update.

The hits are named by the statement (the memory in each chunk closest to it), while their
coverage and vector similarity stay those of the query, as for any other hit.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from mcp_memory.core import updates
from mcp_memory.core.hits import SearchHit
from mcp_memory.core.memory_ids import split_memories

if TYPE_CHECKING:
    from mcp_memory.index.hybrid import HybridSearcher, Ranking
    from mcp_memory.index.snapshot import SearchSnapshot


def later_neighbours(searcher: HybridSearcher, ranking: Ranking, rows: Sequence[int],
                     facts: list[tuple[int, updates.Statement]]) -> list[SearchHit]:
    """Hits for the memories closest to each of ``facts`` (a shown hit's place in ``rows`` and its
    statement) that are dated after it: at most ``NEAR_PER_STATEMENT`` by vector and as many by
    keywords per statement, best first, and the other memories of the result's own ``rows``; each
    row once."""
    snap = ranking.snapshot
    found: dict[int, str] = {}  # row -> the memory in it that updates a fact
    undecided: list[tuple[int, str, updates.Statement]] = []  # (row, memory, fact) the words leave open
    statements: dict[int, tuple[updates.Statement, ...]] = {}  # a row's memories, read once for every fact
    for place, fact in facts:
        if place >= len(rows):
            continue
        row = rows[place]
        close = [*_vector_neighbours(ranking, row), *_keyword_neighbours(searcher, ranking, fact.text),
                 # the result's own rows: a chunk shown under another of its memories (the one
                 # closest to the query) may hold the update beside it
                 *rows]
        for other in close:
            if other != row and other not in found and _later(snap, other, fact):
                if other not in statements:
                    statements[other] = _statements(snap, other)
                update, unsure = _update_in(statements[other], fact)
                if update is not None:
                    found[other] = update
                undecided.extend((other, text, fact) for text in unsure)
    if undecided and searcher.same_fact is not None:  # asked all at once: one embedder call
        answers = searcher.same_fact([(fact.text, text) for _, text, fact in undecided])
        for (row, text, _), same in zip(undecided, answers, strict=True):
            if same and row not in found:
                found[row] = text
    hits = []
    terms = ranking.query_terms(searcher.analyzer)
    for row, update in found.items():
        # Named by the updating memory's own words, so the hit cites it rather than its neighbours.
        named = searcher.hit(replace(ranking, query=update, focus=None, _query_terms=frozenset()), row, 0.0)
        coverage = len(terms & searcher.row_terms(snap, row)) / len(terms) if terms else 0.0
        similarity = ranking.vector_scores.get(row)
        hits.append(replace(named, keyword_coverage=round(coverage, 4),
                            vector_similarity=None if similarity is None else round(similarity, 4)))
    return hits


def _statements(snap: SearchSnapshot, row: int) -> tuple[updates.Statement, ...]:
    """The memories of ``row``'s chunk, each with its date (its own, else its file's)."""
    return _statements_of(snap.text(row), snap.dates[row])


@lru_cache(maxsize=4096)
def _statements_of(text: str, day: dt.date | None) -> tuple[updates.Statement, ...]:
    """The memories of a chunk's ``text`` dated ``day``: the same chunks are neighbours search after
    search, and splitting them was a tenth of a recall's time on the dialogues."""
    lines = text.split("\n")
    texts = ["\n".join(lines[unit.start : unit.end + 1]) for unit in split_memories(lines)]
    return tuple(updates.Statement(text, updates.stated_date(text, day)) for text in texts)


def _update_in(memories: Sequence[updates.Statement], fact: updates.Statement) -> tuple[str | None, list[str]]:
    """The first of a chunk's ``memories`` that updates ``fact`` by the text rules (None when none
    does: most neighbours, and only these become hits, for building a hit is the costly part), and
    the memories before it the rules leave undecided (across languages)."""
    unsure: list[str] = []
    for memory in memories:
        found = updates.by_words(memory, fact)
        if found:
            return memory.text, unsure
        if found is None:
            unsure.append(memory.text)
    return None, unsure


def _later(snap: SearchSnapshot, row: int, fact: updates.Statement) -> bool:
    """Whether ``row`` could hold a later memory: its file's day is after the statement's, or it
    has no day (an evergreen file, whose memories may state their own)."""
    day = snap.dates[row]
    return day is None or fact.date is None or day > fact.date


def _allowed(ranking: Ranking, row: int) -> bool:
    return ranking.allowed is None or bool(ranking.allowed[row])


def _vector_neighbours(ranking: Ranking, row: int) -> list[int]:
    """The rows whose vectors are closest to ``row``'s, at a cosine of ``NEAR_COSINE`` or more."""
    snap = ranking.snapshot
    vector = snap.vector(row)
    if vector is None:
        return []
    # +1: the row itself is its own closest. nearest: exact below the compact size, cells above it.
    candidates, sims = snap.nearest(vector, updates.NEAR_PER_STATEMENT + 1, ranking.allowed)
    top = np.argsort(-sims)
    return [int(candidates[i]) for i in top if sims[i] >= updates.NEAR_COSINE]


def _keyword_neighbours(searcher: HybridSearcher, ranking: Ranking, text: str) -> list[int]:
    """The rows the statement's own words find first in the keyword index."""
    snap = ranking.snapshot
    rows = []
    excluded = ranking.keyword_stats.excluded if ranking.keyword_stats is not None else ()
    for hit in searcher.keywords.search(text, updates.NEAR_PER_STATEMENT + 1, excluded_paths=excluded,
                                        stats=ranking.keyword_stats).hits:
        row = snap.row_of.get(hit.id)
        if row is not None and _allowed(ranking, row):
            rows.append(row)
    return rows
