"""Running Codex CLI headless against the scripted Responses model, and reading what it did.

The world's ``$CODEX_HOME/config.toml`` names the model provider (our server, ``wire_api =
"responses"``) before ``mcp-memory setup codex`` merges the memory server into it, as a user's
existing configuration would. ``run_codex`` runs ``codex exec --skip-git-repo-check --json
--color never PROMPT`` in the project folder; the hooks setup wrote run without the interactive
trust review (``--dangerously-bypass-hook-trust``), which a headless run cannot answer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .conftest import World, client_binary, run_headless
from .model_responses import ResponsesModel
from .model_script import Recorded

PROVIDER = """# written before mcp-memory setup: the user's own settings, which setup must keep
model = "gpt-5"
model_provider = "scripted"
approval_policy = "never"
sandbox_mode = "read-only"
check_for_update_on_startup = false

[model_providers.scripted]
name = "scripted"
base_url = "{url}"
wire_api = "responses"
env_key = "SCRIPTED_API_KEY"

[analytics]
enabled = false

[feedback]
enabled = false

# Codex syncs plugin marketplaces from the network at start; these runs stay on loopback.
[features]
plugins = false
remote_plugin = false
plugin_sharing = false
"""


@dataclass
class CodexRun:
    returncode: int
    events: list[dict[str, Any]]
    stderr: str
    requests: list[Recorded]

    def tool_outputs(self) -> list[str]:
        """The outputs of the tool calls Codex sent back to the model."""
        return [str(item.get("output")) for r in self.requests for item in r.body.get("input") or []
                if isinstance(item, dict) and item.get("type") == "function_call_output"]

    def describe(self) -> str:
        return f"exit {self.returncode}; stderr: {self.stderr[-2000:]}; events: {json.dumps(self.events)[-3000:]}"


def write_provider(world: World, model: ResponsesModel) -> None:
    codex_home = world.home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(PROVIDER.format(url=model.api_url), encoding="utf-8")


def run_codex(world: World, model: ResponsesModel, prompt: str) -> CodexRun:
    first = len(model.requests)
    env = {**world.env, "SCRIPTED_API_KEY": "dummy"}
    argv = [str(client_binary("codex")), "exec", "--dangerously-bypass-hook-trust", "--skip-git-repo-check",
            "--json", "--color", "never", prompt]
    returncode, events, stderr = run_headless(argv, env, world.project)
    return CodexRun(returncode, events, stderr, list(model.requests[first:]))
