"""First person to third person, in English, with the verb kept in agreement.

A captured fact is read later, out of its conversation, so "we need to keep the logs" is
written "the team needs to keep the logs" and "I was on call" "the user was on call". The
subject changes number ("we" is plural, "the team" singular), so every verb that follows
"I" or "we" is put in agreement: "we were" -> "the team was", "we have" -> "the team has",
"we don't" -> "the team doesn't", "I usually write" -> "the user usually writes".

When the word after the subject (and its adverbs) cannot be read as a verb ("we at Acme
use ...", "I, for one, ..."), ``third_person_en`` returns None: the caller then keeps the
sentence in the first person rather than write an ungrammatical one.
"""

from __future__ import annotations

import re

_CONTRACTED = [  # whole forms first, so "we're" never meets the verb rule
    (re.compile(r"\bI'm\b"), "the user is"), (re.compile(r"\bI am\b"), "the user is"),
    (re.compile(r"\bI've\b"), "the user has"), (re.compile(r"\bI'd\b"), "the user would"),
    (re.compile(r"\bI'll\b"), "the user will"), (re.compile(r"(?i)\bwe're\b"), "the team is"),
    (re.compile(r"(?i)\bwe are\b"), "the team is"), (re.compile(r"(?i)\bwe've\b"), "the team has"),
    (re.compile(r"(?i)\bwe'll\b"), "the team will"), (re.compile(r"(?i)\bwe'd\b"), "the team would"),
]
_OBJECTS = [
    (re.compile(r"(?i)\bmyself\b"), "themselves"), (re.compile(r"(?i)\bourselves\b"), "themselves"),
    (re.compile(r"(?i)\bmine\b"), "the user's"), (re.compile(r"(?i)\bmy\b"), "the user's"),
    (re.compile(r"(?i)\bours\b"), "the team's"), (re.compile(r"(?i)\bour\b"), "the team's"),
    (re.compile(r"\bus\b"), "the team"), (re.compile(r"\bme\b"), "the user"),
]
_SUBJECT = re.compile(r"\bI\b|(?i:\bwe\b)")
_WORD = re.compile(r"\s+([A-Za-z][\w'-]*)")
_ADVERBS = frozenset(
    "always never usually really also just only often mostly generally still strongly much actually typically "  # noqa: SIM905
    "normally sometimes rarely definitely absolutely totally kinda basically primarily mainly now then too "
    "already even first finally recently currently seldom hardly probably certainly ever once".split()
)
_HEDGES = ("kind of", "sort of", "pretty much", "more or less", "at least")
_QUANTIFIERS = frozenset({"all", "both"})  # "we all use" -> "the team uses"
_IRREGULAR = {"have": "has", "do": "does", "don't": "doesn't", "are": "is", "am": "is", "were": "was", "go": "goes",
              "aren't": "isn't", "haven't": "hasn't", "weren't": "wasn't", "dont": "doesn't"}
_UNCHANGED = frozenset(
    "can can't cannot will won't would wouldn't should shouldn't must mustn't may might could couldn't shall did "  # noqa: SIM905
    "didn't was wasn't is isn't does doesn't has hasn't had hadn't ought".split()
)
_PRESENT_ED = frozenset(  # verbs whose present tense ends in "ed" like a past one
    "need feed proceed succeed exceed speed seed bleed breed heed weed embed shed wed shred".split()  # noqa: SIM905
)
_NOT_VERBS = frozenset(
    "a an the this that these those to at in on of for with from by and or but so as if when while who whom which "  # noqa: SIM905
    "what where why how it its you your he him his she her they them their me my us our not no nor than each".split()
)


def third_person_en(text: str) -> str | None:
    """``text`` with I, we and their forms in the third person, verbs in agreement; None when a verb
    after "I" or "we" cannot be found, so the sentence is better left as it was."""
    for pattern, replacement in _CONTRACTED:
        text = pattern.sub(replacement, text)
    pieces: list[str] = []
    done = 0  # text[:done] is in pieces already
    for match in _SUBJECT.finditer(text):
        if match.start() < done:
            continue  # inside the words a previous subject's verb took
        rewritten = _subject_and_verb(text, match)
        if rewritten is None:
            return None
        replacement, end = rewritten
        pieces += [text[done:match.start()], replacement]
        done = end
    pieces.append(text[done:])
    result = "".join(pieces)
    for pattern, replacement in _OBJECTS:
        result = pattern.sub(replacement, result)
    return result


def _subject_and_verb(text: str, match: re.Match[str]) -> tuple[str, int] | None:
    """The third-person form of a subject and the words up to its verb, and where they end."""
    subject = "the user" if match.group(0) == "I" else "the team"
    if re.search(r"(?i)\b(?:and|or|nor)\s+$", text[: match.start()]) or re.match(r"(?i)\s+(?:and|or)\b",
                                                                                  text[match.end():]):
        return None  # "Priya and I agree": plural, or a second clause; either way not safe to rewrite
    words: list[str] = []
    position = match.end()
    while True:
        hedge = next((h for h in _HEDGES if text[position:].lower().lstrip().startswith(h + " ")), None)
        if hedge is not None:
            skipped = re.match(r"\s+" + r"\s+".join(hedge.split()), text[position:], re.IGNORECASE)
            if skipped is None:
                return None
            words.append(skipped.group(0))
            position += skipped.end()
            continue
        word = _WORD.match(text, position)
        if word is None:
            return None  # "I," or "we" at the end: no verb to agree with
        lower = word.group(1).lower()
        if lower in _QUANTIFIERS and subject == "the team":
            position = word.end()  # "we all use" -> "the team uses"
            continue
        if lower in _ADVERBS or (lower.endswith("ly") and len(lower) > 4):
            words.append(word.group(0))
            position = word.end()
            continue
        verb = _agreeing(word.group(1))
        if verb is None:
            return None
        space = word.group(0)[: word.start(1) - word.start(0)]
        return subject + "".join(words) + space + verb, word.end()


def _agreeing(verb: str) -> str | None:
    """``verb`` after a singular third-person subject, or None when it is no verb."""
    lower = verb.lower()
    if lower in _NOT_VERBS or not re.fullmatch(r"[a-z][a-z'-]*", lower):
        return None
    if lower in _IRREGULAR:
        return _IRREGULAR[lower]
    if lower in _UNCHANGED or "'" in lower or (lower.endswith("ed") and lower not in _PRESENT_ED):
        return verb
    if lower.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if lower.endswith("y") and len(lower) > 1 and lower[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"
