"""Many processes on one workspace, hand edits under a running server, crashes, damaged indexes.

Everything here runs real processes (``python -m mcp_memory serve|index|status``) on workspaces
in temp dirs, with ``--embedder none`` (keyword search only), and checks what a user sees: every
stored line once in the markdown, every memory found by every server, citations whose lines
hold the text, and an index whose rows match the files exactly (no duplicates, no orphans).

Each test has a short default version. ``MCP_MEMORY_LONG_TESTS=1`` adds the long versions
(marked ``slow``): more stores per server, more kills.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from conftest import ServerProcess, server_env
from mcp_memory.config import Settings, load_settings
from mcp_memory.core.chunking import chunk_markdown
from mcp_memory.core.workspace import Workspace, read_text
from mcp_memory.index.keywords import KeywordIndex
from mcp_memory.index.state import IndexState
from mcp_memory.index.vectors import VectorStore
from mcp_memory.memory import Memory

LONG = os.environ.get("MCP_MEMORY_LONG_TESTS") == "1"
_LONG_ONLY = [pytest.mark.slow, pytest.mark.skipif(not LONG, reason="long version: set MCP_MEMORY_LONG_TESTS=1")]
SIZES = [pytest.param(False, id="short"), pytest.param(True, id="long", marks=_LONG_ONLY)]
READY_TIMEOUT = 30.0

# A child that pays for the slow imports first and says so: a kill delay counted from "ready"
# lands in the indexing work itself, not in ``import lancedb``. After that it is exactly
# ``python -m mcp_memory <args>`` (the same ``cli.main``).
INDEX_CHILD = (
    "import sys, lancedb, tantivy; print('ready', flush=True); "
    "from mcp_memory.cli import main; sys.exit(main(sys.argv[1:]))"
)

# A child that stores and captures the ops of a JSON file, one after the other, until killed.
EDIT_CHILD = r"""
import json, sys
from mcp_memory.config import load_settings
from mcp_memory.memory import Memory
from mcp_memory.core.transcripts import Message
ws, ops_file = sys.argv[1], sys.argv[2]
ops = json.loads(open(ops_file, encoding="utf-8").read())
memory = Memory(load_settings(ws, overrides={"embedding.provider": "none"}, environ={}))
memory.open()
memory.sync()
print("ready", flush=True)
for kind, text in ops:
    if kind == "store":
        memory.store(text)
    else:
        memory.capture([Message("user", text)], session_key="crash-test")
print("done", flush=True)
"""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# ----- helpers -------------------------------------------------------------------------------------
_SYLLABLES = ["ka", "lo", "mi", "ver", "tas", "non", "qui", "zel", "bra", "dor", "fen", "gul", "hap", "jir",
              "mox", "pel", "rus", "sib", "tor", "wex", "yam", "cub", "nix", "os"]


def word(rng: random.Random) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4)))


def none_settings(ws: Path) -> Settings:
    return load_settings(ws, overrides={"embedding.provider": "none"}, environ={})


def start_servers(ws: Path, logdir: Path, count: int) -> list[ServerProcess]:
    """``count`` HTTP servers (watcher on, as users run them), started together."""
    servers = [ServerProcess(ws, logdir, "--transport", "http") for _ in range(count)]
    try:
        for server in servers:
            server.wait_listening()
    except BaseException:
        for server in servers:
            server.stop()
        raise
    return servers


async def call(client: Client, tool: str, args: dict[str, Any], timeout: float = 60) -> Any:
    with anyio.fail_after(timeout):
        return await client.call_tool(tool, args)


async def search(client: Client, query: str, **extra: Any) -> list[dict[str, Any]]:
    result = await call(client, "memory_search", {"query": query, **extra}, timeout=30)
    assert not result.is_error, (query, result.content)
    return result.structured_content["results"]


def memory_files(ws: Path) -> dict[str, str]:
    """Every memory file's text by workspace-relative path."""
    return {f.rel_path: read_text(f.abs_path) for f in Workspace(ws).list_files()}


def cited_text(ws: Path, hit: dict[str, Any]) -> str:
    lines = read_text(ws / hit["path"]).split("\n")
    return "\n".join(lines[hit["start_line"] - 1 : hit["end_line"]])


def first_line(snippet: str) -> str:
    for line in snippet.split("\n"):
        line = line.strip().strip("…").strip()
        if line:
            return line
    return ""


def assert_citations_hold(ws: Path, hits: list[dict[str, Any]], context: str) -> None:
    """Every hit names an existing file whose cited lines hold the snippet's first line."""
    for hit in hits:
        path = ws / hit["path"]
        assert path.is_file(), f"{context}: hit points at a missing file: {hit['citation']}"
        assert hit["citation"] == f"{hit['path']}#L{hit['start_line']}-L{hit['end_line']}", hit
        text = cited_text(ws, hit)
        assert first_line(hit["snippet"]) in text, (
            f"{context}: {hit['citation']} does not hold {first_line(hit['snippet'])!r}; the lines are {text!r}")


def expected_chunks(settings: Settings) -> dict[str, list[Any]]:
    """What a correct index holds: each memory file's chunks, computed from the files as they are."""
    c = settings.chunking
    out = {}
    for f in Workspace(settings.workspace, settings.extra_paths).list_files():
        data = f.abs_path.read_bytes()
        text = read_text(f.abs_path) if data else ""
        out[f.rel_path] = chunk_markdown(text, f.rel_path, f.date, c.tokens, c.overlap)
    return out


def assert_index_matches_files(ws: Path) -> int:
    """LanceDB rows, Tantivy docs and state rows are exactly the chunks of the files: no duplicate, no orphan."""
    settings = none_settings(ws)
    chunks = expected_chunks(settings)
    want_ids = Counter(c.id for file_chunks in chunks.values() for c in file_chunks)
    total = sum(len(v) for v in chunks.values())

    state = IndexState(settings.index_dir / "state.sqlite")
    try:
        files = state.files()
    finally:
        state.close()
    assert set(files) == set(chunks), f"state rows {sorted(set(files) ^ set(chunks))} differ from the files"
    wrong = {p: (s.chunks, len(chunks[p])) for p, s in files.items() if s.chunks != len(chunks[p])}
    assert not wrong, f"state chunk counts differ (state, files): {wrong}"

    rows = VectorStore(settings.vector_uri, 0).to_arrow()
    ids = Counter(rows.column("id").to_pylist())
    duplicates = {i: n for i, n in ids.items() if n > 1 and n > want_ids.get(i, 0)}
    assert not duplicates, f"duplicate LanceDB rows: {len(duplicates)} ids, e.g. {list(duplicates.items())[:3]}"
    orphans = set(rows.column("path").to_pylist()) - set(chunks)
    assert not orphans, f"LanceDB rows of paths that are not memory files: {sorted(orphans)[:5]}"
    assert ids == want_ids, (f"LanceDB ids differ from the files' chunks: {sum((ids - want_ids).values())} extra, "
                             f"{sum((want_ids - ids).values())} missing")

    keywords = KeywordIndex(settings.index_dir / "tantivy")
    assert keywords.count() == total, f"Tantivy holds {keywords.count()} docs, the files have {total} chunks"
    assert keywords.all_paths() <= set(chunks), keywords.all_paths() - set(chunks)
    return total


def assert_status_consistent(ws: Path) -> dict[str, Any]:
    """``python -m mcp_memory status --json``: every file indexed, chunk counts that match the files."""
    result = subprocess.run(
        [sys.executable, "-m", "mcp_memory", "status", "--json", "--embedder", "none", "-w", str(ws)],
        capture_output=True, text=True, timeout=60, env=server_env(),
    )
    assert result.returncode == 0, result.stderr
    status = json.loads(result.stdout)
    total = sum(len(v) for v in expected_chunks(none_settings(ws)).values())
    assert status["indexed_files"] == status["files"] == len(memory_files(ws)), status
    assert status["chunks"] == status["keyword_docs"] == total, (status, total)
    return status


def reindex(ws: Path) -> None:
    """The next start after a crash: sync and embed to completion."""
    with Memory(none_settings(ws)) as memory:
        memory.index()


def kill9(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)


# ----- 1. many processes, one workspace ------------------------------------------------------------
def store_text(server: int, i: int, rng: random.Random) -> str:
    # A unique token per memory (u<server>x<i>q) plus distinct made-up words: no two are near-duplicates.
    return f"Note u{server}x{i}q: the {word(rng)} {word(rng)} runs on {word(rng)} {word(rng)}"


@pytest.mark.anyio
@pytest.mark.parametrize("long", SIZES)
async def test_three_servers_and_an_indexer_share_one_workspace(tmp_path: Path, long: bool) -> None:
    n = 100 if long else 20
    ws = tmp_path / "ws"
    (ws / "memory" / "projects").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n\n- The user prefers tea over coffee.\n", encoding="utf-8")
    (ws / "memory" / "projects" / "atlas.md").write_text("# Atlas\n\n- Atlas ships on Fridays.\n", encoding="utf-8")
    rng = random.Random(7)
    texts = {s: [store_text(s, i, rng) for i in range(n)] for s in range(3)}

    servers = start_servers(ws, tmp_path, 3)
    indexer = None
    try:
        results: dict[tuple[int, int], Any] = {}
        ready: list[int] = []  # servers whose engine is open: the stores and the indexer start together

        async def one_server(s: int) -> None:
            async with Client(servers[s].url) as client:
                await call(client, "memory_status", {}, timeout=READY_TIMEOUT * 2)  # the engine is open

                async def store(i: int) -> None:
                    results[(s, i)] = await call(client, "memory_store", {"text": texts[s][i]}, timeout=120)

                ready.append(s)
                while len(ready) < 3:
                    await anyio.sleep(0.01)
                async with anyio.create_task_group() as tg:
                    for i in range(n):
                        tg.start_soon(store, i)

        async with anyio.create_task_group() as tg:
            for s in range(3):
                tg.start_soon(one_server, s)

            async def start_indexer() -> None:
                nonlocal indexer
                while len(ready) < 3:
                    await anyio.sleep(0.01)
                indexer = subprocess.Popen(
                    [sys.executable, "-m", "mcp_memory", "index", "--embedder", "none", "-q", "-w", str(ws)],
                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                    env=server_env(),
                )

            tg.start_soon(start_indexer)
        last_store = time.monotonic()

        errors = {k: r.content for k, r in results.items() if r.is_error}
        assert not errors, f"{len(errors)} stores failed, e.g. {list(errors.items())[:3]}"
        assert len(results) == 3 * n
        assert all(r.structured_content["stored"] for r in results.values())

        # Every memory line is in the markdown exactly once, at the line the store reported.
        files = memory_files(ws)
        lines = Counter(line for text in files.values() for line in text.split("\n"))
        for (s, i), result in results.items():
            line = f"- {texts[s][i]}"
            assert lines[line] == 1, (line, lines[line])
            got = result.structured_content
            assert files[got["path"]].split("\n")[got["line"] - 1] == line, got

        # Every server finds every memory, within 2 s of the last store.
        async def all_found(s: int) -> None:
            pending = {(t, i) for t in range(3) for i in range(n)}
            async with Client(servers[s].url) as client:
                while True:
                    found: set[tuple[int, int]] = set()

                    async def look(key: tuple[int, int]) -> None:
                        hits = await search(client, f"u{key[0]}x{key[1]}q")
                        if any(texts[key[0]][key[1]] in cited_text(ws, h) for h in hits):
                            found.add(key)  # noqa: B023 - look runs within this iteration's task group

                    async with anyio.create_task_group() as tg:
                        for key in sorted(pending):
                            tg.start_soon(look, key)
                    pending -= found
                    if not pending:
                        return
                    assert time.monotonic() - last_store < 2.0, (
                        f"server {s} does not find {len(pending)} memories 2 s after the last store, "
                        f"e.g. {sorted(pending)[:5]}")
                    await anyio.sleep(0.1)

        async with anyio.create_task_group() as tg:
            for s in range(3):
                tg.start_soon(all_found, s)

        assert indexer is not None
        _, err = indexer.communicate(timeout=120)
        assert indexer.returncode == 0, err
        assert "error" not in err.lower(), err
    finally:
        if indexer is not None and indexer.poll() is None:
            indexer.kill()
            indexer.wait(5)
        for server in servers:
            server.stop()
    for server in servers:
        log = server.output()
        assert "Traceback" not in log and "Timeout" not in log and "locked" not in log, log[-3000:]

    assert_status_consistent(ws)
    assert_index_matches_files(ws)
    with Memory(none_settings(ws)) as memory:
        for s in range(3):
            for i in range(n):
                text = texts[s][i]
                hits = memory.search(f"u{s}x{i}q")
                holding = [h for h in hits if text in cited_text(ws, h.to_dict())]
                assert holding, (text, [h.citation for h in hits])
                # One line in one file, however many overlapping chunks cite it.
                where = {(h.path, h.start_line + cited_text(ws, h.to_dict()).split("\n").index(f"- {text}"))
                         for h in holding}
                assert len(where) == 1, (text, where)
                assert len({h.citation for h in hits}) == len(hits), [h.citation for h in hits]


# ----- 2. hand edits while serving -----------------------------------------------------------------
HAND_FILES = {
    "MEMORY.md": "# Memory\n\n- The user prefers tea; shared note alpha.\n",
    "memory/topics/rewrite.md": "# Rewrite\n\n- Old fact: the rewritetok service runs grolnax, shared note.\n",
    "memory/topics/rename.md": "# Rename\n\n- The renametok build uses pnpm, shared note.\n",
    "memory/topics/delete.md": "# Delete\n\n- The deletetok cluster lives in Oslo, shared note.\n",
    "memory/2026-11-20.md": "# 2026-11-20\n\n- Deployed truncatetok to staging, shared note.\n",
}


@pytest.mark.anyio
async def test_hand_edits_while_serving_keep_citations_true(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    for rel, text in HAND_FILES.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text, encoding="utf-8")
    (server,) = start_servers(ws, tmp_path, 1)
    queries = ["shared note", "rewritetok", "grolnax", "freshtok", "renametok", "deletetok", "truncatetok", "tea"]

    async def check_all(client: Client, context: str) -> None:
        for q in queries:
            assert_citations_hold(ws, await search(client, q, max_results=20), f"{context} / {q!r}")

    async def wait_until(client: Client, context: str, done: Any) -> None:
        deadline = time.monotonic() + 10
        while True:
            hits = {q: await search(client, q, max_results=20) for q in queries}
            if done(hits):
                break
            assert time.monotonic() < deadline, f"{context}: not seen within 10 s: " + json.dumps(
                {q: [h["citation"] for h in v] for q, v in hits.items()})
            await anyio.sleep(0.2)
        await check_all(client, context)

    def paths(hits: list[dict[str, Any]]) -> set[str]:
        return {h["path"] for h in hits}

    try:
        async with Client(server.url) as client:
            await call(client, "memory_status", {}, timeout=READY_TIMEOUT * 2)
            await check_all(client, "start")
            assert paths(await search(client, "rewritetok")) == {"memory/topics/rewrite.md"}

            # Rewrite: the old text goes, the new text is found at its new lines (shifted down by 4).
            (ws / "memory/topics/rewrite.md").write_text(
                "# Rewrite\n\nIntro line one.\n\nIntro line two.\n\n"
                "- New fact: the freshtok service runs on Mondays, shared note.\n", encoding="utf-8")
            await wait_until(client, "rewrite", lambda h: not h["grolnax"] and not h["rewritetok"]
                             and paths(h["freshtok"]) == {"memory/topics/rewrite.md"})

            # Rename: the text is found under the new name only.
            os.rename(ws / "memory/topics/rename.md", ws / "memory/topics/renamed.md")
            await wait_until(client, "rename", lambda h: paths(h["renametok"]) == {"memory/topics/renamed.md"}
                             and "memory/topics/rename.md" not in paths(h["shared note"]))

            # Delete: nothing points at the deleted file any more.
            (ws / "memory/topics/delete.md").unlink()
            await wait_until(client, "delete", lambda h: not h["deletetok"]
                             and "memory/topics/delete.md" not in paths(h["shared note"]))

            # Truncate to 0 bytes: the file still exists but holds nothing to find.
            (ws / "memory/2026-11-20.md").write_bytes(b"")
            await wait_until(client, "truncate", lambda h: not h["truncatetok"]
                             and "memory/2026-11-20.md" not in paths(h["shared note"]))
            assert paths(await search(client, "shared note", max_results=20)) == {
                "MEMORY.md", "memory/topics/rewrite.md", "memory/topics/renamed.md"}
    finally:
        server.stop()
    assert "Traceback" not in server.output(), server.output()[-3000:]
    assert_index_matches_files(ws)


# ----- 3a. kill -9 during indexing -----------------------------------------------------------------
def make_big_workspace(ws: Path, rng: random.Random, files: int = 200) -> None:
    """~200 files, ~1.3 MB: daily logs and topic files of bullets, each with unique tokens."""
    for i in range(files):
        write_big_file(ws, i, rng, 0)


def big_file_path(i: int) -> str:
    return f"memory/2025-{1 + i % 12:02d}-{1 + i % 28:02d}-n{i}.md" if i % 2 else f"memory/topics/t{i}.md"


def write_big_file(ws: Path, i: int, rng: random.Random, version: int) -> None:
    lines = [f"# Topic {i}", ""]
    for s in range(3):
        lines += [f"## Section {s}", ""]
        for p in range(rng.randint(12, 18)):
            lines.append("- " + " ".join(word(rng) for _ in range(rng.randint(8, 16))) + f" f{i}v{version}s{s}p{p}")
        lines.append("")
    path = ws / big_file_path(i)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines), encoding="utf-8")


def mutate(ws: Path, rng: random.Random, round_: int, alive: set[int], next_id: list[int]) -> None:
    """Change ~25 files, delete 4, add 4: work for an incremental index run."""
    for i in rng.sample(sorted(alive), 25):
        write_big_file(ws, i, rng, round_)
    for i in rng.sample(sorted(alive), 4):
        (ws / big_file_path(i)).unlink()
        alive.discard(i)
    for _ in range(4):
        write_big_file(ws, next_id[0], rng, round_)
        alive.add(next_id[0])
        next_id[0] += 1


@pytest.mark.parametrize("long", SIZES)
def test_kill_9_during_indexing_leaves_no_duplicates_or_orphans(tmp_path: Path, long: bool) -> None:
    rounds = 20 if long else 4
    rng = random.Random(11)
    ws = tmp_path / "ws"
    make_big_workspace(ws, rng)
    size = sum(p.stat().st_size for p in ws.rglob("*.md"))
    assert 1_000_000 <= size <= 2_000_000, size
    alive, next_id = set(range(200)), [200]
    # Kill delays are drawn from 0.05-1.5 s after the imports; a kind of run (full build,
    # incremental) that ends sooner gets its range cut to the time it took, and is tried again.
    longest = {"full": 1.5, "incremental": 1.5}
    killed = attempts = 0
    while killed < rounds:
        attempts += 1
        assert attempts <= rounds * 4, f"only {killed} of {attempts - 1} index runs were killed before they ended"
        kind = "full" if killed % 2 == 0 else "incremental"
        if kind == "full":
            shutil.rmtree(ws / ".mcp-memory", ignore_errors=True)
        else:
            mutate(ws, rng, attempts, alive, next_id)
        proc = subprocess.Popen(
            [sys.executable, "-c", INDEX_CHILD, "index", "--embedder", "none", "-q", "-w", str(ws)],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=server_env(),
        )
        try:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready", proc.stderr
            started = time.monotonic()
            delay = rng.uniform(0.05, max(0.06, longest[kind]))
            while time.monotonic() - started < delay and proc.poll() is None:
                time.sleep(0.005)
            if proc.poll() is None:
                killed += 1
            else:
                assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
                longest[kind] = min(longest[kind], (time.monotonic() - started) * 0.9)
        finally:
            kill9(proc)
        reindex(ws)  # then index again, to completion
        assert_index_matches_files(ws)
    status = assert_status_consistent(ws)
    assert status["files"] == len(alive)
    # Every file's unique token is found, in that file only, with citations that hold it.
    with Memory(none_settings(ws)) as memory:
        for i in rng.sample(sorted(alive), 20):
            text = read_text(ws / big_file_path(i))
            token = re.findall(r"f\d+v\d+s0p0", text)[0]
            hits = memory.search(token, max_results=10)
            assert hits and {h.path for h in hits} == {big_file_path(i)}, (token, [h.citation for h in hits])
            assert any(token in cited_text(ws, h.to_dict()) for h in hits)


def test_tantivy_commit_killed_after_its_delete_file(tmp_path: Path) -> None:
    """The exact state a kill -9 leaves when it lands inside a Tantivy commit, built without timing luck.

    Order of one sync batch: LanceDB rows replaced, then Tantivy writes the new segment and the
    ``.del`` file of the segment that loses documents, then its ``meta.json``, then state.sqlite.
    A kill before ``meta.json`` leaves LanceDB new, Tantivy's meta old plus the new files, state old.
    """
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    for i in range(5):
        (ws / "memory" / f"t{i}.md").write_text(f"# T{i}\n\n- Note {i} about alpha.\n", encoding="utf-8")
    reindex(ws)
    tantivy = ws / ".mcp-memory" / "tantivy"
    before = tmp_path / "tantivy-before"
    shutil.copytree(tantivy, before)
    state = IndexState(ws / ".mcp-memory" / "state.sqlite")
    old_row = state.files()["memory/t1.md"]
    (ws / "memory" / "t1.md").write_text("# T1\n\n- Note 1 changed to beta.\n", encoding="utf-8")
    with Memory(none_settings(ws)) as memory:
        memory.sync()
    written = {p.name: p.read_bytes() for p in tantivy.iterdir() if not (before / p.name).exists()}
    assert any(name.endswith(".del") for name in written), sorted(written)
    # Roll back what the kill prevented: Tantivy's meta.json and the file's state row.
    shutil.rmtree(tantivy)
    shutil.copytree(before, tantivy)
    for name, data in written.items():
        (tantivy / name).write_bytes(data)
    state.record_files([old_row], [])
    state.close()

    for _ in range(2):  # every later run must redo the change (it failed the same way each time)
        result = subprocess.run(
            [sys.executable, "-m", "mcp_memory", "index", "--embedder", "none", "-q", "-w", str(ws)],
            capture_output=True, text=True, timeout=60, env=server_env(),
        )
        assert result.returncode == 0, result.stderr
    assert_index_matches_files(ws)
    with Memory(none_settings(ws)) as memory:
        assert [h.path for h in memory.search("beta")] == ["memory/t1.md"]


# ----- 3b. kill -9 during stores and captures ----------------------------------------------------------
_CAPTURED = re.compile(r"^- \[preference\] The user prefers (\w+) over (\w+) for the (k\d+c) builds "
                       r"\(\d{4}-\d{2}-\d{2}\)$")
_HEADINGS = re.compile(r"^(# Memory|- The user prefers tea\.|# \d{4}-\d{2}-\d{2}|"
                       r"## \d{2}:\d{2} captured \(session crash-test\))$")


def edit_ops(start: int, count: int, rng: random.Random) -> list[tuple[str, str]]:
    ops = []
    for k in range(start, start + count):
        if k % 3 == 2:
            ops.append(("capture", f"I prefer {word(rng)}{k} over {word(rng)}{k} for the k{k}c builds."))
        else:
            ops.append(("store", f"Stored note k{k}s: the {word(rng)} {word(rng)} sits beside {word(rng)}"))
    return ops


def check_edited_markdown(ws: Path, ops: dict[str, tuple[str, str]]) -> list[tuple[str, str]]:
    """Every line complete and written once; returns (token, line) of every memory found."""
    seen: Counter[str] = Counter()
    memories = []
    for rel, text in memory_files(ws).items():
        assert text.endswith("\n"), f"{rel} ends in a partial line: {text[-80:]!r}"
        for line in text.split("\n")[:-1]:
            if not line or _HEADINGS.match(line):
                continue
            seen[line] += 1
            captured = _CAPTURED.match(line)
            if captured:
                token = captured[3]
                kind, message = ops.get(token, ("", ""))
                assert kind == "capture" and message == (
                    f"I prefer {captured[1]} over {captured[2]} for the {token} builds."), (rel, line)
            else:
                store = re.match(r"^- Stored note (k\d+s): ", line)
                assert store, f"{rel}: a line nobody wrote (partial or garbled): {line!r}"
                token = store[1]
                assert ops.get(token) == ("store", line[2:]), (rel, line)
            memories.append((token, line))
    doubled = {line: n for line, n in seen.items() if n > 1}
    assert not doubled, f"lines written twice: {doubled}"
    return memories


@pytest.mark.parametrize("long", SIZES)
def test_kill_9_during_stores_and_captures(tmp_path: Path, long: bool) -> None:
    rounds = 20 if long else 4
    rng = random.Random(23)
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n\n- The user prefers tea.\n", encoding="utf-8")
    ops: dict[str, tuple[str, str]] = {}
    for round_ in range(rounds):
        batch = edit_ops(round_ * 1000, 1000, rng)
        for k, op in enumerate(batch, round_ * 1000):
            ops[f"k{k}{'c' if op[0] == 'capture' else 's'}"] = op
        ops_file = tmp_path / f"ops-{round_}.json"
        ops_file.write_text(json.dumps(batch), encoding="utf-8")
        proc = subprocess.Popen([sys.executable, "-c", EDIT_CHILD, str(ws), str(ops_file)],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=server_env())
        try:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready", proc.stderr
            time.sleep(rng.uniform(0.05, 1.5))
            assert proc.poll() is None, f"the edit loop ended early: {proc.stderr.read() if proc.stderr else ''}"
        finally:
            kill9(proc)
        memories = check_edited_markdown(ws, ops)
        # The next start repairs the index: no duplicate or orphan rows, every memory found where it is.
        reindex(ws)
        with Memory(none_settings(ws)) as memory:
            for token, line in memories[-40:]:
                hits = memory.search(token, max_results=10)
                assert any(line in cited_text(ws, h.to_dict()).split("\n") for h in hits), (
                    token, [h.citation for h in hits])
        assert_index_matches_files(ws)
    assert any(token.endswith("c") for token, _ in memories), "no capture landed"


# ----- 4. a deleted or corrupted index folder under a running server --------------------------------
def damage_lance(ws: Path) -> None:
    shutil.rmtree(ws / ".mcp-memory" / "lance")


def damage_tantivy(ws: Path) -> None:
    (ws / ".mcp-memory" / "tantivy" / "meta.json").write_text("garbage {{{ not json", encoding="utf-8")


DAMAGE = {"lance-deleted": damage_lance, "tantivy-meta-garbage": damage_tantivy}


def small_workspace(ws: Path) -> None:
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n\n- The user likes glorbix tea.\n", encoding="utf-8")
    (ws / "memory" / "2026-11-01.md").write_text("# 2026-11-01\n\n- Deployed the quarnel service.\n",
                                                 encoding="utf-8")


def paths_of(hits: list[dict[str, Any]]) -> set[str]:
    return {h["path"] for h in hits}


async def damage_while_serving(client: Client, ws: Path, damage: str) -> Any:
    """Damage the index under a serving server, then make it look again; returns the status call's result."""
    assert paths_of(await search(client, "glorbix")) == {"MEMORY.md"}
    DAMAGE[damage](ws)
    assert paths_of(await search(client, "glorbix")) <= {"MEMORY.md"}  # answers, from the snapshot in memory
    # A hand edit and a status call make the server look at the index again.
    (ws / "memory" / "2026-11-02.md").write_text("# 2026-11-02\n\n- Hand edit flomp.\n", encoding="utf-8")
    return await call(client, "memory_status", {}, timeout=15)


@pytest.mark.anyio
@pytest.mark.parametrize("damage", sorted(DAMAGE))
async def test_search_keeps_answering_when_the_index_folder_is_damaged(tmp_path: Path, damage: str) -> None:
    """Observed: searches answer from the snapshot held in memory (the memories are still found)."""
    ws = tmp_path / "ws"
    small_workspace(ws)
    (server,) = start_servers(ws, tmp_path, 1)
    try:
        async with Client(server.url) as client:
            await damage_while_serving(client, ws, damage)
            deadline = time.monotonic() + 2.5
            while time.monotonic() < deadline:
                for q in ("glorbix", "quarnel", "flomp"):
                    hits = await search(client, q)  # answers (never an error, never a hang)
                    assert_citations_hold(ws, hits, f"{damage} / {q}")
                await anyio.sleep(0.2)
            assert server.proc.poll() is None, server.output()[-3000:]
    finally:
        server.stop()


@pytest.mark.anyio
@pytest.mark.parametrize("damage", sorted(DAMAGE))
async def test_damaged_index_folder_is_rebuilt_under_a_running_server(tmp_path: Path, damage: str) -> None:
    ws = tmp_path / "ws"
    small_workspace(ws)
    (server,) = start_servers(ws, tmp_path, 1)
    try:
        async with Client(server.url) as client:
            status = await damage_while_serving(client, ws, damage)
            assert not status.is_error, status.content
            deadline = time.monotonic() + 15
            while True:
                found = {q: paths_of(await search(client, q)) for q in ("glorbix", "quarnel", "flomp")}
                if found == {"glorbix": {"MEMORY.md"}, "quarnel": {"memory/2026-11-01.md"},
                             "flomp": {"memory/2026-11-02.md"}}:
                    break
                assert time.monotonic() < deadline, f"not rebuilt within 15 s: {found}"
                await anyio.sleep(0.3)
            stored = await call(client, "memory_store", {"text": "The user owns a cat named Snibbet"})
            assert not stored.is_error, stored.content
            assert paths_of(await search(client, "snibbet")) == {f"memory/{dt.date.today().isoformat()}.md"}
    finally:
        server.stop()
    assert_index_matches_files(ws)


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_damaged_index_folder_is_rebuilt_by_the_next_start(tmp_path: Path, damage: str) -> None:
    ws = tmp_path / "ws"
    small_workspace(ws)
    reindex(ws)
    DAMAGE[damage](ws)
    assert_status_consistent(ws)  # `status` syncs first: the index is whole again
    assert_index_matches_files(ws)
    with Memory(none_settings(ws)) as memory:
        assert [h.path for h in memory.search("glorbix")] == ["MEMORY.md"]
        assert [h.path for h in memory.search("quarnel")] == ["memory/2026-11-01.md"]
