"""The OpenClaw plugin: its JavaScript entry driven by Node.js as OpenClaw drives it, and the
``mcp-memory hook openclaw <event>`` commands it runs, with the event shapes of OpenClaw 2026.9
(sessions in SQLite: ``sessionFile`` a ``sqlite:`` marker, the conversation as ``messages``).

The plugin is loaded by Node with a stand-in for OpenClaw's plugin API (``api.on`` collects the
handlers, ``api.config`` is OpenClaw's configuration); each handler then runs the real
``mcp-memory`` command on a real workspace. Keyword search only
(``MCP_MEMORY_EMBEDDING_PROVIDER=none``): fast, deterministic, nothing downloaded.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import WARM_IDLE, write
from mcp_memory.clients.openclaw_hooks import openclaw_records
from mcp_memory.experience.episodes import episode_from_transcript
from mcp_memory.lifecycle.rescue import find_rescuable, read_records
from mcp_memory.runtime.bridge import BRIDGE_DIRNAME, bridge_infos, owner_state

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = ROOT / "mcp_memory" / "clients" / "openclaw_plugin"
NODE = shutil.which("node")
SESSION_ID = "9b1f7c2e-5d4a-4e8b-a1c3-77e0d2f4b6a9"
SESSION_KEY = "agent:main:main"
SQLITE_FILE = f"sqlite:main:{SESSION_ID}:/home/u/.openclaw/agents/main/sessions/sessions.json"
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

# A driver standing in for OpenClaw: loads the plugin, then calls the named hooks in order
# (["sleep", ms] waits), timing each handler.
DRIVER = """
const [url, callsJson, configJson, openclawJson] = process.argv.slice(-4);
const plugin = (await import(url)).default;
const calls = JSON.parse(callsJson);
const handlers = {};
const warnings = [];
plugin.register({id: "mcp-memory", registrationMode: "full", pluginConfig: JSON.parse(configJson),
                 config: JSON.parse(openclawJson), logger: {warn: (m) => warnings.push(m)},
                 on: (name, handler) => { handlers[name] = handler; }});
const results = [];
const millis = [];
for (const [name, event, ctx] of calls) {
  if (name === "sleep") { await new Promise((r) => setTimeout(r, event)); continue; }
  const started = Date.now();
  results.push((await handlers[name](event, ctx)) ?? null);
  millis.push(Date.now() - started);
}
console.log(JSON.stringify({hooks: Object.keys(handlers).sort(), results, millis, warnings}));
process.exit(0);  // as the Gateway would go on: commands still running are not waited for here
"""


# ----- helpers ----------------------------------------------------------------------------------
def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_MEMORY_", "OPENCLAW_"))}
    env["MCP_MEMORY_EMBEDDING_PROVIDER"] = "none"
    env["MCP_MEMORY_WARM_IDLE_MINUTES"] = WARM_IDLE  # the hooks start a warm process: gone seconds after
    env["MCP_MEMORY_RULES_PINNING"] = "true"
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # this mcp-memory first
    return env


def openclaw_config(workspace: Path, conversation_access: bool = True, **server_env: str) -> dict[str, Any]:
    """OpenClaw's configuration as ``mcp-memory setup openclaw`` writes it (the parts the plugin reads)."""
    env = {"MCP_MEMORY_WORKSPACE": str(workspace), "MCP_MEMORY_EMBEDDING_PROVIDER": "none",
           "MCP_MEMORY_WARM_IDLE_MINUTES": WARM_IDLE, "MCP_MEMORY_RULES_PINNING": "true", **server_env}
    return {"mcp": {"servers": {"memory": {"command": "mcp-memory", "args": ["serve"], "env": env}}},
            "plugins": {"entries": {"mcp-memory": {"hooks": {"allowConversationAccess": conversation_access}}}}}


def drive(workspace: Path, calls: list[list[Any]], config: dict[str, Any] | None = None,
          openclaw: dict[str, Any] | None = None, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Load the plugin in Node, call ``calls`` ([hook name, event, ctx]) in order; their results."""
    assert NODE is not None
    config = {"workspace": str(workspace), **(config or {})}
    openclaw = openclaw_config(workspace) if openclaw is None else openclaw
    proc = subprocess.run([NODE, "--input-type=module", "-e", DRIVER, (PLUGIN / "index.js").as_uri(),
                           json.dumps(calls), json.dumps(config), json.dumps(openclaw)],
                          capture_output=True, text=True, timeout=180, env=env or _env())
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def run_command(workspace: Path, event: str, stdin: str, env: dict[str, str] | None = None
                ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcp_memory", "hook", "openclaw", event, "-w", str(workspace)],
                          input=stdin, capture_output=True, text=True, timeout=120, env=env or _env())


def hooks_log(workspace: Path) -> str:
    path = workspace / ".mcp-memory" / "hooks.log"
    return path.read_text(encoding="utf-8") if path.exists() else ""


def daily(workspace: Path) -> str:
    path = workspace / "memory" / f"{dt.date.today().isoformat()}.md"
    return path.read_text(encoding="utf-8") if path.exists() else ""


def episodes(workspace: Path) -> list[str]:
    return [p.read_text(encoding="utf-8") for p in sorted((workspace / "memory" / "episodes").rglob("*.md"))]


def wait_for(check: Any, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    return check()


def ctx(session_key: str = SESSION_KEY, **extra: Any) -> dict[str, Any]:
    return {"agentId": "main", "sessionKey": session_key, "sessionId": SESSION_ID, "workspaceDir": "/tmp", **extra}


def text_message(role: str, text: str, at: int = 1795768028000) -> dict[str, Any]:
    return {"role": role, "content": [{"type": "text", "text": text}], "timestamp": at}


def session_messages() -> list[dict[str, Any]]:
    """A session as OpenClaw 2026.9 hands it to hooks: a failing exec fixed by a later one, a tool
    reached through tool search, and OpenClaw's own entries that are not conversation."""
    t = 1795768028000
    return [
        text_message("user", "Run the billing tests please. My dog is called Biscuit.", t),
        {"role": "assistant", "timestamp": t + 1000, "usage": {"input": 10}, "content": [
            {"type": "text", "text": "Running them."},
            {"type": "toolCall", "id": "call_1", "name": "exec", "arguments": {"command": "pytest tests/billing"}}]},
        {"role": "toolResult", "toolCallId": "call_1", "toolName": "exec", "isError": True, "timestamp": t + 2000,
         "content": [{"type": "text", "text": "ModuleNotFoundError: No module named 'stripe'"}]},
        {"role": "assistant", "timestamp": t + 3000, "content": [
            {"type": "text", "text": "We decided to pin stripe 9.1 in requirements.txt."},
            {"type": "toolCall", "id": "call_2", "name": "write", "arguments": {"path": "/repo/requirements.txt",
                                                                            "content": "stripe==9.1\n"}},
            {"type": "toolCall", "id": "call_3", "name": "exec", "arguments": {"command": "pytest tests/billing"}}]},
        {"role": "toolResult", "toolCallId": "call_2", "toolName": "write", "isError": False, "timestamp": t + 4000,
         "content": [{"type": "text", "text": "written"}]},
        {"role": "toolResult", "toolCallId": "call_3", "toolName": "exec", "isError": False, "timestamp": t + 5000,
         "content": [{"type": "text", "text": "12 passed"}]},
        {"role": "assistant", "timestamp": t + 6000, "content": [
            {"type": "toolCall", "id": "call_4", "name": "tool_call",
             "arguments": {"id": "memory__memory_search", "args": {"query": "pnpm"}}}]},
        {"role": "custom", "customType": "openclaw.nested-tool.v1", "content": "{\"toolName\": \"x\"}",
         "timestamp": t + 6500},
        {"role": "toolResult", "toolCallId": "call_4", "toolName": "tool_call", "isError": False, "timestamp": t + 7000,
         "content": [{"type": "text", "text": "SECURITY NOTICE: external content ..."}],
         "details": {"tool": {"mcp": {"serverName": "memory", "toolName": "memory_search"}},
                     "result": {"details": {"mcpServer": "memory", "mcpTool": "memory_search", "structuredContent": {
                         "results": [{"citation": "MEMORY.md#L3", "id": "m-0123456789ab"}]}}}}},
        {"role": "compactionSummary", "summary": "## Decisions\nWe decided nothing.", "timestamp": t + 7500},
        text_message("assistant", "All 12 billing tests pass now.", t + 8000),
    ]


def openclaw_transcript(path: Path) -> Path:
    """An older OpenClaw session file (JSONL): a header, then the session's messages."""
    records = [{"type": "session", "version": 3, "id": SESSION_ID, "timestamp": "2026-11-26T09:59:00.000Z"}]
    for n, message in enumerate(session_messages()[:6]):
        records.append({"type": "message", "id": f"e{n}", "timestamp": f"2026-11-26T10:{n:02d}:00.000Z",
                        "message": message})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def stub_command(tmp_path: Path, sleep: float = 0.0) -> tuple[Path, Path]:
    """A stand-in for ``mcp-memory``: records its arguments, environment and input in a file."""
    record = tmp_path / "stub-record.json"
    script = tmp_path / "stub-mcp-memory"
    script.write_text(f"""#!{sys.executable}
import json, os, sys, time
open({str(tmp_path / "stub.pid")!r}, "w").write(str(os.getpid()))
data = sys.stdin.read()
time.sleep({sleep})
# Written whole, then renamed: a test polling for the record never reads it half-written.
with open({str(record) + ".tmp"!r}, "w") as handle:
    json.dump({{"argv": sys.argv[1:], "env": dict(os.environ), "input": json.loads(data or "null")}}, handle)
os.replace({str(record) + ".tmp"!r}, {str(record)!r})
""", encoding="utf-8")
    script.chmod(0o755)
    return script, record


def warm_processes(workspace: Path) -> list[int]:
    """The live warm processes of the workspace, by their bridge files."""
    return [info.pid for info in bridge_infos(workspace / ".mcp-memory" / BRIDGE_DIRNAME)
            if info.role == "warm" and owner_state(info) == "alive"]


def warm_up(workspace: Path) -> None:
    """Start the workspace's warm process and wait until it listens: a recall then comes from it. (A
    hook that gives up waiting for a warm process still starting recalls alone, and what the warm
    process answered too late already counts as recalled in that session.)"""
    probe = json.dumps({"event": {"prompt": "warming up"}, "ctx": ctx("agent:main:warm-up")})
    run_command(workspace, "prompt", probe)
    assert wait_for(lambda: warm_processes(workspace), timeout=30)


@pytest.fixture
def ws(workspace: Path) -> Path:
    write(workspace, "MEMORY.md", MEMORY_MD)
    write(workspace, "memory/pets.md", "- [entity] The user's cat is named Miso, a grey tabby.\n")
    index = subprocess.run([sys.executable, "-m", "mcp_memory", "index", "-w", str(workspace)],
                           capture_output=True, text=True, timeout=120, env=_env())
    assert index.returncode == 0, index.stderr
    return workspace


# ----- the plugin's files ----------------------------------------------------------------------------
def test_the_plugin_loads_when_the_gateway_starts() -> None:
    """OpenClaw 2026.9 imports a plugin at Gateway start only when its manifest asks for it;
    a hook-only plugin that does not is never loaded, and none of its hooks run."""
    manifest = json.loads((PLUGIN / "openclaw.plugin.json").read_text(encoding="utf-8"))
    assert manifest["activation"]["onStartup"] is True


# ----- the plugin, driven by Node ---------------------------------------------------------------
@needs_node
def test_plugin_registers_the_lifecycle_hooks_and_recalls(ws: Path) -> None:
    prompt = {"prompt": "Help me set up a new JavaScript project with pnpm or npm?", "messages": []}
    later = {"prompt": "What is the name of my grey tabby cat again?", "messages": []}
    warm_up(ws)
    result = drive(ws, [["before_prompt_build", prompt, ctx()], ["before_prompt_build", later, ctx()]])
    assert result["hooks"] == ["agent_end", "before_compaction", "before_prompt_build", "before_reset",
                               "session_end"]
    assert result["warnings"] == []
    first, second = result["results"]
    # The first prompt of a session carries the pinned rules, and every prompt its memories.
    assert "Never push to main without a review." in first["prependContext"]
    assert "<relevant-memories>" in first["prependContext"] and "pnpm over npm" in first["prependContext"]
    assert "Never push to main" not in second["prependContext"] and "pnpm" not in second["prependContext"]
    assert "memory/pets.md#L1" in second["prependContext"] and "Miso" in second["prependContext"]


@needs_node
@pytest.mark.parametrize("hooks_policy", [{}, {"allowConversationAccess": False}])
def test_the_plugin_says_so_when_openclaw_blocks_its_conversation_hooks(ws: Path, hooks_policy: dict[str, Any]
                                                                         ) -> None:
    """Without ``allowConversationAccess``, OpenClaw drops before_prompt_build and agent_end of a
    plugin it did not bundle; the plugin tells the Gateway's log what to set."""
    config = openclaw_config(ws)
    config["plugins"]["entries"]["mcp-memory"]["hooks"] = hooks_policy
    warnings = drive(ws, [], openclaw=config)["warnings"]
    assert len(warnings) == 1
    assert "before_prompt_build and agent_end" in warnings[0]
    assert "plugins.entries.mcp-memory.hooks.allowConversationAccess" in warnings[0]


@needs_node
def test_agent_end_captures_once_and_a_memory_run_does_not(ws: Path) -> None:
    messages = [text_message("user", "My dog is called Biscuit."), text_message("assistant", "Noted."),
                {"role": "toolResult", "toolCallId": "c", "content": [{"type": "text", "text": "My cat is Rex."}]}]
    drive(ws, [["agent_end", {"messages": messages, "success": True}, ctx()],
               ["agent_end", {"messages": messages, "success": True}, ctx()]])
    text = daily(ws)
    assert text.count("Biscuit") == 1 and "Rex" not in text and "Noted" not in text

    # The capture run itself (its session key says so), and a failed run: nothing more is written.
    later = [text_message("user", "My horse is called Comet.")]
    drive(ws, [["agent_end", {"messages": later, "success": True}, ctx("agent:main:memory-capture:1")],
               ["agent_end", {"messages": later, "success": False}, ctx()]])
    assert "Comet" not in daily(ws)
    assert "a run started by memory itself" in hooks_log(ws) and "the run failed" in hooks_log(ws)


@needs_node
def test_before_reset_reads_the_messages_of_a_session_kept_in_sqlite(ws: Path) -> None:
    """OpenClaw 2026.9's before_reset: ``sessionFile`` is a database marker, the session comes as messages."""
    event = {"sessionFile": SQLITE_FILE, "messages": session_messages(), "reason": "reset"}
    drive(ws, [["before_reset", event, ctx()]])
    (episode,) = episodes(ws)
    assert "openclaw" in episode and f"Session: {SESSION_ID}" in episode
    # The tools of the session, the one reached through tool search by its own name, and what it recalled.
    assert "exec: 2" in episode and "write: 1" in episode and "memory_search: 1" in episode
    assert "tool_call" not in episode and "MEMORY.md#L3" in episode
    assert "a later exec call succeeded" in episode
    assert "Biscuit" in daily(ws)
    assert "not a file" not in hooks_log(ws) and "Traceback" not in hooks_log(ws)


@needs_node
def test_session_end_writes_the_episode_from_the_sessions_last_run(ws: Path) -> None:
    """session_end carries no messages and OpenClaw 2026.9 writes no session JSONL: the episode comes
    from the messages of the session's last run (here a failed one, which records nothing itself),
    and the handler returns at once: OpenClaw drains session_end at shutdown for about 2 s in all."""
    result = drive(ws, [["agent_end", {"messages": session_messages(), "success": False}, ctx()],
                        ["session_end", {"sessionId": SESSION_ID, "sessionKey": SESSION_KEY, "messageCount": 11,
                                         "reason": "shutdown"}, ctx()]])
    assert result["millis"][1] < 500
    assert not episodes(ws)  # not yet: the work was handed off
    assert wait_for(lambda: "hook openclaw session-end took" in hooks_log(ws))
    (episode,) = episodes(ws)
    assert "exec: 2" in episode and "memory_search: 1" in episode and "Biscuit" in daily(ws)


@needs_node
def test_compaction_rescues_once_from_what_openclaw_handed_over(ws: Path) -> None:
    """before_compaction (from ``openclaw sessions compact``) carries counts only: the rescue reads the
    session's messages from its last run, once per compaction."""
    compact = {"messageCount": 11, "tokenCount": 2071}
    prompt = {"prompt": "Which package manager for this JavaScript project?", "messages": []}
    result = drive(ws, [["before_prompt_build", prompt, ctx()],
                        ["agent_end", {"messages": session_messages(), "success": True}, ctx()],
                        ["before_compaction", compact, ctx()], ["before_compaction", compact, ctx()],
                        ["before_prompt_build", prompt, ctx()]])
    text = daily(ws)
    assert text.count("Rescued before compaction") == 1
    assert "[decision] We decided to pin stripe 9.1 in requirements.txt." in text
    assert "`pytest tests/billing` worked after: ModuleNotFoundError: No module named 'stripe'" in text
    assert "/repo/requirements.txt" in text
    assert "We decided nothing" not in text  # OpenClaw's own summary is not conversation
    # The first prompt after the compaction gets the pinned rules again.
    assert "Never push to main" in result["results"][4]["prependContext"]


@needs_node
def test_the_hooks_run_with_the_mcp_servers_settings(ws: Path, tmp_path: Path) -> None:
    """OpenClaw starts MCP servers with a minimal environment plus the entry's ``env``; hooks run in the
    Gateway's. The plugin gives its command the server's, so both compute the same settings."""
    script, record = stub_command(tmp_path)
    gateway = {**_env(), "MCP_MEMORY_EMBEDDING_PROVIDER": "local", "MCP_MEMORY_SEARCH_MAX_RESULTS": "3",
               "OPENAI_API_KEY": "sk-gateway", "OPENCLAW_GATEWAY_TOKEN": "secret"}
    drive(ws, [["agent_end", {"messages": [text_message("user", "hello there")], "success": True}, ctx()]],
          config={"command": str(script)}, env=gateway)
    seen = json.loads(record.read_text(encoding="utf-8"))
    assert seen["argv"][:3] == ["hook", "openclaw", "agent-end"]
    env = seen["env"]
    assert env["MCP_MEMORY_EMBEDDING_PROVIDER"] == "none" and env["MCP_MEMORY_WORKSPACE"] == str(ws)
    assert "MCP_MEMORY_SEARCH_MAX_RESULTS" not in env and "OPENAI_API_KEY" not in env
    assert "OPENCLAW_GATEWAY_TOKEN" not in env and env["PATH"] == gateway["PATH"]


@needs_node
def test_a_slow_command_is_not_waited_for_beyond_openclaws_limits(ws: Path, tmp_path: Path) -> None:
    """The plugin stops waiting before OpenClaw gives up on the hook, and lets the command finish."""
    script, record = stub_command(tmp_path, sleep=3.0)
    messages = [text_message("user", "hello there")]
    result = drive(ws, [["agent_end", {"messages": messages, "success": True}, ctx()],
                        ["session_end", {"sessionId": SESSION_ID, "reason": "shutdown"}, ctx()]],
                   config={"command": str(script), "timeoutMs": 1000})
    assert 900 <= result["millis"][0] < 2500 and result["millis"][1] < 500
    assert result["warnings"] and "took longer than 1000 ms" in result["warnings"][0]
    seen = wait_for(lambda: record.exists() and json.loads(record.read_text(encoding="utf-8")))
    assert seen["argv"][2] in ("agent-end", "session-end")  # the work went on after the handler returned
    text = (PLUGIN / "index.js").read_text(encoding="utf-8")
    assert "DEFAULT_PROMPT_TIMEOUT_MS = 10_000" in text and "DEFAULT_TIMEOUT_MS = 25_000" in text


@needs_node
def test_a_configured_wait_past_openclaws_limit_is_cut_to_it(ws: Path, tmp_path: Path) -> None:
    """A ``timeoutMs`` of 60 s (the old default) would outlast OpenClaw's 30 s for agent_end."""
    script, _ = stub_command(tmp_path, sleep=40.0)
    result = drive(ws, [["agent_end", {"messages": [text_message("user", "hello there")], "success": True}, ctx()]],
                   config={"command": str(script), "timeoutMs": 60_000})
    assert 28_000 <= result["millis"][0] < 30_000
    os.kill(int((tmp_path / "stub.pid").read_text()), 9)


@needs_node
def test_a_missing_command_never_breaks_the_conversation(ws: Path) -> None:
    prompt = {"prompt": "Which package manager for this JavaScript project?"}
    result = drive(ws, [["before_prompt_build", prompt, ctx()], ["agent_end", {"messages": [], "success": True},
                                                                 ctx()]],
                   config={"command": str(ws / "no-such-mcp-memory")})
    assert result["results"] == [None, None]
    assert any("cannot run" in warning for warning in result["warnings"])


# ----- one warm process for server and hooks -------------------------------------------------------
def test_different_irrelevant_environments_share_one_warm_process(ws: Path) -> None:
    """A hook in the Gateway's environment and one in the server's (another idle time, other variables)
    are answered by the same warm process of the workspace."""
    prompt = json.dumps({"event": {"prompt": "Which package manager for JavaScript?"}, "ctx": ctx()})
    first = {**_env(), "MCP_MEMORY_WARM_IDLE_MINUTES": "0.2", "OPENCLAW_GATEWAY_TOKEN": "x", "LANG": "C.UTF-8"}
    second = {**_env(), "MCP_MEMORY_WARM_IDLE_MINUTES": "0.1"}
    assert run_command(ws, "prompt", prompt, first).returncode == 0
    assert wait_for(lambda: len(warm_processes(ws)) == 1, timeout=30)
    again = json.dumps({"event": {"prompt": "Which package manager for JavaScript?"}, "ctx": ctx("agent:main:two")})
    reply = run_command(ws, "prompt", again, second)
    assert "pnpm" in reply.stdout
    assert hooks_log(ws).count("started a warm process") == 1
    assert hooks_log(ws).split("hook openclaw prompt took")[1].count("recall answered by a running server") == 1
    assert len(warm_processes(ws)) == 1


# ----- the command, with bad input ---------------------------------------------------------------
@pytest.mark.parametrize(("event", "stdin", "logged"), [
    ("prompt", "not json", "Expecting value"),
    ("prompt", json.dumps({"event": "a string"}), "event is not an object"),
    ("prompt", json.dumps({"event": {"prompt": 42}}), "prompt is not a string"),
    ("agent-end", json.dumps({"event": {"messages": "x"}}), "no messages list"),
    ("agent-end", json.dumps({"event": {}, "ctx": {}}), "no messages list"),
    ("before-compaction", json.dumps({"event": {"messageCount": 3}, "ctx": {"sessionId": "x"}}), "nothing to rescue"),
    ("launch-missiles", "{}", "unknown openclaw hook event"),
])
def test_bad_input_exits_zero_prints_nothing_and_says_why(ws: Path, event: str, stdin: str, logged: str) -> None:
    proc = run_command(ws, event, stdin)
    assert proc.returncode == 0 and proc.stdout == "" and "Traceback" not in proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("mcp-memory error: hook openclaw") and logged in line
    assert logged in hooks_log(ws)


def test_unknown_fields_are_ignored(ws: Path) -> None:
    payload = {"event": {"messages": [text_message("user", "My parrot is called Kiwi."), {"role": "robot"}, 7],
                         "success": True, "novelty": {"a": 1}},
               "ctx": {**ctx(), "channel": "telegram", "sessionStartedAt": "yesterday"}, "extra": [1, 2]}
    proc = run_command(ws, "agent-end", json.dumps(payload))
    assert proc.returncode == 0 and proc.stderr == ""
    assert "Kiwi" in daily(ws)


@pytest.mark.parametrize("kind", ["directory", "vanished"])
def test_a_session_file_that_is_not_there_is_said_and_the_messages_still_count(ws: Path, tmp_path: Path,
                                                                               kind: str) -> None:
    path = tmp_path / "sessions"
    if kind == "directory":
        path.mkdir()
    payload = {"event": {"sessionFile": str(path), "reason": "new"}, "ctx": ctx()}
    proc = run_command(ws, "before-reset", json.dumps(payload))
    assert proc.returncode == 0 and proc.stdout == ""
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("mcp-memory warning: sessionFile") and "is not a file" in line
    # With the messages handed over too, they are what is read.
    payload["event"]["messages"] = session_messages()
    proc = run_command(ws, "before-reset", json.dumps(payload))
    assert proc.returncode == 0 and len(episodes(ws)) == 1


def test_an_older_openclaw_session_jsonl_is_still_read(ws: Path, tmp_path: Path) -> None:
    transcript = openclaw_transcript(tmp_path / "agents" / "main" / "sessions" / f"{SESSION_ID}.jsonl")
    payload = {"event": {"sessionFile": str(transcript), "messageCount": 6}, "ctx": ctx()}
    assert run_command(ws, "before-compaction", json.dumps(payload)).returncode == 0
    assert "[decision] We decided to pin stripe 9.1" in daily(ws)
    assert run_command(ws, "session-end", json.dumps(payload)).returncode == 0
    (episode,) = episodes(ws)
    assert "exec: 2" in episode and "Start: 2026-11-26T09:59:00Z" in episode


def test_a_client_killed_mid_hook_loses_nothing(ws: Path) -> None:
    """The Gateway dies while the hook runs: the hook finishes its work, exits 0, and says why it
    printed nothing."""
    payload = json.dumps({"event": {"prompt": "Does the user prefer pnpm over npm for JavaScript projects?"},
                          "ctx": ctx()})
    warm_up(ws)
    proc = subprocess.Popen([sys.executable, "-m", "mcp_memory", "hook", "openclaw", "prompt", "-w", str(ws)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # whoever would read the answer is gone
    proc.stdin.write(payload.encode())
    proc.stdin.close()
    assert proc.wait(timeout=120) == 0
    stderr = proc.stderr.read().decode()
    assert "went away before reading the hook's output" in stderr and "Traceback" not in stderr
    assert "recall answered" in hooks_log(ws)

    messages = [text_message("user", "My goldfish is called Bubbles.")]
    capture = subprocess.Popen([sys.executable, "-m", "mcp_memory", "hook", "openclaw", "agent-end", "-w", str(ws)],
                               stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               env=_env())
    assert capture.stdin is not None
    capture.stdin.write(json.dumps({"event": {"messages": messages, "success": True}, "ctx": ctx()}).encode())
    capture.stdin.close()  # and the plugin that started it is killed right after
    assert capture.wait(timeout=120) == 0 and "Bubbles" in daily(ws)


# ----- mcp-memory setup openclaw -------------------------------------------------------------------------
USERS_CONFIG = {
    "gateway": {"mode": "local", "auth": {"mode": "token", "token": "t"}},
    "mcp": {"servers": {"docs": {"command": "uvx", "args": ["mcp-server-fetch"]},
                        "memory": {"command": "old-mcp-memory", "args": ["serve"], "env": {"KEEP": "1"}}}},
    "plugins": {"entries": {"voice-call": {"enabled": True},
                            "mcp-memory": {"hooks": {"allowPromptInjection": True}, "config": {"timeoutMs": 20000}}}},
}


def fake_openclaw(folder: Path, home: Path) -> Path:
    """An ``openclaw`` that records its arguments and, for ``plugins install``, copies the plugin as
    OpenClaw does (into ``~/.openclaw/extensions/<id>``)."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "openclaw"
    script.write_text(f"""#!{sys.executable}
import json, shutil, sys
from pathlib import Path
with open({str(folder / "calls.jsonl")!r}, "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
if sys.argv[1:3] == ["plugins", "install"]:
    shutil.copytree(sys.argv[3], {str(home / ".openclaw" / "extensions" / "mcp-memory")!r}, dirs_exist_ok=True)
print("Installed plugin: mcp-memory")
""", encoding="utf-8")
    script.chmod(0o755)
    return script


def setup(home: Path, workspace: Path, *options: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**_env(), "HOME": str(home), "PATH": path if path is not None else _env()["PATH"]}
    return subprocess.run([sys.executable, "-m", "mcp_memory", "setup", "openclaw", "-w", str(workspace), *options],
                          capture_output=True, text=True, timeout=120, env=env)


def test_setup_installs_the_plugin_without_a_terminal_and_keeps_the_users_entries(tmp_path: Path,
                                                                                  workspace: Path) -> None:
    home = tmp_path / "home"
    config_path = home / ".openclaw" / "openclaw.json"
    config_path.parent.mkdir(parents=True)
    config_path.write_text(json.dumps(USERS_CONFIG, indent=2) + "\n", encoding="utf-8")
    bin_dir = tmp_path / "bin"
    fake_openclaw(bin_dir, home)
    path = f"{bin_dir}{os.pathsep}{_env()['PATH']}"
    done = setup(home, workspace, "--embedder", "none", path=path)
    assert done.returncode == 0, done.stderr
    (call,) = [json.loads(line) for line in (bin_dir / "calls.jsonl").read_text().splitlines()]
    assert call == ["plugins", "install", str(PLUGIN), "--force", "--accept-capabilities"]
    config = json.loads(config_path.read_text(encoding="utf-8"))
    servers = config["mcp"]["servers"]
    assert servers["docs"] == USERS_CONFIG["mcp"]["servers"]["docs"]  # type: ignore[index]
    memory = servers["memory"]
    assert Path(memory["command"]).is_absolute() and memory["args"] == ["serve"]
    assert memory["env"]["KEEP"] == "1" and memory["env"]["MCP_MEMORY_WORKSPACE"] == str(workspace)
    assert memory["env"]["MCP_MEMORY_EMBEDDING_PROVIDER"] == "none"
    entry = config["plugins"]["entries"]["mcp-memory"]
    assert entry["enabled"] is True
    assert entry["hooks"] == {"allowPromptInjection": True, "allowConversationAccess": True}
    assert entry["config"] == {"timeoutMs": 20000, "command": memory["command"], "workspace": str(workspace)}
    assert config["plugins"]["entries"]["voice-call"] == {"enabled": True} and config["gateway"]["auth"]["token"] == "t"
    assert "load" not in config["plugins"]
    assert "plugin: installed with" in done.stdout and "allowConversationAccess" in done.stdout

    # Again: nothing changes, and the installed copy (the same files) is not installed again.
    before = config_path.read_bytes()
    again = setup(home, workspace, "--embedder", "none", path=path)
    assert again.returncode == 0 and config_path.read_bytes() == before
    assert "unchanged" in again.stdout and "already installed" in again.stdout
    assert len((bin_dir / "calls.jsonl").read_text().splitlines()) == 1


def test_setup_without_openclaw_loads_the_plugin_from_its_folder(tmp_path: Path, workspace: Path) -> None:
    home = tmp_path / "home"
    done = setup(home, workspace, path=str(Path(sys.executable).parent))
    assert done.returncode == 0, done.stderr
    config = json.loads((home / ".openclaw" / "openclaw.json").read_text(encoding="utf-8"))
    assert config["plugins"]["load"]["paths"] == [str(PLUGIN)]
    assert config["plugins"]["entries"]["mcp-memory"]["hooks"]["allowConversationAccess"] is True
    assert "openclaw is not on PATH" in done.stdout and "--force --accept-capabilities" in done.stdout


def test_setup_dry_run_shows_the_diff_and_writes_nothing(tmp_path: Path, workspace: Path) -> None:
    home = tmp_path / "home"
    done = setup(home, workspace, "--dry-run", path=str(Path(sys.executable).parent))
    assert done.returncode == 0, done.stderr
    added = [line[1:].strip() for line in done.stdout.splitlines() if line.startswith("+")]
    assert '"allowConversationAccess": true' in added and "dry run: nothing was written" in done.stdout
    assert not (home / ".openclaw").exists()


def test_setup_refuses_a_config_it_cannot_parse(tmp_path: Path, workspace: Path) -> None:
    home = tmp_path / "home"
    config_path = home / ".openclaw" / "openclaw.json"
    config_path.parent.mkdir(parents=True)
    json5 = "{\n  // the gateway\n  gateway: {mode: 'local',},\n}\n"
    config_path.write_text(json5, encoding="utf-8")
    done = setup(home, workspace, path=str(Path(sys.executable).parent))
    assert done.returncode == 2 and "cannot parse" in done.stderr and "nothing was written" in done.stderr
    assert config_path.read_text(encoding="utf-8") == json5


# ----- OpenClaw's messages read as transcripts ----------------------------------------------------
def test_openclaw_messages_give_episodes_and_rescues() -> None:
    records = openclaw_records(session_messages())
    assert [r["message"]["role"] for r in records].count("toolResult") == 4  # custom and summary left out
    kinds = {item.kind: item.text for item in find_rescuable(records)}
    assert kinds["command"].startswith("`pytest tests/billing` worked after")
    assert kinds["files"] == "files touched: /repo/requirements.txt"
    assert records[0]["timestamp"].startswith("2026-11-") and records[0]["timestamp"].endswith("Z")


def test_openclaw_messages_are_bounded() -> None:
    big = [text_message("user", f"message {n} " + "x" * 30_000) for n in range(200)]
    records = openclaw_records(big)
    assert 0 < len(records) < 200 and records[-1]["message"]["content"][0]["text"].startswith("message 199")
    assert len(records[-1]["message"]["content"][0]["text"]) == 16_000
    assert len(json.dumps(records)) < 1_000_000  # under the bridge's request limit


def test_openclaw_transcripts_give_episodes_and_rescues(tmp_path: Path) -> None:
    path = openclaw_transcript(tmp_path / "s.jsonl")
    episode = episode_from_transcript(path, "agent:main:main", client="openclaw")
    assert episode is not None
    assert episode.start == dt.datetime(2026, 11, 26, 9, 59, tzinfo=dt.UTC)  # the session header
    assert [e.fix for e in episode.errors] == ["a later exec call succeeded"]
    kinds = {item.kind: item.text for item in find_rescuable(read_records(path).records)}
    assert kinds["command"].startswith("`pytest tests/billing` worked after")
    assert kinds["files"] == "files touched: /repo/requirements.txt"
