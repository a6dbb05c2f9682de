"""Keyword statistics never tell a restricted caller what the files it may not see say.

BM25 weighs a word by how many documents hold it. Counted over the whole index, a private file
that mentions "apple" a dozen times lowered the weight of "apple" for everyone: a shared caller
searching "apple banana" saw the note about bananas first, and the note about apples first when
the private file spoke of bananas instead. The order (and deep search's concepts, and the
precise stage's word weights) answered "does the owner's private file mention X?".

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
from mcp_memory.memory import Memory

SHARED = {
    "memory/notes/orchard.md": "# Garden\n\n- The orchard by the barn has an old apple tree that still fruits.\n",
    "memory/notes/market.md": "# Market\n\n- The stall by the station sells a ripe banana bunch on Saturdays.\n",
    "memory/notes/library.md": "# Town\n\n- The library opens at nine on weekdays.\n",
}
QUERY = "apple banana"


def _unseen_text(word: str) -> str:
    return "# Notes\n\n" + "".join(f"## Part {i}\n\n- Note {i} about the {word} diet plan.\n\n" for i in range(30))


def _workspace(root: Path, unseen_path: str, word: str) -> Path:
    for rel, text in SHARED.items():
        write(root, rel, text)
    write(root, unseen_path, _unseen_text(word))
    return root


Answers = list[object]


def _answers(memory: Memory, **who: object) -> Answers:
    out: Answers = []
    for mode in ("search", "precise_search", "deep_search"):
        found = getattr(memory, mode)(QUERY, **who)
        hits = found if isinstance(found, list) else found.hits
        out.append([(h.citation, h.score, h.keyword_coverage) for h in hits])
        out.append(getattr(found, "concepts", None))
    return out


def _in_both(tmp_path: Path, unseen_path: str, ask: Callable[[Memory], Answers]) -> tuple[Answers, Answers]:
    answers = []
    for word in ("apple", "banana"):
        root = _workspace(tmp_path / word, unseen_path, word)
        with Memory(load_settings(root, environ={}), embedder=HashEmbedder()) as memory:
            memory.index()
            answers.append(ask(memory))
    return answers[0], answers[1]


def test_a_shared_callers_answers_do_not_move_with_what_a_private_file_says(tmp_path: Path) -> None:
    shared = _in_both(tmp_path / "shared", "MEMORY.md", lambda m: _answers(m, include_private=False))
    assert shared[0] == shared[1]
    owner = _in_both(tmp_path / "owner", "MEMORY.md", lambda m: _answers(m))
    assert owner[0] != owner[1]  # the owner's own statistics do count the private file


@pytest.mark.parametrize("keywords_only", [False, True])
def test_a_shared_callers_recall_does_not_move_with_what_a_private_file_says(tmp_path: Path,
                                                                           keywords_only: bool) -> None:
    def recall(memory: Memory) -> Answers:
        return [(h.citation, h.score) for h in memory.recall_hits(
            "apple banana stall orchard", include_private=False, keywords_only=keywords_only, min_score=0.0)]

    first, second = _in_both(tmp_path, "MEMORY.md", recall)
    assert first == second and first  # something is recalled, the same in both


def test_a_caller_confined_to_a_scope_learns_nothing_of_another_scope(tmp_path: Path) -> None:
    team = ScopeFilter(names=frozenset({"team"}), confined=True)
    for rel, text in SHARED.items():  # the confined caller's own files
        write(tmp_path / "apple", rel.replace("memory/notes/", "memory/scopes/team/"), text)
        write(tmp_path / "banana", rel.replace("memory/notes/", "memory/scopes/team/"), text)
    confined = _in_both(tmp_path, "memory/scopes/hr/notes.md", lambda m: _answers(m, scopes=team))
    assert confined[0] == confined[1]
    assert any(confined[0][0])  # it does find its scope's notes
