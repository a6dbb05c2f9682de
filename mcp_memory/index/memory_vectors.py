"""Single memories' vectors: whether two memories in different languages say the same thing, and
which of a hit's lines tied on the query's words is closest to it in meaning (``hybrid.py``).

The text rules of ``core/updates.py`` tie an update to the memory it changes by shared words (a
name, a Latin word, the concepts of ``core/words/updates.toml``). Across languages most subjects
share none ("The team standup is at 9:30" / 站会改到 10 点了), and the rules leave such a pair
undecided. A multilingual embedder places a sentence and its translation close together: at the
model's ``same_fact_cosine`` or more, the two are one fact with a new value. A model with no known
scale never decides. Chunk vectors cannot answer this: a daily log's chunk mixes a dozen bullets.

Vectors go through the embedding cache under the texts the sleep cycle embeds for the same
memories, so a memory is embedded once; an embedder that fails leaves the words alone to decide.
Searches ask for them, so they are read from and written to the local cache file only: a shared
vector store (``embedding/shared.py``) would make a search wait on the network.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from mcp_memory.core.memory_ids import statement_body
from mcp_memory.embedding import Embedder, EmbeddingError
from mcp_memory.embedding.cache import EmbeddingCache, embed_through_cache

log = logging.getLogger(__name__)

_KEPT = 4096  # vectors kept in memory: the same few memories are shown search after search


class MemoryVectors:
    """Vectors of single memories by the index's embedder, through its cache."""

    def __init__(self, embedder: Embedder, cache: EmbeddingCache):
        self.embedder = embedder
        self.cache = cache
        self._kept: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def vectors(self, texts: list[str]) -> list[np.ndarray | None]:
        """Each memory's vector (of its words without markers); None where the embedder failed."""
        with self._lock:
            found = {t: self._kept[t] for t in texts if t in self._kept}
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        if missing:
            try:  # one embedder call for all, the cached ones read
                fresh = embed_through_cache(self.embedder, self.cache, [statement_body(t) for t in missing], "line",
                                            local_only=True)
            except EmbeddingError as exc:  # the words alone decide
                log.warning("could not embed %d memories: %s", len(missing), exc)
                return [found.get(t) for t in texts]
            with self._lock:
                for text, vector in zip(missing, fresh, strict=True):
                    self._kept[text] = vector
                while len(self._kept) > _KEPT:
                    self._kept.popitem(last=False)
            found.update(zip(missing, fresh, strict=True))
        return [found.get(t) for t in texts]

    def closest(self, query: np.ndarray, texts: list[str]) -> int | None:
        """The index of the text whose vector is closest to ``query`` (a query vector of the same
        embedder); None when any of them could not be embedded."""
        vectors = self.vectors(texts)
        if any(vector is None for vector in vectors):
            return None
        return int(np.argmax([float(vector @ query) for vector in vectors if vector is not None]))

    def same_fact(self, pairs: Sequence[tuple[str, str]]) -> list[bool]:
        """``core.updates.SameFact``: whether each pair's cosine reaches the model's ``same_fact_cosine``
        (the memories of all pairs embedded in one call)."""
        floor = self.embedder.same_fact_cosine
        if floor is None:
            return [False] * len(pairs)
        texts = list(dict.fromkeys(text for pair in pairs for text in pair))
        vectors = dict(zip(texts, self.vectors(texts), strict=True))
        out = []
        for earlier, later in pairs:
            a, b = vectors[earlier], vectors[later]
            out.append(a is not None and b is not None and float(a @ b) >= floor)
        return out
