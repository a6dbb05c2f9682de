"""Auto-recall gate: does recall bring the right memories, and stay silent otherwise?

``bench/data/recall_cases.json`` holds 90 captured-style memories (English and Chinese) and
180 prompts: 100 that a good assistant would answer better with 1-3 of the memories (mostly
indirect: "help me set up a new Node.js project" needs "The user prefers pnpm"; 25 across
languages) and 80 that no memory bears on (20 of them share a word with a memory).

Memories are written as capture writes them (dated bullets under a heading in the daily file
of their day), indexed with each embedder, and every prompt is searched once. The recall gate
(keyword coverage or cosine floor, at most 5 items, 2,000 characters) is then applied for a
sweep of cosine floors. Reported per floor:

* recall: share of the relevant memories that reach the block (prompts with relevant memories);
* hit rate: share of those prompts whose block holds at least one relevant memory;
* silence: share of the no-memory prompts that get no block at all;
* precision: share of injected memories that are relevant (all prompts);
* the same for keyword-only recall (what a hook does with no server running).

    python bench/recall.py [--embedders local,e5]
"""

from __future__ import annotations

import argparse
import datetime as dt
import html
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.machine import emit, loadavg, machine
from mcp_memory.config import load_settings
from mcp_memory.core.recall import fit_to_budget, is_relevant
from mcp_memory.memory import Memory

DATA = Path(__file__).resolve().parent / "data" / "recall_cases.json"
FLOORS = {"local": [0.18, 0.20, 0.22, 0.25], "e5": [0.84, 0.86, 0.88]}
COVERAGES = [0.3, 0.5]
HARD = range(101, 121)  # p101-p120 share a word with some memory but need none


def write_workspace(root: Path, memories: list[dict]) -> None:
    (root / "memory").mkdir(parents=True)
    by_day: dict[str, list[dict]] = {}
    for m in memories:
        by_day.setdefault(m["day"], []).append(m)
    for day, items in by_day.items():
        lines = [f"# {day}", "", "## 10:00 captured", ""]
        lines += [f"- [{m['category']}] {m['text']}" for m in items]
        (root / "memory" / f"{day}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


def injected(hits: list, memories: list[dict]) -> set[str]:
    text = "\n".join(h.snippet for h in hits)
    return {m["id"] for m in memories if m["text"] in text}


def score(prompts: list[dict], memories: list[dict], hits_by_prompt: dict, floor: float | None,
          coverage: float, langs: dict[str, str], gate: bool = True) -> dict:
    rows = {"all": [], "cross": [], "hard": []}
    for p in prompts:
        if gate:
            gated = [h for h in hits_by_prompt[p["id"]] if is_relevant(h, floor, coverage)]
            shown = injected(fit_to_budget(gated[:5], 2000), memories)
        else:
            shown = injected(hits_by_prompt[p["id"]], memories)
        rows["all"].append((p, shown))
        if p["relevant"] and any(langs[m] != p["lang"] for m in p["relevant"]):
            rows["cross"].append((p, shown))
        if int(p["id"][1:]) in HARD:
            rows["hard"].append((p, shown))
    with_mem = [(p, s) for p, s in rows["all"] if p["relevant"]]
    without = [(p, s) for p, s in rows["all"] if not p["relevant"]]
    total_shown = sum(len(s) for _, s in rows["all"])
    relevant_shown = sum(len(s & set(p["relevant"])) for p, s in rows["all"])
    return {
        "recall": round(sum(len(s & set(p["relevant"])) / len(p["relevant"]) for p, s in with_mem) / len(with_mem), 3),
        "hit_rate": round(sum(bool(s & set(p["relevant"])) for p, s in with_mem) / len(with_mem), 3),
        "cross_language_hit_rate": round(sum(bool(s & set(p["relevant"])) for p, s in rows["cross"])
                                         / max(1, len(rows["cross"])), 3),
        "silence": round(sum(not s for _, s in without) / len(without), 3),
        "silence_hard": round(sum(not s for _, s in rows["hard"]) / max(1, len(rows["hard"])), 3),
        "precision": round(relevant_shown / total_shown, 3) if total_shown else None,
        "injected_per_prompt": round(total_shown / len(rows["all"]), 2),
    }


def run(embedder: str, cases: dict, floors: list[float], coverages: list[float]) -> dict:
    memories, prompts = cases["memories"], cases["prompts"]
    langs = {m["id"]: m["lang"] for m in memories}
    out: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "ws"
        write_workspace(workspace, memories)
        settings = load_settings(workspace, overrides={"embedding.provider": embedder})
        with Memory(settings) as memory:
            memory.index()
            out["default_floor"] = memory.engine.relevance_floor()
            hits = {p["id"]: memory.search(p["text"], max_results=10, min_score=0.0) for p in prompts}
            keyword_hits = {p["id"]: memory.recaller._keyword_hits(p["text"], 10, 0.0) for p in prompts}
            out["keywords_only"] = score(prompts, memories, keyword_hits, None, 0.3, langs)
            out["ungated"] = score(prompts, memories, hits, -1.0, 0.3, langs)
            out["sweep"] = {}
            for coverage in coverages:
                for floor in floors:
                    name = f"cov {coverage:.1f} floor {floor:.2f}"
                    later = score(prompts, memories, hits, floor, coverage, langs)
                    memory.settings.recall.similarity_floor = floor
                    memory.settings.recall.min_keyword_coverage = coverage
                    first = score_blocks(prompts, memories, {
                        p["id"]: memory.recall(p["text"], session_key=f"{name}-{p['id']}") for p in prompts}, langs)
                    out["sweep"][name] = {"later_turns": later, "first_turn": first}
    return out


def score_blocks(prompts: list[dict], memories: list[dict], blocks: dict[str, str], langs: dict[str, str]) -> dict:
    """The same figures from real recall blocks (first turn of a session: primer included)."""
    class _Shown:
        def __init__(self, text: str):
            self.snippet = text

    hits = {pid: [_Shown(html.unescape(block))] if block else [] for pid, block in blocks.items()}
    return score(prompts, memories, hits, -1.0, 0.0, langs, gate=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--embedders", default="local")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    cases = json.loads(DATA.read_text(encoding="utf-8"))
    results: dict = {"date": dt.date.today().isoformat(), "load_before": loadavg(), "machine": machine()}
    lines = []
    for embedder in args.embedders.split(","):
        figures = results[embedder] = run(embedder, cases, FLOORS.get(embedder, FLOORS["local"]), COVERAGES)
        lines.append(f"{embedder} (default floor {figures['default_floor']}):")
        lines.append("  gate                    turn   recall  hit   x-lang  silence  hard-silence  "
                     "precision  per-prompt")
        rows = [(name, turn, f) for name, both in figures["sweep"].items() for turn, f in both.items()]
        rows += [("keywords only", "later_turns", figures["keywords_only"]), ("ungated top 5", "later_turns",
                                                                                figures["ungated"])]
        for name, turn, f in rows:
            lines.append(f"  {name:23} {turn.split('_')[0]:6} {f['recall']:<7} {f['hit_rate']:<5} "
                         f"{f['cross_language_hit_rate']:<7} {f['silence']:<8} {f['silence_hard']:<13} "
                         f"{f['precision']}  {f['injected_per_prompt']}")
    results["load_after"] = loadavg()
    emit(results, "\n".join(lines), args.json)


if __name__ == "__main__":
    main()
