"""LoCoMo retrieval benchmark: session recall@5/@10, MRR, evidence-line coverage, latency.

Reads ``../shared/data/locomo/locomo10.json`` (CC BY-NC 4.0, evaluation only: it is read in
place, never copied into the repository), writes one markdown file per session into a
workspace, indexes it with the default configuration and runs every question.

A question's relevant sessions are those its evidence ids (``D3:5`` = session 3, turn 5)
name. All sessions of all ten conversations share one workspace, so a query competes with
every other conversation. Hits are mapped to sessions in rank order (first occurrence
counts). Recall@k is the share of a question's relevant sessions among the first k
distinct sessions; MRR uses the first relevant session within the default result count. \
Evidence coverage is the share of
evidence turns whose line lies inside the line range of one of the top-5 hits.

    python bench/locomo.py                       # default configuration, hybrid/bm25/vector
    python bench/locomo.py --variant decay=off --variant mmr=off
    python bench/locomo.py --fresh               # delete the workspace first (cold index time)
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
import statistics
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mcp_memory.config import load_settings
from mcp_memory.core import updates
from mcp_memory.memory import Memory

updates_window = updates.SEARCH_WINDOW  # the product's; the variant updates=off sets 0

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "locomo" / "locomo10.json"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
_DATE = re.compile(r"(\d{1,2}) (\w+),? (\d{4})")


@dataclass
class Question:
    text: str
    category: int
    sessions: set[str]  # relevant session files (workspace-relative paths)
    lines: set[tuple[str, int]]  # (path, line) of each evidence turn


@dataclass
class Scores:
    recall5: list[float] = field(default_factory=list)
    recall10: list[float] = field(default_factory=list)
    hit5: list[float] = field(default_factory=list)
    rr: list[float] = field(default_factory=list)
    coverage: list[float] = field(default_factory=list)
    lines_per_hit: list[float] = field(default_factory=list)

    def row(self) -> dict[str, float]:
        mean = lambda xs: round(statistics.fmean(xs), 3) if xs else float("nan")  # noqa: E731
        return {
            "n": len(self.rr), "R@5": mean(self.recall5), "R@10": mean(self.recall10), "hit@5": mean(self.hit5),
            "MRR": mean(self.rr), "evidence_cov@5": mean(self.coverage), "lines/hit": mean(self.lines_per_hit),
        }


def session_date(raw: str) -> dt.date:
    match = _DATE.search(raw)
    if not match:
        raise ValueError(f"unparsable session date {raw!r}")
    return dt.datetime.strptime(f"{match[1]} {match[2]} {match[3]}", "%d %B %Y").date()


def write_wanted(folder: Path, wanted: dict[Path, str]) -> None:
    """Make ``folder``'s markdown files exactly ``wanted`` (path: text), rewriting only what differs,
    so a re-run keeps the index (and its embeddings) warm."""
    for existing in folder.rglob("*.md") if folder.exists() else []:
        if existing not in wanted:
            existing.unlink()
    for path, text in wanted.items():
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")


def write_workspace(data: list[dict], workspace: Path) -> list[Question]:
    """One file per session: a dated header, then one line per turn. Returns the questions."""
    memory_dir = workspace / "memory" / "locomo"
    wanted: dict[Path, str] = {}
    turn_line: dict[tuple[int, str], tuple[str, int]] = {}
    session_path: dict[tuple[int, int], str] = {}
    for ci, sample in enumerate(data):
        conv = sample["conversation"]
        n = 1
        while f"session_{n}" in conv:
            raw_date = conv[f"session_{n}_date_time"]
            date = session_date(raw_date)
            rel = f"memory/locomo/conv-{ci:02d}/{date.isoformat()}-session-{n:02d}.md"
            lines = [f"# Conversation {ci + 1}, session {n}: {conv['speaker_a']} and {conv['speaker_b']}",
                     "", f"Date: {raw_date}", ""]
            for turn in conv[f"session_{n}"]:
                text = turn["text"].replace("\n", " ")
                if turn.get("blip_caption"):
                    text += f" [shares a photo: {turn['blip_caption']}]"
                lines.append(f"- **{turn['speaker']}:** {text}")
                turn_line[(ci, turn["dia_id"])] = (rel, len(lines))
            session_path[(ci, n)] = rel
            wanted[workspace / rel] = "\n".join(lines) + "\n"
            n += 1
    write_wanted(memory_dir, wanted)

    questions: list[Question] = []
    for ci, sample in enumerate(data):
        for qa in sample["qa"]:
            sessions, lines = set(), set()
            for evidence in qa.get("evidence", []):
                for dia in re.findall(r"D(\d+):(\d+)", evidence):
                    dia_id = f"D{dia[0]}:{dia[1]}"
                    if (ci, dia_id) in turn_line:
                        lines.add(turn_line[(ci, dia_id)])
                        sessions.add(session_path[(ci, int(dia[0]))])
            if sessions:
                questions.append(Question(qa["question"], int(qa["category"]), sessions, lines))
    return questions


def run_search(memory: Memory, mode: str, query: str, today: dt.date, max_results: int | None = None) -> list:
    """The hits of one search mode: default (memory_search), precise or deep."""
    if mode == "precise":
        return memory.precise_search(query, max_results=max_results, today=today).hits
    if mode == "deep":
        return memory.deep_search(query, max_results=max_results, today=today).hits
    return memory.search(query, max_results=max_results, today=today)


def score_question(memory: Memory, mode: str, text: str, sessions: set[str], lines: set[tuple[str, int]],
                   today: dt.date, into: list[Scores]) -> float:
    """Runs one question in one mode and adds its figures to each of ``into``.

    Returns the latency (ms) of the search at the default result count."""
    # The default result count, as a user gets it, for the @5 figures and MRR; a longer
    # list for R@10 (fusion normalises over the candidate pool, which grows with k). Deep
    # search is judged on its own first 10 hits.
    started = time.perf_counter()
    hits = run_search(memory, mode, text, today)
    latency = (time.perf_counter() - started) * 1000
    ranked = _distinct_paths(hits)
    ranked10 = _distinct_paths(run_search(memory, mode, text, today, 10 if mode == "deep" else 30))
    first = next((i for i, s in enumerate(ranked) if s in sessions), None)
    top5 = hits[:5]
    covered = sum(1 for path, line in lines if any(h.path == path and h.start_line <= line <= h.end_line for h in top5))
    for s in into:
        s.recall5.append(len(sessions & set(ranked[:5])) / len(sessions))
        s.recall10.append(len(sessions & set(ranked10[:10])) / len(sessions))
        s.hit5.append(1.0 if first is not None and first < 5 else 0.0)
        s.rr.append(1.0 / (first + 1) if first is not None else 0.0)
        s.coverage.append(covered / len(lines))
        s.lines_per_hit.extend(h.end_line - h.start_line + 1 for h in top5)
    return latency


def evaluate(memory: Memory, questions: list[Question], today: dt.date, mode: str = "default") -> tuple[dict, dict]:
    per_cat: dict[str, Scores] = defaultdict(Scores)
    latencies: list[float] = []
    for q in questions:
        into = [per_cat[CATEGORIES[q.category]], per_cat["overall"]]
        latencies.append(score_question(memory, mode, q.text, q.sessions, q.lines, today, into))
    latencies.sort()
    timing = {
        "p50_ms": round(latencies[len(latencies) // 2], 2),
        "p95_ms": round(latencies[int(len(latencies) * 0.95)], 2),
    }
    return {k: v.row() for k, v in per_cat.items()}, timing


def _distinct_paths(hits: list) -> list[str]:
    ranked: list[str] = []
    for hit in hits:
        if hit.path not in ranked:
            ranked.append(hit.path)
    return ranked


def apply_variant(memory: Memory, variant: str, default_embedder: object) -> str:
    """Modes and setting tweaks: hybrid, bm25, vector, precise, deep, decay=off, mmr=off, weights=0.3/0.7,
    updates=off, ...

    Returns the search mode the variant names (default, precise or deep)."""
    s = memory.settings.search
    memory.engine.searcher.embedder = default_embedder
    updates.SEARCH_WINDOW = updates_window
    mode = "default"
    for part in variant.split(","):
        key, _, value = part.partition("=")
        if key == "hybrid":
            continue
        if key in ("precise", "deep"):
            mode = key
            continue
        if key == "bm25":
            memory.engine.searcher.embedder = None
        elif key == "vector":
            s.text_weight, s.vector_weight = 0.0, 1.0
        elif key == "decay":
            s.decay_enabled = value == "on"
        elif key == "half_life":
            s.half_life_days = float(value)
        elif key == "mmr":
            s.mmr_enabled = value == "on"
        elif key == "lambda":
            s.mmr_lambda = float(value)
        elif key == "weights":
            vw, tw = value.split("/")
            s.vector_weight, s.text_weight = float(vw), float(tw)
        elif key == "candidates":
            s.candidate_multiplier = int(value)
        elif key == "updates":  # changed facts among the first hits (core/updates.py): on (default) or off
            updates.SEARCH_WINDOW = updates_window if value == "on" else 0
        else:
            raise SystemExit(f"unknown variant part {part!r}")
    return mode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--workspace", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "mcp-memory-locomo")
    parser.add_argument("--fresh", action="store_true", help="delete the workspace and its index first")
    parser.add_argument("--embedder", default=None, help="embedding provider (default: the configured default)")
    parser.add_argument("--today", default=None, help="reference date for temporal decay (default: today)")
    parser.add_argument("--variant", action="append", default=None,
                        help="hybrid | bm25 | vector | precise | deep | decay=on|off | mmr=on|off | weights=V/T | "
                             "lambda=X | updates=on|off | ... (comma-join to combine; default: hybrid, bm25, vector)")
    parser.add_argument("--json", type=Path, default=None, help="also write all figures to this file")
    args = parser.parse_args()

    data = json.loads(args.data.read_text(encoding="utf-8"))
    if args.fresh and args.workspace.exists():
        shutil.rmtree(args.workspace)
    questions = write_workspace(data, args.workspace)
    overrides = {"embedding.provider": args.embedder} if args.embedder else {}
    settings = load_settings(args.workspace, overrides=overrides, environ={})
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
    baseline = (memory.settings.search.__dict__.copy(), memory.engine.searcher.embedder)
    results = {"chunks": status["chunks"], "files": status["files"], "embedder": status["embedder"],
               "index_seconds": round(index_s, 1), "embedded_now": embedded, "today": today.isoformat(),
               "questions": len(questions), "variants": {}}
    for variant in args.variant or ["hybrid", "bm25", "vector"]:
        memory.settings.search.__dict__.update(baseline[0])
        mode = apply_variant(memory, variant, baseline[1])
        run_search(memory, mode, "warm up", today)
        table, timing = evaluate(memory, questions, today, mode)
        results["variants"][variant] = {"scores": table, "latency": timing}
        overall = table["overall"]
        print(f"{variant:32s} R@5 {overall['R@5']:.3f}  R@10 {overall['R@10']:.3f}  MRR {overall['MRR']:.3f}  "
              f"hit@5 {overall['hit@5']:.3f}  cov@5 {overall['evidence_cov@5']:.3f}  "
              f"lines/hit {overall['lines/hit']:.1f}  p50 {timing['p50_ms']}ms p95 {timing['p95_ms']}ms",
              file=sys.stderr)
        for cat in CATEGORIES.values():
            if cat in table:
                row = table[cat]
                print(f"    {cat:12s} n={row['n']:4d}  R@5 {row['R@5']:.3f}  R@10 {row['R@10']:.3f}  "
                      f"MRR {row['MRR']:.3f}  cov@5 {row['evidence_cov@5']:.3f}", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    print(json.dumps(results))


if __name__ == "__main__":
    main()
