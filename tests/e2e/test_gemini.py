"""Gemini CLI 0.61 with mcp-memory, set up by ``mcp-memory setup gemini``, end to end.

Tools reach the model as ``mcp_memory_<tool>``. The hooks setup writes (``BeforeAgent`` recall,
``AfterAgent`` capture) run the Claude Code hook commands: Gemini CLI speaks the same hook
protocol, escapes the recalled block and wraps it in ``<hook_context>``. The first session is
cold (no warm process, no index).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from .conftest import World, client_binary
from .gemini_cli import GeminiRun, run_gemini, write_settings
from .model_gemini import GeminiModel
from .model_script import Reply, Script, ToolCall, Turn
from .seed import CITATION, RECALLED, RULE, daily_file, lines_with, pin_rule, seed

SEARCH_PROMPT = "Search my memory: which port does the staging database use?"
STORE_PROMPT = "Call memory_store with the note about the terminal."
RECALL_PROMPT = "What port number does our staging database listen on?"
CAPTURE_PROMPT = "Remember that I always run the test suite before every commit."
SCRIPT = Script([
    Turn(SEARCH_PROMPT, (ToolCall("mcp_memory_memory_search", {"query": "staging database port"}),
                         Reply("Port 6543."))),
    Turn(STORE_PROMPT, (ToolCall("mcp_memory_memory_store", {"text": "The user's terminal is WezTerm",
                                                             "category": "fact"}), Reply("Stored."))),
])


@pytest.fixture(scope="module")
def model() -> Iterator[GeminiModel]:
    with GeminiModel(SCRIPT) as server:
        yield server


@pytest.fixture(scope="module")
def gemini_world(world: World) -> World:
    client_binary("gemini")
    seed(world.workspace)
    pin_rule(world.workspace)
    write_settings(world)
    world.setup("gemini")
    return world


class Sessions:
    def __init__(self, world: World, model: GeminiModel):
        self.world, self.model = world, model
        self._runs: dict[str, GeminiRun] = {}

    def get(self, prompt: str) -> GeminiRun:
        if prompt not in self._runs:
            run = run_gemini(self.world, self.model, prompt)
            assert run.returncode == 0, run.describe()
            fronts = self.world.wait_until_gone(roles=("serve", "hook"), timeout=10)
            assert not fronts, f"server fronts or hooks outlived Gemini CLI: {fronts}"
            self._runs[prompt] = run
        return self._runs[prompt]


@pytest.fixture(scope="module")
def sessions(gemini_world: World, model: GeminiModel) -> Sessions:
    return Sessions(gemini_world, model)


def test_setup_kept_the_users_gemini_settings(gemini_world: World):
    data = json.loads((gemini_world.home / ".gemini" / "settings.json").read_text(encoding="utf-8"))
    assert data["security"]["auth"]["selectedType"] == "gemini-api-key" and "memory" in data["mcpServers"]
    assert "  changed " not in gemini_world.setup("gemini")


def test_cold_first_session_offers_the_memory_tools_in_its_first_request(sessions: Sessions):
    first = sessions.get(SEARCH_PROMPT).conversation()[0]
    names = [d.get("name") for tool in first.get("tools") or [] for d in tool.get("functionDeclarations") or []]
    assert "mcp_memory_memory_search" in names and "mcp_memory_memory_store" in names, names


def test_session_start_hook_shows_the_pinned_rules(sessions: Sessions):
    first = json.dumps(sessions.get(SEARCH_PROMPT).conversation()[0], ensure_ascii=False)
    assert "pinned-rules" in first and RULE in first, first[-3000:]


def test_search_tool_output_cites_the_memory(sessions: Sessions):
    outputs = sessions.get(SEARCH_PROMPT).tool_outputs()
    assert any(CITATION.search(output) and "6543" in output for output in outputs), outputs


def test_store_writes_the_line_to_todays_file(sessions: Sessions, gemini_world: World):
    run = sessions.get(STORE_PROMPT)
    assert any("WezTerm" in output for output in run.tool_outputs()), run.describe()
    lines = lines_with(daily_file(gemini_world.workspace), "terminal is WezTerm")
    assert len(lines) == 1 and lines[0].startswith("- [fact]"), lines


def test_before_agent_hook_recalls_the_related_memory(sessions: Sessions):
    sessions.get(SEARCH_PROMPT)  # the index exists and the warm process runs
    first = json.dumps(sessions.get(RECALL_PROMPT).conversation()[0]["contents"], ensure_ascii=False)
    assert "<hook_context>" in first and RECALLED in first and "port 6543" in first, first[-3000:]


def test_after_agent_hook_captures_the_stated_fact(sessions: Sessions, gemini_world: World):
    sessions.get(CAPTURE_PROMPT)
    lines = lines_with(daily_file(gemini_world.workspace), "test suite before every commit")
    assert len(lines) == 1, daily_file(gemini_world.workspace).read_text(encoding="utf-8")
