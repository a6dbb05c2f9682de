"""A tool call sent again is answered once: the middleware behind the front's retries.

A stdio front (``runtime/front.py``) sends again the requests a dying warm process left unanswered.
Each ``tools/call`` it forwards carries a fresh key in ``params._meta["io.mcp-memory/call"]``,
the same key on every retry. For a tool that writes (not marked read-only), this middleware
records the result under that key once the call returns, and answers a key it has seen with
the recorded result instead of running the call again: a store, a reward or a forget is done
once whether or not its first answer got back. Calls without a key (every other client) and
read-only tools pass straight through.

The record lives in ``<index_dir>/calls.sqlite``, shared by every process of the workspace
(the retry reaches another process than the first attempt), and is kept for a day. A process
killed between writing the markdown and recording the result leaves the narrow window that
the writes' own safeguards close: a repeated store is a near-duplicate and is not written again.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio.to_thread
import mcp_types as types
from mcp.server import MCPServer
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from pydantic import BaseModel

from mcp_memory.core.sqlite import open_shared
from mcp_memory.runtime.warm import CALL_KEY

log = logging.getLogger(__name__)

RETENTION_SECONDS = 24 * 3600
MAX_KEY_CHARS = 64


class CallRecord:
    """Results of keyed write calls, by key (SQLite, shared by the workspace's processes)."""

    def __init__(self, path: Path):
        self._path = path
        self._conn: Any = None
        self._lock = threading.Lock()

    def _db(self) -> Any:
        if self._conn is None:
            self._conn = open_shared(self._path)
            self._conn.execute("CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, result TEXT, at REAL)")
            self._conn.execute("DELETE FROM calls WHERE at < ?", (time.time() - RETENTION_SECONDS,))
        return self._conn

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db().execute("SELECT result FROM calls WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, result: dict[str, Any]) -> None:
        with self._lock:
            self._db().execute("INSERT OR IGNORE INTO calls (key, result, at) VALUES (?, ?, ?)",
                               (key, json.dumps(result), time.time()))


class CallOnce:
    """The middleware: keyed calls of writing tools run once (see the module docstring)."""

    def __init__(self, record: CallRecord):
        self._server: MCPServer | None = None
        self._record = record
        self._read_only: set[str] | None = None

    def bind(self, server: MCPServer) -> None:
        """The server whose tools' annotations say which calls only read (made after this)."""
        self._server = server

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method != "tools/call" or not ctx.params:
            return await call_next(ctx)
        key, name = _call_key(ctx.params), ctx.params.get("name")
        if key is None or not isinstance(name, str) or name in await self._read_only_tools():
            return await call_next(ctx)
        recorded = await anyio.to_thread.run_sync(self._record.get, key)
        if recorded is not None:
            log.info("call %s of %s answered from the record (sent again)", key, name)
            return types.CallToolResult.model_validate(recorded)
        result = await call_next(ctx)
        data = result.model_dump(by_alias=True, exclude_none=True) if isinstance(result, BaseModel) else result
        if isinstance(data, dict):
            try:
                await anyio.to_thread.run_sync(self._record.put, key, data)
            except Exception:  # recording must not fail the call it records
                log.warning("could not record call %s", key, exc_info=True)
        return result

    async def _read_only_tools(self) -> set[str]:
        if self._read_only is None:
            if self._server is None:
                return set()
            tools = await self._server.list_tools()
            self._read_only = {t.name for t in tools if t.annotations is not None and t.annotations.read_only_hint}
        return self._read_only


def _call_key(params: Mapping[str, Any]) -> str | None:
    meta = params.get("_meta")
    key = meta.get(CALL_KEY) if isinstance(meta, dict) else None
    if isinstance(key, str) and 0 < len(key) <= MAX_KEY_CHARS and key.isalnum():
        return key
    return None
