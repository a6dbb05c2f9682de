"""Keyword statistics counted over the files one caller may see.

BM25 weighs a word by how few documents hold it, and Tantivy counts them over the whole index:
private files and other scopes included. So a shared caller's ranking moved with what a private
file says. With "apple" in a dozen lines of ``MEMORY.md``, a note about an apple tree fell
below one about bananas for "apple banana", and rose above it with "banana" there instead: the
order told the caller which word the owner's private notes hold. The concepts deep search shows,
and the word weights of the precise stage, leaked the same way.

The unseen files' sizes moved it too: BM25 compares a document's length with the average, and
a long private file raised that average, which let long notes climb over short ones.

For a caller who may not see every file (privacy, a confined scope), both statistics are counted
over the files it may see (``VisibleKeywords``): each word's weight from how many of their
documents hold it, and the average length from the term counts the index keeps per document
(both by Tantivy, the unseen files' paths excluded). Tantivy picks the candidates among those
files only, each word boosted from the whole index's weight to the visible one; each candidate's
score is then rebuilt from Tantivy's own term counts and lengths with the visible statistics
(``KeywordIndex.search(stats=...)``). The owner's search is unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from mcp_memory.core.privacy import PrivacyRules
    from mcp_memory.core.scopes import ScopeFilter
    from mcp_memory.index.keywords import KeywordIndex
    from mcp_memory.index.snapshot import SearchSnapshot


@dataclass
class VisibleKeywords:
    """The keyword statistics of the documents outside ``excluded`` (paths), ``documents`` of them."""

    keywords: KeywordIndex
    excluded: tuple[str, ...]
    documents: int
    _holding: dict[str, int] = field(default_factory=dict)  # per term: visible documents holding it
    _average_length: float | None = None

    def idf(self, terms: Iterable[str]) -> dict[str, float]:
        """BM25's inverse document frequency of each analysed term, over the visible documents."""
        wanted = list(dict.fromkeys(terms))
        missing = [term for term in wanted if term not in self._holding]
        if missing:
            self._holding.update(self.keywords.holding(missing, self.excluded))
        total = max(self.documents, 1)
        return {term: math.log(1 + (total - self._holding[term] + 0.5) / (self._holding[term] + 0.5))
                for term in wanted}

    def average_length(self) -> float:
        """BM25's average document length (in terms), over the visible documents."""
        if self._average_length is None:
            terms, documents = self.keywords.total_length(self.excluded)
            self._average_length = terms / documents if documents else 1.0
        return self._average_length


def excluded_rows(hidden: np.ndarray | None, in_scope: np.ndarray | None) -> np.ndarray | None:
    """Per row whether the caller may not see it (``hidden``: private; outside ``in_scope``, a
    confined caller's scopes); None when it may see every row."""
    unseen = hidden
    if in_scope is not None:
        unseen = ~in_scope if unseen is None else unseen | ~in_scope
    return unseen if unseen is not None and unseen.any() else None


def visible_keywords(keywords: KeywordIndex, snapshot: SearchSnapshot, unseen: np.ndarray) -> VisibleKeywords:
    """The statistics of the rows ``unseen`` does not mark, the unseen rows' files excluded by path."""
    paths = {snapshot.paths[int(row)] for row in np.flatnonzero(unseen)}
    return VisibleKeywords(keywords, tuple(sorted(paths)), int(len(unseen) - unseen.sum()))


def visible_in_index(keywords: KeywordIndex, paths: Iterable[str], hidden: PrivacyRules | None,
                     confined: ScopeFilter | None) -> VisibleKeywords | None:
    """The statistics of the index's files (``paths``, every one indexed) that a caller hidden the
    private files of ``hidden``, or confined to ``confined``, may see: for a search over a few rows
    only (keyword-only recall). None when it may see every file."""
    excluded = tuple(sorted(path for path in paths if (hidden is not None and hidden.is_private(path))
                            or (confined is not None and not confined.covers(path))))
    if not excluded:
        return None
    return VisibleKeywords(keywords, excluded, keywords.count() - keywords.documents_in(excluded))
