"""OpenClaw: ``mcp-memory setup openclaw``.

One file holds it all, ``openclaw.json`` (``$OPENCLAW_CONFIG_PATH``, else ``$OPENCLAW_STATE_DIR/
openclaw.json``, else ``~/.openclaw/openclaw.json``). OpenClaw reads it as JSON5 but writes it as
plain JSON with a two-space indent, which is how it is written here; a file that is not JSON
(comments, trailing commas) is refused, nothing written. Two entries are ours:

* ``mcp.servers.memory``: the server, with the settings environment in its ``env`` (OpenClaw starts
  MCP servers with a minimal environment, so nothing else reaches them);
* ``plugins.entries.mcp-memory``: the lifecycle plugin, enabled, with
  ``hooks.allowConversationAccess: true`` (without it OpenClaw blocks ``before_prompt_build`` and
  ``agent_end`` for a plugin it did not bundle: no recall, no capture) and its ``config``: the
  absolute ``mcp-memory`` program and the workspace. The plugin runs its hooks with the server
  entry's environment, so server and hooks share one warm process.

The plugin's files ship in the package (``openclaw_plugin/``). With ``openclaw`` on PATH it is
installed with ``openclaw plugins install DIR --force --accept-capabilities`` (without a terminal,
``--force`` alone stops at the capability consent), unless the installed copy already holds the
same files. Without it, the folder goes into ``plugins.load.paths``, which OpenClaw loads from at
the next Gateway start, and the note says how to install it instead.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcp_memory.clients.files import SetupError, child, json_edit, merged_entry
from mcp_memory.clients.setup import SERVER_NAME, ClientSetup, Plan, SetupContext, register, server_entry

PLUGIN_ID = "mcp-memory"
PLUGIN_DIR = Path(__file__).resolve().parent / "openclaw_plugin"
INSTALL_TIMEOUT = 180.0  # seconds: OpenClaw loads its plugin registry to install one (about 10 s here)
_OWNED_CONFIG = ("command", "args", "options", "workspace")  # the plugin config keys setup writes


def openclaw_state_dir(environ: Mapping[str, str], home: Path) -> Path:
    """``$OPENCLAW_STATE_DIR``, else ``~/.openclaw``, as OpenClaw decides."""
    configured = environ.get("OPENCLAW_STATE_DIR")
    return Path(configured).expanduser() if configured else home / ".openclaw"


def openclaw_config_path(environ: Mapping[str, str], home: Path) -> Path:
    """The configuration OpenClaw reads: ``$OPENCLAW_CONFIG_PATH``, else ``openclaw.json`` in its state folder."""
    configured = environ.get("OPENCLAW_CONFIG_PATH")
    return Path(configured).expanduser() if configured else openclaw_state_dir(environ, home) / "openclaw.json"


def openclaw_plan(ctx: SetupContext) -> Plan:
    """The edits of ``openclaw.json`` and, with ``openclaw`` on PATH, the plugin's install."""
    path = openclaw_config_path(ctx.environ, ctx.home)
    program = shutil.which("openclaw", path=ctx.environ.get("PATH"))
    installed = _installed_copy(openclaw_state_dir(ctx.environ, ctx.home))
    edit = json_edit(path, f"MCP server {SERVER_NAME!r} in mcp.servers, plugin {PLUGIN_ID!r} in plugins.entries",
                     lambda data: _put_server(data, path, ctx), lambda data: _put_plugin(data, path, ctx),
                     lambda data: _load_path(data, path, add=program is None))
    plan = Plan([edit], notes=_notes(program))
    if program is not None and not _same_files(installed):
        plan.actions.append(lambda: install_plugin(program, ctx.environ))
    elif program is not None:
        plan.notes.insert(0, f"plugin: already installed in {installed} (same files)")
    return plan


def _put_server(data: dict[str, Any], path: Path, ctx: SetupContext) -> None:
    servers = child(child(data, "mcp", path), "servers", path)
    servers[SERVER_NAME] = merged_entry(servers.get(SERVER_NAME), server_entry(ctx.launch))


def _put_plugin(data: dict[str, Any], path: Path, ctx: SetupContext) -> None:
    entries = child(child(data, "plugins", path), "entries", path)
    entry = child(entries, PLUGIN_ID, path)
    entry["enabled"] = True
    child(entry, "hooks", path)["allowConversationAccess"] = True
    config = {key: value for key, value in child(entry, "config", path).items() if key not in _OWNED_CONFIG}
    config.update(command=ctx.launch.program, workspace=str(ctx.workspace))
    if ctx.launch.prefix:
        config["args"] = list(ctx.launch.prefix)
    if ctx.launch.options:
        config["options"] = list(ctx.launch.options)
    entry["config"] = config


def _load_path(data: dict[str, Any], path: Path, add: bool) -> None:
    """Our folder in ``plugins.load.paths`` without an ``openclaw`` to install it; out of it with one
    (an installed copy and a loaded folder would be the same plugin twice)."""
    load = child(child(data, "plugins", path), "load", path)
    paths = load.get("paths", [])
    if not isinstance(paths, list):
        raise SetupError(f"{path}: plugins.load.paths is not a list; nothing was written")
    kept = [p for p in paths if not (isinstance(p, str) and Path(p).expanduser() == PLUGIN_DIR)]
    if add:
        kept.append(str(PLUGIN_DIR))
    if kept:
        load["paths"] = kept
    else:
        load.pop("paths", None)
        if not load:
            data["plugins"].pop("load")


def _installed_copy(state_dir: Path) -> Path:
    return state_dir / "extensions" / PLUGIN_ID


def _same_files(installed: Path) -> bool:
    """Whether OpenClaw's installed copy of the plugin holds exactly our files."""
    try:
        ours = {p.name: p.read_bytes() for p in PLUGIN_DIR.iterdir() if p.is_file()}
        theirs = {p.name: p.read_bytes() for p in installed.iterdir() if p.is_file()}
    except OSError:
        return False
    return ours == theirs


def install_plugin(program: str, environ: Mapping[str, str]) -> str:
    """Install the plugin with OpenClaw's own command; one line saying how it went."""
    argv = [program, "plugins", "install", str(PLUGIN_DIR), "--force", "--accept-capabilities"]
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=INSTALL_TIMEOUT, env=dict(environ))
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"plugin: could not run {shlex.join(argv)} ({exc}); run it yourself"
    if done.returncode != 0:
        last = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[-1]
        return f"plugin: {shlex.join(argv)} failed ({last}); run it yourself"
    return f"plugin: installed with {shlex.join(argv)}"


def _notes(program: str | None) -> list[str]:
    notes = ["hooks: recall before each prompt (before_prompt_build); capture and the episode after each run "
             "(agent_end); rescue before compaction; the episode at /new, /reset and when the Gateway stops",
             "hooks.allowConversationAccess is true: OpenClaw hands this plugin the prompt and the run's messages "
             "(it blocks before_prompt_build and agent_end for plugins it did not bundle otherwise)",
             "the Gateway applies the change by itself (hot reload); restart it if it does not",
             "tools reach the model through OpenClaw's tool search (tool_call with id memory__memory_search)"]
    if program is None:
        notes.insert(0, f"plugin: openclaw is not on PATH, so the plugin is loaded from {PLUGIN_DIR} "
                        f"(plugins.load.paths); or install it: openclaw plugins install {shlex.quote(str(PLUGIN_DIR))} "
                        "--force --accept-capabilities")
    return notes


register(ClientSetup("openclaw", "OpenClaw", ("user",), openclaw_plan))
