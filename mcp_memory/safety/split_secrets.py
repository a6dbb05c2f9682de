"""A secret spread over several memories: each part harmless alone, the whole a credential.

``find_secrets`` reads one text. A key can be stored in pieces ("AWS key, part 1: AKIAIOSFODNN",
then "part 2: 7EXAMPLE"), by a person or by a model a web page steered, and each piece passes.
So before a memory is written, ``completes_secret`` reads it together with the memories written
just before it in the same file:

* their texts joined by line breaks, where a token broken across lines is read whole
  (``secrets._joined_view``), and by spaces ("-----BEGIN OPENSSH PRIVATE" then "KEY----- b3Bl...");
* the token-like runs at the seam joined without a break (not words, dates or versions): the
  last run of each of the earlier memories, in order, followed by one of the first runs of the new
  one ("part 2: 7EXAMPLE" ends with the piece, "7EXAMPLE is part 2" starts with it).

A secret found there, and not in the earlier memories alone, is one the new memory completes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from mcp_memory.safety.secrets import find_secrets

RECENT = 4  # earlier memories read with a new one
_FIRST_RUNS = 3  # runs of the new memory that may continue the earlier ones' last
_RUN = re.compile(r"[A-Za-z0-9+/=_\-.]{4,}")
# Runs that are words, short numbers, dates, times or versions: never part of a credential (a
# chain of dates, "2026-07-312026-06-17...", reads as random).
_PLAIN = re.compile(r"[A-Z]?[a-z]+|[A-Z]{1,5}s?|\d{1,6}|\d{4}-\d{2}-\d{2}|\d{1,2}[:.]\d{2}|v?\d+(?:\.\d+)+|[.\-=/]+")


def completes_secret(earlier: Sequence[str], text: str) -> str | None:
    """The kind of the secret ``text`` completes with the ``earlier`` memories (oldest first; the
    last ``RECENT`` are read), or None. ``text`` alone is assumed to hold none (it was checked)."""
    recent = [line for line in earlier if line.strip()][-RECENT:]
    for joined, before in _views(recent, text):
        found = find_secrets(joined)
        if found and not find_secrets(before):
            return found[0].kind
    return None


def _views(recent: list[str], text: str) -> Iterator[tuple[str, str]]:
    """(the earlier memories with the new one, the earlier ones alone), in each reading."""
    if not recent:
        return
    yield "\n".join([*recent, text]), "\n".join(recent)
    yield " ".join([*recent, text]), " ".join(recent)  # a header or a name cut between two memories
    tails = [runs[-1] if runs else "" for runs in (_pieces(line) for line in recent)]
    heads = _pieces(text)[:_FIRST_RUNS]
    for count in range(1, len(recent) + 1):
        pieces = tails[-count:]
        if not pieces[0]:
            break  # a memory with no token-like run ends the chain
        start = "".join(pieces)
        for head in heads:
            yield start + head, start


def _pieces(text: str) -> list[str]:
    """The token-like runs of ``text`` that could be part of a credential."""
    return [run for run in _RUN.findall(text) if not _PLAIN.fullmatch(run.strip(".-"))]
