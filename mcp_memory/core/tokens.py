"""Bearer tokens from flags and the environment: an empty token is no token, everywhere.

``--token "$UNSET_VAR"`` expands to an empty string. Taken at face value it looks like a
token was given (so a non-loopback listen is allowed) while no authentication is installed.
So a flag given with an empty or blank value is an error, an empty environment variable is
unset, and only printable ASCII without spaces is accepted (what an HTTP ``Authorization``
header can carry).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

MIN_TOKEN_CHARS = 16  # shorter tokens are accepted with a warning: they can be guessed


class TokenError(ValueError):
    """A token given on the command line that cannot be used."""


def tokens_from_flags(values: Iterable[str] | None, flag: str) -> list[str]:
    """The tokens given with ``flag`` (repeatable); an empty or malformed one is an error."""
    tokens: list[str] = []
    for raw in values or ():
        token = raw.strip()
        if not token:
            raise TokenError(
                f"{flag} was given an empty value (an unset variable?): give a token or leave the flag out")
        _check(token, flag)
        tokens.append(token)
    return tokens


def tokens_from_env(environ: Mapping[str, str], name: str) -> list[str]:
    """Comma-separated tokens from an environment variable; empty or blank means none."""
    tokens = [part.strip() for part in environ.get(name, "").split(",")]
    for token in tokens:
        if token:
            _check(token, f"${name}")
    return [t for t in tokens if t]


def usable(tokens: Iterable[str | None]) -> list[str]:
    """The non-blank tokens of ``tokens``, stripped (the last line of defence for library callers)."""
    return [t.strip() for t in tokens if t and t.strip()]


def is_short(token: str) -> bool:
    return len(token) < MIN_TOKEN_CHARS


def _check(token: str, source: str) -> None:
    if not all("!" <= ch <= "~" for ch in token):
        raise TokenError(f"{source}: a token may hold printable ASCII characters only, without spaces")
