"""Claude Code 2.1 with mcp-memory, set up by ``mcp-memory setup claude-code``, end to end.

One world (HOME, workspace, project) for the module, and one scripted model: sessions run in
order (each a real ``claude -p`` process with the hooks and the MCP server ``setup`` wrote), and
each test checks what the model was sent or what landed in the markdown. The first session is
the cold one: no warm process, no index yet.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .claude_code import ClaudeRun, claude_env, request_text, run_claude
from .conftest import ROOT, World, client_binary, make_world
from .model_anthropic import AnthropicModel
from .model_script import Reply, Script, ToolCall, Turn
from .seed import CITATION, RECALLED, RULE, SEEDED, daily_file, pin_rule, seed

SEARCH_PROMPT = "Search my memory: which port does the staging database use?"
STORE_PROMPT = "Call memory_store with the note about the editor."
RECALL_PROMPT = "What port number does our staging database listen on?"
UNRELATED_PROMPT = "Write a haiku about autumn leaves falling in a quiet park."
CAPTURE_PROMPT = ("Remember that I always indent Python code with four spaces, never tabs. "
                  "We decided to move the billing service to Postgres 16. TODO: migrate the invoices table.")
SECOND_TURN = "Thanks. Anything else to keep in mind about the invoices?"

SCRIPT = Script([
    Turn(SEARCH_PROMPT, (ToolCall("mcp__memory__memory_search", {"query": "staging database port"}),
                         Reply("The staging database listens on port 6543."))),
    Turn(STORE_PROMPT, (ToolCall("mcp__memory__memory_store",
                                 {"text": "The user's favourite editor is Helix", "category": "preference"}),
                        Reply("Stored."))),
    Turn("Search the plugin memory", (ToolCall("mcp__plugin_mcp-memory_memory__memory_search",
                                               {"query": "staging database port"}), Reply("Port 6543."))),
])


@pytest.fixture(scope="module")
def model() -> Iterator[AnthropicModel]:
    with AnthropicModel(SCRIPT) as server:
        yield server


@pytest.fixture(scope="module")
def claude_world(world: World) -> World:
    client_binary("claude-code")
    seed(world.workspace)
    pin_rule(world.workspace)
    world.setup("claude-code")
    return world


SESSION_GAP = 3.0  # seconds between two sessions of the module


class Sessions:
    """The module's sessions, each run once on first use, in the order the tests ask for them."""

    def __init__(self, world: World, model: AnthropicModel):
        self.world, self.model = world, model
        self._runs: dict[str, ClaudeRun] = {}

    def get(self, name: str, prompt: str, *options: str) -> ClaudeRun:
        if name not in self._runs:
            # The server's record of a session is matched to the client's by time (episodes.py):
            # sessions of one client that start within a second or two of each other cannot be
            # told apart, and a person never starts them that fast.
            time.sleep(SESSION_GAP)
            run = run_claude(self.world, self.model, prompt, *options)
            assert run.returncode == 0, run.describe()
            fronts = self.world.wait_until_gone(roles=("serve", "hook"), timeout=10)
            assert not fronts, f"server fronts or hooks outlived Claude Code: {fronts}"
            self._runs[name] = run
        return self._runs[name]

    def search(self) -> ClaudeRun:
        return self.get("search", SEARCH_PROMPT)

    def recall(self) -> ClaudeRun:
        self.search()  # the index exists and the warm process runs: recall answers from both
        return self.get("recall", RECALL_PROMPT)

    def capture(self) -> ClaudeRun:
        return self.get("capture", CAPTURE_PROMPT)


@pytest.fixture(scope="module")
def sessions(claude_world: World, model: AnthropicModel) -> Sessions:
    return Sessions(claude_world, model)


def test_setup_is_idempotent_on_the_written_files(claude_world: World):
    again = claude_world.setup("claude-code")
    assert again.count("  unchanged ") == 2 and "  changed " not in again, again


def test_cold_first_session_offers_the_memory_tools_in_its_first_request(sessions: Sessions):
    """The first request of a cold session offers our tools: ``setup`` asks Claude Code to wait for
    the server (``alwaysLoad``), and the server answers the opening requests at once. Without the
    first, a busy machine sends that request before Claude Code has listed the tools."""
    first = sessions.search().conversation()[0]
    names = [tool["name"] for tool in first["tools"]]
    assert "mcp__memory__memory_search" in names and "mcp__memory__memory_store" in names, names


def test_rules_are_shown_at_session_start(sessions: Sessions):
    first = sessions.search().conversation()[0]
    assert "<pinned-rules>" in request_text(first) and RULE in request_text(first)


def test_search_tool_result_cites_the_memory(sessions: Sessions):
    results = sessions.search().tool_results()
    cited = [text for text in results if CITATION.search(text)]
    assert cited, results
    assert "6543" in cited[0]


def test_store_writes_the_line_to_todays_file(sessions: Sessions, claude_world: World):
    run = sessions.get("store", STORE_PROMPT)
    assert any("Helix" in text for text in run.tool_results()), run.tool_results()
    lines = [line for line in daily_file(claude_world.workspace).read_text(encoding="utf-8").splitlines()
             if "favourite editor is Helix" in line]
    assert len(lines) == 1 and lines[0].startswith("- [preference]"), lines


def test_recall_brings_the_related_memory_before_the_prompt(sessions: Sessions):
    run = sessions.recall()
    shown = request_text(run.conversation()[0])
    assert RECALLED in shown, shown[-3000:]
    block = shown[shown.index(RECALLED):]
    assert "port 6543" in block and "memory/2026-11-20.md#L" in block, block[:3000]


def test_recall_brings_only_the_relevant_lines(sessions: Sessions):
    """Recall cites the lines that matched, not their whole chunk, and never episode bookkeeping."""
    shown = request_text(sessions.recall().conversation()[0])
    block = shown[shown.index(RECALLED):]
    block = block[:block.index("relevant-memories")]
    assert "Hetzner" not in block and "episodes/" not in block and "Tools used" not in block, block[:3000]


def test_unrelated_prompt_gets_no_memories(sessions: Sessions):
    run = sessions.get("unrelated", UNRELATED_PROMPT)
    assert RECALLED not in request_text(run.conversation()[0])


def test_stop_captures_the_stated_fact_once(sessions: Sessions, claude_world: World):
    first = sessions.capture()
    sessions.get("capture-2", SECOND_TURN, "--resume", first.session_id)
    text = daily_file(claude_world.workspace).read_text(encoding="utf-8")
    captured = [line for line in text.splitlines() if "four spaces" in line]
    assert len(captured) == 1, text
    assert f"captured (session {first.session_id})" in text


def test_compact_rescues_once_and_rules_come_back(sessions: Sessions, claude_world: World):
    first = sessions.capture()
    sessions.get("capture-2", SECOND_TURN, "--resume", first.session_id)
    compacted = sessions.get("compact", "/compact", "--resume", first.session_id)
    text = daily_file(claude_world.workspace).read_text(encoding="utf-8")
    assert text.count("Rescued before compaction") == 1, text
    assert any("invoices table" in line for line in text.splitlines()), text
    outputs = compacted.hook_outputs("SessionStart:compact")
    assert outputs and "<pinned-rules>" in outputs[0] and RULE in outputs[0], compacted.describe()


def test_compact_rescue_does_not_repeat_the_stop_capture(sessions: Sessions, claude_world: World):
    """A decision the Stop hook captured is not written again by the compaction rescue."""
    first = sessions.capture()
    sessions.get("capture-2", SECOND_TURN, "--resume", first.session_id)
    sessions.get("compact", "/compact", "--resume", first.session_id)
    lines = daily_file(claude_world.workspace).read_text(encoding="utf-8").splitlines()
    assert len([line for line in lines if "billing service" in line]) == 1, lines


def _episodes(workspace: Path, session_id: str) -> list[Path]:
    """The episode files that record the session (by its ``Session:`` line)."""
    return [path for path in sorted((workspace / "memory" / "episodes").rglob("*.md"))
            if f"- Session: {session_id}\n" in path.read_text(encoding="utf-8")]


def test_session_end_writes_one_episode_with_its_own_tools(sessions: Sessions, claude_world: World):
    """Each session's episode holds its own tools: a later session's calls are not credited to it."""
    search, store = sessions.search(), sessions.get("store", STORE_PROMPT)
    found = _episodes(claude_world.workspace, search.session_id)
    assert len(found) == 1, found
    episode = found[0].read_text(encoding="utf-8")
    assert f"Session: {search.session_id}" in episode and "memory_search" in episode, episode
    assert "memory_store" not in episode, episode
    stored = _episodes(claude_world.workspace, store.session_id)
    assert len(stored) == 1 and "memory_store" in stored[0].read_text(encoding="utf-8")


def test_the_plugin_folder_works_too(tmp_path: Path, model: AnthropicModel):
    """``--plugin-dir manifests/claude-code-plugin``: its server on ``~/memory``, its tools namespaced."""
    plugin_world = make_world(tmp_path)
    memory = plugin_world.home / "memory" / "memory"
    memory.mkdir(parents=True)
    (memory / "2026-11-20.md").write_text(SEEDED, encoding="utf-8")
    env = claude_env(plugin_world, model)
    env["PATH"] = f"{_program_folder()}:{env.get('PATH', '')}"  # the plugin runs a bare mcp-memory
    plugin_world.workspace = plugin_world.home / "memory"
    try:
        run = run_claude(plugin_world, model, "Search the plugin memory for the staging port", "--plugin-dir",
                         str(ROOT / "manifests" / "claude-code-plugin"), "--allowedTools",
                         "mcp__plugin_mcp-memory_memory", env=env)
        assert run.returncode == 0, run.describe()
        assert any(CITATION.search(text) for text in run.tool_results()), run.tool_results()
    finally:
        left = plugin_world.wait_until_gone()
        plugin_world.kill_leftovers()
    assert not left, left


def _program_folder() -> str:
    from mcp_memory.clients.setup import current_program

    return str(Path(current_program()[0]).parent)
