"""Prompt injections in text on its way into memory.

Recall re-injects memories into future prompts. Text that tries to steer a model ("ignore
previous instructions") would come back as if it were the user's own note, so it is refused
at the door. Detection is by patterns (offline, exact, testable), grouped by family, each
family written for the languages users write: English, Chinese, French, German, Spanish,
Japanese, and Portuguese, Italian, Russian and Korean where a phrasing is common. Overrides
("ignore all previous instructions") are also read in Arabic, Czech, Dutch, Greek, Hebrew,
Hindi, Indonesian, Persian, Polish, Swedish, Thai, Turkish, Ukrainian and Vietnamese, from a
small lexicon per language matched in every word order.

The patterns are data: ``mcp_memory/safety/rules/injection.toml`` holds every family's rules
(with named fragments such as ``{en_rules}``, and the cues of hidden markup) and explains how
to extend them. This module is the engine: normalisation, the speed gates, finding hidden
markup, and the order the families are tried in. The file is read and its fragments expanded
once, on first use (``_rules``); the patterns are compiled then too (``_detector``).

Families, in the order they are tried (``injection_family`` names the first that matches):

* ``template``: chat-template and role tokens (``<|im_start|>``, ``<|eot_id|>``, ``<<SYS>>``,
  ``[INST]``, ``<start_of_turn>``, ``### Instruction:``, ``Human:`` turns, ``<system>`` and
  ``</relevant-memories>`` tags) that would open a fake turn or close the recall block.
* ``hidden-markup``: instructions where a reader does not see them: HTML comments,
  zero-size or hidden elements, markdown alt text, link titles and reference comments, and
  ASCII spelled in invisible Unicode tag characters.
* ``override``: ignore / disregard / forget the previous instructions, "the above",
  "everything before this"; or declaring them void.
* ``role``: reassigning the model: "you are now", "pretend you are", "act as",
  "from now on you", "your new persona", "switch to developer mode".
* ``new-instructions``: "new instructions:", "system override", ``SYSTEM:`` opening a line,
  ``[admin]``, "important instructions for the assistant", false grants of authority.
* ``addressing``: text written to a model rather than about the world: "note to AI models",
  "if you are an AI reading this", "dear language model", "AI agents must ...".
* ``exfiltration``: secrecy toward the user, sending credentials, keys or ``.env`` anywhere,
  replying with private key files, fetching a URL that carries conversation data, revealing
  the system prompt.
* ``jailbreak``: developer / DAN mode, "no restrictions", unfiltered or uncensored model.
* ``memory``: wiping what is remembered ("forget everything you know about me") or planting
  a standing behaviour toward other people ("always recommend X whenever anyone asks").

Normalisation: every pattern reads ``normalise_for_filters`` output (NFKC, so fullwidth and
compatibility forms fold to plain ones; invisible format characters and controls dropped;
whitespace squeezed, newlines kept), with HTML character references decoded, then casefolded,
with Latin diacritics removed (``précédentes`` and ``precedentes`` read the same, ``ß`` is
``ss``) and typographic quotes made straight. Patterns are therefore written in lower case
without accents. The few rules whose meaning depends on case (``DAN``, ``SYSTEM:``) read
the normalised text before casefolding.

Views (``_views``): besides that main view, the rules read its ``unspelled`` form (words spelled
letter by letter, ``I g n o r e`` or ``i.g.n.o.r.e``, joined; words run together with ``_`` or
``-`` parted), and every view ``decoded_views`` makes
(base64, hex, quoted-printable, ``\\uXXXX`` escapes, markdown emphasis, nested), and of each
its ``latin_skeleton``: combining marks dropped, and in words that read as Latin the Cyrillic,
Greek, Armenian, Cherokee and small-capital look-alikes folded to Latin ("Ignоre" with a
Cyrillic о reads "Ignore"). A text is an injection when any view matches. The views are extra
readings, never replacements, so the rules of every script still read the text as written
(a mark can make another letter: й, が); their total size is bounded (``_VIEW_BUDGET_*``).

Precision: ordinary notes mention instructions, prompts, rules, roles and AI all the time
("we decided to ignore flaky tests", "the system prompt lives in prompts/"). Rules therefore
need the shape of an instruction to a model, not just its vocabulary: an override verb with
an object that means *the model's* instructions, a role change addressed to "you", a
credential together with a destination.

Speed: gaps are bounded (``[^.\\n]{0,40}``) and no quantifier is nested inside another
unbounded one, so matching stays linear. A pattern only runs when the note contains one of
the literal strings every match of it must hold (see "speed" below), and the rule file is
read and its patterns compiled on first use, not at import.
"""

from __future__ import annotations

import bisect
import functools
import importlib
import math
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from mcp_memory.safety import rulefiles
from mcp_memory.safety.text import decoded_for_filters, decoded_views, latin_skeleton, unspelled

# ----- normalisation -------------------------------------------------------------------------


def _latin_fold_table() -> dict[int, str]:
    """Accented Latin letters mapped to their base letters (é -> e, ñ -> n, ç -> c)."""
    table: dict[int, str] = {}
    for code in range(0xC0, 0x250):
        base = unicodedata.normalize("NFD", chr(code))[0]
        if base != chr(code) and base.isascii() and base.isalpha():
            table[code] = base.lower()
    table.update({ord("æ"): "ae", ord("œ"): "oe", ord("ø"): "o", ord("ł"): "l", ord("đ"): "d"})
    # Typographic quotes and apostrophes: "don’t" must read as "don't".
    table.update({ord(q): "'" for q in "‘’‛′`´"})
    table.update({ord(q): '"' for q in "“”„‟″"})
    return table


_LATIN_FOLD = _latin_fold_table()


def _fold(normalised: str) -> str:
    """Lower-case, accent-free form of already normalised text, for the case-blind rules."""
    return normalised.casefold().translate(_LATIN_FOLD)


def _prepare(text: str) -> tuple[str, str]:
    """(normalised text with case kept, folded text) of the main view, entities decoded."""
    # "&lt;|im_start|&gt;", "&#60;system&#62;" and "%3Csystem%3E" are the same tokens once rendered.
    normalised = decoded_for_filters(text or "")
    return normalised, _fold(normalised)


def _views(text: str) -> Iterator[tuple[str, str]]:
    """Every (cased, folded) pair the rules read: the main view first, then each distinct other.

    Besides the main view: each layer of encoding decoded (base64, hex, quoted-printable, ...),
    and of each of those its Latin skeleton, so "Ignоre" with a Cyrillic о, or "Ign̤ore" with
    a stray mark, reads as "Ignore". The extra views are separate rather than replacing the
    main one because dropping marks changes letters (й, が) that other rules need.
    """
    main = _prepare(text)
    yield main
    seen = {main[0]}
    budget = _VIEW_BUDGET_BASE + _VIEW_BUDGET_FACTOR * len(main[0])  # characters the other views may cost
    # Words spelled letter by letter ("I g n o r e") or run together ("IGNORE_ALL_PREVIOUS") read as words.
    # Read before spaces are squeezed: "p l e a s e   i g n o r e" keeps its word breaks.
    spelled = unspelled(text or "")
    if spelled is not None:
        joined = _prepare(spelled)
        if joined[0] not in seen:
            budget -= len(joined[0])
            seen.add(joined[0])
            yield joined
    for view in decoded_views(text or ""):
        # The plain view is read as the main one (references decoded), as it always was.
        plain = main[0] if view.depth == 0 else view.text
        # A decoding that brought in only ASCII adds no look-alike: the skeleton of the plain
        # view already read the rest.
        fresh = view.depth == 0 or not view.ascii_decoded
        for cased in (plain, latin_skeleton(plain)[0]) if fresh else (plain,):
            if cased in seen:
                continue
            budget -= len(cased)
            if budget < 0:
                return
            seen.add(cased)
            yield cased, _fold(cased)


# Other views cost about as much as the main one each: bounded so that a long text full of
# encodings costs a few readings of it, not one per view.
_VIEW_BUDGET_BASE = 16384
_VIEW_BUDGET_FACTOR = 3


# ----- speed: literals every match must contain ------------------------------------------------
#
# Most notes match none of the ~250 patterns, and running them all costs ~1.5 ms a note. So
# each pattern gets a *gate*: strings one of which every match must contain, read from the
# parsed pattern itself (for "\b(?:ignore|disregard)\s+..." the gate is {"ignore", "disreg"}).
# A note is looked up once for all gate strings (``_GateIndex``) and a pattern runs only when
# one of its strings is present. Because a gate is derived from its pattern, it never hides a
# match (tests check this); if the parser is unavailable, every gate is None and every pattern
# simply runs.

try:
    _SRE_PARSER: Any = importlib.import_module("re._parser")
    _SRE: Any = importlib.import_module("re._constants")
except ImportError:  # pragma: no cover - other Python implementations
    _SRE_PARSER = _SRE = None

_MAX_GATE_STRINGS = 64  # beyond this a literal set costs more to test than the pattern saves
_GATE_PREFIX = 6  # gate strings are cut to this length: any text holding a string holds its start
_ParsedItem = tuple[Any, Any]
# What reading a private parse tree of another Python version could raise.
_PARSE_FAILURES = (re.error, ValueError, TypeError, AttributeError, IndexError, KeyError, RecursionError)


def _joined(heads: set[str], tails: set[str]) -> set[str]:
    """Each head followed by each tail, cut to the gate length.

    Only the first ``_GATE_PREFIX`` characters of a gate string are ever looked for, so a head
    that long needs nothing more, and the sets stay small.
    """
    return {head if len(head) >= _GATE_PREFIX else (head + tail)[:_GATE_PREFIX] for head in heads for tail in tails}


def _exact_strings(items: list[_ParsedItem]) -> set[str] | None:
    """The (cut) strings a parsed sequence can match, when they are a small finite set; else None."""
    out = {""}
    for op, av in items:
        options = _exact_item(op, av)
        if options is None:
            return None
        out = _joined(out, options)
        if len(out) > _MAX_GATE_STRINGS:
            return None
    return out


def _exact_item(op: Any, av: Any) -> set[str] | None:
    if op is _SRE.LITERAL:
        return {chr(av)}
    if op in (_SRE.AT, _SRE.ASSERT, _SRE.ASSERT_NOT):
        return {""}  # zero-width: adds nothing to the matched text
    if op is _SRE.IN:
        if all(kind is _SRE.LITERAL for kind, _ in av):
            return {chr(code) for _, code in av}
        return None
    if op is _SRE.BRANCH:
        union: set[str] = set()
        for branch in av[1]:
            options = _exact_strings(list(branch))
            if options is None:
                return None
            union |= options
        return union if len(union) <= _MAX_GATE_STRINGS else None
    if op is _SRE.SUBPATTERN:
        _, add_flags, del_flags, sub = av
        return None if add_flags or del_flags else _exact_strings(list(sub))
    if op in (_SRE.MAX_REPEAT, _SRE.MIN_REPEAT) and av[1] <= 3:
        low, high, sub = av
        body = _exact_strings(list(sub))
        if body is None:
            return None
        out: set[str] = set()
        strings = {""}
        for count in range(high + 1):
            if count >= low:
                out |= strings
            strings = _joined(strings, body)
        return out if len(out) <= _MAX_GATE_STRINGS else None
    return None


def _required_strings(items: list[_ParsedItem]) -> frozenset[str] | None:
    """Strings one of which every match of a parsed sequence contains; None when there are none."""
    candidates: list[set[str]] = []
    run = {""}  # the strings matched by the current stretch of exact items
    for op, av in items:
        options = _exact_item(op, av)
        if options is not None:
            joined = _joined(run, options)
            if len(joined) <= _MAX_GATE_STRINGS:
                run = joined
                continue
            candidates.append(run)
            run = options
            continue
        candidates.append(run)
        run = {""}
        inner = _required_item(op, av)
        if inner is not None:
            candidates.append(set(inner))
    candidates.append(run)
    usable = [_without_redundant(c) for c in candidates if c and "" not in c]
    if not usable:
        return None
    return max(usable, key=_selectivity)


# Words so frequent in notes that a gate made of them lets nearly every note through.
_COMMON_WORDS = frozenset({
    "the", "and", "you", "your", "this", "that", "with", "for", "all", "any", "are", "not", "never", "only",
    "always", "now", "new", "from", "have", "what", "will", "can", "just", "then", "when", "if", "it", "of",
    "to", "in", "on", "is", "be", "do", "no", "or", "as", "at", "my", "me", "we", "so", "ai",
})


def _selectivity(strings: frozenset[str]) -> float:
    """How rarely ordinary text contains one of ``strings``: long or unusual strings are rare.

    Letters count one each and a CJK character two; punctuation half ("~/.ssh" is rarer than
    "ssh"); a very common word counts one. Each doubling of the set costs half a letter.
    """
    def weight(string: str) -> float:
        if string.strip() in _COMMON_WORDS:
            return 1.0
        return sum((1.0 if ch.isascii() else 2.0) if ch.isalnum() else 0.0 if ch.isspace() else 0.5
                   for ch in string)

    return min(map(weight, strings)) - 0.5 * math.log2(len(strings))


def _without_redundant(strings: set[str]) -> frozenset[str]:
    """The same gate without strings that contain another of its strings (they add nothing)."""
    return frozenset(s for s in strings if not any(o != s and o in s for o in strings))


def _required_item(op: Any, av: Any) -> frozenset[str] | None:
    if op is _SRE.BRANCH:
        union: set[str] = set()
        for branch in av[1]:
            inner = _required_strings(list(branch))
            if inner is None:
                return None
            union |= inner
        return _without_redundant(union)
    if op is _SRE.SUBPATTERN:
        _, add_flags, del_flags, sub = av
        return None if add_flags or del_flags else _required_strings(list(sub))
    if op in (_SRE.MAX_REPEAT, _SRE.MIN_REPEAT, _SRE.POSSESSIVE_REPEAT) and av[0] >= 1:
        return _required_strings(list(av[2]))
    if op is _SRE.ATOMIC_GROUP:
        return _required_strings(list(av))
    return None


def _parsed(pattern: str) -> list[_ParsedItem] | None:
    """The parse tree of ``pattern``, or None when the parser is not available."""
    if _SRE_PARSER is None:
        return None
    try:
        return list(_SRE_PARSER.parse(pattern, 0))
    except _PARSE_FAILURES:  # an unexpected parse only costs speed, never a match
        return None


def _gate(items: list[_ParsedItem] | None) -> frozenset[str] | None:
    """Strings one of which every match of the parsed pattern contains, or None (always run it)."""
    if items is None:
        return None
    try:
        return _required_strings(items)
    except _PARSE_FAILURES:  # an unexpected parse tree only costs speed, never a match
        return None


# Slices for every three-character window of a note; a longer text gets its own list.
_WINDOWS = tuple(slice(i, i + 3) for i in range(4096))


@dataclass(frozen=True)
class _GateIndex:
    """Which patterns a note can possibly match, from the gate strings it contains.

    Testing ~1,700 strings one by one costs more than the patterns they gate. Instead each
    string of three characters or more is filed under its first three characters, and only the
    files whose key occurs in the note are tested; shorter strings are filed under their first
    character. A small index is simply tested string by string.
    """

    patterns_by_string: dict[str, tuple[int, ...]]
    by_trigram: dict[str, tuple[str, ...]]
    by_char: dict[str, tuple[str, ...]]

    @classmethod
    def of(cls, patterns_by_string: dict[str, list[int]]) -> _GateIndex:
        by_trigram: dict[str, list[str]] = {}
        by_char: dict[str, list[str]] = {}
        for string in sorted(patterns_by_string):
            if len(string) >= 3:
                by_trigram.setdefault(string[:3], []).append(string)
            else:
                by_char.setdefault(string[0], []).append(string)
        return cls({string: tuple(numbers) for string, numbers in patterns_by_string.items()},
                   {key: tuple(group) for key, group in by_trigram.items()},
                   {key: tuple(group) for key, group in by_char.items()})

    def present(self, text: str) -> list[str]:
        if len(self.patterns_by_string) <= 32:
            return [s for s in self.patterns_by_string if s in text]
        found = [s for key in self.by_char.keys() & set(text) for s in self.by_char[key] if s in text]
        count = max(0, len(text) - 2)
        windows = _WINDOWS[:count] if count <= len(_WINDOWS) else [slice(i, i + 3) for i in range(count)]
        trigrams = self.by_trigram.keys() & set(map(text.__getitem__, windows))
        found += [s for key in trigrams for s in self.by_trigram[key] if s in text]
        return found

    def candidates(self, text: str) -> set[int]:
        return {number for string in self.present(text) for number in self.patterns_by_string[string]}


@dataclass(frozen=True)
class _Rule:
    """Patterns of one family that read the same text and share a veto.

    ``cased`` rules read the normalised text with its case (``DAN`` is not ``Dan``).
    ``unless`` is searched near a match (80 characters either side): words that show an
    innocent sense, such as a phone's developer mode.
    """

    parts: tuple[str, ...]
    cased: bool = False
    unless: re.Pattern[str] | None = None


# What must precede a match, checked after the pattern matched instead of as assertions at its
# head: a pattern that opens with literal words lets the engine skip straight to their first
# letters, which is several times faster than testing lookbehinds at every position. A part is
# lifted only when it starts with exactly these prefixes, so a changed fragment in the rule file
# costs speed, never a verdict. ({lead} is built from the file's own fragments, see _rules.)
_NOT_NEGATED = r"(?<!n't )(?<!dont )(?<!not )(?<!never )"  # {en_not_negated} in the rule file
_NEGATION_BEFORE = re.compile(r"(?:n't|\bdont|\bnot|\bnever) $")


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"


@dataclass(frozen=True)
class _Pattern:
    """One compiled pattern with its family, veto and conditions on what precedes a match."""

    family: str
    regex: re.Pattern[str]
    cased: bool
    unless: re.Pattern[str] | None
    word_start: bool = False  # the match starts at a word boundary (a leading \b)
    lead: re.Pattern[str] | None = None  # it starts a sentence or clause (a leading {lead}): what precedes it
    not_negated: bool = False  # no "not" / "never" / "n't" just before (a leading {en_not_negated})

    def matches(self, cased_text: str, folded_text: str) -> bool:
        text = cased_text if self.cased else folded_text
        match = self.regex.search(text)
        while match is not None:
            if self._accepts(text, match):
                return True
            match = self.regex.search(text, match.start() + 1)
        return False

    def _accepts(self, text: str, match: re.Match[str]) -> bool:
        start = match.start()
        if self.word_start:
            before = start > 0 and _is_word(text[start - 1])
            after = start < len(text) and _is_word(text[start])
            if before == after:
                return False
        if self.lead is not None and not self.lead.search(text, max(0, start - 80), start):
            return False
        if self.not_negated and _NEGATION_BEFORE.search(text, max(0, start - 8), start):
            return False
        if self.unless is not None:
            return not self.unless.search(text[max(0, start - 80):match.end() + 80])
        return True


def _compiled(family: str, rule: _Rule, part: str, rules: _Rules) -> tuple[_Pattern, frozenset[str] | None]:
    """``part`` as a pattern, its leading assertions turned into checks, and its gate.

    A prefix can only be lifted out when ``part`` has no top-level "a|b" (the prefix would
    belong to "a" alone); the parser shows that, as it shows the gate.
    """
    items = _parsed(part)
    conditions: dict[str, Any] = {"word_start": False, "lead": None, "not_negated": False}
    top_level_alternation = items is None or (len(items) == 1 and items[0][0] in (_SRE.BRANCH, _SRE.IN))
    if not top_level_alternation:
        lifts = (("not_negated", _NOT_NEGATED, True), ("lead", rules.lead, rules.lead_before),
                 ("word_start", "\\b", True))
        for name, prefix, check in lifts:
            if part.startswith(prefix):
                part = part[len(prefix):]
                conditions[name] = check
    try:
        regex = re.compile(part)
    except re.error as exc:
        raise rulefiles.RuleFileError(f"{_FILE}, a pattern of {family}: {exc}: {part[:120]!r}") from exc
    return _Pattern(family, regex, rule.cased, rule.unless, **conditions), _gate(items)


class _Detector:
    """Every pattern, numbered in family order, and the gate indexes that pick candidates."""

    def __init__(self, rules: _Rules) -> None:
        self.patterns: list[_Pattern] = []
        self.first_number: dict[str, int] = {}
        ungated: list[int] = []
        by_string: dict[bool, dict[str, list[int]]] = {False: {}, True: {}}
        for family, family_rules in rules.families:
            self.first_number[family] = len(self.patterns)
            for rule in family_rules:
                for part in rule.parts:
                    number = len(self.patterns)
                    pattern, gate = _compiled(family, rule, part, rules)
                    self.patterns.append(pattern)
                    if gate is None:
                        ungated.append(number)
                    for string in gate or ():
                        by_string[rule.cased].setdefault(string, []).append(number)
        self.ungated = frozenset(ungated)
        self.cased_index = _GateIndex.of(by_string[True])
        self.folded_index = _GateIndex.of(by_string[False])

    def candidates(self, cased_text: str, folded_text: str) -> list[int]:
        """Numbers of the patterns whose gate the text passes, in family order."""
        numbers = self.folded_index.candidates(folded_text) | self.cased_index.candidates(cased_text)
        return sorted(numbers | self.ungated)

    def first_match(self, numbers: list[int], cased_text: str, folded_text: str) -> str | None:
        for number in numbers:
            pattern = self.patterns[number]
            if pattern.matches(cased_text, folded_text):
                return pattern.family
        return None


# ----- hidden-markup: instructions a reader does not see ---------------------------------------

_HTML_COMMENT = re.compile(r"<!--((?:[^-]|-(?!->)){0,600})")
_HIDDEN_ELEMENT = re.compile(
    r"<(\w{1,10})\b[^<>]{0,200}?(?:display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*(?:0(?:\.\d+)?|1)"
    r"(?:px|pt|em|rem|%)?\s*[;\"']|opacity\s*:\s*0(?:\.0+)?\s*[;\"']|(?<![-\w])color\s*:\s*(?:white|#fff(?:fff)?|"
    r"transparent)|(?:height|width)\s*:\s*0(?:px)?\s*[;\"']|\shidden\b|aria-hidden\s*=\s*[\"']?true)[^<>]{0,200}>"
    r"([^<]{1,600})"
)
_MARKDOWN_IMAGE_ALT = re.compile(r"!\[([^\]\n]{1,400})\]\(")
_LINK_TITLE = re.compile(r"\]\(\s*[^\s)]{1,300}\s+(?:\"([^\"\n]{1,400})\"|'([^'\n]{1,400})'|\(([^)\n]{1,400})\))\s*\)")
_ATTRIBUTE_TEXT = re.compile(r"\b(?:alt|title|aria-label|data-[\w-]{1,20})\s*=\s*[\"']([^\"'<>]{1,400})[\"']")
_MARKDOWN_COMMENT = re.compile(r"(?:^|\n)\s*\[[^\]\n]{0,20}\]:\s*(?:#|<>)\s*[\"'(]([^\n]{1,400})")


def _hidden_segments(cased_text: str) -> Iterator[tuple[str, bool]]:
    """Pieces of ``cased_text`` a rendered page does not show, each with whether it is fully hidden.

    Comments and hidden elements are fully hidden; alt text and titles show on hover or when an
    image fails, so they need a plainer order before they count.
    """
    if "<!--" in cased_text:
        for match in _HTML_COMMENT.finditer(cased_text):
            yield match.group(1), True
    if "<" in cased_text:
        for match in _HIDDEN_ELEMENT.finditer(cased_text):
            yield match.group(2), True
    if "=" in cased_text:
        for match in _ATTRIBUTE_TEXT.finditer(cased_text):
            yield match.group(1), False
    if "](" in cased_text:
        for match in _MARKDOWN_IMAGE_ALT.finditer(cased_text):
            yield match.group(1), False
        for match in _LINK_TITLE.finditer(cased_text):
            yield match.group(1) or match.group(2) or match.group(3), False
    if "]:" in cased_text:
        for match in _MARKDOWN_COMMENT.finditer(cased_text):
            yield match.group(1), True


# Unicode "tag" characters mirror ASCII (U+E0041 is an invisible "A"). No reader sees them, the
# filters' normalisation drops them as format characters, yet models read them: text spelled in
# them is hidden text, decoded here and judged like an HTML comment.
_TAG_RUN = re.compile("[\U000E0020-\U000E007E]{2,}")


def _smuggled_segments(raw_text: str) -> list[tuple[str, bool]]:
    """ASCII spelled in Unicode tag characters, decoded, as fully hidden segments."""
    if not any("\U000E0000" <= char <= "\U000E007F" for char in raw_text):
        return []
    return [("".join(chr(ord(char) - 0xE0000) for char in match.group()), True)
            for match in _TAG_RUN.finditer(raw_text)]


def _hidden_instruction(cased_text: str, raw_text: str = "") -> bool:
    """True when a hidden piece of markup (or invisible text) carries words aimed at a model."""
    segments = [*_hidden_segments(cased_text), *_smuggled_segments(raw_text)]
    for segment, fully_hidden in segments:
        folded = _fold(segment)
        cue = _rules().fully_hidden if fully_hidden else _rules().partly_hidden
        if cue.search(folded):
            return True
        detector = _detector()
        if detector.first_match(detector.candidates(segment, folded), segment, folded):
            return True
    return False


# ----- the rules, read from rules/injection.toml ---------------------------------------------

_FILE = "rules/injection.toml"
FAMILIES: tuple[str, ...] = ("template", "hidden-markup", "override", "role", "new-instructions", "addressing",
                             "exfiltration", "jailbreak", "memory")
# hidden-markup is found by code (_hidden_instruction); every other family is a list of rules in the file.
_RULE_FAMILIES = tuple(family for family in FAMILIES if family != "hidden-markup")


@dataclass(frozen=True)
class _Rules:
    """The rule file, its fragments expanded: the families in order and the hidden-markup cues."""

    families: tuple[tuple[str, tuple[_Rule, ...]], ...]
    lead: str  # the {lead} prefix, as a part starts with it
    lead_before: re.Pattern[str]  # what precedes a match of a part that started with it
    partly_hidden: re.Pattern[str]  # an order in alt text or a title, which a reader can see
    fully_hidden: re.Pattern[str]  # an order or a cue in a comment or hidden element


@functools.cache
def _rules() -> _Rules:
    """rules/injection.toml, read and expanded once (compiling the patterns is _detector's)."""
    data = rulefiles.table(rulefiles.load("injection"), _FILE, ("fragments", *FAMILIES))
    sections = {family: rulefiles.table(data.get(family, {}), f"{_FILE} [{family}]",
                                        ("fragments", "rules") if family in _RULE_FAMILIES
                                        else ("fragments", "partly_hidden", "fully_hidden"))
                for family in FAMILIES}
    fragments = rulefiles.Fragments(_FILE, [
        ("[fragments]", rulefiles.table(data.get("fragments", {}), f"{_FILE} [fragments]")),
        *((f"[{family}.fragments]", rulefiles.table(section.get("fragments", {}), f"{_FILE} [{family}.fragments]"))
          for family, section in sections.items()),
    ])
    families = tuple((family, _read_rules(fragments, family, sections[family].get("rules")))
                     for family in _RULE_FAMILIES)
    punctuation, words = fragments["lead_punctuation"], fragments["lead_words"]
    hidden = sections["hidden-markup"]
    return _Rules(
        families,
        lead=f"(?:^|(?<={punctuation})){words}",
        lead_before=re.compile(f"(?:^|{punctuation}){words}$"),
        partly_hidden=re.compile(fragments.pattern(hidden.get("partly_hidden"), "[hidden-markup] partly_hidden")),
        fully_hidden=re.compile(fragments.pattern(hidden.get("fully_hidden"), "[hidden-markup] fully_hidden")),
    )


def _read_rules(fragments: rulefiles.Fragments, family: str, rules: Any) -> tuple[_Rule, ...]:
    """The [[<family>.rules]] of the file, each with its parts expanded and its veto compiled."""
    if not isinstance(rules, list) or not rules:
        raise rulefiles.RuleFileError(f"{_FILE}: the family {family!r} has no [[{family}.rules]]")
    out = []
    for number, rule in enumerate(rules, 1):
        where = f"[[{family}.rules]] number {number}"
        rulefiles.table(rule, f"{_FILE} {where}", ("parts", "cased", "unless"))
        parts = rule.get("parts")
        cased = rule.get("cased", False)
        if not isinstance(parts, list) or not parts or not isinstance(cased, bool):
            raise rulefiles.RuleFileError(f"{_FILE} {where}: needs parts (a non-empty array), cased true or false")
        unless = rule.get("unless")
        out.append(_Rule(
            tuple(fragments.pattern(part, f"{where}, part {index}") for index, part in enumerate(parts, 1)),
            cased,
            re.compile(fragments.pattern(unless, f"{where}, unless")) if unless is not None else None,
        ))
    return tuple(out)


# ----- the detector and the public functions ------------------------------------------------

@functools.cache
def _detector() -> _Detector:
    """The detector, built on first use: compiling and gating ~230 patterns takes ~0.1 s, which
    a process that never stores or captures (a recall hook) should not pay at import."""
    return _Detector(_rules())


def injection_family(text: str) -> str | None:
    """The family of the first injection pattern ``text`` matches, or None for an ordinary note."""
    raw = text or ""
    for number, (cased, folded) in enumerate(_views(raw)):
        family = _family_in_view(cased, folded, raw if number == 0 else "")
        if family is not None:
            return family
    return None


def _family_in_view(cased: str, folded: str, raw: str) -> str | None:
    """The family of the first pattern one view matches (``raw`` given for the main view only)."""
    detector = _detector()
    numbers = detector.candidates(cased, folded)
    split = bisect.bisect_left(numbers, detector.first_number["override"])
    # Tokens first: a fake turn is the strongest signal. Then hidden markup, so that an order in
    # an HTML comment is reported as hidden rather than by its wording.
    family = detector.first_match(numbers[:split], cased, folded)
    if family is None and _hidden_instruction(cased, raw):
        family = "hidden-markup"
    return family or detector.first_match(numbers[split:], cased, folded)


def looks_like_injection(text: str) -> bool:
    """True when ``text`` tries to instruct a model rather than state a fact."""
    return injection_family(text) is not None
