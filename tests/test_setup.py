"""``mcp-memory setup <client>``: fresh files, merges, idempotence, dry runs, refusals, a server that starts."""

from __future__ import annotations

import json
import os
import stat
import tomllib
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from mcp_memory.cli import main
from mcp_memory.clients import setup as client_setup
from mcp_memory.clients.setup import ClientSetup, Plan, register

# Where each client keeps its files, per scope: (the file of the server entry, the key holding servers),
# then the files holding our hooks (relative to HOME for user scope, to the project for project scope).
SERVERS: dict[str, dict[str, tuple[str, str]]] = {
    "claude-code": {"user": (".claude.json", "mcpServers"), "project": (".mcp.json", "mcpServers")},
    "claude-desktop": {"user": (".config/Claude/claude_desktop_config.json", "mcpServers")},
    "cursor": {"user": (".cursor/mcp.json", "mcpServers"), "project": (".cursor/mcp.json", "mcpServers")},
    "vscode": {"project": (".vscode/mcp.json", "servers"), "user": (".config/Code/User/mcp.json", "servers")},
    "codex": {"user": (".codex/config.toml", "mcp_servers")},
    "gemini": {"user": (".gemini/settings.json", "mcpServers"), "project": (".gemini/settings.json", "mcpServers")},
}
HOOKS: dict[str, tuple[str, str, list[str]]] = {  # file (user scope), an event of ours, every event of ours
    "claude-code": (".claude/settings.json", "UserPromptSubmit",
                    ["SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "SessionEnd"]),
    "codex": (".codex/hooks.json", "UserPromptSubmit", ["SessionStart", "UserPromptSubmit"]),
    "gemini": (".gemini/settings.json", "BeforeAgent", ["SessionStart", "BeforeAgent", "AfterAgent"]),
}
CASES = [(client, scope) for client, scopes in SERVERS.items() for scope in scopes]


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A HOME, a project folder (the current directory) and a workspace; no client settings inherited."""
    home, project, workspace = tmp_path / "home", tmp_path / "project", tmp_path / "memory"
    home.mkdir()
    project.mkdir()
    for name in ("XDG_CONFIG_HOME", "CODEX_HOME", "CLAUDE_CONFIG_DIR", "APPDATA"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(project)
    return {"home": home, "project": project, "workspace": workspace}


def _setup(machine: dict[str, Path], client: str, *options: str) -> int:
    return main(["setup", client, "--workspace", str(machine["workspace"]), *options])


def _root(machine: dict[str, Path], scope: str) -> Path:
    return machine["home"] if scope == "user" else machine["project"]


def _load(path: Path) -> dict[str, Any]:
    text = path.read_text(encoding="utf-8")
    return tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)


def _server(machine: dict[str, Path], client: str, scope: str) -> dict[str, Any]:
    name, key = SERVERS[client][scope]
    return _load(_root(machine, scope) / name)[key]["memory"]


def _hook_commands(path: Path, event: str) -> list[str]:
    return [hook["command"] for group in _load(path)["hooks"][event] for hook in group["hooks"]]


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(("client", "scope"), CASES)
def test_fresh_setup_writes_the_server_with_an_absolute_command(machine, client, scope, capsys):
    assert _setup(machine, client, "--scope", scope) == 0
    entry = _server(machine, client, scope)
    assert Path(entry["command"]).is_absolute() and Path(entry["command"]).exists(), entry
    assert entry["args"][-1] == "serve"
    assert entry["env"]["MCP_MEMORY_WORKSPACE"] == str(machine["workspace"])
    assert machine["workspace"].is_dir()
    assert "changed" in capsys.readouterr().out


@pytest.mark.parametrize("scope", ["user", "project"])
def test_claude_code_is_told_to_wait_for_the_server(machine, scope):
    """Claude Code builds its first request without pending servers unless told to wait for one."""
    assert _setup(machine, "claude-code", "--scope", scope) == 0
    assert _server(machine, "claude-code", scope)["alwaysLoad"] is True


@pytest.mark.parametrize("client", sorted(HOOKS))
def test_hooks_run_our_hook_commands_with_the_servers_settings(machine, client):
    assert _setup(machine, client) == 0
    name, _, events = HOOKS[client]
    entry = _server(machine, client, "user")
    for event in events:
        (command,) = _hook_commands(machine["home"] / name, event)
        assert f"MCP_MEMORY_WORKSPACE={machine['workspace']}" in command
        assert f"{entry['command']} hook claude-code " in command


@pytest.mark.parametrize(("client", "scope"), CASES)
def test_setup_twice_changes_nothing_the_second_time(machine, client, scope, capsys):
    assert _setup(machine, client, "--scope", scope) == 0
    before = _files(_root(machine, scope))
    capsys.readouterr()
    assert _setup(machine, client, "--scope", scope) == 0
    out = capsys.readouterr().out
    assert _files(_root(machine, scope)) == before
    assert "unchanged" in out and "  changed " not in out, out


@pytest.mark.parametrize(("client", "scope"), CASES)
def test_dry_run_prints_the_diff_and_writes_nothing(machine, client, scope, capsys):
    assert _setup(machine, client, "--scope", scope, "--dry-run") == 0
    out = capsys.readouterr().out
    assert _files(machine["home"]) == {} and _files(machine["project"]) == {}
    assert not machine["workspace"].exists()
    assert "+++ " in out and "MCP_MEMORY_WORKSPACE" in out
    assert "dry run: nothing was written" in out


def _existing(client: str) -> str:
    """A configuration the user already has: another server, a setting of theirs, a hook of theirs."""
    if client == "codex":
        return ('# my Codex settings\nmodel = "o3"  # the model I use\n\n'
                '[mcp_servers.other]\ncommand = "other-server"\nargs = ["--flag"]\n')
    key = SERVERS[client][next(iter(SERVERS[client]))][1]
    data: dict[str, Any] = {"theme": "dark", key: {"other": {"command": "other-server", "args": ["--flag"]}}}
    if client == "gemini":
        data["hooks"] = {"BeforeAgent": [{"hooks": [{"type": "command", "command": "echo mine"}]}]}
    return json.dumps(data, indent=4)


@pytest.mark.parametrize(("client", "scope"), CASES)
def test_setup_keeps_the_users_other_entries(machine, client, scope):
    name, key = SERVERS[client][scope]
    path = _root(machine, scope) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_existing(client), encoding="utf-8")
    assert _setup(machine, client, "--scope", scope) == 0
    data = _load(path)
    assert data[key]["other"] == {"command": "other-server", "args": ["--flag"]}
    assert "memory" in data[key]
    if client == "codex":
        text = path.read_text(encoding="utf-8")
        assert text.startswith("# my Codex settings\nmodel = \"o3\"  # the model I use\n"), text
    else:
        assert data["theme"] == "dark"
    if client == "gemini":
        assert "echo mine" in _hook_commands(path, "BeforeAgent")


def test_claude_code_keeps_the_users_hooks_and_replaces_an_older_hook_of_ours(machine):
    settings = machine["home"] / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    old = "mcp-memory hook claude-code prompt --workspace ~/memory"
    settings.write_text(json.dumps({"model": "opus", "hooks": {"UserPromptSubmit": [
        {"hooks": [{"type": "command", "command": "echo mine"}]},
        {"hooks": [{"type": "command", "command": old, "timeout": 10}]}]}}), encoding="utf-8")
    assert _setup(machine, "claude-code") == 0
    data = _load(settings)
    commands = _hook_commands(settings, "UserPromptSubmit")
    assert data["model"] == "opus" and commands[0] == "echo mine" and len(commands) == 2, commands
    assert old not in commands and commands[1].endswith("hook claude-code prompt")


@pytest.mark.parametrize(("client", "broken"), [
    ("claude-code", (".claude/settings.json", '{"hooks": {,}')),  # the second file: the first is not written either
    ("claude-desktop", (".config/Claude/claude_desktop_config.json", "{not json")),
    ("cursor", (".cursor/mcp.json", '{"mcpServers": {"a": 1},}')),
    ("vscode", (".config/Code/User/mcp.json", "// a comment\n{}")),
    ("codex", (".codex/config.toml", "[mcp_servers\ncommand = 1")),
    ("gemini", (".gemini/settings.json", "[1, 2]")),
])
def test_a_file_that_cannot_be_parsed_is_refused_and_nothing_is_written(machine, client, broken, capsys):
    path = machine["home"] / broken[0]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(broken[1], encoding="utf-8")
    before = _files(machine["home"])
    assert _setup(machine, client, "--scope", "user") == 2
    err = capsys.readouterr().err
    assert str(path) in err and "nothing was written" in err, err
    assert _files(machine["home"]) == before and _files(machine["project"]) == {}


def test_config_locations_follow_the_clients_environment(machine, tmp_path, monkeypatch):
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-dir"))
    for client in ("codex", "claude-desktop", "claude-code"):
        assert _setup(machine, client) == 0
    assert "memory" in _load(tmp_path / "codex-home" / "config.toml")["mcp_servers"]
    assert (tmp_path / "codex-home" / "hooks.json").is_file()
    assert "memory" in _load(tmp_path / "xdg" / "Claude" / "claude_desktop_config.json")["mcpServers"]
    assert "memory" in _load(tmp_path / "claude-dir" / ".claude.json")["mcpServers"]
    assert (tmp_path / "claude-dir" / "settings.json").is_file()
    assert _files(machine["home"]) == {}


def test_settings_of_the_environment_are_written_but_credentials_are_not(machine, monkeypatch, capsys):
    monkeypatch.setenv("MCP_MEMORY_SEARCH_MAX_RESULTS", "9")
    monkeypatch.setenv("MCP_MEMORY_EMBEDDING_API_KEY", "sk-not-for-files")
    assert _setup(machine, "cursor", "--embedder", "none") == 0
    env = _server(machine, "cursor", "user")["env"]
    assert env["MCP_MEMORY_SEARCH_MAX_RESULTS"] == "9" and env["MCP_MEMORY_EMBEDDING_PROVIDER"] == "none"
    assert "MCP_MEMORY_EMBEDDING_API_KEY" not in env
    assert "sk-not-for-files" not in (machine["home"] / ".cursor" / "mcp.json").read_text(encoding="utf-8")
    assert "MCP_MEMORY_EMBEDDING_API_KEY" in capsys.readouterr().err


def test_a_symlinked_file_keeps_its_link_and_its_permissions(machine, tmp_path):
    real = tmp_path / "dotfiles" / "mcp.json"
    real.parent.mkdir()
    real.write_text('{"mcpServers": {}}', encoding="utf-8")
    real.chmod(0o600)
    link = machine["home"] / ".cursor" / "mcp.json"
    link.parent.mkdir()
    link.symlink_to(real)
    assert _setup(machine, "cursor") == 0
    assert link.is_symlink() and "memory" in _load(real)["mcpServers"]
    assert stat.S_IMODE(real.stat().st_mode) == 0o600


def test_a_client_without_project_configuration_says_so(machine, capsys):
    assert _setup(machine, "claude-desktop", "--scope", "project") == 2
    assert "no project configuration" in capsys.readouterr().err


def test_a_registered_client_appears_in_the_command(machine, capsys, monkeypatch):
    """How an optional module adds a client (OpenClaw's does): one ``register`` call."""
    monkeypatch.setattr(client_setup, "CLIENTS", dict(client_setup.CLIENTS))
    register(ClientSetup("example", "Example", ("user",), lambda ctx: Plan([], notes=["hooks: none"])))
    assert _setup(machine, "example", "--dry-run") == 0
    assert "Example (user scope)" in capsys.readouterr().out


@pytest.mark.anyio
async def test_the_written_command_starts_the_server(machine):
    """The entry as the client reads it (command, args, env) serves the memory tools over stdio."""
    assert _setup(machine, "claude-code") == 0
    entry = _server(machine, "claude-code", "user")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_MEMORY_")} | entry["env"]
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env=env,
                                   cwd=str(machine["project"]))
    async with Client(params) as client:
        tools = await client.list_tools()
        names = {tool.name for tool in tools.tools}
        assert {"memory_search", "memory_store"} <= names, names
        result = await client.call_tool("memory_store", {"text": "The user's setup check ran"})
        assert not result.is_error, result.content
    daily = sorted((machine["workspace"] / "memory").glob("*.md"))
    assert any("setup check ran" in path.read_text(encoding="utf-8") for path in daily)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
