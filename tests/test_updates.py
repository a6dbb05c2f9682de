"""Changed facts: the later statement wins in every search mode, in recall and in the sleep cycle.

"The user prefers npm" and, later, "The user now prefers pnpm, no longer npm" are both on disk
(the issue's example). Search lists the later first and names it in the earlier's ``replaced_by``;
recall shows only the later; ``mcp-memory sleep --dry-run`` marks the earlier superseded. The
detector (``core/updates.py``) is read in English, Chinese and across the two, and memories that
only look alike (an addition, another person, an action and its reversal) are left as they are.

The MCP tools are driven through the real ``mcp.Client`` in memory (HashEmbedder: the subject here
is the reading of changes, not embedding); the sleep cycle runs as a separate program and, with
the issue's example end to end, with the real default embedder.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from conftest import close_server, http_server, indexed_memory, make_server, server_env, write
from mcp_memory.config import Settings, load_settings
from mcp_memory.core import updates
from mcp_memory.core.memory_ids import memory_id
from mcp_memory.core.updates import Statement, supersedes
from mcp_memory.memory import Memory

OLD, NEW = "memory/2026-10-01.md", "memory/2026-11-20.md"
NPM = "- [preference] The user prefers npm as the package manager."
PNPM = "- [preference] The user now prefers pnpm as the package manager, no longer npm."
NOTES = {
    OLD: f"# 2026-10-01\n\n{NPM}\n- The staging database runs on db-1.internal.\n",
    NEW: f"# 2026-11-20\n\n{PNPM}\n- The user's cat is called Miso.\n",
    "memory/2026-09-10.md": "# 2026-09-10\n\n- The user is learning Portuguese on weekday mornings.\n",
    "memory/projects/atlas.md": "# Atlas\n\nAtlas is the data platform; it runs on Kubernetes with Airflow.\n",
}
QUESTION = "which package manager does the user prefer"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def npm_notes(settings: Settings) -> Settings:
    for path, text in NOTES.items():
        write(settings.workspace, path, text)
    return settings


def _at(hits: list[dict[str, Any]], text: str) -> int | None:
    """The position of the hit named by the memory ``text``."""
    wanted = memory_id(text)
    return next((i for i, hit in enumerate(hits) if hit["id"] == wanted), None)


def assert_later_wins(hits: list[dict[str, Any]], older: str, newer: str) -> None:
    """The later memory is listed above the earlier, which stays in the result and names it."""
    old_at, new_at = _at(hits, older), _at(hits, newer)
    assert new_at is not None and old_at is not None, [h["snippet"] for h in hits]
    assert new_at < old_at, [h["snippet"] for h in hits]
    assert hits[old_at]["replaced_by"] == hits[new_at]["id"] and hits[new_at]["replaced_by"] == ""


# ----- the detector --------------------------------------------------------------------------------
@pytest.mark.parametrize(("older", "newer"), [
    ("The user prefers npm as the package manager.",
     "The user now prefers pnpm as the package manager, no longer npm."),
    ("The staging DB is on db-1.", "The staging DB is on db-2."),
    ("Rent for the flat is 1,200 euros a month.", "Rent went up to 1,350 euros a month."),
    ("房租每月四千五。", "房租涨到每月四千八了。"),
    ("用户习惯用 yarn 管理依赖。", "用户改用 pnpm 了，不再用 yarn。"),
    ("小陈住在北京朝阳区。", "小陈搬到深圳南山区了。"),
    ("The team's CI runs on Jenkins.", "持续集成已经从 Jenkins 迁移到 GitHub Actions。"),
    ("用户的 Kindle 是 Paperwhite 3。", "The user replaced the Paperwhite 3 with a Kindle Scribe."),
    ("The user's manager is Priya.", "The user now reports to Marcus."),
    # a compound said again in full, and a host name as the value
    ("The release notes are kept in the wiki.", "The release notes now go in CHANGELOG.md."),
    ("构建机的地址是 ci-03。", "构建机现在换成 ci-09 了。"),
    ("The build agent runs on ci-03.", "The build agent now runs on ci-09."),
    ("停车费每月三百。", "停车费涨到每月四百了。"),  # a value after the subject ends its name
])
def test_a_changed_value_is_an_update(older: str, newer: str) -> None:
    assert supersedes(Statement(newer, _day(2)), Statement(older, _day(1)))
    # Order in time decides: stated before the other, it updates nothing.
    assert not supersedes(Statement(newer, _day(1)), Statement(older, _day(2)))


@pytest.mark.parametrize(("older", "newer"), [
    ("The user likes tea.", "The user also likes coffee in the afternoon."),  # an addition
    ("Bob's phone number is 555-0134.", "Carol's phone number is 555-0178."),  # another person
    ("The user's sister lives in Dublin.", "The user's brother now lives in Cork."),  # another relative
    ("The staging DB is on db-1.", "The production DB is now on db-7."),  # another environment
    ("Installed the Grammarly extension in Chrome.", "Uninstalled the Grammarly extension in Chrome."),
    ("Deployed version 2.4 of the API on Monday.", "Deployed version 2.5 of the API on Thursday."),  # two events
    ("三月五号开了复盘会。", "三月十九号又开了复盘会。"),  # a recurring event
    ("小王的生日是五月二号。", "小李的生日是五月二十号。"),  # another person
    ("华东区的缓存节点是 cache-a1。", "华北区的缓存节点是 cache-b2。"),  # another region
    ("用户喜欢吃苹果。", "用户喜欢吃芒果。"),  # one likes many things
    ("安卓端用 Kotlin 写。", "The iOS app is written in Swift now."),  # another platform
    # "manager" in a compound names a tool, not the user's manager
    ("The user prefers npm as the package manager.", "The user switched the task manager to Todoist."),
    ("The user's manager is Priya.", "The user switched the password manager to Bitwarden."),
    # ...and a concept word before another noun names that noun: a checklist and a branch
    ("The release checklist is in the wiki.", "The release branch is now cut on Fridays."),
    # the letters of a host name are not a word of the memory: "log-07" says nothing of logs
    ("The payments service logs to Graylog.", "日志主机现在换成 log-07 了。"),
    # one head, two things: a cache server and a monitoring server
    ("缓存服务器在广州机房。", "监控服务器现在迁到杭州了。"),
    # one subject, two names made of it: a cache server and the cache service's fee
    ("缓存服务器在深圳机房。", "缓存服务费现在涨到每月 800 元。"),
])
def test_facts_that_both_hold_are_not_updates(older: str, newer: str) -> None:
    assert not supersedes(Statement(newer, _day(2)), Statement(older, _day(1)))


def test_across_languages_the_embedder_settles_what_the_words_cannot() -> None:
    """No word of "站会改到 10 点了" ties it to "The team standup is at 9:30": the rules ask
    ``same_fact`` (the embedder's cosine), for such pairs only, and never for two named owners."""
    asked: list[tuple[str, str]] = []

    def same_fact(pairs: Sequence[tuple[str, str]]) -> list[bool]:
        asked.extend(pairs)
        return [True] * len(pairs)

    standup, moved = Statement("- The team standup is at 9:30.", _day(1)), Statement("- 站会改到 10 点了。", _day(2))
    assert not supersedes(moved, standup)  # the words alone: undecided is no update
    assert supersedes(moved, standup, same_fact)
    assert asked == [(standup.text, moved.text)]
    refused = [
        ("Farah's phone number is 555-0199.", "小郑的手机号换成了 137 0000 5678。"),  # a named owner each
        ("The user's sister lives in Boston.", "用户的哥哥搬到深圳了。"),  # another relative
        ("用户喜欢吃苹果。", "The user also likes mangoes."),  # an addition
        ("The staging DB is on db-1.", "The production DB is now on db-7."),  # one language: the words decide
    ]
    for older, newer in refused:
        assert not supersedes(Statement(newer, _day(2)), Statement(older, _day(1)), same_fact)
    assert len(asked) == 1


def test_undated_or_same_day_memories_are_never_ordered() -> None:
    older, newer = "The staging DB is on db-1.", "The staging DB is on db-2."
    assert not supersedes(Statement(newer, None), Statement(older, _day(1)))
    assert not supersedes(Statement(newer, _day(1)), Statement(older, _day(1)))


def _day(n: int) -> Any:
    import datetime as dt

    return dt.date(2026, 1, n)


# ----- the vocabulary: words/updates.toml ----------------------------------------------------------
@pytest.fixture
def words_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], None]]:
    """Points the detector at a copy of its word file, edited by the test; the real file is read again after."""

    def use(edited: str) -> None:
        path = tmp_path / "updates.toml"
        path.write_text(edited, encoding="utf-8")
        monkeypatch.setattr(updates, "_WORDS_FILE", path)
        updates._clear_caches()

    yield use
    updates._clear_caches()


WORDS = updates._WORDS_FILE.read_text(encoding="utf-8")  # the file as the package ships it


def test_the_change_cues_are_read_from_the_word_file(words_file: Callable[[str], None]) -> None:
    memory = "Henceforth the user drinks green tea."
    assert not updates.has_change_cue(memory)
    assert WORDS.count('"nowadays", "these days",') == 1
    words_file(WORDS.replace('"nowadays", "these days",', '"nowadays", "henceforth", "these days",'))
    assert updates.has_change_cue(memory)


@pytest.mark.parametrize(("edit", "message"), [
    (("[change]", "[change"), r"words/updates\.toml: .*line"),  # not TOML
    (("[likes]", "[liking]"), r"unknown table\(s\) \['liking'\], missing table\(s\) \['likes'\]"),
    (('zh_particles = "了过"', 'zh_particles = "了过"\nzh_typo = "的"'), r"\[past\]: expected the keys"),
    (('"nowadays", "these days",', '"Nowadays", "these days",'), r"\[change\] en: 'Nowadays' is not a word"),
    (('zh_particles = "了过"', "zh_particles = 3"), r"\[past\] zh_particles: expected a string of characters"),
    (('slot_verbs = ["prefer", "live", "own"]', 'slot_verbs = ["prefer", "lives"]'),
     r"\[kinds\] slot_verbs: not concepts"),
    (('stack = [["frontend", "前端"], ["backend", "后端"]]', 'stack = [["frontend", "前端"]]'),
     r"\[contrasts\] stack: expected two members"),
    (('project = ["project", "项目"]', "project = []"), r"\[concepts\] project: expected a non-empty array"),
])
def test_a_malformed_word_file_is_a_clear_error(words_file: Callable[[str], None], edit: tuple[str, str],
                                                message: str) -> None:
    before, after = edit
    assert WORDS.count(before) == 1
    words_file(WORDS.replace(before, after))
    with pytest.raises(ValueError, match=message):
        updates.changes("The staging DB is on db-1.", "The staging DB is on db-2.")


# ----- every mode, as an MCP client sees it ---------------------------------------------------------
@pytest.mark.anyio
async def test_the_issue_example_in_every_mode_through_the_mcp_client(npm_notes: Settings) -> None:
    srv, service = make_server(npm_notes)
    try:
        async with Client(srv) as client:
            for tool, arguments in (("memory_search", {}), ("precision_memory_search", {}),
                                    ("deep_memory_search", {})):
                result = await client.call_tool(tool, {"query": QUESTION, **arguments})
                assert not result.is_error
                assert_later_wins(result.structured_content["results"], NPM, PNPM)
            block = (await client.call_tool("memory_recall", {"prompt": f"{QUESTION}?"})).structured_content
            assert "pnpm" in block["context"] and "prefers npm as" not in block["context"]
    finally:
        close_server(service)


def test_a_later_memory_below_the_hits_shown_takes_the_earlier_ones_place(npm_notes: Settings) -> None:
    """Asked for one hit, the search still answers with the later memory, not the stale one."""
    with indexed_memory(npm_notes) as memory:
        (hit,) = memory.search("package manager npm", max_results=1)
    assert hit.id == memory_id(PNPM)


SUBLIME = "- The user's favourite editor is Sublime Text."
ZED = "- The user now mostly writes code in Zed, no longer Sublime Text."


def _editor_notes(settings: Settings, update_path: str, update: str) -> None:
    """The editor preference and its update, worded unlike the question, among 30 memories that
    share the question's other words: the update is nowhere near the question's first hits."""
    write(settings.workspace, "memory/2026-01-05.md", f"# 2026-01-05\n\n{SUBLIME}\n")
    write(settings.workspace, update_path, update)
    dishes = ("ramen", "dumplings", "curry", "paella", "falafel", "pho", "risotto", "tacos", "goulash", "laksa",
              "bibimbap", "moussaka", "pierogi", "ceviche", "biryani", "lasagne", "burritos", "satay", "gnocchi",
              "jollof", "khachapuri", "borscht", "tagine", "poutine", "okonomiyaki", "empanadas", "souvlaki",
              "shakshuka", "kimchi", "arancini")
    for day, dish in enumerate(dishes, start=1):
        write(settings.workspace, f"memory/2026-07-{day:02d}.md",
              f"# 2026-07-{day:02d}\n\n- The user would like the {dish} at the canteen.\n")


def test_an_update_the_question_does_not_find_is_found_from_the_stale_memory(settings: Settings) -> None:
    """"Which editor does the user like" finds the Sublime line; the Zed line shares none of its
    words but "user" (as do 30 other memories): it is found from the Sublime line's side."""
    _editor_notes(settings, "memory/2026-06-01.md", f"# 2026-06-01\n\n{ZED}\n")
    with indexed_memory(settings) as memory:
        for hits in (memory.search("which editor does the user like", max_results=5),
                     memory.precise_search("which editor does the user like", max_results=5).hits,
                     memory.deep_search("which editor does the user like", max_results=5).hits):
            assert_later_wins([h.to_dict() for h in hits], SUBLIME, ZED)
        shown = {h.id for h in memory.recall_hits("which editor does the user like?")}
        assert memory_id(SUBLIME) not in shown


def test_an_update_beside_the_memory_a_chunk_is_shown_for_is_read(settings: Settings,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A daily log's chunk is shown named by the bullet the question fits best (the teacher); the
    update beside it (the class moved) is read too, with no neighbour lookup needed."""
    from mcp_memory.index import later_memories
    monkeypatch.setattr(later_memories, "_vector_neighbours", lambda *_: [])
    monkeypatch.setattr(later_memories, "_keyword_neighbours", lambda *_: [])
    older = "- The user's Spanish class is on Wednesday evenings."
    moved = "- The Spanish class moved to Saturday mornings."
    write(settings.workspace, "memory/2026-03-01.md", f"# 2026-03-01\n\n{older}\n")
    write(settings.workspace, "memory/2026-05-01.md",
          f"# 2026-05-01\n\n{moved}\n- The user's Spanish class teacher is Lucia, and the user likes the class.\n")
    with indexed_memory(settings) as memory:
        hits = [h.to_dict() for h in memory.search("the user's Spanish class", max_results=4)]
    assert_later_wins(hits, older, moved)


def test_an_update_in_a_private_file_never_reaches_a_shared_search(settings: Settings) -> None:
    """The update lives in MEMORY.md (private by default): a shared caller sees the stale memory
    as it is, with no trace of the private one; the owner sees the update win."""
    dated = f"{ZED} (2026-06-01)"
    _editor_notes(settings, "MEMORY.md", f"# Memory\n\n{dated}\n")
    with indexed_memory(settings) as memory:
        shared = [h.to_dict() for h in memory.search("which editor does the user like", max_results=5,
                                                     include_private=False)]
        assert all(h["path"] != "MEMORY.md" and "Zed" not in h["snippet"] for h in shared), shared
        assert all(h["replaced_by"] == "" for h in shared), shared
        owner = [h.to_dict() for h in memory.search("which editor does the user like", max_results=5,
                                                    include_private=True)]
        assert_later_wins(owner, SUBLIME, dated)


@pytest.mark.parametrize("keywords_only", [False, True])
def test_a_private_update_never_changes_what_a_shared_recall_shows(settings: Settings, keywords_only: bool) -> None:
    """Recall for a shared caller, by vectors or by keywords alone (a hook with no server): the
    shared memory is shown as it is, as if the private update did not exist."""
    dated = f"{ZED} (2026-06-01)"
    _editor_notes(settings, "MEMORY.md", f"# Memory\n\n{dated}\n")
    with indexed_memory(settings) as memory:
        shared = memory.recall_hits("which editor does the user like, Sublime Text?", include_private=False,
                                    keywords_only=keywords_only)
        owner = memory.recall_hits("which editor does the user like, Sublime Text?", keywords_only=keywords_only)
    assert memory_id(SUBLIME) in {h.id for h in shared}, [h.snippet for h in shared]
    assert all(h.path != "MEMORY.md" and not h.replaced_by for h in shared), shared
    assert memory_id(SUBLIME) not in {h.id for h in owner}, [h.snippet for h in owner]


def test_a_filter_keeps_updates_outside_it_out(settings: Settings) -> None:
    """Asked about the days before the update, the search answers as of then."""
    _editor_notes(settings, "memory/2026-06-01.md", f"# 2026-06-01\n\n{ZED}\n")
    with indexed_memory(settings) as memory:
        hits = memory.search("which editor does the user like", max_results=5, before="2026-05-01")
    assert _at([h.to_dict() for h in hits], ZED) is None
    assert all(h.replaced_by == "" for h in hits)


def test_chinese_and_across_languages(settings: Settings) -> None:
    older, newer = "- [preference] 用户习惯用 yarn 管理前端依赖。", "- [preference] 用户改用 pnpm 了，不再用 yarn。"
    ci_old, ci_new = "- The team's CI runs on Jenkins.", "- 持续集成已经从 Jenkins 迁移到 GitHub Actions。"
    write(settings.workspace, "memory/2026-03-01.md", f"# 2026-03-01\n\n{older}\n")
    write(settings.workspace, "memory/2026-06-01.md", f"# 2026-06-01\n\n{newer}\n")
    write(settings.workspace, "memory/2026-02-01.md", f"# 2026-02-01\n\n{ci_old}\n")
    write(settings.workspace, "memory/2026-05-01.md", f"# 2026-05-01\n\n{ci_new}\n")
    write(settings.workspace, "memory/2026-04-01.md", "# 2026-04-01\n\n- 用户每天早上跑步五公里。\n")
    with indexed_memory(settings) as memory:
        assert_later_wins([h.to_dict() for h in memory.search("用户用 yarn 管理依赖吗")], older, newer)
        assert_later_wins([h.to_dict() for h in memory.precise_search("用户用 yarn 管理依赖吗").hits], older, newer)
        assert_later_wins([h.to_dict() for h in memory.search("Jenkins CI for the team")], ci_old, ci_new)
        shown = {h.id for h in memory.recall_hits("用 yarn 管理前端依赖")}
        assert memory_id(newer) in shown and memory_id(older) not in shown


def test_look_alikes_keep_their_places(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    pairs = [("- The user likes tea.", "- The user also likes coffee in the afternoon."),
             ("- Bob's phone number is 555-0134.", "- Carol's phone number is 555-0178."),
             ("- Turned on the dark-mode flag for beta users.", "- Turned off the dark-mode flag for beta users."),
             ("- 小王的生日是五月二号。", "- 小李的生日是五月二十号。")]
    for n, (older, newer) in enumerate(pairs, 1):
        write(settings.workspace, f"memory/2026-0{n}-01.md", f"# 2026-0{n}-01\n\n{older}\n")
        write(settings.workspace, f"memory/2026-0{n}-15.md", f"# 2026-0{n}-15\n\n{newer}\n")
    queries = ["what does the user like to drink", "phone numbers of Bob and Carol", "dark-mode flag", "生日"]
    with indexed_memory(settings) as memory:
        found = {q: memory.search(q) for q in queries}
        monkeypatch.setattr(updates, "SEARCH_WINDOW", 0)
        without = {q: memory.search(q) for q in queries}
    for query in queries:
        assert [h.id for h in found[query]] == [h.id for h in without[query]]  # nothing moved
        assert all(h.replaced_by == "" for h in found[query])


PIANO = "- The user's piano lesson is on Wednesday evenings."
PIANO_MOVED = "- 用户的钢琴课调到周五下午了。"  # "the user's piano lesson moved to Friday afternoon"
CROSS_NOTES = {  # daily logs of several bullets each, in both languages
    "memory/2026-03-02.md": f"# 2026-03-02\n\n{PIANO}\n- Farah's phone number is 555-0199.\n"
                            "- The user's music subscription costs 10 dollars a month.\n",
    "memory/2026-05-11.md": f"# 2026-05-11\n\n- 阳台上种了三盆多肉。\n{PIANO_MOVED}\n"
                            "- 小郑的手机号换成了 137 0000 5678。\n- 用户的视频会员涨到每月 25 元了。\n",
    "memory/2026-04-07.md": "# 2026-04-07\n\n- The router is in the hallway closet.\n- 用户在学日语。\n",
}


@pytest.mark.integration
@pytest.mark.parametrize("model_knows_its_scale", [True, False])
def test_an_update_in_another_language_wins_with_the_default_embedder(
        settings: Settings, monkeypatch: pytest.MonkeyPatch, model_knows_its_scale: bool) -> None:
    """The piano lesson moved, said in Chinese in a log of four bullets: search and the sleep cycle
    take it as the update, and leave the other person's phone and the other subscription alone.
    A model whose cosine scale is unknown decides nothing across languages."""
    from mcp_memory.embedding.local import USEEmbedder
    if not model_knows_its_scale:
        monkeypatch.setattr(USEEmbedder, "same_fact_cosine", None)
    for path, text in CROSS_NOTES.items():
        write(settings.workspace, path, text)
    with Memory(settings) as memory:
        memory.index()
        hits = [h.to_dict() for h in memory.search("when is the user's piano lesson", max_results=5)]
        retired = {r.item.text: r.by.text for r in memory.sleep.run(dry_run=True).retired}
    if model_knows_its_scale:
        assert_later_wins(hits, PIANO, PIANO_MOVED)
        assert retired == {PIANO: PIANO_MOVED}
    else:
        assert all(h["replaced_by"] == "" for h in hits), hits
        assert retired == {}


@pytest.mark.integration
def test_sleep_marks_a_move_said_in_another_language_that_a_name_ties(settings: Settings) -> None:
    """"Noor 搬到波尔图了" updates "Noor lives in Lisbon": the name ties the two, and their cosine
    (about 0.36 with the default model) is below what a same-language paraphrase reaches, so a
    change said in words is enough. The other memories around them stay unmarked."""
    lisbon, porto = "- Noor lives in Lisbon.", "- Noor 搬到波尔图了。"
    write(settings.workspace, "memory/2026-02-03.md",
          f"# 2026-02-03\n\n{lisbon}\n- The user's bike is a Brompton.\n- 用户在学日语。\n")
    write(settings.workspace, "memory/2026-06-21.md",
          f"# 2026-06-21\n\n- Kenji also started learning Portuguese.\n{porto}\n- 阳台上种了三盆多肉。\n")
    with Memory(settings) as memory:
        memory.index()
        retired = {r.item.text: (r.kind, r.by.text) for r in memory.sleep.run(dry_run=True).retired}
    assert retired == {lisbon: ("superseded", porto)}


# ----- the sleep cycle ------------------------------------------------------------------------------
@pytest.mark.integration
def test_sleep_dry_run_marks_the_npm_line_as_a_separate_program(npm_notes: Settings) -> None:
    result = subprocess.run([sys.executable, "-m", "mcp_memory", "sleep", "--dry-run", "-w", str(npm_notes.workspace)],
                            capture_output=True, text=True, timeout=300, env=server_env())
    assert result.returncode == 0, result.stderr
    assert f"would mark {OLD}#L3 superseded by {NEW}#L3" in result.stdout
    assert (npm_notes.workspace / OLD).read_text(encoding="utf-8") == NOTES[OLD]  # a dry run changes nothing


@pytest.mark.integration
def test_the_issue_example_end_to_end_with_the_default_embedder(npm_notes: Settings) -> None:
    with Memory(npm_notes) as memory:
        memory.index()
        assert_later_wins([h.to_dict() for h in memory.search(QUESTION)], NPM, PNPM)
        assert_later_wins([h.to_dict() for h in memory.deep_search(QUESTION).hits], NPM, PNPM)
        shown = {h.id for h in memory.recall_hits(QUESTION)}
        assert memory_id(PNPM) in shown and memory_id(NPM) not in shown
        report = memory.sleep.run()  # marked in place, nothing deleted
    text = (npm_notes.workspace / OLD).read_text(encoding="utf-8")
    assert text.startswith(f"# 2026-10-01\n\n{NPM} <!-- superseded by {memory_id(PNPM)} ({NEW}#L3) -->\n")
    assert [(r.kind, r.item.citation) for r in report.retired] == [("superseded", f"{OLD}#L3")]
    assert Path(npm_notes.workspace / NEW).read_text(encoding="utf-8") == NOTES[NEW]



class _EnglishCrossEncoder(BaseHTTPRequestHandler):
    """A remote cross-encoder (``POST /rerank``, Cohere's answer) that knows English only: a
    document's score is the share of the query's words it holds, so text in Chinese scores 0."""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        asked = set(re.findall(r"[a-z]+", body["query"].lower()))
        scores = [len(asked & set(re.findall(r"[a-z]+", doc.lower()))) / max(1, len(asked))
                  for doc in body["documents"]]
        data = json.dumps({"results": [{"index": i, "relevance_score": s} for i, s in enumerate(scores)]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.mark.integration
def test_precise_and_deep_read_the_first_stage_for_an_update_their_reranker_sends_far_down(
        settings: Settings) -> None:
    """An English-only cross-encoder puts the Chinese update last, below twenty-odd English notes
    about other monthly costs; the first stage found it by meaning. Precise and deep, reranked by
    it, still list the update in place of the stale plan it changes, as the default search does."""
    plan = "- The office internet plan costs 60 euros a month."
    raised = "- 办公室宽带涨到每月 75 欧元了。"
    write(settings.workspace, "memory/2026-03-02.md", f"# 2026-03-02\n\n{plan}\n")
    write(settings.workspace, "memory/2026-09-14.md",
          f"# 2026-09-14\n\n- The hallway lamp needs a new bulb.\n{raised}\n")
    costs = ["parking", "gym", "phone", "cleaning", "water", "coffee", "printer", "storage", "music", "laundry",
             "insurance", "bike", "garden", "newspaper", "alarm", "cloud backup", "window washing", "snacks",
             "plants", "recycling", "pest control", "security", "heating", "fuel"]
    for day, what in enumerate(costs, start=1):
        write(settings.workspace, f"memory/2025-05-{day:02d}.md",
              f"# 2025-05-{day:02d}\n\n- The {what} costs about {20 + day} euros each month for us.\n")
    question = "how much do we pay for the office internet each month"
    with http_server(_EnglishCrossEncoder) as port:
        remote = load_settings(settings.workspace, environ={}, overrides={
            "rerank.provider": "http", "rerank.base_url": f"http://127.0.0.1:{port}", "rerank.model": "english-only"})
        with Memory(remote) as memory:
            memory.index()
            assert_later_wins([h.to_dict() for h in memory.search(question, max_results=5)], plan, raised)
            precise = memory.precise_search(question, max_results=5)
            assert precise.reranker == "http" and not precise.warnings
            assert_later_wins([h.to_dict() for h in precise.hits], plan, raised)
            assert_later_wins([h.to_dict() for h in memory.deep_search(question, max_results=5).hits], plan, raised)
