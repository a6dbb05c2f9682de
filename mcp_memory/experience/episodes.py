"""Episodes: one markdown record per working session, under ``memory/episodes/``.

An episode says when a session ran, from which client, which tools it used and how often,
which memories it recalled and stored (citations only, never their text), the decisions it
recorded and the errors it met (and how they were fixed, when that shows). Two observers
write them: the MCP server (the tool calls it served, see ``server/sessions.py``) and the
client hooks at the end of a session (the transcript, see ``episode_from_transcript``).

Both may see the same session, so recording merges (``EpisodeLog.record``):

* a record carrying the client's session key joins the episode with that key;
* otherwise a record joins an episode of the same client whose time window overlaps its own
  (two records without a key: or leaves a gap of at most ``MERGE_SLACK``, 2 minutes), as long
  as the two do not carry different session keys; among several, the one overlapping most
  (then the latest ending). The server's record of a session carries no key, and is often
  written before the hook's: it waits on its own until the keyed record that shares its time
  arrives, rather than joining a session that ended just before.

Tool counts are kept per source (``server``, ``transcript``). Within one source, a record seen
again (the same record id: a hook that runs twice) keeps the larger count per tool, and a new
record (a server session resumed after an idle flush) adds its counts. Across sources the
episode shows the larger count per tool: the server and the transcript observe the same calls.
Memories, decisions and errors are unions; start is the earliest start, end the latest end.

Everything written passes the secret and injection filters: secrets are redacted, lines that
read as instructions to a model are dropped.

An episode carries the privacy of what it cites and quotes: one that cites a private file, or
holds a decision or error written in one, is written under ``memory/episodes/private/``, which
``core/privacy.py`` keeps from shared callers whatever the settings say. A merge that brings in a
private source moves the episode there, and so does a sync that finds an episode citing a file
made private since (``EpisodeLog.recheck_privacy``).
"""

from __future__ import annotations

import datetime as dt
import functools
import html
import json
import logging
import re
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp_memory.core.memory_ids import memory_body
from mcp_memory.core.privacy import EPISODES_DIR, PRIVATE_RECORDS_DIR
from mcp_memory.core.transcripts import claude_record, content_text, jsonl_records
from mcp_memory.errors import MemoryInputError, PathError

if TYPE_CHECKING:  # the server imports this module before the index is open
    from mcp_memory.core.reading import Reader
    from mcp_memory.index.engine import Engine
    from mcp_memory.writes.edits import Editor

log = logging.getLogger(__name__)

PRIVACY_STAMP = "episodes-privacy"  # in the index folder: the privacy patterns episodes were last checked against
MIN_QUOTED = 12  # characters of a decision or error that count as quoting a private file
MERGE_SLACK = dt.timedelta(minutes=2)
CLOCK_SLACK = dt.timedelta(seconds=1)  # a keyless record and a keyed one: time stamps taken by two processes
MAX_TEXT = 300  # characters of one decision, error or fix
MAX_ITEMS = 200  # entries per list in one episode
SERVER, TRANSCRIPT = "server", "transcript"
# Tool calls that only look (not real work): a session of nothing but these writes no episode.
NOT_WORK = frozenset({"memory_status", "memory_episodes"})

_CITATION = re.compile(r"^(\S(?:.*\S)?\.md#L\d+(?:-L\d+)?)$")
# A memory's id as the product issues it (``core/memory_ids.py``: "m-" and 12 hex digits).
_MEMORY_ID = re.compile(r"[a-z]{1,8}-[0-9a-f]{6,64}")
# A path segment of a citation: no markup, quotes, backslashes or control characters.
_UNSAFE_PATH = re.compile(r"[<>\"`|\\\x00-\x1f\x7f]|(?:^|/)\.\.(?:/|$)")
# A word that reads as a file path in an error or a decision ("memory/health/2026-11-02.md").
_PATH_WORD = re.compile(r"[\w./~-]*[\w-]\.(?:md|markdown|jsonl|txt)\b", re.IGNORECASE)
_RECALL_ITEM = re.compile(r'<memory source="([^"]+)"(?: id="([^"]*)")?')
_FIX_WORDS = re.compile(r"\b(fix(?:ed|es)?|the (?:problem|issue|error|cause) (?:was|is)|resolved|solved|works now|"
                        r"now works|was caused by|because)\b", re.IGNORECASE)
_MCP_PREFIX = re.compile(r"^mcp__[^_]+(?:_[^_]+)*?__")
# OpenClaw's MCP client calls itself "openclaw-bundle-mcp": its server records and its hooks' records
# of one session are one client's, so they merge into one episode.
_CLIENT_ALIASES = {"openclaw-bundle-mcp": "openclaw"}


def is_real_work(tool: str) -> bool:
    """Whether a call of ``tool`` counts as work: anything but status and listing tools."""
    name = normal_tool(tool)
    return not (name in NOT_WORK or name.endswith("_status") or name.startswith("list_") or name.endswith("_list"))


def normal_tool(name: str) -> str:
    """A tool's name as the server knows it: ``mcp__memory__memory_search`` is ``memory_search``.
    A name that holds a secret or reads as instructions is written as "withheld" (``is_safe_name``)."""
    name = re.sub(r"[^\w.:-]", "_", _MCP_PREFIX.sub("", name))[:80] or "unknown"
    return name if is_safe_name(name) else WITHHELD


def normal_client(name: str) -> str:
    """A client's name as episodes compare it: lower case, words joined by '-' ("Claude Code" = claude-code);
    an MCP client name that is another name of a client is that client's ("openclaw-bundle-mcp" = openclaw)."""
    normal = re.sub(r"[^a-z0-9.]+", "-", name.lower()).strip("-")[:60] or "unknown"
    return _CLIENT_ALIASES.get(normal, normal) if is_safe_name(normal) else WITHHELD


WITHHELD = "withheld"


@functools.lru_cache(maxsize=4096)
def is_safe_name(name: str) -> bool:
    """Whether a name an episode writes as it is (a tool, a client, a session key, a citation, an id)
    holds no secret and does not read as instructions, its separators read as spaces.

    These come from transcripts and clients, so whoever names a tool or a file names them, and an
    episode is a memory file recall and search read back. Names recur: the verdicts are cached."""
    from mcp_memory.safety import find_secrets, looks_like_injection

    if find_secrets(name):
        return False
    spaced = re.sub(r"[_\-.:/#]+", " ", name)
    return not (find_secrets(spaced) or looks_like_injection(spaced))


@dataclass(frozen=True)
class MemoryRef:
    """A memory an episode recalled or stored: its citation and, when known, its id."""

    citation: str
    id: str = ""


@dataclass
class EpisodeError:
    tool: str
    message: str
    fix: str = ""  # how it was fixed, when that showed ("" if it did not)
    # The message or the fix quotes a conversation transcript (a tool's output, the assistant's words):
    # transcripts are their owner's alone, so an episode holding such a quote is private. Not written.
    quoted: bool = False


@dataclass
class Episode:
    """One session as recorded; ``path`` is set once it is written."""

    start: dt.datetime
    end: dt.datetime
    client: str
    session_key: str = ""  # the client's own id of the session ("" when the observer does not know it)
    records: dict[str, str] = field(default_factory=dict)  # record id -> source
    tools: dict[str, dict[str, int]] = field(default_factory=dict)  # source -> tool -> calls
    recalled: list[MemoryRef] = field(default_factory=list)
    stored: list[MemoryRef] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    errors: list[EpisodeError] = field(default_factory=list)
    notes: str = ""  # sections written by hand, kept as they are
    path: str = ""

    @classmethod
    def observed(cls, source: str, client: str, start: dt.datetime, session_key: str = "",
                 record_id: str | None = None) -> Episode:
        """An empty record of one observer (``server`` or ``transcript``), to fill in."""
        rid = record_id or f"{source}:{uuid.uuid4().hex[:8]}"
        return cls(start=start, end=start, client=client, session_key=session_key, records={rid: source},
                   tools={source: {}})

    @property
    def citation(self) -> str:
        return f"{self.path}#L1-L{render(self).count(chr(10))}" if self.path else ""

    def tool_counts(self) -> dict[str, int]:
        """Calls per tool: the larger count of the sources (they observe the same calls)."""
        counts: dict[str, int] = {}
        for per_tool in self.tools.values():
            for tool, n in per_tool.items():
                counts[tool] = max(counts.get(tool, 0), n)
        return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))

    def has_work(self) -> bool:
        return any(is_real_work(tool) for tool in self.tool_counts())

    def count_tool(self, source: str, tool: str) -> None:
        per_tool = self.tools.setdefault(source, {})
        name = normal_tool(tool)
        per_tool[name] = per_tool.get(name, 0) + 1

    def add_recalled(self, ref: MemoryRef) -> None:
        _add_ref(self.recalled, ref)

    def add_stored(self, ref: MemoryRef) -> None:
        _add_ref(self.stored, ref)

    def add_decision(self, text: str) -> None:
        clean = safe_text(re.sub(r"^\s*-?\s*\[decision\]\s*", "", text, flags=re.IGNORECASE))
        if clean and _key(clean) not in {_key(d) for d in self.decisions} and len(self.decisions) < MAX_ITEMS:
            self.decisions.append(clean)

    def add_error(self, tool: str, message: str, quoted: bool = False) -> None:
        """Note a failed call; ``quoted``: the message is a transcript's text (see ``EpisodeError``)."""
        text = safe_text(message.strip().split("\n")[0] if message.strip() else "error") or "error (withheld)"
        if len(self.errors) < MAX_ITEMS:
            self.errors.append(EpisodeError(normal_tool(tool), text, quoted=quoted))

    def mark_fixed(self, tool: str | None, how: str, quoted: bool = False) -> None:
        """Note how the open errors of ``tool`` (every open error when None) were fixed; ``quoted``: ``how``
        is a transcript's text."""
        name = None if tool is None else normal_tool(tool)
        open_errors = [e for e in self.errors if not e.fix and (name is None or e.tool == name)]
        if not open_errors:
            return  # the common case, on every successful call: no filter to run over ``how``
        fix = safe_text(how)
        if fix:
            for error in open_errors:
                error.fix = fix
                error.quoted = error.quoted or quoted

    def see(self, when: dt.datetime) -> None:
        self.start, self.end = min(self.start, when), max(self.end, when)

    def merge(self, other: Episode) -> None:
        """Fold ``other`` (a newer record of the same session) into this episode (rules: module docstring)."""
        repeat = bool(other.records) and all(rid in self.records for rid in other.records)
        for source, per_tool in other.tools.items():
            mine = self.tools.setdefault(source, {})
            for tool, n in per_tool.items():
                mine[tool] = max(mine.get(tool, 0), n) if repeat else mine.get(tool, 0) + n
        self.records.update(other.records)
        self.start, self.end = min(self.start, other.start), max(self.end, other.end)
        self.session_key = self.session_key or other.session_key
        for ref in other.recalled:
            self.add_recalled(ref)
        for ref in other.stored:
            self.add_stored(ref)
        for decision in other.decisions:
            self.add_decision(decision)
        self._merge_errors(other.errors)

    def _merge_errors(self, errors: list[EpisodeError]) -> None:
        known = {(e.tool, _key(e.message)): e for e in self.errors}
        for error in errors:
            same = known.get((error.tool, _key(error.message)))
            if same is None and len(self.errors) < MAX_ITEMS:
                self.errors.append(EpisodeError(error.tool, error.message, error.fix, error.quoted))
            elif same is not None:
                if error.fix and not same.fix:
                    same.fix = error.fix
                same.quoted = same.quoted or error.quoted

    def summary(self) -> dict[str, Any]:
        """The fields ``memory_episodes`` lists."""
        return {"citation": self.citation, "path": self.path, "start": _iso(self.start), "end": _iso(self.end),
                "client": self.client, "session_key": self.session_key, "tools": self.tool_counts(),
                "recalled": len(self.recalled), "stored": len(self.stored), "decisions": list(self.decisions),
                "errors": len(self.errors)}


def _add_ref(refs: list[MemoryRef], ref: MemoryRef) -> None:
    citation = " ".join(ref.citation.split())
    if len(refs) >= MAX_ITEMS or not is_citation(citation):
        return
    ref_id = ref.id if _MEMORY_ID.fullmatch(ref.id or "") else ""
    for i, known in enumerate(refs):
        if known.citation == citation:
            if ref_id and not known.id:
                refs[i] = MemoryRef(citation, ref_id)
            return
    refs.append(MemoryRef(citation, ref_id))


def is_citation(text: str) -> bool:
    """Whether ``text`` is a citation an episode may write: a relative markdown path with a line range,
    no markup or ``..`` in the path, nothing secret and nothing that reads as instructions."""
    match = _CITATION.match(text)
    if not match or len(text) > 300:
        return False
    path = text.rsplit("#", 1)[0]
    return not (path.startswith("/") or _UNSAFE_PATH.search(path)) and is_safe_name(text)


def _key(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def safe_text(text: str) -> str:
    """``text`` as one line fit for a memory file: cleaned, secrets redacted; "" if it reads as instructions."""
    from mcp_memory.safety import quotable

    flat = quotable(text) or ""
    if len(flat) > MAX_TEXT:
        flat = flat[: MAX_TEXT - 1].rstrip() + "…"
    return flat.lstrip("#>").strip()


def _iso(when: dt.datetime) -> str:
    return when.astimezone(dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def parse_time(value: Any) -> dt.datetime | None:
    """An ISO timestamp (``Z`` or an offset; naive means UTC) as an aware datetime; None if unreadable."""
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        when = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=dt.UTC)


# ----- markdown ---------------------------------------------------------------------------------
_SECTIONS = ("Tools used", "Memories recalled", "Memories stored", "Decisions", "Errors")


def render(episode: Episode) -> str:
    """The episode as markdown: a heading, the facts, then one section per kind of entry."""
    start, end = episode.start.astimezone(dt.UTC), episode.end.astimezone(dt.UTC)
    lines = [f"# Episode {start:%Y-%m-%d %H:%M}–{end:%H:%M} UTC ({episode.client})", "",
             f"- Start: {_iso(episode.start)}", f"- End: {_iso(episode.end)}", f"- Client: {episode.client}"]
    if episode.session_key:
        lines.append(f"- Session: {episode.session_key}")
    lines.append("- Records: " + ", ".join(f"{rid}" for rid in sorted(episode.records)))
    lines += ["", "## Tools used"]
    for tool, n in episode.tool_counts().items():
        by_source = ", ".join(f"{src} {per[tool]}" for src, per in sorted(episode.tools.items()) if tool in per)
        lines.append(f"- {tool}: {n} ({by_source})")
    for title, refs in (("Memories recalled", episode.recalled), ("Memories stored", episode.stored)):
        lines += ["", f"## {title}"]
        lines += [f"- {r.citation}" + (f" (id {r.id})" if r.id else "") for r in refs] or ["- none"]
    lines += ["", "## Decisions"] + ([f"- {d}" for d in episode.decisions] or ["- none"])
    lines += ["", "## Errors"]
    for error in episode.errors:
        lines.append(f"- {error.tool}: {error.message}")
        lines.append(f"  - fixed: {error.fix}" if error.fix else "  - not fixed in this session")
    if not episode.errors:
        lines.append("- none")
    text = "\n".join(lines) + "\n"
    return text + ("\n" + episode.notes.strip("\n") + "\n" if episode.notes.strip() else "")


def parse(text: str, path: str = "") -> Episode | None:
    """An episode file read back (None if it is not one); sections it does not know are kept as notes."""
    head, sections, notes = _split(text)
    start, end = parse_time(head.get("start")), parse_time(head.get("end"))
    if start is None or end is None:
        return None
    records = {}
    for rid in (head.get("records") or "").split(","):
        rid = rid.strip()
        if re.fullmatch(r"(server|transcript):[\w.:-]{1,100}", rid):
            records[rid] = rid.split(":", 1)[0]
    episode = Episode(start=start, end=end, client=normal_client(head.get("client") or "unknown"),
                      session_key=_clean_key(head.get("session") or ""), records=records, notes=notes, path=path)
    _parse_tools(episode, sections.get("Tools used", []))
    for line in sections.get("Memories recalled", []):
        _parse_ref(line, episode.add_recalled)
    for line in sections.get("Memories stored", []):
        _parse_ref(line, episode.add_stored)
    for line in sections.get("Decisions", []):
        if line.startswith("- ") and line != "- none":
            episode.add_decision(line[2:])
    _parse_errors(episode, sections.get("Errors", []))
    return episode


def _split(text: str) -> tuple[dict[str, str], dict[str, list[str]], str]:
    head: dict[str, str] = {}
    sections: dict[str, list[str]] = {}
    notes: list[str] = []
    current: list[str] | None = None
    for line in text.split("\n"):
        if line.startswith("## "):
            title = line[3:].strip()
            current = sections.setdefault(title, []) if title in _SECTIONS else notes
            if current is notes:
                notes.append(line)
            continue
        if current is None:
            match = re.match(r"^- (\w+): (.*)$", line)
            if match:
                head[match.group(1).lower()] = match.group(2).strip()
        elif line.strip() or current is notes:
            current.append(line.rstrip())
    return head, sections, "\n".join(notes).strip("\n")


def _parse_tools(episode: Episode, lines: list[str]) -> None:
    for line in lines:
        match = re.match(r"^- ([\w.:-]+): (\d+)(?: \((.*)\))?$", line)
        if not match:
            continue
        tool = normal_tool(match.group(1))
        for part in (match.group(3) or "").split(","):
            bits = part.split()
            if len(bits) == 2 and bits[0] in (SERVER, TRANSCRIPT) and bits[1].isdigit():
                episode.tools.setdefault(bits[0], {})[tool] = int(bits[1])
        if not any(tool in per for per in episode.tools.values()):
            episode.tools.setdefault("hand", {})[tool] = int(match.group(2))


def _parse_ref(line: str, add: Any) -> None:
    match = re.match(r"^- (.+?)(?: \(id ([\w-]+)\))?$", line)
    if match and line != "- none":
        add(MemoryRef(match.group(1), match.group(2) or ""))


def _parse_errors(episode: Episode, lines: list[str]) -> None:
    for line in lines:
        fixed = re.match(r"^\s+- fixed: (.*)$", line)
        if fixed and episode.errors:
            episode.errors[-1].fix = safe_text(fixed.group(1))
            continue
        match = re.match(r"^- ([\w.:-]+): (.*)$", line)
        if match and safe_text(match.group(2)):
            episode.errors.append(EpisodeError(normal_tool(match.group(1)), safe_text(match.group(2))))


def _clean_key(key: str) -> str:
    clean = re.sub(r"[^\w.:-]", "", key)[:100]
    return clean if is_safe_name(clean) else ""  # unknown, rather than one key that many sessions share


# ----- results of memory tools: what they recalled, stored and decided ---------------------------
def note_tool_result(episode: Episode, data: Any) -> None:
    """Record the memories and decisions in one memory tool's structured result (any other is ignored)."""
    if not isinstance(data, dict):
        return
    for hit in data.get("results") or []:
        if isinstance(hit, dict) and isinstance(hit.get("citation"), str):
            episode.add_recalled(MemoryRef(hit["citation"], str(hit.get("id") or "")))
    context = data.get("context")
    if isinstance(context, str):
        note_recall_block(episode, context)
    for line in data.get("captured") or []:
        if isinstance(line, dict) and isinstance(line.get("citation"), str):
            episode.add_stored(MemoryRef(line["citation"], str(line.get("id") or "")))
            _note_decision(episode, line.get("text"))
    if data.get("stored") is True and isinstance(data.get("citation"), str):
        episode.add_stored(MemoryRef(data["citation"], str(data.get("id") or "")))
        _note_decision(episode, data.get("text"))


def note_recall_block(episode: Episode, text: str) -> None:
    """The memories of ``<relevant-memories>`` blocks in ``text`` (citations and ids only)."""
    if "<relevant-memories>" not in text:
        return
    for source, memory_id in _RECALL_ITEM.findall(text):
        episode.add_recalled(MemoryRef(html.unescape(source), html.unescape(memory_id or "")))


def _note_decision(episode: Episode, text: Any) -> None:
    if isinstance(text, str) and "[decision]" in text.lower():
        episode.add_decision(text)


# ----- Claude Code transcripts --------------------------------------------------------------------
def episode_from_transcript(path: str | Path, session_key: str = "", client: str = "claude-code",
                            decisions: list[str] | None = None) -> Episode | None:
    """The episode a Claude Code JSONL transcript shows; None when it holds no timestamped record.

    Tool calls come from ``tool_use`` blocks, errors from ``tool_result`` blocks with
    ``is_error``; an error counts as fixed when a later call of the same tool succeeds, or
    when the next assistant text explains a fix. Sub-agent (sidechain) records are left out.
    """
    return episode_from_records(_records(Path(path)), session_key, client, decisions)


def episode_from_records(records: Iterable[dict[str, Any]], session_key: str = "", client: str = "claude-code",
                         decisions: list[str] | None = None) -> Episode | None:
    """The episode of transcript records (as ``episode_from_transcript`` reads them from a file) that a
    client handed over itself, e.g. OpenClaw's session messages; None when none is timestamped."""
    reader = _TranscriptReader(Episode.observed(TRANSCRIPT, normal_client(client), dt.datetime.now(dt.UTC),
                                                _clean_key(session_key),
                                                f"{TRANSCRIPT}:{_clean_key(session_key) or uuid.uuid4().hex[:8]}"))
    seen = False
    for record in records:
        seen = reader.read(claude_record(record)) or seen
    if not seen:
        return None
    for decision in decisions or []:
        reader.episode.add_decision(decision)
    return reader.episode


def _records(path: Path) -> Iterator[dict[str, Any]]:
    try:
        with path.open("rb") as handle:
            for record in map(claude_record, jsonl_records(handle)):
                if isinstance(record, dict) and not record.get("isSidechain"):
                    yield record
    except OSError as exc:
        raise MemoryInputError(f"cannot read transcript {path}: {exc.strerror or exc}") from None


class _TranscriptReader:
    """Walks a transcript's records in order, filling one episode."""

    def __init__(self, episode: Episode):
        self.episode = episode
        self.tool_of: dict[str, str] = {}  # tool_use id -> tool name
        self.pending: dict[str, dict[str, Any]] = {}  # tool_use id -> input (decisions wait for success)
        self.first = True
        self.error_open = False

    def read(self, record: dict[str, Any]) -> bool:
        """Read one record; True when it carried a timestamp."""
        when = parse_time(record.get("timestamp"))
        if when is not None:
            if self.first:
                self.episode.start = self.episode.end = when
                self.first = False
            self.episode.see(when)
        for text in _strings(record, depth=0):
            note_recall_block(self.episode, text)
        message = record.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list) and not record.get("isMeta"):
            for block in content:
                if isinstance(block, dict):
                    self._block(block, record.get("type"))
        return when is not None

    def _block(self, block: dict[str, Any], kind: Any) -> None:
        btype = block.get("type")
        if btype == "tool_use" and isinstance(block.get("name"), str):
            name = block["name"]
            self.episode.count_tool(TRANSCRIPT, name)
            self.tool_of[str(block.get("id"))] = name
            if isinstance(block.get("input"), dict):
                self.pending[str(block.get("id"))] = block["input"]
        elif btype == "tool_result":
            self._result(block)
        elif btype == "text" and kind == "assistant" and self.error_open and isinstance(block.get("text"), str):
            explanation = _fix_sentence(block["text"])
            if explanation:
                self.episode.mark_fixed(None, explanation, quoted=True)
                self.error_open = False

    def _result(self, block: dict[str, Any]) -> None:
        use_id = str(block.get("tool_use_id"))
        tool = self.tool_of.get(use_id, "unknown")
        text = content_text(block.get("content"))
        if block.get("is_error"):
            self.episode.add_error(tool, text, quoted=True)
            self.error_open = True
            return
        self.episode.mark_fixed(tool, f"a later {normal_tool(tool)} call succeeded")
        self.error_open = any(not e.fix for e in self.episode.errors)
        stored = self.pending.pop(use_id, None)
        if normal_tool(tool) == "memory_store" and stored and str(stored.get("category", "")).lower() == "decision":
            self.episode.add_decision(str(stored.get("text") or ""))
        try:
            note_tool_result(self.episode, json.loads(text))
        except (json.JSONDecodeError, RecursionError):
            pass


def _strings(value: Any, depth: int) -> Iterator[str]:
    """Every string inside a record (bounded depth): recall blocks hide in messages and attachments."""
    if isinstance(value, str):
        yield value
    elif depth < 6 and isinstance(value, dict):
        for item in value.values():
            yield from _strings(item, depth + 1)
    elif depth < 6 and isinstance(value, list):
        for item in value:
            yield from _strings(item, depth + 1)


def _fix_sentence(text: str) -> str:
    """The first sentence of an assistant message that explains a fix, or ""."""
    for sentence in re.split(r"(?<=[.!?])\s+|\n+", text):
        if _FIX_WORDS.search(sentence):
            return sentence.strip()
    return ""


# ----- the log of episodes --------------------------------------------------------------------------
class EpisodeLog:
    """Writes episodes (merging records of one session) and lists them as a caller may see them."""

    def __init__(self, engine: Engine, reader: Reader, editor: Editor):
        self.engine = engine
        self.reader = reader
        self.editor = editor

    def record(self, episode: Episode) -> Episode:
        """Write ``episode``, merged into the episode of the same session if there is one; returns what was written.

        An episode that quotes or cites a private file is private itself: it is written under
        ``memory/episodes/private/`` (moved there when a merge brings in a private source).
        """
        self.engine.open()
        workspace = self.engine.workspace
        with self.editor.lock, workspace.locked():
            existing = self._load(include_private=True)
            target = match(existing, episode)
            if target is not None:
                target.merge(episode)
                episode = target
            earlier = episode.path
            private = self._from_private(episode, self._private_texts())
            if not earlier or (private and not self.engine.privacy.is_private(earlier)):
                episode.path = _new_path(episode, {e.path for e in existing}, private)
            workspace.write_file(episode.path, render(episode))
            if earlier and earlier != episode.path:
                self._remove(earlier)
            self.editor.sync_edited(*{episode.path, earlier} - {""})
        self.editor.embed_edited(episode.path)
        return episode

    def recheck_privacy(self, changed: Iterable[str] = ()) -> list[str]:
        """Move shared episodes that now derive from a private file into ``memory/episodes/private/``.

        Every shared episode is read again when the privacy patterns changed since the last
        check (a file made private after episodes cited it); otherwise only the ``changed``
        ones (an episode edited by hand, or written by an older version). Returns the new paths.
        """
        stamp = self.engine.settings.index_dir / PRIVACY_STAMP
        digest = self.engine.privacy.digest
        try:
            whole = stamp.read_text(encoding="utf-8").strip() != digest
        except OSError:
            whole = True
        wanted = {p for p in changed if p.startswith(EPISODES_DIR + "/")}
        moved: list[str] = []
        if whole or wanted:
            moved = self._move_private(None if whole else wanted)
        if whole:
            stamp.parent.mkdir(parents=True, exist_ok=True)
            stamp.write_text(digest + "\n", encoding="utf-8")
        return moved

    def _move_private(self, only: set[str] | None) -> list[str]:
        moved: list[str] = []
        workspace = self.engine.workspace
        with self.editor.lock, workspace.locked():
            existing = self._load(include_private=True)
            shared = [e for e in existing if not self.engine.privacy.is_private(e.path)
                      and (only is None or e.path in only)]
            texts = self._private_texts() if shared else PrivateText([])
            taken = {e.path for e in existing}
            for episode in shared:
                if not self._from_private(episode, texts):
                    continue
                earlier = episode.path
                episode.path = _new_path(episode, taken, private=True)
                taken.add(episode.path)
                workspace.write_file(episode.path, render(episode))
                self._remove(earlier)
                self.editor.sync_edited(earlier, episode.path)
                moved.append(episode.path)
                log.info("episode %s cites a private file: moved to %s", earlier, episode.path)
        return moved

    def _remove(self, rel: str) -> None:
        try:
            self.engine.workspace.remove_file(rel, (self.engine.workspace.root / rel).read_bytes())
        except (OSError, PathError) as exc:
            log.warning("could not remove %s after moving its episode: %s", rel, exc)

    def _from_private(self, episode: Episode, private: PrivateText) -> bool:
        """Whether the episode cites a private file, holds a decision or error that quotes or names one,
        or quotes a conversation transcript (owner-only, ``core/privacy.py``)."""
        sources = {self._resolved(ref.citation.rsplit("#", 1)[0]) for ref in [*episode.recalled, *episode.stored]}
        if self.engine.privacy.derives_from_private(sources) or any(e.quoted for e in episode.errors):
            return True
        said = [*episode.decisions, *(e.message for e in episode.errors), *(e.fix for e in episode.errors)]
        return any(private.quoted_in(text) or self._names_private(text, private) for text in said)

    def _names_private(self, text: str, private: PrivateText) -> bool:
        """Whether ``text`` names a private file (an error's "past the end of MEMORY.md (4 lines)"): a
        private file's path or file name, or a path-like word the privacy patterns cover."""
        if private.named_in(text):
            return True
        names = {self._resolved(word) for word in _PATH_WORD.findall(text)}
        return self.engine.privacy.derives_from_private(names)

    def _resolved(self, path: str) -> str:
        try:
            return self.engine.workspace.resolve(path).rel_path
        except (PathError, OSError, ValueError):
            return path  # a file gone since: judged by the name it was cited under

    def _private_texts(self) -> PrivateText:
        """The private markdown files' text and names, to compare with (transcripts are the episodes' own
        source: their quotes are marked where they are read)."""
        texts, names = [], []
        for info in self.engine.workspace.list_files():
            if not info.rel_path.endswith(".md") or not self.engine.privacy.is_private(info.rel_path):
                continue
            if info.rel_path.startswith(EPISODES_DIR + "/"):
                continue
            names.append(info.rel_path)
            try:
                texts.append(self.engine.workspace.read_memory(info))
            except (OSError, ValueError):
                continue
        return PrivateText(texts, names)

    def find(self, query: str | None = None, after: str | None = None, before: str | None = None,
             max_results: int = 20, include_private: bool = True) -> list[Episode]:
        """Episodes newest first; dates bound them; ``query`` keeps those a search of ``memory/episodes/``
        finds relevant in absolute terms (the recall gate: keyword coverage or similarity floor)."""
        first, last = _day(after, "after"), _day(before, "before")
        if first and last and first > last:
            raise MemoryInputError(f"after ({first}) is later than before ({last})")
        if max_results < 1:
            raise MemoryInputError("max_results must be at least 1")
        episodes = self._load(include_private)
        if first:
            episodes = [e for e in episodes if e.end.astimezone(dt.UTC).date() >= first]
        if last:
            episodes = [e for e in episodes if e.start.astimezone(dt.UTC).date() <= last]
        if query is not None and query.strip():
            from mcp_memory.core.recall import is_relevant
            from mcp_memory.core.requests import SearchRequest

            hits = self.engine.search(SearchRequest(query, max_results=200, min_score=0.0,
                                                    path_prefix=EPISODES_DIR + "/", include_private=include_private))
            floor = self.engine.relevance_floor()
            found = {h.path for h in hits if is_relevant(h, floor)}
            episodes = [e for e in episodes if e.path in found]
        episodes.sort(key=lambda e: e.start, reverse=True)
        return episodes[:max_results]

    def _load(self, include_private: bool) -> list[Episode]:
        out = []
        for info in self.reader.list_files(include_private):
            if not info.path.startswith(EPISODES_DIR + "/"):
                continue
            try:
                text = self.reader.get(info.path, include_private=include_private).text
            except (ValueError, OSError):
                continue
            episode = parse(text, info.path)
            if episode is not None:
                out.append(episode)
        return out


class PrivateText:
    """The text of private files, compared word for word (case, punctuation and markers aside), and
    their names (workspace-relative paths and file names, compared case-folded)."""

    def __init__(self, texts: list[str], names: Iterable[str] = ()):
        self.whole = [_key(text) for text in texts]
        self.lines = {_key(memory_body(line)) for text in texts for line in text.split("\n")}
        self.lines = {line for line in self.lines if len(line) >= MIN_QUOTED}
        self.names = {form.casefold() for name in names for form in (name, name.rsplit("/", 1)[-1])}

    def named_in(self, text: str) -> bool:
        """Whether ``text`` holds a private file's path or file name."""
        folded = text.casefold()
        return any(name in folded for name in self.names)

    def quoted_in(self, text: str) -> bool:
        """Whether ``text`` is part of a private file, or holds one of its lines."""
        said = _key(text.rstrip("…"))
        if len(said) < MIN_QUOTED:
            return False
        return any(said in whole for whole in self.whole) or any(line in said for line in self.lines)


def match(existing: list[Episode], new: Episode) -> Episode | None:
    """The episode ``new`` belongs to (rules: module docstring), or None."""
    if new.session_key:
        for episode in existing:
            if episode.session_key == new.session_key:
                return episode
    client = normal_client(new.client)
    candidates = [e for e in existing if normal_client(e.client) == client
                  and (not e.session_key or not new.session_key) and _overlap(e, new) is not None]
    if not candidates:
        return None
    return max(candidates, key=lambda e: (_overlap(e, new) or -MERGE_SLACK, e.end))


def _overlap(a: Episode, b: Episode) -> dt.timedelta | None:
    """How long the two windows overlap (negative: the gap between them); None when they do not belong together.

    Two records without a session key may leave a gap of ``MERGE_SLACK``. A record without a key
    (the server's) belongs to a keyed one (the client's) only when it lies within it
    (``CLOCK_SLACK`` aside): a client's session window holds every call the server saw of it, so
    a session that ended just before this one began never takes its calls.
    """
    amount = min(a.end, b.end) - max(a.start, b.start)
    if bool(a.session_key) == bool(b.session_key):
        return amount if amount >= -MERGE_SLACK else None
    keyed, keyless = (a, b) if a.session_key else (b, a)
    # Every call the server saw of a session happened while the client's session ran.
    inside = keyless.start >= keyed.start - CLOCK_SLACK and keyless.end <= keyed.end + CLOCK_SLACK
    return amount if inside else None


def _new_path(episode: Episode, taken: set[str], private: bool = False) -> str:
    folder = PRIVATE_RECORDS_DIR if private else EPISODES_DIR
    day = episode.start.astimezone(dt.UTC).date().isoformat()
    short = re.sub(r"[^a-z0-9]", "", (episode.session_key or next(iter(episode.records), "")).lower())
    short = short.removeprefix(SERVER).removeprefix(TRANSCRIPT)[:8] or uuid.uuid4().hex[:8]
    path, n = f"{folder}/{day}-{short}.md", 2
    while path in taken:
        path, n = f"{folder}/{day}-{short}-{n}.md", n + 1
    return path


def _day(value: str | None, name: str) -> dt.date | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str) or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value.strip()):
        raise MemoryInputError(f"{name} must be a date like 2026-11-26 (YYYY-MM-DD), got {value!r}")
    try:
        return dt.date.fromisoformat(value.strip())
    except ValueError:
        raise MemoryInputError(f"{name} is not a real date: {value!r}") from None
