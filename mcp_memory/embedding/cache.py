"""Embedding cache: vectors keyed by provider, model, dimensions and a hash of the text.

Unchanged chunks are never embedded twice, also across full index rebuilds (the cache lives
beside the index and survives a fingerprint change). SQLite in WAL mode lets every process
of the workspace read and add entries at once.
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

import numpy as np

from mcp_memory.sqlite import open_shared


def cache_key(provider: str, model: str, dimensions: int, text: str) -> str:
    raw = f"{provider}\x00{model}\x00{dimensions}\x00{text}".encode("utf-8", "surrogatepass")
    return hashlib.sha256(raw).hexdigest()


class EmbeddingCache:
    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = open_shared(path)
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS embeddings (key TEXT PRIMARY KEY, dims INTEGER, vector BLOB)"
        )
        self._lock = threading.Lock()

    def get_many(self, keys: list[str]) -> dict[str, np.ndarray]:
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

    def put_many(self, items: dict[str, np.ndarray]) -> None:
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
        with self._lock:
            self._conn.close()
