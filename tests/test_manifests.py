"""Every client manifest parses and names a command line mcp-memory accepts."""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from pathlib import Path

import pytest

import mcp_memory
from mcp_memory.cli import _parser

MANIFESTS = Path(__file__).resolve().parents[1] / "manifests"
CLIENT_FILES = ["claude-code.mcp.json", "claude-desktop.json", "cursor.mcp.json", "vscode.mcp.json",
                "claude-code-plugin/.mcp.json", "openclaw.json"]
HOOK_FILES = ["claude-code.settings.json", "claude-code-plugin/hooks/hooks.json"]


def _servers(data: dict) -> dict:
    return data.get("mcpServers") or data.get("servers") or data.get("mcp", {}).get("servers") or {}


@pytest.mark.parametrize("name", CLIENT_FILES)
def test_client_manifest_starts_a_real_command(name):
    data = json.loads((MANIFESTS / name).read_text(encoding="utf-8"))
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


def test_claude_code_plugin_layout():
    root = MANIFESTS / "claude-code-plugin"
    plugin = json.loads((root / ".claude-plugin" / "plugin.json").read_text(encoding="utf-8"))
    assert plugin["name"] == "mcp-memory" and plugin["version"] == mcp_memory.__version__
    server = _servers(json.loads((root / ".mcp.json").read_text(encoding="utf-8")))["memory"]
    assert server["env"]["MCP_MEMORY_WORKSPACE"] == "~/memory"


def test_openclaw_plugin_layout():
    root = MANIFESTS / "openclaw-plugin"
    package = json.loads((root / "package.json").read_text(encoding="utf-8"))
    manifest = json.loads((root / "openclaw.plugin.json").read_text(encoding="utf-8"))
    assert package["type"] == "module" and package["version"] == mcp_memory.__version__
    (entry,) = package["openclaw"]["extensions"]
    assert (root / entry).is_file()
    # OpenClaw refuses a plugin manifest without an id and a JSON Schema for its config.
    assert manifest["id"] == "mcp-memory" and manifest["configSchema"]["type"] == "object"
    source = (root / entry).read_text(encoding="utf-8")
    # Every event the plugin runs is one the hook command knows.
    from mcp_memory.openclaw_hooks import EVENTS

    for event in EVENTS:
        assert f'"{event}"' in source
