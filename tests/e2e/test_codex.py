"""Codex CLI 0.171 with mcp-memory, set up by ``mcp-memory setup codex``, end to end.

Codex shows MCP tools to the model as one namespace tool (``mcp__memory``) holding the bare
tool names; a call names the namespace. The first session is cold (no warm process, no index).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from .codex_cli import CodexRun, run_codex, write_provider
from .conftest import World, client_binary
from .model_responses import ResponsesModel
from .model_script import Reply, Script, ToolCall, Turn
from .seed import CITATION, RECALLED, RULE, daily_file, lines_with, pin_rule, seed

NAMESPACE = "mcp__memory"
SEARCH_PROMPT = "Search my memory: which port does the staging database use?"
STORE_PROMPT = "Call memory_store with the note about the shell."
RECALL_PROMPT = "What port number does our staging database listen on?"
SCRIPT = Script([
    Turn(SEARCH_PROMPT, (ToolCall("memory_search", {"query": "staging database port"}, NAMESPACE),
                         Reply("Port 6543."))),
    Turn(STORE_PROMPT, (ToolCall("memory_store", {"text": "The user's login shell is fish", "category": "fact"},
                                 NAMESPACE), Reply("Stored."))),
])


@pytest.fixture(scope="module")
def model() -> Iterator[ResponsesModel]:
    with ResponsesModel(SCRIPT) as server:
        yield server


@pytest.fixture(scope="module")
def codex_world(world: World, model: ResponsesModel) -> World:
    client_binary("codex")
    seed(world.workspace)
    pin_rule(world.workspace)
    write_provider(world, model)
    world.setup("codex")
    return world


class Sessions:
    def __init__(self, world: World, model: ResponsesModel):
        self.world, self.model = world, model
        self._runs: dict[str, CodexRun] = {}

    def get(self, prompt: str) -> CodexRun:
        if prompt not in self._runs:
            run = run_codex(self.world, self.model, prompt)
            assert run.returncode == 0, run.describe()
            fronts = self.world.wait_until_gone(roles=("serve", "hook"), timeout=10)
            assert not fronts, f"server fronts or hooks outlived Codex: {fronts}"
            self._runs[prompt] = run
        return self._runs[prompt]


@pytest.fixture(scope="module")
def sessions(codex_world: World, model: ResponsesModel) -> Sessions:
    return Sessions(codex_world, model)


def test_setup_kept_the_users_codex_settings(codex_world: World):
    text = (codex_world.home / ".codex" / "config.toml").read_text(encoding="utf-8")
    assert text.startswith("# written before mcp-memory setup") and "[model_providers.scripted]" in text
    assert "[mcp_servers.memory]" in text
    again = codex_world.setup("codex")
    assert "  changed " not in again, again


def test_cold_first_session_offers_the_memory_namespace_in_its_first_request(sessions: Sessions):
    first = sessions.get(SEARCH_PROMPT).requests[0].body
    namespaces = {tool.get("name"): tool for tool in first.get("tools") or [] if tool.get("type") == "namespace"}
    assert NAMESPACE in namespaces, [tool.get("name") for tool in first.get("tools") or []]
    names = [tool.get("name") for tool in namespaces[NAMESPACE].get("tools") or []]
    assert "memory_search" in names and "memory_store" in names, names


def test_session_start_hook_shows_the_pinned_rules(sessions: Sessions):
    first = json.dumps(sessions.get(SEARCH_PROMPT).requests[0].body["input"], ensure_ascii=False)
    assert "<pinned-rules>" in first and RULE in first, first[-3000:]


def test_search_tool_output_cites_the_memory(sessions: Sessions):
    outputs = sessions.get(SEARCH_PROMPT).tool_outputs()
    assert any(CITATION.search(output) and "6543" in output for output in outputs), outputs


def test_store_writes_the_line_to_todays_file(sessions: Sessions, codex_world: World):
    run = sessions.get(STORE_PROMPT)
    assert any("fish" in output for output in run.tool_outputs()), run.describe()
    lines = lines_with(daily_file(codex_world.workspace), "login shell is fish")
    assert len(lines) == 1 and lines[0].startswith("- [fact]"), lines


def test_recall_hook_brings_the_related_memory(sessions: Sessions):
    sessions.get(SEARCH_PROMPT)  # the index exists and the warm process runs
    first = json.dumps(sessions.get(RECALL_PROMPT).requests[0].body["input"], ensure_ascii=False)
    assert RECALLED in first and "port 6543" in first, first[-3000:]
