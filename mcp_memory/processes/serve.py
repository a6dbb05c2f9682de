"""``mcp-memory serve`` once its arguments are parsed: who may connect, and the server running.

Over HTTP or SSE the server needs a token to listen beyond loopback, then accepts only the
Host (and browser Origin) names given, since beyond loopback the SDK checks none by default.
Over stdio no token applies: the caller is whoever started the process. The hook bridge, a
loopback port answering the client hooks from this server's warm memory, runs beside it.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mcp.server import MCPServer
from mcp.server.transport_security import TransportSecuritySettings

from mcp_memory.clients.hooks import handle_request
from mcp_memory.config import Settings
from mcp_memory.core.scopes import ScopeError, check_name
from mcp_memory.core.tokens import (
    TokenError,
    TokenFile,
    is_short,
    read_token_file,
    tokens_from_env,
    tokens_from_flags,
)
from mcp_memory.runtime.allocators import tune_for_long_running
from mcp_memory.runtime.bridge import BridgeServer
from mcp_memory.runtime.service import MemoryService
from mcp_memory.runtime.stdio import run_stdio
from mcp_memory.server import create_server

log = logging.getLogger(__name__)

MIN_REQUEST_BYTES = 1024
SCOPED_TOKEN_ENV = "MCP_MEMORY_SCOPED_TOKEN"
TOKEN_FILE_ENV = "MCP_MEMORY_TOKEN_FILE"


class ServeError(ValueError):
    """Serving options that cannot be honoured as given (a bad token, an open address without one)."""


@dataclass(frozen=True)
class ServeOptions:
    """The options of ``serve``; a token option left as None falls back to its environment variable."""

    transport: str = "stdio"  # stdio, sse or http
    host: str = "127.0.0.1"
    port: int = 8765
    token: str | None = None  # full access ($MCP_MEMORY_TOKEN)
    read_only_tokens: list[str] | None = None  # no edits ($MCP_MEMORY_READ_ONLY_TOKEN, comma-separated)
    shared_tokens: list[str] | None = None  # no private files ($MCP_MEMORY_SHARED_TOKEN, comma-separated)
    # NAME=TOKEN: a shared token limited to scope NAME ($MCP_MEMORY_SCOPED_TOKEN, comma-separated)
    scoped_tokens: list[str] | None = None
    token_file: str | None = None  # tokens of every kind, one a line ($MCP_MEMORY_TOKEN_FILE; core/tokens.py)
    scope: str | None = None  # the default scope of callers' stores and searches (None: the global memory)
    shared: bool = False  # every caller is shared, whatever its token
    max_request_bytes: int = 1024 * 1024
    allowed_hosts: list[str] | None = None  # Host headers accepted beyond loopback (None: HOST:*)
    allowed_origins: list[str] | None = None  # browser Origins accepted beyond loopback (None: none)
    bridge: bool = True  # answer hooks on a loopback port


@dataclass(frozen=True)
class ServeTokens:
    full: list[str]
    read_only: list[str]
    shared: list[str]
    scoped: dict[str, str] = field(default_factory=dict)  # token -> the one scope it may use

    @property
    def all(self) -> list[str]:
        return [*self.full, *self.read_only, *self.shared, *self.scoped]


def serve(settings: Settings, options: ServeOptions, environ: Mapping[str, str] | None = None) -> None:
    """Serve the workspace of ``settings`` until the transport ends; ``ServeError`` for bad options."""
    tune_for_long_running()
    tokens = collect_tokens(options, os.environ if environ is None else environ)
    network = options.transport != "stdio"
    if network:
        check_exposure(options.host, tokens)
    if options.max_request_bytes < MIN_REQUEST_BYTES:
        raise ServeError(f"--max-request-bytes must be at least {MIN_REQUEST_BYTES}")
    service = MemoryService(settings, sleep=True)
    server = create_server(settings, service, token=tokens.full[0] if network and tokens.full else None,
                           public_url=public_url(options), read_only_tokens=tokens.read_only if network else (),
                           shared_tokens=tokens.shared if network else (), shared=options.shared,
                           scope=options.scope, scoped_tokens=tokens.scoped if network else None)
    run_options = http_options(options) if network else {}
    if network:
        start_dashboard(server, service, tokens, options, run_options)
    service.start()
    bridge = start_bridge(settings, service, options.shared) if options.bridge else None
    try:
        run_transport(server, options.transport, run_options)
    finally:
        if bridge is not None:
            bridge.stop()


def collect_tokens(options: ServeOptions, environ: Mapping[str, str]) -> ServeTokens:
    """The tokens of the token file, and those given as options, else those of the environment
    (one full token at most; a token of one kind only)."""
    token_file = options.token_file or environ.get(TOKEN_FILE_ENV, "").strip() or None
    try:
        from_file = read_token_file(token_file) if token_file else TokenFile()
        tokens = ServeTokens(
            full=from_file.full + (tokens_from_flags([options.token] if options.token is not None else None, "--token")
                                   or tokens_from_env(environ, "MCP_MEMORY_TOKEN")[:1]),
            read_only=from_file.read_only + (tokens_from_flags(options.read_only_tokens, "--read-only-token")
                                             or tokens_from_env(environ, "MCP_MEMORY_READ_ONLY_TOKEN")),
            shared=from_file.shared + (tokens_from_flags(options.shared_tokens, "--shared-token")
                                       or tokens_from_env(environ, "MCP_MEMORY_SHARED_TOKEN")),
            scoped={**scoped_tokens(from_file.scoped, f"{token_file}"),
                    **(scoped_tokens(options.scoped_tokens, "--scoped-token")
                       or scoped_tokens(environ.get(SCOPED_TOKEN_ENV, "").split(","), f"${SCOPED_TOKEN_ENV}"))},
        )
    except TokenError as exc:
        raise ServeError(str(exc)) from None
    if from_file.open_to_others:
        log.warning("the token file %s can be read by other users of this machine: chmod 600 it", token_file)
    if len(tokens.full) > 1:
        raise ServeError("more than one full-access token is given (token file, --token, $MCP_MEMORY_TOKEN): "
                         "give one")
    if (set(tokens.full) & set(tokens.read_only) or set(tokens.full) & set(tokens.shared)
            or set(tokens.read_only) & set(tokens.shared)):
        raise ServeError("a token is given as two kinds of token: give each token one kind")
    flags = [name for name, given in (("--token", options.token), ("--read-only-token", options.read_only_tokens),
                                      ("--shared-token", options.shared_tokens),
                                      ("--scoped-token", options.scoped_tokens)) if given]
    if flags:
        # A process's arguments are readable by every local user (ps, /proc/<pid>/cmdline).
        log.warning("%s given on the command line: every user of this machine can read it in the process "
                    "list; set it in the environment instead ($MCP_MEMORY_TOKEN, $MCP_MEMORY_READ_ONLY_TOKEN, "
                    "$MCP_MEMORY_SHARED_TOKEN, $MCP_MEMORY_SCOPED_TOKEN)", " and ".join(flags))
    if set(tokens.scoped) & {*tokens.full, *tokens.read_only, *tokens.shared}:
        raise ServeError("a scoped token is also given as another kind of token: give each token one kind")
    return tokens


def scoped_tokens(values: list[str] | None, flag: str) -> dict[str, str]:
    """``NAME=TOKEN`` pairs as token -> scope; a malformed pair, a bad name or a token given twice is an error."""
    pairs = [v for v in values or () if v.strip() or flag.startswith("--")]
    tokens: dict[str, str] = {}
    for pair in pairs:
        name, sep, token = pair.partition("=")
        if not sep:
            raise TokenError(f"{flag} takes NAME=TOKEN (the scope, then the token), got no '='")
        try:
            scope = check_name(name)
        except ScopeError as exc:
            raise TokenError(f"{flag}: {exc}") from None
        (checked,) = tokens_from_flags([token], f"{flag} {scope}=")
        if checked in tokens:
            raise TokenError(f"{flag}: one token is given for two scopes")
        tokens[checked] = scope
    return tokens


def check_exposure(host: str, tokens: ServeTokens) -> None:
    """Refuse to listen beyond loopback without a token; warn about tokens short enough to guess."""
    if not is_loopback(host) and not tokens.all:
        raise ServeError(
            f"refusing to listen on {host or 'every address'} without a token: pass --token or set "
            "MCP_MEMORY_TOKEN (only loopback addresses may be served without one)"
        )
    if any(is_short(t) for t in tokens.all):
        log.warning("a token shorter than 16 characters can be guessed: prefer `python -c "
                    "'import secrets; print(secrets.token_urlsafe(32))'`")


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 and localhost; anything else (an empty host means every address) is not."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:
        return False


def public_url(options: ServeOptions) -> str:
    """The URL clients reach the server at (the issuer and resource of bearer authentication)."""
    path = "/sse" if options.transport == "sse" else "/mcp"
    return f"http://{_host_for_url(options.host)}:{options.port}{path}"


def http_options(options: ServeOptions) -> dict[str, Any]:
    """The keyword arguments of ``MCPServer.run`` for HTTP and SSE."""
    run_options: dict[str, Any] = {"host": options.host, "port": options.port,
                                   "max_request_body_size": options.max_request_bytes}
    if not is_loopback(options.host):
        # Beyond loopback the SDK checks nothing by default: accept only the names given.
        hosts = options.allowed_hosts or [f"{_host_for_url(options.host)}:*"]
        run_options["transport_security"] = TransportSecuritySettings(
            enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=options.allowed_origins or [])
    elif options.host not in ("127.0.0.1", "localhost", "::1"):
        # Another loopback address (127.x.y.z): the SDK's loopback default names only the three
        # usual ones, so it would check nothing here; accept this address and what was given.
        name = _host_for_url(options.host)
        run_options["transport_security"] = TransportSecuritySettings(
            enable_dns_rebinding_protection=True, allowed_hosts=[f"{name}:*", *(options.allowed_hosts or [])],
            allowed_origins=[f"http://{name}:*", *(options.allowed_origins or [])])
    return run_options


def start_dashboard(server: MCPServer, service: MemoryService, tokens: ServeTokens, options: ServeOptions,
                    run_options: dict[str, Any]) -> None:
    """Serve the dashboard at ``/`` beside the transport, behind the same tokens; print where (never a token)."""
    from mcp_memory.dashboard.app import register_dashboard
    from mcp_memory.dashboard.auth import sign_in_instructions

    register_dashboard(server, service, tokens, options.shared, run_options.get("transport_security"), options.host)
    host = "127.0.0.1" if options.host in ("", "0.0.0.0") else _host_for_url(options.host)
    print(f"mcp-memory: {sign_in_instructions(f'http://{host}:{options.port}', tokens)}", file=sys.stderr,
          flush=True)


def start_bridge(settings: Settings, service: MemoryService, shared: bool) -> BridgeServer | None:
    """The hook bridge answering from ``service``'s memory; None (and a warning) if it cannot listen."""
    try:
        return BridgeServer(settings.index_dir, lambda request: handle_request(
            service.memory(), request, include_private=not shared)).start()
    except OSError as exc:
        log.warning("hook bridge not started: %s", exc)
        return None


def run_transport(server: MCPServer, transport: str, run_options: dict[str, Any]) -> None:
    """Serve over ``transport`` (stdio, sse or http; ``run_options`` for the last two) until it ends.

    Over HTTP and SSE the SDK builds the app, and ``run_http`` runs it rather than
    ``MCPServer.run``: with the security headers on every response, and an access log on
    stderr without query strings (a token pasted into a link would be printed in full).
    """
    if transport == "stdio":
        run_stdio(server)
        return
    from mcp_memory.dashboard.serving import run_http

    app_options = {k: v for k, v in run_options.items() if k not in ("host", "port")}
    host = run_options.get("host", "127.0.0.1")
    if transport == "sse":
        app = server.sse_app(host=host, **app_options)
    else:
        app = server.streamable_http_app(host=host, **app_options)
    run_http(app, host=host, port=run_options.get("port", 8000), log_level=server.settings.log_level)


def _host_for_url(host: str) -> str:
    return f"[{host}]" if ":" in host else host
