"""The thin stdio front: ``mcp-memory serve`` over stdio, forwarding to the warm process.

An MCP client spawns ``mcp-memory serve`` and talks JSON-RPC lines over its stdin and stdout.
With a warm process for the workspace (``warm.py``), this process only carries those lines to
it and back over an authenticated loopback stream, so it loads neither the MCP SDK nor the
index nor a model: a few megabytes and a fraction of a second, however many clients run.

A client is ready at once: the opening requests (``initialize`` or ``server/discover``, ``ping``
and the lists of tools, prompts, resources and resource templates) are answered here, from
``server/listing.json``, the answers the server itself gives (recorded by
``server/listing.py``), while the warm process starts in the background. Every other request
waits for it and is then forwarded; the warm process still gets the client's ``initialize``
first (under a private id, its reply dropped), so its session is the client's. Without a
listing that fits the installed package and SDK, everything is forwarded, as it would be
answered.

When the warm process goes away (killed, upgraded, idle exit racing a new client), the front
finds or starts another, replays the client's ``initialize`` (its reply is not passed on: the
client has one), its subscriptions and log level, then sends again every request still
unanswered. A repeated ``tools/call`` carries the key it carried the first time
(``_meta["io.mcp-memory/call"]``), and a warm process answers a key it has seen with the result
it recorded (``server/once.py``), so a write is neither lost nor done twice. When no warm
process can be started, each waiting request gets a JSON-RPC error saying so, the front keeps
reading, and the next request tries again.

What the client sees stays protocol: nothing but JSON-RPC lines reaches stdout, logs go to
stderr. Unreadable lines are forwarded as they are, and the warm process answers them.
"""

from __future__ import annotations

import json
import logging
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from mcp_memory import __version__
from mcp_memory.config import Settings
from mcp_memory.runtime.bridge import BridgeError, loggable, open_stream
from mcp_memory.runtime.warm import CALL_KEY, LOG_FILE, ensure_warm, find_warm, settings_digest, start_warm

log = logging.getLogger(__name__)

START_TRIES = 2  # warm processes started again after the one started first died before listening
START_TIMEOUT = 30.0  # seconds to find or start a warm process before giving up
STREAM_TIMEOUT = 5.0
ANSWER_TIMEOUT = 10.0  # seconds to let the warm process answer once the client has hung up
REPLAYED = ("resources/subscribe", "resources/unsubscribe", "logging/setLevel")
_PRIVATE_ID = "mcp-memory-front-"
LISTING_PATH = Path(__file__).parents[1] / "server" / "listing.json"  # read as a file: the package imports the SDK
SDK_PACKAGE = "mcp"
PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
LISTS = frozenset({"tools/list", "prompts/list", "resources/list", "resources/templates/list"})
SERVER_ERROR = -32603


class FrontError(RuntimeError):
    """No warm process could be reached (the caller serves in-process instead, or gives up)."""


# ----- the opening answers ------------------------------------------------------------------------
@dataclass(frozen=True)
class Listing:
    """The server's answers to a client's opening requests, per protocol version (``listing.json``)."""

    handshake_versions: tuple[str, ...]
    latest_handshake_version: str
    modern_versions: tuple[str, ...]
    versions: dict[str, dict[str, int]]  # protocol version -> method -> index in answers
    answers: list[Any]

    @classmethod
    def load(cls, path: Path = LISTING_PATH) -> Listing | None:
        """The listing, or None when it is missing, unreadable or recorded for another package or SDK."""
        try:
            data = json.loads(path.read_bytes())
            listing = cls(tuple(data["handshake_versions"]), data["latest_handshake_version"],
                          tuple(data["modern_versions"]), data["versions"], data["answers"])
            package, sdk = data["package_version"], data["sdk_version"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.info("no listing to answer from (%s): clients wait for the warm process", exc)
            return None
        if package != __version__ or not _sdk_is(sdk):
            log.info("the listing was recorded for mcp-memory %s with MCP SDK %s, not what is installed: "
                     "clients wait for the warm process", package, sdk)
            return None
        return listing

    def result(self, version: str, method: str) -> Any:
        """The recorded result of ``method`` at ``version`` (None when none was recorded)."""
        index = self.versions.get(version, {}).get(method)
        return None if index is None else self.answers[index]

    def negotiate(self, params: Any) -> str | None:
        """The version the server settles on for these ``initialize`` params, as the SDK does it
        (the one asked for when it speaks it, else its latest); None for params it would refuse."""
        if not isinstance(params, Mapping):
            return None
        requested, capabilities, info = params.get("protocolVersion"), params.get("capabilities"), \
            params.get("clientInfo")
        if not (isinstance(requested, str) and isinstance(capabilities, Mapping) and isinstance(info, Mapping)):
            return None
        if not (isinstance(info.get("name"), str) and isinstance(info.get("version"), str)):
            return None
        if any(value is not None and not isinstance(value, Mapping) for value in capabilities.values()):
            return None
        return requested if requested in self.handshake_versions else self.latest_handshake_version


class Opening:
    """Answers a client's opening requests from a ``Listing``, following the protocol era the
    server would: the first request decides it (``initialize``, or none with the 2026 envelope,
    opens a handshake session; a request with the envelope opens a per-request one)."""

    def __init__(self, listing: Listing):
        self.listing = listing
        self.era: str | None = None  # "handshake" or "modern", once the first request came
        self.version: str | None = None  # the handshake version settled by a local initialize

    def answer(self, message: dict[str, Any]) -> Any:
        """The result for this request, or None to forward it to the warm process."""
        method, params = message.get("method"), message.get("params")
        if not _is_request(message) or not isinstance(method, str):
            return None  # a line the server refuses, or not a request: the warm process answers it
        enveloped = _has_envelope(params)
        if self.era is None:
            self.era = "modern" if enveloped and method != "initialize" else "handshake"
        if self.era == "modern":
            version = self._modern_version(params)
            return None if version is None or not _plain_params(params) else self.listing.result(version, method)
        if method == "initialize":
            self.version = self.listing.negotiate(params)
            return None if self.version is None else self.listing.result(self.version, method)
        if enveloped or not _plain_params(params):
            return None  # refused on a handshake session: the warm process says how
        if method == "ping":
            return self.listing.result(self.version or self.listing.latest_handshake_version, method)
        if method in LISTS and self.version is not None:
            return self.listing.result(self.version, method)
        return None

    def _modern_version(self, params: Any) -> str | None:
        meta = params.get("_meta") if isinstance(params, Mapping) else None
        if not isinstance(meta, Mapping) or CLIENT_CAPABILITIES_KEY not in meta:
            return None
        version = meta.get(PROTOCOL_VERSION_KEY)
        return version if isinstance(version, str) and version in self.listing.modern_versions else None


def _sdk_is(version: str) -> bool:
    """Whether the MCP SDK this interpreter would import is ``version`` (a few stats, no import)."""
    for entry in sys.path:
        folder = Path(entry or ".")
        if (folder / SDK_PACKAGE / "__init__.py").is_file():
            return (folder / f"{SDK_PACKAGE}-{version}.dist-info").is_dir()
    return False


def _is_request(message: dict[str, Any]) -> bool:
    """A well-formed JSON-RPC 2.0 request, nothing more (anything else is the server's to refuse)."""
    return (message.get("jsonrpc") == "2.0" and _is_id(message.get("id"))
            and set(message) <= {"jsonrpc", "id", "method", "params"})


def _has_envelope(params: Any) -> bool:
    meta = params.get("_meta") if isinstance(params, Mapping) else None
    return isinstance(meta, Mapping) and PROTOCOL_VERSION_KEY in meta


def _plain_params(params: Any) -> bool:
    """Params a list request may carry and the server reads as none: absent, or ``_meta`` and a cursor."""
    if params is None:
        return True
    if not isinstance(params, Mapping) or not set(params) <= {"_meta", "cursor"}:
        return False
    meta, cursor = params.get("_meta", {}), params.get("cursor", "")
    token = meta.get("progressToken", 0) if isinstance(meta, Mapping) else None
    return isinstance(meta, Mapping) and isinstance(cursor, str) and _is_id(token)


# ----- the front ----------------------------------------------------------------------------------
class Front:
    """Carries one client's JSON-RPC lines between stdin/stdout and the warm process.

    ``listing`` is what the opening requests are answered from: True for the shipped one (when it
    fits what is installed), a ``Listing``, or False or None to forward every request.
    """

    def __init__(self, settings: Settings, options: list[str], shared: bool,
                 stdin: IO[bytes] | None = None, stdout: IO[bytes] | None = None, scope: str | None = None,
                 listing: Listing | bool | None = True):
        self.settings = settings
        self.options = options
        self.shared = shared
        self.scope = scope  # this client's default scope: sent with the stream, not part of the settings digest
        self.stdin = stdin or sys.stdin.buffer
        self.stdout = stdout or sys.stdout.buffer
        loaded = Listing.load() if listing is True else listing if isinstance(listing, Listing) else None
        self._opening = Opening(loaded) if loaded is not None else None
        self._digest = settings_digest(settings)
        self._conn: socket.socket | None = None
        self._child: subprocess.Popen[bytes] | None = None  # the warm process this front started
        self._failed = False  # the last attempt to reach a warm process failed
        self._send_lock = threading.Lock()
        self._out_lock = threading.Lock()
        self._state = threading.Condition()
        self._initialize: dict[str, Any] | None = None
        self._initialized: bytes | None = None
        self._replayed: dict[str, dict[str, Any]] = {}  # method (+ uri) -> the last such request
        self._pending: dict[Any, bytes] = {}  # request id -> the line sent, until answered
        self._held: list[bytes] = []  # notifications and unreadable lines while no warm process is reached
        self._linking = True  # a connection is being sought (until connected, or failed)
        self._closing = False
        self._private = 0

    # ----- running -------------------------------------------------------------------------
    def connect(self, timeout: float = START_TIMEOUT) -> socket.socket:
        """A stream to a warm process (started if needed); ``FrontError`` when none answers."""
        deadline = time.monotonic() + timeout
        tries = 0
        while True:
            started, self._child = self._child, None  # waited for once; a later attempt starts anew
            info = ensure_warm(self.settings, self.options, max(0.1, deadline - time.monotonic()), started)
            if info is None and started is not None and tries < START_TRIES and time.monotonic() < deadline:
                # The process this front started died before listening (killed, say): start another,
                # a few times at most, so a warm process that cannot start fails the call quickly.
                tries += 1
                continue
            if info is None:
                raise FrontError(f"no warm process could be started for the workspace (see "
                                 f"{self.settings.index_dir / LOG_FILE})")
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
        """Make sure a warm process is there or on its way; ``FrontError`` when none can be.

        With a listing the client is answered at once, so this only starts the warm process
        (without waiting for it to listen); without one, it reaches it before the client is read.
        """
        if self._conn is not None or self._child is not None:
            return
        if self._opening is None:
            self._conn = self.connect()
            self._linking = False
            return
        if not self.settings.warm.enabled:
            raise FrontError("warm processes are turned off")
        if find_warm(self.settings) is not None:
            return
        if not self.settings.workspace.is_dir():
            raise FrontError(f"the workspace {self.settings.workspace} is not a folder")
        try:
            self._child = start_warm(self.settings, self.options)
        except OSError as exc:
            raise FrontError(f"could not start a warm process: {exc}") from None

    def run(self) -> int:
        """Forward until stdin ends: 0, or 1 when the last attempt to reach a warm process failed."""
        self.start()
        link = threading.Thread(target=self._link, name="mcp-memory-front", daemon=True)
        link.start()
        try:
            for line in self.stdin:
                self._from_client(line)
        except (OSError, ValueError):
            pass  # stdin closed under us
        with self._state:
            self._closing = True
            self._state.notify_all()
            # The client hung up: let the answers to what it asked arrive (once the warm process
            # is reached, if it is still starting), then end the stream.
            self._state.wait_for(lambda: not self._pending or not self._linking, timeout=START_TIMEOUT)
            self._state.wait_for(lambda: not self._pending, timeout=ANSWER_TIMEOUT)
            linking = self._linking
        self._shutdown()
        if not linking:  # a link still looking for a warm process has nothing left to carry: not waited for
            link.join(timeout=5.0)
        return 0 if not self._failed else 1

    # ----- client -> warm ----------------------------------------------------------------------
    def _from_client(self, line: bytes) -> None:
        message = _parse(line)
        if isinstance(message, dict) and self._opening is not None:
            result = self._opening.answer(message)
            if result is not None:
                self._answer_here(message, result)
                return
        # Tracked and sent under one lock: a reconnection replays either before or after it.
        with self._send_lock:
            if isinstance(message, dict):
                line = self._track(message, line)
            if self._conn is not None:
                self._send(line)
            elif _held_while_away(message):
                with self._state:
                    self._held.append(line)

    def _answer_here(self, message: dict[str, Any], result: Any) -> None:
        """Answer an opening request from the listing; an ``initialize`` also reaches the warm
        process (now, or when it is reached), under a private id, so its session is set up."""
        if message.get("method") == "initialize":
            with self._send_lock:
                with self._state:
                    self._initialize = message
                if self._conn is not None:
                    self._send(self._private_line(message))
        reply = {"jsonrpc": "2.0", "id": message["id"], "result": result}
        self._write(json.dumps(reply, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n")

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
                self._state.notify_all()
        return line

    def _send(self, line: bytes) -> None:
        """Send a line (the send lock held); lost when the connection breaks, as notifications
        may be: requests stay pending and are sent again once reconnected."""
        conn = self._conn
        if conn is None:
            return
        try:
            conn.sendall(line if line.endswith(b"\n") else line + b"\n")
        except OSError:
            pass  # the link notices the broken connection and reconnects

    # ----- warm -> client ----------------------------------------------------------------------
    def _link(self) -> None:
        """Reach a warm process, carry its lines to the client, and reach another when it goes:
        until the client has hung up and everything it asked is answered."""
        while True:
            conn = self._conn if self._conn is not None else self._establish()
            if conn is None:
                if not self._wait_for_work():
                    return
                continue
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
            with self._send_lock:
                self._conn = None
            conn.close()

    def _to_client(self, line: bytes) -> None:
        message = _parse(line)
        if isinstance(message, dict) and "method" not in message and _is_id(message.get("id")):
            if isinstance(message["id"], str) and message["id"].startswith(_PRIVATE_ID):
                return  # the answer to a replayed request: the client had its own long ago
            with self._state:
                self._pending.pop(message["id"], None)
                self._state.notify_all()
        self._write(line)

    def _write(self, line: bytes) -> None:
        with self._out_lock:
            self.stdout.write(line)
            self.stdout.flush()

    def _establish(self) -> socket.socket | None:
        """Connect and bring the warm process to where the client is; None (every waiting request
        answered with an error) when no warm process can be reached."""
        with self._state:
            self._linking = True
        error = "no attempt"
        for _ in range(3):
            try:
                conn = self.connect()
            except FrontError as exc:
                error = str(exc)
                break
            with self._send_lock:  # nothing from the client goes out while the session is replayed
                try:
                    self._replay(conn)
                except OSError as exc:
                    error = f"replaying the session failed: {exc}"
                    conn.close()
                    continue
                self._conn = conn
            with self._state:
                self._failed = self._linking = False
                self._state.notify_all()
            return conn
        log.error("no warm process to forward to: %s", error)
        self._fail_pending(f"the memory server could not be started: {error}")
        return None

    def _wait_for_work(self) -> bool:
        """After a failure: wait for the next request to try again (False when the client hung up
        with nothing waiting)."""
        with self._state:
            self._state.wait_for(lambda: bool(self._pending) or self._closing)
            return bool(self._pending)

    def _replay(self, conn: socket.socket) -> None:
        """Bring the new warm process to where the client is, then send what is unanswered."""
        with self._state:
            initialize, initialized = self._initialize, self._initialized
            replayed = list(self._replayed.values())
            pending = dict(self._pending)
            held, self._held = self._held, []
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
        opening = None if answered or initialize is None else pending.get(initialize.get("id"))
        for line in pending.values():  # in the order the client sent them (its initialize first, if unanswered)
            conn.sendall(line)
            if line is opening and initialized is not None:
                conn.sendall(initialized)  # sent while no warm process was reached: it follows its initialize
        for line in held:
            conn.sendall(line if line.endswith(b"\n") else line + b"\n")

    def _private_line(self, request: dict[str, Any]) -> bytes:
        self._private += 1
        return json.dumps({**request, "id": f"{_PRIVATE_ID}{self._private}"}, ensure_ascii=True).encode() + b"\n"

    def _fail_pending(self, reason: str) -> None:
        with self._state:
            self._failed, self._linking = True, False
            pending, self._pending, self._held = list(self._pending), {}, []
            self._state.notify_all()
        for request_id in pending:
            error = {"jsonrpc": "2.0", "id": request_id, "error": {"code": SERVER_ERROR, "message": reason}}
            self._write(json.dumps(error).encode() + b"\n")

    def _shutdown(self) -> None:
        conn = self._conn
        if conn is not None:
            try:
                conn.shutdown(socket.SHUT_WR)
            except OSError:
                pass


def _held_while_away(message: Any) -> bool:
    """Whether a line the client sends while no warm process is reached waits for one: not a
    request (kept as pending), not ``initialized`` (replayed), not a reply to a server's request
    (that server is gone); so notifications, and lines the warm process will answer as unreadable."""
    if not isinstance(message, dict):
        return True
    if isinstance(message.get("method"), str):
        return message.get("method") != "notifications/initialized" and not _is_id(message.get("id"))
    return "result" not in message and "error" not in message


def _parse(line: bytes) -> Any:
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None


def _is_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))

