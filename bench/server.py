"""MCP server benchmark over stdio: cold start and warm ``memory_search`` round trips.

A hand-run benchmark, not a test. Every figure comes with a floor measured in the same run,
so on a noisy shared machine the numbers can be read as ratios. The floor is a minimal
``MCPServer`` with one trivial tool (``ping`` returns a short string), written to a temporary
``.py`` file and spawned with the same Python as ``mcp-memory``.

1. Cold start: wall time from just before entering ``async with Client(StdioServerParameters(...))``
   (which spawns the process) to ``list_tools()`` returning, for ``mcp-memory serve --workspace W``
   on an already indexed LoCoMo workspace and for the floor, ``--runs`` times each (default 7),
   alternating which goes first; median and min, and the ratio of the medians (target <= 1.5x).
   Also one run on an empty fresh workspace, kept open until ``memory_status`` answers.
   This server is the in-process one (``MCP_MEMORY_WARM_ENABLED=false``), as in 2 and 3.
1b. Additional clients (warm processes enabled, the default): with no warm process at first, one
   client is opened and kept open (its ``serve`` starts the warm process); then ``--runs`` cold
   starts of a further client (a thin front forwarding to the warm process) alternating with the
   floor: ratio of the medians (target <= 1.1x). Then two more fronts stay open beside the first:
   VmRSS (``/proc/<pid>/status``) of every front after ``tools/list`` and one ``memory_search``
   (target <= 60 MB each), of the warm process and of the floor, and of an in-process server
   after the same calls. The warm process is stopped (SIGTERM) before and after.
2. Warm ``memory_search`` round trip over stdio on the LoCoMo workspace (indexed with the default
   configuration first: ``mcp-memory index --workspace W``, timed; a no-op when it is indexed).
   One client per server stays open; after ``memory_status`` succeeds (the engine is open),
   20 warm-up searches, then ``--queries`` (default 300) distinct LoCoMo questions, each
   interleaved with one ``ping`` call on the floor server: p50, p95, mean (targets: p50 <= 15 ms,
   p95 <= 30 ms, p50 <= 3x the floor's p50). The same queries also run in this process
   (``Memory(load_settings(W))``, same warm-up, ``memory.search(q)``), in ``--blocks`` blocks
   alternating with the stdio ones, so the protocol overhead reads as the difference. Then,
   servers closed, the engine's own share: the same searches with their query vectors cached,
   and ``embed_query`` alone.
2b. ``--stores`` (default 30; 0 skips): ``memory_store`` over stdio, one call after the other, each
   followed by a floor ``ping``, on a temporary copy of the workspace and its index (the benchmark's
   workspace keeps its files), after 3 untimed stores; distinct sentences of six words drawn from
   the LoCoMo questions: p50, p95, mean (target: p50 <= 100 ms).
3. ``--layers`` (off by default): both servers again, started through a launcher that wraps SDK
   and engine functions with timers in the child process (request handler, ``Tool.run``, thread
   hops, result conversion, tool body, ``Memory.search`` and within it ``HybridSearcher.rank``,
   ``embed_query``, keyword search and ``HybridSearcher.settle``), over the same queries: where a
   round trip's time goes, measured inside the server process (in a temporary folder).

The LoCoMo data (``../shared/data/locomo/locomo10.json``) is read in place, never copied into
the repository; the workspace is written by ``bench/locomo.py``'s ``write_workspace``.
Configuration is the default: ``MCP_MEMORY_*`` variables are not passed to the servers and
are ignored in process (but for ``MCP_MEMORY_WARM_ENABLED=false`` where the in-process server is
meant); a ``mcp-memory.toml`` in the workspace is reported.

A summary goes to stderr, the full JSON to stdout.

    python bench/server.py                          # 7 cold starts each, 300 queries
    python bench/server.py --runs 3 --queries 100 --json server.json
    python bench/server.py --runs 0 --layers       # warm round trips and stores, with per-layer timers
    python bench/server.py --runs 0 --queries 0    # stores only
    python bench/server.py --workspace /tmp/mcp-memory-locomo-default   # reuse an indexed copy
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from importlib.metadata import version

from mcp import Client, StdioServerParameters

from machine import emit, loadavg, machine, percentile
from warmproc import children_with, rss_mb, stop_warm, warm_pids

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "locomo" / "locomo10.json"
DEFAULT_WORKSPACE = Path(os.environ.get("TMPDIR") or "/tmp") / "mcp-memory-server-bench"
WARMUP_QUERIES = 20
COLD_TARGET_RATIO = 1.5
SEARCH_TARGET_P50_MS = 15.0
SEARCH_TARGET_P95_MS = 30.0
SEARCH_TARGET_FLOOR_RATIO = 3.0  # memory_search p50 over the floor ping p50 of the same run
STORE_TARGET_P50_MS = 100.0
STORE_WARMUP = 3
READY_TIMEOUT_S = 300.0
ADDITIONAL_TARGET_RATIO = 1.1
FRONT_TARGET_RSS_MB = 60.0
WARM_OFF = ("MCP_MEMORY_WARM_ENABLED", "false")
SETTLE_S = 0.3  # pause between cold starts, so a dying process does not overlap the next one

FLOOR_SERVER = Path(__file__).with_name("floor_server.py")  # the bare MCPServer of the same SDK

# --layers: the same two servers, started through this launcher, which wraps SDK and engine
# functions with timers (in the child process only; nothing is changed on disk) and appends
# one JSON line per timed call to a log file. It leans on SDK internals (JSONRPCDispatcher.
# _handle_request, Tool.run, FuncMetadata.convert_result, anyio.to_thread.run_sync as called by
# mcp.server.mcpserver.utilities.func_metadata), so it may need updating with a new SDK.
LAYERS_LAUNCHER = '''\
"""bench/server.py --layers: start a server with per-layer timers. argv: memory|floor WORKSPACE|FLOOR_FILE LOG"""
import functools, inspect, json, runpy, sys, time

mode, target, log_path = sys.argv[1:4]
log = open(log_path, "a", buffering=1)


def record(layer, started):
    log.write(json.dumps({"layer": layer, "ms": (time.perf_counter() - started) * 1000}) + "\\n")


def timed(owner, name, layer):
    original = getattr(owner, name)
    if inspect.iscoroutinefunction(original):
        @functools.wraps(original)
        async def wrapper(*args, **kwargs):
            started = time.perf_counter()
            try:
                return await original(*args, **kwargs)
            finally:
                record(layer, started)
    else:
        @functools.wraps(original)
        def wrapper(*args, **kwargs):
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                record(layer, started)
    setattr(owner, name, wrapper)


import anyio.to_thread
from mcp.server.mcpserver.tools.base import Tool
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher

timed(JSONRPCDispatcher, "_handle_request", "handler")
timed(Tool, "run", "tool_run")
timed(FuncMetadata, "convert_result", "convert")
_run_sync = anyio.to_thread.run_sync


async def run_sync(func, *args, **kwargs):
    marks = {}

    def inner(*a):
        marks["start"] = time.perf_counter()
        try:
            return func(*a)
        finally:
            marks["end"] = time.perf_counter()

    started = time.perf_counter()
    try:
        return await _run_sync(inner, *args, **kwargs)
    finally:
        ended = time.perf_counter()
        name = getattr(getattr(func, "func", func), "__name__", "")
        if name in ("memory_search", "ping") and "end" in marks:
            log.write(json.dumps({"layer": "body",
                                  "ms": (marks["end"] - marks["start"]) * 1000}) + "\\n")
            log.write(json.dumps({"layer": "hops",
                                  "ms": (marks["start"] - started + ended - marks["end"]) * 1000}) + "\\n")


anyio.to_thread.run_sync = run_sync
if mode == "floor":
    sys.argv = [target]
    runpy.run_path(target, run_name="__main__")
else:
    from mcp_memory.embedding import local
    from mcp_memory.index.hybrid import HybridSearcher
    from mcp_memory.index.keywords import KeywordIndex
    from mcp_memory.memory import Memory

    timed(Memory, "search", "search")
    timed(HybridSearcher, "rank", "rank")
    timed(HybridSearcher, "settle", "settle")
    for name in ("USEEmbedder", "E5Embedder"):  # the offline providers
        if hasattr(local, name):
            timed(getattr(local, name), "embed_query", "embed")
    timed(KeywordIndex, "search", "keywords")
    from mcp_memory.cli import main

    sys.exit(main(["serve", "--workspace", target]))
'''


LAYERS = [  # (key the launcher logs, nesting depth, label)
    ("handler", 0, "server: request handled (parsed request -> response queued)"),
    ("tool_run", 1, "Tool.run: validate arguments, to_thread(tool), convert the result"),
    ("hops", 2, "thread hops: to_thread there and back"),
    ("convert", 2, "convert_result: return value -> content + structured content"),
    ("body", 2, "tool function body (memory_search or ping)"),
    ("search", 3, "engine: Memory.search"),
    ("rank", 4, "engine: HybridSearcher.rank (candidates, fusion, decay, utility, MMR)"),
    ("embed", 5, "engine: embed_query"),
    ("keywords", 5, "engine: KeywordIndex.search"),
    ("settle", 4, "engine: HybridSearcher.settle (changed facts, core/updates.py)"),
]


# ----- helpers ----------------------------------------------------------------------------------
def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def ms_stats(values: list[float]) -> dict[str, float]:
    """p50/p95 by linear interpolation (numpy's default), in milliseconds."""
    arr = sorted(v * 1000.0 for v in values)

    def pct(p: float) -> float:
        return percentile(arr, p)

    return {"n": len(arr), "p50_ms": round(pct(50), 2), "p95_ms": round(pct(95), 2),
            "mean_ms": round(statistics.fmean(arr), 2), "min_ms": round(arr[0], 2), "max_ms": round(arr[-1], 2)}


def s_stats(values: list[float]) -> dict[str, Any]:
    return {"runs_s": [round(v, 3) for v in values], "median_s": round(statistics.median(values), 3),
            "min_s": round(min(values), 3)}


def server_env(warm: bool = True) -> dict[str, str]:
    """The environment the servers get: this one, without MCP_MEMORY_* (default configuration);
    with ``warm`` false, plus ``MCP_MEMORY_WARM_ENABLED=false``: ``serve`` then serves in its own
    process (the server as it was before warm processes) instead of forwarding to one."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_MEMORY_")}
    if not warm:
        env[WARM_OFF[0]] = WARM_OFF[1]
    return env


def memory_command() -> list[str]:
    script = Path(sys.executable).with_name("mcp-memory")
    return [str(script)] if script.exists() else [sys.executable, "-m", "mcp_memory"]


def memory_params(workspace: Path, warm: bool = False) -> StdioServerParameters:
    """``mcp-memory serve`` over stdio: in-process (default here) or a front to the warm process."""
    command = memory_command()
    return StdioServerParameters(command=command[0], args=[*command[1:], "serve", "--workspace", str(workspace)],
                                 env=server_env(warm))


def floor_params(floor_file: Path) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=[str(floor_file)], env=server_env())


def load_questions(data: list[dict]) -> list[str]:
    """The distinct LoCoMo questions, in file order (as bench/speed.py picks them)."""
    seen: set[str] = set()
    out: list[str] = []
    for sample in data:
        for qa in sample["qa"]:
            q = " ".join(str(qa["question"]).split())
            if q and q not in seen:
                seen.add(q)
                out.append(q)
    return out


# ----- 0. the workspace ---------------------------------------------------------------------------
def prepare_workspace(workspace: Path, data: list[dict]) -> dict[str, Any]:
    """Write the LoCoMo workspace (only files that differ) and index it with ``mcp-memory index``."""
    from bench.locomo import write_workspace  # imports the engine: only here, not before

    started = time.perf_counter()
    had_index = (workspace / ".mcp-memory" / "state.sqlite").exists()
    questions = write_workspace(data, workspace)
    write_s = time.perf_counter() - started
    toml = workspace / "mcp-memory.toml"
    log(f"workspace {workspace}: {'had an index' if had_index else 'no index yet'}; running mcp-memory index")
    started = time.perf_counter()
    out = subprocess.run([*memory_command(), "index", "--quiet", "--workspace", str(workspace)],
                         capture_output=True, text=True, env=server_env())
    index_s = time.perf_counter() - started
    if out.returncode:
        raise SystemExit(f"mcp-memory index failed (exit {out.returncode}):\n{out.stderr}")
    summary = out.stderr.strip().splitlines()[-1] if out.stderr.strip() else ""
    numbers = re.search(r"\((\d+) added, (\d+) changed, (\d+) removed\); (\d+) chunks embedded now", summary)
    touched = [int(n) for n in numbers.groups()] if numbers else None
    noop = bool(touched) and not any(touched)
    log(f"  mcp-memory index took {index_s:.1f}s ({'no-op: already indexed' if noop else 'indexed now'}): {summary}")
    return {"path": str(workspace), "had_index": had_index, "write_s": round(write_s, 2),
            "locomo_questions_with_evidence": len(questions), "index_s": round(index_s, 1),
            "index_was_noop": noop, "index_summary": summary,
            "config_file": str(toml) if toml.exists() else None,
            "ignored_env": sorted(k for k in os.environ if k.startswith("MCP_MEMORY_"))}


# ----- 1. cold start ------------------------------------------------------------------------------
async def cold_start_once(params: StdioServerParameters) -> dict[str, Any]:
    started = time.perf_counter()
    async with Client(params, cache=None) as client:
        entered = time.perf_counter()
        tools = await client.list_tools()
        answered = time.perf_counter()
        protocol = client.protocol_version
    closed = time.perf_counter()
    return {"handshake_s": entered - started, "list_tools_s": answered - started, "close_s": closed - answered,
            "tools": len(tools.tools), "protocol": protocol}


async def measure_cold(mem: StdioServerParameters, floor: StdioServerParameters, runs: int) -> dict[str, Any]:
    samples: dict[str, list[dict[str, Any]]] = {"memory": [], "floor": []}
    for i in range(runs):
        order = ["memory", "floor"] if i % 2 == 0 else ["floor", "memory"]
        for name in order:
            r = await cold_start_once(mem if name == "memory" else floor)
            samples[name].append(r)
            await anyio.sleep(SETTLE_S)
        log(f"  cold start run {i + 1}/{runs} ({order[0]} first): memory {samples['memory'][-1]['list_tools_s']:.3f}s, "
            f"floor {samples['floor'][-1]['list_tools_s']:.3f}s")
    out: dict[str, Any] = {"runs": runs, "order": "alternating, memory first on odd runs"}
    for name, rows in samples.items():
        out[name] = {"list_tools": s_stats([r["list_tools_s"] for r in rows]),
                     "handshake": s_stats([r["handshake_s"] for r in rows]),
                     "close": s_stats([r["close_s"] for r in rows]),
                     "tools": rows[0]["tools"], "protocol": rows[0]["protocol"]}
    out["ratio_median"] = round(out["memory"]["list_tools"]["median_s"] / out["floor"]["list_tools"]["median_s"], 2)
    out["ratio_min"] = round(out["memory"]["list_tools"]["min_s"] / out["floor"]["list_tools"]["min_s"], 2)
    out["extra_median_ms"] = round((out["memory"]["list_tools"]["median_s"]
                                    - out["floor"]["list_tools"]["median_s"]) * 1000, 1)
    out["target_ratio"] = COLD_TARGET_RATIO
    out["meets_target"] = out["ratio_median"] <= COLD_TARGET_RATIO
    return out


async def wait_ready(client: Client, started: float) -> tuple[float, int, dict[str, Any]]:
    """Call memory_status until it succeeds; (seconds since ``started``, calls, status)."""
    calls = 0
    while True:
        calls += 1
        result = await client.call_tool("memory_status", {})
        if not result.is_error:
            return time.perf_counter() - started, calls, dict(result.structured_content or {})
        if time.perf_counter() - started > READY_TIMEOUT_S:
            text = result.content[0].text if result.content else ""
            raise SystemExit(f"memory_status still failing after {READY_TIMEOUT_S:.0f}s: {text}")
        await anyio.sleep(0.1)


async def measure_empty(floor_cold: dict[str, Any]) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="mcp-memory-server-bench-empty-"))
    workspace = root / "workspace"
    workspace.mkdir()
    try:
        started = time.perf_counter()
        async with Client(memory_params(workspace), cache=None) as client:
            handshake = time.perf_counter() - started
            tools = await client.list_tools()
            answered = time.perf_counter() - started
            ready_s, calls, status = await wait_ready(client, started)
            done = time.perf_counter()
        close_s = time.perf_counter() - done
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {"handshake_s": round(handshake, 3), "list_tools_s": round(answered, 3), "tools": len(tools.tools),
            "ratio_to_floor_median": round(answered / floor_cold["floor"]["list_tools"]["median_s"], 2),
            "memory_status_ok_s": round(ready_s, 3), "memory_status_calls": calls, "close_s": round(close_s, 3),
            "status_files": status.get("files"), "status_chunks": status.get("chunks")}


# ----- 1b. additional clients of the warm process, and memory per process --------------------------
def _rss_of(args: list[str]) -> list[float | None]:
    """VmRSS (MB) of this process's children whose command line holds all of ``args``."""
    return [rss_mb(pid) for pid in children_with(args)]


async def measure_additional(workspace: Path, floor: StdioServerParameters, runs: int,
                             query: str) -> dict[str, Any]:
    """With the warm process serving a first client (kept open): cold starts of further stdio
    clients (``serve``, a thin front) against the floor, alternating; then the RSS of two more
    fronts kept open (after ``tools/list`` and one ``memory_search``), of the warm process and
    of the floor; finally, for comparison, the RSS of an in-process server
    (``MCP_MEMORY_WARM_ENABLED=false``) after the same calls."""
    stopped = stop_warm(workspace)  # start from no warm process: the first client starts one
    mem = memory_params(workspace, warm=True)
    serve_args = ["serve", "--workspace", str(workspace)]
    out: dict[str, Any] = {"runs": runs, "warm_processes_stopped_before": stopped.pids}
    started = time.perf_counter()
    async with Client(mem, cache=None) as first:
        await first.list_tools()
        out["first_client_list_tools_s"] = round(time.perf_counter() - started, 3)
        ready_s, _, _ = await wait_ready(first, started)
        out["first_client_ready_s"] = round(ready_s, 3)
        result = await first.call_tool("memory_search", {"query": query})
        assert not result.is_error, result
        pids = warm_pids(workspace)
        if len(pids) != 1:
            raise SystemExit(f"expected one warm process for {workspace}, found {pids}")
        out["warm_pid"] = pids[0]
        log(f"  first client: tools/list {out['first_client_list_tools_s']}s after spawn (starts the warm process "
            f"{pids[0]}), memory_status ok after {ready_s:.2f}s")

        samples: dict[str, list[float]] = {"additional": [], "floor": []}
        for i in range(runs):
            order = ["additional", "floor"] if i % 2 == 0 else ["floor", "additional"]
            for name in order:
                r = await cold_start_once(mem if name == "additional" else floor)
                samples[name].append(r["list_tools_s"])
                await anyio.sleep(SETTLE_S)
            log(f"  additional client run {i + 1}/{runs}: {samples['additional'][-1]:.3f}s, "
                f"floor {samples['floor'][-1]:.3f}s")
        for name, values in samples.items():
            out[name] = s_stats(values)
        out["ratio_median"] = round(out["additional"]["median_s"] / out["floor"]["median_s"], 2)
        out["ratio_min"] = round(out["additional"]["min_s"] / out["floor"]["min_s"], 2)
        out["target_ratio"] = ADDITIONAL_TARGET_RATIO
        out["meets_target"] = out["ratio_median"] <= ADDITIONAL_TARGET_RATIO

        async with Client(mem, cache=None) as second, Client(mem, cache=None) as third, \
                Client(floor, cache=None) as fc:
            for client in (second, third):
                await client.list_tools()
                result = await client.call_tool("memory_search", {"query": query})
                assert not result.is_error, result
            await fc.list_tools()
            await fc.call_tool("ping", {})
            fronts = _rss_of(serve_args)  # the first client and the two more, oldest first
            out["rss_mb"] = {"fronts": fronts, "warm_process": rss_mb(pids[0]),
                             "floor": (_rss_of([floor.args[-1]]) or [None])[0]}
    known = [v for v in out["rss_mb"]["fronts"] if v is not None]
    out["rss_mb"]["front_max"] = max(known) if known else None
    out["rss_target_mb"] = FRONT_TARGET_RSS_MB
    out["meets_rss_target"] = bool(known) and len(known) == 3 and max(known) <= FRONT_TARGET_RSS_MB
    out["warm_processes_stopped_after"] = stop_warm(workspace).pids

    started = time.perf_counter()
    async with Client(memory_params(workspace, warm=False), cache=None) as alone:
        await alone.list_tools()
        await wait_ready(alone, started)
        result = await alone.call_tool("memory_search", {"query": query})
        assert not result.is_error, result
        out["rss_mb"]["in_process_server"] = (_rss_of(serve_args) or [None])[0]
    return out


# ----- 2. warm round trips ------------------------------------------------------------------------
def open_inprocess(workspace: Path, warmups: list[str]) -> tuple[Any, float]:
    """A warm ``Memory`` in this process (no sync: the index is up to date and must not move)."""
    from mcp_memory.config import load_settings
    from mcp_memory.memory import Memory

    started = time.perf_counter()
    memory = Memory(load_settings(workspace, environ={})).open()
    for q in warmups:
        memory.search(q)
    return memory, time.perf_counter() - started


async def measure_warm(mem: StdioServerParameters, floor: StdioServerParameters, warmups: list[str],
                       queries: list[str], memory: Any, blocks: int) -> dict[str, Any]:
    """Stdio round trips (search and floor ping interleaved) and in-process searches.

    ``blocks`` > 0: the queries are split into that many parts; each part runs over stdio
    (search and ping alternating) and then in process, or the other way round, the order
    alternating, so a change in the machine's load hits both alike. ``blocks`` = 0: every
    query runs all three ways in a row (rotating order). Blocks keep each process's rhythm
    as a client sees it; query by query, the BLAS threads that numpy leaves spinning after a
    query embedding in one process compete with the next step in the other.
    """
    steps: list[tuple[str, str]] = []  # ("search" | "floor" | "inprocess" | "settle", query)
    if blocks > 0:
        size = -(-len(queries) // blocks)
        parts = [queries[i : i + size] for i in range(0, len(queries), size)]
        for b, part in enumerate(parts):
            stdio = [(kind, q) for i, q in enumerate(part)
                     for kind in (("search", "floor") if i % 2 == 0 else ("floor", "search"))]
            inproc = [("inprocess", q) for q in part]
            for phase in ((stdio, inproc) if b % 2 == 0 else (inproc, stdio)):
                steps += [("settle", ""), *phase]
            steps.append(("log", f"block {b + 1}/{len(parts)}: {len(part)} queries"))
    else:
        rotations = [("search", "floor", "inprocess"), ("floor", "inprocess", "search"),
                     ("inprocess", "search", "floor")]
        steps = [(kind, q) for i, q in enumerate(queries) for kind in rotations[i % 3]]
    started = time.perf_counter()
    async with Client(mem, cache=None) as mc, Client(floor, cache=None) as fc:
        ready_s, calls, status = await wait_ready(mc, started)
        log(f"  engine ready {ready_s:.1f}s after spawn ({calls} memory_status call(s)); "
            f"{status.get('chunks')} chunks, embedded {status.get('embedded_share')}")
        for q in warmups:
            result = await mc.call_tool("memory_search", {"query": q})
            assert not result.is_error, result
            assert (await fc.call_tool("ping", {})).structured_content == {"result": "pong"}
        search_s: list[float] = []
        floor_s: list[float] = []
        inproc_s: list[float] = []
        hits: list[int] = []
        sizes: list[int] = []
        for kind, q in steps:
            if kind == "settle":
                await anyio.sleep(SETTLE_S)
            elif kind == "log":
                log(f"  {q}; so far stdio search p50 {ms_stats(search_s)['p50_ms']} ms, "
                    f"in process p50 {ms_stats(inproc_s)['p50_ms']} ms")
            elif kind == "inprocess":
                t0 = time.perf_counter()
                memory.search(q)
                inproc_s.append(time.perf_counter() - t0)
            elif kind == "search":
                t0 = time.perf_counter()
                result = await mc.call_tool("memory_search", {"query": q})
                search_s.append(time.perf_counter() - t0)
                if result.is_error:
                    raise SystemExit(f"memory_search failed for {q!r}: {result.content}")
                hits.append(len((result.structured_content or {}).get("results", [])))
                sizes.append(sum(len(c.text) for c in result.content if hasattr(c, "text")))
            else:
                t0 = time.perf_counter()
                result = await fc.call_tool("ping", {})
                floor_s.append(time.perf_counter() - t0)
                assert not result.is_error, result
    search, floor_stats, inproc = ms_stats(search_s), ms_stats(floor_s), ms_stats(inproc_s)
    return {
        "ready_s": round(ready_s, 2), "memory_status_calls": calls,
        "status": {k: status.get(k) for k in ("files", "indexed_files", "chunks", "embedder", "embedded_share",
                                             "degraded")},
        "warmup": len(warmups), "blocks": blocks, "search": search, "floor_ping": floor_stats,
        "inprocess_search": inproc,
        "mean_hits": round(statistics.fmean(hits), 2), "mean_response_chars": round(statistics.fmean(sizes)),
        "p50_over_floor": round(search["p50_ms"] / floor_stats["p50_ms"], 2),
        "target_floor_ratio": SEARCH_TARGET_FLOOR_RATIO,
        "meets_floor_ratio": search["p50_ms"] <= SEARCH_TARGET_FLOOR_RATIO * floor_stats["p50_ms"],
        "overhead": {  # stdio round trip minus the same search in process
            "p50_ms": round(search["p50_ms"] - inproc["p50_ms"], 2),
            "mean_ms": round(search["mean_ms"] - inproc["mean_ms"], 2),
            "p50_beyond_floor_ms": round(search["p50_ms"] - inproc["p50_ms"] - floor_stats["p50_ms"], 2),
        },
        "target_p50_ms": SEARCH_TARGET_P50_MS, "target_p95_ms": SEARCH_TARGET_P95_MS,
        "meets_p50": search["p50_ms"] <= SEARCH_TARGET_P50_MS, "meets_p95": search["p95_ms"] <= SEARCH_TARGET_P95_MS,
    }


# ----- 2b. sequential stores ---------------------------------------------------------------------
def store_texts(data: list[dict], count: int) -> list[str]:
    """``count`` distinct statements, none a near-duplicate of another: six words drawn at random
    (seeded) from the LoCoMo questions' vocabulary, in one template."""
    words = sorted({w for q in load_questions(data) for w in re.findall(r"[a-z]{5,}", q.lower())})
    rng = random.Random(42)
    texts = []
    for _ in range(count):
        w = rng.sample(words, 6)
        texts.append(f"The {w[0]} team decided that {w[1]} {w[2]} should replace {w[3]} for the {w[4]} {w[5]} work")
    return texts


async def measure_store(workspace: Path, floor: StdioServerParameters, texts: list[str]) -> dict[str, Any]:
    """``memory_store`` round trips one after the other over stdio, each followed by a floor ``ping``,
    on a copy of the workspace (its index included, so nothing is re-embedded) that is deleted
    afterwards: the benchmark's workspace keeps its files. The first ``STORE_WARMUP`` are not
    timed (the first store loads the batch model and opens the write path)."""
    root = Path(tempfile.mkdtemp(prefix="mcp-memory-server-bench-store-"))
    copy = root / "workspace"
    try:
        shutil.copytree(workspace, copy, ignore=shutil.ignore_patterns("bridges", "episodes"))
        store_s: list[float] = []
        floor_s: list[float] = []
        stored = 0
        started = time.perf_counter()
        async with Client(memory_params(copy), cache=None) as mc, Client(floor, cache=None) as fc:
            ready_s, _, _ = await wait_ready(mc, started)
            for i, text in enumerate(texts):
                t0 = time.perf_counter()
                result = await mc.call_tool("memory_store", {"text": text})
                elapsed = time.perf_counter() - t0
                if result.is_error:
                    raise SystemExit(f"memory_store failed for {text!r}: {result.content}")
                t0 = time.perf_counter()
                assert not (await fc.call_tool("ping", {})).is_error
                if i >= STORE_WARMUP:
                    store_s.append(elapsed)
                    floor_s.append(time.perf_counter() - t0)
                    stored += bool((result.structured_content or {}).get("stored"))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    store, floor_stats = ms_stats(store_s), ms_stats(floor_s)
    return {"ready_s": round(ready_s, 2), "warmup": STORE_WARMUP, "stores": store, "stored": stored,
            "floor_ping": floor_stats, "target_p50_ms": STORE_TARGET_P50_MS,
            "meets_p50": store["p50_ms"] <= STORE_TARGET_P50_MS}


# ----- 3. in process: where a search's time goes ----------------------------------------------
def measure_breakdown(memory: Any, queries: list[str]) -> dict[str, Any]:
    """After the stdio phase: the same queries again in process, their query vectors now cached
    (the engine without the embedding model), and ``embed_query`` alone."""
    cached_s = []
    for q in queries:
        memory.search(q)  # the searcher's query-vector cache is an LRU of 256: make sure q is in it
        t0 = time.perf_counter()
        memory.search(q)
        cached_s.append(time.perf_counter() - t0)
    embed_s = []
    if memory.engine.embedder is not None:
        for q in queries:
            t0 = time.perf_counter()
            memory.engine.embedder.embed_query(q)
            embed_s.append(time.perf_counter() - t0)
    return {"search_query_vector_cached": ms_stats(cached_s), "embed_query": ms_stats(embed_s) if embed_s else None}


# ----- 4. optional: per-layer timers inside the servers (--layers) ----------------------------
async def measure_layers(tmp: Path, workspace: Path, floor_file: Path, warmups: list[str],
                         queries: list[str]) -> dict[str, Any]:
    launcher = tmp / "layers_launcher.py"
    launcher.write_text(LAYERS_LAUNCHER, encoding="utf-8")
    logs = {name: tmp / f"layers-{name}.jsonl" for name in ("memory", "floor")}
    params = {
        "memory": StdioServerParameters(command=sys.executable, env=server_env(warm=False),
                                        args=[str(launcher), "memory", str(workspace), str(logs["memory"])]),
        "floor": StdioServerParameters(command=sys.executable, env=server_env(),
                                       args=[str(launcher), "floor", str(floor_file), str(logs["floor"])]),
    }
    round_trips: dict[str, list[float]] = {"memory": [], "floor": []}
    started = time.perf_counter()
    async with Client(params["memory"], cache=None) as mc, Client(params["floor"], cache=None) as fc:
        await wait_ready(mc, started)
        for q in warmups:
            await mc.call_tool("memory_search", {"query": q})
            await fc.call_tool("ping", {})
        for path in logs.values():
            path.write_text("")  # the launchers append: drop what start-up and warm-up logged
        for i, q in enumerate(queries):
            for name in (("memory", "floor") if i % 2 == 0 else ("floor", "memory")):
                t0 = time.perf_counter()
                if name == "memory":
                    result = await mc.call_tool("memory_search", {"query": q})
                else:
                    result = await fc.call_tool("ping", {})
                round_trips[name].append(time.perf_counter() - t0)
                assert not result.is_error, result
    out: dict[str, Any] = {}
    for name, path in logs.items():
        layers: dict[str, list[float]] = {}
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            layers.setdefault(row["layer"], []).append(row["ms"] / 1000.0)
        trip = ms_stats(round_trips[name])
        handled = ms_stats(layers.get("handler", [0.0]))
        out[name] = {"round_trip": trip, "layers": {k: ms_stats(v) for k, v in sorted(layers.items())},
                     "outside_handler_p50_ms": round(trip["p50_ms"] - handled["p50_ms"], 2)}
        if all(k in layers for k in ("search", "rank", "settle")):
            means = {k: statistics.fmean(layers[k]) * 1000 for k in ("search", "rank", "settle")}
            out[name]["hits_mean_ms"] = round(means["search"] - means["rank"] - means["settle"], 2)
    return out


# ----- summary ------------------------------------------------------------------------------------
def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def row(st: dict[str, float]) -> str:
    return f"p50 {st['p50_ms']:7.2f}  p95 {st['p95_ms']:7.2f}  mean {st['mean_ms']:7.2f} ms"


def summary(results: dict[str, Any]) -> str:
    m = results["machine"]
    out = [f"server benchmark {results['date']}  {m['platform']}  {m['cpu']}  {m['cpu_count']} CPUs  "
           f"python {m['python']}  mcp {m['mcp']}  load {results['loadavg_start']} -> {results['loadavg_end']}"]
    w = results["workspace"]
    out.append(f"workspace {w['path']}: mcp-memory index {w['index_s']}s "
               f"({'no-op, already indexed' if w['index_was_noop'] else 'indexed now'}): {w['index_summary']}")
    if w["config_file"]:
        out.append(f"    NOTE: {w['config_file']} exists, so this is not the default configuration")
    out.append(f"    server: {' '.join(results['commands']['memory'])} ({WARM_OFF[0]}={WARM_OFF[1]}: in-process, "
               f"for the cold start, the empty workspace, round trips and layers)")
    out.append(f"    floor:  {' '.join(results['commands']['floor'])} (one tool, ping -> 'pong')")
    if "cold" in results:
        c = results["cold"]
        mem, flo = c["memory"], c["floor"]
        out.append(f"[cold start] spawn -> tools/list answered, {c['runs']} runs each, alternating "
                   f"(load {c['loadavg_before']} -> {c['loadavg_after']})")
        out.append(f"    mcp-memory serve  median {mem['list_tools']['median_s'] * 1000:7.1f} ms  "
                   f"min {mem['list_tools']['min_s'] * 1000:7.1f} ms  (handshake median "
                   f"{mem['handshake']['median_s'] * 1000:.1f} ms, {mem['tools']} tools, {mem['protocol']})")
        out.append(f"    floor             median {flo['list_tools']['median_s'] * 1000:7.1f} ms  "
                   f"min {flo['list_tools']['min_s'] * 1000:7.1f} ms  (handshake median "
                   f"{flo['handshake']['median_s'] * 1000:.1f} ms, {flo['tools']} tool)")
        out.append(f"    ratio {c['ratio_median']}x median, {c['ratio_min']}x min (+{c['extra_median_ms']} ms); "
                   f"target <= {c['target_ratio']}x: {verdict(c['meets_target'])}")
        out.append(f"    runs (s): memory {mem['list_tools']['runs_s']}  floor {flo['list_tools']['runs_s']}")
        out.append(f"    client exit (stdin closed -> process gone) median: "
                   f"memory {mem['close']['median_s'] * 1000:.0f} ms, "
                   f"floor {flo['close']['median_s'] * 1000:.0f} ms")
        e = results["cold_empty"]
        out.append(f"    empty fresh workspace, 1 run: tools/list {e['list_tools_s'] * 1000:.1f} ms "
                   f"({e['ratio_to_floor_median']}x the floor median); memory_status answered "
                   f"{e['memory_status_ok_s']:.2f}s after spawn")
    if "additional" in results:
        a = results["additional"]
        rss = a["rss_mb"]
        out.append(f"[additional clients] mcp-memory serve as a thin front to the warm process (warm enabled, "
                   f"the default), one client kept open (load {a['loadavg_before']} -> {a['loadavg_after']})")
        out.append(f"    first client (starts the warm process): tools/list "
                   f"{a['first_client_list_tools_s'] * 1000:.0f} ms after spawn, "
                   f"memory_status ok after {a['first_client_ready_s']:.2f}s")
        out.append(f"    further client  median {a['additional']['median_s'] * 1000:7.1f} ms  "
                   f"min {a['additional']['min_s'] * 1000:7.1f} ms")
        out.append(f"    floor           median {a['floor']['median_s'] * 1000:7.1f} ms  "
                   f"min {a['floor']['min_s'] * 1000:7.1f} ms")
        out.append(f"    ratio {a['ratio_median']}x median, {a['ratio_min']}x min; target <= {a['target_ratio']}x: "
                   f"{verdict(a['meets_target'])}")
        out.append(f"    RSS after tools/list + memory_search: fronts {rss['fronts']} MB "
                   f"(target <= {a['rss_target_mb']:g}: {verdict(a['meets_rss_target'])}); "
                   f"warm process {rss['warm_process']} MB; floor {rss['floor']} MB; "
                   f"in-process server (warm disabled) {rss.get('in_process_server')} MB")
    if "warm" in results:
        r = results["warm"]
        s, f = r["search"], r["floor_ping"]
        st = r["status"]
        out.append(f"[warm round trip] {s['n']} distinct LoCoMo questions after {r['warmup']} warm-up, one client "
                   f"per server, interleaved (load {r['loadavg_before']} -> {r['loadavg_after']})")
        out.append(f"    engine ready {r['ready_s']}s after spawn; {st['chunks']} chunks in {st['files']} files, "
                   f"embedder {st['embedder']}, embedded {st['embedded_share']}")
        out.append(f"    memory_search (stdio)  {row(s)}"
                   f"  targets p50 <= {r['target_p50_ms']:g}: {verdict(r['meets_p50'])}, "
                   f"p95 <= {r['target_p95_ms']:g}: {verdict(r['meets_p95'])}")
        out.append(f"    floor ping (stdio)     {row(f)}"
                   f"  (search p50 = {r['p50_over_floor']}x floor; target <= {r['target_floor_ratio']:g}x: "
                   f"{verdict(r['meets_floor_ratio'])})")
        out.append(f"    {r['mean_hits']} hits and {r['mean_response_chars']} characters of text per search result")
        p = r["inprocess_search"]
        how = (f"in {r['blocks']} blocks alternating with the stdio ones" if r["blocks"]
               else "interleaved query by query with the stdio ones")
        out.append(f"    Memory.search (in process, same queries, {how})")
        out.append(f"                           {row(p)}")
        d = r["overhead"]
        out.append(f"    protocol overhead (stdio - in process): p50 {d['p50_ms']} ms, mean {d['mean_ms']} ms; "
                   f"floor ping p50 {f['p50_ms']} ms, so beyond the floor: p50 {d['p50_beyond_floor_ms']} ms")
        if d["p50_ms"] < 0:
            out.append("    (negative: the machine's load moved the two figures more than the overhead itself; "
                       "--layers measures it inside the server)")
    if "store" in results:
        r = results["store"]
        out.append(f"[store] {r['stores']['n']} memory_store calls one after the other over stdio after {r['warmup']} "
                   f"untimed, on a copy of the workspace, each followed by a floor ping (load "
                   f"{r['loadavg_before']} -> {r['loadavg_after']})")
        out.append(f"    memory_store (stdio)   {row(r['stores'])}  target p50 <= {r['target_p50_ms']:g}: "
                   f"{verdict(r['meets_p50'])}; {r['stored']} stored, the rest near-duplicates")
        out.append(f"    floor ping (stdio)     {row(r['floor_ping'])}")
    if "breakdown" in results:
        k = results["breakdown"]
        c = k["search_query_vector_cached"]
        out.append(f"[in process, servers closed] where a search's time goes (load {k['loadavg_before']} -> "
                   f"{k['loadavg_after']})")
        out.append(f"    search, query vector cached  p50 {c['p50_ms']:7.2f}  p95 {c['p95_ms']:7.2f}  "
                   f"mean {c['mean_ms']:7.2f} ms (keywords + vectors + fusion + MMR + snippets)")
        if k["embed_query"]:
            e = k["embed_query"]
            out.append(f"    embed_query alone            p50 {e['p50_ms']:7.2f}  p95 {e['p95_ms']:7.2f}  "
                       f"mean {e['mean_ms']:7.2f} ms")
    if "layers" in results:
        lay = results["layers"]
        out.append(f"[layers] instrumented servers, the same queries again (load {lay['loadavg_before']} -> "
                   f"{lay['loadavg_after']}); p50 / mean in ms, indented layers are parts of the one above")
        for name in ("memory", "floor"):
            r = lay[name]
            t = r["round_trip"]
            out.append(f"    {name}: client round trip p50 {t['p50_ms']:.2f} / {t['mean_ms']:.2f}; "
                       f"outside the server's "
                       f"request handler (client, pipes, stdin/stdout thread hops) p50 {r['outside_handler_p50_ms']}")
            for key, indent, label in LAYERS:
                if key in r["layers"]:
                    st = r["layers"][key]
                    out.append(f"        {st['p50_ms']:7.2f} / {st['mean_ms']:7.2f}  {'  ' * indent}{label}")
            if "hits_mean_ms" in r:
                out.append(f"           - / {r['hits_mean_ms']:7.2f}          engine: the rest of Memory.search "
                           f"(hits: cited lines, snippets, memory ids), mean of search - rank - settle")
    out.append(f"total {results['total_s']}s")
    return "\n".join(out)


# ----- main ---------------------------------------------------------------------------------------
async def run_protocol(args: argparse.Namespace, results: dict[str, Any], floor_file: Path,
                       warmups: list[str], queries: list[str]) -> None:
    mem, floor = memory_params(args.workspace), floor_params(floor_file)
    if args.runs > 0:
        log(f"cold start: {args.runs} runs each")
        before = loadavg()
        results["cold"] = await measure_cold(mem, floor, args.runs)
        results["cold"]["loadavg_before"], results["cold"]["loadavg_after"] = before, loadavg()
        log("cold start on an empty fresh workspace")
        results["cold_empty"] = await measure_empty(results["cold"])
        log(f"additional clients of the warm process: {args.runs} cold starts each, then memory per process")
        before = loadavg()
        query = warmups[0] if warmups else "What did Caroline research?"
        results["additional"] = await measure_additional(args.workspace, floor, args.runs, query)
        results["additional"]["loadavg_before"], results["additional"]["loadavg_after"] = before, loadavg()
    if args.stores > 0:
        log(f"stores: {STORE_WARMUP} untimed, then {args.stores} one after the other, on a copy of the workspace")
        before = loadavg()
        results["store"] = await measure_store(args.workspace, floor, store_texts(args.data_rows,
                                                                                   STORE_WARMUP + args.stores))
        results["store"]["loadavg_before"], results["store"]["loadavg_after"] = before, loadavg()
    if queries:
        log("in process: opening Memory and warming it up")
        memory, open_s = open_inprocess(args.workspace, warmups)
        try:
            log(f"warm round trips: {len(warmups)} warm-up, {len(queries)} measured, "
                f"{f'in {args.blocks} blocks' if args.blocks else 'query by query'}")
            before = loadavg()
            results["warm"] = await measure_warm(mem, floor, warmups, queries, memory, args.blocks)
            results["warm"]["loadavg_before"], results["warm"]["loadavg_after"] = before, loadavg()
            results["warm"]["inprocess_open_and_warmup_s"] = round(open_s, 2)
            if args.layers:
                log("layers: instrumented servers, the same queries again")
                before = loadavg()
                with tempfile.TemporaryDirectory(prefix="mcp-memory-server-bench-layers-") as tmp:
                    results["layers"] = await measure_layers(Path(tmp), args.workspace, floor_file,
                                                             warmups, queries)
                results["layers"]["loadavg_before"], results["layers"]["loadavg_after"] = before, loadavg()
            log("in process, servers closed: searches with the query vector cached, embed_query alone")
            before = loadavg()
            results["breakdown"] = measure_breakdown(memory, queries)
            results["breakdown"]["loadavg_before"], results["breakdown"]["loadavg_after"] = before, loadavg()
        finally:
            memory.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workspace", type=Path, default=DEFAULT_WORKSPACE,
                        help=f"LoCoMo workspace, written and indexed if needed (default {DEFAULT_WORKSPACE})")
    parser.add_argument("--runs", type=int, default=7, help="cold starts of each server (default 7; 0 skips)")
    parser.add_argument("--queries", type=int, default=300, help="measured searches (default 300; 0 skips)")
    parser.add_argument("--stores", type=int, default=30,
                        help="timed memory_store calls, one after the other, on a copy of the workspace "
                             "(default 30; 0 skips)")
    parser.add_argument("--blocks", type=int, default=3,
                        help="stdio and in-process searches alternate in this many blocks (default 3); "
                             "0: query by query")
    parser.add_argument("--layers", action="store_true",
                        help="also time each layer inside the servers (SDK and engine functions wrapped with "
                             "timers in the child processes), over the same queries")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--json", type=Path, default=None, help="also write all figures to this file")
    args = parser.parse_args()
    args.workspace = args.workspace.expanduser().absolute()
    args.blocks = max(0, args.blocks)

    run_started = time.perf_counter()
    results: dict[str, Any] = {"date": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
                               "machine": machine(mcp=version("mcp")), "loadavg_start": loadavg()}
    data = json.loads(args.data.read_text(encoding="utf-8"))
    args.data_rows = data
    questions = load_questions(data)
    picked = random.Random(42).sample(questions, WARMUP_QUERIES + args.queries) if args.queries else []
    warmups, queries = picked[:WARMUP_QUERIES], picked[WARMUP_QUERIES:]
    log(f"{len(questions)} distinct LoCoMo questions; {len(queries)} measured, {len(warmups)} warm-up")
    results["queries_sample"] = [*queries[:5], "..."]

    results["workspace"] = prepare_workspace(args.workspace, data)
    results["commands"] = {"memory": [*memory_command(), "serve", "--workspace", str(args.workspace)],
                           "floor": [sys.executable, "bench/floor_server.py"]}
    anyio.run(run_protocol, args, results, FLOOR_SERVER, warmups, queries)
    results["loadavg_end"] = loadavg()
    results["total_s"] = round(time.perf_counter() - run_started, 1)

    emit(results, summary(results), args.json)


if __name__ == "__main__":
    main()
