"""Codex CLI: the server in ``$CODEX_HOME/config.toml`` (``~/.codex/config.toml`` by default), hooks
in ``$CODEX_HOME/hooks.json``.

The TOML file is edited by hand, so it is changed with tomlkit, which keeps the user's comments,
order and layout: only ``[mcp_servers.memory]`` is written. Codex starts MCP servers with a
reduced environment, so the settings go in the entry's own ``env`` table.

Codex's hooks (``hooks.json``, Claude Code's layout and input: ``session_id``, ``prompt``,
``cwd``, ``transcript_path``; ``hookSpecificOutput.additionalContext`` out) serve recall
(``UserPromptSubmit``) and the pinned rules (``SessionStart``) through the Claude Code hook
commands. Capture, rescue and episodes are not wired: their hooks hand over only Codex's own
session file, which the transcript readers do not read. Codex runs a new hook only once the user
has trusted it (the next interactive start asks; ``codex exec --dangerously-bypass-hook-trust``
runs them without).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp_memory.clients.files import Edit, SetupError, read_text

if TYPE_CHECKING:
    from mcp_memory.clients.setup import Plan, SetupContext

STARTUP_TIMEOUT_SEC = 30  # a cold start (index, model) of a first server takes seconds on a slow disk


def codex_home(ctx: SetupContext) -> Path:
    """``$CODEX_HOME``, else ``~/.codex``, as Codex itself decides."""
    configured = ctx.environ.get("CODEX_HOME")
    return Path(configured).expanduser() if configured else ctx.home / ".codex"


def codex_plan(ctx: SetupContext) -> Plan:
    from mcp_memory.clients.files import json_edit
    from mcp_memory.clients.setup import SERVER_NAME, HookSpec, Plan, hooks_change

    home = codex_home(ctx)
    wanted: dict[str, Any] = {"command": ctx.launch.program, "args": ctx.launch.serve_args(),
                              "env": dict(ctx.launch.env), "startup_timeout_sec": STARTUP_TIMEOUT_SEC}
    hooks = [HookSpec("SessionStart", "session-start", 10), HookSpec("UserPromptSubmit", "prompt", 10)]
    hooks_path = home / "hooks.json"
    return Plan([_server_edit(home / "config.toml", SERVER_NAME, wanted),
                 json_edit(hooks_path, "hooks SessionStart, UserPromptSubmit", hooks_change(hooks_path, ctx.launch,
                                                                                              hooks))],
                notes=["hooks: pinned rules at SessionStart, recall on UserPromptSubmit; no capture, rescue or "
                       "episodes (Codex's Stop and SessionEnd hand over only its own session file)",
                       "Codex runs new hooks only once you trust them: the next interactive codex asks "
                       "(codex exec --dangerously-bypass-hook-trust runs them without)",
                       "tools reach the model as one namespace tool mcp__memory"])


def _server_edit(path: Path, name: str, wanted: dict[str, Any]) -> Edit:
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    before = read_text(path)
    try:
        document = tomlkit.parse(before or "")
    except TOMLKitError as exc:
        raise SetupError(f"cannot parse {path} as TOML ({exc}); nothing was written") from None
    servers = document.get("mcp_servers")
    if servers is None:
        servers = tomlkit.table(is_super_table=True)
        document["mcp_servers"] = servers
    elif not isinstance(servers, dict):
        raise SetupError(f"{path}: mcp_servers is not a table; nothing was written")
    entry = servers.get(name)
    if entry is not None and not isinstance(entry, dict):
        raise SetupError(f"{path}: mcp_servers.{name} is not a table; nothing was written")
    current: dict[str, Any] = _plain(entry) if entry is not None else {}
    merged_env = {**(current.get("env") or {}), **wanted["env"]}
    if all(current.get(key) == value for key, value in wanted.items() if key != "env") \
            and current.get("env") == merged_env and before is not None:
        return Edit(path, before, before, f"MCP server {name!r} in [mcp_servers]")
    if entry is None:
        entry = tomlkit.table()
        servers[name] = entry
    for key in ("command", "args", "startup_timeout_sec"):
        entry[key] = wanted[key]
    env = entry.get("env")
    if isinstance(env, dict):
        for key, value in wanted["env"].items():
            env[key] = value
    else:
        table = tomlkit.table()
        table.update(merged_env)
        entry["env"] = table
    return Edit(path, before, tomlkit.dumps(document), f"MCP server {name!r} in [mcp_servers]")


def _plain(table: Any) -> dict[str, Any]:
    """A tomlkit table as plain Python values (to compare with what we would write)."""
    unwrap = getattr(table, "unwrap", None)
    return dict(unwrap() if callable(unwrap) else table)
