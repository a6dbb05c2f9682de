"""Concurrent stores in one process are written in groups, and each caller still gets its own answer.

A server answers many clients from worker threads. Stores that queue behind the edit lock are
written together by whichever thread holds it: one append per file, one sync, one embedding
pass. These tests drive ``Memory.store`` from many threads at once and check what each caller
and the files show.
"""

from __future__ import annotations

import datetime as dt
import threading
from pathlib import Path

import numpy as np

from conftest import HashEmbedder, write
from mcp_memory.memory import Memory, MemoryInputError, StoreResult

DAY = dt.date(2026, 11, 26)


def store_all(memory: Memory, calls: list[dict]) -> list[StoreResult | Exception]:
    """Run every ``store(**call)`` in its own thread, all released at once."""
    results: list[StoreResult | Exception] = [RuntimeError("not run")] * len(calls)
    barrier = threading.Barrier(len(calls))

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = memory.store(**calls[i])
        except Exception as exc:  # noqa: BLE001 - the test inspects it
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return results


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")


def seeded(workspace: Path, settings) -> Memory:
    write(workspace, "MEMORY.md", "# Memory\n\n- The user's cat is named Miso.\n")
    write(workspace, "memory/projects.md", "# Projects\n\nThe billing service runs on PostgreSQL 16.\n")
    memory = Memory(settings, embedder=HashEmbedder())
    memory.index()
    return memory


def test_concurrent_stores_are_grouped_and_each_lands_once_at_its_line(workspace, settings):
    memory = seeded(workspace, settings)
    syncs: list[set[str]] = []
    original = memory.engine.indexer.sync

    def counting_sync(progress=None, only=None):
        syncs.append(set(only or ()))
        return original(progress, only)

    memory.engine.indexer.sync = counting_sync
    calls = [{"text": f"Service number {i} is owned by team {chr(65 + i % 26)}{i} since sprint {i * 3}",
              "evergreen": i % 5 == 0, "today": DAY} for i in range(24)]
    results = store_all(memory, calls)

    assert all(isinstance(r, StoreResult) and r.stored for r in results), results
    for call, result in zip(calls, results, strict=True):
        path = workspace / result.memory.path
        file_lines = lines(path)
        assert file_lines[result.memory.line - 1] == f"- {call['text']}"
        assert sum(line == f"- {call['text']}" for line in file_lines) == 1
        assert result.memory.path == ("MEMORY.md" if call["evergreen"] else "memory/2026-11-26.md")
        hits = memory.search(call["text"], max_results=3)
        assert any(h.path == result.memory.path and h.start_line <= result.memory.line <= h.end_line for h in hits)
    assert len({(r.memory.path, r.memory.line) for r in results}) == 24
    # Grouped: far fewer index syncs than stores (one per group; the first store is alone).
    assert 1 < len(syncs) < 12, syncs
    memory.close()


def test_concurrent_repeats_write_one_line_and_all_cite_it(workspace, settings):
    memory = seeded(workspace, settings)
    calls = [{"text": text, "today": DAY} for text in
             ["Deploys happen on Tuesdays.", "deploys happen on tuesdays", "Deploys happen on Tuesdays!"] * 4]
    calls.append({"text": "The user's cat is named Miso", "today": DAY, "include_private": False})
    calls.append({"text": "Friday is the release freeze.", "today": DAY})
    results = store_all(memory, calls)

    assert all(isinstance(r, StoreResult) for r in results), results
    repeats = results[:12]
    assert sum(r.stored for r in repeats) == 1
    assert len({r.memory.citation for r in repeats}) == 1
    written = next(r for r in repeats if r.stored).memory
    assert all(r.memory.text == written.text for r in repeats)
    private = results[12]
    # Its duplicate is in MEMORY.md, which a shared caller may not know of: it is written to the daily file.
    assert private.stored and private.memory.path == "memory/2026-11-26.md"
    assert results[13].stored
    daily = lines(workspace / "memory/2026-11-26.md")
    assert sum("tuesdays" in line.lower() for line in daily) == 1
    assert sum("Miso" in line for line in daily) == 1
    memory.close()


def test_bad_input_in_a_crowd_fails_alone(workspace, settings):
    memory = seeded(workspace, settings)
    calls = [{"text": f"Queue worker {i} retries {i + 2} times before giving up", "today": DAY} for i in range(8)]
    calls.insert(3, {"text": "   ", "today": DAY})
    calls.insert(6, {"text": "The api key is sk-live-51HxQabcdefghijklmnopqrstuv", "today": DAY})
    results = store_all(memory, calls)

    assert isinstance(results[3], MemoryInputError) and "empty" in str(results[3])
    assert isinstance(results[6], MemoryInputError) and "secret" in str(results[6])
    good = [r for i, r in enumerate(results) if i not in (3, 6)]
    assert all(isinstance(r, StoreResult) and r.stored for r in good), good
    assert "sk-live" not in (workspace / "memory/2026-11-26.md").read_text(encoding="utf-8")
    memory.close()


class _CountingEmbedder(HashEmbedder):
    """Counts single-query and batched-query calls."""

    def __init__(self) -> None:
        super().__init__()
        self.single_queries: list[str] = []
        self.query_batches: list[int] = []

    def embed_query(self, text):
        self.single_queries.append(text)
        return super().embed_query(text)

    def embed_queries(self, texts):
        self.query_batches.append(len(texts))
        return np.stack([self._vector(t) for t in texts])


def test_a_group_checks_its_texts_for_duplicates_in_one_embedding_call(workspace, settings):
    write(workspace, "MEMORY.md", "# Memory\n\n- The user's cat is named Miso.\n")
    embedder = _CountingEmbedder()
    memory = Memory(settings, embedder=embedder)
    memory.index()
    texts = [f"Service number {i} is owned by team {chr(65 + i % 26)}{i} since sprint {i * 3}" for i in range(16)]
    # One of them repeats a memory already on file: the group's check still finds it.
    texts[7] = "the user's cat is named miso"
    results = store_all(memory, [{"text": t, "today": DAY} for t in texts])

    assert all(isinstance(r, StoreResult) for r in results), results
    assert not results[7].stored and results[7].memory.citation == "MEMORY.md#L3"
    assert sum(r.stored for r in results) == 15
    # The duplicate searches of every group larger than one came from batched calls: only the
    # lone first store (or a group of one) embedded its text as a single query.
    batched = sum(embedder.query_batches)
    assert embedder.query_batches and batched >= 10, embedder.query_batches
    assert len(set(embedder.single_queries) & set(texts)) <= len(texts) - batched, embedder.single_queries
    memory.close()
