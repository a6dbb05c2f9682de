"""Cold start of ``mcp-memory serve`` over stdio: how soon a client has the tools, with no warm process.

A hand-run benchmark, not a test. Each run spawns the server as an MCP client does (the SDK's
stdio ``Client``) and times, from just before the spawn, until ``initialize`` is answered and
until ``tools/list`` is answered. No warm process of the workspace runs before a run (the one
the run started is stopped, and gone, before the next), so the stdio front answers from its
listing while the warm process starts beside it, competing for the same two cores.

The floor is a bare ``MCPServer`` with one trivial tool, written to a temporary ``.py`` file and
spawned the same way with the same Python; the runs alternate which goes first. Reported per
protocol mode of the client (``legacy``: the ``initialize`` handshake that Claude Code, Codex
and the Inspector use; ``auto``: the SDK's default, ``server/discover`` first): median and min
of each, and the ratio of the medians (target <= 1.2x). For context, the same run also times
the first ``tools/call`` (``memory_status``) after the tools were listed: it waits for the warm
process, the cost a client pays only when it calls a tool at once.

    python bench/cold_start.py                    # 7 runs per mode
    python bench/cold_start.py --runs 5 --modes legacy --json cold.json
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
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

from machine import emit, loadavg, machine
from warmproc import stop_warm, warm_pids

TARGET_RATIO = 1.2
SETTLE_S = 0.3  # pause between runs, so a dying process does not overlap the next one
WARM_UP_TIMEOUT_S = 120.0

FLOOR_SERVER = Path(__file__).with_name("floor_server.py")  # the bare MCPServer of the same SDK


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def clean_env() -> dict[str, str]:
    """This environment without MCP_MEMORY_* settings: the default configuration."""
    return {k: v for k, v in os.environ.items() if not k.startswith("MCP_MEMORY_")}


def memory_params(workspace: Path) -> StdioServerParameters:
    script = Path(sys.executable).with_name("mcp-memory")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "mcp_memory"]
    return StdioServerParameters(command=command[0], args=[*command[1:], "serve", "--workspace", str(workspace)],
                                 env=clean_env())


def floor_params(floor_file: Path) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=[str(floor_file)], env=clean_env())


def write_workspace(root: Path) -> Path:
    workspace = root / "workspace"
    (workspace / "memory").mkdir(parents=True)
    (workspace / "MEMORY.md").write_text("# Memory\n\n- The user prefers pnpm over npm and yarn.\n", encoding="utf-8")
    (workspace / "memory" / "2026-11-20.md").write_text("# 2026-11-20\n\n- Deployed zebracorn to staging.\n",
                                                        encoding="utf-8")
    return workspace


async def one_start(params: StdioServerParameters, mode: str, call: bool) -> dict[str, Any]:
    """Seconds from the spawn to ``initialize`` answered and to ``tools/list`` answered (and, with
    ``call``, to the first ``memory_status`` answered)."""
    started = time.perf_counter()
    async with Client(params, mode=mode, cache=None) as client:
        opened = time.perf_counter()
        tools = await client.list_tools()
        listed = time.perf_counter()
        protocol = client.protocol_version
        called = None
        if call:
            with anyio.fail_after(WARM_UP_TIMEOUT_S):
                result = await client.call_tool("memory_status", {})
            if result.is_error:
                raise SystemExit(f"memory_status failed: {result.content}")
            called = time.perf_counter() - started
    return {"initialize_s": opened - started, "tools_list_s": listed - started, "first_call_s": called,
            "tools": len(tools.tools), "protocol": protocol}


def stats(values: list[float]) -> dict[str, Any]:
    return {"runs_s": [round(v, 3) for v in values], "median_s": round(statistics.median(values), 3),
            "min_s": round(min(values), 3)}


async def measure_mode(workspace: Path, floor_file: Path, mode: str, runs: int) -> dict[str, Any]:
    rows: dict[str, list[dict[str, Any]]] = {"memory": [], "floor": []}
    for run in range(runs):
        order = ["memory", "floor"] if run % 2 == 0 else ["floor", "memory"]
        for name in order:
            if name == "memory":
                if warm_pids(workspace):
                    raise SystemExit("a warm process is running before a cold run")
                rows[name].append(await one_start(memory_params(workspace), mode, call=True))
                stop_warm(workspace)  # the next run starts cold, and the floor runs without it
            else:
                rows[name].append(await one_start(floor_params(floor_file), mode, call=False))
            await anyio.sleep(SETTLE_S)
        log(f"  {mode} run {run + 1}/{runs} ({order[0]} first): memory tools/list "
            f"{rows['memory'][-1]['tools_list_s']:.3f}s (first call {rows['memory'][-1]['first_call_s']:.2f}s), "
            f"floor {rows['floor'][-1]['tools_list_s']:.3f}s")
    out: dict[str, Any] = {"runs": runs, "order": "alternating, memory first on odd runs"}
    for name, samples in rows.items():
        out[name] = {"initialize": stats([r["initialize_s"] for r in samples]),
                     "tools_list": stats([r["tools_list_s"] for r in samples]),
                     "tools": samples[0]["tools"], "protocol": samples[0]["protocol"]}
    out["memory"]["first_call"] = stats([r["first_call_s"] for r in rows["memory"]])
    out["ratio_median"] = round(out["memory"]["tools_list"]["median_s"] / out["floor"]["tools_list"]["median_s"], 2)
    out["ratio_min"] = round(out["memory"]["tools_list"]["min_s"] / out["floor"]["tools_list"]["min_s"], 2)
    out["target_ratio"] = TARGET_RATIO
    out["meets_target"] = out["ratio_median"] <= TARGET_RATIO
    return out


def summary(results: dict[str, Any]) -> str:
    lines = [f"cold start over stdio, no warm process running ({results['machine']['cpu_count']} cores, "
             f"load before {results['load_before']}, after {results['load_after']})"]
    for mode, out in results["modes"].items():
        memory, floor = out["memory"], out["floor"]
        lines.append(
            f"  {mode:6s} ({memory['protocol']}): tools/list median {memory['tools_list']['median_s']:.3f}s "
            f"(min {memory['tools_list']['min_s']:.3f}s) vs floor {floor['tools_list']['median_s']:.3f}s "
            f"(min {floor['tools_list']['min_s']:.3f}s): ratio {out['ratio_median']:.2f}x "
            f"[target <= {TARGET_RATIO}x: {'ok' if out['meets_target'] else 'MISSED'}]; "
            f"initialize {memory['initialize']['median_s']:.3f}s; first tools/call "
            f"{memory['first_call']['median_s']:.2f}s (waits for the warm process)")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7, help="cold starts of each server per mode (default 7)")
    parser.add_argument("--modes", nargs="+", default=["legacy", "auto"], choices=["legacy", "auto"])
    parser.add_argument("--json", type=Path, default=None, help="also write all figures to this file")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="mcp-memory-cold-"))
    try:
        workspace = write_workspace(tmp)
        floor_file = FLOOR_SERVER
        results: dict[str, Any] = {"machine": machine(mcp=version("mcp")), "load_before": loadavg(), "modes": {}}
        for mode in args.modes:
            log(f"{mode}: {args.runs} runs each")
            results["modes"][mode] = anyio.run(measure_mode, workspace, floor_file, mode, args.runs)
        results["load_after"] = loadavg()
        emit(results, summary(results), args.json)
    finally:
        stop_warm(tmp / "workspace")
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
