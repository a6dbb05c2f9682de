"""Running Gemini CLI headless against the scripted Gemini model, and reading what it did.

The world's ``~/.gemini/settings.json`` (updates, statistics and telemetry off, API-key sign-in:
with only a base URL, Gemini CLI picks a sign-in its headless check rejects) is written before
``mcp-memory setup gemini`` merges the server and hooks into it. ``run_gemini`` runs ``gemini -m
gemini-2.5-flash -o stream-json -p PROMPT`` with ``GOOGLE_GEMINI_BASE_URL`` on our model and the
project folder trusted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .conftest import World, client_binary, run_headless
from .model_gemini import GeminiModel
from .model_script import Recorded

SETTINGS = {
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "security": {"auth": {"selectedType": "gemini-api-key"}},
}


@dataclass
class GeminiRun:
    returncode: int
    events: list[dict[str, Any]]
    stderr: str
    requests: list[Recorded]

    def conversation(self) -> list[dict[str, Any]]:
        return [r.body for r in self.requests if ":streamGenerateContent" in r.path]

    def tool_outputs(self) -> list[str]:
        """The outputs of the tool calls Gemini CLI sent back to the model."""
        return [json.dumps(part["functionResponse"], ensure_ascii=False) for body in self.conversation()
                for content in body.get("contents") or [] for part in content.get("parts") or []
                if isinstance(part, dict) and "functionResponse" in part]

    def describe(self) -> str:
        return f"exit {self.returncode}; stderr: {self.stderr[-2000:]}; events: {json.dumps(self.events)[-3000:]}"


def write_settings(world: World) -> None:
    folder = world.home / ".gemini"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "settings.json").write_text(json.dumps(SETTINGS, indent=2) + "\n", encoding="utf-8")


def run_gemini(world: World, model: GeminiModel, prompt: str) -> GeminiRun:
    first = len(model.requests)
    env = {**world.env, "GOOGLE_GEMINI_BASE_URL": model.base_url, "GEMINI_API_KEY": "dummy",
           "GEMINI_CLI_TRUST_WORKSPACE": "true"}
    argv = [str(client_binary("gemini")), "-m", "gemini-2.5-flash", "-o", "stream-json", "-p", prompt]
    returncode, events, stderr = run_headless(argv, env, world.project)
    return GeminiRun(returncode, events, stderr, list(model.requests[first:]))
