"""One warm process per workspace: stdio servers as thin fronts, hooks answered by it.

Everything runs as a user runs it: ``python -m mcp_memory serve`` spawned by the MCP SDK's
stdio client, hooks as fresh ``python -m mcp_memory hook`` processes, the warm process started
by them and killed with SIGKILL. Keyword search only (``--embedder none``) except where the
subject is semantic recall, which uses the real default embedder.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from conftest import WARM_IDLE, server_env, write
from mcp_memory.config import load_settings
from mcp_memory.runtime.bridge import BridgeInfo, bridge_infos, call_bridge, owner_state, process_identity

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="kill -9 and /proc")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# ----- helpers ----------------------------------------------------------------------------------
def params(workspace: Path, *extra: str, embedder: str = "none", **env: str) -> StdioServerParameters:
    args = ["-m", "mcp_memory", "serve", "-w", str(workspace), *(["--embedder", embedder] if embedder else []),
            *extra]
    return StdioServerParameters(command=sys.executable, args=args, env=server_env(**env),
                                 cwd=str(workspace.parent))


def warm_infos(workspace: Path) -> list[BridgeInfo]:
    """The live warm processes of a workspace, by their bridge files."""
    return [i for i in bridge_infos(workspace / ".mcp-memory" / "bridges")
            if i.role == "warm" and owner_state(i) == "alive"]


def fronts(workspace: Path) -> list[int]:
    """Pids of the ``serve`` processes running on ``workspace``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"serve" in argv and str(workspace).encode() in argv and process_identity(int(entry.name)):
            found.append(int(entry.name))
    return found


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def until(predicate: Callable[[], Any], timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        await anyio.sleep(0.05)


def daily(workspace: Path) -> str:
    path = workspace / "memory" / f"{dt.date.today().isoformat()}.md"
    return path.read_text(encoding="utf-8") if path.exists() else ""


def result_of(call: Any) -> dict[str, Any]:
    assert not call.is_error, call
    data: dict[str, Any] = call.structured_content or json.loads(call.content[0].text)
    return data


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    write(root, "MEMORY.md", "# Memory\n\n- [preference] The user prefers pnpm over npm and yarn.\n")
    write(root, "memory/2026-01-05.md", "# 2026-01-05\n\n- The staging database is called heron-db.\n")
    return root


# ----- several clients, one process ---------------------------------------------------------------
@pytest.mark.anyio
async def test_stdio_clients_share_one_warm_process(ws: Path) -> None:
    async with Client(params(ws)) as first, Client(params(ws)) as second, Client(params(ws)) as third:
        (warm,) = await until(lambda: warm_infos(ws))
        stored = result_of(await first.call_tool("memory_store", {"text": "The release train leaves on Tuesdays."}))
        assert stored["stored"] is True
        # The others see it at once: one memory, one index, in one process.
        found = result_of(await second.call_tool("memory_search", {"query": "when does the release train leave"}))
        assert any("Tuesdays" in hit["snippet"] for hit in found["results"]), found
        names = {tool.name for tool in (await third.list_tools()).tools}
        assert {"memory_search", "memory_store", "memory_get"} <= names
        assert [i.pid for i in warm_infos(ws)] == [warm.pid]
        # Each front holds no index and no model: a generous bound here, the exact figure in bench/server.py.
        pids = fronts(ws)
        assert len(pids) == 3, pids
        assert all(rss_mb(pid) < 60 for pid in pids), [rss_mb(pid) for pid in pids]
        assert rss_mb(warm.pid) > max(rss_mb(pid) for pid in pids)


@pytest.mark.anyio
async def test_the_warm_process_exits_when_idle_and_leaves_nothing(ws: Path) -> None:
    async with Client(params(ws)) as client:
        await client.call_tool("memory_search", {"query": "staging database"})
        (warm,) = warm_infos(ws)
    # The idle time in tests is a few seconds (conftest.WARM_IDLE).
    idle = float(WARM_IDLE) * 60
    assert await until(lambda: process_identity(warm.pid) is None, timeout=idle + 20)
    assert not warm.path.exists() and warm_infos(ws) == []


@pytest.mark.anyio
async def test_two_workspaces_never_share_a_process(ws: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    write(other, "MEMORY.md", "# Memory\n\n- The user's other workspace holds the garden notes.\n")
    async with Client(params(ws)) as one, Client(params(other)) as two:
        hits_one = result_of(await one.call_tool("memory_search", {"query": "garden notes"}))["results"]
        hits_two = result_of(await two.call_tool("memory_search", {"query": "garden notes"}))["results"]
        assert hits_two and not any("garden" in h["snippet"] for h in hits_one)
        (a,), (b,) = warm_infos(ws), warm_infos(other)
        assert a.pid != b.pid


@pytest.mark.anyio
async def test_other_settings_get_their_own_process(ws: Path) -> None:
    async with Client(params(ws)) as plain, Client(params(ws, MCP_MEMORY_SEARCH_MAX_RESULTS="3")) as other:
        await plain.list_tools()
        await other.list_tools()
        infos = await until(lambda: len(warm_infos(ws)) == 2 and warm_infos(ws))
        assert len({i.settings for i in infos}) == 2


@pytest.mark.anyio
async def test_no_background_process_when_not_allowed(ws: Path) -> None:
    async with Client(params(ws, MCP_MEMORY_WARM_ENABLED="false")) as client:
        found = result_of(await client.call_tool("memory_search", {"query": "staging database"}))
        assert found["results"]
        assert warm_infos(ws) == []


# ----- the warm process dies ----------------------------------------------------------------------
@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto", "legacy"])  # legacy: the initialize the front answered is replayed
@pytest.mark.parametrize("delay", [0.0, 0.02, 0.1, 0.3])
async def test_killed_mid_request_loses_and_doubles_nothing(ws: Path, delay: float, mode: str) -> None:
    text = f"The deploy key rotates every {int(delay * 1000) + 7} days."
    async with Client(params(ws), mode=mode) as client:
        await client.list_tools()
        (warm,) = await until(lambda: warm_infos(ws))

        async def kill_soon() -> None:
            await anyio.sleep(delay)
            os.kill(warm.pid, signal.SIGKILL)

        async with anyio.create_task_group() as group:
            group.start_soon(kill_soon)
            stored = result_of(await client.call_tool("memory_store", {"text": text}))
        assert stored["citation"].startswith("memory/")
        assert daily(ws).count(text) == 1
        # The next request is served, by a new warm process.
        found = result_of(await client.call_tool("memory_search", {"query": "how often does the deploy key rotate"}))
        assert any("deploy key" in hit["snippet"] for hit in found["results"])
        (new,) = await until(lambda: warm_infos(ws))
        assert new.pid != warm.pid
    assert daily(ws).count(text) == 1


@pytest.mark.anyio
async def test_a_stale_record_of_a_dead_process_is_ignored(ws: Path) -> None:
    bridges = ws / ".mcp-memory" / "bridges"
    bridges.mkdir(parents=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    settings = load_settings(ws, environ=server_env(), overrides={"embedding.provider": "none"})
    from mcp_memory.runtime.warm import settings_digest

    stale = bridges / f"{dead.pid}.json"
    stale.write_text(json.dumps({"pid": dead.pid, "port": 9, "token": "t" * 32, "identity": "x:1", "role": "warm",
                                 "settings": settings_digest(settings), "started": time.time()}))
    async with Client(params(ws)) as client:
        found = result_of(await client.call_tool("memory_search", {"query": "staging database"}))
        assert found["results"]
        assert not stale.exists()
        assert [i.pid for i in warm_infos(ws)] != [dead.pid]


# ----- hooks --------------------------------------------------------------------------------------
def hook(workspace: Path, event: str, payload: dict[str, Any], *extra: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "mcp_memory", "hook", "claude-code", event, "-w", str(workspace),
                           *extra], input=json.dumps(payload).encode(), capture_output=True, timeout=120,
                          env=server_env(), cwd=str(workspace.parent))


@pytest.mark.integration
def test_hooks_start_the_warm_process_and_recall_semantically(ws: Path) -> None:
    index = subprocess.run([sys.executable, "-m", "mcp_memory", "index", "-w", str(ws)], capture_output=True,
                           timeout=300, env=server_env())
    assert index.returncode == 0, index.stderr
    started = hook(ws, "session-start", {"session_id": "s1", "source": "startup"})
    assert started.returncode == 0 and started.stdout == b""  # nothing pinned; the warm process is starting
    deadline = time.monotonic() + 60
    while not warm_infos(ws) and time.monotonic() < deadline:
        time.sleep(0.05)
    (warm,) = warm_infos(ws)
    # The user types the first prompt while the warm process loads (bench/hooks.py times a
    # prompt hook that has to start it itself).
    assert call_bridge(ws / ".mcp-memory", {"op": "recall", "prompt": "warming up"}, timeout=60) is not None
    # No word in common with the memory: only the model's vectors bring it up.
    prompts = ["Help me set up a new Node.js project", "Which JavaScript tooling should the new app use?"]
    for n, prompt in enumerate(prompts):
        proc = hook(ws, "prompt", {"prompt": prompt, "session_id": f"s{n}"})
        assert proc.returncode == 0, proc.stderr
        context = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
        assert "pnpm over npm" in context, context
    log = (ws / ".mcp-memory" / "hooks.log").read_text(encoding="utf-8")
    assert log.count("recall answered by a running server") == 2
    assert [i.pid for i in warm_infos(ws)] == [warm.pid]


def test_hooks_and_clients_at_once(ws: Path) -> None:
    """Stop hooks capturing while a client stores: every line lands once, one process serves all."""
    transcripts = []
    for n in range(3):
        path = ws.parent / f"t{n}.jsonl"
        path.write_text(json.dumps({"type": "user", "message": {"role": "user",
                                                                "content": f"My locker number is {100 + n}."}})
                        + "\n", encoding="utf-8")
        transcripts.append(path)

    async def main() -> None:
        async with Client(params(ws)) as client:
            await client.list_tools()

            async def run_hook(n: int) -> None:
                payload = {"session_id": f"h{n}", "transcript_path": str(transcripts[n])}
                proc = await anyio.to_thread.run_sync(lambda: hook(ws, "stop", payload, "--embedder", "none"))
                assert proc.returncode == 0

            async with anyio.create_task_group() as group:
                for n in range(3):
                    group.start_soon(run_hook, n)
                for n in range(3):
                    await client.call_tool("memory_store", {"text": f"The spare key is in drawer {n + 1}."})
            assert len(warm_infos(ws)) == 1

    anyio.run(main)
    text = daily(ws)
    for n in range(3):
        assert text.count(f"locker number is {100 + n}") == 1, text
        assert text.count(f"drawer {n + 1}") == 1, text


# ----- the front on raw pipes ---------------------------------------------------------------------
def test_the_front_keeps_stdout_for_protocol(ws: Path) -> None:
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    raw = b"".join(json.dumps(m).encode() + b"\n" for m in lines) + b"this is not json\n"
    raw += json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                       "params": {"name": "memory_search", "arguments": {"query": "staging"}}}).encode() + b"\n"
    proc = subprocess.run([sys.executable, "-m", "mcp_memory", "serve", "-w", str(ws), "--embedder", "none"],
                          input=raw, capture_output=True, timeout=120, env=server_env(), cwd=str(ws.parent))
    assert proc.returncode == 0, proc.stderr
    replies = [json.loads(line) for line in proc.stdout.splitlines()]  # every stdout line is JSON-RPC
    by_id = {r.get("id"): r for r in replies}
    assert set(by_id) == {1, 2, 3, None}
    assert by_id[None]["error"]["code"] == -32700  # the garbage line, answered
    assert "heron-db" in json.dumps(by_id[3]["result"])
    assert proc.stderr == b"" and warm_infos(ws)  # served by the warm process, quietly


@pytest.mark.anyio
async def test_a_shared_front_never_sees_the_private_file(ws: Path) -> None:
    async with Client(params(ws)) as owner, Client(params(ws, "--shared")) as shared:
        mine = result_of(await owner.call_tool("memory_search", {"query": "pnpm npm yarn"}))["results"]
        theirs = result_of(await shared.call_tool("memory_search", {"query": "pnpm npm yarn"}))["results"]
        assert any(hit["path"] == "MEMORY.md" for hit in mine)
        assert not any(hit["path"] == "MEMORY.md" for hit in theirs)
        denied = await shared.call_tool("memory_get", {"path": "MEMORY.md"})
        assert denied.is_error
        assert len(warm_infos(ws)) == 1  # one process, two levels of trust


@pytest.mark.anyio
async def test_a_write_sent_again_with_its_key_is_done_once(settings: Any) -> None:
    """What the front relies on after a reconnection: the same key gets the recorded answer."""
    from conftest import close_server, make_server

    write(settings.workspace, "memory/notes.md", "- The printer on floor 3 jams on duplex jobs.\n")
    server, service = make_server(settings)
    try:
        async with Client(server) as client:
            hit = result_of(await client.call_tool("memory_search", {"query": "printer jams"}))["results"][0]
            meta = {"io.mcp-memory/call": "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6"}
            first = result_of(await client.call_tool("reward_memory_utility", {"memory_id": hit["id"]}, meta=meta))
            again = result_of(await client.call_tool("reward_memory_utility", {"memory_id": hit["id"]}, meta=meta))
            assert again == first
            other = {"io.mcp-memory/call": "ffffffffffffffffffffffffffffffff"}
            third = result_of(await client.call_tool("reward_memory_utility", {"memory_id": hit["id"]}, meta=other))
            assert third != first  # a new key is a new reward
            # Read-only tools are never answered from the record.
            searched = result_of(await client.call_tool("memory_search", {"query": "printer"}, meta=meta))
            assert searched["results"]
    finally:
        close_server(service)
    log = (settings.workspace / "memory" / "utility.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(log) == 2


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to own a file as another user")
@pytest.mark.anyio
async def test_another_users_warm_process_is_never_asked(ws: Path) -> None:
    """A bridge file another user owns is neither read, nor asked, nor removed."""
    settings = load_settings(ws, environ=server_env(), overrides={"embedding.provider": "none"})
    from mcp_memory.runtime.warm import settings_digest

    bridges = ws / ".mcp-memory" / "bridges"
    bridges.mkdir(parents=True)
    foreign = bridges / "1.json"  # pid 1 is alive: only the owner tells this file apart
    foreign.write_text(json.dumps({"pid": 1, "port": 9, "token": "t" * 32, "identity": process_identity(1),
                                   "role": "warm", "settings": settings_digest(settings), "started": time.time()}))
    os.chown(foreign, 65534, 65534)
    async with Client(params(ws)) as client:
        found = result_of(await client.call_tool("memory_search", {"query": "staging database"}))
        assert found["results"]
        (mine,) = warm_infos(ws)
        assert mine.pid != 1
    assert foreign.exists()


@pytest.mark.anyio
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
async def test_a_stopped_warm_process_cleans_up(ws: Path, signum: int) -> None:
    async with Client(params(ws)) as client:
        await client.list_tools()
        (warm,) = await until(lambda: warm_infos(ws))  # the tools are listed before it is up
    os.kill(warm.pid, signum)
    assert await until(lambda: process_identity(warm.pid) is None, timeout=20)
    assert not warm.path.exists()  # removed by the process itself, not found stale later
