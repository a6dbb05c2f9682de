"""Bearer tokens from flags and the environment: an empty token is no token, everywhere.

``--token "$UNSET_VAR"`` expands to an empty string. Taken at face value it looks like a
token was given (so a non-loopback listen is allowed) while no authentication is installed.
So a flag given with an empty or blank value is an error, an empty environment variable is
unset, and only printable ASCII without spaces is accepted (what an HTTP ``Authorization``
header can carry).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

MIN_TOKEN_CHARS = 16  # shorter tokens are accepted with a warning: they can be guessed


class TokenError(ValueError):
    """A token given on the command line that cannot be used."""


TOKEN_KINDS = ("full", "read-only", "shared")  # and scoped:NAME


@dataclass
class TokenFile:
    """The tokens of a token file, by kind, and whether other users may read the file."""

    full: list[str] = field(default_factory=list)
    read_only: list[str] = field(default_factory=list)
    shared: list[str] = field(default_factory=list)
    scoped: list[str] = field(default_factory=list)  # NAME=TOKEN, as --scoped-token takes them
    open_to_others: bool = False


def read_token_file(path: str | os.PathLike[str]) -> TokenFile:
    """The tokens of the file at ``path``: one a line, ``KIND TOKEN`` (KIND ``full``, ``read-only``,
    ``shared`` or ``scoped:NAME``) or a token alone (full access); blank lines and ``#`` comments are
    skipped. A file nobody but its owner can read keeps tokens out of the process list and the
    environment (a container's or a service manager's secret). ``TokenError`` says what is wrong,
    by line number, never repeating a token."""
    where = Path(path)
    try:
        text = where.read_text(encoding="utf-8")
        mode = where.stat().st_mode
    except (OSError, UnicodeDecodeError) as exc:
        raise TokenError(f"cannot read the token file {where}: {exc}") from None
    found = TokenFile(open_to_others=bool(mode & (stat.S_IRWXG | stat.S_IRWXO)))
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) > 2:
            raise TokenError(f"{where}, line {number}: write KIND TOKEN, or a token alone")
        kind, token = ("full", parts[0]) if len(parts) == 1 else (parts[0].lower(), parts[1])
        _check(token, f"{where}, line {number}")
        if kind == "full":
            found.full.append(token)
        elif kind == "read-only":
            found.read_only.append(token)
        elif kind == "shared":
            found.shared.append(token)
        elif kind.startswith("scoped:") and kind[len("scoped:"):]:
            found.scoped.append(f"{parts[0][len('scoped:'):]}={token}")
        else:
            raise TokenError(f"{where}, line {number}: the kind must be full, read-only, shared or scoped:NAME")
    if not (found.full or found.read_only or found.shared or found.scoped):
        raise TokenError(f"the token file {where} holds no token")
    return found


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
