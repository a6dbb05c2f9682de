"""The ``setup`` subcommand's options, kept apart from its work.

Every ``mcp-memory`` command line (a hook's included, where tens of milliseconds count) builds
the whole parser, so this module imports nothing but argparse: the clients' registry
(``setup.py``) is loaded only to check the client's name, to print help, or to run.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from typing import Any


class _ClientNames:
    """The registered clients' names as argparse ``choices``, looked up only when argparse checks a
    value or prints help."""

    def __iter__(self) -> Iterator[str]:
        from mcp_memory.clients.setup import clients

        return iter(sorted(clients()))

    def __contains__(self, name: object) -> bool:
        from mcp_memory.clients.setup import clients

        return name in clients()


def _run(settings: Any, args: argparse.Namespace) -> int:
    from mcp_memory.clients.setup import command_setup

    return command_setup(settings, args)


def add_setup_command(sub: Any) -> None:
    """Register ``setup`` on the command line's subcommands (``sub`` is argparse's subparsers action).

    Its own ``--scope`` is where the configuration goes (user or project), not a memory scope,
    so it does not take the other commands' common options as a parent.
    """
    p = sub.add_parser("setup", help="connect a client: write its MCP server entry (and hooks) for this workspace",
                       argument_default=argparse.SUPPRESS)
    p.add_argument("client", choices=_ClientNames(), metavar="CLIENT", help="the client to connect: %(choices)s")
    p.add_argument("--workspace", "-w", help="workspace folder (default: $MCP_MEMORY_WORKSPACE or a per-user folder)")
    p.add_argument("--config", help="TOML settings file the server and hooks read (default: the workspace's)")
    p.add_argument("--index-path", help="where the derived index lives (written as MCP_MEMORY_INDEX_PATH)")
    p.add_argument("--embedder", choices=["local", "e5", "openai", "none"],
                   help="embedding provider (written as MCP_MEMORY_EMBEDDING_PROVIDER)")
    p.add_argument("--scope", dest="setup_scope", choices=["user", "project"], default=None,
                   help="user configuration, or the current project's (default: the client's usual one)")
    p.add_argument("--dry-run", action="store_true", default=False, help="print the diff; write nothing")
    p.add_argument("--verbose", "-v", action="count", help="log more to stderr")
    p.set_defaults(handler=_run)
