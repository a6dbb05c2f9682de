"""Changed facts: whether a later memory gives a new value to what an earlier one stated.

"The user prefers npm" and, weeks later, "The user now prefers pnpm, no longer npm" are both
on disk; the later one is the truth. ``supersedes`` reads two memories (text and date) and says
whether the later updates the earlier. It is pure text logic, in English, Chinese and across the
two, shared by the sleep cycle (``lifecycle/consolidation.py``, which adds its cosine gate) and by
every search mode (``settle``: among a result's first hits, an earlier memory the later one
updates is moved just below it and names it in ``replaced_by``).

A false "update" hides a true memory, so the rules ask for positive evidence and refuse on any
sign of two facts that both hold. Two kinds of pair are read as an update:

* **a change said in words**: the later holds a change cue ("now", "no longer", "switched",
  "moved to", "instead of", "as of", "went up to", 改用, 不再, 换成, 搬到, 现在, 已经, 涨到, 从…起)
  and is about the same thing: it names the earlier's value after "no longer", "instead of",
  "from", "replaced", 不再, 从… ("now pnpm, no longer npm"); or they share specific words (a name,
  a noun; Chinese character pairs); or the same subject and the same kind of fact ("the user's
  manager" / "the user now reports to"; across languages, names, Latin words and the bilingual
  words of the concepts in ``words/updates.toml``). Across languages, where no word ties the two
  ("The team standup is at 9:30" / 站会改到 10 点了), ``verdict`` leaves the pair undecided and
  the caller's ``same_fact`` (the embedder: ``index/memory_vectors.py``) decides;
* **the same sentence with one value replaced** ("The staging DB is on db-1" → "… db-2"): one
  differing stretch of words, not at the start (there it names another subject: "Bob's phone" /
  "Carol's phone", 华东区 / 华北区), in statements of state, not of events.

Refused whatever the cue: an addition ("also", "too", 也, 还, 又), an action and its reversal
(``core/opposites.py``), different owners ("Bob's" / "Carol's", 小王的 / 小李的), contrasting
qualifiers (staging / production, sister / brother, iOS / Android, 前端 / 后端), different
``[category]`` tags, two things named alike (a compound: "release notes" / "the release build";
a shared head: 备份服务器 / 日志服务器; one subject going on as two names: 云服务器 / 云服务账单; the
letters of a host name: "log-04" says nothing of logs), an earlier event (what happened stays
true) or a plan beside one, pairs where the later says nothing new or the earlier nothing the
later lacks, and what is not one short statement of fact: a question, a line of a conversation
("**Jon:** ..."), a passage.

The words these rules read by (the cues, additions, plans, stop words, concepts, contrasts) are
data, ``mcp_memory/core/words/updates.toml``, read and checked once on first use; the shape of
each pattern (anchors, look-aheads) stays here.
"""

from __future__ import annotations

import datetime as dt
import difflib
import functools
import importlib.resources
import itertools
import re
import tomllib
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from mcp_memory.core.hits import SearchHit
from mcp_memory.core.memory_ids import HTML_COMMENT, LEARNED_DATE, LIST_MARKER, split_memories
from mcp_memory.core.opposites import opposed

if TYPE_CHECKING:
    from mcp_memory.core.memory_lookup import MemoryLookup

# How many of a result's first hits are read for updates (0: off). A newer memory found among
# them takes the place of an older one it updates even when it ranked below the hits shown.
SEARCH_WINDOW = 20
# A later memory worded unlike the query is often not among those hits at all ("which editor does
# the user like" finds "favourite editor is Sublime Text", not "now mostly uses Zed"). So the first
# NEAR_STATEMENTS dated statements shown also bring the memories closest to themselves (their own
# words and vector): up to NEAR_PER_STATEMENT each, with a cosine of at least NEAR_COSINE, the
# sleep cycle's lowest gate for an update (lifecycle/consolidation.py). The text rules decide.
NEAR_STATEMENTS = 3
NEAR_PER_STATEMENT = 4
NEAR_COSINE = 0.5

MAX_TOKENS = 40  # a memory longer than this (words; Chinese: characters) is a passage, not one fact
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
# A hyphenated name holding a digit ("log-04", "db-2", "gpt-4") is one token, a value: its letters
# ("log") are not a word of the memory, so a host name ties no subject to the logs.
_IDENTIFIER = re.compile(r"(?=(?:[a-z0-9]+-)*[a-z0-9]*\d)[a-z0-9]+(?:-[a-z0-9]+)+")
_TOKEN = re.compile(rf"{_IDENTIFIER.pattern}|\d+(?:[.:]\d+)*|@?[a-z]+(?:'s\b)?|[{_CJK}]")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_CATEGORY = re.compile(r"^\[([A-Za-z][\w-]{0,30})\]\s*")

_CJK_CHAR = re.compile(rf"[{_CJK}]")
# The end of a sentence followed by another: two or more make a passage, not one statement.
_SENTENCE_END = re.compile(r"[.!?](?=\s+[a-z])|[。！？](?=.)")


@dataclass(frozen=True)
class Statement:
    """One memory: its text as written (bullet, ``[category]`` and marks are read past) and its date."""

    text: str
    date: dt.date | None


# For each (earlier, later) pair of memory texts, whether the two say nearly the same thing, by an
# embedder (``index/memory_vectors.py``): asked with all of a result's pairs at once.
SameFact = Callable[[Sequence[tuple[str, str]]], list[bool]]


def supersedes(later: Statement, earlier: Statement, same_fact: SameFact | None = None) -> bool:
    """Whether ``later`` (stated on a later day) gives a new value to what ``earlier`` stated.

    ``same_fact`` settles the pairs the words cannot: across languages, a later memory that says a
    change happened, about a subject none of its words ties to the earlier's ("The team standup is
    at 9:30" / 站会改到 10 点了). It is asked only for those pairs."""
    found = by_words(later, earlier)
    if found is None:
        return same_fact is not None and same_fact([(earlier.text, later.text)])[0]
    return found


def by_words(later: Statement, earlier: Statement) -> bool | None:
    """``supersedes`` by the words alone: None where they cannot tell (``verdict``)."""
    if later.date is None or earlier.date is None or later.date <= earlier.date:
        return False
    return verdict(earlier.text, later.text)


def has_change_cue(text: str) -> bool:
    """Whether a memory says in words that something changed ("now", "switched to", 改用...)."""
    return _read(text).cue


def stated_date(text: str, fallback: dt.date | None) -> dt.date | None:
    """The ``(YYYY-MM-DD)`` a memory ends with, else ``fallback`` (its file's day)."""
    found = LEARNED_DATE.search(HTML_COMMENT.sub("", text).rstrip())
    if found:
        try:
            return dt.date.fromisoformat(found.group(1))
        except ValueError:
            return fallback
    return fallback


# ----- reading one memory ---------------------------------------------------------------------
@dataclass(frozen=True)
class _Read:
    text: str  # folded, without marker, category, date or marks
    category: str | None
    tokens: tuple[str, ...]  # in order: stemmed English words, numbers, Chinese characters
    content: tuple[bool, ...]  # per token: neither a stop word nor part of a change cue
    aligned: tuple[str, ...]  # the tokens with concept words folded to their concept (for alignment)
    words: frozenset[str]  # content tokens, generic ones ("user", 用户) left out
    units: frozenset[str]  # specific words: those words, Chinese as character pairs, no bare numbers
    latin: frozenset[str]  # Latin words of three letters or more: anchors across languages
    concepts: frozenset[str]
    # (concept, the nouns before and after its English word, or ""): "package manager" and "task
    # manager" name tools, not the user's manager; Chinese concept words count with "".
    concept_nouns: frozenset[tuple[str, str, str]]
    contrasts: tuple[frozenset[int], ...]  # per family of contrasts (words/updates.toml), the members named
    owner: str | None  # the first possessor ("bob" of "Bob's", 小王 of 小王的)
    person: str | None  # the first content word or character pair, generic ones included ("user", 用户)
    subject: str | None  # the first specific word or character pair (not generic, a value or a concept word)
    cue: bool  # says in words that something changed
    cjk: bool  # mostly Chinese
    statement: bool  # a short statement of fact: not a question, a line of dialogue or a paragraph


def _clear_caches() -> None:
    """Forget the vocabulary and every reading made with it (a test that edits the word file)."""
    for cached in (_words, _read, _may_be_statement, verdict):
        cached.cache_clear()


@functools.lru_cache(maxsize=8192)
def _body(text: str) -> tuple[str, str | None]:
    """A memory's words as the rules read them (folded, without marker, category, date or marks), and its category."""
    body = HTML_COMMENT.sub(" ", text)
    body = " ".join(LIST_MARKER.sub("", line).strip() for line in body.split("\n"))
    body = unicodedata.normalize("NFKC", body).strip()
    category = _CATEGORY.match(body)
    body = LEARNED_DATE.sub("", _CATEGORY.sub("", body)).strip().casefold().replace("’", "'")
    return _THOUSANDS.sub("", body), category.group(1).lower() if category else None


def _shaped_as_statement(body: str) -> bool:
    """Not a question, a line of dialogue or several sentences: the part of being a statement that
    needs no reading of the words, so the lines of a conversation are turned away cheaply."""
    return not _words().not_a_statement.search(body) and len(_SENTENCE_END.findall(body.rstrip(".!?。！？ "))) < 2


@functools.lru_cache(maxsize=8192)
def _may_be_statement(text: str) -> bool:
    return _shaped_as_statement(_body(text)[0])


@functools.lru_cache(maxsize=8192)
def _read(text: str) -> _Read:
    w = _words()
    body, category = _body(text)
    # Chinese verbs of one kind of fact become one token (喜欢 and 偏好 align as one word).
    folded = w.fold_zh.sub(lambda m: f" @{w.concept_zh[m.group(0)]} ", body)
    cue_spans = [m.span() for m in w.change_zh.finditer(folded)]
    owner, owner_at = None, None
    tokens: list[str] = []
    content: list[bool] = []
    for found in _TOKEN.finditer(folded):
        word = found.group(0)
        if word.endswith("'s"):
            word = word[:-2]
            if owner is None:
                owner, owner_at = _stem(word), len(tokens)
        token = _stem(word) if word.isalpha() and word.isascii() else word
        tokens.append(token)
        in_cue = token in w.cue_chars and any(start <= found.start() < end for start, end in cue_spans)
        content.append(_is_content(token) and not in_cue)
    if owner is None:
        possessor = re.search(rf"([{_CJK}]{{2}}|[a-z][a-z0-9]*)\s*的", body)
        owner = possessor.group(1) if possessor else None
    ordered = _ordered_units(tokens, content)
    # The subject is named after its owner: "the user's gym membership" is about the gym membership.
    cut = owner_at if owner_at is not None else (tokens.index("的") if "的" in tokens else None)
    after = len(_ordered_units(tokens[: cut + 1], content[: cut + 1])) if cut is not None else 0
    words = frozenset(t for t, c in zip(tokens, content, strict=True) if c and t not in w.generic)
    named = set(tokens) | set(w.words_zh.findall(body))  # English stems and the Chinese words of the tables
    concepts = frozenset(w.concept_of[word] for word in named if word in w.concept_of)
    members: list[set[int]] = [set() for _ in range(w.families)]
    for word in named & w.contrast_of.keys():
        family, member = w.contrast_of[word]
        members[family].add(member)
    contrasts = tuple(frozenset(m) for m in members)
    return _Read(
        text=body, category=category, tokens=tuple(tokens),
        content=tuple(content), aligned=tuple(f"@{w.concept_of[t]}" if t in w.concept_of and _is_slot_verb(t) else t
                                               for t in tokens),
        words=words, units=frozenset(u for u in ordered if u not in w.generic and not _is_value(u)),
        latin=frozenset(t for t in words if t.isascii() and t.isalpha() and len(t) >= 3),
        concepts=concepts, concept_nouns=_concept_nouns(tokens, content, named), contrasts=contrasts, owner=owner,
        person=w.same_person.get(ordered[0], ordered[0]) if ordered else None,
        subject=next((u for u in ordered[after:] if u not in w.generic and not _is_value(u) and not _is_slot_verb(u)),
                     None),
        cue=bool(w.change_en.search(body) or cue_spans or w.new_value.search(body)),
        cjk=len(_CJK_CHAR.findall(body)) > 2 * len(re.findall(r"[a-z]+", body)),
        statement=bool(words) and len(tokens) <= MAX_TOKENS and _shaped_as_statement(body))


def _concept_nouns(tokens: list[str], content: list[bool], named: set[str]) -> frozenset[tuple[str, str, str]]:
    """Each concept a memory names, with the content words just before and just after its English
    word ("" when none: "the user's manager", "now reports"), so that a compound names its own
    thing: "the package manager" is not the user's manager, and "release notes" and "the release
    build" are two things named after a release, not two versions of one."""
    w = _words()
    out = {(w.concept_of[word], "", "") for word in named if word in w.concept_of and not word.isascii()}
    for i, token in enumerate(tokens):
        if token in w.concept_of and token.isascii():
            before = tokens[i - 1] if i and content[i - 1] and tokens[i - 1].isascii() else ""
            after = tokens[i + 1] if i + 1 < len(tokens) and content[i + 1] and tokens[i + 1].isascii() else ""
            if _is_slot_verb(token) or _is_value(after) or after in w.concept_of:
                after = ""  # "prefers pnpm" names its value, "version 2" its number: neither is a compound
            out.add((w.concept_of[token], "" if before in w.generic or before in w.concept_of else before, after))
    return frozenset(out)


_NUMBER = re.compile(r"\d+(?:[.:]\d+)*")


def _stem(word: str) -> str:
    """A light English stemmer: "moved", "moves", "moving" → "mov"; "preferred" → "prefer"."""
    if len(word) <= 3:
        return word
    if word.startswith("note") and len(word) <= 6:
        return "note"  # "notes", "noted": not the negation "not", a cue
    for suffix in ("ing", "ies", "es", "ed", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            word = word[: -len(suffix)] + ("y" if suffix == "ies" else "")
            break
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "sl":
        word = word[:-1]
    return word[:-1] if len(word) > 3 and word.endswith("e") else word


# ----- the vocabulary: words/updates.toml, read once on first use ------------------------------
# The folder of this very package, found at import; the file is read when a memory is first read.
_WORDS_FILE = importlib.resources.files("mcp_memory.core") / "words" / "updates.toml"
# Each table of the file and its keys: an array of words or a string of single characters.
_WORD_LIST, _CHARS, _WORD_MAP = "an array of words", "a string of characters", "a table of words"
_LAYOUT: dict[str, dict[str, str]] = {
    "change": {"en": _WORD_LIST, "zh": _WORD_LIST},
    "new_value": {"en": _WORD_LIST},
    "left_behind": {"en": _WORD_LIST, "en_from_stems": _WORD_LIST, "en_owners": _WORD_LIST, "en_old": _WORD_LIST,
                    "zh": _WORD_LIST, "zh_from_verbs": _WORD_LIST, "zh_ba_verbs": _WORD_LIST},
    "addition": {"en": _WORD_LIST, "zh": _WORD_LIST},
    "plan": {"en": _WORD_LIST, "zh": _WORD_LIST},
    "past": {"en": _WORD_LIST, "en_first": _WORD_LIST, "zh_particles": _CHARS},
    "state": {"en": _WORD_LIST, "en_verbs": _WORD_LIST},
    "likes": {"en": _WORD_LIST, "zh": _WORD_LIST},
    "turned_off": {"en": _WORD_LIST, "zh": _WORD_LIST},
    "dialogue": {"speakers": _WORD_LIST},
    "stop": {"en": _WORD_LIST, "zh": _CHARS},
    "generic": {"words": _WORD_LIST},
    "cue": {"en_stems": _WORD_LIST, "zh_chars": _CHARS},
    "value": {"en": _WORD_LIST, "zh_chars": _CHARS},
    "kinds": {"one_at_a_time": _WORD_LIST, "things": _WORD_LIST, "slot_verbs": _WORD_LIST},
}
# Tables of any names: a list of words (concepts), a list of lists of words (contrasts), a word (same_person).
_NAMED_LISTS = ("concepts", "contrasts", "same_person")


@dataclass(frozen=True)
class _Words:
    """The vocabulary and the patterns built from it (see words/updates.toml for each)."""

    change_en: re.Pattern[str]  # a change said in words
    change_zh: re.Pattern[str]  # (its matches mark the characters of a cue)
    new_value: re.Pattern[str]  # "new" of something one has one of at a time
    left_behind: re.Pattern[str]  # the earlier value follows
    addition: re.Pattern[str]
    plan: re.Pattern[str]
    past_en: re.Pattern[str]
    past_first: re.Pattern[str]
    past_zh: re.Pattern[str]
    state: re.Pattern[str]
    likes: re.Pattern[str]
    turned_off: re.Pattern[str]
    not_a_statement: re.Pattern[str]  # a question, a line of a conversation
    stop_stems: frozenset[str]  # English stop words and their stems ("were" -> "wer")
    stop_zh: frozenset[str]
    generic: frozenset[str]
    same_person: dict[str, str]
    cue_stems: frozenset[str]
    cue_chars: frozenset[str]
    value_words: frozenset[str]
    value_chars: frozenset[str]
    concept_of: dict[str, str]  # a word (English: its stem) -> its concept
    contrast_of: dict[str, tuple[int, int]]  # a word (English: its stem) -> (family, member)
    families: int  # how many families of contrasts
    words_zh: re.Pattern[str]  # the Chinese words of concepts and contrasts
    concept_zh: dict[str, str]  # Chinese verbs of a slot (喜欢) -> their concept
    fold_zh: re.Pattern[str]  # those verbs
    one_at_a_time: frozenset[str]
    things: frozenset[str]
    slot_verbs: frozenset[str]


_NEVER = r"(?!)"  # an alternation of no words matches nothing


def _either(words: Sequence[str]) -> str:
    """The words as one alternation, in their order (the first that fits at a place wins)."""
    return "|".join(re.escape(word) for word in words) or _NEVER


def _longest_first(words: set[str] | dict[str, str]) -> str:
    return _either(sorted(words, key=lambda w: (-len(w), w)))


def _words_of(value: Any, where: str) -> list[str]:
    if not (isinstance(value, list) and value and all(isinstance(word, str) for word in value)):
        raise ValueError(f"words/updates.toml {where}: expected a non-empty array of words, got {value!r}")
    for word in value:
        if not word or word != word.strip() or word != unicodedata.normalize("NFKC", word).casefold():
            raise ValueError(f"words/updates.toml {where}: {word!r} is not a word as memories are read "
                             "(lower case, no surrounding spaces)")
    return value


def _checked(data: dict[str, Any]) -> dict[str, Any]:
    """The parsed file, every table and key as ``_LAYOUT`` says (anything else is a ValueError)."""
    expected = set(_LAYOUT) | set(_NAMED_LISTS)
    if set(data) != expected:
        unknown, missing = sorted(set(data) - expected), sorted(expected - set(data))
        raise ValueError(f"words/updates.toml: unknown table(s) {unknown}, missing table(s) {missing}")
    for name, keys in _LAYOUT.items():
        table = data[name]
        if not isinstance(table, dict) or set(table) != set(keys):
            found = sorted(table) if isinstance(table, dict) else table
            raise ValueError(f"words/updates.toml [{name}]: expected the keys {sorted(keys)}, got {found!r}")
        for key, kind in keys.items():
            value, where = table[key], f"[{name}] {key}"
            if kind == _WORD_LIST:
                _words_of(value, where)
            elif kind == _CHARS and not (isinstance(value, str) and value and not any(c.isspace() for c in value)):
                raise ValueError(f"words/updates.toml {where}: expected {kind}, got {value!r}")
    for name in _NAMED_LISTS[:2]:
        if not (isinstance(data[name], dict) and data[name]):
            raise ValueError(f"words/updates.toml [{name}]: expected a table of named lists, got {data[name]!r}")
    for name, forms in data["concepts"].items():
        _words_of(forms, f"[concepts] {name}")
    for name, members in data["contrasts"].items():
        if not (isinstance(members, list) and len(members) >= 2):
            raise ValueError(f"words/updates.toml [contrasts] {name}: expected two members or more, got {members!r}")
        for member in members:
            _words_of(member, f"[contrasts] {name}")
    for key in _LAYOUT["kinds"]:
        unknown = sorted(set(data["kinds"][key]) - set(data["concepts"]))
        if unknown:
            raise ValueError(f"words/updates.toml [kinds] {key}: not concepts: {unknown}")
    same_person = data["same_person"]
    if not (isinstance(same_person, dict) and same_person):
        raise ValueError(f"words/updates.toml [same_person]: expected {_WORD_MAP}, got {same_person!r}")
    _words_of([*same_person, *same_person.values()], "[same_person]")
    return data


@functools.cache
def _words() -> _Words:
    """The vocabulary of words/updates.toml, read and checked once; its patterns compiled."""
    try:
        data = tomllib.loads(_WORDS_FILE.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"words/updates.toml: {exc}") from exc
    return _compiled(_checked(data))


def _compiled(data: dict[str, Any]) -> _Words:
    """The patterns and tables of the checked file. English phrases match whole words; Chinese ones anywhere."""
    change, left = data["change"], data["left_behind"]
    concepts: dict[str, list[str]] = data["concepts"]
    contrasts: list[list[list[str]]] = list(data["contrasts"].values())
    slot_verbs = frozenset(data["kinds"]["slot_verbs"])
    # The tables by word: an English word by its stem, a Chinese one as written (a later entry wins).
    concept_of = {(_stem(form) if form.isascii() else form): name for name, forms in concepts.items() for form in forms}
    contrast_of = {(_stem(word) if word.isascii() else word): (family, member)
                   for family, members in enumerate(contrasts) for member, words in enumerate(members)
                   for word in words}
    concept_zh = {form: name for name, forms in concepts.items() for form in forms
                  if not form.isascii() and len(form) > 1 and name in slot_verbs}
    stop_en = frozenset(data["stop"]["en"])

    def en_zh(table: dict[str, list[str]]) -> re.Pattern[str]:
        return re.compile(rf"\b(?:{_either(table['en'])})\b|{_either(table['zh'])}")

    return _Words(
        change_en=re.compile(rf"\b(?:{_either(change['en'])})\b"),
        # ...and "从 X 起" (from X on)
        change_zh=re.compile(rf"{_either(change['zh'])}|从.{{1,8}}起"),
        new_value=re.compile(rf"\bnew (?:{_either(data['new_value']['en'])})\b"),
        # "no longer X", "switched from X", "from X to Y" (not "from now on"), "the old X"; 不再 X,
        # 从 X 迁到 Y, 把 X 换成 Y
        left_behind=re.compile(
            rf"\b(?:{_either(left['en'])}|(?:{_either(left['en_from_stems'])})\w* from"
            rf"|from(?! now)(?=.{{1,40}}\bto\b))\b"
            rf"|\b(?:{_either(left['en_owners'])}) (?:{_either(left['en_old'])})\b"
            rf"|{_either(left['zh'])}|从(?=.{{1,12}}(?:{_either(left['zh_from_verbs'])}))"
            rf"|把(?=.{{1,12}}(?:{_either(left['zh_ba_verbs'])}))"),
        addition=en_zh(data["addition"]),
        plan=en_zh(data["plan"]),
        past_en=re.compile(rf"\b(?:{_either(data['past']['en'])})\b"),
        # a statement opening with a verb in the past tense: regular (-ed) or one of the list
        past_first=re.compile(rf"^(?:[a-z]+ed|{_either(data['past']['en_first'])})\b"),
        # 了, 过 with more of the sentence after them
        past_zh=re.compile(rf"[{re.escape(data['past']['zh_particles'])}](?=[{_CJK}\w])"),
        state=re.compile(rf"\b(?:{_either(data['state']['en'])}|(?:{_either(data['state']['en_verbs'])})s?)\b"),
        likes=en_zh(data["likes"]),
        turned_off=en_zh(data["turned_off"]),
        not_a_statement=re.compile(
            rf"[?？]|^\*\*[^*\n]{{1,40}}?(?:[:：]\s*\*\*|\*\*\s*[:：])"
            rf"|^(?:{_either(data['dialogue']['speakers'])})\s*[:：]"),
        stop_stems=stop_en | {_stem(word) for word in stop_en},
        stop_zh=frozenset(data["stop"]["zh"]),
        generic=frozenset(data["generic"]["words"]),
        same_person=dict(data["same_person"]),
        cue_stems=frozenset(data["cue"]["en_stems"]),
        cue_chars=frozenset(data["cue"]["zh_chars"]),
        value_words=frozenset(data["value"]["en"]),
        value_chars=frozenset(data["value"]["zh_chars"]),
        concept_of=concept_of,
        contrast_of=contrast_of,
        families=len(contrasts),
        words_zh=re.compile(_longest_first({word for word in [*concept_of, *contrast_of] if not word.isascii()})),
        concept_zh=concept_zh,
        fold_zh=re.compile(_longest_first(concept_zh)),
        one_at_a_time=frozenset(data["kinds"]["one_at_a_time"]),
        things=frozenset(data["kinds"]["things"]),
        slot_verbs=slot_verbs,
    )


def _is_value(unit: str) -> bool:
    """A number, a day, a time or a duration (a Chinese pair: both characters such)."""
    w = _words()
    if _NUMBER.fullmatch(unit) or _IDENTIFIER.fullmatch(unit) or unit in w.value_words or _stem(unit) in w.value_words:
        return True
    return len(unit) == 2 and all(ch in w.value_chars for ch in unit)


def _is_slot_verb(unit: str) -> bool:
    """A verb naming the kind of fact ("prefers", 喜欢, "lives", "owns"): shared, it says nothing of the subject."""
    w = _words()
    return w.concept_of.get(unit, unit.lstrip("@")) in w.slot_verbs


def _is_cjk(token: str) -> bool:
    return len(token) == 1 and bool(_CJK_CHAR.match(token))


def _is_content(token: str) -> bool:
    if _is_cjk(token):
        return token not in _words().stop_zh
    w = _words()
    return token not in w.stop_stems and token not in w.cue_stems


def _ordered_units(tokens: list[str], content: list[bool]) -> list[str]:
    """The content words and Chinese character pairs, in order."""
    out = []
    for i, token in enumerate(tokens):
        if not content[i]:
            continue
        if _is_cjk(token):
            if i + 1 < len(tokens) and content[i + 1] and _is_cjk(tokens[i + 1]):
                out.append(token + tokens[i + 1])
        else:
            out.append(token)
    return out


# ----- comparing two memories -----------------------------------------------------------------
def changes(old_text: str, new_text: str) -> bool:
    """Whether ``new_text`` gives a new value to what ``old_text`` stated, by the words alone (their
    order in time is the caller's)."""
    return verdict(old_text, new_text) is True


@functools.lru_cache(maxsize=65536)  # the same pairs meet again in search after search
def verdict(old_text: str, new_text: str) -> bool | None:
    """``changes``, with None for a pair the words cannot settle: across languages, the later says a
    change happened and nothing rules the pair out, but no word ties its subject to the earlier's.
    Such a pair is an update only if the two say nearly the same (``supersedes``'s ``same_fact``)."""
    if not (_may_be_statement(old_text) and _may_be_statement(new_text)):
        return False
    old, new = _read(old_text), _read(new_text)
    if not (old.statement and new.statement) or old.text == new.text:
        return False
    if old.cjk == new.cjk and not (old.units & new.units or old.latin & new.latin or old.concepts & new.concepts):
        return False  # nothing in common: the cheap answer for most pairs of a result
    if old.category and new.category and old.category != new.category:
        return False
    if _words().addition.search(new.text) or _other_subject(old, new) or _is_event(old):
        return False  # an addition, another subject, or history (what happened stays true)
    if _is_event(new) and bool(_words().plan.search(old.text)) != bool(_words().plan.search(new.text)):
        return False  # a plan and what happened
    found = _changed_in_words(old, new) if new.cue else _one_value_replaced(old, new)
    if found is False or opposed(old.text, new.text):  # an action and its reversal both happened
        return False
    return found


def _other_subject(old: _Read, new: _Read) -> bool:
    """Different owners (in one script) or contrasting qualifiers: two facts that both hold."""
    if old.owner and new.owner and old.owner != new.owner and old.owner.isascii() == new.owner.isascii():
        return True
    return any(a and b and not (a & b) for a, b in zip(old.contrasts, new.contrasts, strict=True))


def _is_event(r: _Read) -> bool:
    """A statement of something that happened ("Deployed 2.4 on Monday", 三月五号开了复盘会)."""
    w = _words()
    return bool(w.past_first.match(r.text) or w.past_en.search(r.text) or w.past_zh.search(r.text))


def _changed_in_words(old: _Read, new: _Read) -> bool | None:
    """The later says a change happened: about the earlier's subject, and leaving a value behind
    (None: across languages, with no word to tell whether the subject is the earlier's)."""
    w = _words()
    left = _left_behind(new) & (old.words | old.units)
    if left:
        return bool(new.words - old.words) or _turned_off(new)  # "no longer npm", 不再用蓝湖, "switched from"
    if not old.words - new.words:
        # The later holds every word of the earlier: it says more, unless it turns the earlier off.
        return _turned_off(new)
    if not new.words - old.words:
        return False
    concepts = old.concepts & new.concepts
    same_person = old.person is not None and old.person == new.person
    if old.cjk != new.cjk:  # across languages: names and Latin words, or the same thing or slot
        # ...and the earlier's Latin words and numbers, its value when it has them, are not all said again
        named = {t for t in old.tokens if t.isascii() and (t.isalnum() or _IDENTIFIER.fullmatch(t))
                 and t not in w.stop_stems} - w.generic
        if named and named <= set(new.tokens):
            return False  # "安卓端用 Kotlin 写" / "the user writes Kotlin now": the same value, not a new one
        if old.latin & new.latin or len(concepts) >= 2 or (same_person and concepts & (w.one_at_a_time | w.things)):
            return True
        # An owner named on each side ("Bob's phone" / 小李的手机号) and no word to tie them: maybe two
        # people. The user (用户的, "the user's") is one person in both languages.
        named_owners = [o for o in (old.owner, new.owner) if o and o not in w.generic and o not in w.same_person]
        return False if len(named_owners) == 2 else None
    # Specific words both hold (not the verb of the fact: "prefers" twice says nothing of the subject).
    shared = {u for u in old.units & new.units if not _is_slot_verb(u)}
    # Most of the earlier is said again (Chinese pairs are many, some across word boundaries: a quarter).
    if len(shared) >= 2 and len(shared) >= (0.25 if old.cjk else 0.5) * len(old.units):
        return _same_thing(old, new)
    if shared and same_person and old.subject is not None and old.subject == new.subject and _same_head(old, new):
        return True  # one word in common, leading both: "Sprints" / "The sprint length"
    if same_person and old.person in w.same_person.values() and any(_is_cjk(u[:1]) and len(u) == 2 for u in shared):
        return True  # 用户的私人教练 / 用户现在跟另一位教练: a pair of characters names a thing, not an action
    # The same kind of fact one has one of at a time, named alike ("manager" / "reports to", not
    # "the package manager" / "the task manager").
    tied = {concept for concept, _, _ in old.concept_nouns & new.concept_nouns}
    return same_person and bool(tied & w.one_at_a_time)


def _same_thing(old: _Read, new: _Read) -> bool:
    """Whether two memories that share words name one thing: the subject of one is a word of the
    other. 备份服务器 and 日志服务器 share the head but neither subject: two servers. Statements
    about the user are about one person whatever word comes next ("用户用 Windows 笔记本写代码")."""
    if old.subject is None or new.subject is None or (old.person == new.person in _words().same_person.values()):
        return True
    if old.subject == new.subject and old.cjk and new.cjk:
        return _same_head_zh(old, new)
    return old.subject in new.units or new.subject in old.units


def _same_head_zh(old: _Read, new: _Read) -> bool:
    """Whether two Chinese memories opening on one subject go on to name one thing: past the
    characters both share from the subject on, the next character of each is not a different word
    of the name (云服务器 / 云服务账单, 日志接入 / 日志服务器). A value, a particle or a change cue there
    ends the name (学费一学期 / 学费今年涨到, 房租每月 / 房租涨到)."""
    values = _words().value_chars
    a, b = _from_subject(old), _from_subject(new)
    shared = 0
    while shared < min(len(a), len(b)) and a[shared][0] == b[shared][0]:
        shared += 1
    if shared == len(a) or shared == len(b):
        return True
    (x, x_content), (y, y_content) = a[shared], b[shared]
    return not all(_is_cjk(t) and content and t not in values for t, content in ((x, x_content), (y, y_content)))


def _from_subject(r: _Read) -> list[tuple[str, bool]]:
    """The tokens of a memory from its subject's first character on, each with its content flag."""
    assert r.subject is not None
    start = next((i for i in range(len(r.tokens)) if r.content[i] and (r.tokens[i] == r.subject
                  or (i + 1 < len(r.tokens) and r.tokens[i] + r.tokens[i + 1] == r.subject))), len(r.tokens))
    return list(zip(r.tokens[start:], r.content[start:], strict=True))


def _same_head(old: _Read, new: _Read) -> bool:
    """Whether the words that follow the shared subject agree: "the staging DB" is not "the staging
    cluster", 手机号 is not 手机套餐, unless one just stops ("the gym" / "the gym membership")."""
    a, b = _compound(old), _compound(new)
    if old.cjk:  # no spaces: the character after the pair, when both have one
        a, b = a[:3], b[:3]
    return a[: len(b)] == b or b[: len(a)] == a


def _compound(r: _Read) -> tuple[str, ...]:
    """The run of content tokens starting at the subject."""
    assert r.subject is not None
    first = r.subject if not _is_cjk(r.subject[:1]) else r.subject[:1]
    start = next((i for i, t in enumerate(r.tokens) if t == first and r.content[i]), len(r.tokens))
    run = []
    for token, content in zip(r.tokens[start:], r.content[start:], strict=True):
        if not content or _is_value(token):
            break
        run.append(token)
    return tuple(run)


def _left_behind(r: _Read) -> set[str]:
    """Words (Chinese: character pairs) within a few words after "no longer", "instead of", 不再, 从..."""
    out: set[str] = set()
    for found in _words().left_behind.finditer(r.text):
        tail = r.text[found.end() : found.end() + 30]
        cjk = re.match(rf"\s*([{_CJK}]{{1,6}})", tail)
        if cjk:  # 不再用蓝湖: the characters that follow, as pairs
            out.update(a + b for a, b in itertools.pairwise(cjk.group(1)))
        # English: the first run of content words ("the Civic", "Markdown tables"), at most three
        run: list[str] = []
        for word in _TOKEN.findall(tail):
            token = _stem(word) if word.isalpha() and word.isascii() else word
            if _is_content(token) and token not in _words().generic and not _is_cjk(token):
                run.append(token)
                if len(run) == 3:
                    break
            elif run:
                break
        out.update(run)
    return out


def _turned_off(r: _Read) -> bool:
    return bool(_words().turned_off.search(r.text))


def _one_value_replaced(old: _Read, new: _Read) -> bool:
    """The same statement with one stretch of words replaced, not at its start, about a state."""
    if old.cjk != new.cjk or _is_event(new) or _words().likes.search(old.text) or _words().likes.search(new.text):
        return False  # across languages, an event, or a liking: one likes many things at once
    if not old.cjk and not (_words().state.search(old.text) and _words().state.search(new.text)):
        return False  # no statement of a state: "Read an article about X" / "... about Y" are two events
    matcher = difflib.SequenceMatcher(None, old.aligned, new.aligned, autojunk=False)
    changed = [op for op in matcher.get_opcodes()
               if op[0] != "equal" and (any(old.content[op[1]:op[2]]) or any(new.content[op[3]:op[4]]))]
    if len(changed) != 1 or changed[0][0] != "replace":
        return False
    _, i1, i2, j1, j2 = changed[0]
    if not any(old.content[i1:i2]) or not any(new.content[j1:j2]):
        return False
    lead = 2 if old.cjk else 1  # a Chinese subject is two characters or more (小纪 / 小蔡)
    if sum(old.content[:i1]) < lead or sum(new.content[:j1]) < lead:
        return False  # the subject differs: another person, place or thing
    # A value is short, and the rest of the statement (its subject) is most of it.
    replaced_old, replaced_new = sum(old.content[i1:i2]), sum(new.content[j1:j2])
    kept = sum(old.content) - replaced_old
    return (max(replaced_old, replaced_new) <= (4 if old.cjk else 3) and kept >= 2
            and kept >= 0.6 * max(sum(old.content), sum(new.content)))


# ----- search results -------------------------------------------------------------------------
def statement_of(hit: SearchHit, naming: MemoryLookup | None) -> Statement | None:
    """The memory a hit is named by, with its date; None when undated or already retired."""
    if not hit.id or hit.replaced_by:
        return None
    text = None
    if naming is not None:
        found = naming.nearest(hit.id, hit.path, hit.start_line)
        if found is not None:
            text = found.text
    if text is None:  # no lookup, or the file changed: the cited lines
        lines = hit.snippet.split("\n")
        unit = next((u for u in split_memories(lines) if u.id == hit.id), None)
        if unit is None:
            return None
        text = "\n".join(lines[unit.start : unit.end + 1])
    date = stated_date(text, hit.date)
    return Statement(text, date) if date else None


def settle(hits: Sequence[SearchHit], statement: Callable[[SearchHit], Statement | None], keep: int,
           more: Callable[[], Sequence[SearchHit]] | None = None,
           near: Callable[[list[tuple[int, Statement]]], Sequence[SearchHit]] | None = None,
           same_fact: SameFact | None = None) -> list[SearchHit]:
    """The first ``keep`` of ``hits`` (ranked; any after them, and ``more()``, are a reserve), each
    memory that a later one among the first ``SEARCH_WINDOW`` updates moved just below it, with
    ``replaced_by``.

    The later memory takes the earlier's place (and its score, when higher), so one found below
    the hits shown comes in; the earlier stays in the result, just below it, and the hit that
    leaves is the last one no update concerns. Hits past the window (a long result) keep their
    places. ``statement`` gives a hit's memory and date, or None (undated, or retired by the sleep
    cycle: it neither wins nor is marked again). ``more`` is called only when a hit shown is a
    dated statement of fact, which a later one could update; so is ``near``, with the first
    ``NEAR_STATEMENTS`` such hits (their places and statements): it gives the memories closest to
    them, which may hold an update the query's words missed. ``same_fact`` settles the pairs the
    words cannot (``supersedes``).
    """
    shown = min(keep, len(hits), SEARCH_WINDOW)  # the hits whose memories may give way
    read = [statement(h) if h.id else None for h in hits[:shown]]
    if not any(r is not None and _may_be_statement(r.text) and _read(r.text).statement for r in read):
        return list(hits[:keep])  # nothing shown that could have changed: conversation lines, undated notes
    pool = [*hits, *(more() if more is not None and len(hits) < SEARCH_WINDOW else ())]
    window, rest = pool[: max(shown, SEARCH_WINDOW)], list(hits[max(shown, SEARCH_WINDOW) : keep])
    read += [statement(h) if h.id else None for h in window[shown:]]
    if near is not None:
        facts = [(i, r) for i, r in enumerate(read[:shown])
                 if r is not None and r.date and _may_be_statement(r.text) and _read(r.text).statement]
        listed_ids = {h.id for h in window}
        for hit in near(facts[:NEAR_STATEMENTS]):
            if hit.id and hit.id not in listed_ids:
                listed_ids.add(hit.id)
                window.append(hit)
                read.append(statement(hit))
    # Every pair by the words first; those they leave undecided go to ``same_fact`` together.
    found: dict[tuple[int, int], bool | None] = {}  # (the earlier's position, the later's) -> verdict
    for i, earlier in enumerate(read[:shown]):
        if earlier is not None:
            for j, later in enumerate(read):
                if later is not None and window[j].id != window[i].id:
                    found[(i, j)] = by_words(later, earlier)
    undecided = [pair for pair, verdict_ in found.items() if verdict_ is None]
    if undecided:
        texts = [(read[i].text, read[j].text) for i, j in undecided]  # type: ignore[union-attr]
        answers = same_fact(texts) if same_fact is not None else [False] * len(undecided)
        found.update(zip(undecided, answers, strict=True))
    winner: dict[int, int] = {}  # the earlier's position -> the later's
    for i in range(shown):
        newer = [j for (e, j), updates in found.items() if e == i and updates]
        if newer:
            winner[i] = max(newer, key=lambda j: (read[j].date, -j))  # type: ignore[union-attr]
    if not winner:
        return list(hits[:keep])
    order = list(range(len(window)))
    for old in sorted(winner):
        new = winner[old]
        if order.index(new) > order.index(old):
            order.remove(new)
            order.insert(order.index(old), new)
    out = {i: replace(window[i], replaced_by=window[new].id) for i, new in winner.items()}
    for new in set(winner.values()):
        best = max(window[new].score, *(window[i].score for i, n in winner.items() if n == new))
        out[new] = replace(out.get(new, window[new]), score=best)
    # What was shown stays shown; a later memory moved in takes the place of the last hit no update concerns.
    listed = min(keep, len(window))
    chosen = [i for i in order if i < listed or i in winner.values()]
    involved = set(winner) | set(winner.values())
    while len(chosen) > listed:
        spare = [i for i in chosen if i not in involved] or chosen
        chosen.remove(spare[-1])
    return [out.get(i, window[i]) for i in chosen] + rest
