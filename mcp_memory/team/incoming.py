"""What a sync would merge in, read before it is merged: no secret or prompt injection enters memory by git.

Everything the product writes passes the write filters (``safety/``). A teammate's commit does
not: it may carry a key pasted into a note, or a line written to steer the next model that reads
it. Sync reads the lines the remote added to the memory files since the two machines last met
(``git diff`` from where the two histories met), and refuses the whole merge when one holds a
secret (also one it completes with the lines above it) or reads as instructions to a model. Nothing is rewritten: the
repository and the notes stay as they were, the message names each file and line (never the
secret), and says how to go on: the author removes the line and pushes, or the user, having read
it, merges by hand, after which sync has nothing left to read.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from mcp_memory.safety import find_secrets, looks_like_injection
from mcp_memory.safety.split_secrets import completes_secret
from mcp_memory.team.git_cli import Git

MAX_LISTED = 8  # findings named in the message; the rest are counted
_EMPTY_TREE = {"sha1": "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
               "sha256": "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321"}
_HUNK = re.compile(rb"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")


@dataclass(frozen=True)
class Refused:
    """One added line (or run of lines) that memory refuses."""

    path: str
    line: int  # 1-based, in the remote's version of the file
    reason: str

    def __str__(self) -> str:
        return f"{self.path} line {self.line}: {self.reason}"


def refused_lines(git: Git, theirs: str, pathspecs: list[str]) -> list[Refused]:
    """The lines that merging ``theirs`` would add to the memory files and that memory refuses."""
    base = _merge_base(git, theirs)
    changed = git.run("diff", "--name-only", "-z", "--no-renames", "--diff-filter=AM", base, theirs,
                      "--", *pathspecs).names()
    found: list[Refused] = []
    for path in changed:
        for hunk in _hunks(git, base, theirs, path):
            found.extend(_screened(path, hunk))
    return found


def refusal_message(found: list[Refused], remote: str, branch: str) -> str:
    listed = "; ".join(str(r) for r in found[:MAX_LISTED])
    more = f" (and {len(found) - MAX_LISTED} more)" if len(found) > MAX_LISTED else ""
    return (f"{remote}/{branch} brings lines that memory never takes in, so nothing was merged: {listed}{more}. "
            f"Ask whoever wrote them to remove them and push; or, having read them, merge by hand "
            f"(`git merge {remote}/{branch}`), and sync goes on from there")


def _merge_base(git: Git, theirs: str) -> str:
    """Where the two histories met; the empty tree when they never did (a first sync joins two roots)."""
    found = git.run("merge-base", "HEAD", theirs, check=False)
    if found.code == 0 and found.text.strip():
        return found.text.strip()
    form = git.run("rev-parse", "--show-object-format", check=False).text.strip()
    return _EMPTY_TREE.get(form, _EMPTY_TREE["sha1"])


def _hunks(git: Git, base: str, theirs: str, path: str) -> Iterator[list[tuple[int, str, bool]]]:
    """Each hunk of what ``theirs`` changed in ``path`` since ``base``, as its new version reads:
    (line number, text, whether the line is new), with a line of context on either side."""
    diff = git.run("diff", "--no-color", "--no-ext-diff", "--unified=1", "--no-renames", base, theirs,
                   "--", f":(literal){path}").stdout
    hunk: list[tuple[int, str, bool]] = []
    number = 0
    for raw in diff.split(b"\n"):
        start = _HUNK.match(raw)
        if start:
            if hunk:
                yield hunk
            hunk, number = [], int(start.group(1))
        elif number and raw[:1] in (b"+", b" ") and not raw.startswith(b"+++"):
            hunk.append((number, raw[1:].decode("utf-8", "replace"), raw[:1] == b"+"))
            number += 1
    if hunk:
        yield hunk


def _screened(path: str, hunk: list[tuple[int, str, bool]]) -> list[Refused]:
    """The new lines of one hunk that memory refuses: each alone; then each that completes a secret
    with the lines above it (``safety/split_secrets.py``, as a store reads the memories before it),
    those already in the file included; then the new lines read together (instructions spread over them)."""
    out = [Refused(path, number, reason) for number, text, new in hunk if new and (reason := _reason(text))]
    if out:
        return out
    texts = [text for _, text, _ in hunk]
    for place, (number, text, new) in enumerate(hunk):
        if new and (kind := completes_secret(texts[:place], text)):
            out.append(Refused(path, number, f"a secret ({kind}) completed with the lines above it"))
    added = [(number, text) for number, text, new in hunk if new]
    if not out and len(added) > 1 and looks_like_injection("\n".join(text for _, text in added)):
        out.append(Refused(path, added[0][0], f"instructions to a model (prompt injection), over lines "
                                              f"{added[0][0]}-{added[-1][0]}"))
    return out


def _reason(text: str) -> str | None:
    secrets = find_secrets(text)  # on the text as the filters normalise it
    if secrets:
        return f"a secret ({', '.join(sorted({m.kind for m in secrets}))})"
    if looks_like_injection(text):
        return "instructions to a model (prompt injection)"
    return None
