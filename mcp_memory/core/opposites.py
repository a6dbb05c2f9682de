"""Whether two short statements do opposite things: "added proxy_pass" against "removed proxy_pass".

Sentence embeddings place an action and its reversal close together (the default model rates
"added proxy_pass" and "removed proxy_pass" at 0.88), so near-duplicate checks ask here before
merging. Each verb of a small bilingual list belongs to a concept with a direction (add +,
remove -); two statements are opposed when one holds a concept in one direction only and the
other holds it in the other direction only, in any mix of English and Chinese. The list is
data, ``mcp_memory/core/words/opposites.toml``, read once on first use.

Negation is not read: in "cut every paragraph that did not support the thesis" it belongs to a
clause, not to the action, and treating it as a reversal split true paraphrases apart.
"""

from __future__ import annotations

import functools
import importlib.resources
import re
import tomllib
import unicodedata

_WORDS = importlib.resources.files("mcp_memory.core") / "words"  # found at import, read on first use
_Pairs = dict[str, tuple[tuple[str, ...], tuple[str, ...]]]


@functools.cache
def _pairs() -> _Pairs:
    """concept: (words going one way, words going the other), from words/opposites.toml (read once).

    English forms are matched as whole words (the file lists their inflections), Chinese as
    substrings.
    """
    resource = _WORDS / "opposites.toml"
    data = tomllib.loads(resource.read_text(encoding="utf-8"))
    pairs: _Pairs = {}
    for concept, table in data.items():
        forward = table.get("forward") if isinstance(table, dict) else None
        reverse = table.get("reverse") if isinstance(table, dict) else None
        if not (isinstance(forward, list) and isinstance(reverse, list)
                and all(isinstance(word, str) for word in forward + reverse)):
            raise ValueError(f"words/opposites.toml [{concept}]: needs forward and reverse, arrays of words")
        pairs[concept] = (tuple(forward), tuple(reverse))
    return pairs


_WORD = re.compile(r"[a-z]+(?: (?:on|off))?")
# A verb and its particle with a few words between them: "turned the flag off" is "turned off".
_SPLIT_GAP = r"(?:\s+[\w.-]+){1,4}\s+"


@functools.cache
def _split_phrasal(form: str) -> re.Pattern[str] | None:
    """The pattern of an English two-word verb ("turned off") split by its object; None for other forms."""
    parts = form.split(" ")
    if len(parts) != 2 or not form.isascii():
        return None
    verb, particle = parts
    return re.compile(rf"\b{re.escape(verb)}{_SPLIT_GAP}{re.escape(particle)}\b")


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def _directions(text: str) -> dict[str, set[int]]:
    """For each concept the text names, the directions (+1, -1) in which it names it."""
    folded = _fold(text)
    words = set(_WORD.findall(folded)) | set(folded.split())
    found: dict[str, set[int]] = {}
    for concept, (up, down) in _pairs().items():
        for direction, forms in ((1, up), (-1, down)):
            for form in forms:
                hit = (form in folded) if not form.isascii() else (form in words or f" {form} " in f" {folded} ")
                split = None if hit else _split_phrasal(form)
                hit = hit or bool(split and split.search(folded))
                if hit:
                    found.setdefault(concept, set()).add(direction)
    return found


def opposed(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` do opposite things (one adds what the other removes, and the like)."""
    first, second = _directions(a), _directions(b)
    shared = first.keys() & second.keys()
    return any(len(first[c]) == 1 and len(second[c]) == 1 and first[c] != second[c] for c in shared)
