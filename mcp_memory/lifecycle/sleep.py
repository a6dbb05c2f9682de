"""The sleep cycle: the upkeep a memory needs about once a day, one process at a time.

``mcp-memory sleep`` runs it (``--dry-run`` lists what it would do and changes nothing), and
``serve`` runs it every ``[sleep] interval_hours`` when no request came for ``quiet_minutes``.
In order:

1. consolidation (``consolidation.py``): memories said twice kept once, a changed statement
   retiring the old one, each marked in place (never deleted, never reworded);
2. utility decays toward neutral (``core/utility.py``);
3. the experience graph: duplicate chains merged, stale ones archived (``experience/graph_upkeep.py``);
4. logs: ``hooks.log`` lines and ledger rows older than ``log_days`` dropped;
5. the vector table compacted;
6. a note for the next session (``<index_dir>/sleep-note.md``): what changed, open decisions,
   the most rewarded memories. The session-start hook shows it.

Every edit of a memory file is atomic, under the workspace files lock, and checks that the line
still holds what was read (a file edited meanwhile is left for the next run). What was done is
appended to ``<index_dir>/sleep.log``, in words. A lock file keeps two processes from running at
once (the second skips), and ``sleep.json`` records the last run.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from mcp_memory.config import Settings
from mcp_memory.core.folders import make_private_folder
from mcp_memory.core.ledger import Ledger
from mcp_memory.core.utility import DecayReport, UtilityStore
from mcp_memory.core.workspace import decode_memory_bytes
from mcp_memory.errors import PathError
from mcp_memory.experience.graph import EXPERIENCE_FILE
from mcp_memory.experience.graph_upkeep import ChainMove, apply_graph_upkeep, archive_file, plan_graph_upkeep
from mcp_memory.index.engine import Engine
from mcp_memory.index.similarity import Similarity
from mcp_memory.lifecycle.consolidation import Retirement, collect_items, plan_retirements
from mcp_memory.lifecycle.consolidation_judge import ChatJudge
from mcp_memory.safety import quotable
from mcp_memory.writes.edits import Editor

log = logging.getLogger(__name__)

NOTE_FILE = "sleep-note.md"
LOG_FILE = "sleep.log"
STAMP_FILE = "sleep.json"
_DECISION = "[decision]"


@dataclass
class SleepReport:
    """What one run did (or, dry, would do)."""

    ran: bool
    dry_run: bool
    started: str
    skipped: str | None = None  # why it did not run
    judge: str = "rules"  # who decided what is superseded: "rules" or "llm"
    warnings: list[str] = field(default_factory=list)
    retired: list[Retirement] = field(default_factory=list)
    chains_moved: list[ChainMove] = field(default_factory=list)
    utility: DecayReport | None = None
    ledger_rows: int = 0
    log_lines: int = 0
    compacted: bool = False
    note: str = ""
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"ran": self.ran, "dry_run": self.dry_run, "started": self.started, "skipped": self.skipped,
                "judge": self.judge, "warnings": list(self.warnings),
                "retired": [r.to_dict() for r in self.retired],
                "chains_moved": [m.to_dict() for m in self.chains_moved],
                "utility": None if self.utility is None else self.utility.__dict__,
                "ledger_rows_dropped": self.ledger_rows, "log_lines_dropped": self.log_lines,
                "index_compacted": self.compacted, "note": self.note, "seconds": round(self.seconds, 2)}


class SleepCycle:
    def __init__(self, engine: Engine, similarity: Similarity, editor: Editor, utility: UtilityStore,
                 ledger: Callable[[], Ledger], settings: Settings):
        self.engine = engine
        self.similarity = similarity
        self.editor = editor
        self.utility = utility
        self._ledger = ledger
        self.settings = settings

    # ----- when -------------------------------------------------------------------------------
    def last_run(self) -> dt.datetime | None:
        try:
            stamp = json.loads((self.settings.index_dir / STAMP_FILE).read_text(encoding="utf-8"))
            return dt.datetime.fromisoformat(str(stamp["last_run"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def due(self, now: dt.datetime | None = None) -> bool:
        """Whether ``interval_hours`` have passed since the last run (never when it is 0)."""
        hours = self.settings.sleep.interval_hours
        if hours <= 0:
            return False
        last = self.last_run()
        now = now or dt.datetime.now(dt.UTC)
        return last is None or (now - last).total_seconds() >= hours * 3600

    # ----- the run ----------------------------------------------------------------------------
    def run(self, dry_run: bool = False, now: dt.datetime | None = None) -> SleepReport:
        """One sleep cycle, or a report that another process is running one."""
        now = now or dt.datetime.now(dt.UTC)
        report = SleepReport(ran=False, dry_run=dry_run, started=now.isoformat(timespec="seconds"))
        make_private_folder(self.settings.index_dir)
        lock = FileLock(str(self.settings.index_dir / "sleep.lock"), timeout=0)
        try:
            lock.acquire()
        except Timeout:
            report.skipped = "another process is running the sleep cycle"
            return report
        started = time.monotonic()
        try:
            self._run(report, dry_run, now)
        finally:
            lock.release()
        report.seconds = time.monotonic() - started
        return report

    def _run(self, report: SleepReport, dry_run: bool, now: dt.datetime) -> None:
        self.engine.open()
        self.engine.sync()
        today = now.date()
        judge = self._judge()
        report.judge = "llm" if judge is not None else "rules"
        report.retired = plan_retirements(self.engine, collect_items(self.engine), judge, report.warnings)
        for warning in report.warnings:
            log.warning("sleep: %s", warning)
        report.chains_moved = self._graph_moves(today)
        if dry_run:
            report.ran = True
            report.note = self._note(report, now)
            return
        report.retired = self._retire(report.retired)
        if report.chains_moved:
            archive = archive_file(self.engine.privacy)
            moved = apply_graph_upkeep(self.engine.workspace, report.chains_moved, today, archive)
            report.chains_moved = report.chains_moved if moved else []
            self.editor.sync_edited(EXPERIENCE_FILE, archive)
        report.utility = self.utility.decay(now)
        report.ledger_rows = self._ledger().prune(self.settings.sleep.log_days)
        report.log_lines = _truncate_log(self.settings.index_dir / "hooks.log", now, self.settings.sleep.log_days)
        report.compacted = self.engine.vectors.compact(force=True)
        report.note = self._note(report, now)
        (self.settings.index_dir / NOTE_FILE).write_text(report.note, encoding="utf-8")
        self._log(report)
        (self.settings.index_dir / STAMP_FILE).write_text(json.dumps({"last_run": report.started}), encoding="utf-8")
        report.ran = True

    def _judge(self) -> ChatJudge | None:
        if self.settings.sleep.judge != "llm":
            return None
        c = self.settings.capture
        return ChatJudge(c.llm_model, c.llm_base_url, c.llm_api_key, c.llm_timeout)

    def _graph_moves(self, today: dt.date) -> list[ChainMove]:
        path = self.engine.workspace.root / EXPERIENCE_FILE
        if not path.exists():
            return []
        text = decode_memory_bytes(path.read_bytes())
        return plan_graph_upkeep(text, self.similarity, today, self.settings.sleep.stale_chain_days)

    def _retire(self, planned: list[Retirement]) -> list[Retirement]:
        """Mark each planned item in its file; the ones whose file changed meanwhile are left out."""
        done: list[Retirement] = []
        by_path: dict[str, list[Retirement]] = {}
        for item in planned:
            by_path.setdefault(item.item.path, []).append(item)
        workspace = self.engine.workspace
        for path, items in by_path.items():
            with workspace.locked():
                try:
                    data = workspace.resolve(path).abs_path.read_bytes()
                    lines = data.split(b"\n")
                    for r in items:
                        last = r.item.end_line - 1
                        current = decode_memory_bytes(lines[last]).rstrip("\r")
                        if current != r.item.text.split("\n")[-1].rstrip("\r"):
                            raise PathError(f"{path} line {r.item.end_line} changed")
                        ending = b"\r" if lines[last].endswith(b"\r") else b""
                        lines[last] = lines[last].rstrip(b"\r") + f" {r.mark}".encode() + ending
                    workspace.replace_bytes(path, data, b"\n".join(lines))
                except (PathError, OSError, UnicodeDecodeError) as exc:
                    log.info("sleep: %s left for the next run (%s)", path, exc)
                    continue
            done.extend(items)
        if done:
            self.editor.sync_edited(*by_path)
        return done

    # ----- what is left for people and the next session ----------------------------------------
    def _note(self, report: SleepReport, now: dt.datetime) -> str:
        lines = [f"# Since the last session (sleep cycle of {now.date().isoformat()})", ""]
        changed = [f"- {r.item.citation}: {r.kind} ({'by' if r.kind == 'superseded' else 'of'} {r.by.citation}): "
                   f"{_short(r.item.body)}" for r in report.retired]
        changed += [f"- experience chain {m.chain.id} moved to the archive: {m.reason}" for m in report.chains_moved]
        lines += ["## What changed", *(changed or ["- nothing"]), ""]
        decisions = self._open_decisions(now.date())
        if decisions:
            lines += ["## Recent decisions", *decisions, ""]
        rewarded = sorted(self.utility.values().items(), key=lambda item: -item[1])[:5]
        top = [self._memory_line(key, value) for key, value in rewarded if value > 0]
        if any(top):
            lines += ["## Most useful memories", *[t for t in top if t], ""]
        return "\n".join(lines).rstrip() + "\n"

    def _open_decisions(self, today: dt.date) -> list[str]:
        """The [decision] bullets of the last 7 days' daily files."""
        found: list[str] = []
        for file in self.engine.workspace.list_files():
            if file.date is None or (today - file.date).days > 7 or (today - file.date).days < 0:
                continue
            try:
                text = decode_memory_bytes(file.abs_path.read_bytes())
            except (OSError, UnicodeDecodeError):
                continue
            for number, line in enumerate(text.split("\n"), 1):
                if _DECISION in line.lower() and "<!--" not in line:
                    found.append(f"- {file.rel_path}#L{number}: {_short(line.strip().lstrip('-* '))}")
        return found[:10]

    def _memory_line(self, memory_id: str, value: float) -> str:
        located = self.engine.naming.find(memory_id, [f.rel_path for f in self.engine.workspace.list_files()])
        if not located:
            return ""
        return f"- {located[0].citation} (utility {value:+.2f}): {_short(located[0].text.strip().lstrip('-* '))}"

    def _log(self, report: SleepReport) -> None:
        entries = [f"## {report.started}"]
        entries += [f"- marked {r.item.citation} {r.kind} {'by' if r.kind == 'superseded' else 'of'} "
                    f"{r.by.citation}: {_short(r.item.text, 1000)}" for r in report.retired]
        entries += [f"- moved chain {m.chain.id} to {archive_file(self.engine.privacy)}: {m.reason}"
                    for m in report.chains_moved]
        if report.utility is not None:
            entries.append(f"- utility: {report.utility.changed} decayed, {report.utility.dropped} back to neutral")
        entries.append(f"- dropped {report.ledger_rows} ledger rows and {report.log_lines} hooks.log lines; "
                       f"index compacted: {report.compacted}")
        with (self.settings.index_dir / LOG_FILE).open("a", encoding="utf-8") as out:
            out.write("\n".join(entries) + "\n\n")


def _short(text: str, limit: int = 160) -> str:
    """A memory's text as the note and the log quote it: one line, secrets redacted, not quoted at all
    when it reads as instructions. The note is shown to the model at the next session's start, and
    files change outside the product's filtered writes (by hand, by git, by an older version)."""
    flat = quotable(text)
    if flat is None:
        return "(not quoted: it reads as instructions)"
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _truncate_log(path: Path, now: dt.datetime, days: int) -> int:
    """Drop the lines of a hooks log older than ``days`` (a line without a date goes with the one
    before it); returns how many went."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
    except OSError:
        return 0
    cutoff = (now - dt.timedelta(days=days)).strftime("%Y-%m-%d")
    kept: list[str] = []
    keep = True
    for line in lines:
        if len(line) >= 10 and line[4] == "-" and line[7] == "-" and line[:4].isdigit():
            keep = line[:10] >= cutoff
        if keep:
            kept.append(line)
    dropped = len(lines) - len(kept)
    if dropped:
        tmp = path.with_suffix(".log.tmp")
        tmp.write_text("\n".join(kept), encoding="utf-8")
        tmp.replace(path)
    return dropped
