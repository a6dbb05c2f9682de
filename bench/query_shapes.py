"""Queries of every shape, in every search mode, on a workspace of the size you name: latency, never an error.

A client may send anything as a query: one character, a pasted transcript, 20,000 characters with
no space, mixed scripts, a language none of the notes is in, the whole conversation so far. For
each shape this script sends seven distinct queries (so that no cache answers a later one) to the
default, precise and deep search of a ``Memory`` opened as a server opens it (the configured
embedder, line vectors on), and reports the first call and the p50 of the seven, the query
embedding included, with the default search of a short LoCoMo question as the baseline of the
same run. Any exception is counted and printed: there must be none.

The workspace is the caller's: by default the 10,000-chunk one that ``bench/speed.py --sizes
10000`` builds (LoCoMo turns as topic and daily files). LoCoMo (CC BY-NC 4.0) is read in place for
the text of the shapes, never copied into the repository. ``--fill-lines`` first embeds the line
vectors the precise stage reads (the newest lines, as the background fill does).

    python bench/speed.py --sizes 10000 --skip-indexing --skip-probes --skip-resync --queries 30
    python bench/query_shapes.py --workspace /tmp/mcp-memory-speed/ws-10000 --fill-lines
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.machine import emit, loadavg, machine
from mcp_memory.config import load_settings
from mcp_memory.memory import Memory

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "locomo" / "locomo10.json"
VARIANTS = 7
TARGET_PRECISE_P50_MS = 60.0  # at 10k chunks, whatever the shape
MIXED = ["我下周要去", "the dentist", "à Paris", "в понедельник", "🦷✈️", "и", "会议", "rendez-vous", "kernel",
         "周三", "📅", "avec", "review"]
ELSEWHERE = [  # languages none of the notes is in
    "Milloin hammaslääkärin vastaanotto on seuraavan kerran?", "Μπορείς να μου θυμίσεις τι είπαμε για το ταξίδι;",
    "ตอนนี้ใครเป็นคนดูแลเรื่องการปล่อยเวอร์ชันใหม่", "Kada je sljedeći sastanak s timom za mobilne aplikacije?",
    "Wie heißt der Zahnarzt, zu dem ich normalerweise gehe?", "Hangi gün spor salonuna gitmeyi planlamıştım?",
    "Mikä on kotini wifi-verkon nimi ja kuka sen asensi?",
]


def load_turns(path: Path) -> tuple[list[tuple[str, str]], list[str]]:
    """(speaker, text) of every LoCoMo turn, and the questions."""
    data = json.loads(path.read_text(encoding="utf-8"))
    turns, questions = [], []
    for sample in data:
        conv = sample["conversation"]
        n = 1
        while f"session_{n}" in conv:
            turns.extend((t["speaker"], " ".join(t["text"].split())) for t in conv[f"session_{n}"])
            n += 1
        questions.extend(str(qa["question"]) for qa in sample["qa"])
    return turns, questions


def shapes(turns: list[tuple[str, str]], questions: list[str], rng: random.Random) -> dict[str, list[str]]:
    """Seven distinct queries of each shape."""
    def run_of_turns(chars: int, labelled: bool) -> str:
        start = rng.randrange(len(turns) - 2000)
        out, size = [], 0
        for speaker, text in turns[start:]:
            line = f"{speaker}: {text}" if labelled else text
            out.append(line)
            size += len(line) + 1
            if size >= chars:
                break
        return ("\n" if labelled else " ").join(out)[:chars]

    def conversation() -> str:
        start = rng.randrange(len(turns) - 20)
        lines = [f"{s}: {t}" for s, t in turns[start : start + rng.randint(3, 6)]]
        return "\n".join([*lines, f"{turns[start][0]}: {rng.choice(questions)}"])

    letters = "abcdefghijklmnopqrstuvwxyz"
    return {
        "a short question (baseline)": rng.sample(questions, VARIANTS),
        "one character": ["a", "x", "7", "?", "我", "é", "Z"],
        "20,000 characters of words": [run_of_turns(20_000, False) for _ in range(VARIANTS)],
        "20,000 characters, no space": [letters[i] * 10_000 + letters[i + 1] * 10_000 for i in range(VARIANTS)],
        "a pasted transcript, 23,000 characters": [run_of_turns(23_000, True) for _ in range(VARIANTS)],
        "mixed scripts": [" ".join(rng.sample(MIXED, 6)) for _ in range(VARIANTS)],
        "a language no note is in": ELSEWHERE[:VARIANTS],
        "the conversation so far (3-6 turns and a question)": [conversation() for _ in range(VARIANTS)],
    }


def run(memory: Memory, mode: str) -> Callable[[str], Any]:
    if mode == "default":
        return memory.search
    if mode == "precise":
        return memory.precise_search
    return memory.deep_search


def measure(memory: Memory, queries: dict[str, list[str]]) -> tuple[dict[str, dict[str, Any]], list[str]]:
    table: dict[str, dict[str, Any]] = {}
    errors: list[str] = []
    for shape, texts in queries.items():
        table[shape] = {"chars": [len(t) for t in texts]}
        for mode in ("default", "precise", "deep"):
            search = run(memory, mode)
            times = []
            for text in texts:
                started = time.perf_counter()
                try:
                    search(text)
                except Exception:  # noqa: BLE001 - counted: the point is that there are none
                    errors.append(f"{mode} / {shape} / {text[:40]!r}: {traceback.format_exc(limit=2)}")
                times.append((time.perf_counter() - started) * 1000)
            table[shape][mode] = {"first_ms": round(times[0], 1), "p50_ms": round(statistics.median(times), 1),
                                  "max_ms": round(max(times), 1)}
    return table, errors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workspace", type=Path, default=Path("/tmp/mcp-memory-speed/ws-10000"))
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--fill-lines", action="store_true", help="embed the line vectors first (minutes)")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    if not args.workspace.is_dir():
        raise SystemExit(f"no workspace at {args.workspace}: build one with bench/speed.py --sizes 10000 first")
    turns, questions = load_turns(args.data)
    queries = shapes(turns, questions, random.Random(args.seed))

    memory = Memory(load_settings(args.workspace, environ={})).open()
    started = time.perf_counter()
    memory.sync()
    sync_s = time.perf_counter() - started
    filled = None
    if args.fill_lines:
        started = time.perf_counter()
        filled = {"lines": memory.fill_line_vectors(), "s": round(time.perf_counter() - started, 1)}
    status = memory.status().to_dict()
    for text in questions[:5]:  # warm: the models loaded, the snapshot read
        memory.search(text)
        memory.precise_search(text)
    load_before = loadavg()
    table, errors = measure(memory, queries)
    memory.close()
    results = {"machine": machine(), "load": [load_before, loadavg()], "workspace": str(args.workspace),
               "chunks": status["chunks"], "files": status["files"], "line_vectors": status.get("line_vectors"),
               "sync_s": round(sync_s, 1), "filled": filled, "shapes": table, "errors": errors}
    emit(results, summary(results), args.json)


def summary(r: dict[str, Any]) -> str:
    lines = [f"{r['chunks']} chunks in {r['files']} files, line vectors {r['line_vectors']}, load {r['load']}",
             "| shape (characters) | default p50 (first) | precise p50 (first) | deep p50 (first) |",
             "| --- | --- | --- | --- |"]
    worst = 0.0
    for shape, row in r["shapes"].items():
        chars = row["chars"]
        size = f"{min(chars):,}-{max(chars):,}" if min(chars) != max(chars) else f"{chars[0]:,}"
        cells = [f"{row[m]['p50_ms']} ({row[m]['first_ms']}) ms" for m in ("default", "precise", "deep")]
        lines.append(f"| {shape} ({size}) | " + " | ".join(cells) + " |")
        worst = max(worst, row["precise"]["p50_ms"])
    verdict = "met" if worst <= TARGET_PRECISE_P50_MS else "NOT met"
    lines.append(f"precise p50 of the slowest shape {worst} ms: target <= {TARGET_PRECISE_P50_MS} ms {verdict}; "
                 f"errors: {len(r['errors'])}")
    lines.extend(r["errors"])
    return "\n".join(lines)


if __name__ == "__main__":
    main()
