"""What the Claude Code prompt hook adds to each prompt, cold and with a server running.

Budget: at most 1 s cold (no server for the workspace: the hook answers alone from the
keyword index) and at most 150 ms when ``mcp-memory serve`` runs on the workspace (the hook
asks it over the loopback bridge). Each figure is the wall time of a whole hook process, as
Claude Code would spawn it, with the Claude Code hook JSON on stdin; the floor in the same
run is a bare ``python -c pass``.

The workspace: ``--notes`` daily files of invented but varied notes (default 300, about
1,500 chunks), indexed with the default embedder before timing.

    python bench/hooks.py [--notes 300] [--runs 15]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.machine import emit, loadavg, machine

TOPICS = ["deploy", "database", "billing", "frontend", "hiring", "travel", "garden", "budget", "kids", "health"]
PROMPTS = ["which package manager do we use for the web app?", "help me set up a new Node.js project",
           "what did we decide about the billing provider?", "add a user registration endpoint",
           "明天的旅行需要准备什么?", "remind me what the staging database is called"]


def make_workspace(root: Path, notes: int) -> None:
    rng = random.Random(7)
    (root / "memory").mkdir(parents=True)
    (root / "MEMORY.md").write_text("# Memory\n\n- [preference] The user prefers pnpm over npm and yarn.\n"
                                    "- [fact] All API endpoints use the /api/v2 prefix.\n", encoding="utf-8")
    day = dt.date(2025, 1, 1)
    for i in range(notes):
        lines = [f"# {day.isoformat()}", ""]
        for _ in range(rng.randint(8, 20)):
            topic = rng.choice(TOPICS)
            lines.append(f"- [{topic}] note {i}-{rng.randint(0, 9999)} about {topic}: "
                         + " ".join(rng.choice([*TOPICS, "review", "plan", "fix", "call", "order"]) for _ in range(12)))
        (root / "memory" / f"{day.isoformat()}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
        day += dt.timedelta(days=1)


def time_process(argv: list[str], stdin: str, env: dict[str, str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(argv, input=stdin, capture_output=True, text=True, env=env, timeout=120)
    return (time.perf_counter() - started) * 1000, done.stdout


def hook_runs(workspace: Path, runs: int, env: dict[str, str]) -> tuple[list[float], int]:
    times, answered = [], 0
    for i in range(runs):
        payload = json.dumps({"session_id": f"bench-{i}", "hook_event_name": "UserPromptSubmit",
                              "prompt": PROMPTS[i % len(PROMPTS)], "cwd": str(workspace)})
        ms, out = time_process([sys.executable, "-m", "mcp_memory", "hook", "claude-code", "prompt",
                                "--workspace", str(workspace)], payload, env)
        times.append(ms)
        answered += bool(out.strip())
    return times, answered


def summary(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {"p50_ms": round(statistics.median(ordered), 1),
            "p95_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))], 1),
            "max_ms": round(ordered[-1], 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--notes", type=int, default=300)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_MEMORY_")}
    results: dict = {"date": dt.date.today().isoformat(), "load_before": loadavg(), "machine": machine(),
                     "notes": args.notes, "runs": args.runs}
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "ws"
        make_workspace(workspace, args.notes)
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "mcp_memory", "index", "-q", "--workspace", str(workspace)],
                       check=True, env=env, capture_output=True)
        results["index_seconds"] = round(time.perf_counter() - started, 1)

        floor = [time_process([sys.executable, "-c", "pass"], "", env)[0] for _ in range(args.runs)]
        results["python_floor"] = summary(floor)
        cold, cold_answered = hook_runs(workspace, args.runs, env)
        results["cold"] = {**summary(cold), "answered": cold_answered}

        # A stdio server, as a client would spawn it; its open stdin keeps it alive.
        server = subprocess.Popen([sys.executable, "-m", "mcp_memory", "serve", "--workspace", str(workspace)],
                                  env=env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            bridges = workspace / ".mcp-memory" / "bridges"
            deadline = time.time() + 60
            while time.time() < deadline and not list(bridges.glob("*.json")):
                time.sleep(0.1)
            time.sleep(3)  # let the server finish opening and warming its model
            hook_runs(workspace, 2, env)  # first requests load the snapshot
            warm, warm_answered = hook_runs(workspace, args.runs, env)
            results["with_server"] = {**summary(warm), "answered": warm_answered}
        finally:
            assert server.stdin is not None
            server.stdin.close()
            server.terminate()
            server.wait(timeout=30)
    results["load_after"] = loadavg()
    text = (f"python floor p50 {results['python_floor']['p50_ms']} ms\n"
            f"cold hook   p50 {results['cold']['p50_ms']} ms, p95 {results['cold']['p95_ms']} ms "
            f"({results['cold']['answered']}/{args.runs} with context)\n"
            f"with server p50 {results['with_server']['p50_ms']} ms, p95 {results['with_server']['p95_ms']} ms "
            f"({results['with_server']['answered']}/{args.runs} with context)")
    emit(results, text, args.json)


if __name__ == "__main__":
    main()
