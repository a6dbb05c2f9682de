"""Many concurrent MCP clients against one ``mcp-memory serve --transport http``, as users see it.

A real server subprocess (``--embedder none``: keyword search, fast and deterministic) on a small
workspace in a temp dir; several MCP sessions over Streamable HTTP at once, each calling
``memory_search`` with varied queries and, every few calls, ``memory_store`` with a distinct
sentence. Afterwards: no call failed, every stored sentence is in the markdown exactly once at
the line its citation names, the same client found it right after storing it, every one is found
by ``memory_search`` at the end, and the server's resident memory (``VmRSS``) did not balloon
between an early request and the end (a loose bound; ``bench/load.py`` measures the real figure).

The default runs 8 clients x 25 calls (a few seconds); with MCP_MEMORY_LONG_TESTS=1 a slow
version runs 32 clients x 200 calls.
"""

from __future__ import annotations

import contextlib
import os
import random
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from conftest import start_server

LONG = os.environ.get("MCP_MEMORY_LONG_TESTS") == "1"
READY_TIMEOUT = 30.0
CALL_TIMEOUT = 60.0

PEOPLE = ["Alice", "Bruno", "Chen", "Dana", "Emeka", "Farah", "Goran", "Hana", "Ivan", "Jules", "Kenji", "Lena"]
PROJECTS = ["Atlas", "Borealis", "Cobalt", "Driftwood", "Ember", "Fjord", "Granite", "Heron"]
TOOLS = ["PostgreSQL", "Redis", "Kafka", "SQLite", "ClickHouse", "pnpm", "Terraform", "Grafana", "Sentry", "Django"]
COMPONENTS = ["billing", "search", "auth", "ingest", "reporting", "checkout", "gateway", "export"]
CITIES = ["Lisbon", "Nairobi", "Osaka", "Toronto", "Berlin", "Austin", "Krakow", "Hanoi"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# ----- the workspace and the server ---------------------------------------------------------------
def make_workspace(root: Path, notes: int = 120) -> Path:
    """MEMORY.md, one file per project and dated daily files: ``notes`` bullets in all."""
    r = random.Random(5)
    (root / "memory" / "projects").mkdir(parents=True)
    files: dict[str, list[str]] = {"MEMORY.md": ["# Memory", ""]}
    for i in range(notes):
        p, pr, t, c, city = (r.choice(PEOPLE), r.choice(PROJECTS), r.choice(TOOLS), r.choice(COMPONENTS),
                             r.choice(CITIES))
        line = [f"- [decision] The {pr} team chose {t} for {c}.", f"- [preference] {p} prefers {t} for {c} work.",
                f"- [fact] {p} moved to {city} and now leads {pr}.",
                f"- Met {p} in {city} about the {pr} {c} migration."][i % 4]
        rel = ("MEMORY.md" if i % 8 == 0 else f"memory/projects/{pr.lower()}.md" if i % 8 < 4
               else f"memory/2026-02-{1 + i % 20:02d}.md")
        files.setdefault(rel, [f"# {Path(rel).stem}", ""]).append(line)
    for rel, lines in files.items():
        (root / rel).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def queries(n: int = 200) -> list[str]:
    r = random.Random(9)
    out = []
    for i in range(n):
        out.append([f"what did the {r.choice(PROJECTS)} team decide about {r.choice(COMPONENTS)}",
                    f"which tool does {r.choice(PEOPLE)} prefer", f"who moved to {r.choice(CITIES)}",
                    f"{r.choice(PROJECTS)} {r.choice(TOOLS)}", f"meeting in {r.choice(CITIES)} migration"][i % 5])
    return out


def store_text(client: int, seq: int) -> str:
    """Distinct sentences: a unique marker word and several words that differ between any two."""
    k = client * 1000 + seq
    r = random.Random(k)
    return (f"{PEOPLE[k % len(PEOPLE)]} logged {r.randrange(100, 9999)} {r.choice(COMPONENTS)} events for "
            f"{r.choice(PROJECTS)} on {r.choice(TOOLS)} in {r.choice(CITIES)}, marker lt{client:02d}s{seq:03d}.")


def rss_kb(pid: int) -> int | None:
    """The process's resident memory (VmRSS in /proc/<pid>/status), or None where /proc is missing."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


@contextlib.contextmanager
def http_server(workspace: Path, logdir: Path) -> Iterator[tuple[subprocess.Popen, str]]:
    server = start_server(workspace, logdir, "--transport", "http")
    try:
        yield server.proc, server.url
        assert server.proc.poll() is None, f"server died during the load: {server.output()[-3000:]}"
        assert "Traceback" not in server.output(), server.output()[-3000:]
    finally:
        server.stop()


# ----- the load ------------------------------------------------------------------------------------
@dataclass
class Stored:
    text: str
    path: str
    line: int
    line_text: str
    read_back: bool


@dataclass
class Report:
    calls: int = 0
    errors: list[str] = field(default_factory=list)
    stores: list[Stored] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # distinct texts memory_store said were duplicates
    rss_at_mark: int | None = None
    rss_end: int | None = None


def found(result: Any, path: str, line: int) -> bool:
    hits = (result.structured_content or {}).get("results", [])
    return any(h["path"] == path and h["start_line"] <= line <= h["end_line"] for h in hits)


async def run_load(url: str, pid: int, clients: int, requests: int, store_every: int, rss_mark: int) -> Report:
    report = Report()
    pool = queries()

    async def call(client: Client, tool: str, arguments: dict[str, Any]) -> Any:
        try:
            with anyio.fail_after(CALL_TIMEOUT):
                result = await client.call_tool(tool, arguments)
        except Exception as exc:  # noqa: BLE001 - every failure is recorded as an error of the run
            result, error = None, f"{tool}: {type(exc).__name__}: {exc}"
        else:
            error = f"{tool}: {result.content}" if result.is_error else None
        report.calls += 1
        if report.calls == rss_mark:
            report.rss_at_mark = rss_kb(pid)
        if error:
            report.errors.append(error)
            return None
        return result

    async def one_client(idx: int, client: Client) -> None:
        r = random.Random(idx)
        seq = 0
        for i in range(requests):
            if store_every and (i + idx) % store_every == store_every - 1:
                text = store_text(idx, seq)
                seq += 1
                result = await call(client, "memory_store", {"text": text, "category": "fact" if i % 2 else None,
                                                             "evergreen": seq % 4 == 0})
                if result is None:
                    continue
                sc = result.structured_content
                if not sc["stored"]:
                    report.refused.append(f"{text!r} -> {sc['message']}")
                    continue
                # Read your own write: the index covers the line before memory_store returns.
                again = await call(client, "memory_search", {"query": text, "max_results": 10})
                report.stores.append(Stored(text, sc["path"], sc["line"], sc["text"],
                                            again is not None and found(again, sc["path"], sc["line"])))
            else:
                await call(client, "memory_search", {"query": r.choice(pool)})

    async with contextlib.AsyncExitStack() as stack:
        sessions = [await stack.enter_async_context(Client(url)) for _ in range(clients)]
        async with anyio.create_task_group() as tg:
            for idx, client in enumerate(sessions):
                tg.start_soon(one_client, idx, client)
    report.rss_end = rss_kb(pid)
    return report


async def wait_ready(url: str) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    async with Client(url) as client:
        while True:
            result = await client.call_tool("memory_status", {})
            if not result.is_error:
                return
            assert time.monotonic() < deadline, result.content
            await anyio.sleep(0.1)


async def search_all(url: str, stores: list[Stored], clients: int) -> list[str]:
    """The stored texts memory_search does not find at their cited line, searched from fresh sessions."""
    missing: list[str] = []

    async def worker(w: int) -> None:
        async with Client(url) as client:
            for s in stores[w::clients]:
                result = await client.call_tool("memory_search", {"query": s.text, "max_results": 10})
                if result.is_error or not found(result, s.path, s.line):
                    missing.append(s.text)

    async with anyio.create_task_group() as tg:
        for w in range(clients):
            tg.start_soon(worker, w)
    return missing


async def check_load(tmp_path: Path, clients: int, requests: int, store_every: int, rss_mark: int) -> None:
    workspace = make_workspace(tmp_path / "ws")
    with http_server(workspace, tmp_path) as (proc, url):
        await wait_ready(url)
        with anyio.fail_after(1800):
            report = await run_load(url, proc.pid, clients, requests, store_every, rss_mark)
            missing_at_end = await search_all(url, report.stores, min(clients, 8))

        expected_stores = sum(1 for idx in range(clients) for i in range(requests)
                              if (i + idx) % store_every == store_every - 1)
        assert report.errors == [], report.errors[:5]
        assert report.refused == [], report.refused[:5]  # distinct texts are never duplicates
        assert len(report.stores) == expected_stores
        assert report.calls == clients * requests + len(report.stores)  # + one read-back search per store

        # Every stored line is in the markdown exactly once, at the line its citation names.
        files = {p.relative_to(workspace).as_posix(): p.read_text(encoding="utf-8").split("\n")
                 for p in [workspace / "MEMORY.md", *(workspace / "memory").rglob("*.md")]}
        counts = Counter(line for lines in files.values() for line in lines)
        assert [s.line_text for s in report.stores if counts[s.line_text] != 1] == []
        assert [s.line_text for s in report.stores if files[s.path][s.line - 1] != s.line_text] == []
        assert all(s.line_text.endswith(s.text) for s in report.stores)
        assert {s.path for s in report.stores} >= {"MEMORY.md"}  # both MEMORY.md and the daily file were hit
        assert len({s.path for s in report.stores}) >= 2

        # Found by the same client right after storing, and by memory_search at the end.
        assert [s.text for s in report.stores if not s.read_back] == []
        assert missing_at_end == []

        if report.rss_at_mark is not None and report.rss_end is not None:
            growth = report.rss_end / report.rss_at_mark
            assert growth < 1.5, (f"server RSS grew from {report.rss_at_mark} kB after request {rss_mark} "
                                  f"to {report.rss_end} kB after {report.calls}")


@pytest.mark.anyio
async def test_concurrent_clients_search_and_store(tmp_path: Path) -> None:
    await check_load(tmp_path, clients=8, requests=25, store_every=5, rss_mark=100)


@pytest.mark.anyio
@pytest.mark.slow
@pytest.mark.skipif(not LONG, reason="set MCP_MEMORY_LONG_TESTS=1 for the 32 x 200 version")
async def test_concurrent_clients_search_and_store_long(tmp_path: Path) -> None:
    await check_load(tmp_path, clients=32, requests=200, store_every=20, rss_mark=1000)
