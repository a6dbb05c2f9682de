"""Which memory files are private, and who may see them.

A shared client (a server started with ``--shared``, or an HTTP caller holding a
``--shared-token``) never learns anything about a private file: not its text, not its
length, not even that it exists. Every decision here is made on the *resolved* path of a
memory file (``Workspace.resolve`` or ``Workspace.list_files``), never on the string a
caller typed: ``./MEMORY.md``, ``MEMORY.md `` and ``.\\MEMORY.md`` all name the same file.

Patterns (``privacy.private_paths``) follow ``.gitignore`` habits, matched without regard
to letter case (macOS and Windows file systems ignore it too) or to the Unicode spelling of a
name: pattern and path are both compared as NFKC, case-folded text (``fold_name``), so an
accented folder typed precomposed matches the decomposed name macOS stores, and a fullwidth
``ＭＥＭＯＲＹ.md`` or a ligature ``ﬁ`` matches its plain letters:

* a pattern without ``/`` matches a file name at any depth: ``MEMORY.md`` makes both the
  curated file and ``memory/projects/MEMORY.md`` private, as a person naming a file
  ``MEMORY.md`` would expect;
* a pattern with ``/`` is anchored at the workspace root (``memory/health/*``); a trailing
  ``/`` means everything below that folder; ``*`` may cross folders.

Two patterns hold whatever the settings say (``OWNER_ONLY``): conversation transcripts, and
the folder where records derived from private files are written. A record that quotes or cites
memory (an episode, say) carries the privacy of its sources: when any source is private, the
record is written under ``memory/episodes/private/`` (``derives_from_private`` decides), so
every reader that asks ``is_private`` of a path (files, search, tools, resources, the
dashboard) keeps it from shared callers without knowing what kind of record it is.
"""

from __future__ import annotations

import fnmatch
import hashlib
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

# Private whatever the settings say: transcripts (``[sessions] paths``) and derived records of private sources.
EPISODES_DIR = "memory/episodes"  # one markdown record per session (experience/episodes.py)
PRIVATE_RECORDS_DIR = EPISODES_DIR + "/private"
OWNER_ONLY = ("*.jsonl", PRIVATE_RECORDS_DIR + "/*")


@dataclass(frozen=True)
class PrivacyRules:
    """The private-path patterns of one workspace (hashable: search caches masks by it)."""

    patterns: tuple[str, ...]

    @classmethod
    def from_settings(cls, patterns: list[str] | tuple[str, ...]) -> PrivacyRules:
        cleaned = (_clean_pattern(p) for p in [*patterns, *OWNER_ONLY])
        return cls(tuple(dict.fromkeys(p for p in cleaned if p)))

    def is_private(self, rel_path: str) -> bool:
        """True when the memory file at ``rel_path`` (as resolved by the workspace) is private."""
        return _matches(self.patterns, rel_path)

    def derives_from_private(self, sources: Iterable[str]) -> bool:
        """True when a record made from ``sources`` (resolved paths of the files it quotes or cites) is private."""
        return any(self.is_private(source) for source in sources)

    @property
    def digest(self) -> str:
        """A short digest of the patterns: a change means records written earlier must be looked at again."""
        return hashlib.sha256("\n".join(self.patterns).encode("utf-8")).hexdigest()[:16]


def not_shared(path: object) -> str:
    """The one answer a shared client gets for a path it may not read, whatever the reason.

    Missing, private, or refused by resolution: the message is the same, so it cannot be
    used to learn which files exist.
    """
    shown = str(path).strip()
    if len(shown) > 80:
        shown = shown[:80] + "…"
    return f"{shown!r} is not a memory file shared with this client"


def fold_name(text: str) -> str:
    """``text`` as names are compared: Unicode NFKC, then case folded, then NFKC again.

    Two names a person reads as the same must compare equal, however they were typed or
    stored: NFC and NFD accents, fullwidth letters, ligatures, letter case. Case folding can
    leave text that is no longer normalised (``ΐ`` folds to a decomposed sequence), hence the
    second pass, which makes the result stable.
    """
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())


def _fold_path(path: str) -> str:
    """``path`` with ``/`` separators and every name in it folded (``fold_name``).

    Names are folded one by one, so a ``/`` that folding makes of a fullwidth ``／`` inside a
    name stays part of that name (as ``\\``) and never moves the folder boundaries, which
    decide whether a pattern is anchored and which part is the file name.
    """
    parts = path.replace("\\", "/").split("/")
    return "/".join(fold_name(part).replace("/", "\\") for part in parts)


def _clean_pattern(pattern: object) -> str:
    text = str(pattern or "").strip().replace("\\", "/")
    while text.startswith("./"):
        text = text[2:]
    if text.endswith("/"):
        text += "*"
    return _fold_path(text)


@lru_cache(maxsize=4096)
def _matches(patterns: tuple[str, ...], rel_path: str) -> bool:
    # Folded exactly as the patterns were (``_clean_pattern``), so only the spelling differs, never the rule.
    path = _fold_path(rel_path)
    name = path.rsplit("/", 1)[-1]
    for pattern in patterns:
        if "/" in pattern:
            if fnmatch.fnmatchcase(path, pattern):
                return True
        elif fnmatch.fnmatchcase(name, pattern):
            return True
    return False
