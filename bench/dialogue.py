"""Bilingual dialogue-memory benchmark: the three search modes on hand-written Chinese and English chats.

``bench/data/dialogues.json`` holds eight original multi-session conversations between two
people (four in Chinese, four in English; 7-8 sessions each, one date per session, 2024-2025)
and 128 questions written for them. Each question lists its evidence as ``[session, turn]``
pairs (both 1-based). Question kinds:

* ``single``: one fact, asked in other words than the turn that states it;
* ``temporal``: when something happened or will happen ("上周六开的业" said on a dated session);
* ``dated``: the question names the session's date ("2024年5月25日 ... 买了什么", "on 2024-05-18");
* ``multi``: the answer joins turns of two or more sessions;
* ``aggregate``: collects every instance of something (pets, trips, purchases);
* ``cross``: English questions about two of the Chinese conversations (question language ``en``).

Every session becomes one daily-style file, ``memory/dialogues/<conv-id>/<date>-session-NN.md``
(a header, the date, one ``- **Speaker:** text`` bullet per turn), in the layout of
``bench/locomo.py``; all conversations share one workspace, so a question competes with the
other seven conversations too. The workspace is indexed with the default configuration and
every question runs in each mode: default (``memory_search``), precise and deep.

Figures and their definitions are those of ``bench/locomo.py`` (``score_question``): session
R@5 over the distinct session files among the default result count, R@10 over the first 10
distinct sessions (a 30-hit search for default and precise, deep's own first 10 hits), MRR of
the first relevant session, hit@5, evidence coverage@5 (an evidence turn's line inside a top-5
hit's line range) and lines per hit. Reported overall, per language group (zh, en, and cross:
an English question about a Chinese conversation) and per kind, with p50/p95 latency per mode.

    python bench/dialogue.py                          # all three modes
    python bench/dialogue.py --modes default,precise --json /tmp/dialogue.json
    python bench/dialogue.py --fresh                  # delete the workspace first (cold index time)
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.locomo import Scores, run_search, score_question, write_wanted
from bench.machine import emit, machine
from mcp_memory.config import load_settings
from mcp_memory.memory import Memory

DEFAULT_DATA = ROOT / "bench" / "data" / "dialogues.json"
MODES = ("default", "precise", "deep")
GROUPS = ("zh", "en", "cross")
KINDS = ("single", "temporal", "dated", "multi", "aggregate", "cross")


@dataclass
class Question:
    conv: str
    text: str
    group: str  # zh, en, or cross (asked in another language than the conversation's)
    kind: str
    sessions: set[str]  # relevant session files (workspace-relative paths)
    lines: set[tuple[str, int]]  # (path, line) of each evidence turn


def session_path(conv_id: str, number: int, date: str) -> str:
    return f"memory/dialogues/{conv_id}/{date}-session-{number:02d}.md"


def write_workspace(data: dict, workspace: Path) -> list[Question]:
    """One file per session: a header, the date, then one bullet per turn. Returns the questions."""
    memory_dir = workspace / "memory" / "dialogues"
    wanted: dict[Path, str] = {}
    turn_line: dict[tuple[str, int, int], tuple[str, int]] = {}
    for conv in data["conversations"]:
        a, b = conv["speakers"]
        for n, session in enumerate(conv["sessions"], 1):
            rel = session_path(conv["id"], n, session["date"])
            lines = [f"# Conversation {conv['id']}, session {n}: {a} and {b}", "", f"Date: {session['date']}", ""]
            for t, turn in enumerate(session["turns"], 1):
                lines.append(f"- **{turn['speaker']}:** {turn['text']}")
                turn_line[(conv["id"], n, t)] = (rel, len(lines))
            wanted[workspace / rel] = "\n".join(lines) + "\n"
    write_wanted(memory_dir, wanted)

    questions: list[Question] = []
    for conv in data["conversations"]:
        for qa in conv["questions"]:
            lines = {turn_line[(conv["id"], s, t)] for s, t in qa["evidence"]}
            group = qa["lang"] if qa["lang"] == conv["lang"] else "cross"
            questions.append(Question(conv["id"], qa["q"], group, qa["kind"], {p for p, _ in lines}, lines))
    return questions


def evaluate(memory: Memory, questions: list[Question], today: dt.date, mode: str) -> tuple[dict, dict]:
    """Scores of one mode: overall, per language group, per kind and per conversation."""
    table: dict[str, Scores] = defaultdict(Scores)
    latencies: list[float] = []
    for q in questions:
        into = [table["overall"], table[f"lang:{q.group}"], table[f"kind:{q.kind}"], table[f"conv:{q.conv}"]]
        latencies.append(score_question(memory, mode, q.text, q.sessions, q.lines, today, into))
    latencies.sort()
    timing = {
        "p50_ms": round(latencies[len(latencies) // 2], 2),
        "p95_ms": round(latencies[int(len(latencies) * 0.95)], 2),
    }
    return {k: v.row() for k, v in sorted(table.items())}, timing


def forget_query_vectors(memory: Memory) -> None:
    """Empty the searcher's cache of query vectors, so no mode gains from the one before."""
    searcher = memory.engine.searcher
    with searcher._lock:
        searcher._query_vectors.clear()


def summary(results: dict) -> str:
    """Modes side by side: R@5, R@10, MRR and coverage@5 per row, latency and lines per hit below."""
    modes = list(results["modes"])
    cols = ("R@5", "R@10", "MRR", "evidence_cov@5")
    width = 7 * len(cols)
    out = [f"{'':18s}{'n':>4s}  " + " | ".join(f"{m:^{width}s}" for m in modes),
           f"{'':18s}{'':>4s}  " + " | ".join("".join(f"{c[:6]:>7s}" for c in ("R@5", "R@10", "MRR", "cov@5"))
                                              for _ in modes)]
    first = results["modes"][modes[0]]["scores"]
    rows = ["overall"] + [f"lang:{g}" for g in GROUPS] + [f"kind:{k}" for k in KINDS]
    for row in rows:
        if row not in first:
            continue
        if row in ("lang:zh", "kind:single"):
            out.append("")
        cells = " | ".join("".join(f"{results['modes'][m]['scores'][row][c]:7.3f}" for c in cols) for m in modes)
        out.append(f"{row:18s}{first[row]['n']:4d}  {cells}")
    out.append("")
    for m in modes:
        lat, overall = results["modes"][m]["latency"], results["modes"][m]["scores"]["overall"]
        out.append(f"{m:8s} p50 {lat['p50_ms']:8.1f} ms  p95 {lat['p95_ms']:8.1f} ms  "
                   f"hit@5 {overall['hit@5']:.3f}  lines/hit {overall['lines/hit']:.1f}")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--workspace", type=Path,
                        default=Path(os.environ.get("TMPDIR", "/tmp")) / "mcp-memory-dialogues")
    parser.add_argument("--fresh", action="store_true", help="delete the workspace and its index first")
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated: default, precise, deep")
    parser.add_argument("--today", default=None, help="reference date of the searches (default: today)")
    parser.add_argument("--json", type=Path, default=None, help="also write all figures to this file")
    args = parser.parse_args()
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not modes or any(m not in MODES for m in modes):
        raise SystemExit(f"--modes takes a comma-separated subset of {', '.join(MODES)}; got {args.modes!r}")

    data = json.loads(args.data.read_text(encoding="utf-8"))
    if args.fresh and args.workspace.exists():
        shutil.rmtree(args.workspace)
    questions = write_workspace(data, args.workspace)
    settings = load_settings(args.workspace, environ={})
    memory = Memory(settings).open()

    started = time.perf_counter()
    report = memory.sync()
    sync_s = time.perf_counter() - started
    embedded = memory.backfill()
    index_s = time.perf_counter() - started
    status = memory.status().to_dict()
    print(f"files {status['files']}, chunks {status['chunks']}, embedder {status['embedder']}, "
          f"sync {sync_s:.1f}s ({len(report.added) + len(report.changed)} files), "
          f"embedded now {embedded}, index total {index_s:.1f}s, questions {len(questions)}", file=sys.stderr)

    today = dt.date.fromisoformat(args.today) if args.today else dt.date.today()
    results = {"machine": machine(), "data": str(args.data), "files": status["files"], "chunks": status["chunks"],
               "embedder": status["embedder"], "index_seconds": round(index_s, 1), "embedded_now": embedded,
               "today": today.isoformat(), "questions": len(questions), "modes": {}}
    for mode in modes:
        run_search(memory, mode, "warm up", today)
        forget_query_vectors(memory)  # each mode embeds its queries afresh, as a new question would be
        started = time.perf_counter()
        table, timing = evaluate(memory, questions, today, mode)
        timing["total_s"] = round(time.perf_counter() - started, 1)
        results["modes"][mode] = {"scores": table, "latency": timing}
    memory.close()
    emit(results, summary(results), args.json)


if __name__ == "__main__":
    main()
