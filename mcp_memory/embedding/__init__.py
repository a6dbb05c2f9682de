"""Embedding providers behind one interface, and the cache that makes them a one-time cost."""

from __future__ import annotations

from mcp_memory.config import EmbeddingSettings
from mcp_memory.embedding.base import Embedder, EmbeddingError, normalize

__all__ = ["Embedder", "EmbeddingError", "create_embedder", "normalize"]


def create_embedder(settings: EmbeddingSettings) -> Embedder | None:
    """The configured provider, or None for keyword-only mode (``provider = "none"``)."""
    if settings.provider == "none":
        return None
    if settings.provider == "local":
        from mcp_memory.embedding.local import USEEmbedder

        return USEEmbedder(threads=settings.threads)
    if settings.provider == "e5":
        from mcp_memory.embedding.local import E5Embedder

        return E5Embedder(threads=settings.threads)
    if settings.provider == "openai":
        from mcp_memory.embedding.openai_compat import OpenAIEmbedder

        return OpenAIEmbedder(settings)
    raise EmbeddingError(f"unknown embedding provider {settings.provider!r}")
