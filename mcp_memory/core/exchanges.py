"""Conversations logged as speaker-labelled lines, and the exchange a turn belongs to.

Daily logs often keep a conversation one turn per line ("- Emily: I went to Green Meadow
Park.", "- **Caroline:** ...", "- 助手：..."). Each turn is a memory of its own, but a turn is
rarely the whole answer: the words of a question match the turn that raised the subject ("I saw
a film today"), while what was said about it is in the next turns ("What was it about?" /
"A taxi driver who ..."). Recall shows the exchange: the matched turn with the answer to a
question it asks, or with a question asked about it and that question's answer.

A list is read as a conversation only when its labels recur: at least two speakers, and the
matched turn's speaker with at least two turns, so a list of fields ("- Host: a", "- Port: b")
is never taken for one.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Protocol

MAX_FOLLOWING = 2  # turns shown after the matched one: a reply and, when it asks, the answer
# "- Name: text", "- **Name:** text", "* Name： text", "Name: text": a label of at most 40
# characters, no colon in it, not starting with a digit ("10:30 standup") or a bracket ("[decision]"),
# followed by the turn's words, not by "//" (a link)
_TURN = re.compile(r"^\s*(?:[-*+]\s+)?(?:\*\*|__)?([^\s\d:：*_\[+-][^:：\n*]{0,39}?)\s*(?:\*\*|__)?\s*[:：](?!//)"
                   r"\s*(?:\*\*|__)?\s*\S")
_ASKS = re.compile(r"[?？][\s\"'”’)）\]]*$|[吗呢][\s。.!！]*$")


class _Unit(Protocol):
    @property
    def text(self) -> str: ...


def speaker(text: str) -> str | None:
    """The speaker label of a turn ("Emily" of "- Emily: hello"), or None for other lines."""
    match = _TURN.match(text)
    return match.group(1).strip().casefold() if match and len(text) > match.end() else None


def asks(text: str) -> bool:
    """Whether a turn ends with a question (its answer is the next turn)."""
    return bool(_ASKS.search(text.strip()))


def exchange(units: Sequence[_Unit], index: int) -> range:
    """The indices of ``units`` (consecutive memories of one file, in order) that make up the
    exchange of ``units[index]``: itself alone unless the list is a conversation; then also the
    answer to a question it asks, or a question the next turn asks about it and that question's
    answer (each a turn of another speaker than the one before), at most ``MAX_FOLLOWING`` turns."""
    speakers = [speaker(u.text) for u in units]
    who = speakers[index]
    if who is None:
        return range(index, index + 1)
    counts = Counter(s for s in speakers if s is not None)
    if len(counts) < 2 or counts[who] < 2:
        return range(index, index + 1)

    def turn_of_another(at: int) -> bool:
        return at < len(units) and speakers[at] is not None and speakers[at] != speakers[at - 1]

    end = index + 1
    while turn_of_another(end) and end - index <= MAX_FOLLOWING:
        if asks(units[end - 1].text):  # the answer to the last shown turn's question
            end += 1
        elif asks(units[end].text) and turn_of_another(end + 1) and end + 1 - index <= MAX_FOLLOWING:
            end += 2  # a question about what was said, and its answer
        else:
            break
    return range(index, end)
