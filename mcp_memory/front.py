"""The thin stdio front: ``mcp-memory serve`` over stdio, forwarding to the warm process.

An MCP client spawns ``mcp-memory serve`` and talks JSON-RPC lines over its stdin and stdout.
With a warm process for the workspace (``warm.py``), this process only carries those lines to
it and back over an authenticated loopback stream, so it loads neither the MCP SDK nor the
index nor a model: a few megabytes and a fraction of a second, however many clients run.

When the warm process goes away (killed, upgraded, idle exit racing a new client), the front
finds or starts another, replays the client's ``initialize`` (its reply is not passed on: the
client has one), its subscriptions and log level, then sends again every request still
unanswered. A repeated ``tools/call`` carries the key it carried the first time
(``_meta["io.mcp-memory/call"]``), and a warm process answers a key it has seen with the result
it recorded (``server/once.py``), so a write is neither lost nor done twice.

What the client sees stays protocol: nothing but JSON-RPC lines reaches stdout, logs go to
stderr. Unreadable lines are forwarded as they are, and the warm process answers them.
"""

from __future__ import annotations

import json
import logging
import socket
import sys
import threading
import time
import uuid
from typing import IO, Any

from mcp_memory.bridge import BridgeError, loggable, open_stream
from mcp_memory.config import Settings
from mcp_memory.warm import CALL_KEY, ensure_warm, settings_digest

log = logging.getLogger(__name__)

START_TIMEOUT = 30.0  # seconds to find or start a warm process before giving up
STREAM_TIMEOUT = 5.0
REPLAYED = ("resources/subscribe", "resources/unsubscribe", "logging/setLevel")
_PRIVATE_ID = "mcp-memory-front-"


class FrontError(RuntimeError):
    """No warm process could be reached (the caller serves in-process instead, or gives up)."""


class Front:
    """Carries one client's JSON-RPC lines between stdin/stdout and the warm process."""

    def __init__(self, settings: Settings, options: list[str], shared: bool,
                 stdin: IO[bytes] | None = None, stdout: IO[bytes] | None = None, scope: str | None = None):
        self.settings = settings
        self.options = options
        self.shared = shared
        self.scope = scope  # this client's default scope: sent with the stream, not part of the settings digest
        self.stdin = stdin or sys.stdin.buffer
        self.stdout = stdout or sys.stdout.buffer
        self._digest = settings_digest(settings)
        self._conn: socket.socket | None = None
        self._failed = False  # the warm process went away and no other could be reached
        self._send_lock = threading.Lock()
        self._out_lock = threading.Lock()
        self._state = threading.Condition()
        self._initialize: dict[str, Any] | None = None
        self._initialized: bytes | None = None
        self._replayed: dict[str, dict[str, Any]] = {}  # method (+ uri) -> the last such request
        self._pending: dict[Any, bytes] = {}  # request id -> the line sent, until answered
        self._closing = False
        self._private = 0

    # ----- running -------------------------------------------------------------------------
    def connect(self, timeout: float = START_TIMEOUT) -> socket.socket:
        """A stream to a warm process (started if needed); ``FrontError`` when none answers."""
        deadline = time.monotonic() + timeout
        while True:
            info = ensure_warm(self.settings, self.options, max(0.1, deadline - time.monotonic()))
            if info is None:
                raise FrontError("no warm process could be started for the workspace")
            try:
                conn = open_stream(info, {"settings": self._digest, "shared": self.shared, "scope": self.scope},
                                   STREAM_TIMEOUT)
            except (OSError, BridgeError) as exc:
                log.info("the warm process %d did not take the stream: %s", info.pid, loggable(str(exc)))
                if time.monotonic() >= deadline:
                    raise FrontError(f"the warm process refused: {exc}") from None
                time.sleep(0.1)
                continue
            log.info("forwarding to warm process %d (port %d)", info.pid, info.port)
            return conn

    def start(self) -> None:
        """Reach the warm process before reading the client (``FrontError`` when none answers)."""
        if self._conn is None:
            self._conn = self.connect()

    def run(self) -> int:
        """Forward until stdin ends (0), or until no warm process can be reached again (1)."""
        self.start()
        reader = threading.Thread(target=self._from_warm, name="mcp-memory-front", daemon=True)
        reader.start()
        try:
            for line in self.stdin:
                self._from_client(line)
        except (OSError, ValueError):
            pass  # stdin closed under us
        with self._state:
            self._closing = True
            # The client hung up: let the answers to what it asked arrive, then end the stream.
            self._state.wait_for(lambda: not self._pending, timeout=10.0)
        self._shutdown()
        reader.join(timeout=5.0)
        return 0 if not self._failed else 1

    # ----- client -> warm ----------------------------------------------------------------------
    def _from_client(self, line: bytes) -> None:
        message = _parse(line)
        # Tracked and sent under one lock: a reconnection replays either before or after it.
        with self._send_lock:
            if isinstance(message, dict):
                line = self._track(message, line)
            self._send(line)

    def _track(self, message: dict[str, Any], line: bytes) -> bytes:
        method, request_id = message.get("method"), message.get("id")
        if method == "tools/call" and request_id is not None and isinstance(message.get("params"), dict):
            params = message["params"]
            meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
            message = {**message, "params": {**params, "_meta": {**meta, CALL_KEY: uuid.uuid4().hex}}}
            line = json.dumps(message, ensure_ascii=True).encode("ascii") + b"\n"
        with self._state:
            if method == "initialize" and request_id is not None:
                self._initialize = message
            elif method == "notifications/initialized":
                self._initialized = line
            elif method in REPLAYED and request_id is not None:
                params = message.get("params")
                uri = params.get("uri", "") if isinstance(params, dict) else ""
                self._replayed[f"{method} {uri}"] = message
            if isinstance(method, str) and _is_id(request_id):
                self._pending[request_id] = line
        return line

    def _send(self, line: bytes) -> None:
        """Send a line (the send lock held); lost when the connection is down, as notifications
        may be: requests stay pending and are sent again once reconnected."""
        conn = self._conn
        if conn is None:
            return
        try:
            conn.sendall(line if line.endswith(b"\n") else line + b"\n")
        except OSError:
            pass  # the reader notices the broken connection and reconnects

    # ----- warm -> client ----------------------------------------------------------------------
    def _from_warm(self) -> None:
        while True:
            conn = self._conn
            if conn is None:
                return
            try:
                with conn.makefile("rb") as lines:
                    for line in lines:
                        self._to_client(line)
            except OSError:
                pass
            with self._state:
                if self._closing and not self._pending:
                    return
            log.warning("the warm process went away; finding another")
            if not self._reconnect():
                self._fail_pending()
                return

    def _to_client(self, line: bytes) -> None:
        message = _parse(line)
        if isinstance(message, dict) and "method" not in message and _is_id(message.get("id")):
            if isinstance(message["id"], str) and message["id"].startswith(_PRIVATE_ID):
                return  # the answer to a replayed request: the client had its own long ago
            with self._state:
                self._pending.pop(message["id"], None)
                self._state.notify_all()
        with self._out_lock:
            self.stdout.write(line)
            self.stdout.flush()

    def _reconnect(self) -> bool:
        with self._send_lock:
            old, self._conn = self._conn, None
        if old is not None:
            old.close()
        for _ in range(3):
            try:
                conn = self.connect()
            except FrontError as exc:
                log.error("no warm process to forward to: %s", exc)
                return False
            with self._send_lock:  # nothing from the client goes out while the session is replayed
                try:
                    self._replay(conn)
                except OSError as exc:
                    log.warning("replaying the session failed: %s", exc)
                    conn.close()
                    continue
                self._conn = conn
            return True
        return False

    def _replay(self, conn: socket.socket) -> None:
        """Bring the new warm process to where the old one was, then send what is unanswered."""
        with self._state:
            initialize, initialized = self._initialize, self._initialized
            replayed = list(self._replayed.values())
            pending = list(self._pending.values())
            answered = initialize is not None and initialize.get("id") not in self._pending
        if answered and initialize is not None:
            # The client has its answer: initialize again under a private id, answer dropped.
            with conn.makefile("rb") as lines:
                conn.sendall(self._private_line(initialize))
                lines.readline()  # a new session sends nothing before this answer
            if initialized is not None:
                conn.sendall(initialized)
            for request in replayed:
                conn.sendall(self._private_line(request))
        for line in pending:  # in the order the client sent them (its initialize first, if unanswered)
            conn.sendall(line)

    def _private_line(self, request: dict[str, Any]) -> bytes:
        self._private += 1
        return json.dumps({**request, "id": f"{_PRIVATE_ID}{self._private}"}, ensure_ascii=True).encode() + b"\n"

    def _fail_pending(self) -> None:
        self._failed = True
        with self._state:
            pending, self._pending = list(self._pending), {}
        for request_id in pending:
            error = {"jsonrpc": "2.0", "id": request_id,
                     "error": {"code": -32603, "message": "the memory server went away and could not be restarted"}}
            with self._out_lock:
                self.stdout.write(json.dumps(error).encode() + b"\n")
                self.stdout.flush()

    def _shutdown(self) -> None:
        conn = self._conn
        if conn is not None:
            try:
                conn.shutdown(socket.SHUT_WR)
            except OSError:
                pass


def _parse(line: bytes) -> Any:
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None


def _is_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))
