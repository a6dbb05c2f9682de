"""Keeping the index in step with the files: incremental sync, rebuilds, crashes, concurrency.

Everything runs against the real LanceDB and Tantivy in temporary folders. ``HashEmbedder``
(see conftest) stands in for the model so that embedding is fast and countable.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import HashEmbedder, write
from mcp_memory.config import Settings, load_settings
from mcp_memory.embedding import EmbeddingError
from mcp_memory.index.state import IndexState
from mcp_memory.memory import Memory

DAILY = "memory/2026-11-20.md"
TOPIC = "memory/projects/database.md"


# ----- helpers ---------------------------------------------------------------------------------
def seed(ws: Path) -> None:
    write(ws, "MEMORY.md", "# Preferences\n\nThe user prefers pnpm over npm and yarn.\n")
    write(
        ws,
        DAILY,
        "# 2026-11-20\n\n## Morning\n\nDeployed the zebracorn service to staging.\n\n"
        "## Afternoon\n\nReviewed the quarterly budget with finance.\n",
    )
    write(ws, TOPIC, "# Database\n\nWe chose PostgreSQL as the main database.\n")


def texts_embedded(embedder: HashEmbedder) -> int:
    return sum(embedder.calls)


def paths_of(hits) -> list[str]:
    return [h.path for h in hits]


def assert_consistent(memory: Memory) -> None:
    """Store rows == keyword docs == chunks the state expects, and no chunk id twice."""
    memory.engine.vectors.refresh()
    memory.engine.keywords.reload()
    ids = memory.engine.vectors.to_arrow().column("id").to_pylist()
    expected = sum(f.chunks for f in memory.engine.state.files().values())
    assert len(ids) == len(set(ids)), "duplicate chunk ids in LanceDB"
    assert len(ids) == expected
    assert memory.engine.keywords.count() == expected
    assert memory.engine.vectors.paths() == set(memory.engine.state.files())
    assert memory.engine.keywords.all_paths() == set(memory.engine.state.files())


def settings_with_tokens(ws: Path, tokens: int) -> Settings:
    s = load_settings(ws, environ={})
    s.chunking.tokens = tokens
    return s


def bump_mtime(path: Path) -> None:
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))


def rewrite(path: Path, text: str) -> None:
    """Write new content and make sure the mtime moves even on coarse-mtime file systems."""
    before = path.stat().st_mtime_ns
    path.write_text(text, encoding="utf-8")
    if path.stat().st_mtime_ns == before:
        bump_mtime(path)


# ----- first sync, no-op sync -----------------------------------------------------------------
def test_first_sync_indexes_every_kind_of_file_and_keywords_work_before_embeddings(workspace, settings):
    seed(workspace)
    embedder = HashEmbedder()
    memory = Memory(settings, embedder=embedder)

    report = memory.sync()
    assert sorted(report.added) == sorted(["MEMORY.md", DAILY, TOPIC])
    assert report.changed == [] and report.removed == [] and report.skipped == {}
    assert report.rebuilt == ""
    assert embedder.calls == [], "sync must not embed"

    status = memory.status()
    assert status.files == 3
    assert status.indexed_files == 3
    assert status.chunks == report.chunks_written >= 4  # the daily file has three sections
    assert status.keyword_docs == status.chunks
    assert status.embedded_share == 0
    assert status.last_sync

    # keyword search is usable right after sync, before any vector exists
    hits = memory.search("zebracorn")
    assert hits and hits[0].path == DAILY
    assert "zebracorn" in hits[0].snippet
    assert memory.search("PostgreSQL")[0].path == TOPIC
    assert memory.search("pnpm")[0].path == "MEMORY.md"

    embedded = memory.backfill()
    assert embedded == status.chunks
    assert texts_embedded(embedder) == status.chunks
    status = memory.status()
    assert status.embedded_share == 1.0
    assert status.degraded == []
    assert_consistent(memory)


def test_second_sync_without_changes_touches_nothing_and_embeds_nothing(workspace, settings):
    seed(workspace)
    embedder = HashEmbedder()
    memory = Memory(settings, embedder=embedder)
    memory.index()
    calls = list(embedder.calls)
    version = memory.engine.vectors.version

    report = memory.sync()
    assert not report.touched
    assert report.added == report.changed == report.removed == []
    assert report.chunks_written == 0
    assert memory.backfill() == 0
    assert embedder.calls == calls
    assert memory.engine.vectors.version == version, "a no-op sync wrote to LanceDB"

    # a new process (new Memory) with the same settings also sees nothing to do
    other_embedder = HashEmbedder()
    other = Memory(settings, embedder=other_embedder)
    assert not other.sync().touched
    assert other.backfill() == 0
    assert other_embedder.calls == []


# ----- changes ---------------------------------------------------------------------------------
def test_changing_one_file_rechunks_only_that_file_with_correct_line_numbers(workspace, settings):
    seed(workspace)
    memory = Memory(settings, embedder=HashEmbedder())
    memory.index()
    assert memory.search("zebracorn")

    new_text = (
        "# 2026-11-20\n\n## Morning\n\nNothing special happened.\n\n"
        "## Afternoon\n\nReviewed the quarterly budget with finance.\n\n"
        "## Evening\n\nMigrated the quokkadrome cluster to Kubernetes.\nIt took two hours.\n"
    )
    rewrite(workspace / DAILY, new_text)
    report = memory.sync()
    assert report.changed == [DAILY]
    assert report.added == [] and report.removed == []
    assert report.chunks_written == 3

    # vector search always returns neighbours: "not found" means no hit holds the old text
    assert not any("zebracorn" in h.snippet for h in memory.search("zebracorn"))
    assert memory.engine.keywords.search("zebracorn", 10).hits == []
    # the changed chunks have no vector yet: the keyword match finds them anyway
    hits = [h for h in memory.search("quokkadrome") if "quokkadrome" in h.snippet]
    assert len(hits) == 1 and hits[0].path == DAILY
    top = hits[0]
    lines = new_text.split("\n")
    real_line = next(i for i, line in enumerate(lines, 1) if "quokkadrome" in line)
    assert top.start_line <= real_line <= top.end_line
    cited = memory.get(top.path, top.start_line, top.end_line - top.start_line + 1)
    assert "quokkadrome" in cited.text
    assert cited.text == "\n".join(lines[top.start_line - 1 : top.end_line])
    assert top.citation == f"{DAILY}#L{top.start_line}-L{top.end_line}"
    assert (top.start_line, top.end_line) == (11, 14)  # "## Evening" .. "It took two hours."

    memory.backfill()
    assert memory.status().embedded_share == 1.0
    assert memory.search("quokkadrome")[0].citation == top.citation
    assert_consistent(memory)


def test_deleted_file_hits_disappear(workspace, settings):
    seed(workspace)
    memory = Memory(settings, embedder=HashEmbedder())
    memory.index()
    assert TOPIC in paths_of(memory.search("PostgreSQL database"))

    (workspace / TOPIC).unlink()
    report = memory.sync()
    assert report.removed == [TOPIC]
    assert TOPIC not in paths_of(memory.search("PostgreSQL database"))
    assert all(h.path != TOPIC for h in memory.search("PostgreSQL"))
    assert memory.status().indexed_files == 2
    assert_consistent(memory)


def test_renamed_file_is_cited_by_its_new_path_only(workspace, settings):
    seed(workspace)
    memory = Memory(settings, embedder=HashEmbedder())
    memory.index()

    new_path = "memory/projects/storage.md"
    (workspace / TOPIC).rename(workspace / new_path)
    report = memory.sync()
    assert report.removed == [TOPIC]
    assert report.added == [new_path]
    memory.backfill()

    hits = memory.search("PostgreSQL main database")
    assert hits[0].path == new_path
    assert TOPIC not in paths_of(hits)
    assert all(not h.citation.startswith(TOPIC) for h in hits)
    assert_consistent(memory)


def test_touching_a_file_without_changing_it_is_not_a_change(workspace, settings):
    seed(workspace)
    embedder = HashEmbedder()
    memory = Memory(settings, embedder=embedder)
    memory.index()
    calls = list(embedder.calls)

    bump_mtime(workspace / DAILY)
    report = memory.sync()
    assert report.changed == [] and report.added == [] and not report.touched
    assert report.chunks_written == 0
    assert memory.backfill() == 0
    assert embedder.calls == calls
    # the new mtime was remembered: the next sync takes the fast path
    assert memory.engine.state.files()[DAILY].mtime_ns == (workspace / DAILY).stat().st_mtime_ns
    assert memory.search("zebracorn")[0].path == DAILY


# ----- fingerprint rebuilds and the embedding cache ---------------------------------------------
def test_fingerprint_change_rebuilds_and_reuses_cached_embeddings(workspace):
    for i in range(4):
        body = "\n".join(
            f"Line {j} of topic {i}: alpha{j} beta{i} gamma delta epsilon zeta eta theta iota kappa."
            for j in range(60)
        )
        write(workspace, f"memory/topic{i}.md", body + "\n")

    first = HashEmbedder()
    m400 = Memory(settings_with_tokens(workspace, 400), embedder=first)
    assert m400.index().rebuilt == ""
    chunks_400 = m400.status().chunks
    assert texts_embedded(first) == chunks_400
    assert m400.status().last_rebuild_reason is None
    m400.close()

    second = HashEmbedder()
    m200 = Memory(settings_with_tokens(workspace, 200), embedder=second)
    report = m200.sync()
    assert report.rebuilt, "a chunk size change must be reported as a rebuild"
    assert "chunk_tokens" in report.rebuilt
    status = m200.status()
    assert status.last_rebuild_reason == report.rebuilt
    assert status.fingerprint["chunk_tokens"] == 200
    chunks_200 = status.chunks
    assert chunks_200 > chunks_400
    assert status.keyword_docs == chunks_200
    m200.backfill()
    assert 0 < texts_embedded(second) <= chunks_200
    assert m200.status().embedded_share == 1.0
    assert_consistent(m200)
    m200.close()

    third = HashEmbedder()
    back = Memory(settings_with_tokens(workspace, 400), embedder=third)
    report = back.sync()
    assert report.rebuilt
    # every chunk of the 400-token layout was embedded before: the cache fills them all in
    assert back.status().embedded_share == 1.0
    assert back.backfill() == 0
    assert third.calls == []
    assert back.status().chunks == chunks_400
    assert back.status().last_rebuild_reason == report.rebuilt
    assert_consistent(back)
    assert back.search("alpha7 beta2")[0].path == "memory/topic2.md"


def test_deleting_the_index_folder_is_harmless(workspace, settings):
    seed(workspace)
    memory = Memory(settings, embedder=HashEmbedder())
    memory.index()
    chunks = memory.status().chunks
    memory.close()

    shutil.rmtree(settings.index_dir)
    assert not settings.index_dir.exists()

    fresh = Memory(settings, embedder=HashEmbedder())
    report = fresh.sync()
    assert sorted(report.added) == sorted(["MEMORY.md", DAILY, TOPIC])
    assert fresh.search("zebracorn")[0].path == DAILY
    fresh.backfill()
    status = fresh.status()
    assert status.chunks == chunks
    assert status.embedded_share == 1.0
    assert_consistent(fresh)


@pytest.mark.parametrize("part", ["tantivy", "lance", "state.sqlite"])
def test_losing_one_part_of_the_index_is_repaired_from_the_files_and_the_cache(workspace, settings, part):
    seed(workspace)
    memory = Memory(settings, embedder=HashEmbedder())
    memory.index()
    chunks = memory.status().chunks
    memory.close()

    target = settings.index_dir / part
    shutil.rmtree(target) if target.is_dir() else target.unlink()

    embedder = HashEmbedder()
    repaired = Memory(settings, embedder=embedder)
    report = repaired.sync()
    assert sorted(report.added) == sorted(["MEMORY.md", DAILY, TOPIC])
    status = repaired.status()
    assert status.chunks == status.keyword_docs == chunks
    assert status.embedded_share == 1.0  # vectors come back from the embedding cache
    assert repaired.backfill() == 0 and embedder.calls == []
    assert repaired.search("zebracorn")[0].path == DAILY
    assert_consistent(repaired)


# ----- crashes ------------------------------------------------------------------------------------
class CrashAfterFirstBatch(HashEmbedder):
    """Embeds one batch, then fails like an endpoint going down."""

    def embed_documents(self, texts):
        if self.calls:
            raise EmbeddingError("simulated crash after the first batch")
        return super().embed_documents(texts)


def test_interrupted_backfill_resumes_with_only_the_missing_chunks(workspace, settings):
    for i in range(30):
        write(workspace, f"memory/notes/n{i:02d}.md", f"# Note {i}\n\nFact number {i} about widget{i}.\n")
    crashing = CrashAfterFirstBatch()
    memory = Memory(settings, embedder=crashing)
    memory.sync()
    memory.backfill()  # stops after the first batch
    assert crashing.calls == [crashing.batch_size]
    status = memory.status()
    assert status.chunks == 30
    assert status.embedded_share == pytest.approx(crashing.batch_size / 30, abs=1e-3)
    assert any("embedding failed" in d for d in status.degraded)
    assert any("not embedded yet" in d for d in status.degraded)
    memory.close()

    working = HashEmbedder()
    resumed = Memory(settings, embedder=working)
    assert not resumed.sync().touched
    assert resumed.backfill() == 30 - crashing.batch_size
    assert texts_embedded(working) == 30 - crashing.batch_size
    status = resumed.status()
    assert status.embedded_share == 1.0
    table = resumed.engine.vectors.to_arrow()
    ids = table.column("id").to_pylist()
    assert len(ids) == len(set(ids)) == status.chunks == 30
    assert resumed.engine.keywords.count() == resumed.engine.vectors.count() == 30
    assert table.column("vector").null_count == 0
    # the vectors written before the crash are the right ones (same as a fresh embedding)
    vectors = np.stack(table.column("vector").to_pylist())
    expected = working.embed_documents(table.column("index_text").to_pylist())
    assert np.allclose(vectors, expected, atol=1e-6)
    assert_consistent(resumed)


def test_interrupted_sync_phase_one_leaves_no_duplicates(workspace, settings, monkeypatch):
    seed(workspace)
    memory = Memory(settings, embedder=HashEmbedder())
    memory.index()

    rewrite(workspace / TOPIC, "# Database\n\nWe moved from PostgreSQL to CockroachDB.\n\nMore later.\n")
    write(workspace, "memory/2026-11-21.md", "# 2026-11-21\n\nNew note about the yakshaver tool.\n")

    original = IndexState.record_files
    calls = {"n": 0}

    def crash_once(self, updated, removed):
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("simulated crash after the index writes")
        return original(self, updated, removed)

    monkeypatch.setattr(IndexState, "record_files", crash_once)
    with pytest.raises(RuntimeError, match="simulated crash"):
        memory.sync()
    # the index writes did happen before the crash, the state rows did not
    memory.engine.vectors.refresh()
    assert "memory/2026-11-21.md" in memory.engine.vectors.paths()
    assert "memory/2026-11-21.md" not in memory.engine.state.files()

    # next run, in a new process
    memory.close()
    again = Memory(settings, embedder=HashEmbedder())
    report = again.sync()
    assert "memory/2026-11-21.md" in report.added
    assert TOPIC in report.changed
    assert_consistent(again)
    hits = again.search("yakshaver")
    assert paths_of(hits).count("memory/2026-11-21.md") == 1
    assert paths_of(again.search("CockroachDB")).count(TOPIC) == 1
    assert not again.sync().touched


def test_orphan_rows_of_a_vanished_file_are_removed(workspace, settings):
    seed(workspace)
    write(workspace, "memory/ghost.md", "# Ghost\n\nThe phantasmagoria note.\n")
    memory = Memory(settings, embedder=HashEmbedder())
    memory.sync()
    assert memory.search("phantasmagoria")[0].path == "memory/ghost.md"

    # the file disappears and so does its state row (as after a crash mid-batch): only rows remain
    (workspace / "memory/ghost.md").unlink()
    memory.engine.state.record_files([], ["memory/ghost.md"])
    memory.engine.vectors.refresh()
    assert "memory/ghost.md" in memory.engine.vectors.paths()

    report = memory.sync()
    assert report.removed == ["memory/ghost.md"]
    assert memory.search("phantasmagoria") == []
    assert_consistent(memory)


def test_orphan_keyword_docs_missing_from_lancedb_are_removed(workspace, settings):
    seed(workspace)
    memory = Memory(settings, embedder=None)
    memory.sync()
    with memory.engine.keywords.writer() as writer:
        writer.add("f" * 32, "memory/phantom.md", "the phantom spectre note")
    assert memory.engine.keywords.count() == memory.engine.vectors.count() + 1

    report = memory.sync()
    assert report.removed == ["memory/phantom.md"]
    assert memory.engine.keywords.count() == memory.engine.vectors.count()
    assert "memory/phantom.md" not in memory.engine.keywords.all_paths()
    assert memory.search("spectre") == []
    assert_consistent(memory)


# ----- several processes --------------------------------------------------------------------------
def _sync_in_process(ws: str) -> None:
    m = Memory(load_settings(ws, environ={}), embedder=None)
    m.sync()
    m.close()


def test_processes_syncing_the_same_workspace_at_once(workspace):
    rels = {}
    for i in range(60):
        rel = f"memory/2026-{1 + i % 9:02d}-{10 + i % 18:02d}-n{i}.md" if i % 2 else f"memory/topics/t{i}.md"
        rels[i] = rel
        write(workspace, rel, "\n\n".join(f"# Heading {j}\n\nnote {i} part {j} about subject{i}" for j in range(4)))

    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_sync_in_process, args=(str(workspace),)) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(90)
    assert [p.exitcode for p in procs] == [0, 0, 0]

    memory = Memory(load_settings(workspace, environ={}), embedder=None)
    report = memory.sync()
    assert not report.touched, report
    status = memory.status()
    assert status.indexed_files == status.files == 60
    assert status.chunks == status.keyword_docs == 60 * 4
    assert_consistent(memory)
    hits = memory.search("subject17", max_results=10)
    assert {h.path for h in hits if "subject17" in h.snippet} == {rels[17]}
    assert hits[0].path == rels[17]


# ----- awkward files ------------------------------------------------------------------------------
def test_binary_files_are_skipped_and_damaged_text_is_indexed(workspace, settings):
    seed(workspace)
    (workspace / "memory/latin1.md").write_bytes("Caf\xe9 cr\xe8me br\xfbl\xe9e\nThe quokkapilot ships Fridays\n"
                                                 .encode("latin-1"))
    (workspace / "memory/blob.md").write_bytes(b"PNG\x00\x01\x02binary\x00stuff\n")
    memory = Memory(settings, embedder=None)
    report = memory.sync()
    assert set(report.skipped) == {"memory/blob.md"}
    assert "binary" in report.skipped["memory/blob.md"]
    assert sorted(report.added) == sorted(["MEMORY.md", DAILY, TOPIC, "memory/latin1.md"])
    assert memory.search("zebracorn")[0].path == DAILY
    assert memory.search("quokkapilot")[0].path == "memory/latin1.md"
    assert memory.search("binary stuff") == []
    status = memory.status()
    assert status.files == 5 and status.indexed_files == 4
    assert_consistent(memory)


def test_a_20_mb_markdown_file_is_indexed(workspace, settings):
    lines: list[str] = []
    size = i = 0
    while size < 20 * 1024 * 1024:
        line = f"Entry {i}: the quick brown fox jumps over the lazy dog, log value {i * 7919 % 100003}."
        lines.append(line)
        size += len(line) + 1
        i += 1
        if i % 60 == 0:
            lines += ["", f"## Section {i}", ""]
    lines.append("The closing phrase is quartzite halcyon marmalade.")
    path = write(workspace, "memory/huge.md", "\n".join(lines) + "\n")
    assert path.stat().st_size >= 20 * 1024 * 1024

    started = time.monotonic()
    memory = Memory(settings, embedder=None)
    report = memory.sync()
    hits = memory.search("quartzite halcyon marmalade")
    elapsed = time.monotonic() - started

    assert report.added == ["memory/huge.md"] and report.skipped == {}
    assert hits and hits[0].path == "memory/huge.md"
    assert hits[0].end_line == len(lines)
    assert "quartzite halcyon marmalade" in hits[0].snippet
    status = memory.status()
    assert status.chunks == status.keyword_docs == report.chunks_written > 10_000
    assert elapsed < 60, f"indexing 20 MB took {elapsed:.1f}s"


# Chunk ids are sha256(path, start_line, end_line, index_text): the pieces of one overlong line
# all cite that line, so identical pieces get identical ids. LanceDB then holds duplicate ids and
# backfill's merge_insert("id") fails with "Ambiguous merge inserts are prohibited".
def test_long_line_of_repeated_text_gets_unique_ids_and_embeds(workspace, settings):
    write(workspace, "memory/laugh.md", "# Laughter\n\n" + "ha " * 5000 + "\n")
    memory = Memory(settings, embedder=HashEmbedder())
    memory.sync()
    ids = memory.engine.vectors.to_arrow().column("id").to_pylist()
    assert len(ids) == len(set(ids))
    memory.backfill()
    assert memory.status().embedded_share == 1.0


# ----- empty and missing workspaces ---------------------------------------------------------------
def test_empty_workspace_searches_to_nothing_and_reports_status(workspace, settings):
    memory = Memory(settings, embedder=HashEmbedder())
    report = memory.sync()
    assert not report.touched
    assert memory.search("anything at all") == []
    status = memory.status()
    assert status.files == status.indexed_files == status.chunks == status.keyword_docs == 0
    assert status.embedded_share == 0.0
    assert memory.backfill() == 0


def test_missing_workspace_folder_is_created_on_open(tmp_path):
    ws = tmp_path / "does" / "not" / "exist"
    settings = load_settings(ws, environ={})
    memory = Memory(settings, embedder=None)
    assert not ws.exists()
    memory.open()
    assert (ws / "memory").is_dir()
    assert settings.index_dir.is_dir()
    assert memory.search("hello") == []
    assert memory.status().files == 0
