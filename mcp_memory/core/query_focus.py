"""The focus of a long query: what a reranker should read it for.

A client often searches with the conversation so far: several turns of small talk ending with
the user's question. The first stage reads the whole of it (its words and one vector, which
carry the conversation's topic), but line-by-line evidence cannot: a 100-word query's words are
never found within two lines of one memory, so every candidate holds only a small share of
them, and the closest line to a whole conversation is the line most like small talk. The
focus is the latest turn (with the one before it when it is short, "and when was that?"),
which is what the user asks now; a long query without turns (a pasted text) is read for its
last sentences. A short query is its own focus.
"""

from __future__ import annotations

import re

# A query with at least this many words (a CJK character counts as half a word) or turns is long.
LONG_WORDS = 40
LONG_TURNS = 3
LONG_CHARS = 1_000
# A latest turn shorter than this leans on the turn before it.
SHORT_TURN_WORDS = 8
# The focus keeps at most this many words (of the end of the latest turns).
FOCUS_WORDS = 60
FOCUS_CHARS = 400
_MAX_SCAN = 4_000  # characters of a query's end read for its turns (a pasted transcript may be huge)

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# "User: ...", "assistant: ...", "Caroline: ...", "**Mel:** ...", "- 陈静：...", "[10:02] Bob: ..."
_SPEAKER = re.compile(r"^\s*(?:[-*>]\s*)?(?:\[[^\]\n]{1,20}\]\s*)?"  # a bullet, a time
                      r"\**([^\W\d_][\w .'’-]{0,30}?)\**\s*(?::\**\s+|：\**\s*)", re.UNICODE)
_ASSISTANT = re.compile(r"^(?:assistant|ai|bot|model|system|claude|gpt|chatgpt|gemini|助手|机器人|ai助手)$",
                        re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?。！？…])\s*")


def words(text: str) -> float:
    """Words of ``text``; a CJK character counts as half a word (a word is 1.5-2 characters)."""
    cjk = len(_CJK.findall(text))
    return len(_WORD.findall(_CJK.sub(" ", text))) + cjk / 2


def turns(text: str) -> list[tuple[str | None, str]]:
    """``(speaker, words)`` of each turn of a conversation-shaped text, in order; a line without a
    speaker continues the turn before it (or is a turn of its own at the start)."""
    out: list[tuple[str | None, str]] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        match = _SPEAKER.match(line)
        if match:
            out.append((match[1].strip(), line[match.end():].strip()))
        elif out:
            out[-1] = (out[-1][0], f"{out[-1][1]}\n{line.strip()}")
        else:
            out.append((None, line.strip()))
    return out


def is_long(query: str) -> bool:
    """Whether ``query`` is long enough to be read for its focus."""
    if len(query) >= LONG_CHARS or words(query) >= LONG_WORDS:
        return True
    return sum(1 for speaker, _ in turns(query[-_MAX_SCAN:]) if speaker) >= LONG_TURNS


def focus(query: str) -> str:
    """What the user asks now: the latest user turn of a long query (see the module's doc), else the query."""
    if not is_long(query):
        return query
    tail = query[-_MAX_SCAN:]
    said = turns(tail)
    if sum(1 for speaker, _ in said if speaker) >= 2:
        # The latest turn not the assistant's; a short one with the turn before it.
        last = max((i for i, (speaker, _) in enumerate(said) if not (speaker and _ASSISTANT.match(speaker))),
                   default=len(said) - 1)
        parts = [said[last][1]]
        if words(parts[0]) < SHORT_TURN_WORDS and last > 0:
            parts.insert(0, said[last - 1][1])
        return _tail(" ".join(parts))
    # No turns: the last sentences.
    sentences = [s for s in _SENTENCE_END.split(tail.strip()) if s.strip()]
    picked: list[str] = []
    while sentences and (not picked or words(" ".join(picked)) < SHORT_TURN_WORDS):
        picked.insert(0, sentences.pop())
    return _tail(" ".join(picked)) or query


def _tail(text: str) -> str:
    """The last ``FOCUS_WORDS`` words of ``text`` (CJK characters as half words)."""
    text = text.strip()[-FOCUS_CHARS:]
    if words(text) <= FOCUS_WORDS:
        return text
    # Walk back from the end until the budget is spent.
    budget = float(FOCUS_WORDS)
    i = len(text)
    while i > 0 and budget > 0:
        i -= 1
        if _CJK.match(text[i]):
            budget -= 0.5
        elif text[i].isspace() and i + 1 < len(text) and not text[i + 1].isspace():
            budget -= 1
    return text[i:].strip()
