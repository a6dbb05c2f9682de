"""Properties that must hold for any input: chunk ranges, search and recall on any text, safe paths.

Generated inputs (hypothesis) rather than hand-picked examples:

1. ``chunk_markdown`` on markdown-ish text (headings, ``` and ~~~ fences, blank lines, very
   long lines, CJK, emoji, CRLF, lone CR): every non-blank line is cited by some chunk, ranges
   are valid, and a chunk's text is the file's own lines (or a piece of one over-long line).
2. ``Memory.search`` and ``Memory.recall`` never raise on any string (lone surrogates, control
   characters, Tantivy query syntax, very long or empty text), with and without an embedder;
   a recall block is empty or has exactly one opening and one closing tag.
3. ``Workspace.resolve`` / ``Memory.get`` never admit a path outside the memory files, however
   the path is spelled (``..``, absolute, Windows separators and drives, URL escapes, NUL,
   symlinks inside ``memory/`` pointing outside, very long names).

Lines are numbered as the product numbers them: split at "\\n" only (a lone "\\r", U+2028 or a
form feed is text), with the "\\r" of a CRLF ending not part of the line.

Default runtime is well under 40 s; ``MCP_MEMORY_LONG_TESTS=1`` runs ten times more examples.
"""

from __future__ import annotations

import datetime as dt
import math
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import HashEmbedder, write
from mcp_memory.config import load_settings
from mcp_memory.core.chunking import chunk_markdown
from mcp_memory.core.workspace import PathError, Workspace
from mcp_memory.index.hybrid import SearchError
from mcp_memory.memory import Memory

LONG = os.environ.get("MCP_MEMORY_LONG_TESTS") == "1"


def examples(n: int) -> int:
    return n * 10 if LONG else n


def budget(n: int):
    return settings(max_examples=examples(n), deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


# ===== 1. chunking =================================================================================
FIXED_LINES = [
    "", " ", "\t", "   \t ", "#", "# ", "#NoSpace", "# Heading", "## Sub heading ##", "###### six", "####### seven",
    "   # indented three", "    # indented four (code)", "# ", "#\t", "- bullet", "* [decision] use pnpm", "> quote",
    "---", "***", "| a | b |", "中文标题和内容，数据库迁移完成。", "## 项目笔记", "😀🎉 emoji line 👩‍👩‍👧",
    "한국어 텍스트",
    "\u2028", "\x0c", "\x85", "\ufeff", "a\rb", "\r", "text with \r inside", "```", "~~~", "````", "~~~~",
    "```python", "~~~ js", "  ```", "   ~~~", "    ```", "``` ```", "`` not a fence", "\x1b[31mred\x1b[0m",
]
FENCES = ["```", "~~~", "````", "~~~~", "   ```", " ~~~", "    ```", "`````"]
LONG_UNITS = ["word ", "x", "中", "😀", "한국어 ", "a\r", "\t", " ", "supercalifragilistic", "数据 "]

_text_char = st.characters(exclude_characters="\x00\n")  # no NUL (files with NUL are refused)
_free_line = st.text(_text_char, max_size=40)
_line = st.one_of(
    st.sampled_from(FIXED_LINES),
    _free_line,
    st.builds(lambda level, title: "#" * level + " " + title, st.integers(1, 7), _free_line),
    st.builds(lambda fence, info: fence + info, st.sampled_from(FENCES), st.sampled_from(["", "python", " js", "~~~"])),
    st.builds(lambda unit, n: unit * n, st.sampled_from(LONG_UNITS), st.integers(30, 2500)),
)
_eol = st.sampled_from(["\n", "\n", "\n", "\n", "\r\n", "\r", "\r\r\n", "\n\n"])


def _join(pairs: list[tuple[str, str]], final_newline: bool) -> str:
    text = "".join(line + eol for line, eol in pairs)
    return text if final_newline else text.rstrip("\n")


_document = st.one_of(
    st.builds(_join, st.lists(st.tuples(_line, _eol), max_size=40), st.booleans()),
    st.text(st.characters(exclude_characters="\x00"), max_size=400),  # anything at all (no NUL)
)


def product_lines(text: str) -> list[str]:
    """The file's lines as the product numbers them (see the module docstring)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.rstrip("\r") for line in lines]


def check_chunks(text: str, chunks, path: str, date: dt.date | None) -> None:
    lines = product_lines(text)
    pieces: dict[int, list[str]] = {}
    ids = set()
    for ordinal, chunk in enumerate(chunks):
        assert chunk.path == path and chunk.date == date
        assert chunk.ordinal == ordinal
        assert 1 <= chunk.start_line <= chunk.end_line <= len(lines), (chunk.citation, len(lines))
        assert chunk.citation == f"{path}#L{chunk.start_line}-L{chunk.end_line}"
        assert chunk.text.strip(), f"{chunk.citation} holds only blank text"
        expected = "\n".join(lines[chunk.start_line - 1 : chunk.end_line])
        if chunk.text != expected:
            # Only a piece of one over-long line may differ from the file's lines in its range.
            assert chunk.start_line == chunk.end_line, (chunk.citation, chunk.text[:80], expected[:80])
            assert chunk.text in lines[chunk.start_line - 1], (chunk.citation, chunk.text[:80])
            pieces.setdefault(chunk.start_line, []).append(chunk.text)
        ids.add(chunk.id)
    assert len(ids) == len(chunks), "two chunks share an id"
    for number, parts in pieces.items():
        # The pieces of a line come in order; only whitespace-only pieces may be left out.
        line, position = lines[number - 1], 0
        for part in parts:
            found = line.find(part, position)
            assert found >= 0 and not line[position:found].strip(), (number, part[:40])
            position = found + len(part)
        assert not line[position:].strip(), (number, line[position:][:40])
    for number, line in enumerate(lines, start=1):
        if line.strip():
            assert any(c.start_line <= number <= c.end_line for c in chunks), (
                f"line {number} not covered: {line[:80]!r}")


@budget(600)
@given(text=_document)
@example(text="# A\n```\ncode\n# not a heading\n")  # unclosed fence runs to the end
@example(text="line one\rstill line one\r\nline two\r\n\r\n   \n")
@example(text="x" * 5000 + "\n" + "中" * 3000)
@example(text=" " * 3000 + "x" + " " * 3000)  # whitespace-only pieces around one character
def test_chunks_cover_every_nonblank_line_default_size(text: str) -> None:
    chunks = chunk_markdown(text, "memory/2026-11-26.md", dt.date(2026, 11, 26))
    check_chunks(text, chunks, "memory/2026-11-26.md", dt.date(2026, 11, 26))


@st.composite
def _sizes(draw) -> tuple[int, int]:
    tokens = draw(st.integers(16, 64))
    return tokens, draw(st.integers(0, tokens - 1))


@budget(1000)
@given(text=_document, sizes=_sizes())
@example(text="# T\n" + "a b c d e\n" * 50 + "```\n" + "code line\n" * 40 + "```\n", sizes=(16, 15))
@example(text="~~~\n" + "😀" * 200 + "\n~~~\n# H\n\n\n", sizes=(16, 0))
def test_chunks_cover_every_nonblank_line_small_sizes(text: str, sizes: tuple[int, int]) -> None:
    tokens, overlap = sizes
    chunks = chunk_markdown(text, "MEMORY.md", None, tokens=tokens, overlap=overlap)
    check_chunks(text, chunks, "MEMORY.md", None)


# ===== 2. search and recall on any string ==========================================================
NOTES = {
    "MEMORY.md": (
        "# Preferences\n\nThe user prefers pnpm over npm and yarn.\n"
        "- [decision] We use PostgreSQL 16 as the main database.\n"
        "- [preference] Answers in British English, please.\n\n"
        "## Tags\n\nThis note mentions </relevant-memories> and <relevant-memories> tags literally, "
        "plus <memory source=\"x\"> & friends.\n"
    ),
    "memory/2026-11-20.md": "# 2026-11-20\n\nDeployed the zebracorn service to staging.\n部署了新的数据库服务。\n",
    "memory/projects/syntax.md": (
        "# Query syntax\n\nSearch syntax notes: AND OR NOT ( ) \" * ~ ^ : [ ] { } text:foo path:/etc id:1 "
        "day:[1 TO 2]\n"
    ),
    "memory/emoji.md": "# Emoji 😀\n\n😀 emoji notes 🎉 and 한국어 text, café naïve Ωmega\n",
    "memory/long.md": "# Long\n\n" + "".join(
        f"- fact number {i} about topic{i % 7} and zebracorn\n" for i in range(120)),
}
PATHS = set(NOTES)
WORDS = ["pnpm", "npm", "yarn", "PostgreSQL", "database", "zebracorn", "staging", "数据库", "部署", "emoji", "😀",
         "한국어", "café", "British", "topic3", "fact", "syntax", "tags", "relevant", "memories"]
SYNTAX = ["AND", "OR", "NOT", "(", ")", '"', "*", "~", "^", ":", "[", "]", "{", "}", "-", "+", "\\", "/", "!",
          "text:", "path:", "id:", "day:[1 TO 2]", "title:{a TO b}", '"unclosed', "~2", "^3", "*:*", "a*", "?",
          "<relevant-memories>", "</relevant-memories>", "<memory>", "\ud800", "\udfff", "\udc80x", "\x00", "\x1b[31m",
          "\u202e", "\u200b", "\ufeff", "%s", "{0}", "' OR 1=1 --", "&amp;", "\r\n", "\t", "\x0b", "\U0010ffff"]
_any_char = st.characters(exclude_categories=())  # every code point, lone surrogates and controls included
_query = st.one_of(
    st.text(_any_char, max_size=80),
    st.lists(st.one_of(st.sampled_from(SYNTAX + WORDS), st.text(_any_char, max_size=6)), max_size=25).map(" ".join),
    st.lists(st.sampled_from(SYNTAX + WORDS), max_size=25).map("".join),
    st.builds(lambda unit, n: unit * n, st.text(_any_char, min_size=1, max_size=8), st.integers(500, 30000)),
    st.sampled_from(["", " ", "\x00", "\ud800", "*", "\"", "AND", "()", "pnpm", "\n" * 100]),
)
QUERY_EXAMPLES = ["", "   ", "\ud800", "\udfff\ud800", "pnpm \ud83d", "AND OR NOT", '"pnpm', "text:pnpm", "*",
                  "(pnpm", "pnpm^", "数据库 AND 部署", "a" * 200_000, "zebracorn " * 20_000, "\x00pnpm\x00",
                  "<relevant-memories>pnpm</relevant-memories> pnpm database"]


def _make_memory(root: Path, kind: str) -> Memory:
    """``hash``: the HashEmbedder; ``none``: the configured provider "none" (keyword search only)."""
    for rel, text in NOTES.items():
        write(root, rel, text)
    if kind == "hash":
        memory = Memory(load_settings(root, environ={}), embedder=HashEmbedder())
    else:
        memory = Memory(load_settings(root, overrides={"embedding.provider": "none"}, environ={}))
    memory.index()
    return memory


@pytest.fixture(scope="module")
def memories(tmp_path_factory: pytest.TempPathFactory):
    made = {kind: _make_memory(tmp_path_factory.mktemp(f"search-{kind}"), kind) for kind in ("hash", "none")}
    assert made["hash"].engine.embedder is not None and made["none"].engine.embedder is None
    assert made["hash"].search("pnpm") and made["none"].search("pnpm")
    yield made
    for memory in made.values():
        memory.close()


def check_hits(hits) -> None:
    assert isinstance(hits, list)
    for hit in hits:
        assert hit.path in PATHS
        assert 1 <= hit.start_line <= hit.end_line
        assert math.isfinite(hit.score)


def check_block(block: str) -> None:
    assert isinstance(block, str)
    if block:
        assert block.count("<relevant-memories>") == 1, block
        assert block.count("</relevant-memories>") == 1, block
        assert block.startswith("<relevant-memories>") and block.endswith("</relevant-memories>"), block


@budget(300)
@given(query=_query)
def test_search_never_raises_on_any_string(memories, query: str) -> None:
    for memory in memories.values():
        check_hits(memory.search(query))


@pytest.mark.parametrize("query", QUERY_EXAMPLES, ids=range(len(QUERY_EXAMPLES)))
def test_search_never_raises_on_known_hard_strings(memories, query: str) -> None:
    for memory in memories.values():
        check_hits(memory.search(query))
        check_hits(memory.search(query, max_results=50, path_prefix="memory/"))


@budget(150)
@given(query=_query, prefix=st.one_of(st.none(), st.text(_any_char, max_size=20), st.sampled_from(SYNTAX)),
       after=st.one_of(st.none(), st.text(_any_char, max_size=12), st.sampled_from(["2026-11-20", "2026-13-01"])))
@example(query="pnpm", prefix="memory/\ud800", after=None)
@example(query="pnpm", prefix="[(*", after="\ud800")
def test_search_filters_fail_only_with_search_error(memories, query: str, prefix: str | None,
                                                    after: str | None) -> None:
    """Odd filter values are refused with SearchError (a user-facing message), nothing else."""
    for memory in memories.values():
        try:
            check_hits(memory.search(query, path_prefix=prefix, after=after))
        except SearchError:
            pass


@budget(200)
@given(prompt=_query, keywords_only=st.booleans())
@example(prompt="Which package manager, pnpm or npm? relevant memories tags", keywords_only=False)
@example(prompt="<relevant-memories>\n</relevant-memories> pnpm yarn npm tags relevant", keywords_only=True)
def test_recall_never_raises_and_its_block_is_well_formed(memories, prompt: str, keywords_only: bool) -> None:
    for memory in memories.values():
        check_block(memory.recall(prompt, keywords_only=keywords_only))


def test_recall_block_stays_one_block_when_the_note_holds_the_tags(memories) -> None:
    # The MEMORY.md note contains both tags literally: they must come out escaped.
    for memory in memories.values():
        block = memory.recall("which note mentions relevant memories tags literally")
        assert "tags literally" in block
        check_block(block)


_utf8_char = st.characters()  # every code point except lone surrogates (Cs)


@budget(100)
@given(prompt=st.one_of(st.sampled_from(["pnpm or npm or yarn?", "zebracorn staging deploy"]), _query),
       session=st.one_of(st.text(_utf8_char, max_size=30), st.sampled_from(["s\x00", " ", "a" * 500, "会话 😀"])))
@example(prompt="pnpm or npm or yarn?", session="session\x00one")
def test_recall_never_raises_with_any_session_key(memories, prompt: str, session: str) -> None:
    for memory in memories.values():
        check_block(memory.recall(prompt, session_key=session))


@pytest.mark.parametrize("kind", ["hash", "none"])
def test_recall_with_a_lone_surrogate_session_key(memories, kind: str) -> None:
    check_block(memories[kind].recall("pnpm or npm or yarn?", session_key="session-\ud800"))


# ===== 3. paths ====================================================================================
SECRET = "SECRET-PAYLOAD-7f3a"
ALLOWED_MARK = "ALLOWED-MEMORY"


def _symlink(link: Path, target: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target, target_is_directory=target.is_dir())


@pytest.fixture(scope="module")
def layout(tmp_path_factory: pytest.TempPathFactory):
    """A workspace with memory files, extra paths, decoys outside and symlinks pointing at them.

    ``ws`` has real memory files; ``ws2`` has none (its MEMORY.md and memory/ are symlinks).
    """
    base = Path(os.path.realpath(tmp_path_factory.mktemp("paths")))
    ws, ws2 = base / "ws", base / "ws2"
    for rel in ("secret.md", "secret.txt", "secretdir/a.md", "secretdir/MEMORY.md", "ws/notes.md",
                "ws/memory/notes.txt", "ws/memory/.hidden/h.md", "ws/.mcp-memory/x.md", "ws/memory/README",
                "extra-dir/.hidden/h.md"):
        write(base, rel, f"# decoy\n{SECRET} {rel}\n")
    allowed_rel = ["ws/MEMORY.md", "ws/memory/2026-01-01.md", "ws/memory/topic/x.md", "ws/docs/guide.md",
                   "extra/notes.md", "extra-dir/topic.md", "extra-dir/deep/more.md"]
    for rel in allowed_rel:
        write(base, rel, f"# {rel}\n{ALLOWED_MARK}\n")
    # Symlinks inside the memory set pointing outside it (and one pointing at a memory file).
    _symlink(ws / "memory" / "link.md", base / "secret.md")
    _symlink(ws / "memory" / "linkdir", base / "secretdir")
    _symlink(ws / "memory" / "topic" / "back.md", ws / "memory" / "2026-01-01.md")
    _symlink(ws / "memory" / "up", base)
    _symlink(ws / "memory.md", base / "secret.md")
    _symlink(base / "extra-dir" / "link.md", base / "secret.md")
    _symlink(base / "extra-dir" / "sub", base / "secretdir")
    _symlink(ws / "docs" / "evil.md", base / "secret.md")
    _symlink(ws2 / "MEMORY.md", base / "secret.md")
    _symlink(ws2 / "memory", base / "secretdir")
    extra = [str(base / "extra" / "notes.md"), str(base / "extra-dir"), "docs", str(base / "extra" / "link-extra.md")]
    _symlink(base / "extra" / "link-extra.md", base / "secret.md")  # an extra path that is itself a symlink
    allowed = {str(base / rel) for rel in allowed_rel}
    memories = {
        "ws": Memory(load_settings(ws, overrides={"extra_paths": extra}, environ={}), embedder=None),
        "ws2": Memory(load_settings(ws2, overrides={"extra_paths": extra}, environ={}), embedder=None),
    }
    return {"base": base, "ws": ws, "allowed": allowed, "memories": memories, "extra": extra,
            "allowed_by": {"ws": allowed, "ws2": {a for a in allowed if not a.startswith(str(ws) + "/")}}}


SEGMENTS = ["..", ".", "", "...", "memory", "MEMORY.md", "memory.md", "2026-01-01.md", "topic", "x.md", "link.md",
            "linkdir", "a.md", "up", "secret.md", "secret.txt", "secretdir", "notes.md", "notes.txt", ".hidden",
            "h.md", ".mcp-memory", "docs", "guide.md", "evil.md", "extra", "extra-dir", "sub", "back.md", "deep",
            "more.md", "ws", "ws2", "README", "%2e%2e", "%2e%2e%2f", "%2E%2E%5C", "..%2f", "%252e%252e", "..%00",
            "..\\", "C:", "c:", "C:\\", "\\\\?\\C:", "\\\\server\\share", "~", "~root", "\x00", " ", " .. ",
            "..\u2215", "\u2025", "．．", "..\u2024", "\ud800", "a" * 300, "b" * 5000, "/", "//", "\\"]
_segment = st.one_of(st.sampled_from(SEGMENTS), st.text(_any_char, max_size=8))
_separator = st.sampled_from(["/", "\\", "//", "/./", "\\\\", "/../"])
_prefix = st.sampled_from(["", "", "/", "./", "\\", "C:\\", "C:/", "file://", "~/", "\\\\?\\", " ", "%2f"])
_suffix = st.sampled_from(["", ".md", ".MD", "\x00.md", "/", " ", "%00.md", ".md\x00", ".md/", ".md.", "\n"])


@st.composite
def _paths(draw, base: Path) -> str:
    roots = [str(base), str(base / "ws"), str(base / "ws2"), str(base / "secret.md"), str(base / "extra"),
             str(base / "extra-dir"), str(base / "secretdir")]
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return draw(st.text(_any_char, max_size=60))
    segments = draw(st.lists(_segment, min_size=1, max_size=8))
    sep = draw(_separator)
    path = sep.join(segments)
    if kind == 1:
        path = draw(st.sampled_from(roots)) + draw(st.sampled_from(["/", "\\", "/../", "/./"])) + path
    return draw(_prefix) + path + draw(_suffix)


def _ids(values: list[str]) -> list[str]:
    return [repr(v)[:50] for v in values]


# "{s}" stands for the folder that holds both workspaces and every decoy.
ATTACKS = [
    "../secret.md", "memory/../../secret.md", "..\\secret.md", "memory\\..\\..\\secret.md", "memory/link.md",
    "memory/linkdir/a.md", "memory/linkdir/MEMORY.md", "memory/up/secret.md", "memory/up/ws/MEMORY.md",
    "memory.md", "./memory/link.md", "docs/evil.md", "memory/topic/back.md", "{s}/secret.md",
    "{s}/extra-dir/link.md", "{s}/extra-dir/sub/a.md", "{s}/extra/link-extra.md", "{s}/ws/notes.md",
    "{s}/ws/memory/../../secret.md", "{s}\\secret.md", "C:\\secret.md", "C:/secret.md", "\\\\server\\share\\x.md",
    "%2e%2e/secret.md", "%2e%2e%2fsecret.md", "memory/%2e%2e/%2e%2e/secret.md", "..%2fsecret.md",
    "memory/.hidden/h.md", ".mcp-memory/x.md", "notes.md", "memory/notes.txt", "memory/README",
    "{s}/extra-dir/.hidden/h.md", "memory/2026-01-01.md\x00../../secret.md", "\x00", "~/secret.md",
    "file:///etc/passwd.md", "memory/" + "a" * 250 + ".md", "memory/" + "ab/" * 1000 + "x.md",
    "/etc/passwd", "memory/ \u2025/secret.md", "MEMORY.md/../secret.md", "MEMORY.md\\..\\..\\secret.md",
    " ../secret.md", "../secret.md ", "\t../secret.md", "memory/../memory/link.md",
    "{s}/ws2/MEMORY.md", "{s}/ws2/memory/a.md", "memory/a.md",
]
# Longer than the file system allows (NAME_MAX 255 bytes per name, PATH_MAX 4096 per path).
TOO_LONG = ["a" * 300 + ".md", "memory/" + "a" * 300 + ".md", "memory/" + "中" * 100 + ".md",
            "memory/" + "b/" * 3000 + "x.md", "{s}/" + "c" * 300 + ".md"]


def check_resolution(layout, name: str, path: str) -> None:
    """resolve() refuses with PathError or returns a real memory file; get() never shows a secret."""
    memory: Memory = layout["memories"][name]
    allowed = layout["allowed_by"][name]
    try:
        found = memory.workspace.resolve(path)
    except PathError:
        pass
    else:
        real = os.path.realpath(found.abs_path)
        assert real in allowed, (path, str(found.abs_path), real)
        assert not found.abs_path.is_symlink(), (path, str(found.abs_path))
        assert os.path.abspath(found.abs_path) == real, ("a component of the path is a symlink", path, real)
        # Whatever resolves is exactly an entry of the listing (the quick path for memory/ agrees).
        assert found in memory.workspace.list_files(), (path, found)
    try:
        lines = memory.get(path)
    except PathError:
        return
    assert SECRET not in lines.text, (path, lines.path)
    assert ALLOWED_MARK in lines.text, (path, lines.path)


def test_resolve_admits_the_memory_files(layout) -> None:
    """The positive side: real memory files, extra paths and harmless spellings do resolve."""
    ws: Workspace = layout["memories"]["ws"].workspace
    base = layout["base"]
    for spelled in ("MEMORY.md", "memory/2026-01-01.md", "./memory/topic/x.md", "memory\\topic\\x.md",
                    "docs/guide.md", str(base / "extra" / "notes.md"), str(base / "extra-dir" / "deep" / "more.md")):
        found = ws.resolve(spelled)
        assert os.path.realpath(found.abs_path) in layout["allowed"], spelled
    listed = {os.path.realpath(f.abs_path) for f in ws.list_files()}
    assert listed == layout["allowed"]
    for listed_file in ws.list_files():
        assert ws.resolve(listed_file.rel_path) == listed_file
    ws2: Workspace = layout["memories"]["ws2"].workspace
    assert {os.path.realpath(f.abs_path) for f in ws2.list_files()} == layout["allowed_by"]["ws2"]
    for spelled in ("MEMORY.md", "memory/a.md", "memory/MEMORY.md"):  # symlinks to the decoys
        with pytest.raises(PathError):
            ws2.resolve(spelled)


@pytest.mark.parametrize("template", ATTACKS, ids=_ids(ATTACKS))
@pytest.mark.parametrize("name", ["ws", "ws2"])
def test_known_attack_paths_are_refused(layout, name: str, template: str) -> None:
    path = template.replace("{s}", str(layout["base"]))
    check_resolution(layout, name, path)
    # None of these names a memory file by a plain spelling: all are refused.
    with pytest.raises(PathError):
        layout["memories"][name].workspace.resolve(path)


@pytest.mark.parametrize("template", TOO_LONG, ids=_ids(TOO_LONG))
def test_too_long_paths_are_refused_with_path_error(layout, template: str) -> None:
    path = template.replace("{s}", str(layout["base"]))
    with pytest.raises(PathError):
        layout["memories"]["ws"].workspace.resolve(path)


@budget(1500)
@given(data=st.data())
def test_generated_paths_never_leave_the_memory_files(layout, data) -> None:
    path = data.draw(_paths(layout["base"]), label="path")
    for name in ("ws", "ws2"):
        try:
            check_resolution(layout, name, path)
        except OSError as exc:
            raise AssertionError(f"{path!r} raised {exc!r} instead of PathError") from exc
