"""Dashboard server time per page at N chunks (the budget: 200 ms per page at 10k chunks).

A workspace of generated notes (daily files and topic files of bullets about projects,
tools and decisions) is indexed with the hash embedder of the tests (embedding is not the
subject: a page's cost is search, reading files, the logs and rendering), then given the
history the pages show: stores and captures in the write log, recalls with their prompts,
experience chains, learned utility and episodes. Each page is then requested in-process
through the real app (``/mcp`` plus the dashboard, as ``serve`` builds it; Starlette's test
client, so no network is timed), signed in with the full token and, for the pages that
filter, with a shared token. Per page: median, p95 and max over ``--runs`` requests after
two warm-up requests; search pages rotate through different queries.

    python bench/dashboard.py                    # 10k chunks
    python bench/dashboard.py --chunks 2000 --runs 10 --json dashboard.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # the hash embedder of the tests (conftest.py)
sys.path.insert(0, str(ROOT / "bench"))

from starlette.testclient import TestClient

from conftest import HashEmbedder
from machine import emit, loadavg, machine
from mcp_memory.config import load_settings
from mcp_memory.core.hits import MemoryLine
from mcp_memory.dashboard.app import dashboard_app
from mcp_memory.dashboard.auth import Tokens
from mcp_memory.experience.episodes import Episode, MemoryRef
from mcp_memory.memory import Memory
from mcp_memory.runtime.service import MemoryService
from mcp_memory.writes.write_log import SkippedText, WriteEvent

BUDGET_MS = 200.0
FULL, SHARED = "bench-full-token-0123456789", "bench-shared-token-0123456789"
PROJECTS = ["atlas", "borealis", "cobalt", "delta", "ember", "fjord", "granite", "harbor", "iris", "juniper"]
TOOLS = ["pnpm", "postgres", "redis", "kafka", "terraform", "docker", "nginx", "grafana", "pytest", "celery",
         "rust", "golang", "react", "vite", "sqlite", "lancedb", "tantivy", "airflow", "helm", "kubernetes"]
VERBS = ["moved", "upgraded", "replaced", "pinned", "benchmarked", "deprecated", "documented", "migrated"]
REASONS = ["after the outage", "to cut latency", "for the audit", "before the launch", "to save memory",
           "because the tests were flaky", "at the customer's request", "to simplify deploys"]
PEOPLE = ["Ana", "Bo", "Chen", "Dara", "Eli", "Farah", "Goran", "Hana", "Ivo", "Jun"]
QUERIES = ["why did we move kafka", "postgres upgrade for the audit", "who benchmarked redis", "terraform deploys",
           "flaky pytest", "grafana latency", "helm kubernetes launch", "sqlite memory", "react vite", "nginx outage"]


def _sentence(rng: random.Random) -> str:
    return (f"{rng.choice(PEOPLE)} {rng.choice(VERBS)} the {rng.choice(PROJECTS)} {rng.choice(TOOLS)} setup "
            f"{rng.choice(REASONS)}; the {rng.choice(TOOLS)} config now lives in {rng.choice(PROJECTS)}/"
            f"{rng.choice(TOOLS)}.toml and the {rng.choice(PROJECTS)} team reviews it every {rng.randint(2, 9)} weeks.")


def build_workspace(root: Path, chunks: int, rng: random.Random) -> None:
    """Daily files and topic files holding about ``chunks`` chunks of bullets (about 6 chunks a file)."""
    (root / "memory" / "topics").mkdir(parents=True, exist_ok=True)
    (root / "MEMORY.md").write_text("# Memory\n\n" + "\n".join(f"- [preference] {_sentence(rng)}" for _ in range(40))
                                    + "\n", encoding="utf-8")
    files = max(1, chunks // 6)
    day = dt.date(2024, 1, 1)
    for n in range(files):
        sections = []
        for s in range(6):
            bullets = "\n".join(f"- [{rng.choice(['fact', 'decision', 'preference'])}] {_sentence(rng)}"
                                for _ in range(9))
            sections.append(f"## {rng.choice(PROJECTS)} notes {s + 1}\n\n{bullets}\n")
        if n % 2 == 0:
            rel = f"memory/{(day + dt.timedelta(days=n // 2)).isoformat()}.md"
            title = rel[7:17]
        else:
            rel = f"memory/topics/t{n:05d}.md"
            title = f"topic {n}"
        (root / rel).write_text(f"# {title}\n\n" + "\n".join(sections), encoding="utf-8")


def populate_history(memory: Memory, rng: random.Random, events: int, chains: int, episodes: int) -> None:
    """The write and recall logs, experience chains, utility and episodes that the pages show."""
    daily = [f.path for f in memory.reader.list_files() if f.date][:200]
    now = time.time()
    for i in range(events):
        path = rng.choice(daily)
        written = [MemoryLine(path, rng.randint(3, 60), f"- [fact] {_sentence(rng)}") for _ in range(rng.randint(0, 3))]
        skipped = [SkippedText(_sentence(rng), rng.choice(["a question, not a statement", "too short",
                                                            f"already in memory at {path}#L7"]))
                   for _ in range(rng.randint(0, 2))]
        memory.write_log.record(WriteEvent(now - i * 600, rng.choice(["store", "capture"]), f"session-{i // 8}",
                                           "rules", f"captured {len(written)} memories", written, skipped))
    for i in range(events):
        hits = memory.search(rng.choice(QUERIES), max_results=4)
        memory.recall_log.record(f"{rng.choice(QUERIES)}? {_sentence(rng)}", f"session-{i // 8}", hits, True)
    for _ in range(chains):
        memory.experience.add(f"{rng.choice(TOOLS)} {rng.choice(['timeouts', 'crashes', 'slow builds', 'disk full'])}",
                              f"{rng.choice(VERBS)} {rng.choice(TOOLS)}",
                              f"{rng.choice(['fixed', 'no change', 'worse'])}",
                              rng.choice(["success", "failure", "partial", "unknown"]), [rng.choice(PROJECTS)])
    ids = [h.id for q in QUERIES for h in memory.search(q, max_results=10) if h.id]
    for memory_id in ids[:120]:
        (memory.utility.reward if rng.random() < 0.6 else memory.utility.penalize)(memory_id)
    for i in range(episodes):
        start = dt.datetime(2025, 1, 1) + dt.timedelta(hours=7 * i)
        memory.episodes.record(Episode(start=start, end=start + dt.timedelta(minutes=40), client="claude-code",
                                       session_key=f"episode-{i}", tools={"server": {"memory_search": 3}},
                                       recalled=[MemoryRef(f"{daily[i % len(daily)]}#L3-L5")]))


def time_pages(client: TestClient, pages: list[str], runs: int) -> dict[str, dict[str, float]]:
    """Milliseconds per request for each page (a "{q}" page takes the next query each time).

    Wall time, and the CPU time of this process (server and test client together): on a
    machine shared with other work, the wall time also counts the waits for a core.
    """
    results: dict[str, dict[str, float]] = {}
    for page in pages:
        times, cpu = [], []
        for run in range(runs + 2):
            url = page.format(q=QUERIES[run % len(QUERIES)].replace(" ", "+"))
            start, start_cpu = time.perf_counter(), time.process_time()
            response = client.get(url)
            elapsed, used = (time.perf_counter() - start) * 1000, (time.process_time() - start_cpu) * 1000
            if response.status_code != 200:
                raise RuntimeError(f"{url}: HTTP {response.status_code}: {response.text[:300]}")
            if run >= 2:
                times.append(elapsed)
                cpu.append(used)
        times.sort()
        results[page] = {"p50": round(statistics.median(times), 1),
                         "p95": round(times[min(len(times) - 1, int(len(times) * 0.95))], 1),
                         "max": round(times[-1], 1), "cpu_p50": round(statistics.median(cpu), 1)}
    return results


def time_calls(memory: Memory, runs: int) -> dict[str, float]:
    """Baselines from the same run: median milliseconds of the façade calls the pages are built on."""
    calls = {
        "Reader.list_files": lambda run: memory.reader.list_files(),
        "Memory.search": lambda run: memory.search(QUERIES[run % len(QUERIES)]),
        "Memory.precise_search": lambda run: memory.precise_search(QUERIES[run % len(QUERIES)]),
        "Memory.deep_search": lambda run: memory.deep_search(QUERIES[run % len(QUERIES)]),
        "Memory.status": lambda run: memory.status(),
        "Memory.doctor": lambda run: memory.doctor(),
    }
    out = {}
    for name, call in calls.items():
        times = []
        for run in range(runs + 2):
            start = time.perf_counter()
            call(run)
            if run >= 2:
                times.append((time.perf_counter() - start) * 1000)
        out[name] = round(statistics.median(times), 1)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--events", type=int, default=500, help="write-log and recall-log rows")
    parser.add_argument("--chains", type=int, default=60)
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--root", type=Path, default=None,
                        help="build the workspace here and reuse it on later runs (default: a temporary folder)")
    args = parser.parse_args()
    logging.getLogger("httpx2").setLevel(logging.WARNING)  # one INFO line per request otherwise
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        root = (args.root or Path(tmp)) / f"ws-{args.chunks}"
        marker = root / ".bench-built"
        started = time.perf_counter()
        if not marker.exists():
            build_workspace(root, args.chunks, rng)
        settings = load_settings(root, environ={})
        memory = Memory(settings, embedder=HashEmbedder())
        memory.index()
        if not marker.exists():
            populate_history(memory, rng, args.events, args.chains, args.episodes)
            marker.write_text("built\n")
        status = memory.status()
        built = time.perf_counter() - started
        service = MemoryService(settings, memory_factory=lambda _: memory, start_delay=0, watch=False)
        app = dashboard_app(service, Tokens([FULL], [], [SHARED]))
        biggest = max(memory.reader.list_files(), key=lambda f: f.size).path
        pages = ["/", "/search?q={q}", "/search?q={q}&mode=precise", "/search?q={q}&mode=deep", "/files",
                 f"/files/{biggest}", f"/files/{biggest}?view=source", "/timeline", "/recalls", "/experience",
                 "/status"]
        owner = TestClient(app, base_url="http://127.0.0.1:8765")
        owner.headers["Authorization"] = f"Bearer {FULL}"
        shared = TestClient(app, base_url="http://127.0.0.1:8765")
        shared.headers["Authorization"] = f"Bearer {SHARED}"
        baseline_before = time_calls(memory, args.runs)
        full_times = time_pages(owner, pages, args.runs)
        shared_times = time_pages(shared, ["/", "/search?q={q}", "/files", "/timeline", "/experience"], args.runs)
        baseline_after = time_calls(memory, args.runs)
        service.close()
    baseline = {name: min(baseline_before[name], baseline_after[name]) for name in baseline_before}
    worst = max(t["p50"] for t in [*full_times.values(), *shared_times.values()])
    worst_cpu = max(t["cpu_p50"] for t in [*full_times.values(), *shared_times.values()])
    results: dict[str, Any] = {
        "chunks": status.chunks, "files": status.files, "build_seconds": round(built, 1), "runs": args.runs,
        "budget_ms": BUDGET_MS, "full": full_times, "shared": shared_times, "baseline_ms": baseline,
        "worst_p50_ms": worst, "worst_cpu_p50_ms": worst_cpu,
        "within_budget": worst <= BUDGET_MS, "loadavg": loadavg(), "machine": machine(),
    }
    lines = [f"dashboard at {status.chunks} chunks in {status.files} files (built in {built:.0f} s), "
             f"ms per page over {args.runs} requests (wall p50 / p95 / max, CPU p50):"]
    for who, table in (("full", full_times), ("shared", shared_times)):
        for page, t in table.items():
            lines.append(f"  {who:6} {page:48} {t['p50']:7.1f} {t['p95']:7.1f} {t['max']:7.1f} {t['cpu_p50']:7.1f}")
    lines.append("baselines (the façade alone, median ms): "
                 + ", ".join(f"{name} {ms:.1f}" for name, ms in baseline.items()))
    lines.append(f"worst median {worst:.1f} ms wall, {worst_cpu:.1f} ms CPU: "
                 f"{'within' if worst <= BUDGET_MS else 'OVER'} the {BUDGET_MS:.0f} ms budget; load {loadavg()}")
    emit(results, "\n".join(lines), args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
