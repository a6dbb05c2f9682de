"""What the capture/recall loop has already done, shared by every process on a workspace.

Hooks run as short-lived processes and every MCP client starts its own server, so the loop's
memory of itself lives in a small SQLite database beside the index:

* ``captures``: idempotency keys already captured, so a retried or repeated capture (the
  same turn sent by a hook and by a tool call) writes nothing twice;
* ``sessions`` and ``recalls``: each session's turn counter and which memories were injected
  on which turn, so recall does not repeat a memory the model saw a turn or two ago.

Rows older than ``RETENTION_DAYS`` are pruned now and then; losing them costs nothing but a
repeated recall (duplicates are still caught by the similarity check on capture).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

from mcp_memory.core.sqlite import open_shared

RETENTION_DAYS = 30


class Ledger:
    def __init__(self, path: Path):
        self._conn = open_shared(path)  # creates the folder too
        self._conn.execute("CREATE TABLE IF NOT EXISTS captures (key TEXT PRIMARY KEY, at REAL)")
        self._conn.execute("CREATE TABLE IF NOT EXISTS sessions (session TEXT PRIMARY KEY, turn INTEGER, at REAL)")
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS recalls (session TEXT, turn INTEGER, memory TEXT, at REAL)"
        )
        self._conn.execute("CREATE INDEX IF NOT EXISTS recalls_by_session ON recalls (session, turn)")
        columns = {row[1] for row in self._conn.execute("PRAGMA table_info(sessions)")}
        if "prompt_id" not in columns:  # a ledger written by an earlier version
            try:
                self._conn.execute("ALTER TABLE sessions ADD COLUMN prompt_id TEXT")
            except sqlite3.OperationalError:
                pass  # another process added it meanwhile
        self._lock = threading.Lock()
        self._prune()

    # ----- capture idempotency -------------------------------------------------------------
    def seen(self, key: str) -> bool:
        with self._lock:
            return self._conn.execute("SELECT 1 FROM captures WHERE key = ?", (key,)).fetchone() is not None

    def claim(self, key: str) -> bool:
        """Record ``key``; False when some process recorded it first (atomic across processes)."""
        with self._lock:
            cursor = self._conn.execute("INSERT OR IGNORE INTO captures (key, at) VALUES (?, ?)", (key, time.time()))
            return cursor.rowcount == 1

    def release(self, key: str) -> None:
        """Forget a claim whose capture failed, so that a retry may run."""
        with self._lock:
            self._conn.execute("DELETE FROM captures WHERE key = ?", (key,))

    # ----- recall repetition ---------------------------------------------------------------
    def next_turn(self, session: str, prompt_id: str | None = None) -> int:
        """Advance and return the session's turn number (1 for its first recall).

        A ``prompt_id`` names one prompt: asked again (a hook that stopped waiting for the warm
        process and recalls on its own), the turn is the same one, and what the first answer
        recorded for it is forgotten, so the second answer is not told it was shown already.
        """
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                row = self._conn.execute("SELECT turn, prompt_id FROM sessions WHERE session = ?",
                                         (session,)).fetchone()
                if row is not None and prompt_id and row[1] == prompt_id:
                    turn = int(row[0])
                    self._conn.execute("DELETE FROM recalls WHERE session = ? AND turn = ?", (session, turn))
                else:
                    turn = (row[0] if row else 0) + 1
                    self._conn.execute("INSERT OR REPLACE INTO sessions (session, turn, at, prompt_id) "
                                       "VALUES (?, ?, ?, ?)", (session, turn, time.time(), prompt_id or None))
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
        return turn

    def recalled_since(self, session: str, first_turn: int) -> set[str]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT memory FROM recalls WHERE session = ? AND turn >= ?", (session, first_turn)
            ).fetchall()
        return {row[0] for row in rows}

    def record_recall(self, session: str, turn: int, memories: list[str]) -> None:
        now = time.time()
        with self._lock:
            self._conn.executemany(
                "INSERT INTO recalls (session, turn, memory, at) VALUES (?, ?, ?, ?)",
                [(session, turn, memory, now) for memory in memories],
            )

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def _prune(self) -> None:
        self.prune(RETENTION_DAYS)

    def prune(self, days: float) -> int:
        """Delete rows older than ``days``; returns how many went."""
        cutoff = time.time() - days * 86400
        removed = 0
        with self._lock:
            for table in ("captures", "sessions", "recalls"):
                removed += self._conn.execute(f"DELETE FROM {table} WHERE at < ?", (cutoff,)).rowcount
        return removed


def clean_key(key: object) -> str | None:
    """A session or idempotency key fit for the ledger: one line, bounded, valid UTF-8; None if empty.

    JSON admits lone surrogates, SQLite does not.
    """
    text = " ".join(str(key or "").split())[:200].encode("utf-8", "replace").decode("utf-8")
    return text or None
