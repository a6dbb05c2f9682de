"""MemoryBank: search and auto-recall over ten days of chat with a companion, in English and Chinese.

MemoryBank (Zhong et al., 2023, github.com/zhongwanjun/MemoryBank-SiliconFriend, MIT licence) is
the evaluation set of the SiliconFriend companion: 15 users per language, each with ten days of
conversation (2023-04-27 to 2023-05-06, about 50 turns in all) and 5-7 probing questions
("What painters did you recommend to me?", "On May 4th, I shared with you some problems I
encountered. What were they about?", "我曾经在5月2日提到过我去了博物馆, 你还记得我当时看了什么展览吗?").
The Chinese users are the same people and days told in Chinese, turn for turn but for a few
differences (a day one language lacks, a repeated chat), so each language is labelled on its own.

The set ships no answer locations. ``bench/data/memorybank_evidence.jsonl`` (ours; its short notes
quote a few words of the answers, MemoryBank's text: Copyright (c) 2023 Wanjun Zhong, MIT) names, for each
question (by language, user and index), the lines of the history that state the answer: a date,
a turn and a side (the user's message or the companion's reply); questions whose premise is false
("I don't like outdoor activities, right?") point at the lines that show the true fact.

Each user gets a workspace of their own, as one person's memory would be: ``memory/YYYY-MM-DD.md``
per day, a ``#`` heading with the date, then one bullet per message ("- Emily: ...",
"- Companion: ..."). The days keep their month and day but are filed in the latest year they are
past (2026 when run after May 6th, 2026): the questions name days without a year ("On May 4th"),
which search and recall read as the last such day. The question is asked as the user would ask
it, in each search mode (default, precise, deep; ``bench.locomo.run_search``) at the default
result count, with today the day after the last conversation. Figures per language:

* hit@1 / hit@5 and MRR: the first hit whose lines overlap an evidence line;
* R@5: the share of evidence days among the first five distinct files;
* lines per hit among the first five (a wide hit overlaps more easily);
* auto-recall (``Memory.recall_hits``, the question as the prompt): hit (a shown memory overlaps an
  evidence line) and precision (shown memories that do), the same by evidence day (a shown memory
  from an evidence day's file, as other benches count), items and characters per prompt; silence
  on the unrelated prompts of ``bench/data/recall_cases.json``, asked of every user's workspace.

The data is read at run time from ``--data DIR`` (the repository's ``eval_data`` folder, holding
``en/memory_bank_en.json``, ``en/probing_questions_en.jsonl`` and the same under ``cn/``); it is
not copied into this repository.

    python bench/memorybank.py --data /path/to/MemoryBank-SiliconFriend/eval_data
    python bench/memorybank.py --data DIR --langs cn --modes default,precise --no-recall
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
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

EVIDENCE = ROOT / "bench" / "data" / "memorybank_evidence.jsonl"
LANGS = ("en", "cn")
MODES = ("default", "precise", "deep")
COMPANION = {"en": "Companion", "cn": "AI伴侣"}


@dataclass(frozen=True)
class Question:
    lang: str
    user: str
    index: int
    text: str
    lines: frozenset[tuple[str, int]]  # (path, 1-based line) of each evidence message

    @property
    def days(self) -> frozenset[str]:
        return frozenset(path for path, _ in self.lines)


@dataclass
class Scores:
    rr: list[float] = field(default_factory=list)
    hit1: list[float] = field(default_factory=list)
    hit5: list[float] = field(default_factory=list)
    recall5: list[float] = field(default_factory=list)
    lines_per_hit: list[float] = field(default_factory=list)

    def row(self) -> dict[str, float | int]:
        return {"n": len(self.rr), "hit@1": mean3(self.hit1), "hit@5": mean3(self.hit5), "MRR": mean3(self.rr),
                "R@5": mean3(self.recall5), "lines/hit": mean3(self.lines_per_hit)}


@dataclass
class RecallScores:
    prompts: int = 0
    hits: int = 0
    injected: int = 0
    relevant: int = 0
    day_hits: int = 0
    day_relevant: int = 0
    chars: int = 0
    silent: int = 0
    unrelated: int = 0

    def row(self) -> dict[str, float | int | None]:
        return {"prompts": self.prompts, "hit": share3(self.hits, self.prompts),
                "precision": share3(self.relevant, self.injected), "day_hit": share3(self.day_hits, self.prompts),
                "day_precision": share3(self.day_relevant, self.injected),
                "items": round(self.injected / self.prompts, 2) if self.prompts else 0.0,
                "chars": round(self.chars / self.prompts) if self.prompts else 0,
                "silence": share3(self.silent, self.unrelated) if self.unrelated else None}


# --- the data ---------------------------------------------------------------------------------


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def load_bank(data: Path, lang: str) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """A language's users (name -> record) and probing questions (name -> questions); names stripped,
    as the files pad some of them with spaces."""
    bank = json.loads((data / lang / f"memory_bank_{lang}.json").read_text(encoding="utf-8"))
    questions: dict[str, list[str]] = {}
    for line in (data / lang / f"probing_questions_{lang}.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            for name, asked in json.loads(line).items():
                questions[name.strip()] = [str(q) for q in asked]
    return {name.strip(): record for name, record in bank.items()}, questions


Place = tuple[str, int]  # (workspace-relative path, 1-based line)
Message = tuple[str, int, str]  # (date, turn, "query" | "response")


def recent_year(days: list[str], today: dt.date) -> int:
    """The latest year in which every one of ``days`` (ISO dates of one year) is before ``today``."""
    last = max(dt.date.fromisoformat(d) for d in days)
    return today.year if last.replace(year=today.year) < today else today.year - 1


def lay_out(user: str, record: dict[str, Any], lang: str,
            year: int | None = None) -> tuple[dict[str, list[str]], dict[Message, Place]]:
    """One user's days as files (path -> lines), and where each message landed:
    (date, turn, "query" | "response") -> (path, 1-based line). ``year``: the days are filed in
    that year (month and day kept)."""
    files: dict[str, list[str]] = {}
    where: dict[Message, Place] = {}
    for date, turns in sorted(record.get("history", {}).items()):
        day = dt.date.fromisoformat(date)
        filed = day.replace(year=year) if year else day
        path = f"memory/{filed.isoformat()}.md"
        lines = [f"# {filed.isoformat()}", ""]
        for turn, exchange in enumerate(turns):
            for side, speaker in (("query", user), ("response", COMPANION[lang])):
                text = _one_line(exchange.get(side, ""))
                if text:
                    lines.append(f"- {speaker}: {text}")
                    where[(date, turn, side)] = (path, len(lines))
        files[path] = lines
    return files, where


def questions_of(lang: str, user: str, asked: list[str], where: dict[Message, Place],
                 evidence: dict[tuple[str, str, int], list[dict[str, Any]]]) -> tuple[list[Question], int]:
    """The user's questions that have evidence in the history; and how many had none (unlabelled,
    or labelled as unanswerable)."""
    out: list[Question] = []
    left_out = 0
    for index, text in enumerate(asked):
        marks = evidence.get((lang, user, index), [])
        lines = frozenset(where[key] for m in marks if (key := (m["date"], int(m["turn"]), m["side"])) in where)
        if not lines:
            left_out += 1
            continue
        out.append(Question(lang, user, index, text.strip().strip('"').strip(), lines))
    return out, left_out


def read_evidence(path: Path) -> dict[tuple[str, str, int], list[dict[str, Any]]]:
    out: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            if row.get("answerable", True):
                out[(row["lang"], row["user"], int(row["index"]))] = list(row.get("evidence", []))
    return out


# --- scoring ----------------------------------------------------------------------------------


def _on_evidence(hit: Any, q: Question) -> bool:
    return any(hit.path == path and hit.start_line <= line <= hit.end_line for path, line in q.lines)


def score_search(memory: Memory, q: Question, mode: str, today: dt.date,
                 into: list[Scores]) -> tuple[float, int | None]:
    """Runs one question in one mode; returns the latency (ms) and the rank of the first evidence hit."""
    started = time.perf_counter()
    hits = run_search(memory, mode, q.text, today)
    latency = (time.perf_counter() - started) * 1000
    first = next((i for i, h in enumerate(hits) if _on_evidence(h, q)), None)
    files = list(dict.fromkeys(h.path for h in hits))[:5]
    for s in into:
        s.rr.append(1.0 / (first + 1) if first is not None else 0.0)
        s.hit1.append(1.0 if first == 0 else 0.0)
        s.hit5.append(1.0 if first is not None and first < 5 else 0.0)
        s.recall5.append(len(q.days & set(files)) / len(q.days))
        s.lines_per_hit.extend(h.end_line - h.start_line + 1 for h in hits[:5])
    return latency, first


def score_recall(memory: Memory, q: Question, into: list[RecallScores]) -> None:
    shown = memory.recall_hits(q.text)
    right = sum(1 for h in shown if _on_evidence(h, q))
    right_day = sum(1 for h in shown if h.path in q.days)
    for s in into:
        s.prompts += 1
        s.hits += right > 0
        s.injected += len(shown)
        s.relevant += right
        s.day_hits += right_day > 0
        s.day_relevant += right_day
        s.chars += sum(len(h.snippet) for h in shown)


def summary(results: dict[str, Any]) -> str:
    out = [f"MemoryBank: {results['questions']} questions ({results['left_out']} without evidence), "
           f"{results['users']} users, index {results['index_seconds']} s, load {results['load']}", ""]
    modes = results["modes"]
    out.append("| row | n | " + " | ".join(f"{m} hit@1 / hit@5 / MRR / R@5 / lines per hit" for m in modes) + " |")
    out.append("| --- | --- | " + " | ".join("---" for _ in modes) + " |")
    rows = list(next(iter(modes.values()))["scores"]) if modes else []
    for row in rows:
        cells = []
        for m in modes:
            s = modes[m]["scores"][row]
            cells.append(f"{s['hit@1']:.3f} / {s['hit@5']:.3f} / {s['MRR']:.3f} / {s['R@5']:.3f} "
                         f"/ {s['lines/hit']:.1f}")
        out.append(f"| {row} | {next(iter(modes.values()))['scores'][row]['n']} | " + " | ".join(cells) + " |")
    out.append("")
    out.extend(f"{m}: p50 {modes[m]['p50_ms']} ms" for m in modes)
    recall = results.get("recall")
    if recall:
        out += ["", "| auto-recall row | prompts | hit / precision (evidence lines) | hit / precision (evidence days) "
                "| items | characters | silence |", "| --- | --- | --- | --- | --- | --- | --- |"]
        out += [f"| {k} | {r['prompts']} | {r['hit']} / {r['precision']} | {r['day_hit']} / {r['day_precision']} "
                f"| {r['items']} | {r['chars']} | {r['silence']} |" for k, r in recall.items()]
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="MemoryBank's eval_data folder (holding en/ and cn/)")
    parser.add_argument("--evidence", type=Path, default=EVIDENCE)
    parser.add_argument("--langs", default=",".join(LANGS))
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--workspace", type=Path, default=None,
                        help="parent folder of the per-user workspaces (default: $TMPDIR/mcp-memory-memorybank)")
    parser.add_argument("--no-recall", action="store_true", help="skip auto-recall")
    parser.add_argument("--show-misses", action="store_true", help="print each question's first hit per mode")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    langs = [x.strip() for x in args.langs.split(",") if x.strip()]
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not langs or any(x not in LANGS for x in langs):
        raise SystemExit(f"--langs takes a comma-separated subset of {', '.join(LANGS)}; got {args.langs!r}")
    if not modes or any(m not in MODES for m in modes):
        raise SystemExit(f"--modes takes a comma-separated subset of {', '.join(MODES)}; got {args.modes!r}")
    for lang in langs:
        for name in (f"memory_bank_{lang}.json", f"probing_questions_{lang}.jsonl"):
            if not (args.data / lang / name).is_file():
                raise SystemExit(f"{args.data / lang} lacks {name}: pass --data DIR, MemoryBank's eval_data folder")
    evidence = read_evidence(args.evidence)
    parent = args.workspace or Path(os.environ.get("TMPDIR", "/tmp")) / "mcp-memory-memorybank"
    unrelated = [] if args.no_recall else unrelated_prompts()

    search: dict[str, dict[str, Scores]] = {m: defaultdict(Scores) for m in modes}
    latencies: dict[str, list[float]] = {m: [] for m in modes}
    recall: dict[str, RecallScores] = defaultdict(RecallScores)
    counts = {"questions": 0, "left_out": 0, "users": 0}
    index_seconds = 0.0
    for lang in langs:
        bank, asked = load_bank(args.data, lang)
        for number, (user, record) in enumerate(bank.items()):
            # The chats are filed in the latest year they are past, so a question's "May 4th" names
            # them as it would a user's recent memory (recall reads such a day against today).
            year = recent_year(list(record["history"]), dt.date.today())
            files, where = lay_out(user, record, lang, year)
            questions, left_out = questions_of(lang, user, asked.get(user, []), where, evidence)
            counts["left_out"] += left_out
            counts["questions"] += len(questions)
            counts["users"] += 1
            workspace = parent / f"{lang}-{number:02d}"
            write_wanted(workspace / "memory", {workspace / p: "\n".join(lines) + "\n" for p, lines in files.items()})
            memory = Memory(load_settings(workspace, environ={})).open()
            try:
                started = time.perf_counter()
                memory.sync()
                memory.backfill()
                index_seconds += time.perf_counter() - started
                today = dt.date.fromisoformat(max(record["history"])).replace(year=year) + dt.timedelta(days=1)
                for mode in modes:
                    forget_query_vectors(memory)
                    for q in questions:
                        rows = [search[mode]["overall"], search[mode][lang]]
                        latency, first = score_search(memory, q, mode, today, rows)
                        latencies[mode].append(latency)
                        if args.show_misses and first != 0:
                            print(f"  {mode} {lang}/{user}#{q.index} first evidence at {first}: {q.text!r}",
                                  file=sys.stderr)
                if not args.no_recall:
                    for q in questions:
                        score_recall(memory, q, [recall["overall"], recall[lang]])
                    silent = sum(1 for prompt in unrelated if not memory.recall_hits(prompt))
                    for key in ("overall", lang):
                        recall[key].silent += silent
                        recall[key].unrelated += len(unrelated)
            finally:
                memory.close()
            print(f"{lang} {user}: {len(questions)} questions", file=sys.stderr)

    order = ["overall", *langs]
    results: dict[str, Any] = {"machine": machine(), "load": loadavg(), **counts,
                               "index_seconds": round(index_seconds, 1), "modes": {}}
    for mode in modes:
        ordered = sorted(latencies[mode])
        results["modes"][mode] = {"scores": {k: search[mode][k].row() for k in order if k in search[mode]},
                                  "p50_ms": round(ordered[len(ordered) // 2], 2) if ordered else None}
    if not args.no_recall:
        results["recall"] = {k: recall[k].row() for k in order if k in recall}
    results["load_after"] = loadavg()
    emit(results, summary(results), args.json)


if __name__ == "__main__":
    main()
