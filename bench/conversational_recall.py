"""Auto-recall on conversational sets: does the gate bring the memory a turn needs, and only it?

A client's prompt hook sees the user's latest turn, not the question a benchmark asks. The
queries of ``bench/conversational.py`` (LoCoMo, the bilingual dialogues, our own conversations:
one short memory per file) are built the same way here, and the prompt is their last turn,
without its speaker. ``Memory.recall_hits`` answers it as the hook's recall does (no session, so
nothing is held back as already shown). The file the conversation's own turns come from is not
counted, as in ``bench/conversational.py``. Per group (source, variant, language, split):

* hit: share of prompts whose block holds at least one relevant memory;
* evidence hit: share of prompts whose block holds an evidence line (the turn that states the
  answer), a stricter hit: a relevant file's other turns do not count;
* precision: share of the injected memories that are relevant (over every prompt);
* precision by characters: share of the injected characters that come from relevant memories
  (a turn shown with the turns that answer it is one item: this share does not move when
  neighbouring items merge);
* items: memories injected per prompt, and characters per prompt;
* silence: share of unrelated prompts that get no block at all. The unrelated prompts are the
  80 of ``bench/data/recall_cases.json`` that no memory of that set bears on (a poem about
  autumn, a regex, a unit conversion); none is about the people or facts of these sets.

    python bench/conversational_recall.py --source ours
    python bench/conversational_recall.py --source dialogue --split dev
    python bench/conversational_recall.py --source locomo --workspace /tmp/conv-locomo --sample 200
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import conversational as conv
from bench import dialogue as dialogue_bench
from bench import locomo as locomo_bench
from bench.machine import emit, loadavg, machine
from mcp_memory.config import load_settings
from mcp_memory.memory import Memory

UNRELATED = ROOT / "bench" / "data" / "recall_cases.json"
_SPEAKER = re.compile(r"^[^:：\n]{1,40}[:：]\s*")


@dataclass
class RecallScores:
    prompts: int = 0
    hits: int = 0  # prompts with a relevant memory in the block
    line_hits: int = 0  # prompts with a memory in the block that holds an evidence line
    injected: int = 0
    relevant: int = 0
    chars: int = 0  # characters of the memories injected
    relevant_chars: int = 0

    def row(self) -> dict[str, float | int]:
        return {"prompts": self.prompts, "hit": round(self.hits / self.prompts, 3) if self.prompts else 0.0,
                "line_hit": round(self.line_hits / self.prompts, 3) if self.prompts else 0.0,
                "precision": round(self.relevant / self.injected, 3) if self.injected else 0.0,
                "char_precision": round(self.relevant_chars / self.chars, 3) if self.chars else 0.0,
                "items": round(self.injected / self.prompts, 2) if self.prompts else 0.0,
                "chars": round(self.chars / self.prompts) if self.prompts else 0}


def last_turn(text: str) -> str:
    """The conversation's last turn without its speaker's name: what a prompt hook is given."""
    line = text.rstrip().rsplit("\n", 1)[-1]
    return _SPEAKER.sub("", line, count=1).strip()


def queries_of(source: str, workspace: Path, data: Path | None, seed: int, sample: int | None) -> list[conv.Query]:
    if source == "locomo":
        return conv.locomo_queries(workspace, data or locomo_bench.DEFAULT_DATA, seed, sample)
    if source == "facts":
        return conv.facts_queries(workspace, data or locomo_bench.DEFAULT_DATA, seed, sample)
    if source == "dialogue":
        return conv.dialogue_queries(workspace, data or dialogue_bench.DEFAULT_DATA, seed)
    return conv.ours_queries(workspace, data or conv.OURS)


def unrelated_prompts() -> list[str]:
    cases = json.loads(UNRELATED.read_text(encoding="utf-8"))
    return [p["text"] for p in cases["prompts"] if not p["relevant"]]


def evaluate(memory: Memory, queries: list[conv.Query], unrelated: list[str]) -> dict:
    table: dict[str, RecallScores] = defaultdict(RecallScores)
    latencies = []
    for q in queries:
        started = time.perf_counter()
        shown = [h for h in memory.recall_hits(last_turn(q.text)) if h.path not in q.skip]
        latencies.append((time.perf_counter() - started) * 1000)
        right = sum(1 for h in shown if h.path in q.files)
        for key in ("overall", q.group, f"{q.group}/{q.split}", f"split:{q.split}"):
            s = table[key]
            s.prompts += 1
            s.hits += right > 0
            s.line_hits += any(h.path == path and h.start_line <= line <= h.end_line
                               for h in shown for path, line in q.lines)
            s.injected += len(shown)
            s.relevant += right
            s.chars += sum(len(h.snippet) for h in shown)
            s.relevant_chars += sum(len(h.snippet) for h in shown if h.path in q.files)
    silent = sum(1 for prompt in unrelated if not memory.recall_hits(prompt))
    latencies.sort()
    return {"scores": {k: v.row() for k, v in sorted(table.items())},
            "silence": round(silent / len(unrelated), 3), "unrelated": len(unrelated),
            "p50_ms": round(latencies[len(latencies) // 2], 2) if latencies else None}


def summary(source: str, result: dict) -> str:
    lines = [f"auto-recall on {source} (prompt: the last turn)", "",
             "| group | prompts | hit | evidence hit | precision | precision by characters | items per prompt "
             "| characters per prompt |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for group, row in result["scores"].items():
        lines.append(f"| {group} | {row['prompts']} | {row['hit']} | {row['line_hit']} | {row['precision']} "
                     f"| {row['char_precision']} "
                     f"| {row['items']} | {row['chars']} |")
    lines.append(f"\nsilence on {result['unrelated']} unrelated prompts: {result['silence']}; "
                 f"recall p50 {result['p50_ms']} ms")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", choices=("locomo", "facts", "dialogue", "ours"), default="ours")
    parser.add_argument("--data", type=Path, default=None, help="the source's data file")
    parser.add_argument("--workspace", type=Path, default=None)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--sample", type=int, default=None, help="LoCoMo: this many questions (both variants)")
    parser.add_argument("--split", choices=("dev", "test", "all"), default="all")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    workspace = args.workspace or Path(os.environ.get("TMPDIR", "/tmp")) / f"mcp-memory-conv-{args.source}"
    queries = queries_of(args.source, workspace, args.data, args.seed, args.sample)
    if args.split != "all":
        queries = [q for q in queries if q.split == args.split]
    memory = Memory(load_settings(workspace, environ={})).open()
    try:
        memory.sync()
        memory.backfill()
        memory.recall_hits("warm up")
        result = evaluate(memory, queries, unrelated_prompts())
    finally:
        memory.close()
    out = {"machine": machine(), "load": loadavg(), "source": args.source, "split": args.split,
           "seed": args.seed, "sample": args.sample, **result}
    emit(out, summary(args.source, out), args.json)


if __name__ == "__main__":
    main()
