"""Markdown chunking: line ranges, fences, headings, budgets, overlap, long lines, CJK."""

from __future__ import annotations

import datetime as dt
import re
from itertools import pairwise

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_memory.core.chunking import Chunk, chunk_markdown, estimate_tokens

_HAN = re.compile(r"[\u4e00-\u9fff]")


# ----- helpers ---------------------------------------------------------------------------------
def file_lines(text: str) -> list[str]:
    """The file's lines as an editor numbers them (independent of the chunker's own splitting)."""
    return text.splitlines()


def line_tokens(line: str) -> int:
    """A line's size, counting its line break."""
    return estimate_tokens(line) + 1


def check_chunks(text: str, chunks: list[Chunk], path: str = "", exact_pieces: bool = True) -> None:
    """Ranges are valid, texts are the file's own lines, every non-blank line is covered."""
    lines = file_lines(text)
    pieces: dict[int, list[str]] = {}
    for chunk in chunks:
        assert chunk.path == path
        assert 1 <= chunk.start_line <= chunk.end_line <= len(lines), chunk.citation
        expected = "\n".join(lines[chunk.start_line - 1 : chunk.end_line])
        if chunk.text != expected:
            # Only a piece of one over-long line may differ from the file's lines.
            assert chunk.start_line == chunk.end_line, (chunk.citation, chunk.text[:80], expected[:80])
            line = lines[chunk.start_line - 1]
            assert chunk.text and chunk.text in line
            pieces.setdefault(chunk.start_line, []).append(chunk.text)
        assert chunk.text.strip(), "a chunk of only blank lines is useless"
        assert chunk.citation == f"{path}#L{chunk.start_line}-L{chunk.end_line}"
    for number, parts in pieces.items():
        line = lines[number - 1]
        if exact_pieces:
            assert "".join(parts) == line
        else:
            # Pieces appear in order; only whitespace of the line may be missing between them.
            position = 0
            for part in parts:
                found = line.find(part, position)
                assert found >= 0
                assert line[position:found].strip() == ""
                position = found + len(part)
            assert line[position:].strip() == ""
    for number, line in enumerate(lines, start=1):
        if line.strip():
            assert any(c.start_line <= number <= c.end_line for c in chunks), f"line {number} not covered: {line!r}"


def check_budget(text: str, chunks: list[Chunk], tokens: int) -> None:
    largest = max((line_tokens(line) for line in file_lines(text)), default=0)
    for chunk in chunks:
        assert estimate_tokens(chunk.text) <= tokens + largest, (chunk.citation, estimate_tokens(chunk.text))


def line_of(text: str, needle: str) -> int:
    """1-based number of the first line containing needle."""
    for number, line in enumerate(file_lines(text), start=1):
        if needle in line:
            return number
    raise AssertionError(f"{needle!r} not in text")


# ----- realistic documents ---------------------------------------------------------------------
DAILY = """# 2026-11-26

## Standup
- Alice finished the LanceDB migration; vector search is now three times faster.
- Bob is blocked on the OpenAI rate limits, he will retry with exponential backoff.
- Decided: keep Tantivy for keyword search and drop the old SQLite FTS table.
  - follow-up: remove the fts5 migration script next week

## Notes
Talked to Carol about the release. She wants `mcp-memory status` to print the index size
and the number of files that failed to parse.

- [ ] write the changelog
- [x] tag v0.3.0


## Evening
Reading list: "Designing Data-Intensive Applications", chapter 3 on storage engines.
"""

TOPIC = """# Project Atlas

Atlas is the internal search service. It indexes tickets, wiki pages and chat logs.

## Decisions

### 2026-10 Storage
- Use LanceDB for vectors because it runs embedded and supports S3.
- Keep markdown files as the source of truth; the index can always be rebuilt.

### 2026-11 Ranking
Hybrid search: 0.5 vector + 0.5 BM25, then MMR with lambda 0.7.

```python
def score(v, t):
    # not a heading: inside a fence
    return 0.5 * v + 0.5 * t
```

## People
- Dana owns ingestion.
- Eli owns ranking.

# Appendix
Glossary: MMR = maximal marginal relevance.
"""


def long_section(n: int = 60) -> str:
    topics = ["the parser", "the indexer", "ranking", "the CLI", "embeddings", "tests", "docs"]
    lines = ["# Running log", ""]
    for i in range(n):
        lines.append(f"- item {i}: worked on {topics[i % len(topics)]} and fixed bug #{100 + i}")
    return "\n".join(lines) + "\n"


DOCUMENTS = {
    "daily": DAILY,
    "topic": TOPIC,
    "crlf": DAILY.replace("\n", "\r\n"),
    "no-trailing-newline": TOPIC.rstrip("\n"),
    "long-section": long_section(),
    "mixed": TOPIC + "\n" + long_section(30) + "\n" + DAILY,
}


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
@pytest.mark.parametrize("tokens,overlap", [(400, 80), (60, 15), (40, 0), (16, 5)])
def test_realistic_documents_are_covered_by_their_own_lines(name, tokens, overlap):
    text = DOCUMENTS[name]
    chunks = chunk_markdown(text, "memory/doc.md", None, tokens, overlap)
    assert chunks
    check_chunks(text, chunks, "memory/doc.md")
    check_budget(text, chunks, tokens)


def test_small_document_is_one_chunk_with_all_its_lines():
    chunks = chunk_markdown("- one\n- two\n", "memory/a.md", tokens=400, overlap=80)
    assert [(c.start_line, c.end_line, c.text) for c in chunks] == [(1, 2, "- one\n- two")]


def test_crlf_gives_the_same_chunks_as_lf_without_carriage_returns():
    lf = chunk_markdown(DAILY, "m.md", tokens=40, overlap=10)
    crlf = chunk_markdown(DAILY.replace("\n", "\r\n"), "m.md", tokens=40, overlap=10)
    assert [(c.start_line, c.end_line, c.text, c.heading_path) for c in crlf] == [
        (c.start_line, c.end_line, c.text, c.heading_path) for c in lf
    ]
    assert not any("\r" in c.text for c in crlf)


def test_last_line_without_newline_is_included():
    text = "# Title\nfirst line\nlast line without newline"
    chunks = chunk_markdown(text, "m.md")
    assert chunks[-1].end_line == 3
    assert chunks[-1].text.endswith("last line without newline")


@pytest.mark.parametrize("text", ["", "\n", "\n\n\n", "   \n\t\n  \n", "\r\n\r\n"])
def test_blank_documents_have_no_chunks(text):
    assert chunk_markdown(text, "m.md") == []


# ----- fenced code blocks ----------------------------------------------------------------------
def fence_doc(prefix_lines: int, opener: str, closer: str | None, body_lines: int = 5) -> tuple[str, int, int]:
    """Paragraph lines, then a fenced block; returns text and the block's 1-based line range."""
    lines = ["# Build notes"]
    lines += [f"Step {i}: ran the build on the staging box and it passed." for i in range(prefix_lines)]
    start = len(lines) + 1
    lines.append(opener)
    lines += [f"x{i} = compute({i})  # heavy" for i in range(body_lines)]
    if closer is not None:
        lines.append(closer)
    end = len(lines)
    if closer is not None:
        lines += ["After the block, more text follows.", "And another line."]
    return "\n".join(lines) + "\n", start, end


FENCES = {
    "backticks": ("```python", "```"),
    "tildes": ("~~~", "~~~"),
    "long-backticks": ("````md", "````"),
    "unclosed": ("```bash", None),
}


@pytest.mark.parametrize("kind", sorted(FENCES))
@pytest.mark.parametrize("prefix_lines", range(0, 10))
def test_small_fence_is_never_split_even_at_the_budget_boundary(kind, prefix_lines):
    opener, closer = FENCES[kind]
    text, start, end = fence_doc(prefix_lines, opener, closer)
    tokens = 60
    block_tokens = sum(line_tokens(line) for line in file_lines(text)[start - 1 : end])
    assert block_tokens < tokens  # the block fits the budget on its own
    chunks = chunk_markdown(text, "m.md", tokens=tokens, overlap=15)
    check_chunks(text, chunks, "m.md")
    touching = [c for c in chunks if c.start_line <= end and c.end_line >= start]
    assert touching, "the fence must be in some chunk"
    for chunk in touching:
        assert chunk.start_line <= start and chunk.end_line >= end, (chunk.citation, start, end)


def test_fence_closes_only_with_its_own_marker():
    # ``` inside a ~~~ block does not close it, so the whole block stays together.
    inner = "\n".join(f"line {i} of the embedded example" for i in range(6))
    text = "intro paragraph line\n" * 8 + "~~~\n```\n" + inner + "\n```\n~~~\nafter\n"
    start = line_of(text, "~~~")
    end = len(file_lines(text)) - 1
    chunks = chunk_markdown(text, "m.md", tokens=80, overlap=10)
    check_chunks(text, chunks, "m.md")
    for chunk in chunks:
        if chunk.start_line <= end and chunk.end_line >= start:
            assert chunk.start_line <= start and chunk.end_line >= end


def test_heading_inside_fence_is_not_a_heading():
    chunks = chunk_markdown(TOPIC, "m.md", tokens=400, overlap=0)
    comment = line_of(TOPIC, "# not a heading")
    (chunk,) = [c for c in chunks if c.start_line <= comment <= c.end_line]
    assert chunk.heading_path == ("Project Atlas", "Decisions", "2026-11 Ranking")
    assert all("not a heading" not in " ".join(c.heading_path) for c in chunks)


def test_fence_bigger_than_budget_is_split_within_its_lines():
    text, start, end = fence_doc(3, "```python", "```", body_lines=60)
    tokens = 50
    chunks = chunk_markdown(text, "m.md", tokens=tokens, overlap=10)
    check_chunks(text, chunks, "m.md")
    check_budget(text, chunks, tokens)
    touching = [c for c in chunks if c.start_line <= end and c.end_line >= start]
    assert len(touching) >= 2
    for chunk in touching:
        assert start <= chunk.start_line and chunk.end_line <= end, (chunk.citation, start, end)
    # The paragraph before and the text after the block are chunks of their own.
    assert any(c.end_line < start for c in chunks)
    assert any(c.start_line > end for c in chunks)


# ----- headings --------------------------------------------------------------------------------
def test_headings_start_chunks_with_nested_heading_paths():
    chunks = chunk_markdown(TOPIC, "memory/atlas.md", tokens=400, overlap=80)
    by_start = {c.start_line: c for c in chunks}
    for heading in ("## Decisions", "### 2026-11 Ranking", "## People", "# Appendix"):
        assert line_of(TOPIC, heading) in by_start, heading
    assert by_start[1].heading_path == ("Project Atlas",)
    assert by_start[line_of(TOPIC, "### 2026-11 Ranking")].heading_path == (
        "Project Atlas",
        "Decisions",
        "2026-11 Ranking",
    )
    assert by_start[line_of(TOPIC, "## People")].heading_path == ("Project Atlas", "People")
    assert by_start[line_of(TOPIC, "# Appendix")].heading_path == ("Appendix",)
    # Sections do not overlap: each chunk starts after the previous one ended.
    for prev, nxt in pairwise(chunks):
        assert nxt.start_line > prev.end_line


def test_heading_directly_followed_by_subheading_gives_the_full_path():
    text = "# Project\n## Decisions\n- use LanceDB\n"
    (chunk,) = chunk_markdown(text, "m.md")
    assert chunk.heading_path == ("Project", "Decisions")
    assert (chunk.start_line, chunk.end_line) == (1, 3)


def test_heading_path_pops_deeper_levels():
    text = "# A\nalpha\n### C\ngamma\n## B\nbeta\n"
    chunks = chunk_markdown(text, "m.md")
    paths = {c.text.splitlines()[-1]: c.heading_path for c in chunks}
    assert paths == {"alpha": ("A",), "gamma": ("A", "C"), "beta": ("A", "B")}


def test_text_before_the_first_heading_has_no_heading_path():
    text = "loose note at the top\n\n# Later\nbody\n"
    chunks = chunk_markdown(text, "m.md")
    assert chunks[0].heading_path == ()
    assert chunks[0].end_line < 3 and chunks[1].start_line == 3


def test_index_text_carries_path_heading_path_and_date():
    day = dt.date(2026, 11, 26)
    text = "# Project\n## Decisions\n- use LanceDB for vectors\n"
    (chunk,) = chunk_markdown(text, "memory/2026-11-26.md", day)
    context, body = chunk.index_text.split("\n", 1)
    assert body == chunk.text
    assert "memory/2026-11-26.md" in context
    assert "2026-11-26" in context.replace("memory/2026-11-26.md", "")
    assert context.index("Project") < context.index("Decisions")
    assert chunk.date == day
    assert chunk.citation == "memory/2026-11-26.md#L1-L3"


def test_index_text_without_date_or_headings():
    (chunk,) = chunk_markdown("just a note\n", "MEMORY.md", None)
    context, body = chunk.index_text.split("\n", 1)
    assert "MEMORY.md" in context and body == "just a note"
    assert not re.search(r"\d{4}-\d{2}-\d{2}", context)
    assert chunk.date is None and chunk.heading_path == ()


# ----- size and overlap ------------------------------------------------------------------------
def section_runs(chunks: list[Chunk]) -> list[list[Chunk]]:
    """Group consecutive chunks by heading path."""
    runs: list[list[Chunk]] = []
    for chunk in chunks:
        if runs and runs[-1][-1].heading_path == chunk.heading_path:
            runs[-1].append(chunk)
        else:
            runs.append([chunk])
    return runs


@pytest.mark.parametrize("tokens,overlap", [(60, 20), (100, 30), (50, 25)])
def test_chunks_within_a_section_overlap_by_whole_lines(tokens, overlap):
    # Each line is about 13 tokens, so an overlap of 20 or more always fits a whole line.
    text = long_section(60) + "\n# Second\n" + "\n".join(f"- second {i} of the list of things" for i in range(30))
    chunks = chunk_markdown(text, "m.md", tokens=tokens, overlap=overlap)
    check_chunks(text, chunks, "m.md")
    check_budget(text, chunks, tokens)
    lines = file_lines(text)
    runs = section_runs(chunks)
    assert len(runs) == 2 and all(len(run) >= 3 for run in runs)
    for run in runs:
        for prev, nxt in pairwise(run):
            assert prev.start_line < nxt.start_line <= prev.end_line, (prev.citation, nxt.citation)
            shared = "\n".join(lines[nxt.start_line - 1 : prev.end_line])
            assert estimate_tokens(shared) <= overlap
            # "About tokens long": a chunk is only cut short when the next line does not fit.
            assert estimate_tokens(prev.text) >= tokens // 2
    # No overlap across a heading.
    assert runs[1][0].start_line > runs[0][-1].end_line


def test_no_overlap_when_overlap_is_zero():
    text = long_section(80)
    chunks = chunk_markdown(text, "m.md", tokens=60, overlap=0)
    check_chunks(text, chunks, "m.md")
    assert len(chunks) >= 5
    for prev, nxt in pairwise(chunks):
        assert nxt.start_line == prev.end_line + 1


def test_more_overlap_repeats_more_lines():
    text = long_section(80)
    small = chunk_markdown(text, "m.md", tokens=100, overlap=12)
    large = chunk_markdown(text, "m.md", tokens=100, overlap=60)

    def repeated(chunks):
        return sum(prev.end_line - nxt.start_line + 1 for prev, nxt in pairwise(chunks))

    assert 0 < repeated(small) < repeated(large)


def test_long_run_of_headings_still_respects_the_budget():
    text = "\n".join(f"## Heading number {i}" for i in range(300)) + "\nbody text\n"
    chunks = chunk_markdown(text, "m.md", tokens=50, overlap=10)
    check_chunks(text, chunks, "m.md")
    check_budget(text, chunks, 50)


def test_long_run_of_blank_lines_does_not_inflate_a_chunk():
    text = "\n" * 400 + "the only note\n"
    chunks = chunk_markdown(text, "m.md", tokens=50, overlap=10)
    check_chunks(text, chunks, "m.md")
    check_budget(text, chunks, 50)


# ----- over-long lines -------------------------------------------------------------------------
def test_one_megabyte_line_is_cut_into_pieces_citing_that_line():
    words = ["memory", "search", "lance", "tantivy", "chunk", "vector", "index", "query"]
    long_line = " ".join(words[i % len(words)] + str(i) for i in range(130_000))
    assert len(long_line) > 1_000_000
    text = "# Dump\n\nbefore\n" + long_line + "\nafter\n"
    tokens = 400
    chunks = chunk_markdown(text, "memory/dump.md", tokens=tokens, overlap=80)
    check_chunks(text, chunks, "memory/dump.md")
    pieces = [c for c in chunks if c.start_line == c.end_line == 4]
    assert len(pieces) >= 1_000_000 // (tokens * 4)
    assert "".join(p.text for p in pieces) == long_line
    assert all(0 < estimate_tokens(p.text) <= tokens for p in pieces)
    # No other chunk includes the long line.
    assert all(c in pieces for c in chunks if c.start_line <= 4 <= c.end_line)
    assert len({p.id for p in pieces}) == len(pieces)


def test_long_cjk_line_pieces_respect_the_budget():
    han = "我们今天讨论了项目的架构决定使用向量数据库和全文检索"
    long_line = han * 2000  # 50 000 Han characters, no spaces
    chunks = chunk_markdown(long_line, "m.md", tokens=100, overlap=20)
    check_chunks(long_line, chunks, "m.md")
    assert len(chunks) >= len(long_line) // 100
    assert all(len(c.text) <= 100 and estimate_tokens(c.text) <= 100 for c in chunks)


# ----- estimates, CJK and ids ------------------------------------------------------------------
def test_estimate_tokens_latin_text_is_about_four_characters_per_token():
    assert estimate_tokens("") == 0
    sentence = "The quick brown fox jumps over the lazy dog. " * 10
    assert abs(estimate_tokens(sentence) - len(sentence) / 4) <= 1


def test_estimate_tokens_counts_one_token_per_han_character():
    paragraph = "我们今天讨论了项目的架构，决定使用向量数据库和全文检索。明天继续测试中文搜索的效果。"
    han = len(_HAN.findall(paragraph))
    assert han >= 35
    estimate = estimate_tokens(paragraph)
    assert han <= estimate <= han + (len(paragraph) - han)
    # Far more than the Latin estimate of one token per four characters.
    assert estimate > len(paragraph) / 2


def test_chinese_chunks_hold_about_budget_han_characters():
    lines = ["# 会议记录"] + [f"第{i}条：我们讨论了搜索质量，决定增加中文分词和重排序功能。" for i in range(40)]
    text = "\n".join(lines) + "\n"
    chunks = chunk_markdown(text, "m.md", tokens=100, overlap=20)
    check_chunks(text, chunks, "m.md")
    assert len(chunks) >= 5
    largest = max(line_tokens(line) for line in lines)
    for chunk in chunks:
        assert len(_HAN.findall(chunk.text)) <= 100 + largest


def test_chunk_ids_are_stable_and_sensitive_to_text_lines_and_path():
    first = chunk_markdown(TOPIC, "memory/atlas.md", tokens=60, overlap=15)
    again = chunk_markdown(TOPIC, "memory/atlas.md", tokens=60, overlap=15)
    assert [c.id for c in first] == [c.id for c in again]
    assert len({c.id for c in first}) == len(first)

    edited = chunk_markdown(TOPIC.replace("Dana owns", "Dina owns"), "memory/atlas.md", tokens=60, overlap=15)
    changed = {c.id for c in edited} - {c.id for c in first}
    assert len(changed) >= 1
    assert all("Dina" in c.text for c in edited if c.id in changed)

    shifted = chunk_markdown("\n" + TOPIC, "memory/atlas.md", tokens=60, overlap=15)
    assert not {c.id for c in shifted} & {c.id for c in first}

    other_path = chunk_markdown(TOPIC, "memory/other.md", tokens=60, overlap=15)
    assert not {c.id for c in other_path} & {c.id for c in first}


def test_chunk_id_changes_with_date():
    day1 = chunk_markdown("note\n", "m.md", dt.date(2026, 1, 1))[0]
    day2 = chunk_markdown("note\n", "m.md", dt.date(2026, 1, 2))[0]
    assert day1.id != day2.id


# ----- property test ---------------------------------------------------------------------------
_line = st.text(alphabet=["#", "`", "~", " ", "中", "a"], max_size=120)
_document = st.lists(_line, max_size=60).map("\n".join) | st.text(
    alphabet=["#", "`", "~", " ", "中", "a", "\n"], max_size=2000
)


@settings(max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_document, tokens=st.integers(16, 200), data=st.data())
def test_random_documents_are_always_covered(text, tokens, data):
    overlap = data.draw(st.integers(0, tokens - 1))
    chunks = chunk_markdown(text, "r.md", None, tokens, overlap)
    # Long runs of spaces may be cut off between pieces of a long line; content is never lost.
    check_chunks(text, chunks, "r.md", exact_pieces=False)
