"""Running Claude Code headless against the scripted Anthropic model, and reading what it did.

``run_claude`` runs ``claude -p PROMPT --output-format stream-json --verbose
--include-hook-events`` in the world's project folder, with the environment that keeps it
offline (``ANTHROPIC_BASE_URL`` on our model, updates, telemetry and error reports off), and
returns a ``ClaudeRun``: the stream-json events and the model requests made during the run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .conftest import World, client_binary, run_headless
from .model_anthropic import AnthropicModel
from .model_script import Recorded


@dataclass
class ClaudeRun:
    returncode: int
    events: list[dict[str, Any]]
    stderr: str
    requests: list[Recorded]  # the model requests made during this run, oldest first

    @property
    def session_id(self) -> str:
        return next(str(e["session_id"]) for e in self.events if e.get("session_id"))

    def conversation(self) -> list[dict[str, Any]]:
        """The bodies of the run's conversation requests (those offering tools), oldest first."""
        return [r.body for r in self.requests if r.body.get("tools")]

    def hook_outputs(self, hook_name: str) -> list[str]:
        """What the hooks named ``hook_name`` (``SessionStart:compact``, ``UserPromptSubmit``) printed."""
        return [str(e.get("output") or e.get("stdout") or "") for e in self.events
                if e.get("subtype") == "hook_response" and e.get("hook_name") == hook_name]

    def tool_results(self) -> list[str]:
        """The text of every tool result Claude Code sent back to the model during the run."""
        found = []
        for body in self.conversation():
            for message in body.get("messages") or []:
                for block in message.get("content") if isinstance(message.get("content"), list) else []:
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        found.append(_text(block.get("content")))
        return found

    def describe(self) -> str:
        return f"exit {self.returncode}; stderr: {self.stderr[-2000:]}; events: {json.dumps(self.events)[-3000:]}"


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(block.get("text", "")) for block in content if isinstance(block, dict))
    return ""


def request_text(body: dict[str, Any]) -> str:
    """Everything the model was shown in a request: system prompt and messages, as one string."""
    return json.dumps([body.get("system"), body.get("messages")], ensure_ascii=False)


def claude_env(world: World, model: AnthropicModel) -> dict[str, str]:
    env = dict(world.env)
    env.update(ANTHROPIC_BASE_URL=model.base_url, ANTHROPIC_API_KEY="dummy",
               CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_AUTOUPDATER="1", DISABLE_TELEMETRY="1",
               DISABLE_ERROR_REPORTING="1")
    return env


def run_claude(world: World, model: AnthropicModel, prompt: str, *options: str,
               env: dict[str, str] | None = None) -> ClaudeRun:
    """One headless Claude Code session (or a resumed one, with ``--resume SID`` in ``options``)."""
    first = len(model.requests)
    argv = [str(client_binary("claude-code")), "-p", prompt, "--output-format", "stream-json", "--verbose",
            "--include-hook-events", "--allowedTools", "mcp__memory", *options,
            "--debug-file", str(world.home / "claude-debug.log")]
    returncode, events, stderr = run_headless(argv, env or claude_env(world, model), world.project)
    return ClaudeRun(returncode, events, stderr, list(model.requests[first:]))
