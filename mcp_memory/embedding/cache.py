"""Embedding cache: vectors keyed by provider, model, dimensions and a hash of the text.

Unchanged chunks are never embedded twice, also across full index rebuilds (the cache lives
beside the index and survives a fingerprint change). SQLite in WAL mode lets every process
of the workspace read and add entries at once.

``embed_through_cache`` is the one way to embed texts through the cache: chunks (the
backfill) and memory lines (duplicate checks) both use it. A line is keyed as
``"line\n" + text``, so it never shares an entry with a chunk of the same text.

A second tier can stand behind the SQLite file: the vector table that machines sharing an
object store read and add to (``embedding/shared.py``). Lookups ask it for what SQLite lacks
and keep what it finds; new vectors go to both. Only chunks of files that are not private go
there (``embed_kept_private``): a vector and its key (a hash of the text) say something of the
text, so private files' chunks and single memory lines (which may come from any file) stay in
this machine's file.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, Protocol

import numpy as np

from mcp_memory.core.sqlite import open_shared
from mcp_memory.embedding.base import Embedder

EmbedKind = Literal["chunk", "line"]
# Per kind: what goes before the text in its key, and whether the texts the cache lacks are
# embedded in key order (lines) or in the order given (chunks). Changing a prefix would
# orphan every cached vector of that kind.
_KEY_PREFIX: dict[str, str] = {"chunk": "", "line": "line\n"}
_EMBED_IN_KEY_ORDER: dict[str, bool] = {"chunk": False, "line": True}


def cache_key(provider: str, model: str, dimensions: int, text: str) -> str:
    raw = f"{provider}\x00{model}\x00{dimensions}\x00{text}".encode("utf-8", "surrogatepass")
    return hashlib.sha256(raw).hexdigest()


def text_key(embedder: Embedder, text: str, kind: EmbedKind = "chunk") -> str:
    """The cache key of ``text`` embedded by ``embedder`` as a ``kind``."""
    return kind_key(embedder.provider, embedder.model, embedder.dimensions, text, kind)


def kind_key(provider: str, model: str, dimensions: int, text: str, kind: EmbedKind) -> str:
    """The cache key of ``text`` as a ``kind``, for a model named without loading it."""
    return cache_key(provider, model, dimensions, _KEY_PREFIX[kind] + text)


def embed_through_cache(embedder: Embedder, cache: EmbeddingCache, texts: Sequence[str],
                        kind: EmbedKind = "chunk", local_only: bool = False) -> np.ndarray:
    """Vectors of ``texts``, shape (len(texts), dimensions): cached ones read, the others
    embedded in one ``embed_documents`` call and added to the cache (``local_only``: the local
    file alone, for a search that must not wait on a shared store).

    Raises what the embedder raises (``EmbeddingError``); nothing is cached then.
    """
    keys = [text_key(embedder, text, kind) for text in texts]
    found = cache.get_many(list(dict.fromkeys(keys)), local_only=local_only)
    missing = [i for i, key in enumerate(keys) if key not in found]
    if _EMBED_IN_KEY_ORDER[kind]:
        missing.sort(key=lambda i: keys[i])
    if missing:
        fresh = embedder.embed_documents([texts[i] for i in missing])
        new = {keys[i]: fresh[j] for j, i in enumerate(missing)}
        cache.put_many(new, local_only=local_only)
        found.update(new)
    return np.stack([found[key] for key in keys])


def embed_kept_private(embedder: Embedder, cache: EmbeddingCache, texts: Sequence[str], private: Sequence[bool],
                       kind: EmbedKind = "chunk") -> np.ndarray:
    """``embed_through_cache``, the texts ``private`` marks (those of private files) kept to the local
    file: neither looked up in the second tier nor sent to it."""
    at = {flag: [i for i, p in enumerate(private) if p == flag] for flag in (False, True)}
    found: dict[int, np.ndarray] = {}
    for flag, where in at.items():
        if where:
            vectors = embed_through_cache(embedder, cache, [texts[i] for i in where], kind, local_only=flag)
            found.update(zip(where, vectors, strict=True))
    return np.stack([found[i] for i in range(len(texts))])


class VectorTier(Protocol):
    """A slower cache behind the local one (the shared vector table): it never raises."""

    def get_many(self, keys: list[str]) -> dict[str, np.ndarray]: ...

    def put_many(self, items: dict[str, np.ndarray]) -> None: ...

    def close(self) -> None: ...


class EmbeddingCache:
    def __init__(self, path: Path, second_tier: VectorTier | None = None):
        self.second_tier = second_tier
        self._conn = open_shared(path)  # creates the folder too
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS embeddings (key TEXT PRIMARY KEY, dims INTEGER, vector BLOB)"
        )
        self._lock = threading.Lock()

    def get_many(self, keys: list[str], local_only: bool = False) -> dict[str, np.ndarray]:
        """The cached vectors of ``keys``: the local file's, then the second tier's for the rest
        (copied into the local file). ``local_only``: never wait for the second tier."""
        found = self._get_local(keys)
        if self.second_tier is not None and not local_only:
            missing = [key for key in keys if key not in found]
            fetched = self.second_tier.get_many(missing) if missing else {}
            if fetched:
                self._put_local(fetched)
                found.update(fetched)
        return found

    def put_many(self, items: dict[str, np.ndarray], local_only: bool = False) -> None:
        """Add vectors to the local file and (unless ``local_only``) to the second tier."""
        self._put_local(items)
        if self.second_tier is not None and items and not local_only:
            self.second_tier.put_many(items)

    def present(self, keys: list[str]) -> set[str]:
        """Those of ``keys`` the local file holds (their vectors are not read)."""
        present: set[str] = set()
        with self._lock:
            for start in range(0, len(keys), 500):
                part = keys[start : start + 500]
                marks = ",".join("?" * len(part))
                rows = self._conn.execute(f"SELECT key FROM embeddings WHERE key IN ({marks})", part).fetchall()
                present.update(key for (key,) in rows)
        return present

    def _get_local(self, keys: list[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                part = keys[start : start + 500]
                marks = ",".join("?" * len(part))
                rows = self._conn.execute(
                    f"SELECT key, vector FROM embeddings WHERE key IN ({marks})", part
                ).fetchall()
                for key, blob in rows:
                    found[key] = np.frombuffer(blob, dtype=np.float32)
        return found

    def _put_local(self, items: dict[str, np.ndarray]) -> None:
        if not items:
            return
        rows = [(k, int(v.shape[0]), np.asarray(v, np.float32).tobytes()) for k, v in items.items()]
        with self._lock:
            self._conn.execute("BEGIN")
            self._conn.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?)", rows)
            self._conn.execute("COMMIT")

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])

    def close(self) -> None:
        if self.second_tier is not None:
            self.second_tier.close()  # writes what it still holds, within its timeout
        with self._lock:
            self._conn.close()
