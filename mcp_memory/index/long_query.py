"""A long query ranked by what it asks now, as well as by its whole.

A client often searches with the conversation so far: several turns of small talk, the user's
question last (``core/query_focus.py``). Ranked as one text, its question is a few words among a
hundred, and one vector of the whole reads mostly as the small talk: on LoCoMo's conversational
queries the first stage found the answer in its top five 0.34 of the time, against 0.89 for the
question alone (docs/benchmarks.md, "Conversational queries"). So every search mode ranks a long
query twice, by its whole (which keeps the conversation's topic) and by its focus, the latest
turn, and blends the two: ``share × focus + (1 − share) × whole``.

``share`` is ``FOCUS_SHARE`` times how well the focus is heard (``heard``): the share, by IDF, of
its words the notes hold at all that one of its leading rows holds, read as the local reranker
reads word evidence (none below ``WORDS_FOUND_LOW``, all from ``WORDS_FOUND_HIGH``). A latest turn
that only points back ("what happened last time?") is not heard, and the whole query keeps the
order: the first stage min-max scales even a faint vector match of the focus up to 1.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from mcp_memory.core.analysis import WORDS_FOUND_HIGH, WORDS_FOUND_LOW

# The focus's share of a long query's ranking when it is fully heard: the even blend (0.3 and 0.7
# were no better on the dialogue dev split, docs/benchmarks.md).
FOCUS_SHARE = 0.5
HEARD_ROWS = 10  # the focus's leading rows read for its words
UNSEEN = "\x00unseen"  # a term no note holds: its IDF is that of every unseen term


def heard(terms: Iterable[str], idf: Callable[[list[str]], dict[str, float]],
          leading: Iterable[frozenset[str]]) -> float:
    """How well the first stage hears a focus (0..1) whose analysed words are ``terms``, from the
    terms of its ``leading`` rows. ``idf`` weighs words as the caller may see them. Words no note
    holds ("before I forget") say nothing either way: they weigh as much as ``UNSEEN`` and are
    left out."""
    wanted = list(dict.fromkeys(terms))
    if not wanted:
        return 0.0
    weights = idf([*wanted, UNSEEN])
    unseen = weights.pop(UNSEEN, 0.0)
    weights = {t: w for t, w in weights.items() if w < unseen - 1e-9}
    total = sum(weights.values())
    if total <= 0:
        return 0.0
    found = max((sum(w for t, w in weights.items() if t in held) / total for held in leading), default=0.0)
    return min(1.0, max(0.0, (found - WORDS_FOUND_LOW) / (WORDS_FOUND_HIGH - WORDS_FOUND_LOW)))


def blend(whole: dict[int, float], now: dict[int, float], share: float) -> dict[int, float]:
    """Each row's ``share × now + (1 − share) × whole`` (0 where a ranking lacks the row)."""
    return {row: share * now.get(row, 0.0) + (1 - share) * whole.get(row, 0.0)
            for row in dict.fromkeys([*whole, *now])}


def leading_rows(scores: dict[int, float], count: int = HEARD_ROWS) -> list[int]:
    """The ``count`` best rows of ``scores``."""
    return [row for row, _ in sorted(scores.items(), key=lambda item: item[1], reverse=True)[:count]]
