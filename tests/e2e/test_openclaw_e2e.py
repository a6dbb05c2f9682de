"""OpenClaw 2026.9 with mcp-memory, set up by ``mcp-memory setup openclaw``, end to end.

A loopback Gateway with a throwaway token runs the scripted model; each turn is an ``openclaw agent
--session-key K --message M --json``. The plugin (installed by setup, with conversation access)
recalls before each prompt, captures after each run, rescues before ``openclaw sessions compact``
and keeps each session's episode; the tools sit behind OpenClaw's tool search (``tool_search``, then
``tool_call`` with id ``memory__memory_search``). Keyword search only (``--embedder none``) keeps the
run short. The Gateway's environment holds settings of its own (as a user's shell would) that the
MCP server never sees: server and hooks must still share one warm process.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import World
from .model_script import Reply, Script, ToolCall, Turn
from .openclaw_client import Gateway, OpenClawModel, conversation, gateway_for, openclaw_processes, text_of
from .seed import CITATION, RECALLED, daily_file, lines_with, seed

RULE = "Never deploy to production on a Friday."
MEMORY_MD = f"""# Memory

```yaml
rules:
  - rule: {RULE}
    weight: 1.0
```
"""
SETTINGS = """[warm]
idle_minutes = 0.1

[rules]
pinning = true
"""
RECALL_PROMPT = "What port number does our staging database listen on?"
UNRELATED_PROMPT = "Tell me a short joke about penguins and icebergs."
SEARCH_PROMPT = "Search my memory: which port does the staging database use?"
CAPTURE_PROMPT = "Remember that I always run the test suite before every commit."
WRITE_PROMPT = "Write the release notes into notes.txt please."
EXEC_PROMPT = "Build the project for me."
SCRIPT = Script([
    Turn(SEARCH_PROMPT, (ToolCall("tool_search", {"query": "memory search"}),
                         ToolCall("tool_call", {"id": "memory__memory_search",
                                                "args": {"query": "staging database port"}}),
                         Reply("Port 6543."))),
    Turn(WRITE_PROMPT, (ToolCall("write", {"path": "notes.txt", "content": "Release 1.2: faster builds.\n"}),
                        Reply("Written."))),
    Turn(EXEC_PROMPT, (ToolCall("exec", {"command": "echo built"}), Reply("Built."))),
])
FIRST, SECOND = "agent:main:first", "agent:main:second"
SESSION_ID = re.compile(r"sessionId=([0-9a-f-]{36})")


@pytest.fixture(scope="module")
def model() -> Iterator[OpenClawModel]:
    with OpenClawModel(SCRIPT) as server:
        yield server


@pytest.fixture(scope="module")
def claw_world(world: World) -> World:
    seed(world.workspace)
    (world.workspace / "MEMORY.md").write_text(MEMORY_MD, encoding="utf-8")
    (world.workspace / "mcp-memory.toml").write_text(SETTINGS, encoding="utf-8")
    return world


@pytest.fixture(scope="module")
def gateway(claw_world: World, model: OpenClawModel) -> Iterator[Gateway]:
    started = time.monotonic()
    yield from gateway_for(claw_world, model, "--embedder", "none")
    print(f"OpenClaw end-to-end module: {time.monotonic() - started:.0f} s")


class Sessions:
    """The turns of the test, each run once, in the order first asked."""

    def __init__(self, gateway: Gateway, model: OpenClawModel):
        self.gateway, self.model = gateway, model
        self.turns: dict[tuple[str, str], Any] = {}

    def get(self, key: str, prompt: str) -> Any:
        if (key, prompt) not in self.turns:
            turn = self.gateway.agent(self.model, key, prompt)
            assert turn.returncode == 0 and turn.requests, turn.describe()
            assert len(warm_processes(self.gateway.world)) <= 1, warm_processes(self.gateway.world)
            self.turns[(key, prompt)] = turn
        return self.turns[(key, prompt)]


@pytest.fixture(scope="module")
def sessions(gateway: Gateway, model: OpenClawModel) -> Sessions:
    return Sessions(gateway, model)


def latest_user_text(body: dict[str, Any]) -> str:
    users = [m for m in conversation(body) if m.get("role") == "user"]
    return text_of(users[-1]) if users else ""


def session_id(turn: Any) -> str:
    found = SESSION_ID.search(json.dumps(turn.requests[0]))
    assert found, "no sessionId in the request"
    return found.group(1)


def warm_processes(world: World) -> list[str]:
    return [line for line in world.processes(roles=("warm",)) if " -m mcp_memory warm " in f" {line} "]


def wait_for(check: Callable[[], Any], timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := check()) and time.monotonic() < deadline:
        time.sleep(0.25)
    return value


def episodes_of(world: World, session: str) -> list[str]:
    folder = world.workspace / "memory" / "episodes"
    texts = [p.read_text(encoding="utf-8") for p in folder.rglob("*.md")] if folder.exists() else []
    return [t for t in texts if f"Session: {session}" in t]


# ----- setup -------------------------------------------------------------------------------------------
def test_setup_connects_openclaw_and_keeps_the_users_config(gateway: Gateway):
    config = json.loads((gateway.world.home / ".openclaw" / "openclaw.json").read_text(encoding="utf-8"))
    assert config["gateway"]["auth"]["token"] == gateway.token and "scripted" in config["models"]["providers"]
    entry = config["plugins"]["entries"]["mcp-memory"]
    assert entry["hooks"]["allowConversationAccess"] is True and entry["enabled"] is True
    assert Path(entry["config"]["command"]).is_absolute() and entry["config"]["workspace"] == str(
        gateway.world.workspace)
    server = config["mcp"]["servers"]["memory"]
    assert server["args"] == ["serve"] and server["env"]["MCP_MEMORY_WORKSPACE"] == str(gateway.world.workspace)
    inspect = gateway.cli("plugins", "inspect", "mcp-memory", "--runtime", "--json")
    report = json.loads(inspect.stdout[inspect.stdout.index("{"):])
    assert report["plugin"]["status"] == "loaded", inspect.stdout[-2000:]
    assert {"before_prompt_build", "agent_end"} <= {hook["name"] for hook in report["typedHooks"]}
    assert not [d for d in report["diagnostics"] if "blocked" in d["message"]], report["diagnostics"]


# ----- recall, tools, capture ------------------------------------------------------------------------
def test_the_first_prompt_gets_the_rules_and_an_unrelated_one_no_memories(sessions: Sessions):
    first = latest_user_text(sessions.get(FIRST, UNRELATED_PROMPT).requests[0])
    assert "penguins" in first and RULE in first and RECALLED not in first, first[-3000:]


def test_a_related_prompt_gets_the_memory_and_no_rules_again(sessions: Sessions):
    sessions.get(FIRST, UNRELATED_PROMPT)  # the session's first prompt (the warm process starts)
    text = latest_user_text(sessions.get(FIRST, RECALL_PROMPT).requests[0])
    assert RECALLED in text and "port 6543" in text and RULE not in text, text[-3000:]


def test_the_search_tool_through_tool_search_cites_the_memory(sessions: Sessions):
    turn = sessions.get(FIRST, SEARCH_PROMPT)
    assert any(CITATION.search(output) and "6543" in output for output in turn.tool_outputs()), turn.describe()


def test_agent_end_captures_the_stated_fact_once(sessions: Sessions, claw_world: World):
    sessions.get(FIRST, CAPTURE_PROMPT)
    daily = daily_file(claw_world.workspace)
    assert wait_for(lambda: lines_with(daily, "test suite before every commit"))
    sessions.get(FIRST, WRITE_PROMPT)  # the next run reads the same statement again
    time.sleep(1.0)
    assert len(lines_with(daily, "test suite before every commit")) == 1, daily.read_text(encoding="utf-8")


# ----- compaction, reset, shutdown -------------------------------------------------------------------
def test_compaction_writes_the_rescue_once(sessions: Sessions, gateway: Gateway, claw_world: World):
    sessions.get(FIRST, WRITE_PROMPT)
    done = gateway.cli("sessions", "compact", FIRST)
    assert done.returncode == 0, done.stdout + done.stderr
    daily = daily_file(claw_world.workspace)
    assert wait_for(lambda: lines_with(daily, "Rescued before compaction")), daily.read_text(encoding="utf-8")
    assert lines_with(daily, "notes.txt"), daily.read_text(encoding="utf-8")
    gateway.cli("sessions", "compact", FIRST)  # nothing new since: nothing rescued again
    assert len(lines_with(daily, "Rescued before compaction")) == 1, daily.read_text(encoding="utf-8")


def test_a_reset_writes_one_episode_with_the_sessions_tools(sessions: Sessions, gateway: Gateway,
                                                            claw_world: World):
    session = session_id(sessions.get(FIRST, UNRELATED_PROMPT))
    sessions.get(FIRST, SEARCH_PROMPT)  # the session's memory_search (done once, whichever test asks first)
    sessions.get(FIRST, WRITE_PROMPT)
    done = gateway.cli("gateway", "call", "sessions.reset", "--params", json.dumps({"key": FIRST}))
    assert done.returncode == 0, done.stdout + done.stderr
    assert wait_for(lambda: episodes_of(claw_world, session) and "hook openclaw before-reset took" in hooks_log(
        claw_world))
    time.sleep(2.0)  # the MCP server's record of the session arrives when OpenClaw retires it
    (episode,) = episodes_of(claw_world, session)
    assert "- Client: openclaw" in episode and "write:" in episode and "memory_search:" in episode, episode
    assert "exec" not in episode, episode


def test_gateway_shutdown_writes_one_episode_for_the_open_session(sessions: Sessions, gateway: Gateway,
                                                                   claw_world: World):
    turn = sessions.get(SECOND, EXEC_PROMPT)
    assert any("built" in output for output in turn.tool_outputs()), turn.describe()
    session = session_id(turn)
    assert gateway.stop() == 0, gateway.output()[-3000:]
    assert wait_for(lambda: "hook openclaw session-end took" in hooks_log(claw_world)), hooks_log(claw_world)[-3000:]
    (episode,) = episodes_of(claw_world, session)
    assert "exec:" in episode and "write" not in episode and "memory_search" not in episode, episode
    assert "shutdown session-end drain timed out" not in gateway.output()
    left = wait_for(lambda: not openclaw_processes(claw_world), timeout=30)
    assert left, f"OpenClaw processes outlived the Gateway: {openclaw_processes(claw_world)}"


def test_mcp_probe_reaches_the_same_warm_process(gateway: Gateway, claw_world: World):
    probe = gateway.cli("mcp", "probe", "memory", "--json")
    assert probe.returncode == 0 and "memory_search" in probe.stdout, probe.stdout[-2000:] + probe.stderr[-2000:]
    # A warm process started by a racing client leaves at once when it finds the workspace's lock held.
    assert wait_for(lambda: len(warm_processes(claw_world)) <= 1, timeout=10), warm_processes(claw_world)
    # One warm process served the server fronts and the hooks: whoever came first started it, and no
    # second one was started beside it (a new one only after the last one idled out).
    started = hooks_log(claw_world).count("started a warm process")
    assert started <= 1 + warm_log(claw_world).count("with no client: exiting"), hooks_log(claw_world)[-3000:]


def hooks_log(world: World) -> str:
    path = world.workspace / ".mcp-memory" / "hooks.log"
    return path.read_text(encoding="utf-8") if path.exists() else ""


def warm_log(world: World) -> str:
    path = world.workspace / ".mcp-memory" / "warm.log"
    return path.read_text(encoding="utf-8") if path.exists() else ""
