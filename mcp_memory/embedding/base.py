"""The one small interface every embedding provider implements."""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np


class EmbeddingError(RuntimeError):
    """A provider could not produce embeddings (unreachable endpoint, bad model, ...)."""


class Embedder(ABC):
    """Turns texts into L2-normalised float32 vectors.

    ``provider``, ``model`` and ``dimensions`` identify the vector space: they key the
    embedding cache and the index fingerprint, so two embedders with the same triple must
    produce interchangeable vectors.
    """

    provider: str = ""
    model: str = ""
    batch_size: int = 32
    # Cosine similarity above which a passage is taken as related to a query (episodes, the
    # standing rules a session's first recall adds). Each model has its own scale.
    relevance_floor: float = 0.5
    # The stricter cosine auto-recall asks of a memory it injects unasked; None: relevance_floor.
    recall_floor: float | None = None
    # The cosine below which a memory shares no topic with a prompt, whatever words they share
    # (a date's digits, "how", 的): auto-recall then takes its keyword match for chance. None:
    # this model's scale is not known, and keywords alone may recall.
    topic_floor: float | None = None
    # The spread (standard deviation) of an unrelated prompt's cosines to the memories: how far
    # chance alone reaches on this model's scale. Auto-recall raises its floor with it in a
    # workspace larger than the floor was chosen on (core/recall.py, ``floor_for_size``). None:
    # not known, and the floor stays as it is.
    noise_spread: float | None = None
    # The cosine at which two short memories in different languages say the same thing but for a
    # value ("The team standup is at 9:30" / 站会改到 10 点了), which the words of neither can show
    # (core/updates.py). None: this model's scale is not known, and such pairs are never read as updates.
    same_fact_cosine: float | None = None

    @property
    @abstractmethod
    def dimensions(self) -> int:
        """Length of every vector (may need one call to the model to find out)."""

    @abstractmethod
    def embed_documents(self, texts: list[str]) -> np.ndarray:
        """Vectors for passages to store, shape (len(texts), dimensions)."""

    @abstractmethod
    def embed_query(self, text: str) -> np.ndarray:
        """Vector for a search query, shape (dimensions,)."""

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        """Vectors for several queries at once, each equal to ``embed_query``'s.

        Providers that can batch queries override this: a batch of stores checks each text
        for duplicates with a search, and one call for all of them costs less than one each.
        """
        if not texts:
            return np.zeros((0, self.dimensions), np.float32)
        return np.stack([self.embed_query(text) for text in texts])


def normalize(vectors: np.ndarray) -> np.ndarray:
    """L2-normalise rows (zero rows stay zero), as float32."""
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim == 1:
        norm = float(np.linalg.norm(vectors))
        return vectors / norm if norm > 0 else vectors
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    normalized: np.ndarray = vectors / norms
    return normalized
