"""A loopback side door through which hooks reach a running server of the same workspace.

Client hooks (Claude Code's ``UserPromptSubmit`` and ``Stop``) run as fresh processes on
every turn. Loading the vector index and the embedding model takes seconds, more than a
prompt hook may add, while the MCP server the same client started has them warm. So every
``mcp-memory serve`` also listens on 127.0.0.1 on a random port and writes
``<index_dir>/bridges/<pid>.json`` (readable by the user only): pid, port, a random token
and the identity of the process (boot id and start time, where ``/proc`` tells them). When
no server answers, the hook falls back to working in-process (keyword-only for recall).

The warm process of a workspace (``processes/warm_server.py``) runs the same bridge with one more
operation: a request ``{"op": "stream", ...}`` that it accepts turns its connection, after the
proven reply, into a stream of MCP JSON-RPC lines to and from a stdio front (``front.py``).

Protocol: one connection, three lines of ASCII JSON.

1. server → hook: ``{"bridge": "mcp-memory", "v": 2, "challenge": C}``
2. hook → server: ``{"nonce": N, "body": B, "mac": M}``
3. server → hook: ``{"body": R, "mac": P}``, or ``{"ok": false, "error": ...}`` without a
   proof when the request was refused before it was authenticated.

C and N are 32 fresh random hex digits (one per connection, one per request), B and R the
request and the reply as JSON text, and, with the token as key,
``M = HMAC-SHA256("mcp-memory bridge request" C N B)`` and
``P = HMAC-SHA256("mcp-memory bridge reply" C N R)`` (parts joined by newlines).

Threat model: anything local may connect to the port, and once a server is gone anything
may listen on the port its file still names, or run under the pid it records.

* Who is asked. A hook believes a file only when its pid is alive and, where ``/proc``
  exists, is still the process that wrote it (same boot, same start time), so a recycled
  pid or a file left by a crash (``kill -9``) is not believed, and is removed. A live
  server holds its port, and removes its file before it frees the port.
* The token never travels. A listener that does not know it sees a MAC bound to its own
  challenge and to the hook's nonce: a real server issues a fresh challenge on every
  connection, so the request is good on that one connection only, and nothing it saw is a
  valid reply either (another label). Without the token it cannot forge a reply; a reply
  without a valid proof over the hook's fresh nonce is discarded, so old replies cannot be
  replayed. Even a proven reply is treated as data: recall sends memories as fields that
  the hook checks and frames itself, exactly like in-process recall.
* What it does not hide: the request (the prompt) travels in clear over loopback. Only the
  identity check above keeps it from reaching anything but the server that wrote the file.
* Exhaustion. At most ``MAX_CONNECTIONS`` connections are served at once; more are closed
  at once, without a thread. A connection has ``REQUEST_DEADLINE`` seconds in total to
  deliver its request, however it dribbles. When the process runs out of file descriptors,
  accepting backs off and logs once in a while. The bridge therefore never holds more than
  a few dozen descriptors or threads, whatever the clients do, and cannot starve the MCP
  transport it shares the process with; a hook that finds it busy works in-process.
* Bad input (not JSON, not an object, nested too deep, wrong types, an unknown operation)
  gets a JSON error reply; the bridge keeps serving.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import selectors
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, TypeGuard

log = logging.getLogger(__name__)

BRIDGE_DIRNAME = "bridges"
STREAM_OP = "stream"  # a request that turns its connection into an MCP stream (warm process only)
PROTOCOL_VERSION = 2
MAX_REQUEST_BYTES = 1024 * 1024  # transcripts travel by path, so requests are small
MAX_REPLY_BYTES = 8 * 1024 * 1024
MAX_GREETING_BYTES = 1024
MAX_CONNECTIONS = 16  # connections served at once; hooks make one each, and briefly
REQUEST_DEADLINE = 1.0  # seconds from accept to a complete request line: a hook sends at once
REPLY_SEND_TIMEOUT = 10.0  # a reader that stops reading cannot hold a thread longer
CONNECT_TIMEOUT = 0.5
GREETING_TIMEOUT = 1.0
LISTEN_BACKLOG = 128
ACCEPT_BACKOFF_MIN, ACCEPT_BACKOFF_MAX = 0.05, 1.0
LOG_INTERVAL = 60.0  # repeated bridge troubles are logged at most this often
NONCE_HEX = 32
MAC_HEX = 64
_REQUEST_LABEL = b"mcp-memory bridge request"
_REPLY_LABEL = b"mcp-memory bridge reply"
_OUT_OF_RESOURCES = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}

Handler = Callable[[dict[str, Any]], dict[str, Any]]


class StreamHandler(Protocol):
    """Takes over connections that asked for an MCP stream (the warm process)."""

    def refusal(self, request: dict[str, Any]) -> str | None:
        """Why the stream ``request`` asks for cannot be served (None: it can)."""

    def __call__(self, conn: socket.socket, request: dict[str, Any]) -> None:
        """Serve ``conn`` (now the handler's to close); must return promptly."""


class BridgeError(ValueError):
    """A bridge exchange that cannot go on: bad input from the other side, or a refusal."""


class _LineTooLong(BridgeError):
    pass


# ----- server side ----------------------------------------------------------------------------
class BridgeServer:
    """Answers hook requests with ``handler`` on a loopback port, one thread per connection.

    ``handler`` gets the authenticated request object (its ``op`` a string) and returns the
    reply fields; a ``ValueError`` it raises is a bad request, answered with its message.
    """

    def __init__(self, index_dir: Path, handler: Handler, max_connections: int = MAX_CONNECTIONS,
                 request_deadline: float = REQUEST_DEADLINE, streams: StreamHandler | None = None,
                 about: dict[str, Any] | None = None):
        self.folder = Path(index_dir) / BRIDGE_DIRNAME
        self.handler = handler
        self.streams = streams  # takes over authenticated "stream" connections (the warm process)
        self.about = dict(about or {})  # more fields for the bridge file (role, settings digest)
        self.token = secrets.token_urlsafe(24)
        self.info_path = self.folder / f"{os.getpid()}.json"
        self.max_connections = max_connections
        self.request_deadline = request_deadline
        self._slots = threading.BoundedSemaphore(max_connections)
        self._stopping = threading.Event()
        self._listener: socket.socket | None = None
        self._wake: tuple[socket.socket, socket.socket] | None = None
        self._thread: threading.Thread | None = None
        self._accept_trouble = _Throttle(LOG_INTERVAL)
        self._busy = _Throttle(LOG_INTERVAL)
        self._refused = _Throttle(LOG_INTERVAL)

    @property
    def port(self) -> int:
        if self._listener is None:
            raise RuntimeError("the bridge is not listening")
        return int(self._listener.getsockname()[1])

    def start(self) -> BridgeServer:
        listener = _listen_loopback()
        try:
            self._wake = socket.socketpair()
            self._listener = listener
            self._thread = threading.Thread(target=self._accept_loop, name="mcp-memory-bridge", daemon=True)
            self._thread.start()
            self.folder.mkdir(parents=True, exist_ok=True)
            _write_private(self.info_path, json.dumps({
                **self.about, "pid": os.getpid(), "port": self.port, "token": self.token,
                "identity": process_identity(os.getpid()), "started": time.time(), "uid": _uid(),
            }))
        except BaseException:
            self.stop()
            listener.close()
            raise
        log.info("hook bridge listening on 127.0.0.1:%d", self.port)
        return self

    def stop(self) -> None:
        # The file goes first: no hook may be sent to a port that is about to be free.
        _unlink(self.info_path)
        self._stopping.set()
        if self._wake is not None:
            try:
                self._wake[1].send(b"x")
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        for sock in (self._listener, *(self._wake or ())):
            if sock is not None:
                sock.close()
        self._listener = None
        self._wake = None

    # ----- accepting
    def _accept_loop(self) -> None:
        assert self._listener is not None and self._wake is not None
        backoff = 0.0
        with selectors.DefaultSelector() as selector:
            selector.register(self._listener, selectors.EVENT_READ)
            selector.register(self._wake[0], selectors.EVENT_READ)
            while not self._stopping.is_set():
                selector.select()
                if self._stopping.is_set():
                    break
                try:
                    conn, _ = self._listener.accept()
                except (BlockingIOError, InterruptedError):
                    continue  # another wake-up, or the client gave up before we accepted
                except OSError as exc:
                    # Out of descriptors (EMFILE) the connection stays queued and the listener
                    # readable: retrying at once would spin and flood the log.
                    backoff = min(max(backoff * 2, ACCEPT_BACKOFF_MIN), ACCEPT_BACKOFF_MAX)
                    self._report_accept_error(exc)
                    self._stopping.wait(backoff)
                    continue
                backoff = 0.0
                self._admit(conn)

    def _report_accept_error(self, exc: OSError) -> None:
        suppressed = self._accept_trouble.due()
        if suppressed is None:
            return
        kind = "out of resources" if exc.errno in _OUT_OF_RESOURCES else "error"
        more = f"; {suppressed} more since the last report" if suppressed else ""
        log.warning("hook bridge cannot accept connections (%s: %s); backing off%s", kind, exc, more)

    def _admit(self, conn: socket.socket) -> None:
        """Serve ``conn`` on a thread of its own if a slot is free; else close it at once."""
        if not self._slots.acquire(blocking=False):
            _close(conn)
            suppressed = self._busy.due()
            if suppressed is not None:
                log.info("hook bridge busy: closed connections over %d at once (%d more since the last report)",
                         self.max_connections, suppressed)
            return
        accepted = time.monotonic()
        try:
            threading.Thread(target=self._serve, args=(conn, accepted), name="mcp-memory-bridge-conn",
                             daemon=True).start()
        except RuntimeError:  # no thread to be had: the connection goes, the bridge stays
            self._slots.release()
            _close(conn)

    # ----- one connection
    def _serve(self, conn: socket.socket | None, accepted: float) -> None:
        assert conn is not None
        stream: dict[str, Any] | None = None
        try:
            challenge = secrets.token_hex(NONCE_HEX // 2)
            deadline = accepted + self.request_deadline
            _send_line(conn, {"bridge": "mcp-memory", "v": PROTOCOL_VERSION, "challenge": challenge}, deadline)
            try:
                line = _read_line(conn, MAX_REQUEST_BYTES, deadline)
            except TimeoutError:
                reply = self._refusal(f"no complete request within {self.request_deadline:g} s")
            except _LineTooLong:
                reply = self._refusal("request too large")
            else:
                reply, stream = self._answer(line, challenge)
            _send_line(conn, reply, time.monotonic() + REPLY_SEND_TIMEOUT)
            if stream is not None and self.streams is not None:
                # The connection now carries MCP messages: it is the stream handler's to close.
                conn.settimeout(None)
                handed, conn = conn, None
                self.streams(handed, stream)
        except OSError:
            pass  # the client went away, or stopped reading
        except Exception:  # a bug must not end the bridge, nor leak the slot
            log.warning("hook bridge connection failed", exc_info=True)
        finally:
            if conn is not None:
                _close(conn)
            self._slots.release()

    def _answer(self, line: bytes, challenge: str) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """The reply line to one request line (a refusal, or a reply with its proof), and the
        request when it opened a stream."""
        try:
            envelope = _loads_object(line)
        except BridgeError as exc:
            return self._refusal(f"bad request: {exc}"), None
        nonce, body, mac = envelope.get("nonce"), envelope.get("body"), envelope.get("mac")
        if not (_is_hex(nonce, NONCE_HEX) and isinstance(body, str) and _is_hex(mac, MAC_HEX)):
            return self._refusal("bad request: expected nonce, body and mac (see mcp_memory.runtime.bridge)"), None
        if not hmac.compare_digest(_mac(self.token, _REQUEST_LABEL, challenge, nonce, body), mac):
            return self._refusal("bad token"), None
        # Authenticated from here on: every reply carries a proof.
        reply, request = self._run(body)
        stream = request if reply.get("ok") is True and reply.get("stream") is True else None
        return self._sealed(reply, challenge, nonce), stream

    def _run(self, body: str) -> tuple[dict[str, Any], dict[str, Any]]:
        try:
            request = _loads_object(body)
        except BridgeError as exc:
            return {"ok": False, "error": f"bad request: {exc}"}, {}
        return self._reply_to(request), request

    def _reply_to(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request.get("op")
        if not isinstance(op, str):
            return {"ok": False, "error": "bad request: op must be a string"}
        if op == STREAM_OP:
            if self.streams is None:
                return {"ok": False, "error": "this server takes no streams"}
            refusal = self.streams.refusal(request)
            return {"ok": False, "error": refusal} if refusal else {"ok": True, "stream": True}
        try:
            result = self.handler(request)
        except ValueError as exc:  # a request the handler cannot answer as asked: no traceback
            log.info("bridge request %s refused: %s", loggable(op, 40), loggable(str(exc)))
            return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        except Exception as exc:  # the hook falls back; the server keeps serving
            log.warning("bridge request %s failed: %s", loggable(op, 40), exc, exc_info=True)
            return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        if not isinstance(result, dict):
            return {"ok": False, "error": "the server's answer is not an object"}
        return {**result, "ok": True}

    def _sealed(self, reply: dict[str, Any], challenge: str, nonce: str) -> dict[str, Any]:
        try:
            body = json.dumps(reply, ensure_ascii=True)
        except (TypeError, ValueError) as exc:
            body = json.dumps({"ok": False, "error": f"the answer cannot be sent: {exc}"})
        if len(body) > MAX_REPLY_BYTES - 256:
            body = json.dumps({"ok": False, "error": "the answer is too large to send"})
        return {"body": body, "mac": _mac(self.token, _REPLY_LABEL, challenge, nonce, body)}

    def _refusal(self, error: str) -> dict[str, Any]:
        suppressed = self._refused.due()
        if suppressed is not None:
            log.info("hook bridge refused a request: %s (%d more since the last report)", error, suppressed)
        return {"ok": False, "error": error}


def _listen_loopback() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        if hasattr(socket, "SO_EXCLUSIVEADDRUSE"):  # Windows: no other socket may bind this port too
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_EXCLUSIVEADDRUSE, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen(LISTEN_BACKLOG)
        sock.setblocking(False)  # the accept loop waits in select; accept itself must never block
    except BaseException:
        sock.close()
        raise
    return sock


# ----- client side ----------------------------------------------------------------------------
@dataclass(frozen=True)
class BridgeInfo:
    """What a bridge file says: who wrote it and where it listens."""

    path: Path
    pid: int
    port: int
    token: str
    identity: str | None
    role: str = "server"  # "warm": the shared warm process of the workspace (it takes streams)
    settings: str = ""  # digest of the settings it serves with (warm processes only)
    started: float = 0.0  # when it started (seconds since the epoch)


def call_bridge(index_dir: Path, request: dict[str, Any], timeout: float = 5.0,
                settings_digest: str | None = None) -> dict[str, Any] | None:
    """Send ``request`` to a running server of this index; its proven reply, or None.

    None when no believable server answers within ``timeout`` seconds in all, or when the
    one that answers refuses (``ok`` false): the caller then works in-process. With
    ``settings_digest``, a warm process serving other settings is not asked. Warm processes
    are asked first: they hold the memory for every client of the workspace.
    """
    deadline = time.monotonic() + timeout
    infos = bridge_infos(Path(index_dir) / BRIDGE_DIRNAME)
    infos.sort(key=lambda info: info.role != "warm")  # stable: newest first within each kind
    for info in infos:
        if settings_digest is not None and info.role == "warm" and info.settings != settings_digest:
            continue
        state = owner_state(info)
        if state != "alive":
            if state == "stale":
                _unlink(info.path)
            log.info("bridge file %s not believed (%s)", info.path.name, state)
            continue
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        try:
            reply = exchange(info.port, info.token, request, remaining)
        except (OSError, BridgeError) as exc:
            log.info("bridge at port %d did not answer: %s", info.port, loggable(str(exc) or type(exc).__name__))
            continue
        if reply.get("ok") is True:
            return reply
        log.info("bridge at port %d refused: %s", info.port, loggable(reply.get("error")))
    return None


def exchange(port: int, token: str, request: dict[str, Any], timeout: float) -> dict[str, Any]:
    """One request to the bridge at ``port``: its reply object, proven to come from ``token``'s holder.

    Raises ``BridgeError`` (a refusal, or a reply without a valid proof) or ``OSError``.
    """
    deadline = time.monotonic() + timeout
    with socket.create_connection(("127.0.0.1", port), timeout=max(0.01, min(timeout, CONNECT_TIMEOUT))) as conn:
        return _ask(conn, token, request, deadline)


def open_stream(info: BridgeInfo, request: dict[str, Any], timeout: float) -> socket.socket:
    """A connection to the bridge of ``info`` that carries MCP messages from now on.

    The warm process proves it holds the token exactly as for a request; what comes later on
    the same connection can only come from the process that gave that proof (a loopback TCP
    connection cannot be taken over). Raises ``BridgeError`` or ``OSError``.
    """
    deadline = time.monotonic() + timeout
    conn = socket.create_connection(("127.0.0.1", info.port), timeout=max(0.01, min(timeout, CONNECT_TIMEOUT)))
    try:
        reply = _ask(conn, info.token, {**request, "op": STREAM_OP}, deadline)
        if reply.get("ok") is not True or reply.get("stream") is not True:
            raise BridgeError(f"no stream: {loggable(reply.get('error'))}")
        conn.settimeout(None)
        return conn
    except BaseException:
        conn.close()
        raise


def _ask(conn: socket.socket, token: str, request: dict[str, Any], deadline: float) -> dict[str, Any]:
    """One authenticated request on ``conn``: the reply, proven to come from ``token``'s holder."""
    body = json.dumps(request, ensure_ascii=True)
    if len(body) > MAX_REQUEST_BYTES - 256:
        raise BridgeError("request too large")
    greeting = _loads_object(_read_line(conn, MAX_GREETING_BYTES, min(deadline, time.monotonic() + GREETING_TIMEOUT)))
    challenge = greeting.get("challenge")
    if greeting.get("bridge") != "mcp-memory" or not _is_hex(challenge, NONCE_HEX):
        raise BridgeError("the listener is not an mcp-memory bridge")
    nonce = secrets.token_hex(NONCE_HEX // 2)
    _send_line(conn, {"nonce": nonce, "body": body,
                      "mac": _mac(token, _REQUEST_LABEL, challenge, nonce, body)}, deadline)
    envelope = _loads_object(_read_line(conn, MAX_REPLY_BYTES, deadline))
    reply_body, proof = envelope.get("body"), envelope.get("mac")
    if proof is None and "body" not in envelope:
        raise BridgeError(f"refused: {loggable(envelope.get('error'))}")
    if not (isinstance(reply_body, str) and _is_hex(proof, MAC_HEX)
            and hmac.compare_digest(_mac(token, _REPLY_LABEL, challenge, nonce, reply_body), proof)):
        raise BridgeError("reply without a valid proof discarded")
    return _loads_object(reply_body)


def owner_state(info: BridgeInfo) -> Literal["alive", "stale", "unproven"]:
    """Whether the process that wrote a bridge file still runs.

    "alive": it does; "stale": it does not (remove the file); "unproven": a process runs
    under that pid but the file records no identity to tell whether it is the same one.
    """
    if process_identity(os.getpid()) is None:
        # No /proc here: a live pid is all that can be checked (the proof still guards the reply).
        return "alive" if _pid_alive(info.pid) else "stale"
    live = process_identity(info.pid)
    if live is None:
        return "stale"
    if info.identity is None:
        return "unproven"
    return "alive" if hmac.compare_digest(live, info.identity) else "stale"


def process_identity(pid: int) -> str | None:
    """Boot id and start time of ``pid`` (a recycled pid has another); None without ``/proc``."""
    try:
        stat = Path(f"/proc/{int(pid)}/stat").read_bytes()
    except (OSError, ValueError, OverflowError):
        return None
    # The command name (field 2) may hold spaces and parentheses: count from the last ")".
    fields = stat[stat.rfind(b")") + 1:].split()
    try:
        state, started = fields[0], int(fields[19])  # fields 3 and 22: state, start time in ticks since boot
    except (IndexError, ValueError):
        return None
    if state in (b"Z", b"X"):  # dead, not yet reaped: it listens on nothing
        return None
    return f"{_boot_id()}:{started}"


@functools.lru_cache(maxsize=1)
def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
    except (OSError, ValueError):
        return ""


def bridge_infos(folder: Path) -> list[BridgeInfo]:
    """The readable bridge files of ``folder`` written by this user, newest first."""
    infos: list[tuple[float, BridgeInfo]] = []
    try:
        entries = list(folder.glob("*.json"))
    except OSError:
        return []
    for entry in entries:
        try:
            stat = entry.stat()
            if hasattr(os, "getuid") and stat.st_uid != os.getuid():
                continue  # another user's server: never asked, never removed
            mtime = stat.st_mtime
            data = json.loads(entry.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            continue
        info = _info_from(entry, data)
        if info is not None:
            infos.append((mtime, info))
    return [info for _, info in sorted(infos, key=lambda pair: pair[0], reverse=True)]


def _info_from(path: Path, data: Any) -> BridgeInfo | None:
    if not isinstance(data, dict):
        return None
    pid, port, token, identity = data.get("pid"), data.get("port"), data.get("token"), data.get("identity")
    if not (_is_int(pid) and pid > 0 and _is_int(port) and 0 < port < 65536):
        return None
    if not (isinstance(token, str) and token) or not (identity is None or isinstance(identity, str)):
        return None
    role, digest, started = data.get("role", "server"), data.get("settings", ""), data.get("started", 0.0)
    if not (isinstance(role, str) and isinstance(digest, str) and isinstance(started, (int, float))):
        return None
    return BridgeInfo(path, pid, port, token, identity, role, digest, float(started))


# ----- shared -----------------------------------------------------------------------------------
def loggable(value: Any, limit: int = 300) -> str:
    """Text from the other side, fit for one log line: cut short, control characters blanked."""
    if not isinstance(value, str):
        return f"({type(value).__name__})"
    text = "".join(c if c.isprintable() else " " for c in value[:limit])
    return text + ("…" if len(value) > limit else "")


def _mac(token: str, label: bytes, challenge: str, nonce: str, body: str) -> str:
    message = b"\n".join((label, challenge.encode("ascii"), nonce.encode("ascii"),
                          body.encode("utf-8", "surrogatepass")))
    return hmac.new(token.encode("utf-8", "surrogatepass"), message, hashlib.sha256).hexdigest()


def _is_hex(value: object, length: int) -> TypeGuard[str]:
    # Checked before any comparison: compare_digest raises on non-ASCII text.
    return isinstance(value, str) and len(value) == length and re.fullmatch(r"[0-9a-f]+", value) is not None


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _loads_object(data: bytes | str) -> dict[str, Any]:
    """One JSON object, or a ``BridgeError`` that says what is wrong with it."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        value = json.loads(text)
    except UnicodeDecodeError:
        raise BridgeError("not UTF-8") from None
    except RecursionError:
        raise BridgeError("JSON nested too deeply") from None
    except ValueError:  # JSONDecodeError, and integers too long to convert
        raise BridgeError("not one line of JSON") from None
    if not isinstance(value, dict):
        raise BridgeError("not a JSON object")
    return value


def _read_line(conn: socket.socket, limit: int, deadline: float) -> bytes:
    """One line (without its newline, or what came before EOF) by ``deadline`` at the latest.

    The deadline bounds the whole line, not each read: a sender dribbling a byte at a time
    gets no more time than one sending it at once.
    """
    buffer = bytearray()
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("no complete line in time")
        conn.settimeout(remaining)
        chunk = conn.recv(65536)
        if not chunk:
            return bytes(buffer)
        end = chunk.find(b"\n")
        buffer += chunk if end < 0 else chunk[:end]
        if len(buffer) > limit:
            raise _LineTooLong(f"line longer than {limit} bytes")
        if end >= 0:
            return bytes(buffer)


def _send_line(conn: socket.socket, message: dict[str, Any], deadline: float) -> None:
    conn.settimeout(max(0.01, deadline - time.monotonic()))
    conn.sendall(json.dumps(message, ensure_ascii=True).encode("ascii") + b"\n")


def _close(conn: socket.socket) -> None:
    try:
        conn.close()
    except OSError:
        pass


class _Throttle:
    """Lets a repeated event be logged at most once per ``interval`` seconds."""

    def __init__(self, interval: float):
        self.interval = interval
        self._lock = threading.Lock()
        self._last: float | None = None
        self._suppressed = 0

    def due(self) -> int | None:
        """None to keep this event quiet; else log it, with the count of those kept quiet since."""
        with self._lock:
            now = time.monotonic()
            if self._last is not None and now - self._last < self.interval:
                self._suppressed += 1
                return None
            suppressed, self._suppressed, self._last = self._suppressed, 0, now
            return suppressed


def _uid() -> int | None:
    return os.getuid() if hasattr(os, "getuid") else None


def _write_private(path: Path, text: str) -> None:
    """Write a file only its owner can read, atomically (a reader never sees half a token)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)


def _pid_alive(pid: int) -> bool:
    if sys.platform == "win32":
        return True  # signal 0 means CTRL_C_EVENT there; a stale file just costs one refused connect
    try:
        os.kill(pid, 0)
    except OSError:  # gone, or (EPERM) another user's process: not the server that wrote the file
        return False
    return True


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass
