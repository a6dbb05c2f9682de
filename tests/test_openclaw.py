"""The OpenClaw plugin: its JavaScript entry driven by Node.js as OpenClaw drives it, and the
``mcp-memory hook openclaw <event>`` commands it runs, with OpenClaw's own event shapes.

The plugin is loaded by Node with a stand-in for OpenClaw's plugin API (``api.on`` collects the
handlers); each handler then runs the real ``mcp-memory`` command on a real workspace. Keyword
search only (``MCP_MEMORY_EMBEDDING_PROVIDER=none``): fast, deterministic, nothing downloaded.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import WARM_IDLE, write
from mcp_memory.episodes import episode_from_transcript
from mcp_memory.rescue import find_rescuable, read_records

PLUGIN = Path(__file__).resolve().parents[1] / "manifests" / "openclaw-plugin"
NODE = shutil.which("node")
SESSION_ID = "9b1f7c2e-5d4a-4e8b-a1c3-77e0d2f4b6a9"
SESSION_KEY = "agent:main:main"
MEMORY_MD = """\
# Memory

- [preference] The user prefers pnpm over npm and yarn for JavaScript projects.

```yaml
rules:
  - rule: Never push to main without a review.
    weight: 1.0
```
"""

needs_node = pytest.mark.skipif(NODE is None, reason="Node.js is not installed (.ci/run installs it)")

# A driver standing in for OpenClaw: loads the plugin, then calls the named hooks in order.
DRIVER = """
const [url, callsJson, configJson] = process.argv.slice(-3);
const plugin = (await import(url)).default;
const calls = JSON.parse(callsJson);
const handlers = {};
const warnings = [];
plugin.register({pluginConfig: JSON.parse(configJson), logger: {warn: (m) => warnings.push(m)},
                 on: (name, handler) => { handlers[name] = handler; }});
const results = [];
for (const [name, event, ctx] of calls) {
  results.push((await handlers[name](event, ctx)) ?? null);
}
console.log(JSON.stringify({hooks: Object.keys(handlers).sort(), results, warnings}));
"""


# ----- helpers ----------------------------------------------------------------------------------
def _env(state_dir: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_MEMORY_", "OPENCLAW_"))}
    env["MCP_MEMORY_EMBEDDING_PROVIDER"] = "none"
    env["MCP_MEMORY_WARM_IDLE_MINUTES"] = WARM_IDLE  # the hooks start a warm process: gone seconds after
    env["MCP_MEMORY_RULES_PINNING"] = "true"
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # this mcp-memory first
    if state_dir is not None:
        env["OPENCLAW_STATE_DIR"] = str(state_dir)
    return env


def drive(workspace: Path, calls: list[list[Any]], config: dict[str, Any] | None = None,
          state_dir: Path | None = None) -> dict[str, Any]:
    """Load the plugin in Node, call ``calls`` ([hook name, event, ctx]) in order; their results."""
    assert NODE is not None
    config = {"workspace": str(workspace), **(config or {})}
    proc = subprocess.run([NODE, "--input-type=module", "-e", DRIVER, (PLUGIN / "index.js").as_uri(),
                           json.dumps(calls), json.dumps(config)],
                          capture_output=True, text=True, timeout=180, env=_env(state_dir))
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def run_command(workspace: Path, event: str, stdin: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcp_memory", "hook", "openclaw", event, "-w", str(workspace)],
                          input=stdin, capture_output=True, text=True, timeout=120, env=_env())


def hooks_log(workspace: Path) -> str:
    path = workspace / ".mcp-memory" / "hooks.log"
    return path.read_text(encoding="utf-8") if path.exists() else ""


def daily(workspace: Path) -> str:
    path = workspace / "memory" / f"{dt.date.today().isoformat()}.md"
    return path.read_text(encoding="utf-8") if path.exists() else ""


def ctx(session_key: str = SESSION_KEY) -> dict[str, str]:
    return {"agentId": "main", "sessionKey": session_key, "sessionId": SESSION_ID, "workspaceDir": "/tmp"}


def text_message(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "content": [{"type": "text", "text": text}], "timestamp": 1764151200000}


def openclaw_transcript(path: Path) -> Path:
    """An OpenClaw session file: a header, messages with toolCall blocks and toolResult messages."""
    def entry(n: int, message: dict[str, Any]) -> dict[str, Any]:
        return {"type": "message", "id": f"e{n}", "parentId": f"e{n - 1}" if n else None,
                "timestamp": f"2026-11-26T10:{n:02d}:00.000Z", "message": message}

    records = [
        {"type": "session", "version": 3, "id": SESSION_ID, "timestamp": "2026-11-26T09:59:00.000Z", "cwd": "/repo"},
        entry(0, text_message("user", "Run the billing tests please.")),
        entry(1, {"role": "assistant", "content": [
            {"type": "text", "text": "Running them."},
            {"type": "toolCall", "id": "call_1", "name": "exec", "arguments": {"command": "pytest tests/billing"}}]}),
        entry(2, {"role": "toolResult", "toolCallId": "call_1", "toolName": "exec", "isError": True,
                  "content": [{"type": "text", "text": "ModuleNotFoundError: No module named 'stripe'"}]}),
        entry(3, {"role": "assistant", "content": [
            {"type": "text", "text": "We decided to pin stripe 9.1 in requirements.txt."},
            {"type": "toolCall", "id": "call_2", "name": "write", "arguments": {"path": "/repo/requirements.txt",
                                                                            "content": "stripe==9.1\n"}},
            {"type": "toolCall", "id": "call_3", "name": "exec", "arguments": {"command": "pytest tests/billing"}}]}),
        entry(4, {"role": "toolResult", "toolCallId": "call_2", "toolName": "write", "isError": False,
                  "content": [{"type": "text", "text": "written"}]}),
        entry(5, {"role": "toolResult", "toolCallId": "call_3", "toolName": "exec", "isError": False,
                  "content": [{"type": "text", "text": "12 passed"}]}),
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture
def ws(workspace: Path) -> Path:
    write(workspace, "MEMORY.md", MEMORY_MD)
    write(workspace, "memory/pets.md", "- [entity] The user's cat is named Miso, a grey tabby.\n")
    index = subprocess.run([sys.executable, "-m", "mcp_memory", "index", "-w", str(workspace)],
                           capture_output=True, text=True, timeout=120, env=_env())
    assert index.returncode == 0, index.stderr
    return workspace


# ----- the plugin, driven by Node ---------------------------------------------------------------
@needs_node
def test_plugin_registers_the_lifecycle_hooks_and_recalls(ws: Path) -> None:
    prompt = {"prompt": "Help me set up a new JavaScript project with pnpm or npm?", "messages": []}
    later = {"prompt": "What is the name of my grey tabby cat again?", "messages": []}
    result = drive(ws, [["before_prompt_build", prompt, ctx()], ["before_prompt_build", later, ctx()]])
    assert result["hooks"] == ["agent_end", "before_compaction", "before_prompt_build", "before_reset",
                               "session_end"]
    first, second = result["results"]
    # The first prompt of a session carries the pinned rules, and every prompt its memories.
    assert "Never push to main without a review." in first["prependContext"]
    assert "<relevant-memories>" in first["prependContext"] and "pnpm over npm" in first["prependContext"]
    assert "Never push to main" not in second["prependContext"] and "pnpm" not in second["prependContext"]
    assert "memory/pets.md#L1" in second["prependContext"] and "Miso" in second["prependContext"]


@needs_node
def test_agent_end_captures_and_a_memory_run_does_not(ws: Path) -> None:
    messages = [text_message("user", "My dog is called Biscuit."), text_message("assistant", "Noted."),
                {"role": "toolResult", "toolCallId": "c", "content": [{"type": "text", "text": "My cat is Rex."}]}]
    drive(ws, [["agent_end", {"messages": messages, "success": True}, ctx()]])
    text = daily(ws)
    assert "Biscuit" in text and "Rex" not in text and "Noted" not in text

    # The capture run itself (its session key says so), and a failed run: nothing more is written.
    later = [text_message("user", "My horse is called Comet.")]
    drive(ws, [["agent_end", {"messages": later, "success": True}, ctx("agent:main:memory-capture:1")],
               ["agent_end", {"messages": later, "success": False}, ctx()]])
    assert "Comet" not in daily(ws)
    assert "a run started by memory itself" in hooks_log(ws) and "the run failed" in hooks_log(ws)


@needs_node
def test_compaction_rescue_and_session_end_episode(ws: Path, tmp_path: Path) -> None:
    state = tmp_path / "openclaw-state"
    transcript = openclaw_transcript(state / "agents" / "main" / "sessions" / f"{SESSION_ID}.jsonl")
    drive(ws, [["before_compaction", {"messageCount": 7, "sessionFile": str(transcript)}, ctx()]])
    text = daily(ws)
    assert "## Rescued before compaction (session agent:main:main" in text or "Rescued before compaction" in text
    assert "[decision] We decided to pin stripe 9.1 in requirements.txt." in text
    assert "`pytest tests/billing` worked after: ModuleNotFoundError: No module named 'stripe'" in text
    assert "/repo/requirements.txt" in text

    # session_end names no file: the plugin's command finds it in OpenClaw's state folder.
    drive(ws, [["session_end", {"sessionId": SESSION_ID, "messageCount": 7}, ctx()]], state_dir=state)
    episodes = list((ws / "memory" / "episodes").glob("*.md"))
    assert len(episodes) == 1, hooks_log(ws)
    episode = episodes[0].read_text(encoding="utf-8")
    assert "openclaw" in episode and "exec" in episode


@needs_node
def test_a_missing_command_never_breaks_the_conversation(ws: Path) -> None:
    prompt = {"prompt": "Which package manager for this JavaScript project?"}
    result = drive(ws, [["before_prompt_build", prompt, ctx()], ["agent_end", {"messages": [], "success": True},
                                                                 ctx()]],
                   config={"command": str(ws / "no-such-mcp-memory")})
    assert result["results"] == [None, None]


# ----- the command, with bad input ---------------------------------------------------------------
@pytest.mark.parametrize(("event", "stdin", "logged"), [
    ("prompt", "not json", "Expecting value"),
    ("prompt", json.dumps({"event": "a string"}), "event is not an object"),
    ("prompt", json.dumps({"event": {"prompt": 42}}), "prompt is not a string"),
    ("agent-end", json.dumps({"event": {"messages": "x"}}), "no messages list"),
    ("before-compaction", json.dumps({"event": {}, "ctx": {"agentId": "../../etc", "sessionId": "x"}}),
     "no transcript was found"),
    ("launch-missiles", "{}", "unknown openclaw hook event"),
])
def test_bad_input_exits_zero_prints_nothing_and_is_logged(ws: Path, event: str, stdin: str, logged: str) -> None:
    proc = run_command(ws, event, stdin)
    assert proc.returncode == 0 and proc.stdout == "" and "Traceback" not in proc.stderr
    assert logged in hooks_log(ws)


# ----- OpenClaw transcripts read as Claude Code ones ----------------------------------------------
def test_openclaw_transcripts_give_episodes_and_rescues(tmp_path: Path) -> None:
    path = openclaw_transcript(tmp_path / "s.jsonl")
    episode = episode_from_transcript(path, "agent:main:main", client="openclaw")
    assert episode is not None
    assert episode.start == dt.datetime(2026, 11, 26, 9, 59, tzinfo=dt.UTC)  # the session header
    assert [e.fix for e in episode.errors] == ["a later exec call succeeded"]
    kinds = {item.kind: item.text for item in find_rescuable(read_records(path).records)}
    assert kinds["command"].startswith("`pytest tests/billing` worked after")
    assert kinds["files"] == "files touched: /repo/requirements.txt"
