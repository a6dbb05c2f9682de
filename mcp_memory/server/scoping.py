"""Which scopes a caller of the server reads and writes (see ``core/scopes.py`` for what a scope is).

Three things decide, the most binding first:

1. the scope the caller's token is limited to (``serve --scoped-token NAME=TOKEN``): the caller
   sees that scope and the global memory, never another scope (nor the episodes, which record
   the sessions of every scope), and writes into that scope only;
2. the ``scope`` a call names;
3. the default scope of the connection (``serve --scope``, ``$MCP_MEMORY_SCOPE``, or the one a
   stdio front passed to the warm process with its stream request).

Refusals are tool errors with a clear message. A path outside the caller's scopes gets the
same answer as a path that does not exist, so errors reveal nothing about other scopes.
"""

from __future__ import annotations

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError

from mcp_memory.core.privacy import not_shared
from mcp_memory.core.scopes import ScopeError, ScopeFilter, confine, read_filter, write_scope
from mcp_memory.errors import PathError
from mcp_memory.server.auth import scope_limit

SEARCH_SCOPE = ("Scope to search besides the global memory: a project or agent name, several joined by commas, "
                "'global' (the global memory alone) or '*' (every scope). Default: this connection's scope")
WRITE_SCOPE = ("Scope to write into: a project or agent name (memory/scopes/<name>/), or 'global'. "
               "Default: this connection's scope")


def searched(default: str | None, ctx: Context | None, value: str | None) -> ScopeFilter:
    """What a search or recall of this caller covers, given the ``scope`` it named (None: the default)."""
    limit = scope_limit(ctx)
    try:
        requested = read_filter(value, limit or default)
        return confine(requested, limit) if limit else requested
    except ScopeError as exc:
        raise ToolError(str(exc)) from None


def written(default: str | None, ctx: Context | None, value: str | None) -> str | None:
    """The scope a store, capture or rescue of this caller goes into (None: the global memory)."""
    limit = scope_limit(ctx)
    try:
        scope = write_scope(value, limit or default)
    except ScopeError as exc:
        raise ToolError(str(exc)) from None
    if limit and scope != limit:
        raise ToolError(f"this token is limited to scope {limit!r}: it writes into that scope only")
    return scope


def removable(default: str | None, ctx: Context | None, value: str | None) -> ScopeFilter:
    """Where ``memory_forget`` looks for the line to remove: the caller's search scopes, and for a
    scoped token only its own scope (it changes nothing global)."""
    limit = scope_limit(ctx)
    if limit is None:
        return searched(default, ctx, value)
    searched(default, ctx, value)  # refuses another scope, as a search would
    return ScopeFilter(frozenset({limit}), confined=True, with_global=False)


def visible(ctx: Context | None, path: str) -> bool:
    """Whether this caller may see the memory file at ``path`` (a resolved, workspace-relative path)."""
    limit = scope_limit(ctx)
    return limit is None or ScopeFilter(frozenset({limit}), confined=True).covers(path)


def check_visible(ctx: Context | None, path: str, asked: object) -> None:
    """``PathError`` (as for a missing file, naming what the caller ``asked``) when ``path`` is not visible."""
    if not visible(ctx, path):
        raise PathError(not_shared(asked))


def refuse_confined(ctx: Context | None, why: str) -> None:
    """Refuse an action a scoped token may not take (``why`` completes the sentence)."""
    limit = scope_limit(ctx)
    if limit is not None:
        raise ToolError(f"this token is limited to scope {limit!r}: {why}")
