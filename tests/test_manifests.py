"""Every client manifest parses and names a command line mcp-memory accepts."""

from __future__ import annotations

import json
import shlex
import shutil
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

import mcp_memory
from mcp_memory.cli import _parser

MANIFESTS = Path(__file__).resolve().parents[1] / "manifests"
CLIENT_FILES = ["claude-code.mcp.json", "claude-desktop.json", "cursor.mcp.json", "vscode.mcp.json",
                "claude-code-plugin/.mcp.json", "openclaw.json", "codex.config.toml", "gemini.settings.json"]
HOOK_FILES = ["claude-code.settings.json", "claude-code-plugin/hooks/hooks.json"]


def _load(name: str) -> dict[str, Any]:
    text = (MANIFESTS / name).read_text(encoding="utf-8")
    return tomllib.loads(text) if name.endswith(".toml") else json.loads(text)


def _servers(data: dict) -> dict:
    return (data.get("mcpServers") or data.get("servers") or data.get("mcp", {}).get("servers")
            or data.get("mcp_servers") or {})


@pytest.mark.parametrize("name", CLIENT_FILES)
def test_client_manifest_starts_a_real_command(name):
    data = _load(name)
    servers = _servers(data)
    assert "memory" in servers
    entry = servers["memory"]
    assert entry["command"] == "mcp-memory"
    # The console script exists in this environment (installed by pip install .)
    assert shutil.which("mcp-memory") or (Path(sys.executable).parent / "mcp-memory").exists()
    args = _parser().parse_args(entry["args"])
    assert args.command == "serve" and args.transport == "stdio"
    assert entry.get("env", {}).get("MCP_MEMORY_WORKSPACE")


def test_registry_server_json_matches_the_package():
    data = json.loads((MANIFESTS / "server.json").read_text(encoding="utf-8"))
    assert data["$schema"].startswith("https://static.modelcontextprotocol.io/schemas/")
    assert data["name"].count("/") == 1
    assert data["version"] == mcp_memory.__version__
    (package,) = data["packages"]
    assert package["registryType"] == "pypi" and package["identifier"] == "mcp-memory"
    assert package["version"] == mcp_memory.__version__
    assert package["transport"] == {"type": "stdio"}
    args = [a["value"] for a in package["packageArguments"]]
    assert _parser().parse_args(args).command == "serve"


@pytest.mark.parametrize("name", HOOK_FILES)
def test_claude_code_hooks_run_our_hook_commands(name):
    data = json.loads((MANIFESTS / name).read_text(encoding="utf-8"))
    events = data["hooks"]
    assert set(events) == {"UserPromptSubmit", "Stop", "SessionStart", "PreCompact", "SessionEnd"}
    seen = {}
    for event, groups in events.items():
        (group,) = groups
        (hook,) = group["hooks"]
        assert hook["type"] == "command" and 0 < hook["timeout"] <= 60
        argv = shlex.split(hook["command"])
        assert argv[0] == "mcp-memory"
        args = _parser().parse_args(argv[1:])
        assert args.command == "hook" and args.client == "claude-code"
        seen[event] = (args.event, args.workspace)
    assert {event: name for event, (name, _) in seen.items()} == {
        "UserPromptSubmit": "prompt", "Stop": "stop", "SessionStart": "session-start",
        "PreCompact": "pre-compact", "SessionEnd": "session-end"}
    # Hooks and the server of the same manifest set name one workspace.
    assert {workspace for _, workspace in seen.values()} == {"~/memory"}


@pytest.mark.parametrize(("name", "client"), [("codex.hooks.json", "codex"), ("gemini.settings.json", "gemini")])
def test_codex_and_gemini_hooks_are_the_ones_setup_writes(name, client):
    """Each manifest's hooks: the events, hook commands and timeouts ``mcp-memory setup`` writes."""
    from mcp_memory.clients.setup import Launch, SetupContext, clients

    context = SetupContext(launch=Launch("mcp-memory"), workspace=Path("/w"), scope="user", home=Path("/h"),
                           project=Path("/p"), environ={})
    (written,) = [edit for edit in clients()[client].plan(context).edits if edit.path.suffix == ".json"]
    expected = {event: [(hook["command"].split(" hook ")[1], hook["timeout"]) for group in groups
                        for hook in group["hooks"]] for event, groups in json.loads(written.after)["hooks"].items()}
    found = {}
    for event, groups in _load(name)["hooks"].items():
        found[event] = []
        for group in groups:
            for hook in group["hooks"]:
                argv = shlex.split(hook["command"])
                args = _parser().parse_args(argv[1:])
                assert argv[0] == "mcp-memory" and args.command == "hook" and args.workspace == "~/memory"
                found[event].append((f"{args.client} {args.event}", hook["timeout"]))
    assert found == expected


def test_claude_code_plugin_layout():
    root = MANIFESTS / "claude-code-plugin"
    plugin = json.loads((root / ".claude-plugin" / "plugin.json").read_text(encoding="utf-8"))
    assert plugin["name"] == "mcp-memory" and plugin["version"] == mcp_memory.__version__
    assert plugin["author"]["name"]  # `claude plugin validate` warns without one
    server = _servers(json.loads((root / ".mcp.json").read_text(encoding="utf-8")))["memory"]
    assert server["env"]["MCP_MEMORY_WORKSPACE"] == "~/memory"


@pytest.mark.parametrize("name", ["claude-code.mcp.json", "claude-code-plugin/.mcp.json"])
def test_claude_code_waits_for_the_server_before_its_first_request(name):
    """Without ``alwaysLoad`` a busy machine's first request can go out before our tools are listed."""
    server = _servers(json.loads((MANIFESTS / name).read_text(encoding="utf-8")))["memory"]
    assert server["alwaysLoad"] is True


def test_claude_code_marketplace_lists_the_plugin_folder():
    """``claude plugin marketplace add manifests/claude-code-plugin`` reads this, then installs the plugin."""
    root = MANIFESTS / "claude-code-plugin"
    marketplace = json.loads((root / ".claude-plugin" / "marketplace.json").read_text(encoding="utf-8"))
    assert marketplace["name"] and marketplace["owner"]["name"]
    (entry,) = marketplace["plugins"]
    plugin_root = (root / entry["source"]).resolve()
    plugin = json.loads((plugin_root / ".claude-plugin" / "plugin.json").read_text(encoding="utf-8"))
    assert entry["name"] == plugin["name"] and entry["version"] == plugin["version"] == mcp_memory.__version__


def test_every_manifest_has_a_row_in_the_readme():
    readme = (MANIFESTS / "README.md").read_text(encoding="utf-8")
    for path in sorted(MANIFESTS.iterdir()):
        if path.name != "README.md":
            assert f"`{path.name}{'/' if path.is_dir() else ''}`" in readme, path.name


def test_openclaw_plugin_layout():
    root = MANIFESTS.parent / "mcp_memory" / "clients" / "openclaw_plugin"
    package = json.loads((root / "package.json").read_text(encoding="utf-8"))
    manifest = json.loads((root / "openclaw.plugin.json").read_text(encoding="utf-8"))
    assert package["type"] == "module" and package["version"] == mcp_memory.__version__
    (entry,) = package["openclaw"]["extensions"]
    assert (root / entry).is_file()
    # OpenClaw refuses a plugin manifest without an id and a JSON Schema for its config.
    assert manifest["id"] == "mcp-memory" and manifest["configSchema"]["type"] == "object"
    source = (root / entry).read_text(encoding="utf-8")
    # Every event the plugin runs is one the hook command knows.
    from mcp_memory.clients.openclaw_hooks import EVENTS

    for event in EVENTS:
        assert f'"{event}"' in source
