"""Who is looking at the dashboard, and what they may do: the MCP tokens, a sign-in cookie, CSRF.

The SDK does not authenticate custom routes, so the dashboard checks the same tokens as
``/mcp`` itself. A full token may act (forget, reward, penalize, edit); a read-only token
only looks; a shared token only looks, and never at a private file. With no token configured
(loopback only: ``serve`` refuses anything else) the caller has full access, as on ``/mcp``.

A browser signs in once with a link carrying ``?token=...`` (as Jupyter does): the server
keeps a random session id mapped to the token's level and sets it as an HttpOnly,
SameSite=Strict cookie; the token itself is never stored in the browser. An
``Authorization: Bearer`` header works too. Every action is a POST carrying a CSRF token (an
HMAC of the sign-in, under a key that lives as long as the process), and every request's
Host and Origin headers are checked as the transport checks them on ``/mcp``.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Literal, Protocol

from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request

from mcp_memory.tokens import usable

Level = Literal["full", "read-only", "shared"]
MAX_SESSIONS = 1000  # sign-ins kept; the oldest goes first
SESSION_DAYS = 30
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


class DashboardAuth:
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
        if security is None and host in LOOPBACK_HOSTS:
            # The same default the SDK applies to /mcp on loopback.
            security = TransportSecuritySettings(
                enable_dns_rebinding_protection=True, allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
                allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"])
        self.security = security
        self._key = secrets.token_bytes(32)
        self._sessions: OrderedDict[str, tuple[Level, float]] = OrderedDict()
        self._lock = threading.Lock()

    # ----- tokens and sessions ---------------------------------------------------------------
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

    def sign_in(self, token: str) -> str | None:
        """A new session id for a valid ``token``; None when the token is not one of ours."""
        level = self.level_of(token)
        if level is None:
            return None
        session = secrets.token_urlsafe(32)
        with self._lock:
            self._sessions[session] = (level, time.time())
            while len(self._sessions) > MAX_SESSIONS:
                self._sessions.popitem(last=False)
        return session

    def sign_out(self, session: str) -> None:
        with self._lock:
            self._sessions.pop(session, None)

    def _session_level(self, session: str) -> Level | None:
        with self._lock:
            found = self._sessions.get(session)
            if found is None:
                return None
            level, since = found
            if time.time() - since > SESSION_DAYS * 86400:
                del self._sessions[session]
                return None
            return level

    def authenticate(self, request: Request) -> Access | None:
        """The caller's access, from a bearer header, else the sign-in cookie; None when neither holds."""
        header = request.headers.get("authorization", "")
        if header[:7].lower() == "bearer ":
            token = header[7:].strip()
            level = self.level_of(token)
            if level is None:
                return None
            return self._access(level, "bearer:" + hashlib.sha256(token.encode("utf-8", "replace")).hexdigest())
        session = request.cookies.get(cookie_name(request), "")
        level = self._session_level(session) if session else None
        if level is not None:
            return self._access(level, session)
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
    def origin_problem(self, request: Request) -> tuple[int, str] | None:
        """(status, reason) when the Host or Origin header is not accepted, as the transport answers on /mcp."""
        if self.security is None or not self.security.enable_dns_rebinding_protection:
            return None
        host = request.headers.get("host", "")
        if not _allowed(host, self.security.allowed_hosts):
            return 421, "Invalid Host header"
        origin = request.headers.get("origin")
        # The dashboard's own pages post back to it: an Origin naming this very (checked) host is same-origin.
        same_origin = origin == f"{request.url.scheme}://{host}"
        if origin and not same_origin and not _allowed(origin, self.security.allowed_origins):
            return 403, "Invalid Origin header"
        return None


def cookie_name(request: Request) -> str:
    """The sign-in cookie's name: one per port, since browsers share cookies across the ports of a host."""
    port = request.url.port or (443 if request.url.scheme == "https" else 80)
    return f"mcp_memory_{port}"


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


def sign_in_link(base_url: str, tokens: TokenSet) -> str:
    """The dashboard URL to open: with the full token when there is one (it signs the browser in)."""
    full = usable(tokens.full)
    return f"{base_url.rstrip('/')}/?token={full[0]}" if full else f"{base_url.rstrip('/')}/"
