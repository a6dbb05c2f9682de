"""Who is looking at the dashboard, and what they may do: the MCP tokens, sign-in sessions, CSRF.

The SDK does not authenticate custom routes, so the dashboard checks the same tokens as
``/mcp`` itself. A full token may act (forget, reward, penalize, edit); a read-only token
only looks; a shared token only looks, and never at a private file. With no token configured
(loopback only: ``serve`` refuses anything else) the caller has full access, as on ``/mcp``.

A browser signs in with a POST (``/signin``) carrying a token a person pasted, or a one-time
code (``mcp-memory ui`` writes one into a local sign-in page; it works once, for two
minutes). Never with a GET: a link or an image in memory content cannot sign a browser in.
The server keeps a random session id mapped to the level; the browser holds it in an
HttpOnly, SameSite=Strict cookie that lasts as long as the browser session, with a MAC under
a key of this process binding it to the host and port it was issued for: only a cookie this
process issued for this very address counts (one from an earlier run or another address is
refused, and one planted under the same name by another server does not hide it). Sessions
end after ``SESSION_HOURS`` whatever happens. Each token keeps at most ``MAX_SESSIONS_PER_TOKEN``
sessions, and a sign-in never pushes out a session of a higher level, so many sign-ins with
a shared token cannot sign the owner out. ``Authorization: Bearer`` works too. Every action
is a POST carrying a CSRF token (an HMAC of the sign-in, under the same key), and every
request's Host and Origin headers are checked as the transport checks them on ``/mcp``.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request

from mcp_memory.core.tokens import usable

Level = Literal["full", "read-only", "shared"]
RANK: dict[Level, int] = {"shared": 0, "read-only": 1, "full": 2}
MAX_SESSIONS = 1000  # sessions kept in all
MAX_SESSIONS_PER_TOKEN = 16  # sessions of one token (or of the one-time codes); its oldest goes first
SESSION_HOURS = 12  # a session ends this long after its sign-in, used or not
CODE_SECONDS = 120  # a one-time sign-in code works this long, once
MAX_CODES = 16
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


class TokenSet(Protocol):
    """The tokens ``serve`` collected (``ServeTokens``): full, read-only and shared."""

    @property
    def full(self) -> list[str]: ...

    @property
    def read_only(self) -> list[str]: ...

    @property
    def shared(self) -> list[str]: ...

    @property
    def all(self) -> list[str]:
        """Every token the server accepts, of any kind (the dashboard is open only when there is none)."""
        ...


@dataclass(frozen=True)
class Tokens:
    """A plain ``TokenSet`` (``mcp-memory ui`` makes one with a fresh full token)."""

    full: list[str]
    read_only: list[str]
    shared: list[str]

    @property
    def all(self) -> list[str]:
        return [*self.full, *self.read_only, *self.shared]


@dataclass(frozen=True)
class Access:
    """What one request may see and do."""

    level: Level
    include_private: bool  # may see the files of privacy.private_paths
    signin: str  # what the CSRF token is bound to: a session id, a hashed bearer token, or "open"

    @property
    def can_edit(self) -> bool:
        return self.level == "full"

    @property
    def by_cookie(self) -> bool:
        """Signed in with a session cookie (which sign-out ends), not a bearer header nor an open dashboard."""
        return self.signin != "open" and not self.signin.startswith("bearer:")


@dataclass(frozen=True)
class _Session:
    level: Level
    source: str  # a digest of the token it was signed in with, or "code" for one-time codes
    since: float


@dataclass(frozen=True)
class _Code:
    level: Level
    expires: float
    on_used: Callable[[], None] | None


class DashboardAuth:
    """The tokens, sessions, one-time codes and CSRF key of one server process."""

    def __init__(self, tokens: TokenSet, shared_server: bool, security: TransportSecuritySettings | None,
                 host: str = "127.0.0.1"):
        self._tokens: list[tuple[bytes, Level]] = []
        for token in usable(tokens.shared):
            self._tokens.append((token.encode(), "shared"))
        for token in usable(tokens.read_only):
            self._tokens.append((token.encode(), "read-only"))
        for token in usable(tokens.full):
            self._tokens.append((token.encode(), "full"))
        # No token of any kind configured: loopback only (serve refuses anything else), full access.
        # A token of a kind the dashboard does not grant (any other) still closes it.
        self.open = not usable(tokens.all)
        self.shared_server = shared_server
        if security is None and _is_loopback(host):
            # The default the SDK applies to /mcp on loopback, and the loopback address served if another.
            own = [] if host in LOOPBACK_HOSTS else [f"{host}:*"]
            security = TransportSecuritySettings(
                enable_dns_rebinding_protection=True,
                allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*", *own],
                allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*",
                                 *(f"http://{name}" for name in own)])
        self.security = security
        self._key = secrets.token_bytes(32)
        self._sessions: OrderedDict[str, _Session] = OrderedDict()  # oldest sign-in first
        self._codes: OrderedDict[str, _Code] = OrderedDict()  # by the code's digest
        self._lock = threading.Lock()
        self.clock: Callable[[], float] = time.time  # what "now" is for lifetimes (tests move it on)

    # ----- tokens ----------------------------------------------------------------------------
    def level_of(self, token: str) -> Level | None:
        """The level of ``token``, or None; every known token is compared, in constant time."""
        if not token or not token.strip():
            return None
        given = token.encode("utf-8", "surrogatepass")
        found: Level | None = None
        for known, level in self._tokens:
            if hmac.compare_digest(given, known):
                found = level
        return found

    # ----- sessions --------------------------------------------------------------------------
    def sign_in(self, token: str) -> str | None:
        """A new session id for a valid ``token``; None when the token is not one of ours (or no room is left)."""
        level = self.level_of(token)
        if level is None:
            return None
        return self._new_session(level, _digest(token))

    def issue_code(self, level: Level = "full", on_used: Callable[[], None] | None = None) -> str:
        """A one-time sign-in code for ``level``, good for ``CODE_SECONDS``; ``on_used`` runs when it is redeemed."""
        code = secrets.token_urlsafe(32)
        with self._lock:
            self._codes[_digest(code)] = _Code(level, self.clock() + CODE_SECONDS, on_used)
            while len(self._codes) > MAX_CODES:
                self._codes.popitem(last=False)
        return code

    def redeem(self, code: str) -> str | None:
        """A new session id for a valid, unexpired, unused ``code`` (which it uses up); else None."""
        if not code:
            return None
        with self._lock:
            found = self._codes.pop(_digest(code), None)
        if found is None or found.expires < self.clock():
            return None
        if found.on_used is not None:
            found.on_used()
        return self._new_session(found.level, "code")

    def _new_session(self, level: Level, source: str) -> str | None:
        """Room for one more session of ``level``: the source's oldest session first, never a higher level's."""
        session = secrets.token_urlsafe(32)
        now = self.clock()
        with self._lock:
            self._drop_expired(now)
            same_source = [key for key, held in self._sessions.items() if held.source == source]
            for key in same_source[: max(0, len(same_source) - MAX_SESSIONS_PER_TOKEN + 1)]:
                del self._sessions[key]
            if len(self._sessions) >= MAX_SESSIONS:
                victim = next((key for key, held in self._sessions.items() if RANK[held.level] <= RANK[level]), None)
                if victim is None:
                    return None
                del self._sessions[victim]
            self._sessions[session] = _Session(level, source, now)
        return session

    def _drop_expired(self, now: float) -> None:
        """Forget the sessions past their lifetime (the oldest come first)."""
        while self._sessions:
            key, held = next(iter(self._sessions.items()))
            if now - held.since <= SESSION_HOURS * 3600:
                return
            del self._sessions[key]

    def sign_out(self, session: str) -> None:
        with self._lock:
            self._sessions.pop(session, None)

    def access_of(self, session: str) -> Access | None:
        """The access of a live session id; None when it has ended."""
        level = self._session_level(session)
        return None if level is None else self._access(level, session)

    def _session_level(self, session: str) -> Level | None:
        with self._lock:
            found = self._sessions.get(session)
            if found is None:
                return None
            if self.clock() - found.since > SESSION_HOURS * 3600:
                del self._sessions[session]
                return None
            return found.level

    # ----- the cookie ------------------------------------------------------------------------
    def cookie_value(self, session: str, request: Request) -> str:
        """The cookie holding ``session``, bound to this process's key and to the host:port it is set by."""
        return f"{session}.{self._cookie_mac(session, request)}"

    def _cookie_mac(self, session: str, request: Request) -> str:
        bound = f"{session}|{request.headers.get('host', '').lower()}"
        return hmac.new(self._key, b"cookie|" + bound.encode("utf-8", "replace"), hashlib.sha256).hexdigest()[:32]

    def session_of(self, request: Request) -> str | None:
        """The live session a sign-in cookie of this server, for this host, names; None when there is none.

        Every cookie of that name is looked at (a browser sends several when another server
        on the same host set one with a narrower path): the first that is ours counts.
        """
        for value in _cookie_values(request.headers.get("cookie", ""), cookie_name(request)):
            session, _, mac = value.rpartition(".")
            ours = session and hmac.compare_digest(mac.encode("ascii", "replace"),
                                                   self._cookie_mac(session, request).encode())
            if ours and self._session_level(session) is not None:
                return session
        return None

    def authenticate(self, request: Request) -> Access | None:
        """The caller's access, from a bearer header, else the sign-in cookie; None when neither holds."""
        header = request.headers.get("authorization", "")
        if header[:7].lower() == "bearer ":
            token = header[7:].strip()
            level = self.level_of(token)
            if level is None:
                return None
            return self._access(level, "bearer:" + _digest(token))
        session = self.session_of(request)
        access = self.access_of(session) if session else None
        if access is not None:
            return access
        if self.open:
            return self._access("full", "open")
        return None

    def _access(self, level: Level, signin: str) -> Access:
        return Access(level, include_private=level != "shared" and not self.shared_server, signin=signin)

    # ----- CSRF ------------------------------------------------------------------------------
    def csrf_token(self, access: Access) -> str:
        return hmac.new(self._key, access.signin.encode(), hashlib.sha256).hexdigest()[:40]

    def csrf_ok(self, access: Access, given: str) -> bool:
        return hmac.compare_digest(self.csrf_token(access).encode(), (given or "").encode("utf-8", "replace"))

    # ----- Host and Origin -------------------------------------------------------------------
    def origin_problem(self, request: Request, allow_null_origin: bool = False) -> tuple[int, str] | None:
        """(status, reason) when the Host or Origin header is not accepted, as the transport answers on /mcp.

        ``allow_null_origin``: also accept ``Origin: null``, what a browser sends with a form
        posted from a local file (the sign-in page of ``mcp-memory ui``).
        """
        if self.security is None or not self.security.enable_dns_rebinding_protection:
            return None
        host = request.headers.get("host", "")
        if not _allowed(host, self.security.allowed_hosts):
            return 421, "Invalid Host header"
        origin = request.headers.get("origin")
        # The dashboard's own pages post back to it: an Origin naming this very (checked) host is same-origin.
        same_origin = origin == f"{request.url.scheme}://{host}" or (allow_null_origin and origin == "null")
        if origin and not same_origin and not _allowed(origin, self.security.allowed_origins):
            return 403, "Invalid Origin header"
        return None


def cookie_name(request: Request) -> str:
    """The sign-in cookie's name: one per port, since browsers share cookies across the ports of a host."""
    port = request.url.port or (443 if request.url.scheme == "https" else 80)
    return f"mcp_memory_{port}"


def _cookie_values(header: str, name: str) -> list[str]:
    """Every value of cookie ``name`` in a Cookie header, in the order the browser sent them."""
    values = []
    for part in header.split(";"):
        key, sep, value = part.strip().partition("=")
        if sep and key == name:
            values.append(value.strip().strip('"'))
    return values


def _is_loopback(host: str) -> bool:
    """localhost, ::1 or any of 127.0.0.0/8."""
    if host in LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host).version == 4 and ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def _allowed(value: str, allowed: list[str]) -> bool:
    """``value`` equals an allowed entry, or matches one ending in ``:*`` with any port (as the SDK matches)."""
    if not value:
        return False
    for entry in allowed:
        if value == entry:
            return True
        if entry.endswith(":*"):
            base = entry[:-2]
            port = value[len(base) + 1:] if value.startswith(base + ":") else ""
            if port.isdigit():
                return True
    return False


def sign_in_instructions(base_url: str, tokens: TokenSet) -> str:
    """What ``serve`` prints about its dashboard: its address, and what signs in (never a token itself)."""
    url = f"{base_url.rstrip('/')}/"
    if not usable(tokens.all):
        return f"dashboard at {url} (open: no token configured, loopback only)"
    return (f"dashboard at {url} (sign in there with the token given to --token or $MCP_MEMORY_TOKEN, "
            "or a read-only or shared token)")
