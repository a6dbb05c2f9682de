"""A store's new rows reach the index with their vectors in one write, and a failed embedding loses nothing.

``Editor.embed_ahead`` embeds the edited file's chunks into the embedding cache before the sync,
so the sync writes the new rows with their vectors instead of writing them bare and filling the
vectors in with a second table write. These tests check what a caller sees: the stored line is
found by meaning right after ``store`` returns, the table is written once, and when the
embedding fails the line is still stored and found by its words.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np

from conftest import HashEmbedder, write
from mcp_memory.embedding import EmbeddingError
from mcp_memory.memory import Memory

DAY = dt.date(2026, 11, 26)


class _FailingOnce(HashEmbedder):
    """Fails the first batch holding a chunk of the daily file (the store's own line is embedded
    alone for its duplicate check), as an embedding endpoint that is briefly down."""

    def __init__(self) -> None:
        super().__init__()
        self.armed = False  # True: the next such batch fails
        self.failed = False

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        if self.armed and any("PostgreSQL 16" in t for t in texts):
            self.armed, self.failed = False, True
            raise EmbeddingError("endpoint down")
        return super().embed_documents(texts)


def _seeded(workspace: Path, settings, embedder: HashEmbedder) -> Memory:
    write(workspace, "MEMORY.md", "# Memory\n\n- The user's cat is named Miso.\n")
    write(workspace, "memory/2026-11-26.md", "# 2026-11-26\n\n- The billing service runs on PostgreSQL 16.\n")
    memory = Memory(settings, embedder=embedder)
    memory.index()
    return memory


def test_a_stored_line_is_written_with_its_vector_in_one_table_write(workspace, settings):
    memory = _seeded(workspace, settings, HashEmbedder())
    vector_writes: list[int] = []
    set_vectors = memory.engine.vectors.set_vectors

    def recording(rows, vectors):
        vector_writes.append(rows.num_rows)
        return set_vectors(rows, vectors)

    memory.engine.vectors.set_vectors = recording  # type: ignore[method-assign]
    result = memory.store("The deploy script lives in tools/ship.sh", today=DAY)

    assert result.stored
    assert vector_writes == []  # the sync wrote the rows with their vectors: no second write
    assert memory.engine.vectors.count("vector IS NULL") == 0
    hits = memory.search("deploy script ship", today=DAY)
    assert hits[0].path == "memory/2026-11-26.md"
    assert "tools/ship.sh" in hits[0].snippet
    assert hits[0].vector_similarity is not None  # found by meaning too, not only by its words
    memory.close()


def test_a_store_whose_embedding_fails_ahead_is_still_written_and_found(workspace, settings):
    embedder = _FailingOnce()
    memory = _seeded(workspace, settings, embedder)
    embedder.armed = True  # the index above embedded fine; the chunk embedded ahead of the sync fails

    result = memory.store("The release train leaves every second Tuesday", today=DAY)

    assert result.stored
    assert embedder.failed
    text = (workspace / "memory/2026-11-26.md").read_text(encoding="utf-8")
    assert "- The release train leaves every second Tuesday" in text.split("\n")
    # The backfill after the sync embedded what the failed attempt left out.
    assert memory.engine.vectors.count("vector IS NULL") == 0
    hits = memory.search("release train Tuesday", today=DAY)
    assert "every second Tuesday" in hits[0].snippet
    memory.close()


class _Recording(HashEmbedder):
    """Remembers every text it embeds."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        self.texts.extend(texts)
        return super().embed_documents(texts)


def test_a_store_embeds_only_the_lines_that_could_repeat_it(workspace, settings):
    """The duplicate check reads the lines of the chunks closest to the new text; at the default
    threshold (0.95) only those sharing a fifth of its words can repeat it, and only they are
    embedded. A near-repeat, or the same fact in capture's words, is still refused."""
    tea = "- The user drinks oolong tea every afternoon at the office."
    others = [f"- Sprint {n} retro: the user noted {topic} for the office team." for n, topic in enumerate(
        ["flaky tests", "slow builds", "late reviews", "noisy alerts", "long meetings", "unclear tickets",
         "missing docs", "stale branches", "broken dashboards", "vague goals", "on-call fatigue", "merge queues"])]
    write(workspace, "memory/2026-11-20.md", "# 2026-11-20\n\n" + "\n".join([*others, tea]) + "\n")
    embedder = _Recording()
    memory = Memory(settings, embedder=embedder)
    memory.index()
    embedder.texts.clear()

    result = memory.store("The user switched the office coffee machine to decaf beans.", today=DAY)
    assert result.stored
    compared = [t for t in embedder.texts if "Sprint" in t]
    assert compared == [], compared  # twelve lines of the same chunk, none sharing a fifth of the words

    repeat = memory.store("The user drinks oolong tea every afternoon at the office!", today=DAY)
    assert not repeat.stored and "oolong" in repeat.memory.text
    assert not memory.store("I drink oolong tea every afternoon at the office.", today=DAY).stored
