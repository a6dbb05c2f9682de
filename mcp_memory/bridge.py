"""A loopback side door through which hooks reach a running server of the same workspace.

Client hooks (Claude Code's ``UserPromptSubmit`` and ``Stop``) run as fresh processes on
every turn. Loading the vector index and the embedding model takes seconds, more than a
prompt hook may add, while the MCP server the same client started has them warm. So every
``mcp-memory serve`` also listens on 127.0.0.1 on a random port and writes
``<index_dir>/bridges/<pid>.json`` (port and a random token; readable by the user only). A
hook reads those files, connects, sends one JSON line and reads one JSON line back. When no
server answers, the hook falls back to working in-process (keyword-only for recall).

The token proves the caller can read the user's index folder; nothing listens beyond
loopback, and requests are size-limited.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import socket
import socketserver
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

BRIDGE_DIRNAME = "bridges"
MAX_REQUEST_BYTES = 1024 * 1024  # transcripts travel by path, so requests are small
Handler = Callable[[dict[str, Any]], dict[str, Any]]


class BridgeServer:
    """Answers hook requests with ``handler`` on a loopback port, one thread per connection."""

    def __init__(self, index_dir: Path, handler: Handler):
        self.folder = Path(index_dir) / BRIDGE_DIRNAME
        self.handler = handler
        self.token = secrets.token_urlsafe(24)
        self._server: socketserver.ThreadingTCPServer | None = None
        self._thread: threading.Thread | None = None
        self.info_path = self.folder / f"{os.getpid()}.json"

    def start(self) -> "BridgeServer":
        bridge = self

        class _Handler(socketserver.StreamRequestHandler):
            timeout = 60

            def handle(self) -> None:
                line = self.rfile.readline(MAX_REQUEST_BYTES + 1)
                reply = bridge._answer(line)
                self.wfile.write(json.dumps(reply, ensure_ascii=False).encode("utf-8") + b"\n")

        class _Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self._server = _Server(("127.0.0.1", 0), _Handler)
        port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, name="mcp-memory-bridge", daemon=True)
        self._thread.start()
        self.folder.mkdir(parents=True, exist_ok=True)
        _write_private(self.info_path, json.dumps({"pid": os.getpid(), "port": port, "token": self.token,
                                                   "started": time.time()}))
        log.info("hook bridge listening on 127.0.0.1:%d", port)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        try:
            self.info_path.unlink()
        except OSError:
            pass

    def _answer(self, line: bytes) -> dict[str, Any]:
        if len(line) > MAX_REQUEST_BYTES:
            return {"ok": False, "error": "request too large"}
        try:
            request = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            return {"ok": False, "error": "request is not one line of JSON"}
        if not isinstance(request, dict) or not secrets.compare_digest(str(request.get("token", "")), self.token):
            return {"ok": False, "error": "bad token"}
        try:
            return {"ok": True, **self.handler(request)}
        except Exception as exc:  # the hook falls back; the server keeps serving
            log.warning("bridge request %r failed: %s", request.get("op"), exc, exc_info=True)
            return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}


def call_bridge(index_dir: Path, request: dict[str, Any], timeout: float = 5.0) -> dict[str, Any] | None:
    """Send ``request`` to a running server of this index; None when none answers in time."""
    folder = Path(index_dir) / BRIDGE_DIRNAME
    try:
        entries = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    except OSError:
        return None
    for entry in entries:
        try:
            info = json.loads(entry.read_text(encoding="utf-8"))
            port, token = int(info["port"]), str(info["token"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=min(timeout, 0.5)) as conn:
                conn.settimeout(timeout)
                conn.sendall(json.dumps({**request, "token": token}, ensure_ascii=False).encode("utf-8") + b"\n")
                reply = _read_line(conn)
        except OSError:
            if not _pid_alive(info.get("pid")):
                _remove_stale(entry)
            continue
        try:
            answer = json.loads(reply.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            continue
        if isinstance(answer, dict) and answer.get("ok"):
            return answer
        log.info("bridge at port %d refused: %s", port, answer.get("error") if isinstance(answer, dict) else answer)
    return None


def _read_line(conn: socket.socket) -> bytes:
    chunks: list[bytes] = []
    while True:
        data = conn.recv(65536)
        if not data:
            break
        chunks.append(data)
        if data.endswith(b"\n"):
            break
    return b"".join(chunks)


def _write_private(path: Path, text: str) -> None:
    """Write a file only its owner can read, atomically (a reader never sees half a token)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)


def _pid_alive(pid: Any) -> bool:
    if sys.platform == "win32":
        return True  # signal 0 means CTRL_C_EVENT there; a stale file just costs one refused connect
    try:
        os.kill(int(pid), 0)
    except (OSError, ValueError, TypeError):
        return False
    return True


def _remove_stale(entry: Path) -> None:
    try:
        entry.unlink()
    except OSError:
        pass
