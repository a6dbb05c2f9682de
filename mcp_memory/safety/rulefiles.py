"""The rule files of the safety filters: TOML data in ``mcp_memory/safety/rules/``, read once.

``injection.toml`` holds the prompt-injection patterns, ``secrets.toml`` the provider token
formats and the vocabulary of named secrets. The modules that use them (``injection``,
``secrets``, ``secret_values``) keep the engine; these files hold what it looks for, in a
form a reader can extend without touching code. Each file explains its own layout.

Patterns are regular expressions written as TOML literal strings, or as arrays of strings
joined with nothing in between (a pattern too long for one line). ``{name}`` inside a pattern
stands for the named fragment ``name``; fragments may use other fragments. A regex quantifier
(``{0,40}``) is not a name, and ``\\{word}`` is a literal brace. An unknown name, a fragment
defined twice or a cycle is a ``RuleFileError`` when the file is loaded, never a pattern that
silently matches something else.
"""

from __future__ import annotations

import functools
import importlib.resources
import re
import tomllib
from collections.abc import Iterable, Mapping
from typing import Any

# "{name}", not "{0,40}" (a quantifier) and not "\{name}" (a literal brace)
_REFERENCE = re.compile(r"(?<!\\)\{([A-Za-z_]\w*)\}")
# The rules folder of this very package, found at import: a copy of an older package imported
# under the same name (bench/filters.py --baseline) reads its own rules, not the installed ones.
_RULES = importlib.resources.files("mcp_memory.safety") / "rules"


class RuleFileError(ValueError):
    """A rule file that cannot be read as rules: bad TOML, a wrong type, an unknown fragment."""


@functools.cache
def load(name: str) -> dict[str, Any]:
    """The parsed ``rules/<name>.toml`` (cached: the file is read once per process)."""
    resource = _RULES / f"{name}.toml"
    try:
        return tomllib.loads(resource.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise RuleFileError(f"rules/{name}.toml: {exc}") from exc


def joined(value: Any, where: str) -> str:
    """A pattern as the file writes it (a string, or an array of strings) as one string."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(piece, str) for piece in value):
        return "".join(value)
    raise RuleFileError(f"{where}: expected a string or an array of strings, got {value!r}")


def strings(value: Any, where: str) -> list[str]:
    """A list of words (an array of strings) from a rule file."""
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return value
    raise RuleFileError(f"{where}: expected an array of strings, got {value!r}")


def table(value: Any, where: str, allowed: Iterable[str] | None = None) -> dict[str, Any]:
    """A TOML table, with only the ``allowed`` keys when they are given (a typo is an error)."""
    if not isinstance(value, dict):
        raise RuleFileError(f"{where}: expected a table, got {value!r}")
    if allowed is not None:
        unknown = sorted(set(value) - set(allowed))
        if unknown:
            raise RuleFileError(f"{where}: unknown key(s) {', '.join(unknown)}")
    return value


class Fragments:
    """Named fragments of one rule file, each expanded once, and the expansion of patterns."""

    def __init__(self, file: str, tables: Iterable[tuple[str, Mapping[str, Any]]]) -> None:
        self.file = file
        self._raw: dict[str, str] = {}
        for where, fragments in tables:
            for name, value in fragments.items():
                if name in self._raw:
                    raise RuleFileError(f"{file}: fragment {name!r} is defined twice (again in {where})")
                self._raw[name] = joined(value, f"{file}, {where}.{name}")
        self._expanded: dict[str, str] = {}
        for name in self._raw:
            self._resolve(name, ())

    def _resolve(self, name: str, chain: tuple[str, ...]) -> str:
        if name in self._expanded:
            return self._expanded[name]
        if name in chain:
            raise RuleFileError(f"{self.file}: fragments refer to each other in a cycle: {' -> '.join(chain)}")
        text = self._substitute(self._raw[name], f"fragment {name!r}", (*chain, name))
        self._expanded[name] = text
        return text

    def _substitute(self, text: str, where: str, chain: tuple[str, ...]) -> str:
        def replace(match: re.Match[str]) -> str:
            reference = match.group(1)
            if reference not in self._raw:
                raise RuleFileError(f"{self.file}, {where}: unknown fragment {{{reference}}}")
            return self._resolve(reference, chain)

        return _REFERENCE.sub(replace, text)

    def __getitem__(self, name: str) -> str:
        if name not in self._expanded:
            raise RuleFileError(f"{self.file}: the engine needs the fragment {name!r}")
        return self._expanded[name]

    def names(self) -> frozenset[str]:
        return frozenset(self._expanded)

    def pattern(self, value: Any, where: str) -> str:
        """The pattern written as ``value`` (string or array of strings), every fragment expanded."""
        return self._substitute(joined(value, f"{self.file}, {where}"), where, ())
