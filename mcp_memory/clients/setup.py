"""``mcp-memory setup <client>``: write (or merge) a client's configuration for this memory.

Each client gets the MCP server entry (``mcp-memory serve`` over stdio, with the settings
environment, ``MCP_MEMORY_WORKSPACE`` at least) and, where the client has hooks that our hook
commands understand, the hooks, run with the same environment (so server and hooks reach the
same warm process). The run is idempotent (a second run changes nothing), keeps every entry it
does not own, refuses a file it cannot parse (nothing written), writes atomically, and with
``--dry-run`` prints the unified diff instead.

The command the client runs is the absolute path of the ``mcp-memory`` program being run
(the one beside this interpreter), never a bare ``mcp-memory``: clients start servers and hooks
with their own, often minimal, PATH, on which a virtualenv's program is not found; and two
installs on one machine cannot swap places behind the configuration's back. Reinstalling
elsewhere means running ``setup`` again.

Clients live in a registry of ``ClientSetup`` records; ``register`` adds one (a module named
in ``_OPTIONAL_CLIENTS`` registers itself when it is importable). The command line's options
are in ``command.py``, which every command line loads, so this module is imported only when
``setup`` runs or its help is printed.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import shlex
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from mcp_memory.clients.files import Edit, SetupError, child, json_edit, merged_entry, write_atomically
from mcp_memory.config import Settings

SERVER_NAME = "memory"
# Modules that add a client of their own when present (each calls ``register`` on import).
_OPTIONAL_CLIENTS = ("mcp_memory.clients.openclaw_setup",)


@dataclass(frozen=True)
class Launch:
    """How a client starts ``mcp-memory``: an absolute program, its leading arguments, the settings
    environment and the command-line settings options (``--config``)."""

    program: str
    prefix: tuple[str, ...] = ()  # ("-m", "mcp_memory") when no mcp-memory program is found
    env: dict[str, str] = field(default_factory=dict)
    options: tuple[str, ...] = ()

    def serve_args(self) -> list[str]:
        return [*self.prefix, "serve", *self.options]

    def hook_command(self, client: str, event: str) -> str:
        """A shell command line running one hook with the server's environment (hooks run in a shell)."""
        env = " ".join(f"{key}={shlex.quote(value)}" for key, value in sorted(self.env.items()))
        words = shlex.join([self.program, *self.prefix, "hook", client, event, *self.options])
        return f"{env} {words}" if env else words


@dataclass(frozen=True)
class SetupContext:
    """Everything a client's setup function reads: nothing else of the machine is looked at."""

    launch: Launch
    workspace: Path
    scope: str  # "user" or "project"
    home: Path
    project: Path  # the project folder (the current directory) for project scope
    environ: Mapping[str, str]
    platform: str = sys.platform

    def config_home(self) -> Path:
        """``$XDG_CONFIG_HOME`` or ``~/.config`` (Linux), where XDG-following clients keep settings."""
        return Path(self.environ.get("XDG_CONFIG_HOME") or self.home / ".config")

    def app_data(self) -> Path:
        """The per-user application folder of desktop apps: macOS, Windows, else XDG."""
        if self.platform == "darwin":
            return self.home / "Library" / "Application Support"
        if self.platform == "win32":
            return Path(self.environ.get("APPDATA") or self.home / "AppData" / "Roaming")
        return self.config_home()


@dataclass
class Plan:
    """What setting up a client does: file edits, then (not in a dry run) ``actions``; ``notes``
    tell the user what the client gets (hooks or why none)."""

    edits: list[Edit]
    notes: list[str] = field(default_factory=list)
    actions: list[Callable[[], str]] = field(default_factory=list)


@dataclass(frozen=True)
class ClientSetup:
    """One client ``setup`` knows: its name on the command line, the scopes it has, its planner."""

    name: str
    title: str
    scopes: tuple[str, ...]  # the first is the default
    plan: Callable[[SetupContext], Plan]


CLIENTS: dict[str, ClientSetup] = {}


def register(client: ClientSetup) -> None:
    """Add (or replace) a client of ``mcp-memory setup``."""
    CLIENTS[client.name] = client


def clients() -> dict[str, ClientSetup]:
    """Every registered client, the optional modules' included."""
    for module in _OPTIONAL_CLIENTS:
        try:
            importlib.import_module(module)
        except ImportError:
            pass
    return CLIENTS


# ----- the command ----------------------------------------------------------------------------------
def run_setup(client: ClientSetup, context: SetupContext, dry_run: bool, out: IO[str]) -> int:
    """Plan, then show (dry run) or write every edit; exit status 0, or raises ``SetupError``."""
    plan = client.plan(context)
    print(f"{client.title} ({context.scope} scope), workspace {context.workspace}", file=out)
    for edit in plan.edits:
        state = "unchanged" if not edit.changed else "would change" if dry_run else "changed"
        print(f"  {state:<12} {edit.path}: {edit.what}", file=out)
        if dry_run and edit.changed:
            out.write(edit.diff())
    if not dry_run:
        for edit in plan.edits:
            if edit.changed:
                write_atomically(edit.path, edit.after)
        context.workspace.mkdir(parents=True, exist_ok=True)
        for action in plan.actions:
            print(f"  {action()}", file=out)
    print(f"  server: {shlex.join([context.launch.program, *context.launch.serve_args()])} "
          f"with {_env_text(context.launch.env)}", file=out)
    for note in plan.notes:
        print(f"  {note}", file=out)
    if dry_run:
        print("  dry run: nothing was written", file=out)
    return 0


def _env_text(env: dict[str, str]) -> str:
    return " ".join(f"{key}={shlex.quote(value)}" for key, value in sorted(env.items()))


def current_program() -> tuple[str, tuple[str, ...]]:
    """The absolute ``mcp-memory`` being run, else this interpreter with ``-m mcp_memory``.

    Not resolved through symbolic links: a virtualenv's ``bin/python`` links to the base
    interpreter, which does not see the virtualenv's packages.
    """
    invoked = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if invoked is not None and invoked.name in ("mcp-memory", "mcp-memory.exe") and invoked.is_file():
        return str(invoked.absolute()), ()
    scripts = Path(sys.executable).parent
    for name in ("mcp-memory", "mcp-memory.exe"):
        if (scripts / name).is_file():
            return str(scripts / name), ()
    return str(Path(sys.executable).absolute()), ("-m", "mcp_memory")


# Settings variables that hold credentials are not copied into a client's configuration file.
_CREDENTIAL = re.compile(r"(KEY|TOKEN|TOKENS|SECRET|PASSWORD)$")


def launch_for(settings: Settings, args: argparse.Namespace, environ: Mapping[str, str]) -> Launch:
    """The launch of the server and hooks: this program, the workspace, the settings given to setup.

    The ``MCP_MEMORY_*`` settings of the environment setup runs in are written too, so the
    server and the hooks run with the same settings (and so share one warm process) even in
    clients that start servers with a reduced environment; credentials are left out.
    """
    program, prefix = current_program()
    env = {key: value for key, value in environ.items()
           if key.startswith("MCP_MEMORY_") and not _CREDENTIAL.search(key)}
    env["MCP_MEMORY_WORKSPACE"] = str(settings.workspace)
    if getattr(args, "index_path", None):
        env["MCP_MEMORY_INDEX_PATH"] = str(args.index_path)
    if getattr(args, "embedder", None):
        env["MCP_MEMORY_EMBEDDING_PROVIDER"] = str(args.embedder)
    options: tuple[str, ...] = ()
    if getattr(args, "config", None):
        options = ("--config", str(Path(args.config).expanduser().absolute()))
    return Launch(program, prefix, env, options)


def left_out(environ: Mapping[str, str]) -> list[str]:
    """The credential settings of the environment that setup does not write."""
    return sorted(key for key in environ if key.startswith("MCP_MEMORY_") and _CREDENTIAL.search(key))


def command_setup(settings: Settings, args: argparse.Namespace) -> int:
    """The ``setup`` subcommand's handler."""
    client = clients()[args.client]
    scope = args.setup_scope or client.scopes[0]
    if scope not in client.scopes:
        print(f"mcp-memory: {client.title} has no {scope} configuration (it has: {', '.join(client.scopes)})",
              file=sys.stderr)
        return 2
    context = SetupContext(launch=launch_for(settings, args, os.environ), workspace=settings.workspace, scope=scope,
                           home=Path(os.environ.get("HOME") or Path.home()), project=Path.cwd(),
                           environ=os.environ)
    skipped = left_out(os.environ)
    if skipped:
        print(f"mcp-memory: not written (credentials): {', '.join(skipped)}; give them to the client yourself",
              file=sys.stderr)
    try:
        return run_setup(client, context, args.dry_run, sys.stdout)
    except SetupError as exc:
        print(f"mcp-memory: {exc}", file=sys.stderr)
        return 2


# ----- the clients -------------------------------------------------------------------------------
def server_entry(launch: Launch, **extra: Any) -> dict[str, Any]:
    """The stdio server entry most clients take (``extra``: a client's own keys, first)."""
    return {**extra, "command": launch.program, "args": launch.serve_args(), "env": dict(launch.env)}


Change = Callable[[dict[str, Any]], None]  # an in-place change of a JSON configuration's data


def server_change(path: Path, container: str, entry: dict[str, Any]) -> Change:
    """Put ``entry`` as ``<container>.memory`` in a JSON file, over any entry of that name."""
    def change(data: dict[str, Any]) -> None:
        servers = child(data, container, path)
        servers[SERVER_NAME] = merged_entry(servers.get(SERVER_NAME), entry)

    return change


def json_server_edit(path: Path, container: str, entry: dict[str, Any]) -> Edit:
    return json_edit(path, f"MCP server {SERVER_NAME!r} in {container}", server_change(path, container, entry))


# A hook command is ours when it runs mcp-memory's hook for this client and event (any path, any options).
def _our_hook(command: Any, client: str, event: str) -> bool:
    return isinstance(command, str) and re.search(
        rf"mcp[-_]memory\S*\s+(?:\S+\s+)*?hook\s+{re.escape(client)}\s+{re.escape(event)}(?:\s|$)", command) is not None


@dataclass(frozen=True)
class HookSpec:
    """One hook: the client's event name, our hook event, its timeout in the client's unit."""

    client_event: str
    our_event: str
    timeout: int


def hooks_change(path: Path, launch: Launch, hooks: list[HookSpec], our_client: str = "claude-code",
                 extra: Mapping[str, Any] | None = None) -> Change:
    """Put our hooks in ``hooks.<Event>`` of a JSON settings file (Claude Code's layout, which
    Gemini CLI shares): an existing hook of ours is updated in place, the user's stay as they are."""
    def change(data: dict[str, Any]) -> None:
        events = child(data, "hooks", path)
        for spec in hooks:
            ours = {"type": "command", "command": launch.hook_command(our_client, spec.our_event),
                    "timeout": spec.timeout, **(extra or {})}
            groups = events.setdefault(spec.client_event, [])
            if not isinstance(groups, list):
                raise SetupError(f"{path}: hooks.{spec.client_event} is not a list; nothing was written")
            _place_hook(groups, ours, our_client, spec.our_event)

    return change


def _place_hook(groups: list[Any], ours: dict[str, Any], client: str, event: str) -> None:
    found = False
    for group in groups:
        entries = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(entries, list):
            continue
        for index, entry in reversed(list(enumerate(entries))):
            if isinstance(entry, dict) and _our_hook(entry.get("command"), client, event):
                if found:
                    del entries[index]  # a duplicate of ours: one hook runs once
                else:
                    entries[index] = {**entry, **ours}
                    found = True
    if not found:
        groups.append({"hooks": [ours]})


CLAUDE_CODE_HOOKS = [
    HookSpec("SessionStart", "session-start", 10),
    HookSpec("UserPromptSubmit", "prompt", 10),
    HookSpec("Stop", "stop", 60),
    HookSpec("PreCompact", "pre-compact", 60),
    HookSpec("SessionEnd", "session-end", 60),
]


def _claude_code(ctx: SetupContext) -> Plan:
    """User: the server in ``~/.claude.json``, hooks in ``~/.claude/settings.json`` (both under
    ``$CLAUDE_CONFIG_DIR`` when set); project: ``.mcp.json`` and ``.claude/settings.json``."""
    # alwaysLoad: Claude Code otherwise builds a session's first request without waiting for MCP
    # servers, and on a busy machine it lists our tools only after that request has gone out.
    entry = server_entry(ctx.launch, type="stdio", alwaysLoad=True)
    if ctx.scope == "user":
        config_dir = ctx.environ.get("CLAUDE_CONFIG_DIR")
        servers = Path(config_dir) / ".claude.json" if config_dir else ctx.home / ".claude.json"
        settings = Path(config_dir) / "settings.json" if config_dir else ctx.home / ".claude" / "settings.json"
    else:
        servers, settings = ctx.project / ".mcp.json", ctx.project / ".claude" / "settings.json"
    names = ", ".join(spec.client_event for spec in CLAUDE_CODE_HOOKS)
    return Plan([json_server_edit(servers, "mcpServers", entry),
                 json_edit(settings, f"hooks {names}", hooks_change(settings, ctx.launch, CLAUDE_CODE_HOOKS))],
                notes=["hooks: pinned rules at SessionStart, recall on UserPromptSubmit, capture on Stop, "
                       "rescue on PreCompact, the episode on SessionEnd",
                       "tools reach the model as mcp__memory__* (allow them with --allowedTools mcp__memory "
                       "or /permissions)"])


def _claude_desktop(ctx: SetupContext) -> Plan:
    path = ctx.app_data() / "Claude" / "claude_desktop_config.json"
    return Plan([json_server_edit(path, "mcpServers", server_entry(ctx.launch))],
                notes=["hooks: none (Claude Desktop has none): the server's instructions ask the model to "
                       "recall and capture with the memory tools; restart Claude Desktop to load the server"])


def _cursor(ctx: SetupContext) -> Plan:
    base = ctx.home if ctx.scope == "user" else ctx.project
    return Plan([json_server_edit(base / ".cursor" / "mcp.json", "mcpServers", server_entry(ctx.launch))],
                notes=["hooks: none (Cursor's hooks cannot add context to a prompt): the model recalls "
                       "and captures with the memory tools"])


def _vscode(ctx: SetupContext) -> Plan:
    if ctx.scope == "project":
        path = ctx.project / ".vscode" / "mcp.json"
    else:
        path = ctx.app_data() / "Code" / "User" / "mcp.json"
    return Plan([json_server_edit(path, "servers", server_entry(ctx.launch, type="stdio"))],
                notes=["hooks: none (VS Code has none for MCP servers): the model recalls and captures with "
                       "the memory tools; memory_capture uses the chat model through MCP sampling"])


def _codex(ctx: SetupContext) -> Plan:
    from mcp_memory.clients.codex_setup import codex_plan

    return codex_plan(ctx)


def _gemini(ctx: SetupContext) -> Plan:
    from mcp_memory.clients.gemini_setup import gemini_plan

    return gemini_plan(ctx)


register(ClientSetup("claude-code", "Claude Code", ("user", "project"), _claude_code))
register(ClientSetup("claude-desktop", "Claude Desktop", ("user",), _claude_desktop))
register(ClientSetup("cursor", "Cursor", ("user", "project"), _cursor))
register(ClientSetup("vscode", "VS Code", ("project", "user"), _vscode))
register(ClientSetup("codex", "Codex CLI", ("user",), _codex))
register(ClientSetup("gemini", "Gemini CLI", ("user", "project"), _gemini))
