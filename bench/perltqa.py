"""PerLTQA: search and auto-recall over characters' long-term memories, a set nobody tuned for.

Reads PerLTQA's English v2 files (``perltmem_en_v2.json``: each character's profile, profile
description, social relationships, events with creation times and dialogues;
``perltqa_en_v2.json``: questions with an answer and the id of the one memory they are about)
from ``--data DIR`` (default ``../shared/data/perltqa/``). The set is CC BY-NC 4.0, for
evaluation only: it is read in place, never copied into the repository.

The memories are written as a user of mcp-memory would keep them, all characters in one
workspace (a question competes with every other character's memories):

* ``memory/people/<character>.md``: the profile, one bullet per field, the profile description,
  and the social relationships, one bullet each;
* ``memory/YYYY-MM-DD.md``: the daily file of an event's creation date (``YYYY-MM-DD-<character>.md``,
  a daily file all the same, when several characters share the day), a ``##`` heading for the
  character, each event a ``###`` heading and its text; each dialogue goes to the daily file of
  its timestamp under the same character heading, one bullet per turn. An event whose creation
  time is no date ("during an election") takes its dialogue's date; a month or a year alone
  takes its first day; an event with neither is kept in the character's topic file.

A question's reference memory ("Gender", ``1_0`` social, ``1_0_0`` event, ``1_0_0#3``
dialogue) maps to the (path, line range) written for it. Per question and mode (default,
precise, deep; ``bench.locomo.run_search``): R@5, MRR and hit@5 over the reference file among the
distinct files of the default result count, and line@5: a top-5 hit whose line range overlaps the
memory's lines. Auto-recall (``Memory.recall_hits``, the question as the prompt): hit (a shown
memory in the reference file), line hit (overlapping its lines), precision (shown memories in the
reference file) and items per prompt; silence on the unrelated prompts of
``bench/data/recall_cases.json``. Rows per memory type and split (dev: even character index,
test: odd, in the order of ``perltmem_en_v2.json``).

    python bench/perltqa.py --data ../shared/data/perltqa --characters 4
    python bench/perltqa.py --modes default --no-recall --json /tmp/perltqa.json
"""

from __future__ import annotations

import argparse
import ast
import datetime as dt
import json
import os
import re
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.conversational_recall import unrelated_prompts
from bench.dialogue import forget_query_vectors
from bench.locomo import run_search, write_wanted
from bench.machine import emit, loadavg, machine, mean3, share3
from mcp_memory.config import load_settings
from mcp_memory.memory import Memory

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "perltqa"
MEMORY_FILE = "perltmem_en_v2.json"
QUESTION_FILE = "perltqa_en_v2.json"
MODES = ("default", "precise", "deep")
TYPES = ("profile", "social", "event", "dialogue")
# Characters whose memories embed in about five minutes on the shared 2-core machine under load:
# a character is ~95 kB, ~80 chunks and ~500 lines (mostly dialogue turns), each line a vector too,
# and LoCoMo indexed at ~7 texts a second at load 8-9. --characters 0 takes all.
DEFAULT_CHARACTERS = 4
_MONTH_YEAR = re.compile(r"^([A-Za-z]+),? (\d{4})$")
_YEAR = re.compile(r"^(?:year |in )?(\d{4})$", re.IGNORECASE)


@dataclass(frozen=True)
class Span:
    """Where one memory was written: a workspace-relative path and its 1-based line range."""

    path: str
    start: int
    end: int


@dataclass
class Question:
    text: str
    kind: str  # profile | social | event | dialogue
    split: str  # dev | test
    character: str
    reference: str
    span: Span


@dataclass
class Scores:
    rr: list[float] = field(default_factory=list)
    hit5: list[float] = field(default_factory=list)
    line5: list[float] = field(default_factory=list)
    lines_per_hit: list[float] = field(default_factory=list)  # how wide a top-5 hit is: line@5 is lenient on wide hits

    def row(self) -> dict[str, float | int]:
        # One reference file per question: R@5 equals hit@5; both are reported as other benches do.
        return {"n": len(self.rr), "R@5": mean3(self.hit5), "MRR": mean3(self.rr), "hit@5": mean3(self.hit5),
                "line@5": mean3(self.line5), "lines/hit": mean3(self.lines_per_hit)}


@dataclass
class RecallScores:
    prompts: int = 0
    hits: int = 0
    line_hits: int = 0
    injected: int = 0
    relevant: int = 0

    def row(self) -> dict[str, float | int]:
        return {"prompts": self.prompts, "hit": share3(self.hits, self.prompts),
                "line_hit": share3(self.line_hits, self.prompts), "precision": share3(self.relevant, self.injected),
                "items": round(self.injected / self.prompts, 2) if self.prompts else 0.0}


# --- the workspace --------------------------------------------------------------------------


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "character"


def event_date(creation: str, dialogue_date: dt.date | None) -> dt.date | None:
    """The day an event is filed under: its creation date, else its dialogue's, else the first day of
    its month or year, else None (undated)."""
    text = " ".join(creation.split())
    for fmt in ("%B %d, %Y", "%B %d %Y", "%Y-%m-%d", "%d %B %Y"):
        try:
            return dt.datetime.strptime(text, fmt).date()
        except ValueError:
            pass
    if dialogue_date:
        return dialogue_date
    if match := _MONTH_YEAR.match(text):
        try:
            return dt.datetime.strptime(f"1 {match[1]} {match[2]}", "%d %B %Y").date()
        except ValueError:
            pass  # "year 2010": not a month
    if match := _YEAR.match(text):
        return dt.date(int(match[1]), 1, 1)
    return None


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


class _Layout:
    """Collects the lines of every file and where each memory lands."""

    def __init__(self) -> None:
        self.files: dict[str, list[str]] = {}
        self.spans: dict[tuple[str, str], Span] = {}  # (character, memory id) -> span

    def add(self, path: str, character: str, memory_id: str, lines: list[str], gap: bool = True) -> None:
        """Appends ``lines`` to ``path`` (after a blank line unless ``gap`` is false: a bullet of a list)."""
        body = self.files.setdefault(path, [])
        if gap and body and body[-1] != "":
            body.append("")
        start = len(body) + 1
        body.extend(lines)
        self.spans[(character, memory_id)] = Span(path, start, len(body))


def _dialogue_date(dialogue: dict[str, Any]) -> dt.date | None:
    for stamp in dialogue.get("contents", {}):
        try:
            return dt.date.fromisoformat(str(stamp)[:10])
        except ValueError:
            continue
    return None


def lay_out(characters: list[tuple[str, dict[str, Any]]]) -> _Layout:
    """Every character's memories as files and lines; see the module docstring for the shape."""
    layout = _Layout()
    daily: dict[str, dict[str, list[tuple[str, list[str]]]]] = defaultdict(lambda: defaultdict(list))
    for name, mem in characters:
        person = f"memory/people/{slug(name)}.md"
        layout.files[person] = [f"# {name}", "", "## Profile", ""]
        for key, value in mem.get("profile", {}).items():
            layout.add(person, name, key, [f"- {key}: {_one_line(value)}"], gap=False)
        description = [p.strip().strip("*").strip() for p in str(mem.get("profile_description", "")).split("\n")]
        description = [p for p in description if p]
        if description:
            layout.add(person, name, "profile_description", ["## Description", "", *_paragraphs(description)])
        layout.add(person, name, "social-heading", ["## Social relationships", ""])
        for rel_id, rel in mem.get("social_relationship", {}).items():
            who, kind = rel.get("Supporting Characters", "?"), rel.get("Relationship", "?")
            layout.add(person, name, rel_id, [f"- {who} ({kind}): {_one_line(rel.get('Description', ''))}"],
                       gap=False)
        dialogues = mem.get("dialogues", {})
        dialogue_of_event = {d.get("events"): d for d in dialogues.values()}
        for event_id, event in mem.get("events", {}).items():
            linked = dialogue_of_event.get(event_id)
            day = event_date(str(event.get("Creation Time", "")), _dialogue_date(linked) if linked else None)
            when = _one_line(event.get("Creation Time", "")) or "undated"
            title = _one_line(event.get("summary", event_id))
            lines = [f"### {title} ({when})", "", _one_line(event.get("content", ""))]
            if day is None:
                layout.add(person, name, event_id, lines)
            else:
                daily[day.isoformat()][name].append((event_id, lines))
        for dialogue_id, dialogue in dialogues.items():
            # One block per dialogue, filed under its first timestamp's day (each has one in this set).
            lines = []
            for stamp, turns in dialogue.get("contents", {}).items():
                lines += [*([""] if lines else []), f"### Conversation at {stamp}", "",
                          *(f"- {_one_line(t)}" for t in turns)]
            if not lines:
                continue
            day = _dialogue_date(dialogue)
            if day is None:
                layout.add(person, name, dialogue_id, lines)
            else:
                daily[day.isoformat()][name].append((dialogue_id, lines))
    for iso_day, per_character in sorted(daily.items()):
        for name, memories in per_character.items():
            # A day several characters share gets a daily file per character (a dated name all the
            # same), so no file holds a crowd of other people's days.
            path = f"memory/{iso_day}.md" if len(per_character) == 1 else f"memory/{iso_day}-{slug(name)}.md"
            layout.files[path] = [f"# {iso_day}"]
            layout.add(path, name, f"heading:{iso_day}", [f"## {name}"])
            for memory_id, lines in memories:
                layout.add(path, name, memory_id, lines)
    return layout


def _paragraphs(parts: list[str]) -> list[str]:
    out: list[str] = []
    for part in parts:
        if out:
            out.append("")
        out.append(part)
    return out


# --- the questions --------------------------------------------------------------------------


def _references(raw: str) -> list[str]:
    """``"['1_0_0#3']"`` -> ``['1_0_0#3']``; a profile field ("Gender") stays as it is."""
    text = raw.strip()
    if text.startswith("["):
        try:
            return [str(r) for r in ast.literal_eval(text)]
        except (ValueError, SyntaxError):
            return re.findall(r"[\w#]+", text)
    return [text]


def _kind(reference: str, section: str) -> str:
    if "#" in reference or section == "dialogues":
        return "dialogue"
    if section == "profile":
        return "profile"
    return "social" if reference.count("_") == 1 else "event"


def questions_of(qa_data: list[dict[str, Any]], chosen: dict[str, int], layout: _Layout) -> tuple[list[Question], int]:
    """Questions of the chosen characters whose one reference memory was laid out; and how many
    questions were left out (no or several references, or an id absent from the memories)."""
    questions: list[Question] = []
    skipped = 0
    for entry in qa_data:
        for name, sections in entry.items():
            if name not in chosen:
                continue
            split = "dev" if chosen[name] % 2 == 0 else "test"
            for section, items in sections.items():
                for item in _flatten(items):
                    refs = _references(str(item.get("Reference Memory", "")))
                    span = layout.spans.get((name, refs[0])) if len(refs) == 1 else None
                    if span is None:
                        skipped += 1
                        continue
                    questions.append(Question(str(item["Question"]), _kind(refs[0], section), split, name,
                                              refs[0], span))
    return questions, skipped


def _flatten(items: object) -> list[dict[str, Any]]:
    """Profile questions are a list of questions; the others a list of {memory id: [questions]}."""
    out: list[dict[str, Any]] = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and "Question" in item:
            out.append(item)
        elif isinstance(item, dict):
            for group in item.values():
                out.extend(q for q in group if isinstance(q, dict) and "Question" in q)
    return out


# --- scoring --------------------------------------------------------------------------------


def _overlaps(hit: object, span: Span) -> bool:
    return getattr(hit, "path", None) == span.path and hit.start_line <= span.end and hit.end_line >= span.start  # type: ignore[attr-defined]


def _groups(q: Question) -> list[str]:
    return ["overall", q.kind, f"split:{q.split}", f"{q.kind}/{q.split}"]


def _ordered(table: dict[str, Any]) -> list[str]:
    """Rows in reading order: overall, each memory type, each split, then type/split."""
    order = ["overall", *TYPES, "split:dev", "split:test", *(f"{t}/{s}" for t in TYPES for s in ("dev", "test"))]
    return [k for k in order if k in table]


def evaluate_search(memory: Memory, questions: list[Question], mode: str, today: dt.date) -> dict[str, Any]:
    table: dict[str, Scores] = defaultdict(Scores)
    latencies: list[float] = []
    firsts: dict[int, tuple[int | None, str]] = {}
    for i, q in enumerate(questions):
        started = time.perf_counter()
        hits = run_search(memory, mode, q.text, today)
        latencies.append((time.perf_counter() - started) * 1000)
        ranked = list(dict.fromkeys(h.path for h in hits))
        first = next((r for r, path in enumerate(ranked) if path == q.span.path), None)
        line = any(_overlaps(h, q.span) for h in hits[:5])
        firsts[i] = (first, f"{hits[0].path}:{hits[0].start_line}-{hits[0].end_line}" if hits else "-")
        for key in _groups(q):
            s = table[key]
            s.hit5.append(1.0 if first is not None and first < 5 else 0.0)
            s.rr.append(1.0 / (first + 1) if first is not None else 0.0)
            s.line5.append(1.0 if line else 0.0)
            s.lines_per_hit.extend(h.end_line - h.start_line + 1 for h in hits[:5])
    latencies.sort()
    return {"scores": {k: table[k].row() for k in _ordered(table)},
            "latency": {"p50_ms": round(latencies[len(latencies) // 2], 2) if latencies else None},
            "misses": [{"question": questions[i].text, "kind": questions[i].kind,
                        "expected": f"{questions[i].span.path}:{questions[i].span.start}-{questions[i].span.end}",
                        "first": top} for i, (first, top) in firsts.items() if first is None or first >= 5]}


def evaluate_recall(memory: Memory, questions: list[Question], unrelated: list[str]) -> dict[str, Any]:
    table: dict[str, RecallScores] = defaultdict(RecallScores)
    latencies: list[float] = []
    for q in questions:
        started = time.perf_counter()
        shown = memory.recall_hits(q.text)
        latencies.append((time.perf_counter() - started) * 1000)
        right = sum(1 for h in shown if h.path == q.span.path)
        for key in _groups(q):
            s = table[key]
            s.prompts += 1
            s.hits += right > 0
            s.line_hits += any(_overlaps(h, q.span) for h in shown)
            s.injected += len(shown)
            s.relevant += right
    silent = sum(1 for prompt in unrelated if not memory.recall_hits(prompt))
    latencies.sort()
    return {"scores": {k: table[k].row() for k in _ordered(table)},
            "silence": round(silent / len(unrelated), 3) if unrelated else None, "unrelated": len(unrelated),
            "p50_ms": round(latencies[len(latencies) // 2], 2) if latencies else None}


def summary(results: dict[str, Any]) -> str:
    modes = list(results["modes"])
    rows = list(results["modes"][modes[0]]["scores"]) if modes else []
    head = "| row | n | " + " | ".join(f"{m} hit@5 / MRR / line@5 / lines per hit" for m in modes) + " |"
    out = [f"PerLTQA: {results['characters']} of {results['characters_in_data']} characters, "
           f"{results['questions']} questions ({results['skipped']} left out), files {results['files']}, "
           f"chunks {results['chunks']}, index {results['index_seconds']} s, load {results['load']}", "", head,
           "| --- | --- | " + " | ".join("---" for _ in modes) + " |"]
    for row in rows:
        cells = []
        for m in modes:
            s = results["modes"][m]["scores"][row]
            cells.append(f"{s['hit@5']:.3f} / {s['MRR']:.3f} / {s['line@5']:.3f} / {s['lines/hit']:.1f}")
        out.append(f"| {row} | {results['modes'][modes[0]]['scores'][row]['n']} | " + " | ".join(cells) + " |")
    out.append("")
    out.extend(f"{m}: p50 {results['modes'][m]['latency']['p50_ms']} ms" for m in modes)
    recall = results.get("recall")
    if recall:
        out += ["", "| auto-recall row | prompts | hit | line hit | precision | items |",
                "| --- | --- | --- | --- | --- | --- |"]
        out += [f"| {k} | {r['prompts']} | {r['hit']} | {r['line_hit']} | {r['precision']} | {r['items']} |"
                for k, r in recall["scores"].items()]
        out.append(f"\nsilence on {recall['unrelated']} unrelated prompts: {recall['silence']}; "
                   f"recall p50 {recall['p50_ms']} ms")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA,
                        help=f"folder holding {MEMORY_FILE} and {QUESTION_FILE}")
    parser.add_argument("--characters", type=int, default=DEFAULT_CHARACTERS,
                        help="the first N characters of the memory file (0: all)")
    parser.add_argument("--workspace", type=Path, default=None)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--no-recall", action="store_true", help="skip auto-recall")
    parser.add_argument("--today", default=None, help="reference date of the searches (default: today)")
    parser.add_argument("--show-misses", type=int, default=0, help="print this many misses per mode")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not modes or any(m not in MODES for m in modes):
        raise SystemExit(f"--modes takes a comma-separated subset of {', '.join(MODES)}; got {args.modes!r}")
    missing = [f for f in (MEMORY_FILE, QUESTION_FILE) if not (args.data / f).is_file()]
    if missing:
        raise SystemExit(f"{args.data} lacks {', '.join(missing)}: pass --data DIR, the folder of PerLTQA's "
                         "Dataset/en_v2 files")
    memories = json.loads((args.data / MEMORY_FILE).read_text(encoding="utf-8"))
    qa_data = json.loads((args.data / QUESTION_FILE).read_text(encoding="utf-8"))
    everyone = list(memories.items())
    chosen_list = everyone[: args.characters] if args.characters > 0 else everyone
    chosen = {name: i for i, (name, _) in enumerate(chosen_list)}

    layout = lay_out(chosen_list)
    questions, skipped = questions_of(qa_data, chosen, layout)
    workspace = args.workspace or Path(os.environ.get("TMPDIR", "/tmp")) / f"mcp-memory-perltqa-{len(chosen_list)}"
    write_wanted(workspace / "memory", {workspace / p: "\n".join(lines) + "\n" for p, lines in layout.files.items()})

    memory = Memory(load_settings(workspace, environ={})).open()
    try:
        started = time.perf_counter()
        memory.sync()
        embedded = memory.backfill()
        index_s = time.perf_counter() - started
        status = memory.status().to_dict()
        print(f"characters {len(chosen_list)} of {len(everyone)}, questions {len(questions)} "
              f"({skipped} left out), files {status['files']}, chunks {status['chunks']}, "
              f"embedded now {embedded}, index {index_s:.1f}s", file=sys.stderr)
        today = dt.date.fromisoformat(args.today) if args.today else dt.date.today()
        results: dict[str, Any] = {"machine": machine(), "load": loadavg(), "characters": len(chosen_list),
                         "characters_in_data": len(everyone), "questions": len(questions), "skipped": skipped,
                         "files": status["files"], "chunks": status["chunks"], "embedder": status["embedder"],
                         "index_seconds": round(index_s, 1), "embedded_now": embedded, "today": today.isoformat(),
                         "modes": {}}
        for mode in modes:
            run_search(memory, mode, "warm up", today)
            forget_query_vectors(memory)
            results["modes"][mode] = evaluate_search(memory, questions, mode, today)
            for miss in results["modes"][mode]["misses"][: args.show_misses]:
                print(f"  {mode} miss [{miss['kind']}] {miss['question']!r}: expected {miss['expected']}, "
                      f"first {miss['first']}", file=sys.stderr)
        if not args.no_recall:
            memory.recall_hits("warm up")
            results["recall"] = evaluate_recall(memory, questions, unrelated_prompts())
        results["load_after"] = loadavg()
    finally:
        memory.close()
    emit(results, summary(results), args.json)


if __name__ == "__main__":
    main()
