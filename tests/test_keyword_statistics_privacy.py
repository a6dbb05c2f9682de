"""Keyword statistics never tell a restricted caller what the files it may not see say.

BM25 weighs a word by how many documents hold it. Counted over the whole index, a private file
that mentions "apple" a dozen times lowered the weight of "apple" for everyone: a shared caller
searching "apple banana" saw the note about bananas first, and the note about apples first when
the private file spoke of bananas instead. The order (and deep search's concepts, and the
precise stage's word weights) answered "does the owner's private file mention X?".

The unseen file's length told the same way: BM25 compares each note's length with the average
over the index, so a long private file let long notes climb over short ones.

Two workspaces here differ only in a file the caller may not see. Every answer a shared caller
(or a caller confined to one scope) gets, in every mode and in recall, is the same in both; the
owner's answers differ, which shows the statistics are at work.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import HashEmbedder, write
from mcp_memory.config import load_settings
from mcp_memory.core.scopes import ScopeFilter
from mcp_memory.index.keywords import KeywordIndex
from mcp_memory.index.visible_keywords import VisibleKeywords
from mcp_memory.memory import Memory

SHARED = {
    "memory/notes/orchard.md": "# Garden\n\n- The orchard by the barn has an old apple tree that still fruits.\n",
    "memory/notes/market.md": "# Market\n\n- The stall by the station sells a ripe banana bunch on Saturdays.\n",
    "memory/notes/library.md": "# Town\n\n- The library opens at nine on weekdays.\n",
}
QUERY = "apple banana"


def _unseen_text(word: str) -> str:
    return "# Notes\n\n" + "".join(f"## Part {i}\n\n- Note {i} about the {word} diet plan.\n\n" for i in range(30))


Answers = list[object]


def _answers(memory: Memory, **who: object) -> Answers:
    out: Answers = []
    for mode in ("search", "precise_search", "deep_search"):
        found = getattr(memory, mode)(QUERY, **who)
        hits = found if isinstance(found, list) else found.hits
        out.append([(h.citation, h.score, h.keyword_coverage) for h in hits])
        out.append(getattr(found, "concepts", None))
    return out


def _in_both(tmp_path: Path, unseen_path: str, ask: Callable[[Memory], Answers],
             unseen: tuple[str, str] = (_unseen_text("apple"), _unseen_text("banana"))) -> tuple[Answers, Answers]:
    """``ask``'s answers in two workspaces whose file ``unseen_path`` holds one text of ``unseen`` each."""
    answers = []
    for name, text in zip(("first", "second"), unseen, strict=True):
        root = tmp_path / name
        for rel, shared in SHARED.items():
            write(root, rel, shared)
        write(root, unseen_path, text)
        with Memory(load_settings(root, environ={}), embedder=HashEmbedder()) as memory:
            memory.index()
            answers.append(ask(memory))
    return answers[0], answers[1]


LONG_FILLER = (" It was noted down after a long talk about the weekly schedule, the household budget, the"
               " shopping list, the car repairs, the school run and the plans for the winter holidays.")
# Two texts of the file the caller may not see: one word apart, or one size apart.
UNSEEN = {
    "words": (_unseen_text("apple"), _unseen_text("banana")),
    "length": (_unseen_text("kale"), _unseen_text("kale").replace(" diet plan.", " diet plan." + LONG_FILLER)),
}


@pytest.mark.parametrize("differ", sorted(UNSEEN))
def test_a_shared_callers_answers_do_not_move_with_a_private_file(tmp_path: Path, differ: str) -> None:
    shared = _in_both(tmp_path / "shared", "MEMORY.md", lambda m: _answers(m, include_private=False), UNSEEN[differ])
    assert shared[0] == shared[1]
    assert any(shared[0][0])
    owner = _in_both(tmp_path / "owner", "MEMORY.md", lambda m: _answers(m), UNSEEN[differ])
    assert owner[0] != owner[1]  # the owner's own statistics do count the private file


@pytest.mark.parametrize("differ", sorted(UNSEEN))
@pytest.mark.parametrize("keywords_only", [False, True])
def test_a_shared_callers_recall_does_not_move_with_a_private_file(tmp_path: Path, keywords_only: bool,
                                                                   differ: str) -> None:
    def recall(memory: Memory) -> Answers:
        return [(h.citation, h.score) for h in memory.recall_hits(
            "apple banana stall orchard", include_private=False, keywords_only=keywords_only, min_score=0.0)]

    first, second = _in_both(tmp_path, "MEMORY.md", recall, UNSEEN[differ])
    assert first == second and first  # something is recalled, the same in both


def test_a_caller_confined_to_a_scope_learns_nothing_of_another_scope(tmp_path: Path) -> None:
    team = ScopeFilter(names=frozenset({"team"}), confined=True)
    for rel, text in SHARED.items():  # the confined caller's own files
        write(tmp_path / "apple", rel.replace("memory/notes/", "memory/scopes/team/"), text)
        write(tmp_path / "banana", rel.replace("memory/notes/", "memory/scopes/team/"), text)
    confined = _in_both(tmp_path, "memory/scopes/hr/notes.md", lambda m: _answers(m, scopes=team))
    assert confined[0] == confined[1]
    assert any(confined[0][0])  # it does find its scope's notes



def test_restricted_keyword_scores_are_those_of_an_index_without_the_unseen_files(tmp_path: Path) -> None:
    """The scores a restricted caller gets equal BM25 over an index that never held the files it may
    not see: the words' weights, the average length and the candidates are all the visible ones,
    whatever the notes' lengths and word counts, and with deleted documents not yet merged away."""
    shared = [(f"memory/notes/n{i}.md",
               f"note {i} " + "the apple tree " * (1 + i % 5) + "by the old barn " * (i * 7 % 60)) for i in range(16)]
    unseen = [("MEMORY.md", "apple " * 3 + "pie recipe with a very long list of steps " * (6 + 20 * i))
              for i in range(5)]
    gone = [("memory/notes/gone.md", "apple barn " * 40)] * 6
    with_unseen, without = KeywordIndex(tmp_path / "with"), KeywordIndex(tmp_path / "without")
    for index, rows in ((with_unseen, shared + unseen + gone), (without, shared)):
        with index.writer() as writer:
            writer.add_many((f"{path}:{i}", path, text, None) for i, (path, text) in enumerate(rows))
        index.reload()
    with with_unseen.writer() as writer:
        writer.delete_path("memory/notes/gone.md")
    with_unseen.reload()
    stats = VisibleKeywords(with_unseen, ("MEMORY.md",), len(shared))
    for query in ("apple barn", "old apple pie", "tree", "note 3 barn"):
        seen = with_unseen.search(query, 8, excluded_paths=stats.excluded, stats=stats)
        truth = without.search(query, 8)
        assert [hit.id for hit in seen.hits] == [hit.id for hit in truth.hits]
        assert [hit.score for hit in seen.hits] == pytest.approx([hit.score for hit in truth.hits], rel=1e-5)
        assert seen.query_weight == pytest.approx(truth.query_weight, rel=1e-6)
    # the owner's scores do count the unseen files
    owner, alone = with_unseen.search("apple barn", 8), without.search("apple barn", 8)
    assert [hit.score for hit in owner.hits] != pytest.approx([hit.score for hit in alone.hits], rel=1e-3)


def test_a_shared_caller_ranks_as_an_owner_whose_memory_never_held_the_private_files(tmp_path: Path) -> None:
    """Same candidates, same scores: what a shared caller is shown is what the same memory without
    its private files shows its owner, in every mode (and so says nothing of those files)."""
    topics = ["garden", "market", "library", "train", "dentist", "budget", "holiday", "kitchen"]
    notes = {f"memory/notes/{topic}-{i}.md": f"# {topic.title()}\n\n- Note {i} on the {topic}: the apple"
                                               f" {'and banana ' * (i % 3)}plan for week {i}.\n"
             for topic in topics for i in range(8)}
    private = "# Private\n\n" + "".join(f"- The apple plan {i} for the {topics[i % 8]}, in private.\n"
                                        for i in range(40))
    answers = []
    for name, files, who in (("with", {**notes, "MEMORY.md": private}, {"include_private": False}),
                             ("without", notes, {})):
        for rel, text in files.items():
            write(tmp_path / name, rel, text)
        with Memory(load_settings(tmp_path / name, environ={}), embedder=HashEmbedder()) as memory:
            memory.index()
            found = []
            for query in ("apple plan", "banana for the garden week 3", "the kitchen budget"):
                for mode in ("search", "precise_search", "deep_search"):
                    result = getattr(memory, mode)(query, max_results=8, **who)
                    found.append([(h.citation, round(h.score, 4)) for h in (result if isinstance(result, list)
                                                                            else result.hits)])
            answers.append(found)
    assert answers[0] == answers[1]
    assert all(answers[0])
