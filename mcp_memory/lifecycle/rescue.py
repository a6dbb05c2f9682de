"""Compaction rescue: what a conversation is about to lose, written down before it is summarised.

When a client compacts a long conversation, its details go: the decisions taken, the tasks
still open, the command that finally worked, the files touched, the errors and their causes.
``find_rescuable`` picks those out of a Claude Code transcript (tool calls and results
included) or of plain messages, with offline English and Chinese rules; open tasks are read
as capture reads them (``capture.tasks``), so the to-dos and near-term plans capture leaves
out are the ones kept here. ``Rescuer`` writes them as bullets under ``## Rescued before
compaction (session K, HH:MM)`` in today's daily file: through the capture filters (secrets,
injections, recalled blocks), without what memory already holds (a decision capture already
wrote in the third person counts, see ``similarity``), at most ``MAX_ITEMS`` lines of at most
``MAX_CHARS`` characters, and once per compaction (an idempotency key in the ledger). The last
rescue of each session is kept in ``<index_dir>/rescues.json`` so a tool can show it afterwards.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp_memory.capture.facts import Fact
from mcp_memory.capture.filters import Skipped, check_fact, preview, strip_recall_blocks
from mcp_memory.capture.tasks import is_task, marked_task
from mcp_memory.core.hits import MemoryLine
from mcp_memory.core.ledger import Ledger, clean_key
from mcp_memory.core.memory_ids import memory_body
from mcp_memory.core.scopes import check_name, daily_path, seen_from
from mcp_memory.core.transcripts import MAX_TRANSCRIPT_LINE, Message, claude_record, content_text
from mcp_memory.errors import MemoryInputError
from mcp_memory.safety import clean_memory_text

if TYPE_CHECKING:
    from mcp_memory.index.engine import Engine
    from mcp_memory.index.similarity import Similarity
    from mcp_memory.writes.edits import Editor

MAX_ITEMS = 20
MAX_CHARS = 300
MAX_SESSIONS_KEPT = 200  # sessions remembered in rescues.json
STATE_FILE = "rescues.json"
KINDS = ("decision", "task", "fix", "command", "error", "files")  # also the order of priority
_EDIT_TOOLS = {"Edit", "Write", "MultiEdit", "NotebookEdit", "edit", "write", "apply_patch"}  # Claude Code, OpenClaw
_SHELL_TOOLS = {"Bash", "BashOutput", "Shell", "exec", "bash"}
_MAX_FILES = 12

_PATTERNS: dict[str, re.Pattern[str]] = {
    "decision": re.compile(
        r"\b(?:we|I)(?: have|'ve)? decided\b|\bdecided to\b|\bdecision:|\blet'?s go with\b|\bwe(?:'ll| will) use\b"
        r"|\bgoing with\b|\bwe agreed\b|\bsettled on\b|\bchose to\b"
        r"|决定|定下来|选择了|确定(?:用|使用|采用)|就用|采用了",
        re.IGNORECASE),
    "task": re.compile(
        r"\bTODO\b|^\s*[-*]\s*\[ \]|\bnext,? we (?:need|have|should)\b|\bwe still (?:need|have) to\b"
        r"|\bstill to do\b|\bremaining:|\bnext step\b|\bfollow[- ]up:|待办|下一步|还需要|接下来(?:要|需要)|尚未完成",
        re.IGNORECASE),
    "fix": re.compile(
        r"\bfixed (?:it )?by\b|\bthe fix (?:was|is)\b|\bresolved by\b|\bsolved by\b|\bworks now\b|\bfixed:"
        r"|修复了|已修复|解决了|通过.{1,40}解决|问题已解决",
        re.IGNORECASE),
    "error": re.compile(
        r"\b(?:root )?cause (?:was|is)\b|\bcaused by\b|\bfailed because\b|\bfails because\b|\berror was\b"
        r"|原因是|根本原因|是因为|报错是因为|失败的原因",
        re.IGNORECASE),
}
_SENTENCES = re.compile(r"(?<=[.!?])\s+|(?<=[。！？；])|\n+")


@dataclass(frozen=True)
class RescuedItem:
    """One thing worth keeping: ``kind`` is one of ``KINDS``, ``text`` one line."""

    kind: str
    text: str


@dataclass(frozen=True)
class RescueResult:
    """What one rescue wrote (``path``, ``lines``), what it left out and why, and whether it ran before."""

    path: str | None
    lines: list[MemoryLine]
    skipped: list[Skipped]
    already_done: bool = False
    message: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "lines": [{"citation": m.citation, "text": m.text} for m in self.lines],
            "skipped": [s.to_dict() for s in self.skipped],
            "already_done": self.already_done,
            "message": self.message,
        }


@dataclass(frozen=True)
class LastRescue:
    """The last rescue of a session, as remembered in ``rescues.json``."""

    session_key: str
    path: str
    start_line: int
    end_line: int
    at: str
    items: list[RescuedItem] = field(default_factory=list)


# ----- finding what to rescue ------------------------------------------------------------------
def find_rescuable(messages_or_records: Iterable[Message | dict[str, Any]]) -> list[RescuedItem]:
    """The decisions, tasks, fixes, working commands, errors and touched files of a conversation.

    Takes ``Message`` objects (text only) or transcript records (Claude Code JSONL records,
    or ``{role, content}`` dicts whose content may hold ``tool_use``/``tool_result`` blocks).
    A ``compact_boundary`` record starts over: what came before it was summarised already.
    Items come in conversation order, repeats removed; files touched make one item at the end.
    """
    finder = _Finder()
    for entry in messages_or_records:
        if isinstance(entry, Message):
            finder.text(entry.content)
        elif isinstance(entry, dict):
            finder.record(claude_record(entry))
    return finder.items()


class _Finder:
    """Walks a conversation in order, collecting rescued items."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self.found: list[RescuedItem] = []
        self.files: list[str] = []
        self.commands: dict[str, str] = {}  # tool_use id -> shell command
        self.failed: list[str] = []  # first lines of errors not yet followed by a success

    def record(self, record: dict[str, Any]) -> None:
        if record.get("type") == "system" and record.get("subtype") == "compact_boundary":
            self._reset()  # start over: what came before was summarised by the previous compaction
            return
        if record.get("isSidechain") or record.get("isMeta") or record.get("isCompactSummary"):
            return
        inner = record.get("message")
        body = inner if isinstance(inner, dict) else record
        content = body.get("content")
        if isinstance(content, str):
            self.text(content)
        elif isinstance(content, list):
            for block in content:
                if isinstance(block, dict):
                    self.block(block)

    def block(self, block: dict[str, Any]) -> None:
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            self.text(block["text"])
        elif kind == "tool_use":
            self._tool_use(block)
        elif kind == "tool_result":
            self._tool_result(block)

    def text(self, text: str) -> None:
        for sentence in _SENTENCES.split(strip_recall_blocks(text)):
            sentence = sentence.strip()
            kind = _kind_of(sentence) if sentence else None
            if kind is not None:
                self._add(kind, sentence)

    def _tool_use(self, block: dict[str, Any]) -> None:
        name, data = block.get("name"), block.get("input")
        if not isinstance(data, dict):
            return
        if name in _EDIT_TOOLS:
            path = data.get("file_path") or data.get("notebook_path") or data.get("path")
            if isinstance(path, str) and path.strip() and path not in self.files:
                self.files.append(path.strip())
        elif name in _SHELL_TOOLS and isinstance(data.get("command"), str):
            self.commands[str(block.get("id"))] = data["command"]

    def _tool_result(self, block: dict[str, Any]) -> None:
        use_id = str(block.get("tool_use_id"))
        text = content_text(block.get("content"))
        if block.get("is_error"):
            first = next((line.strip() for line in text.splitlines() if line.strip()), "")
            if first:
                self.failed.append(first)
                self._add("error", first)
            return
        command = self.commands.pop(use_id, None)
        if command is not None and self.failed:
            self._add("command", f"`{' '.join(command.split())}` worked after: {self.failed[-1]}")
            self.failed.clear()
        else:
            self.text_of_result(text)

    def text_of_result(self, text: str) -> None:
        """Tool output is not conversation: only unchecked task boxes are read from it."""
        for line in text.splitlines():
            if re.match(r"^\s*[-*]\s*\[ \]\s+\S", line):
                self._add("task", line.strip())

    def _add(self, kind: str, text: str) -> None:
        item = RescuedItem(kind, text)
        if item not in self.found:
            self.found.append(item)

    def items(self) -> list[RescuedItem]:
        found = list(self.found)
        if self.files:
            shown = ", ".join(self.files[:_MAX_FILES]) + (f" and {len(self.files) - _MAX_FILES} more"
                                                         if len(self.files) > _MAX_FILES else "")
            found.append(RescuedItem("files", f"files touched: {shown}"))
        return found


def _kind_of(sentence: str) -> str | None:
    """What a sentence of the conversation is worth keeping as, if anything.

    The to-dos, reminders and near-future plans capture leaves out are tasks here, by the same
    reading (``capture.tasks``): a marked one ("TODO", "remember to", "before Friday") even when it
    also reads as a decision, an obligation ("we need to fix the flaky test") when nothing else fits.
    """
    if marked_task(sentence):
        return "task"
    for kind, pattern in _PATTERNS.items():
        if pattern.search(sentence):
            return kind
    return "task" if is_task(sentence) else None


def bounded(items: list[RescuedItem], limit: int = MAX_ITEMS) -> list[RescuedItem]:
    """At most ``limit`` items: the higher kinds first, the latest of a kind first; conversation order kept."""
    ranked = sorted(range(len(items)), key=lambda i: (KINDS.index(items[i].kind), -i))
    return [items[i] for i in sorted(ranked[:limit])]


# ----- reading a transcript --------------------------------------------------------------------
@dataclass(frozen=True)
class Transcript:
    """The records of one transcript file, and what identifies its state (size, last record)."""

    records: list[dict[str, Any]]
    size: int
    last_uuid: str


def read_records(path: Path) -> Transcript:
    """The JSON object records of a JSONL transcript; ``MemoryInputError`` when there are none."""
    try:
        with path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            records = list(_json_lines(handle))
    except OSError as exc:
        raise MemoryInputError(f"cannot read transcript {path}: {exc.strerror or exc}") from None
    if not records:
        raise MemoryInputError(f"transcript {path} holds no JSON records (is it a JSONL transcript?)")
    last = next((str(r["uuid"]) for r in reversed(records) if isinstance(r.get("uuid"), str)), "")
    return Transcript(records, size, last)


def _json_lines(handle: Any) -> Iterator[dict[str, Any]]:
    for raw in handle:
        if len(raw) > MAX_TRANSCRIPT_LINE or not raw.strip():
            continue
        try:
            record = json.loads(raw.decode("utf-8", "replace"))
        except (json.JSONDecodeError, RecursionError):
            continue
        record = claude_record(record)
        if isinstance(record, dict):
            yield record


def checked_transcript_path(value: str) -> Path:
    """A transcript path a tool caller may name: absolute, a readable regular ``.jsonl`` file, no links.

    Every component is checked: a link anywhere in the path (or ``..``) is refused, so the
    path names the file it appears to name.
    """
    path = Path(value)
    if not value or not path.is_absolute():
        raise MemoryInputError("transcript_path must be an absolute path")
    if path.suffix.lower() != ".jsonl":
        raise MemoryInputError("transcript_path must name a .jsonl transcript")
    if ".." in path.parts:
        raise MemoryInputError("transcript_path must not contain '..'")
    try:
        if path.resolve(strict=True) != path:
            raise MemoryInputError("transcript_path must not go through a symbolic link")
        info = os.lstat(path)
    except (OSError, RuntimeError):
        raise MemoryInputError(f"transcript {value} does not exist or cannot be read") from None
    if not stat.S_ISREG(info.st_mode) or not os.access(path, os.R_OK):
        raise MemoryInputError(f"transcript {value} is not a readable regular file")
    return path


# ----- writing ---------------------------------------------------------------------------------
class Rescuer:
    """Writes what a compaction would lose into today's daily file, once per compaction."""

    def __init__(self, engine: Engine, similarity: Similarity, editor: Editor, ledger: Callable[[], Ledger]):
        self.engine = engine
        self.similarity = similarity
        self.editor = editor
        self._ledger = ledger  # opened on first use
        self._state = _StateFile(engine.settings.index_dir / STATE_FILE)

    def rescue(self, source: Path | str | list[Message] | list[dict[str, Any]], session_key: str,
               now: dt.datetime | None = None, include_private: bool = True, scope: str | None = None) -> RescueResult:
        """Rescue from a transcript file or a list of messages (or records) of session ``session_key``,
        into today's daily file of ``scope`` (None: the global one)."""
        scope = check_name(scope) if scope is not None else None
        session = clean_key(session_key)
        if not session:
            raise MemoryInputError("session_key must not be empty")
        if isinstance(source, (str, Path)):
            transcript = read_records(Path(source))
            entries: list[Any] = transcript.records
            key = f"rescue:{session}:{transcript.size}:{transcript.last_uuid}"
        else:
            entries = list(source)
            key = f"rescue:{session}:{_digest(entries)}"
        if self._ledger().seen(key):
            return self._again(session, include_private)
        now = now or dt.datetime.now()
        skipped: list[Skipped] = []
        items = self._checked(find_rescuable(entries), skipped)
        rel = daily_path(scope, now.date())
        if items and not include_private and self.engine.privacy.is_private(rel):
            return RescueResult(None, [], skipped, message="not rescued: today's daily file is not shared with "
                                                           "this client")
        return self._write(items, skipped, key, session, now, include_private, scope)

    def last(self, session_key: str, include_private: bool = True) -> LastRescue | None:
        """The last rescue of a session, unless its file is hidden from this caller."""
        last = self._state.get(clean_key(session_key) or "")
        if last is None or (not include_private and self.engine.privacy.is_private(last.path)):
            return None
        return last

    def _again(self, session: str, include_private: bool) -> RescueResult:
        last = self.last(session, include_private)
        lines = _lines_of(last) if last else []
        return RescueResult(last.path if last else None, lines, [], already_done=True,
                            message="already rescued: this compaction was handled before")

    def _checked(self, items: list[RescuedItem], skipped: list[Skipped]) -> list[RescuedItem]:
        """Items fit for a file: cleaned, capped, through the capture checks, unique, bounded."""
        kept: list[RescuedItem] = []
        for item in items:
            text = " ".join(clean_memory_text(item.text).split())
            reason = check_fact(Fact(text, "other"), max_chars=10 * MAX_CHARS)  # the whole line, before the cut
            short = _capped(text)
            reason = reason or check_fact(Fact(short, "other"), max_chars=MAX_CHARS + 1)
            if reason:
                skipped.append(Skipped(preview(text), reason))
                continue
            if self.similarity.is_duplicate(short, [k.text for k in kept]) is not None:
                skipped.append(Skipped(preview(short), "repeats another item of this rescue"))
                continue
            kept.append(RescuedItem(item.kind, short))
        if len(kept) > MAX_ITEMS:
            chosen = bounded(kept)
            skipped.extend(Skipped(preview(k.text), f"over the limit of {MAX_ITEMS} items per rescue")
                           for k in kept if k not in chosen)
            kept = chosen
        return kept

    def _write(self, items: list[RescuedItem], skipped: list[Skipped], key: str, session: str, now: dt.datetime,
               include_private: bool, scope: str | None = None) -> RescueResult:
        workspace = self.engine.workspace
        rel = daily_path(scope, now.date())
        self.engine.open()
        with self.editor.lock, workspace.locked():
            if not self._ledger().claim(key):  # another process handled this compaction first
                return self._again(session, include_private)
            try:
                fresh = self._not_in_memory(items, skipped, include_private, scope)
                if not fresh:
                    return RescueResult(None, [], skipped, message="nothing new to rescue")
                lines = [f"## Rescued before compaction (session {session_label(session)}, {now.strftime('%H:%M')})",
                         "", *(f"- [{i.kind}] {i.text}" for i in fresh)]
                prefix = [""] if (workspace.root / rel).exists() else []
                start, end = workspace.append(rel, prefix + lines, new_file_header=f"# {now.date().isoformat()}\n\n")
                self.editor.sync_edited(rel)
                self.editor.check_indexed(rel)
                first = start + len(prefix) + 2
                self._state.put(LastRescue(session, rel, first, end, now.isoformat(timespec="seconds"), fresh))
            except BaseException:
                self._ledger().release(key)
                raise
            self.editor.embed_edited(rel)
        written = [MemoryLine(rel, first + i, line) for i, line in enumerate(lines[2:])]
        return RescueResult(rel, written, skipped, message=f"rescued {len(written)} items into {rel}")

    def _not_in_memory(self, items: list[RescuedItem], skipped: list[Skipped],
                       include_private: bool, scope: str | None = None) -> list[RescuedItem]:
        duplicates = self.similarity.find_duplicates([memory_body(i.text) for i in items],
                                                     [include_private] * len(items), [seen_from(scope)] * len(items))
        fresh: list[RescuedItem] = []
        for item, duplicate in zip(items, duplicates, strict=True):
            if duplicate is not None:
                skipped.append(Skipped(preview(item.text), f"already in memory at {duplicate.citation}"))
            else:
                fresh.append(item)
        return fresh


def _capped(text: str) -> str:
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 1].rstrip() + "…"


def _digest(entries: list[Any]) -> str:
    digest = hashlib.sha256()
    for entry in entries:
        data = asdict(entry) if isinstance(entry, Message) else entry
        digest.update(json.dumps(data, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8", "replace"))
        digest.update(b"\x01")
    return digest.hexdigest()[:24]


def session_label(session_key: str) -> str:
    """A short form of a session key for a heading: its first 8 safe characters."""
    label = "".join(ch for ch in session_key if ch.isalnum() or ch in "-_.")
    return label[:8] or "unnamed"


def _lines_of(last: LastRescue) -> list[MemoryLine]:
    return [MemoryLine(last.path, last.start_line + i, f"- [{item.kind}] {item.text}")
            for i, item in enumerate(last.items)]


class _StateFile:
    """``rescues.json``: the last rescue of each session, rewritten atomically (callers hold the files lock)."""

    def __init__(self, path: Path):
        self.path = path

    def get(self, session: str) -> LastRescue | None:
        raw = self._load().get(session)
        if not isinstance(raw, dict):
            return None
        try:
            items = [RescuedItem(str(i["kind"]), str(i["text"])) for i in raw.get("items", [])]
            return LastRescue(session, str(raw["path"]), int(raw["start_line"]), int(raw["end_line"]),
                              str(raw.get("at", "")), items)
        except (KeyError, TypeError, ValueError):
            return None

    def put(self, last: LastRescue) -> None:
        data = self._load()
        data.pop(last.session_key, None)
        data[last.session_key] = {"path": last.path, "start_line": last.start_line, "end_line": last.end_line,
                                  "at": last.at, "items": [asdict(i) for i in last.items]}
        while len(data) > MAX_SESSIONS_KEPT:
            data.pop(next(iter(data)))
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, self.path)

    def _load(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}
