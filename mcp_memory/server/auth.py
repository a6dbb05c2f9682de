"""Who may do what: bearer tokens, their scopes, and the decisions taken from a caller's token.

Four kinds of token: a full token reads, writes and sees the private files; a read-only
token searches and reads (private files included) but cannot edit; a shared token (a group
chat, a team bot) reads and writes but never sees the files of ``privacy.private_paths``; a
scoped token is a shared token limited to one scope (``core/scopes.py``): it sees that scope and the
global memory, never another scope, and writes into its scope only.
A transport without authentication (stdio) has no token: its caller is the user, who may do
everything unless the whole server is shared.
"""

from __future__ import annotations

import hmac
from typing import Any

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import AnyHttpUrl

from mcp_memory.core.tokens import usable

SCOPE_READ = "memory"
SCOPE_WRITE = "memory:write"
SCOPE_PRIVATE = "memory:private"  # may see the files of privacy.private_paths
SCOPE_LIMIT = "memory:scope:"  # followed by a scope name: the one memory scope this token may use


class StaticTokenVerifier:
    """Bearer tokens compared in constant time, each with its scopes.

    A full token reads and writes; a read-only token searches and reads but cannot store,
    forget or capture. Each token is its own principal (``subject``: its place in the list, which
    says nothing of the token): the SDK binds a Streamable HTTP session to the principal that
    opened it, so no other token can speak inside that session.
    """

    def __init__(self, tokens: dict[str, list[str]]):
        self._tokens = [(t.encode(), scopes) for t, scopes in tokens.items() if t.strip()]

    async def verify_token(self, token: str) -> AccessToken | None:
        if not token or not token.strip():
            return None
        given = token.encode("utf-8", "surrogatepass")
        found: tuple[int, list[str]] | None = None
        for index, (known, scopes) in enumerate(self._tokens):
            # Every token is compared, so the time taken says nothing about which one matched.
            if hmac.compare_digest(given, known):
                found = (index, scopes)
        if found is None:
            return None
        index, scopes = found
        return AccessToken(token=token, client_id="mcp-memory", scopes=list(scopes), subject=f"token-{index}")


def auth_options(token: str | None, read_only_tokens: list[str] | tuple[str, ...],
                 shared_tokens: list[str] | tuple[str, ...], public_url: str | None,
                 scoped_tokens: dict[str, str] | None = None) -> dict[str, Any]:
    """The ``MCPServer`` keyword arguments that require these tokens; none when no token is usable.

    ``scoped_tokens`` maps a token to the one scope it is limited to."""
    # A blank token is no token (core/tokens.py): it never opens the server, whoever passes it.
    tokens = {t.strip(): [SCOPE_READ, SCOPE_WRITE, SCOPE_LIMIT + scope]
              for t, scope in (scoped_tokens or {}).items() if usable([t])}
    tokens.update({t: [SCOPE_READ, SCOPE_WRITE] for t in usable(shared_tokens)})
    tokens.update({t: [SCOPE_READ, SCOPE_PRIVATE] for t in usable(read_only_tokens)})
    for t in usable([token]):
        tokens[t] = [SCOPE_READ, SCOPE_WRITE, SCOPE_PRIVATE]
    if not tokens:
        return {}
    base = AnyHttpUrl(public_url or "http://127.0.0.1")
    return {
        "token_verifier": StaticTokenVerifier(tokens),
        "auth": AuthSettings(issuer_url=base, resource_server_url=base, required_scopes=[SCOPE_READ],
                             validate_token_resource=False),
    }


def caller_scopes(ctx: Context | None) -> list[str] | None:
    """The scopes of the caller's bearer token; None when the transport has no authentication."""
    token = get_access_token()
    if token is None and ctx is not None:
        request = getattr(ctx.request_context, "request", None)
        user = getattr(request, "scope", {}).get("user") if request is not None else None
        token = getattr(user, "access_token", None)
    return list(token.scopes) if token is not None else None


def may_see_private(ctx: Context | None, shared: bool) -> bool:
    """May this caller see the private files? Not when the server (``shared``) or its token is shared.

    ``ctx`` may be None (a static resource, a subscription): the token then still comes from
    the request being served.
    """
    if shared:
        return False
    scopes = caller_scopes(ctx)
    return scopes is None or SCOPE_PRIVATE in scopes


def scope_limit(ctx: Context | None) -> str | None:
    """The one scope the caller's token is limited to; None for any other caller."""
    for scope in caller_scopes(ctx) or ():
        if scope.startswith(SCOPE_LIMIT):
            return scope[len(SCOPE_LIMIT):]
    return None


def require_write(ctx: Context | None) -> None:
    """Refuse an edit to a caller whose token is read-only (stdio callers and full tokens may edit)."""
    scopes = caller_scopes(ctx)
    if scopes is not None and SCOPE_WRITE not in scopes:
        raise ToolError("this token is read-only: it may search and read memory, not store, forget or capture")
