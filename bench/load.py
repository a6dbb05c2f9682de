"""Load benchmark: many concurrent MCP clients against one ``mcp-memory serve`` over Streamable HTTP.

A hand-run benchmark, not a test (``tests/test_load.py`` is the short CI version). It writes a
synthetic workspace of a few hundred notes (``--notes``, default 300: ``MEMORY.md``, one file
per project, dated daily files) in a temporary folder, indexes it with ``mcp-memory index``, then
starts ``python -m mcp_memory serve --transport http --port <free> --workspace WS`` with the
default embedder (``--embedder none`` for keyword-only; ``MCP_MEMORY_*`` variables are not
passed on) and opens ``--clients`` (default 32) MCP sessions at once (``mcp.Client(url)``, one
HTTP connection each). The run has three phases, all clients at once in each:

1. warm-up: ``--warmup`` (default 5) searches per client, not timed;
2. load: ``--requests`` (default 200) calls per client, one after the other: ``memory_search``
   with varied queries (about 3,000 distinct ones, a tenth with a ``path_prefix``), and every
   ``--store-every``-th call (default 20; 0: none) a ``memory_store`` of a distinct sentence (one
   in five evergreen, into ``MEMORY.md``; the rest into today's daily file). The call after a
   store is a search for the stored text by the same client, which must find it (read your own
   write: the server promises the index covers a stored line before ``memory_store`` returns);
3. baseline: as many ``memory_status`` calls as the load phase made, split the same way, so the
   load's throughput and latency read as a ratio to a light tool on the same path (HTTP, the
   protocol, a worker thread, the engine) in the same run on the same machine. The server has
   no trivial tool; ``memory_status`` is the lightest (it re-reads the table version and counts
   rows: no embedding, no ranking), not a floor of zero work.

With the defaults that is 160 + 6,400 + 6,400 = 12,960 calls. A call that gets no answer within
``--request-timeout`` (default 60 s, a common MCP client limit) is an error; for a store, whether
the server wrote it anyway is reported. The share of the clients' time spent waiting on each
tool is reported too: each client waits for its store before its next search, so slow stores
lower the load's throughput.

Reported: requests, errors (must be 0), throughput (req/s) per phase, p50/p95/p99 latency per tool,
lost writes (every text ``memory_store`` accepted must be in the markdown exactly once, at the
line it cited, and found by ``memory_search`` at the end; a distinct text refused as a
near-duplicate counts as lost too), and the server's resident memory (``VmRSS`` in
``/proc/<pid>/status``) idle after start-up, after ``--rss-mark`` requests (default 1,000,
counted from the first warm-up call) and after all requests, with the ratio end / mark
(target <= 1.10), plus the peak (``VmHWM``) and a one-second timeline.

Bounded in time: the three phases stop at ``--max-seconds`` (default 600) after the warm-up
starts (calls in flight finish, each within ``--request-timeout``); what was done is reported
and ``truncated`` says so. Setup (index, server start) and the final check are outside that
budget and timed separately.

A summary goes to stderr, the full JSON to stdout. Exit status 1 when a call failed or a write
was lost, else 0.

    python bench/load.py                                  # 32 clients x 200 requests, default embedder
    python bench/load.py --embedder none                  # keyword-only server
    python bench/load.py --clients 16 --requests 100 --json load.json
    python bench/load.py --max-seconds 120 --keep         # keep the workspace and the server log
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from importlib.metadata import version

from mcp import Client

from machine import emit, loadavg, machine, percentile

RSS_TARGET_RATIO = 1.10
READY_TIMEOUT_S = 300.0
START_TIMEOUT_S = 60.0
TIMELINE_EVERY_S = 1.0

# ----- the synthetic workspace ------------------------------------------------------------------
PEOPLE = ["Alice", "Bruno", "Chen Wei", "Dana", "Emeka", "Farah", "Goran", "Hana", "Ivan", "Jules", "Kenji", "Lena",
          "Mateo", "Nadia", "Omar", "Priya", "Quentin", "Rosa", "Sven", "Tariq", "Ursula", "Viktor", "Wen", "Yusuf",
          "Zoe", "Aiko", "Bilal", "Carmen", "Dmitri", "Elif"]
PROJECTS = ["Atlas", "Borealis", "Cobalt", "Driftwood", "Ember", "Fjord", "Granite", "Heron", "Indigo", "Juniper",
            "Kestrel", "Lantern", "Monsoon", "Nimbus", "Orchid", "Pylon", "Quartz", "Riverbend", "Sable", "Tundra"]
TOOLS = ["PostgreSQL", "Redis", "Kafka", "RabbitMQ", "SQLite", "ClickHouse", "Elasticsearch", "MongoDB", "pnpm",
         "Poetry", "uv", "Bazel", "Terraform", "Kubernetes", "Nomad", "Docker Compose", "Grafana", "Prometheus",
         "Sentry", "GitHub Actions", "Jenkins", "Rust", "Go", "TypeScript", "Kotlin", "FastAPI", "Django", "React",
         "Svelte", "Vue", "gRPC", "GraphQL", "NATS", "MinIO", "Nginx", "Caddy", "Vault", "Ansible", "DuckDB", "Polars"]
COMPONENTS = ["billing", "search", "auth", "ingest", "reporting", "notifications", "checkout", "analytics",
              "scheduler", "gateway", "mobile sync", "image pipeline", "audit log", "feature flags", "export"]
CITIES = ["Lisbon", "Nairobi", "Osaka", "Toronto", "Berlin", "Austin", "Krakow", "Bogota", "Tallinn", "Hanoi",
          "Lyon", "Porto", "Seoul", "Denver", "Cape Town", "Reykjavik", "Valencia", "Oslo", "Taipei", "Montreal"]
REASONS = ["it halves the p95 latency", "the team already knows it", "the licence is simpler",
           "it runs on a single small VM", "the vendor support expired", "backups are easier",
           "it removes a nightly batch job", "the old setup kept paging on-call"]
ACTIONS = ["write the rollback plan", "benchmark the staging cluster", "ask finance for the budget",
           "draft the migration RFC", "pair on the schema change", "book the design review"]


def note(r: random.Random) -> str:
    """One synthetic memory bullet."""
    p, p2 = r.sample(PEOPLE, 2)
    pr = r.choice(PROJECTS)
    t, t2 = r.sample(TOOLS, 2)
    c, city = r.choice(COMPONENTS), r.choice(CITIES)
    kind = r.randrange(6)
    if kind == 0:
        return f"- [decision] The {pr} team chose {t} over {t2} for {c} because {r.choice(REASONS)}."
    if kind == 1:
        return f"- [preference] {p} prefers {t} for {c} work and avoids {t2}."
    if kind == 2:
        return (f"- [fact] {p} moved to {city} in {r.choice(['March', 'June', 'September', 'December'])} "
                f"and now leads {pr}.")
    if kind == 3:
        return f"- [entity] {pr} {c} is owned by {p}; it runs on {t} behind {t2}."
    if kind == 4:
        return f"- Met {p} and {p2} in {city} about the {pr} {c} migration; next step: {r.choice(ACTIONS)}."
    return f"- {p} reported that {t} in the {pr} {c} service needs an upgrade before the {city} launch."


def write_workspace(root: Path, notes: int, seed: int = 7) -> dict[str, Any]:
    """MEMORY.md (~1/8 of the notes), one file per project (~3/8), daily files (the rest, 4 a day)."""
    r = random.Random(seed)
    (root / "memory" / "projects").mkdir(parents=True)
    evergreen = max(1, notes // 8)
    per_project = max(1, (notes * 3 // 8) // len(PROJECTS))
    daily = max(0, notes - evergreen - per_project * len(PROJECTS))
    files: dict[str, list[str]] = {"MEMORY.md": ["# Memory", ""]}
    for i in range(evergreen):
        if i % 10 == 0:
            files["MEMORY.md"] += ["", f"## Section {i // 10 + 1}", ""]
        files["MEMORY.md"].append(note(r))
    for pr in PROJECTS:
        rel = f"memory/projects/{pr.lower()}.md"
        files[rel] = [f"# Project {pr}", ""] + [note(r) for _ in range(per_project)]
    first = dt.date(2026, 1, 5)
    for i in range(daily):
        day = first + dt.timedelta(days=i // 4)
        rel = f"memory/{day.isoformat()}.md"
        files.setdefault(rel, [f"# {day.isoformat()}", ""]).append(note(r))
    for rel, lines in files.items():
        (root / rel).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return {"files": len(files), "notes": evergreen + per_project * len(PROJECTS) + daily}


def query_pool(seed: int = 11, size: int = 3000) -> list[str]:
    """Distinct, varied search queries about the workspace's people, projects, tools and places."""
    r = random.Random(seed)
    templates = [
        lambda: f"what did the {r.choice(PROJECTS)} team decide about {r.choice(COMPONENTS)}",
        lambda: f"which tool does {r.choice(PEOPLE)} prefer for {r.choice(COMPONENTS)}",
        lambda: f"who moved to {r.choice(CITIES)}",
        lambda: f"{r.choice(TOOLS)} vs {r.choice(TOOLS)}",
        lambda: f"{r.choice(PROJECTS)} {r.choice(TOOLS)}",
        lambda: f"who owns the {r.choice(PROJECTS)} {r.choice(COMPONENTS)} service",
        lambda: f"meeting with {r.choice(PEOPLE)} in {r.choice(CITIES)}",
        lambda: f"why did we pick {r.choice(TOOLS)}",
        lambda: f"{r.choice(PEOPLE)} {r.choice(PROJECTS)} migration next step",
        lambda: f"upgrade needed before the {r.choice(CITIES)} launch",
    ]
    seen: set[str] = set()
    out: list[str] = []
    while len(out) < size:
        q = r.choice(templates)()
        if q not in seen:
            seen.add(q)
            out.append(q)
    return out


def store_text(k: int, client: int, seq: int) -> str:
    """The k-th distinct sentence to store (no two near-identical: checked up to k = 1000 with USE, max cosine 0.91)."""
    r = random.Random(k * 7919 + 13)
    p = PEOPLE[k % len(PEOPLE)]
    pr = PROJECTS[(k // len(PEOPLE) + k) % len(PROJECTS)]
    t, c, city = r.choice(TOOLS), r.choice(COMPONENTS), r.choice(CITIES)
    n = r.randrange(120, 9800)
    marker = f"lw{client:02d}r{seq:03d}"
    kind = k % 4
    if kind == 0:
        s = f"{p} measured {n} requests per second on the {pr} {c} service running {t} in {city}"
    elif kind == 1:
        s = f"On the load day {p} moved the {pr} {c} queue to {t}, run from the {city} office, at {n} jobs an hour"
    elif kind == 2:
        s = f"The {pr} {c} team in {city} set a budget of {n} euros for {t}, approved by {p}"
    else:
        s = f"{p} asked that {pr} keep {t} for {c} until the {city} review; ticket {n}"
    return f"{s} (load marker {marker})."


def markdown_lines(workspace: Path) -> dict[str, list[str]]:
    """Every memory file's lines (MEMORY.md and memory/**/*.md), by workspace-relative path."""
    out: dict[str, list[str]] = {}
    paths = [workspace / "MEMORY.md", *sorted((workspace / "memory").rglob("*.md"))]
    for path in paths:
        if path.is_file():
            out[path.relative_to(workspace).as_posix()] = path.read_text(encoding="utf-8").split("\n")
    return out


# ----- the server process ------------------------------------------------------------------------
def server_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_MEMORY_")}
    env["PYTHONUNBUFFERED"] = "1"
    return env


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def proc_status(pid: int) -> dict[str, int]:
    """VmRSS, VmHWM (peak RSS) and Threads of a process, from /proc/<pid>/status (kB; {} if gone)."""
    out: dict[str, int] = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM", "Threads"):
                out[key] = int(value.split()[0])
    except (OSError, ValueError):
        pass
    return out


def rss_mb(pid: int) -> float | None:
    kb = proc_status(pid).get("VmRSS")
    return None if kb is None else round(kb / 1024, 1)


class Server:
    def __init__(self, workspace: Path, logdir: Path, embedder: str | None):
        self.port = free_port()
        self.log = logdir / "server.log"
        self.command = [sys.executable, "-m", "mcp_memory", "serve", "--transport", "http", "--host", "127.0.0.1",
                        "--port", str(self.port), "--workspace", str(workspace),
                        *(["--embedder", embedder] if embedder else [])]
        with open(self.log, "wb") as errf:
            self.proc = subprocess.Popen(self.command, stdin=subprocess.DEVNULL, stdout=errf,
                                         stderr=subprocess.STDOUT, env=server_env(), cwd=str(logdir))
        self.url = f"http://127.0.0.1:{self.port}/mcp"

    def wait_listening(self) -> float:
        started = time.perf_counter()
        while time.perf_counter() - started < START_TIMEOUT_S:
            if self.proc.poll() is not None:
                raise SystemExit(f"server exited with {self.proc.returncode}:\n{self.log.read_text(errors='replace')}")
            if port_open(self.port):
                return time.perf_counter() - started
            time.sleep(0.05)
        self.stop()
        raise SystemExit(
            f"server did not listen within {START_TIMEOUT_S:.0f}s:\n{self.log.read_text(errors='replace')}")

    def stop(self) -> int | None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        return self.proc.returncode

    def log_problems(self) -> dict[str, Any]:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        lines = text.splitlines()
        bad = [ln for ln in lines if "Traceback" in ln or ln.startswith(("ERROR", "CRITICAL")) or " ERROR " in ln]
        return {"lines": len(lines), "tracebacks": sum("Traceback" in ln for ln in lines),
                "error_lines": len(bad), "first_error_lines": bad[:10]}


# ----- the load -----------------------------------------------------------------------------------
@dataclass
class Call:
    phase: str
    tool: str
    client: int
    seconds: float
    error: str | None = None


@dataclass
class Store:
    client: int
    seq: int
    text: str
    category: str | None
    evergreen: bool
    error: str | None = None
    stored: bool | None = None
    path: str | None = None
    line: int | None = None
    line_text: str | None = None
    read_back: bool | None = None  # the same client's next search found it


@dataclass
class Run:
    pid: int
    rss_mark: int
    deadline: float = float("inf")
    request_timeout: float = 60.0
    calls: list[Call] = field(default_factory=list)
    stores: list[Store] = field(default_factory=list)
    done: int = 0  # calls finished, from the first warm-up call
    rss_at_mark: float | None = None
    timeline: list[list[float]] = field(default_factory=list)  # [seconds since warm-up, calls done, RSS MB]
    truncated: bool = False

    def record(self, call: Call) -> None:
        self.calls.append(call)
        self.done += 1
        if self.done == self.rss_mark:
            self.rss_at_mark = rss_mb(self.pid)

    async def call(self, client: Client, phase: str, idx: int, tool: str,
                   arguments: dict[str, Any]) -> tuple[Any, str | None]:
        """One timed tool call: (result, None), or (None, what went wrong), recorded either way."""
        started = time.perf_counter()
        error: str | None = None
        result = None
        try:
            with anyio.fail_after(self.request_timeout):
                result = await client.call_tool(tool, arguments)
            if result.is_error:
                text = result.content[0].text if result.content else ""
                error = f"tool error: {text[:200]}"
        except TimeoutError:
            error = f"no answer within --request-timeout {self.request_timeout:g}s"
        except Exception as exc:  # noqa: BLE001 - any failure is a figure of the run, never a crash of the bench
            error = f"{type(exc).__name__}: {str(exc)[:200]}"
        self.record(Call(phase, tool, idx, time.perf_counter() - started, error))
        return (None, error) if error else (result, None)

    def out_of_time(self) -> bool:
        if time.monotonic() >= self.deadline:
            self.truncated = True
            return True
        return False


def found_at(result: Any, path: str, line: int) -> bool:
    hits = (result.structured_content or {}).get("results", []) if result is not None else []
    return any(h["path"] == path and h["start_line"] <= line <= h["end_line"] for h in hits)


async def warmup_client(run: Run, client: Client, idx: int, queries: list[str], n: int) -> None:
    for i in range(n):
        if run.out_of_time():
            return
        await run.call(client, "warmup", idx, "memory_search", {"query": queries[(idx * 7919 + i) % len(queries)]})


async def load_client(run: Run, client: Client, idx: int, requests: int, store_every: int, queries: list[str],
                      clients: int) -> None:
    r = random.Random(1000 + idx)
    pending: Store | None = None
    stores = 0
    for i in range(requests):
        if run.out_of_time():
            return
        if pending is not None:  # read your own write: search for the text just stored
            store, pending = pending, None
            result, _ = await run.call(client, "load", idx, "memory_search",
                                       {"query": store.text, "max_results": 10})
            store.read_back = found_at(result, store.path, store.line) if result is not None else None
            continue
        if store_every and (i + idx) % store_every == store_every - 1:
            seq = stores
            stores += 1
            k = seq * clients + idx
            store = Store(idx, seq, store_text(k, idx, seq), "fact" if k % 2 else None, k % 5 == 4)
            run.stores.append(store)
            args: dict[str, Any] = {"text": store.text, "evergreen": store.evergreen}
            if store.category:
                args["category"] = store.category
            result, store.error = await run.call(client, "load", idx, "memory_store", args)
            if result is None:
                continue
            sc = result.structured_content or {}
            store.stored, store.path, store.line, store.line_text = sc.get("stored"), sc.get("path"), \
                sc.get("line"), sc.get("text")
            if store.stored:
                pending = store
            continue
        args = {"query": r.choice(queries)}
        if r.random() < 0.1:
            args["path_prefix"] = r.choice(["memory/", "memory/projects/", "MEMORY.md"])
        await run.call(client, "load", idx, "memory_search", args)


async def baseline_client(run: Run, client: Client, idx: int, n: int) -> None:
    for _ in range(n):
        if run.out_of_time():
            return
        await run.call(client, "baseline", idx, "memory_status", {})


async def sample_rss(run: Run, started: float, stop: anyio.Event) -> None:
    while not stop.is_set():
        run.timeline.append([round(time.monotonic() - started, 1), run.done, rss_mb(run.pid) or 0.0])
        with anyio.move_on_after(TIMELINE_EVERY_S):
            await stop.wait()


async def wait_ready(url: str, embedder: str | None) -> tuple[float, dict[str, Any]]:
    """memory_status until it answers and (with an embedder) every chunk is embedded."""
    started = time.perf_counter()
    async with Client(url) as client:
        while True:
            result = await client.call_tool("memory_status", {})
            status = dict(result.structured_content or {}) if not result.is_error else {}
            share = status.get("embedded_share")
            if status and (share is None or share >= 1.0 or embedder == "none"):
                return time.perf_counter() - started, status
            if time.perf_counter() - started > READY_TIMEOUT_S:
                raise SystemExit(f"server not ready after {READY_TIMEOUT_S:.0f}s: {result.content}")
            await anyio.sleep(0.2)


async def verify(run: Run, clients: list[Client], workspace: Path) -> dict[str, Any]:
    """Every accepted store: in the markdown exactly once, at its cited line, found by memory_search."""
    files = markdown_lines(workspace)
    counts: Counter[str] = Counter(line.rstrip("\r") for lines in files.values() for line in lines)
    accepted = [s for s in run.stores if s.error is None]
    lost, duplicated, misplaced, refused, not_found = [], [], [], [], []
    for s in accepted:
        expected = s.line_text or (f"- [{s.category}] {s.text}" if s.category else f"- {s.text}")
        n = counts[expected]
        if not s.stored:
            refused.append(s.text)
        if n == 0:
            lost.append(s.text)
        elif n > 1:
            duplicated.append(s.text)
        if s.stored and n and (s.path not in files or len(files[s.path]) < (s.line or 0)
                               or files[s.path][s.line - 1].rstrip("\r") != expected):
            misplaced.append(s.text)
    # A store the client gave up on (timeout) may still have been written: at most once, then.
    failed_in_md = 0
    for s in run.stores:
        if s.error is not None:
            n = sum(1 for lines in files.values() for line in lines if s.text in line)
            failed_in_md += n > 0
            if n > 1:
                duplicated.append(s.text)

    checkable = [s for s in accepted if s.stored and s.path and s.line]
    results: dict[int, bool] = {}

    async def search_worker(w: int) -> None:
        for j in range(w, len(checkable), len(clients)):
            s = checkable[j]
            try:
                with anyio.fail_after(run.request_timeout):
                    result = await clients[w].call_tool("memory_search", {"query": s.text, "max_results": 10})
                results[j] = not result.is_error and found_at(result, s.path, s.line)
            except Exception:  # noqa: BLE001 - a search that failed found nothing: a figure of the run
                results[j] = False

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for w in range(len(clients)):
            tg.start_soon(search_worker, w)
    not_found = [checkable[j].text for j, ok in sorted(results.items()) if not ok]
    read_back_misses = [s.text for s in accepted if s.stored and s.read_back is False]
    lost_total = len(set(lost) | set(refused))
    return {"stores_sent": len(run.stores), "stores_failed": len(run.stores) - len(accepted),
            "stores_accepted": len(accepted), "stored_true": sum(1 for s in accepted if s.stored),
            "refused_as_duplicate": len(refused), "missing_from_markdown": len(lost), "lost_writes": lost_total,
            "duplicated_in_markdown": len(duplicated), "not_at_cited_line": len(misplaced),
            "not_found_by_search_at_end": len(not_found), "read_your_write_misses": len(read_back_misses),
            "read_your_write_checked": sum(1 for s in accepted if s.read_back is not None),
            "failed_stores_found_in_markdown": failed_in_md,
            "search_check_s": round(time.perf_counter() - started, 2),
            "examples": {"lost": lost[:5], "refused": refused[:5], "duplicated": duplicated[:5],
                         "misplaced": misplaced[:5], "not_found": not_found[:5], "read_back": read_back_misses[:5]}}


# ----- figures -------------------------------------------------------------------------------------
def ms_stats(values: list[float]) -> dict[str, float]:
    """p50/p95/p99 by linear interpolation (numpy's default), in milliseconds."""
    if not values:
        return {"n": 0}
    arr = sorted(v * 1000.0 for v in values)

    def pct(p: float) -> float:
        return percentile(arr, p)

    return {"n": len(arr), "p50_ms": round(pct(50), 2), "p95_ms": round(pct(95), 2), "p99_ms": round(pct(99), 2),
            "mean_ms": round(statistics.fmean(arr), 2), "max_ms": round(arr[-1], 2)}


def phase_figures(run: Run, phase: str, wall_s: float) -> dict[str, Any]:
    calls = [c for c in run.calls if c.phase == phase]
    errors = [c for c in calls if c.error]
    tools = sorted({c.tool for c in calls})
    clients = len({c.client for c in calls}) or 1
    busy = {t: round(sum(c.seconds for c in calls if c.tool == t) / (clients * wall_s), 3) if wall_s > 0 else None
            for t in sorted({c.tool for c in calls})}
    return {"requests": len(calls), "errors": len(errors), "wall_s": round(wall_s, 2),
            "client_time_share": busy,  # of the clients' wall time, the share spent waiting on each tool
            "throughput_rps": round(len(calls) / wall_s, 1) if wall_s > 0 else None,
            "latency": {t: ms_stats([c.seconds for c in calls if c.tool == t and not c.error]) for t in tools},
            "error_kinds": dict(Counter(f"{c.tool}: {c.error[:120]}" for c in errors).most_common(10))}


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ----- main ----------------------------------------------------------------------------------------
async def drive(args: argparse.Namespace, server: Server, workspace: Path, results: dict[str, Any]) -> None:
    queries = query_pool()
    ready_s, status = await wait_ready(server.url, args.embedder)
    results["server"]["ready_s"] = round(ready_s, 2)
    results["server"]["status_at_start"] = {k: status.get(k) for k in ("files", "chunks", "embedder",
                                                                        "embedded_share", "degraded")}
    run = Run(pid=server.proc.pid, rss_mark=args.rss_mark, request_timeout=args.request_timeout)
    results["rss_mb"] = {"idle_after_start": rss_mb(run.pid)}
    log(f"server ready in {ready_s:.1f}s: {status.get('chunks')} chunks, embedder "
        f"{(status.get('embedder') or {}).get('provider')}, RSS {results['rss_mb']['idle_after_start']} MB; "
        f"opening {args.clients} clients")
    async with contextlib.AsyncExitStack() as stack:
        started = time.perf_counter()
        clients = [await stack.enter_async_context(Client(server.url, read_timeout_seconds=args.request_timeout))
                   for _ in range(args.clients)]
        results["connect_s"] = round(time.perf_counter() - started, 2)
        results["protocol"] = clients[0].protocol_version

        t0 = time.monotonic()
        run.deadline = t0 + args.max_seconds
        stop = anyio.Event()
        async with anyio.create_task_group() as sampler:
            sampler.start_soon(sample_rss, run, t0, stop)
            phases: dict[str, Any] = {}
            for phase in ("warmup", "load", "baseline"):
                if run.out_of_time():
                    break
                if phase == "baseline" and not args.baseline:
                    continue
                before = loadavg()
                per_client = {c: 0 for c in range(args.clients)}
                if phase == "baseline":  # as many memory_status calls as the load made, per client
                    for c in run.calls:
                        if c.phase == "load":
                            per_client[c.client] += 1
                log(f"{phase}: {args.clients} clients"
                    + (f" x {args.warmup} searches" if phase == "warmup" else
                       f" x {args.requests} requests (1 in {args.store_every} a store)" if phase == "load" else
                       f", {sum(per_client.values())} memory_status calls"))
                started = time.perf_counter()
                async with anyio.create_task_group() as tg:
                    for idx, client in enumerate(clients):
                        if phase == "warmup":
                            tg.start_soon(warmup_client, run, client, idx, queries, args.warmup)
                        elif phase == "load":
                            tg.start_soon(load_client, run, client, idx, args.requests, args.store_every,
                                          queries, args.clients)
                        else:
                            tg.start_soon(baseline_client, run, client, idx, per_client[idx])
                wall = time.perf_counter() - started
                phases[phase] = phase_figures(run, phase, wall)
                phases[phase]["loadavg_before"], phases[phase]["loadavg_after"] = before, loadavg()
                phases[phase]["rss_mb_after"] = rss_mb(run.pid)
                phases[phase]["done_after"] = run.done
                p = phases[phase]
                log(f"  {p['requests']} calls in {wall:.1f}s ({p['throughput_rps']} req/s), {p['errors']} errors, "
                    f"RSS {p['rss_mb_after']} MB")
            stop.set()
        results["phases"] = phases
        results["requests_total"] = run.done
        results["truncated"] = run.truncated
        results["rss_mb"]["after_mark"] = run.rss_at_mark
        results["rss_mb"]["mark_requests"] = args.rss_mark
        results["rss_mb"]["after_all"] = rss_mb(run.pid)
        log(f"checking {len(run.stores)} stores against the markdown and memory_search")
        results["writes"] = await verify(run, clients, workspace)
        result = await clients[0].call_tool("memory_status", {})
        end_status = dict(result.structured_content or {})
        results["server"]["status_at_end"] = {k: end_status.get(k) for k in ("files", "chunks", "keyword_docs",
                                                                             "embedded_share", "degraded")}
        results["rss_mb"]["after_check"] = rss_mb(run.pid)
        results["rss_mb"]["peak_vmhwm"] = round(proc_status(run.pid).get("VmHWM", 0) / 1024, 1)
        results["server"]["threads_at_end"] = proc_status(run.pid).get("Threads")
    mark, end = results["rss_mb"]["after_mark"], results["rss_mb"]["after_all"]
    results["rss_mb"]["ratio_end_to_mark"] = round(end / mark, 3) if mark and end else None
    results["rss_mb"]["target_ratio"] = RSS_TARGET_RATIO
    results["rss_mb"]["timeline"] = run.timeline


def summary(results: dict[str, Any]) -> str:
    m, a = results["machine"], results["args"]
    out = [f"load benchmark {results['date']}  {m['platform']}  {m['cpu']}  {m['cpu_count']} CPUs  "
           f"python {m['python']}  mcp {m['mcp']}  load {results['loadavg_start']} -> {results['loadavg_end']}"]
    w, s = results["workspace"], results["server"]
    start = s.get("status_at_start", {})
    out.append(f"workspace: {w['notes']} notes in {w['files']} files, mcp-memory index {w['index_s']}s; "
               f"{start.get('chunks')} chunks, embedder {(start.get('embedder') or {}).get('provider')}"
               f"/{(start.get('embedder') or {}).get('model')}")
    out.append(f"server: {' '.join(s['command'])}")
    out.append(f"    listening after {s.get('listen_s')}s, "
               f"ready (memory_status, all embedded) after {s.get('ready_s')}s; "
               f"{a['clients']} clients connected in {results.get('connect_s')}s ({results.get('protocol')})")
    ph = results.get("phases", {})
    for name, label in (("warmup", "warm-up"), ("load", "load"), ("baseline", "baseline")):
        if name not in ph:
            continue
        p = ph[name]
        out.append(f"[{label}] {p['requests']} calls in {p['wall_s']}s = {p['throughput_rps']} req/s, "
                   f"{p['errors']} errors (load {p['loadavg_before']} -> {p['loadavg_after']})")
        if name != "warmup":
            for tool, st in p["latency"].items():
                if st.get("n"):
                    out.append(f"    {tool:14s} n={st['n']:5d}  p50 {st['p50_ms']:8.1f}  p95 {st['p95_ms']:8.1f}  "
                               f"p99 {st['p99_ms']:8.1f}  max {st['max_ms']:8.1f} ms  "
                               f"({p['client_time_share'].get(tool, 0) * 100:.0f}% of the clients' time)")
        for kind, n in p["error_kinds"].items():
            out.append(f"    error x{n}: {kind}")
    if "load" in ph and "baseline" in ph and ph["baseline"]["throughput_rps"]:
        lo, ba = ph["load"], ph["baseline"]
        search, status = lo["latency"].get("memory_search", {}), ba["latency"].get("memory_status", {})
        ratio = round(lo["throughput_rps"] / ba["throughput_rps"], 2)
        p50 = round(search["p50_ms"] / status["p50_ms"], 2) if search.get("n") and status.get("n") else None
        out.append(f"    load / baseline: throughput {ratio}x, memory_search p50 / memory_status p50 {p50}x")
    wr = results.get("writes", {})
    if wr:
        out.append(f"[writes] {wr['stores_sent']} stores sent, {wr['stores_failed']} failed, "
                   f"{wr['stored_true']} stored; "
                   f"lost {wr['lost_writes']} (missing {wr['missing_from_markdown']}, refused as duplicates "
                   f"{wr['refused_as_duplicate']}), duplicated {wr['duplicated_in_markdown']}, "
                   f"not at the cited line {wr['not_at_cited_line']}")
        out.append(f"    not found by memory_search at the end: {wr['not_found_by_search_at_end']}; "
                   f"read-your-write misses {wr['read_your_write_misses']} of {wr['read_your_write_checked']}; "
                   f"failed stores written anyway: {wr['failed_stores_found_in_markdown']} of {wr['stores_failed']}")
        end = s.get("status_at_end", {})
        out.append(f"    index at the end: {end.get('files')} files, {end.get('chunks')} chunks, "
                   f"{end.get('keyword_docs')} keyword docs, embedded {end.get('embedded_share')}, "
                   f"degraded {end.get('degraded')}")
    r = results.get("rss_mb", {})
    ratio = r.get("ratio_end_to_mark")
    out.append(f"[RSS] idle {r.get('idle_after_start')} MB; after {r.get('mark_requests')} requests "
               f"{r.get('after_mark')} MB; after all {results.get('requests_total')} {r.get('after_all')} MB; "
               f"ratio {ratio} (target <= {RSS_TARGET_RATIO}: "
               f"{'n/a' if ratio is None else 'PASS' if ratio <= RSS_TARGET_RATIO else 'FAIL'}); "
               f"peak {r.get('peak_vmhwm')} MB, after the check {r.get('after_check')} MB")
    lp = s.get("log", {})
    out.append(f"server log: {lp.get('lines')} lines, {lp.get('tracebacks')} tracebacks, "
               f"{lp.get('error_lines')} error lines; exit {s.get('exit_code')}"
               + (" (the bench's SIGTERM)" if s.get("exit_code") == -15 else ""))
    for line in lp.get("first_error_lines", [])[:3]:
        out.append(f"    {line[:200]}")
    out.append(f"verdict: {results['verdict']}" + (" (TRUNCATED at --max-seconds)" if results.get("truncated") else "")
               + f"; total {results['total_s']}s")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=32, help="concurrent MCP sessions (default 32)")
    parser.add_argument("--requests", type=int, default=200, help="load calls per client (default 200)")
    parser.add_argument("--store-every", type=int, default=20,
                        help="every N-th load call of a client is a memory_store (default 20; 0: none)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed searches per client first (default 5)")
    parser.add_argument("--no-baseline", dest="baseline", action="store_false",
                        help="skip the memory_status baseline phase")
    parser.add_argument("--notes", type=int, default=300, help="notes in the synthetic workspace (default 300)")
    parser.add_argument("--embedder", choices=["local", "e5", "openai", "none"], default=None,
                        help="passed to the server (default: not passed, the default embedder)")
    parser.add_argument("--rss-mark", type=int, default=1000,
                        help="read the server's RSS after this many calls (default 1000)")
    parser.add_argument("--max-seconds", type=float, default=600.0,
                        help="stop the phases this long after the warm-up starts (default 600)")
    parser.add_argument("--request-timeout", type=float, default=60.0, help="per call (default 60 s)")
    parser.add_argument("--keep", action="store_true", help="keep the workspace and the server log")
    parser.add_argument("--json", type=Path, default=None, help="also write all figures to this file")
    args = parser.parse_args()
    if args.clients < 1 or args.requests < 0 or args.store_every < 0:
        parser.error("--clients must be >= 1, --requests and --store-every >= 0")

    run_started = time.perf_counter()
    results: dict[str, Any] = {"date": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
                               "machine": machine(mcp=version("mcp")), "loadavg_start": loadavg(),
                               "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}}
    tmp = Path(tempfile.mkdtemp(prefix="mcp-memory-load-"))
    workspace = tmp / "workspace"
    server: Server | None = None
    try:
        results["workspace"] = {"path": str(workspace), **write_workspace(workspace, args.notes)}
        command = [sys.executable, "-m", "mcp_memory", "index", "--quiet", "--workspace", str(workspace),
                   *(["--embedder", args.embedder] if args.embedder else [])]
        log(f"{results['workspace']['notes']} notes in {results['workspace']['files']} files; {' '.join(command[1:])}")
        started = time.perf_counter()
        out = subprocess.run(command, capture_output=True, text=True, env=server_env())
        if out.returncode:
            raise SystemExit(f"mcp-memory index failed (exit {out.returncode}):\n{out.stderr}")
        results["workspace"]["index_s"] = round(time.perf_counter() - started, 1)
        server = Server(workspace, tmp, args.embedder)
        results["server"] = {"command": server.command, "pid": server.proc.pid}
        results["server"]["listen_s"] = round(server.wait_listening(), 2)
        anyio.run(drive, args, server, workspace, results)
    finally:
        if server is not None:
            results.setdefault("server", {})["exit_code"] = server.stop()
            results["server"]["log"] = server.log_problems()
        if args.keep:
            log(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    errors = sum(p["errors"] for p in results.get("phases", {}).values())
    wr = results.get("writes", {})
    problems = []
    if errors:
        problems.append(f"{errors} failed calls")
    if wr.get("lost_writes") or wr.get("duplicated_in_markdown") or wr.get("not_at_cited_line"):
        problems.append("lost, duplicated or misplaced writes")
    if wr.get("not_found_by_search_at_end") or wr.get("read_your_write_misses"):
        problems.append("stored text not found by memory_search")
    ratio = results.get("rss_mb", {}).get("ratio_end_to_mark")
    if ratio is not None and ratio > RSS_TARGET_RATIO:
        problems.append(f"RSS grew {ratio}x after request {args.rss_mark}")
    results["verdict"] = "OK" if not problems else "FAIL: " + "; ".join(problems)
    results["loadavg_end"] = loadavg()
    results["total_s"] = round(time.perf_counter() - run_started, 1)
    emit(results, summary(results), args.json)
    if errors or wr.get("lost_writes") or wr.get("duplicated_in_markdown"):
        sys.exit(1)


if __name__ == "__main__":
    main()
