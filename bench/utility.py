"""Utility feedback on LoCoMo: does rewarding and penalizing memories teach search?

A simulated agent asks every other question (the "taught" half) in one search mode. Each hit
from a session the question's evidence names is rewarded; each hit from another session that
ranks above the first relevant one is penalized (at most ``--max-penalized`` per question).
Then both halves are asked again: the taught half should gain (MRR +0.08 is the target), the
other half, never rewarded, should not lose (at most -0.005).

MRR, recall and the workspace are those of ``bench/locomo.py`` (same files, same scoring:
distinct sessions among the hits at the default result count). The utility file is emptied
before each mode, so modes do not teach each other.

    python bench/utility.py                                  # default and precise modes
    python bench/utility.py --mode default --weight 0.2 --weight 0.3 --weight 0.5
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from locomo import DEFAULT_DATA, Question, run_search, write_workspace
from mcp_memory.config import load_settings
from mcp_memory.memory import Memory


def first_relevant(memory: Memory, mode: str, question: Question, today: dt.date) -> int | None:
    """Rank (0-based) of the first relevant session among the distinct sessions of the hits."""
    seen: list[str] = []
    for hit in run_search(memory, mode, question.text, today):
        if hit.path not in seen:
            seen.append(hit.path)
    return next((i for i, path in enumerate(seen) if path in question.sessions), None)


def mrr(memory: Memory, mode: str, questions: list[Question], today: dt.date) -> float:
    ranks = [first_relevant(memory, mode, q, today) for q in questions]
    return statistics.fmean(1.0 / (r + 1) if r is not None else 0.0 for r in ranks)


def teach(memory: Memory, mode: str, questions: list[Question], today: dt.date, amount: float,
          max_penalized: int) -> tuple[int, int]:
    """Reward relevant hits and penalize wrong hits ranked above them; returns (rewards, penalties)."""
    rewarded: set[str] = set()
    penalized: set[str] = set()
    for question in questions:
        hits = run_search(memory, mode, question.text, today)
        relevant_seen = False
        wrong = 0
        for hit in hits:
            if not hit.id:
                continue
            if hit.path in question.sessions:
                relevant_seen = True
                memory.feedback.reward(hit.id, amount)
                rewarded.add(hit.id)
            elif not relevant_seen and wrong < max_penalized:
                wrong += 1
                memory.feedback.penalize(hit.id, amount)
                penalized.add(hit.id)
    return len(rewarded), len(penalized)


def run_mode(memory: Memory, mode: str, weight: float, questions: list[Question], today: dt.date,
             amount: float, max_penalized: int) -> dict[str, float]:
    memory.utility.path.unlink(missing_ok=True)
    memory.utility.weight = weight
    taught, other = questions[0::2], questions[1::2]
    before_taught, before_other = mrr(memory, mode, taught, today), mrr(memory, mode, other, today)
    started = time.perf_counter()
    rewards, penalties = teach(memory, mode, taught, today, amount, max_penalized)
    teach_s = time.perf_counter() - started
    after_taught, after_other = mrr(memory, mode, taught, today), mrr(memory, mode, other, today)
    memory.utility.path.unlink(missing_ok=True)
    return {
        "weight": weight, "taught_before": round(before_taught, 4), "taught_after": round(after_taught, 4),
        "taught_gain": round(after_taught - before_taught, 4), "other_before": round(before_other, 4),
        "other_after": round(after_other, 4), "other_change": round(after_other - before_other, 4),
        "memories_rewarded": rewards, "memories_penalized": penalties, "teach_seconds": round(teach_s, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--workspace", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "mcp-memory-locomo")
    parser.add_argument("--mode", action="append", default=None, help="default | precise | deep (repeatable)")
    parser.add_argument("--weight", action="append", type=float, default=None,
                        help="utility weight to try (repeatable; default: the configured one)")
    parser.add_argument("--amount", type=float, default=0.2, help="reward and penalty scalar")
    parser.add_argument("--max-penalized", type=int, default=2)
    parser.add_argument("--today", default="2026-11-26")
    args = parser.parse_args()

    data = json.loads(args.data.read_text(encoding="utf-8"))
    questions = write_workspace(data, args.workspace)
    memory = Memory(load_settings(args.workspace, environ={})).open()
    memory.index()
    today = dt.date.fromisoformat(args.today)
    weights = args.weight or [memory.settings.utility.weight]
    results = []
    for mode in args.mode or ["default", "precise"]:
        for weight in weights:
            row = {"mode": mode, **run_mode(memory, mode, weight, questions, today, args.amount, args.max_penalized)}
            results.append(row)
            print(f"{mode:8s} weight {weight:.2f}  taught MRR {row['taught_before']:.3f} -> {row['taught_after']:.3f} "
                  f"({row['taught_gain']:+.3f})  other {row['other_before']:.3f} -> {row['other_after']:.3f} "
                  f"({row['other_change']:+.4f})  rewarded {row['memories_rewarded']}, penalized "
                  f"{row['memories_penalized']}", file=sys.stderr)
    print(json.dumps({"questions": len(questions), "amount": args.amount, "results": results}))


if __name__ == "__main__":
    main()
