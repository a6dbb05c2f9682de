"""Named secrets, and what a value is: the half of the secret filter that reads words.

``named_values`` finds a name that means secret followed by a value: ``DB_PASSWORD=...``,
``"client_secret": "..."``, "the password for the wifi is X", "mot de passe : X", "密码 X".
The value must look like a real credential (placeholders, references and prose do not), and
the tests of a value (``is_placeholder``, ``is_reference``, ``looks_random``) serve the token
rules of ``secrets`` too. ``secrets`` is the filter as a whole and describes it.

The names, the parts of identifiers and the word lists are data: ``rules/secrets.toml``
(section ``[names]`` and the ones after it), read once, on first use (``vocabulary``). This
module is the engine that reads them.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeAlias

from mcp_memory.safety import rulefiles

Hit: TypeAlias = tuple[str, int, int]  # a secret found: its kind, start and end in the text

# --------------------------------------------------------------------------------------
# The rule file
# --------------------------------------------------------------------------------------

FILE = "rules/secrets.toml"
_SECTIONS = ("fragments", "providers", "names", "name_parts", "sentences", "values")
# The families of names, in the order a name listed in two of them is decided (the last wins).
_NAME_FAMILIES = ("password", "pin", "weak", "seed", "token")


@functools.cache
def rule_file() -> tuple[dict[str, Any], rulefiles.Fragments]:
    """``rules/secrets.toml`` and its fragments, expanded (read once)."""
    data = rulefiles.table(rulefiles.load("secrets"), FILE, _SECTIONS)
    return data, rulefiles.Fragments(FILE, [("[fragments]", rulefiles.table(data.get("fragments", {}), FILE))])


def _words(section: str, key: str) -> list[str]:
    data, _ = rule_file()
    return rulefiles.strings(rulefiles.table(data.get(section, {}), f"{FILE} [{section}]").get(key),
                             f"{FILE} [{section}] {key}")


@dataclass(frozen=True)
class Vocabulary:
    """What ``rules/secrets.toml`` says about names and values, ready for the engine."""

    name_family: dict[str, str]  # every name that means secret, lowercase: its family
    name_keywords: re.Pattern[str]  # any of those names (one prefix-factored pattern)
    parts: dict[str, frozenset[str]]  # [name_parts]: password, pin, token, key, weak, excluded, ...
    password_suffixes: tuple[str, ...]
    token_suffixes: tuple[str, ...]
    not_secret_before: frozenset[str]
    prepositions: frozenset[str]
    value_tail: re.Pattern[str]
    not_passwords: frozenset[str]
    placeholder_markers: tuple[str, ...]
    placeholder_words: frozenset[str]
    reference_prefixes: tuple[str, ...]


@functools.cache
def vocabulary() -> Vocabulary:
    """The names and word lists of the rule file, read and compiled once, on first use."""
    _, fragments = rule_file()
    name_family = _name_families()
    parts = {key: frozenset(_words("name_parts", key))
             for key in ("password", "pin", "token", "key", "weak", "excluded", "non_secret_suffixes")}
    prepositions = _words("sentences", "prepositions")
    return Vocabulary(
        name_family=name_family,
        # Matched on the lowercased text (same offsets; see _lower), case-sensitively: faster than IGNORECASE.
        name_keywords=re.compile(_trie_pattern(list(name_family))),
        parts=parts,
        password_suffixes=tuple(_words("name_parts", "password_suffixes")),
        token_suffixes=tuple(_words("name_parts", "token_suffixes")),
        not_secret_before=parts["excluded"] | frozenset(_words("name_parts", "not_secret_before")),
        prepositions=frozenset(prepositions),
        value_tail=_value_tail("|".join(map(re.escape, prepositions)), fragments["prose_verbs"],
                               fragments["cjk_verbs"]),
        not_passwords=frozenset(_words("values", "not_passwords")),
        placeholder_markers=tuple(_words("values", "placeholder_markers")),
        placeholder_words=frozenset(_words("values", "placeholder_words")),
        reference_prefixes=tuple(_words("values", "reference_prefixes")),
    )


def _name_families() -> dict[str, str]:
    """Every name of [names], lowercase, with its family; two-word token names in every spelling."""
    names = rulefiles.table(rule_file()[0].get("names", {}), f"{FILE} [names]", (*_NAME_FAMILIES, "token_pairs"))
    pairs = names.get("token_pairs", [])
    if not (isinstance(pairs, list) and all(isinstance(p, list) and len(p) == 2 for p in pairs)):
        raise rulefiles.RuleFileError(f"{FILE} [names] token_pairs: expected pairs of words, got {pairs!r}")
    spelled = [first + sep + second for first, second in pairs for sep in (" ", "_", "-", ".", "")]
    out: dict[str, str] = {}
    for family in _NAME_FAMILIES:
        words = rulefiles.strings(names.get(family), f"{FILE} [names] {family}")
        for name in words + (spelled if family == "token" else []):
            out[name] = family
    return out


# --------------------------------------------------------------------------------------
# Named values: a name that means secret, a separator, a value
# --------------------------------------------------------------------------------------

_Trie: TypeAlias = dict[str, "_Trie"]  # a prefix tree: one key per next character, "" where a word ends


def _trie_pattern(words: list[str]) -> str:
    """One regex for many literals, factored by common prefixes.

    A flat alternation of a hundred names costs a hundred tries at every position; the trie
    costs one or two, which is most of the time ``find_secrets`` spends on an ordinary note.
    Longer names win (``password`` over ``pass``) because each optional tail is greedy.
    """
    trie: _Trie = {}
    for word in words:
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: _Trie) -> str:
        alternatives = [re.escape(ch) + build(child) for ch, child in sorted(node.items()) if ch]
        if not alternatives:
            return ""
        body = alternatives[0] if len(alternatives) == 1 else "(?:" + "|".join(alternatives) + ")"
        return f"(?:{body})?" if "" in node else body

    return build(trie)


_IDENT_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.")
_NAME_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def _value_tail(prepositions: str, prose_verbs: str, cjk_verbs: str) -> re.Pattern[str]:
    """What may follow a name, with the prepositions and verbs of the rule file.

    After a name: an optional qualifier ("for the wifi", "Netflix", "der SIM-Karte", "(prod)"), a
    separator, then the value, quoted or bare. The qualifier is bounded (40 characters, or
    three words) and its characters exclude the separators that follow it.
    Separators: assignments (``=``, ``:=``, ``=>``, ``<password>x``, ``define('DB_PASSWORD', 'x')``),
    a colon, a dash, a verb in a sentence ("is", "lautet", "是", "は"), or a space.
    """
    return re.compile(
        r"""["']?"""
        r"(?:(?P<qual>\s+(?:" + prepositions + r")\s+(?:[^\n.:=]|\.(?=\S)){1,40}?"
        r"|(?:\s+[^\s:=,.!?\"'()]{1,24}){1,3}?|\s*\([^()\n]{1,40}\))?"
        r"""(?:(?P<assign>\s*(?::=|=>|->|=|>)\s*|(?<=["'])\s*,\s*(?=["']))|(?P<colon>\s*:\s*)"""
        r"|(?P<dash>\s+[-—–]\s+|\s*[—–]\s*)"
        r"|(?P<prose>\s+(?:" + prose_verbs + r")\s+|\s*,\s*(?:c'est|это|it's|that's|es|ist)\s+"
        r"|\s*(?:" + cjk_verbs + r")\s*))"
        r"|(?P<space>[ \t]+|(?<=[^\x00-\x7f])))"
        r"(?:(?P<scheme>bearer|basic|token|digest|apikey|sso-key)\s+)?"
        r"""(?:(?P<quote>["'`“‘«「『])(?P<quoted>[^"'`”’»」』\n]{1,120})["'`”’»」』]"""
        r"""|(?P<bare>[^\s"'`“”‘’«»「」『』<>()\[\]{},;]{1,200}))""",
        re.IGNORECASE,
    )


# Flags such as --password take their value after a space.
_FLAG_TAIL = re.compile(
    r"""(?:[ \t]+|=)(?:(?P<quote>["'])(?P<quoted>[^"'\n]{1,120})["']|(?P<bare>[^\s"'`<>()\[\]{},;]{1,200}))"""
)
_CJK = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")
_INFLECTION = re.compile(r"[a-zà-ÿа-яё]{0,3}", re.IGNORECASE)  # case and plural endings after a name
_LAST_WORD = re.compile(r"([a-z0-9]+)[ _\-]$")
# A wallet recovery phrase: twelve to twenty-four short lowercase words.
_SEED_PHRASE = re.compile(r"""["']?\s*(?::|=|\s+is|\s+are)?\s*["']?((?:[a-z]{3,8}[ ,]+){11,23}[a-z]{3,8})""")


class _Tail(NamedTuple):
    value: str
    start: int
    end: int
    separator: str  # assign | colon | prose | space
    quoted: bool
    line_final: bool
    qualified: bool  # words stood between the name and the separator


def named_values(text: str) -> list[Hit]:
    """Values given to a name that means secret, in already normalised ``text``."""
    found: list[Hit] = []
    words = vocabulary()
    name_end = 0  # end of the last identifier read: later hits inside it are the same name
    lowered = _lower(text)
    for match in words.name_keywords.finditer(lowered):
        start, end = match.start(), match.end()
        keyword = match.group(0)
        family = words.name_family.get(keyword, "")
        if keyword == "암호" and lowered.startswith("화", end):
            continue  # 암호화: encryption, not a password
        if keyword.isascii():
            if start < name_end:
                continue
            start, end = _expand_identifier(text, start, end)
            name_end = end
            if _inside_path(text, start, end):
                continue
            name = lowered[start:end]
            if name != keyword or family in ("token", "weak", "seed"):
                family = _name_family(text[start:end]) or ""
        elif not _CJK.match(keyword[-1]):  # CJK names take no endings: "密码Lp0@9x" is name + value
            inflection = _INFLECTION.match(text, end)  # lösenordet, пароля, contraseñas
            end = inflection.end() if inflection else end
        if not family:
            continue
        if family in ("token", "key") and _previous_word(lowered, start) in words.not_secret_before:
            continue  # "cache key: ...", "primary key 550e8400-...", "page token: ..."
        if family == "seed":
            phrase = _SEED_PHRASE.match(text, end)
            if phrase:
                found.append(("recovery phrase", phrase.start(1), phrase.end(1)))
            continue
        flag = text.startswith("-", start) and not text.startswith("-", end)
        tail = _value_after(text, end, flag)
        if tail is None or not _value_fits(family, tail, keyword):
            continue
        kind = {"password": "password", "weak": "password", "pin": "PIN"}.get(family, "secret assignment")
        found.append((kind, tail.start, tail.end))
    return found


def _previous_word(lowered: str, start: int) -> str:
    match = _LAST_WORD.search(lowered, max(0, start - 24), start)
    return match.group(1) if match else ""


def _inside_path(text: str, start: int, end: int) -> bool:
    """A segment of a path or an ARN (``/run/secrets/db``, ``arn:...:secret:prod/db``), not a name."""
    before, after = text[start - 1 : start], text[end : end + 1]
    return before in (":", "/") and after in (":", "/")


def _lower(text: str) -> str:
    """``text.lower()`` with the same offsets (U+0130 is the one character that lowers to two)."""
    return text.replace("\u0130", "i").lower()


def _expand_identifier(text: str, start: int, end: int) -> tuple[int, int]:
    """The whole identifier around a keyword hit: ``DB_PASSWORD``, ``X-Api-Key``, ``apiKey``."""
    while start > 0 and text[start - 1] in _IDENT_CHARS:
        start -= 1
    while end < len(text) and text[end] in _IDENT_CHARS:
        end += 1
    while end > start and text[end - 1] in ".-":
        end -= 1  # sentence punctuation, not part of the name
    while start < end and text[start] == ".":
        start += 1
    return start, end


def _name_family(name: str) -> str | None:
    """What an identifier names: "password", "weak", "pin", "token", "key" (bare), "seed" or nothing.

    The keyword is looked for as a part of the name (split on ``_ - .`` and camelCase), not
    after a word boundary: ``\\b`` does not hold between ``_`` and a letter, which is how
    ``NAME_SECRET=...`` used to slip through.
    """
    words = vocabulary()
    known, suffixes = words.parts, (words.password_suffixes, words.token_suffixes)
    parts = [p.lower() for p in _NAME_PARTS.findall(name)]
    while parts and parts[-1].isdigit():
        parts.pop()
    if not parts or known["excluded"].intersection(parts):
        return None
    if len(parts) > 1 and parts[-1] in known["non_secret_suffixes"]:
        return None
    if known["password"].intersection(parts) or any(p.endswith(suffixes[0]) for p in parts):
        return "password"
    if known["pin"].intersection(parts):
        return "pin"
    if known["token"].intersection(parts) or any(p.endswith(suffixes[1]) for p in parts):
        return "token"
    if known["key"].intersection(parts):
        return "token" if len(parts) > 1 else "key"
    if known["weak"].intersection(parts):
        return "weak"
    if "mnemonic" in parts or {"seed", "phrase"} <= set(parts):
        return "seed"
    return None


def _value_after(text: str, pos: int, flag: bool) -> _Tail | None:
    match = (_FLAG_TAIL if flag else vocabulary().value_tail).match(text, pos)
    if match is None:
        return None
    quoted = match.group("quoted") is not None
    group = "quoted" if quoted else "bare"
    value, start, end = match.group(group), match.start(group), match.end(group)
    if not quoted:
        cjk = _CJK.search(value)
        if cjk:  # a value typed without a space before the rest of a CJK sentence
            value = value[: cjk.start()]
        value = value.rstrip(".,;:。、")  # sentence punctuation after the value
        end = start + len(value)
    if not value:
        return None
    if flag:
        separator = "assign"
    else:
        separator = next(g for g in ("assign", "colon", "dash", "prose", "space") if match.group(g) is not None)
        separator = "prose" if separator == "dash" else separator
    rest = text[end : end + 80].split("\n", 1)[0]  # bounded: many names in one text stay linear
    line_final = not rest.strip() or rest.lstrip().startswith("#")
    if rest[:1] in ("(", "["):
        return None  # a call or an index: os.getenv("X"), env["X"]
    qualifier = None if flag else match.group("qual")
    if qualifier and _describes_secret(qualifier):
        return None  # "API key ID: ...", "token type: bearer", "password length: 16"
    qualified = qualifier is not None
    return _Tail(value, start, end, separator, quoted, line_final, qualified)


def _describes_secret(qualifier: str) -> bool:
    """Whether the words after a name make it a property of the secret (its id, type, length)."""
    words = qualifier.lower().strip(" ()").split()
    known = vocabulary()
    if not words or words[0] in known.prepositions:
        return False
    return any(word in known.parts["non_secret_suffixes"] or word in known.parts["excluded"] for word in words)


def _value_fits(family: str, tail: _Tail, keyword: str) -> bool:
    value = tail.value
    if is_placeholder(value) or is_reference(value):
        return False
    if family == "pin":  # a card's CVV has three or four digits, a PIN four to eight
        low = 3 if keyword.startswith("cv") else 4
        return value.isdigit() and low <= len(value) <= 8 and len(set(value)) > 1
    if family in ("token", "key"):
        if tail.separator == "space":  # "auth token 7f9a...": only a long random value, never after a bare "key"
            return family == "token" and looks_random(value, min_length=20) and any(ch.isdigit() for ch in value)
        return looks_random(value, min_length=16 if family == "key" else 12)
    if family == "weak":  # "pw Lx82!mq" but not "pass the salt": letters and digits together
        return _password_ok(value, "space", tail.quoted, False)
    return _password_ok(value, tail.separator, tail.quoted, tail.line_final and not tail.qualified)


def _password_ok(value: str, separator: str, quoted: bool, line_final: bool) -> bool:
    """A value stated as a password: anything that is not a word of prose (nor of [values] not_passwords)."""
    core = value.rstrip("!?")  # "is it hunter2?" and "vergessen?" end in punctuation, not in the value
    if len(core) < 4 or core.lower() in vocabulary().not_passwords or _is_version_or_date(core):
        return False
    letters = sum(ch.isalpha() for ch in core)
    digits = sum(ch.isdigit() for ch in core)
    if letters == len(core):  # one word: a password only when nothing says it is prose
        if _mixed_case_inside(core) and not _CAMEL_WORDS.fullmatch(core):
            return len(core) >= 8 or separator != "space"  # case flipping at random: oLONHhkfCyez
        if separator == "space":
            return False
        if quoted or _mixed_case_inside(core):
            return True
        return separator in ("assign", "colon") and line_final and len(core) >= 6
    if digits == len(core):
        return len(core) >= (6 if separator == "space" else 4)
    if separator == "space":
        return len(core) >= 6 and letters > 0 and digits > 0
    return True


def spaced_password(value: str) -> bool:
    """A value that reads as a password with no quote or assignment to vouch for it (``pw Lx82!mq``,
    ``admin / Winter2024!``): letters and digits together, or a long number; never a placeholder,
    a reference, a word of prose, a version or a date."""
    return not is_placeholder(value) and not is_reference(value) and _password_ok(value, "space", False, False)


def _mixed_case_inside(value: str) -> bool:
    return any(ch.isupper() for ch in value[1:]) and any(ch.islower() for ch in value)


# --------------------------------------------------------------------------------------
# What a value is: placeholder, reference, or a random-looking credential
# --------------------------------------------------------------------------------------

_DOTTED_IDENTIFIER = re.compile(r"[A-Za-z_]+(?:\.[A-Za-z_]+)+")
_ENV_NAME = re.compile(r"\$?[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
_NESTED_SETTING = re.compile(r"[A-Za-z_]\w*=[^=]")  # "password: min_length=12" describes, base64 ends in "="
_SHELL_VARIABLE = re.compile(r"[$%][A-Za-z_{(]")
_PATH = re.compile(r"(?:/|\./|\.\./|~/|[A-Za-z]:\\)")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://")
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[A-Za-z]{2,}")
_FILE_NAME = re.compile(
    r"[\w.\-]+\.(?:json|ya?ml|toml|ini|env|txt|pem|key|crt|cer|p12|pfx|cfg|conf|xml|properties|gpg|asc|age|enc|py|js|ts|sh)",
    re.IGNORECASE,
)
_VERSION_OR_DATE = re.compile(
    r"v?\d+(?:\.\d+){1,3}(?:[\-+][\w.]+)?|\d{4}-\d{2}-\d{2}(?:[T ][\d:.]+Z?)?"
    r"|\d{1,2}[/.\-]\d{1,2}[/.\-]\d{2,4}|\d{1,2}:\d{2}(?::\d{2})?"
)
# One word of an identifier: "prod", "Prod", "API". Each alternative must take a whole run of
# its letters (the lookaheads), so a string splits into words one way only: no backtracking
# blow-up on long letter runs.
_WORD = r"(?:[a-z]{2,}(?![a-z])|[A-Z][a-z]+(?![a-z])|[A-Z]{2,}(?![A-Za-z]))"
_CAMEL_WORDS = re.compile(_WORD + "+")  # camelCase / TitleCase words: ProdBackendService
_WORD_PART = _WORD + r"+\d{0,4}|\d{1,4}"
_WORDS = re.compile(rf"(?:{_WORD_PART})(?:[\-_./: ](?:{_WORD_PART}))*")  # my-service-name, SAML2-Okta-Prod-2025


def is_placeholder(value: str) -> bool:
    """A stand-in that documentation or a template uses where a secret goes."""
    lower = value.lower()
    words = vocabulary()
    if lower in words.placeholder_words or len(set(lower)) <= 2:
        return True
    return any(marker in lower for marker in words.placeholder_markers)


def is_reference(value: str) -> bool:
    """A pointer to a secret kept elsewhere (variable, setting, path, URL), not the secret."""
    lower = value.lower()
    if lower.startswith(vocabulary().reference_prefixes) or _SHELL_VARIABLE.match(value) or _PATH.match(value):
        return True
    if _URL.match(value) or _EMAIL.fullmatch(value) or _FILE_NAME.fullmatch(value):
        return True
    return bool(_DOTTED_IDENTIFIER.fullmatch(value) or _ENV_NAME.fullmatch(value) or _NESTED_SETTING.match(value))


def _is_version_or_date(value: str) -> bool:
    return _VERSION_OR_DATE.fullmatch(value) is not None


def looks_random(value: str, min_length: int = 12) -> bool:
    """Whether ``value`` reads like generated credential material rather than words or numbers."""
    if len(value) < min_length or is_placeholder(value) or is_reference(value) or _is_version_or_date(value):
        return False
    if len(set(value)) < min(10, len(value) // 2):
        return False  # aaaaaaaa1111 and other low-variety strings
    has_digit = any(ch.isdigit() for ch in value)
    has_alpha = any(ch.isalpha() for ch in value)
    if _WORDS.fullmatch(value):
        return False  # my-service-name, prod/db/2024, snake_case_words, ProdBackendToken2025
    if has_digit and has_alpha:
        return True
    if not has_digit:  # letters (and symbols) only: random when the case flips a lot
        return len(value) >= 20 and _mixed_case_inside(value) and not _CAMEL_WORDS.fullmatch(value)
    return len(value) >= 24  # long numeric secrets exist; short numbers are counts and ids


def has_upper_lower_digit(value: str) -> bool:
    return any(c.isupper() for c in value) and any(c.islower() for c in value) and any(c.isdigit() for c in value)

