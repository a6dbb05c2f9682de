"""Claude Code hooks and the loopback bridge, as the client and the user see them.

Hooks run exactly as Claude Code runs them: ``python -m mcp_memory hook claude-code <event>``
as a fresh process with the hook JSON on stdin. What matters to the client is the exit code
(always 0: exit 2 would block the prompt or the stop), stdout (one hook JSON object, or
nothing) and stderr (never a traceback); what matters to the user is the daily file and
``<WS>/.mcp-memory/hooks.log``. The bridge is tested in-process, then end to end against a
real ``serve`` subprocess kept alive by an MCP client over stdio. ``--embedder none``
everywhere: keyword search only, fast and deterministic, nothing downloaded.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from conftest import write
from mcp_memory.config import load_settings
from mcp_memory.memory import Memory
from mcp_memory.runtime.bridge import MAX_REQUEST_BYTES, BridgeServer, call_bridge

SESSION = "3f2c9a1e-7b4d-4c1a-9e55-0d6f1b2a8c77"
MEMORY_MD = """\
# Memory

- [preference] The user prefers pnpm over npm and yarn for JavaScript projects.
- [entity] The user's cat is named Miso.
"""
PNPM_LINE = 3
MATCHING_PROMPT = "Which package manager should I use for this JavaScript project, pnpm or npm?"
UNRELATED_PROMPT = "Explain lattice quantum chromodynamics briefly"
HOOK_TIMEOUT = 60


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# ----- helpers ----------------------------------------------------------------------------------
def hook_env() -> dict[str, str]:
    """Hooks with no warm process (as where background processes are not allowed): the subject
    here is the in-process path and the bridge of a running serve (tests/test_warm.py has the rest)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_MEMORY_")}
    env["PYTHONUNBUFFERED"] = "1"
    env["MCP_MEMORY_WARM_ENABLED"] = "false"
    return env


def hook_command(workspace: Path, event: str, client: str = "claude-code") -> list[str]:
    return [sys.executable, "-m", "mcp_memory", "hook", client, event, "-w", str(workspace), "--embedder", "none"]


def run_hook(workspace: Path, event: str, stdin: str | bytes,
             client: str = "claude-code") -> subprocess.CompletedProcess:
    data = stdin.encode("utf-8") if isinstance(stdin, str) else stdin
    return subprocess.run(hook_command(workspace, event, client), input=data, capture_output=True,
                          timeout=HOOK_TIMEOUT, env=hook_env(), cwd=str(workspace.parent))


async def run_hook_async(workspace: Path, event: str, payload: dict[str, Any]) -> subprocess.CompletedProcess:
    # In a worker thread: the event loop keeps serving the MCP client's stdio meanwhile.
    return await anyio.to_thread.run_sync(lambda: run_hook(workspace, event, json.dumps(payload)))


def assert_clean(proc: subprocess.CompletedProcess) -> None:
    """What every hook run owes the client: exit 0, no traceback anywhere."""
    out, err = proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 0, (proc.returncode, out, err)
    assert "Traceback" not in err and "Traceback" not in out, err


def assert_silent(proc: subprocess.CompletedProcess) -> None:
    assert_clean(proc)
    assert proc.stdout == b"", proc.stdout


def hooks_log(workspace: Path) -> Path:
    return workspace / ".mcp-memory" / "hooks.log"


class LogWatch:
    """The part of hooks.log written since the watch started."""

    def __init__(self, workspace: Path):
        self.path = hooks_log(workspace)
        self.offset = self.path.stat().st_size if self.path.exists() else 0

    def new(self) -> str:
        if not self.path.exists():
            return ""
        with self.path.open("rb") as handle:
            handle.seek(self.offset)
            return handle.read().decode("utf-8", "replace")


def prompt_payload(prompt: str, session: str = SESSION, cwd: str = "/tmp") -> dict[str, Any]:
    return {"session_id": session, "transcript_path": f"/tmp/{session}.jsonl", "cwd": cwd,
            "hook_event_name": "UserPromptSubmit", "prompt": prompt}


def stop_payload(transcript: Path | str, session: str = SESSION, event: str = "Stop") -> dict[str, Any]:
    payload: dict[str, Any] = {"session_id": session, "transcript_path": str(transcript), "hook_event_name": event}
    if event == "Stop":
        payload["stop_hook_active"] = False
    else:
        payload["reason"] = "exit"
    return payload


def index_keywords(workspace: Path) -> None:
    """Index the workspace as ``mcp-memory index --embedder none`` would."""
    settings = load_settings(workspace, environ={}, overrides={"embedding.provider": "none"})
    with Memory(settings) as memory:
        memory.index()


@pytest.fixture
def ws(workspace: Path) -> Path:
    write(workspace, "MEMORY.md", MEMORY_MD)
    index_keywords(workspace)
    return workspace


def today_file(workspace: Path) -> Path:
    return workspace / "memory" / f"{dt.date.today().isoformat()}.md"


# ----- Claude Code transcripts ------------------------------------------------------------------
_uuid = iter(range(1, 10_000))


def _record(kind: str, content: Any, session: str, **extra: Any) -> dict[str, Any]:
    n = next(_uuid)
    message: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        message = {"id": f"msg_{n:04d}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                   "content": content, "stop_reason": None, "usage": {"input_tokens": 10, "output_tokens": 5}}
    return {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/home/u/proj",
            "sessionId": session, "version": "2.0.14", "gitBranch": "main", "type": kind, "message": message,
            "uuid": f"00000000-0000-0000-0000-{n:012d}", "timestamp": "2026-11-26T10:00:00.000Z", **extra}


def claude_transcript(session: str = SESSION) -> list[dict[str, Any]]:
    """One realistic Claude Code session: meta lines, tools, thinking, a sub-agent, streamed replies."""
    streamed = _record("assistant", [{"type": "text", "text": "Got it, Biscuit it is."}], session)
    return [
        {"type": "summary", "summary": "Setting up the billing service", "leafUuid": "x"},
        _record("user", "Caveat: The messages below were generated by the user while running local commands.",
                session, isMeta=True),
        _record("user", "My dog is called Biscuit.", session),
        _record("assistant", [{"type": "thinking", "thinking": "The user's dog is Rex, I think.", "signature": "s"}],
                session),
        streamed,
        streamed,  # Claude Code writes a streamed reply as repeated lines
        _record("user", "We decided to deploy the billing service on Fridays.", session),
        _record("assistant", [{"type": "tool_use", "id": "toolu_01", "name": "Bash",
                               "input": {"command": "cat deploy.md"}}], session),
        _record("user", [{"type": "tool_result", "tool_use_id": "toolu_01",
                          "content": "I prefer vim over emacs for every edit."}], session),
        _record("user", "My favourite colour is teal.", session, isSidechain=True),
        _record("assistant", [{"type": "text", "text": "Noted: Friday deploys for billing."}], session),
    ]


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


# ----- 1. the prompt hook -------------------------------------------------------------------------
def test_prompt_hook_prints_hook_json_citing_the_matching_memory(ws: Path) -> None:
    watch = LogWatch(ws)
    proc = run_hook(ws, "prompt", json.dumps(prompt_payload(MATCHING_PROMPT)))
    assert_clean(proc)
    out = proc.stdout.decode("utf-8")
    assert out.endswith("\n") and out.count("\n") == 1  # exactly one JSON object, one line
    data = json.loads(out)
    assert set(data) == {"hookSpecificOutput"}
    assert set(data["hookSpecificOutput"]) == {"hookEventName", "additionalContext"}
    assert data["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    block = data["hookSpecificOutput"]["additionalContext"]
    assert block.startswith("<relevant-memories>\n") and block.endswith("\n</relevant-memories>")
    assert "pnpm over npm" in block
    cited = [(p, int(a), int(b)) for p, a, b in re.findall(r'source="([^"#]+)#L(\d+)-L(\d+)"', block)]
    assert any(p == "MEMORY.md" and a <= PNPM_LINE <= b for p, a, b in cited), block
    assert "recall answered in-process from keywords" in watch.new()

    # The next prompt of the same session does not inject the same memory again; another session gets it.
    again = run_hook(ws, "prompt", json.dumps(prompt_payload(MATCHING_PROMPT)))
    assert_silent(again)
    other = run_hook(ws, "prompt", json.dumps(prompt_payload(MATCHING_PROMPT, session="another-session")))
    assert_clean(other)
    assert json.loads(other.stdout)["hookSpecificOutput"]["additionalContext"] == block


@pytest.mark.parametrize("prompt", [UNRELATED_PROMPT, "pnpm", "hi", "    ", ""])
def test_prompt_hook_is_silent_when_nothing_matches_or_the_prompt_is_short(ws: Path, prompt: str) -> None:
    # "pnpm" matches a memory but is shorter than recall.min_prompt_chars (5).
    proc = run_hook(ws, "prompt", json.dumps(prompt_payload(prompt)))
    assert_silent(proc)


@pytest.mark.parametrize("stdin, logged", [
    ("this is not json {", "JSONDecodeError"),
    ('[{"prompt": "Which package manager should I use, pnpm or npm?"}]', "not a JSON object"),
    ('"Which package manager should I use, pnpm or npm?"', "not a JSON object"),
    (b"\xff\xfe\x00garbage", "hook claude-code prompt failed"),
])
def test_prompt_hook_survives_bad_stdin_and_logs_it(ws: Path, stdin: str | bytes, logged: str) -> None:
    watch = LogWatch(ws)
    proc = run_hook(ws, "prompt", stdin)
    assert_silent(proc)
    log = watch.new()
    assert "hook claude-code prompt failed" in log and logged in log, log


def test_prompt_hook_with_empty_stdin_is_silent_and_logged(ws: Path) -> None:
    watch = LogWatch(ws)
    proc = run_hook(ws, "prompt", "")
    assert_silent(proc)
    assert "hook claude-code prompt took" in watch.new()


def test_stop_hook_with_empty_stdin_logs_the_missing_transcript(ws: Path) -> None:
    watch = LogWatch(ws)
    proc = run_hook(ws, "stop", "")
    assert_silent(proc)
    assert "no transcript_path" in watch.new()


def test_prompt_hook_without_an_index_is_silent_and_logged(workspace: Path) -> None:
    write(workspace, "MEMORY.md", MEMORY_MD)  # files, but never indexed
    proc = run_hook(workspace, "prompt", json.dumps(prompt_payload(MATCHING_PROMPT)))
    assert_silent(proc)
    log = hooks_log(workspace).read_text(encoding="utf-8")
    assert "recall answered in-process from keywords (0 characters)" in log
    assert "hook claude-code prompt took" in log


def test_prompt_hook_on_a_missing_workspace_is_silent_and_logged(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-workspace"
    proc = run_hook(missing, "prompt", json.dumps(prompt_payload(MATCHING_PROMPT)))
    assert_silent(proc)
    assert "hook claude-code prompt took" in hooks_log(missing).read_text(encoding="utf-8")
    assert not (missing / "memory").exists() and not (missing / "MEMORY.md").exists()


@pytest.mark.parametrize("client, event", [("claude-code", "pre-tool-use"), ("cursor", "prompt")])
def test_unknown_hook_event_or_client_exits_0_and_is_logged(ws: Path, client: str, event: str) -> None:
    watch = LogWatch(ws)
    proc = run_hook(ws, event, json.dumps(prompt_payload(MATCHING_PROMPT)), client=client)
    assert_silent(proc)
    assert proc.stderr == b""
    assert "failed" in watch.new()


def test_prompt_hook_with_a_broken_config_exits_0(ws: Path) -> None:
    watch = LogWatch(ws)
    write(ws, "mcp-memory.toml", "[recall\nmax_items = 'lots'\n")
    proc = run_hook(ws, "prompt", json.dumps(prompt_payload(MATCHING_PROMPT)))
    assert_silent(proc)
    assert "configuration error" in watch.new()


def test_prompt_hook_without_a_server_is_fast(ws: Path) -> None:
    # Sanity bound, not a benchmark: a cold hook never loads the vector index or a model.
    run_hook(ws, "prompt", json.dumps(prompt_payload(MATCHING_PROMPT, session="warm-up")))  # .pyc files
    started = time.perf_counter()
    proc = run_hook(ws, "prompt", json.dumps(prompt_payload(MATCHING_PROMPT, session="timed")))
    elapsed = time.perf_counter() - started
    assert_clean(proc)
    assert proc.stdout, "expected a recall block"
    assert elapsed < 3.0, f"prompt hook took {elapsed:.2f} s"


# ----- 2. the stop hook -------------------------------------------------------------------------
def test_stop_hook_captures_the_turn_once(ws: Path, tmp_path: Path) -> None:
    transcript = write_jsonl(tmp_path / f"{SESSION}.jsonl", claude_transcript())
    watch = LogWatch(ws)
    proc = run_hook(ws, "stop", json.dumps(stop_payload(transcript)))
    assert_silent(proc)
    assert "capture in-process: captured 2 memories" in watch.new()

    daily = today_file(ws)
    text = daily.read_text(encoding="utf-8")
    lines = text.split("\n")
    assert lines[0] == f"# {dt.date.today().isoformat()}"
    headings = [i for i, line in enumerate(lines) if line.startswith("## ")]
    assert len(headings) == 1
    assert re.fullmatch(rf"## \d\d:\d\d captured \(session {SESSION}\)", lines[headings[0]]), lines[headings[0]]
    bullets = [line for line in lines if line.startswith("- ")]
    assert len(bullets) == 2, bullets
    assert any("dog is called Biscuit" in b for b in bullets), bullets
    assert any("billing service on Fridays" in b for b in bullets), bullets
    today = dt.date.today().isoformat()
    assert all(re.fullmatch(rf"- \[[a-z]+\] .+ \({today}\)", b) for b in bullets), bullets
    # Tool results, sub-agent turns, meta lines, thinking and the assistant's words stay out.
    for absent in ("vim", "teal", "Rex", "Caveat", "Got it", "Noted"):
        assert absent not in text, absent

    # The same Stop again, then SessionEnd on the same transcript: nothing is written twice.
    for event, hook_event in (("stop", "Stop"), ("session-end", "SessionEnd")):
        watch = LogWatch(ws)
        proc = run_hook(ws, event, json.dumps(stop_payload(transcript, event=hook_event)))
        assert_silent(proc)
        assert "captured already" in watch.new()
        assert daily.read_text(encoding="utf-8") == text

    # A later turn captures only what is new in it.
    records = claude_transcript()
    records.append(_record("user", "I moved to Porto last month and work from there.", SESSION))
    write_jsonl(transcript, records)
    proc = run_hook(ws, "stop", json.dumps(stop_payload(transcript)))
    assert_silent(proc)
    after = daily.read_text(encoding="utf-8")
    assert after.startswith(text)
    assert after.count("Biscuit") == 1 and after.count("Fridays") == 1
    assert "Porto" in after[len(text):]


def test_stop_hook_with_a_missing_transcript_is_silent_and_logged(ws: Path, tmp_path: Path) -> None:
    missing = tmp_path / "gone.jsonl"
    watch = LogWatch(ws)
    proc = run_hook(ws, "stop", json.dumps(stop_payload(missing)))
    assert_silent(proc)
    log = watch.new()
    assert "hook claude-code stop failed" in log and "cannot read transcript" in log, log
    assert not today_file(ws).exists()


# ----- 3. the bridge, in-process ----------------------------------------------------------------
class Recorder:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(request)
        if request.get("op") == "boom":
            raise RuntimeError("kaboom")
        return {"echo": request.get("text"), "op": request.get("op")}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(10)
    return proc.pid


@pytest.fixture
def bridge(tmp_path: Path):
    handler = Recorder()
    server = BridgeServer(tmp_path / "index", handler).start()
    yield server, handler
    server.stop()


def test_bridge_round_trip(bridge) -> None:
    server, handler = bridge
    info = json.loads(server.info_path.read_text(encoding="utf-8"))
    assert info["pid"] == os.getpid() and isinstance(info["port"], int) and len(info["token"]) >= 24
    assert server.info_path.parent.name == "bridges"

    reply = call_bridge(server.info_path.parent.parent, {"op": "echo", "text": "héllo 你好"}, timeout=5)
    assert reply == {"ok": True, "echo": "héllo 你好", "op": "echo"}
    (request,) = handler.requests
    assert request == {"op": "echo", "text": "héllo 你好"}  # authenticated; the token itself never travels

    # A handler failure is an answer the caller falls back from, and the bridge keeps serving.
    assert call_bridge(server.info_path.parent.parent, {"op": "boom"}, timeout=5) is None
    assert call_bridge(server.info_path.parent.parent, {"op": "echo", "text": "again"}, timeout=5)["echo"] == "again"


def test_bridge_refuses_a_wrong_token(bridge) -> None:
    server, handler = bridge
    info = json.loads(server.info_path.read_text(encoding="utf-8"))
    server.info_path.write_text(json.dumps({**info, "token": "not-the-token"}), encoding="utf-8")
    assert call_bridge(server.info_path.parent.parent, {"op": "echo", "text": "x"}, timeout=5) is None
    # By hand, with no proof at all: refused with a reason (after the server's challenge line).
    with socket.create_connection(("127.0.0.1", info["port"]), timeout=5) as conn:
        lines = conn.makefile("rb")
        assert json.loads(lines.readline())["bridge"] == "mcp-memory"
        conn.sendall(b'{"op": "echo", "text": "x"}\n')
        reply = json.loads(lines.readline())
    assert reply["ok"] is False and reply["error"].startswith("bad request") and "mac" not in reply
    assert handler.requests == []
    # The file still points at a live process: it is not removed as stale.
    assert server.info_path.exists()


def test_bridge_refuses_an_oversized_request(bridge) -> None:
    server, handler = bridge
    index_dir = server.info_path.parent.parent
    assert call_bridge(index_dir, {"op": "echo", "text": "x" * (MAX_REQUEST_BYTES + 100)}, timeout=5) is None
    assert handler.requests == []
    assert call_bridge(index_dir, {"op": "echo", "text": "small"}, timeout=5)["echo"] == "small"


def test_stale_bridge_file_is_skipped_and_removed(tmp_path: Path) -> None:
    index_dir = tmp_path / "index"
    folder = index_dir / "bridges"
    folder.mkdir(parents=True)
    pid = dead_pid()
    stale = folder / f"{pid}.json"
    stale.write_text(json.dumps({"pid": pid, "port": free_port(), "token": "t" * 32, "started": time.time()}))
    assert call_bridge(index_dir, {"op": "echo"}, timeout=2) is None
    assert not stale.exists()

    # A stale file newer than a live bridge's is skipped on the way to the live one.
    handler = Recorder()
    live = BridgeServer(index_dir, handler).start()
    try:
        pid = dead_pid()
        stale = folder / f"{pid}.json"
        stale.write_text(json.dumps({"pid": pid, "port": free_port(), "token": "t" * 32, "started": time.time()}))
        future = time.time() + 60
        os.utime(stale, (future, future))
        started = time.perf_counter()
        reply = call_bridge(index_dir, {"op": "echo", "text": "live"}, timeout=5)
        assert reply is not None and reply["echo"] == "live"
        assert time.perf_counter() - started < 2
        assert not stale.exists() and live.info_path.exists()
    finally:
        live.stop()


def test_garbage_bridge_files_are_ignored(tmp_path: Path) -> None:
    index_dir = tmp_path / "index"
    folder = index_dir / "bridges"
    folder.mkdir(parents=True)
    (folder / "1.json").write_text("{not json")
    (folder / "2.json").write_text(json.dumps({"pid": 2}))
    (folder / "3.json").write_text(json.dumps([1, 2, 3]))
    assert call_bridge(index_dir, {"op": "echo"}, timeout=2) is None
    assert call_bridge(tmp_path / "no-index", {"op": "echo"}, timeout=2) is None


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX file modes")
def test_bridge_info_file_is_private(bridge) -> None:
    server, _ = bridge
    assert server.info_path.stat().st_mode & 0o777 == 0o600
    assert not list(server.info_path.parent.glob(".*.tmp"))


def test_bridge_stop_removes_the_file(tmp_path: Path) -> None:
    handler = Recorder()
    server = BridgeServer(tmp_path / "index", handler).start()
    info = json.loads(server.info_path.read_text(encoding="utf-8"))
    server.stop()
    assert not server.info_path.exists()
    assert call_bridge(tmp_path / "index", {"op": "echo"}, timeout=2) is None
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", info["port"]), timeout=1).close()
    server.stop()  # twice is harmless
    assert handler.requests == []


# ----- 4. hooks reaching a running server ---------------------------------------------------------
def stdio_params(workspace: Path, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "mcp_memory", "serve", "-w", str(workspace), "--embedder", "none", *extra],
        cwd=str(workspace.parent), env=hook_env(),
    )


async def wait_for(predicate: Any, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        await anyio.sleep(0.05)
    return predicate()


def bridge_files(workspace: Path) -> list[Path]:
    return sorted((workspace / ".mcp-memory" / "bridges").glob("*.json"))


@pytest.mark.anyio
async def test_hooks_are_answered_by_a_running_server(ws: Path, tmp_path: Path) -> None:
    transcript = write_jsonl(tmp_path / f"{SESSION}.jsonl", claude_transcript())
    async with Client(stdio_params(ws), mode="auto") as client:
        assert await wait_for(lambda: bool(bridge_files(ws))), "serve wrote no bridge file"
        (info_path,) = bridge_files(ws)
        info = json.loads(info_path.read_text(encoding="utf-8"))
        assert info_path.name == f"{info['pid']}.json"
        # The server's memory is open once a tool answered: the hook then never waits for it.
        warm = await client.call_tool("memory_search", {"query": "pnpm"})
        assert not warm.is_error, warm.content

        watch = LogWatch(ws)
        proc = await run_hook_async(ws, "prompt", prompt_payload(MATCHING_PROMPT))
        assert_clean(proc)
        block = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
        assert "pnpm over npm" in block and 'source="MEMORY.md#L' in block
        log = watch.new()
        assert "recall answered by a running server" in log, log
        assert "in-process" not in log

        watch = LogWatch(ws)
        proc = await run_hook_async(ws, "stop", stop_payload(transcript))
        assert_silent(proc)
        log = watch.new()
        assert "capture by a running server: captured 2 memories" in log, log
        assert "capture in-process" not in log

        # The server indexed what it captured: a search through the client finds it.
        found = await client.call_tool("memory_search", {"query": "Biscuit dog"})
        assert not found.is_error, found.content
        hits = found.structured_content["results"]
        today = dt.date.today().isoformat()
        assert hits and hits[0]["path"] == f"memory/{today}.md" and "Biscuit" in hits[0]["snippet"], hits

        # The same turn through the server again: nothing new.
        before = today_file(ws).read_text(encoding="utf-8")
        watch = LogWatch(ws)
        proc = await run_hook_async(ws, "session-end", stop_payload(transcript, event="SessionEnd"))
        assert_silent(proc)
        assert "captured already" in watch.new()
        assert today_file(ws).read_text(encoding="utf-8") == before
    # A server that exits takes its bridge file with it.
    assert await wait_for(lambda: not bridge_files(ws), timeout=10), bridge_files(ws)


@pytest.mark.anyio
async def test_serve_no_bridge_writes_no_bridge_file(ws: Path) -> None:
    async with Client(stdio_params(ws, "--no-bridge"), mode="auto") as client:
        status = await client.call_tool("memory_status", {})
        assert not status.is_error, status.content
        assert bridge_files(ws) == []
        watch = LogWatch(ws)
        proc = await run_hook_async(ws, "prompt", prompt_payload(MATCHING_PROMPT))
        assert_clean(proc)
        assert "pnpm over npm" in json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
        assert "recall answered in-process from keywords" in watch.new()
