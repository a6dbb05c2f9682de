"""Upkeep of the experience graph for the sleep cycle: duplicate chains merged, stale ones archived.

Chains logged before a paraphrase rule existed, or edited by hand, can repeat one another; the
later one is merged into the first (counts, tallies, tags and dates added up) and its entry moved
to ``memory/experience-archive.md``. A chain seen once and not for ``stale_days`` is moved there
too. Moved, never deleted: the archive keeps every entry as it was, with why and when it moved.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace

from mcp_memory.core.opposites import opposed
from mcp_memory.core.privacy import PRIVATE_RECORDS_DIR, PrivacyRules
from mcp_memory.core.workspace import Workspace, decode_memory_bytes
from mcp_memory.errors import PathError
from mcp_memory.experience.graph import DUPLICATE_THRESHOLD, EXPERIENCE_FILE, Chain, parse_chains, render_chain
from mcp_memory.index.similarity import Similarity

ARCHIVE_FILE = "memory/experience-archive.md"
# Where the archive goes when the experience file is private and the archive's usual path is not:
# it is a record derived from that file, so it goes where such records go (``core/privacy.py``).
PRIVATE_ARCHIVE_FILE = PRIVATE_RECORDS_DIR + "/experience-archive.md"
_ARCHIVE_HEADER = "# Experience archive\n\nChains moved out of memory/experience.md by the sleep cycle, as they were.\n"


@dataclass(frozen=True)
class ChainMove:
    chain: Chain
    reason: str  # "merged into exp-…" or "stale: last seen …"

    def to_dict(self) -> dict[str, str]:
        return {"id": self.chain.id, "cause": self.chain.cause, "action": self.chain.action, "reason": self.reason}


def plan_graph_upkeep(text: str, similarity: Similarity, today: dt.date, stale_days: int) -> list[ChainMove]:
    """The chains to move out of the experience file, and why."""
    chains = parse_chains(text)
    moves: dict[str, ChainMove] = {}
    for i, chain in enumerate(chains):
        later = [c for c in chains[i + 1 :] if c.id not in moves]
        if chain.id in moves or not later:
            continue
        causes = similarity.exact_first(chain.cause, [c.cause for c in later])
        actions = similarity.exact_first(chain.action, [c.action for c in later])
        for other, cause, action in zip(later, causes, actions, strict=True):
            if min(cause, action) >= DUPLICATE_THRESHOLD and not opposed(chain.action, other.action):
                moves[other.id] = ChainMove(other, f"merged into {chain.id}")
    cutoff = (today - dt.timedelta(days=stale_days)).isoformat()
    keepers = {m.reason.removeprefix("merged into ") for m in moves.values()}
    for chain in chains:
        if chain.id not in moves and chain.id not in keepers and chain.count <= 1 and chain.last_seen \
                and chain.last_seen < cutoff:
            moves[chain.id] = ChainMove(chain, f"stale: last seen {chain.last_seen}")
    return list(moves.values())


def archive_file(privacy: PrivacyRules) -> str:
    """The archive's path: ``ARCHIVE_FILE``, unless the experience file is private and that path is not."""
    if privacy.is_private(EXPERIENCE_FILE) and not privacy.is_private(ARCHIVE_FILE):
        return PRIVATE_ARCHIVE_FILE
    return ARCHIVE_FILE


def apply_graph_upkeep(workspace: Workspace, moves: list[ChainMove], today: dt.date,
                       archive_path: str = ARCHIVE_FILE) -> int:
    """Rewrite the experience file without the moved chains (merging each into its keeper) and
    append them to the archive at ``archive_path`` (``archive_file``); returns how many moved. Under
    the files lock, atomically per file; a file changed since it was read is left alone (0)."""
    if not moves:
        return 0
    with workspace.locked():
        path = workspace.root / EXPERIENCE_FILE
        data = path.read_bytes() if path.exists() else None
        if data is None:
            return 0
        chains = {c.id: c for c in parse_chains(decode_memory_bytes(data))}
        moving = [m for m in moves if m.chain.id in chains]
        lines = data.split(b"\n")
        replaced: dict[int, list[bytes]] = {}
        for move in moving:
            gone = chains[move.chain.id]
            replaced[gone.start_line] = []
            for n in range(gone.start_line + 1, gone.end_line + 1):
                replaced[n] = []
            if gone.end_line < len(lines) and not lines[gone.end_line].strip():
                replaced[gone.end_line + 1] = []  # the blank line that separated it from the next entry
            if move.reason.startswith("merged into "):
                keeper_id = move.reason.removeprefix("merged into ")
                keeper = _absorb(chains[keeper_id], gone)
                chains[keeper_id] = keeper
                replaced[keeper.start_line] = [line.encode("utf-8") for line in render_chain(keeper)]
                for n in range(keeper.start_line + 1, keeper.end_line + 1):
                    replaced[n] = []
        out: list[bytes] = []
        for number, line in enumerate(lines, 1):
            out.extend(replaced.get(number, [line]))
        archive = workspace.root / archive_path
        old_archive = archive.read_bytes() if archive.exists() else None
        try:
            workspace.replace_bytes(archive_path, old_archive, _archived(old_archive, moving, today))
            workspace.replace_bytes(EXPERIENCE_FILE, data, b"\n".join(out))
        except PathError:
            return 0
    return len(moving)


def _absorb(keeper: Chain, gone: Chain) -> Chain:
    tally = dict(keeper.outcomes)
    for name, n in gone.outcomes.items():
        tally[name] = tally.get(name, 0) + n
    newer = gone if gone.last_seen > keeper.last_seen else keeper
    return replace(keeper, count=keeper.count + gone.count, outcomes=tally,
                   tags=tuple(dict.fromkeys([*keeper.tags, *gone.tags])), effect=newer.effect, outcome=newer.outcome,
                   first_seen=min(filter(None, [keeper.first_seen, gone.first_seen]), default=""),
                   last_seen=max(keeper.last_seen, gone.last_seen))


def _archived(old: bytes | None, moves: list[ChainMove], today: dt.date) -> bytes:
    text = (old.decode("utf-8", "replace") if old else _ARCHIVE_HEADER).rstrip("\n") + "\n"
    for move in moves:
        text += "\n" + "\n".join([*render_chain(move.chain), f"- archived: {today.isoformat()} ({move.reason})"]) + "\n"
    return text.encode("utf-8")
