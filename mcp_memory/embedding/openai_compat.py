"""Embeddings from any OpenAI-compatible endpoint (OpenAI, Ollama, LM Studio, vLLM, ...).

One provider covers both the hosted API and the local servers people already run, because
they all speak the same ``POST /embeddings`` protocol. The official ``openai`` package does
the HTTP; this module adds what an indexer needs on top: batching, retries that survive rate
limits and flaky local servers, and strict checks on the answer so a misbehaving server fails
loudly instead of silently poisoning the vector index.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from typing import Any, cast
from urllib.parse import urlsplit, urlunsplit

import numpy as np
import openai

from mcp_memory.config import EmbeddingSettings
from mcp_memory.core.retries import retry_after_seconds
from mcp_memory.embedding.base import Embedder, EmbeddingError, normalize

# Local servers ignore the key, but the openai client refuses to start without one.
_PLACEHOLDER_API_KEY = "not-needed"
_PROBE_TEXT = "dimension probe"
_BASE_DELAY = 0.5
_MAX_DELAY = 8.0
_MAX_RETRY_AFTER = 30.0


class OpenAIEmbedder(Embedder):
    """Embedder backed by an OpenAI-compatible ``/embeddings`` endpoint."""

    provider = "openai"
    relevance_floor = 0.4  # an estimate for current embedding models; unrelated texts sit near 0.1-0.2

    def __init__(self, settings: EmbeddingSettings) -> None:
        self.model = settings.model
        self.batch_size = max(1, int(settings.batch_size))
        self._settings = settings
        self._api_key = settings.api_key
        self._dims: int | None = settings.dimensions if settings.dimensions > 0 else None
        # Tests replace these so retries neither wait nor vary.
        self._sleep: Callable[[float], None] = time.sleep
        self._random: Callable[[float, float], float] = random.uniform
        # Our own retry loop replaces the client's so every attempt honours our policy
        # (backoff cap, Retry-After cap, max_retries from the settings).
        self._client = openai.OpenAI(
            base_url=settings.base_url or None,
            api_key=settings.api_key or _PLACEHOLDER_API_KEY,
            timeout=settings.timeout,
            max_retries=0,
        )
        self._where = f"{_display_url(str(self._client.base_url))} (model {self.model!r})"

    @property
    def dimensions(self) -> int:
        if self._dims is None:
            self._embed_batch([_PROBE_TEXT])
        assert self._dims is not None  # set by _embed_batch or it raised
        return self._dims

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._dims or 0), np.float32)
        batches = [
            self._embed_batch(texts[start : start + self.batch_size])
            for start in range(0, len(texts), self.batch_size)
        ]
        return normalize(np.concatenate(batches, axis=0))

    def embed_query(self, text: str) -> np.ndarray:
        vector: np.ndarray = self.embed_documents([text])[0]
        return vector

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self.embed_documents(texts)

    def _embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        # Empty inputs make OpenAI answer 400 and some local servers crash; a space embeds fine.
        inputs = [text if text.strip() else " " for text in texts]
        kwargs: dict[str, Any] = {"model": self.model, "input": inputs, "encoding_format": "float"}
        if self._settings.dimensions > 0:
            kwargs["dimensions"] = self._settings.dimensions
        response = self._call_with_retries(kwargs)
        return self._parse(response, len(inputs))

    def _call_with_retries(self, kwargs: dict[str, Any]) -> Any:
        retries = max(0, int(self._settings.max_retries))
        attempt = 0
        while True:
            try:
                return self._client.embeddings.create(**kwargs)
            except openai.OpenAIError as exc:
                if not _is_retryable(exc):
                    raise EmbeddingError(self._message("failed", exc)) from exc
                if attempt >= retries:
                    raise EmbeddingError(
                        self._message(f"still failing after {attempt + 1} attempts", exc)
                    ) from exc
                self._sleep(self._delay(attempt, exc))
                attempt += 1

    def _delay(self, attempt: int, exc: Exception) -> float:
        retry_after = retry_after_seconds(getattr(getattr(exc, "response", None), "headers", None))
        if retry_after is not None:
            return min(retry_after, _MAX_RETRY_AFTER)
        nominal: float = min(_MAX_DELAY, _BASE_DELAY * 2**attempt)
        # Jitter spreads out clients that failed together; keeping it within the top quarter
        # keeps successive delays growing until the cap.
        return nominal * self._random(0.75, 1.0)

    def _parse(self, response: Any, expected: int) -> np.ndarray:
        items = list(getattr(response, "data", None) or [])
        if len(items) != expected:
            raise EmbeddingError(
                f"embedding endpoint {self._where} returned {len(items)} vectors for {expected} inputs"
            )
        indices = [getattr(item, "index", None) for item in items]
        if all(index is None for index in indices):
            # Some servers omit ``index``; their list order is then the only order there is.
            ordered = items
        elif sorted(i for i in indices if isinstance(i, int)) == list(range(expected)):
            # cast: the check above found an int index on every item (0 .. expected-1)
            pairs = zip(indices, items, strict=True)
            ordered = [item for _, item in sorted(pairs, key=lambda pair: cast(int, pair[0]))]
        else:
            raise EmbeddingError(f"embedding endpoint {self._where} returned inconsistent indices {indices}")

        try:
            rows = [np.asarray(item.embedding, dtype=np.float32) for item in ordered]
        except (AttributeError, TypeError, ValueError) as exc:
            raise EmbeddingError(f"embedding endpoint {self._where} returned malformed vectors: {exc}") from exc
        lengths = {row.shape for row in rows}
        if len(lengths) != 1 or rows[0].ndim != 1 or rows[0].shape[0] == 0:
            raise EmbeddingError(
                f"embedding endpoint {self._where} returned vectors of differing or invalid shapes "
                f"{sorted(lengths)}"
            )
        matrix = np.stack(rows)
        width = int(matrix.shape[1])
        if self._dims is not None and width != self._dims:
            raise EmbeddingError(
                f"embedding endpoint {self._where} returned {width}-dimensional vectors, "
                f"expected {self._dims}"
            )
        if not np.isfinite(matrix).all():
            raise EmbeddingError(f"embedding endpoint {self._where} returned NaN or infinite values")
        self._dims = width
        return matrix

    def _message(self, what: str, exc: Exception) -> str:
        detail = _describe(exc)
        if self._api_key:
            # Servers sometimes echo the key in 401 messages; it must never reach logs.
            detail = detail.replace(self._api_key, "***")
        return f"embedding request to {self._where} {what}: {detail}"


def _is_retryable(exc: Exception) -> bool:
    # APITimeoutError subclasses APIConnectionError; InternalServerError is the SDK's 5xx class.
    if isinstance(exc, (openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError)):
        return True
    return isinstance(exc, openai.APIStatusError) and exc.status_code >= 500


def _describe(exc: Exception) -> str:
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}: {exc.message}"
    if isinstance(exc, openai.APITimeoutError):
        return "request timed out"
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        return f"cannot connect ({cause or exc})"
    return f"{type(exc).__name__}: {exc}"


def _display_url(url: str) -> str:
    # A base URL may carry user:password@; show only where we were talking to.
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))
