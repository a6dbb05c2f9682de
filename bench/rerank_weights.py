"""The local reranker's weights, chosen across sets: leave one set out, choose on the others, score it.

``search/rerank/local.py`` blends five kinds of evidence with round weights: the first stage's
fused score, the best two-line window's share of the query's words, adjacent word pairs, dates
and the closest line by the line model. This script reads every query of several sets once,
keeps each candidate's evidence, then scores a grid of weights without searching again:

* ``locomo``: LoCoMo's questions (``bench/locomo.py``; dev = even conversations);
* ``locomo-conv``: the same questions asked at the end of a later conversation
  (``bench/conversational.py --source locomo``, 250 questions, both variants);
* ``dialogue``: the bilingual questions (``bench/dialogue.py``; dev = conversations 1 and 2 of each
  language, as ``bench/conversational.py`` splits them);
* ``dialogue-conv``: those questions at the end of a conversation (``--source dialogue``);
* ``ours``: our one-memory-per-file conversations (``--source ours``).

For each grid point: precise R@5 and MRR per set (the candidates in the blended order, MMR as the
product applies it, the default result count; changed facts are left out: these sets have none),
beside the default search's. Then, for each set held out, the point with the best mean gain over
default on the other sets (the least gain on any of them breaks ties) and that point's gain on the
held-out set: what a choice made without the set would have given it. Last, the product's own
weights and the point that maximises the least gain over all sets.

LoCoMo is CC BY-NC 4.0 and read in place (``--locomo``); it is never copied into the repository.

    python bench/rerank_weights.py --today 2026-11-26
    python bench/rerank_weights.py --locomo-workspace /tmp/conv-locomo --dialogue-workspace /tmp/conv-dialogue \
        --ours-workspace /tmp/conv-ours --today 2026-11-26   # workspaces whose line vectors are filled
    python bench/rerank_weights.py --sets locomo,dialogue --json /tmp/weights.json
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import itertools
import json
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import conversational, dialogue
from bench import locomo as locomo_bench
from bench.machine import emit, loadavg, machine
from mcp_memory.config import load_settings
from mcp_memory.core.requests import SearchRequest
from mcp_memory.index.hybrid import Ranking
from mcp_memory.memory import Memory
from mcp_memory.search.rerank.local import Evidence, LocalReranker, Weights, blended

SETS = ("locomo", "locomo-conv", "dialogue", "dialogue-conv", "ours")
GRID = {  # the fields of ``Weights``
    "first": (0.4, 0.6, 0.8, 1.0),
    "lines": (0.2, 0.4, 0.6),
    "phrases": (0.1, 0.2, 0.3),
    "dates": (0.3,),
    "line_vectors": (0.1, 0.2, 0.3, 0.5),
}


@dataclass
class Case:
    """One query's candidates and their evidence, read once."""

    query_id: str
    split: str
    relevant: set[str]
    skip: frozenset[str]
    default_paths: list[str]
    ranking: Ranking  # the first stage's, for MMR
    rows: list[int]
    paths: list[str]
    evidence: Evidence  # what the local reranker reads of each candidate


@dataclass
class SetCases:
    name: str
    memory: Memory
    cases: list[Case] = field(default_factory=list)


def _queries(name: str, args: argparse.Namespace) -> tuple[Path, list[tuple[str, str, str, set[str], frozenset[str]]]]:
    """The workspace of a set and its queries: (id, text, split, relevant files, files not scored)."""
    if name == "locomo":
        workspace = args.locomo_workspace
        data = json.loads(args.locomo.read_text(encoding="utf-8"))
        questions = locomo_bench.write_workspace(data, workspace)
        convs = _locomo_conversations(data, questions)
        return workspace, [(f"locomo-{i}", q.text, "dev" if convs[i] % 2 == 0 else "test", q.sessions, frozenset())
                           for i, q in enumerate(questions)]
    if name == "locomo-conv":
        workspace = args.locomo_workspace
        out = conversational.locomo_queries(workspace, args.locomo, 7, args.locomo_conv_sample)
    elif name == "dialogue":
        workspace = args.dialogue_workspace
        data = json.loads(dialogue.DEFAULT_DATA.read_text(encoding="utf-8"))
        questions = dialogue.write_workspace(data, workspace)
        return workspace, [(f"dialogue-{i}", q.text, "dev" if q.conv.endswith(("-1", "-2")) else "test", q.sessions,
                            frozenset()) for i, q in enumerate(questions)]
    elif name == "dialogue-conv":
        workspace = args.dialogue_workspace
        out = conversational.dialogue_queries(workspace, dialogue.DEFAULT_DATA, 7)
    else:
        workspace = args.ours_workspace
        out = conversational.ours_queries(workspace, conversational.OURS)
    return workspace, [(q.id, q.text, q.split, q.files, q.skip) for q in out]


def _locomo_conversations(data: list[dict], questions: list) -> list[int]:
    """The conversation index of each LoCoMo question, in ``write_workspace``'s order."""
    out = []
    for question in questions:
        folder = next(iter(question.sessions)).split("/")[2]  # memory/locomo/conv-NN/...
        out.append(int(folder.removeprefix("conv-")))
    return out


def read_cases(name: str, args: argparse.Namespace, memories: dict[Path, Memory]) -> SetCases:
    workspace, queries = _queries(name, args)
    if workspace not in memories:
        memory = Memory(load_settings(workspace, environ={})).open()
        memory.sync()
        memory.backfill()
        memory.fill_line_vectors()
        memories[workspace] = memory
    memory = memories[workspace]
    reranker = memory.rerankers.local()
    assert isinstance(reranker, LocalReranker)
    out = SetCases(name, memory)
    for query_id, text, split, relevant, skip in queries:
        default = [h.path for h in memory.search(text, today=args.today)]
        request = SearchRequest.of(text, today=args.today)
        ranking, candidates = memory.precision.candidates(request)
        if not candidates:
            continue
        out.cases.append(Case(query_id, split, relevant, skip, default, ranking, [row for row, _ in ranking.ranked],
                              [c.path for c in candidates], reranker.evidence(ranking.query, candidates)))
    return out


def scored(sets: SetCases, case: Case, w: dict[str, float], k: int) -> tuple[float, float]:
    """R@5 and reciprocal rank of the case's first relevant file under the weights ``w``."""
    scores = blended(case.evidence, Weights(**w))
    order = sorted(range(len(scores)), key=lambda i: scores[i], reverse=True)
    # ``PrecisionSearch._diversify`` on the first k picks only: MMR picks greedily, so they are the same.
    high, low = scores[order[0]], scores[order[-1]]
    spread = [(case.rows[i], (scores[i] - low) / (high - low) if high > low else 1.0) for i in order]
    picked = sets.memory.engine.searcher.diversify(case.ranking.snapshot, spread, k)
    path_of = dict(zip(case.rows, case.paths, strict=True))
    return _figures(case, [path_of[row] for row, _ in picked])


def _figures(case: Case, paths: list[str]) -> tuple[float, float]:
    files = list(dict.fromkeys(p for p in paths if p not in case.skip))
    first = next((i for i, p in enumerate(files) if p in case.relevant), None)
    return len(case.relevant & set(files[:5])) / len(case.relevant), 1.0 / (first + 1) if first is not None else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--locomo", type=Path, default=locomo_bench.DEFAULT_DATA)
    parser.add_argument("--locomo-conv-sample", type=int, default=250)
    for source in ("locomo", "dialogue", "ours"):
        parser.add_argument(f"--{source}-workspace", type=Path, default=Path(f"/tmp/mcp-memory-weights-{source}"),
                            help="kept between runs: its line vectors are filled once")
    parser.add_argument("--today", type=dt.date.fromisoformat, default=dt.date.today())
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    names = [n.strip() for n in args.sets.split(",") if n.strip()]
    if not names or any(n not in SETS for n in names):
        raise SystemExit(f"--sets takes a comma-separated subset of {', '.join(SETS)}")

    started = time.perf_counter()
    memories: dict[Path, Memory] = {}
    sets = []
    for name in names:
        t0 = time.perf_counter()
        sets.append(read_cases(name, args, memories))
        print(f"{name}: {len(sets[-1].cases)} queries read in {time.perf_counter() - t0:.0f}s", file=sys.stderr)
    k = sets[0].memory.settings.search.max_results

    product = dataclasses.asdict(Weights())
    points = [dict(zip(GRID, values, strict=True)) for values in itertools.product(*GRID.values())]
    if product not in points:
        points.append(product)
    default = {s.name: statistics.fmean(_figures(c, c.default_paths)[0] for c in s.cases) for s in sets}
    grid = []
    for w in points:
        per_set = {}
        for s in sets:
            figures = [scored(s, c, w, k) for c in s.cases]
            per_set[s.name] = {"r5": statistics.fmean(f[0] for f in figures),
                               "mrr": statistics.fmean(f[1] for f in figures)}
        grid.append({"weights": w, "sets": per_set,
                     "gain": {n: per_set[n]["r5"] - default[n] for n in per_set}})

    def best(names_: list[str]) -> dict:
        return max(grid, key=lambda g: (statistics.fmean(g["gain"][n] for n in names_),
                                        min(g["gain"][n] for n in names_)))

    held_out = {}
    for s in sets:
        others = [n.name for n in sets if n.name != s.name]
        if not others:
            continue
        chosen = best(others)
        held_out[s.name] = {"weights": chosen["weights"], "gain": chosen["gain"][s.name],
                            "product_gain": next(g for g in grid if g["weights"] == product)["gain"][s.name]}
    robust = max(grid, key=lambda g: (min(g["gain"].values()), statistics.fmean(g["gain"].values())))
    results = {"machine": machine(), "load": loadavg(), "today": args.today.isoformat(), "k": k,
               "queries": {s.name: len(s.cases) for s in sets}, "default_r5": default,
               "product": next(g for g in grid if g["weights"] == product), "least_gain_best": robust,
               "held_out": held_out, "grid_points": len(grid), "seconds": round(time.perf_counter() - started, 1)}
    if args.json:
        args.json.write_text(json.dumps({**results, "grid": grid}, indent=2))
    for memory in memories.values():
        memory.close()
    emit(results, _summary(results), None)


def _summary(r: dict) -> str:
    def weights(w: dict) -> str:
        return "/".join(f"{v:g}" for v in w.values())

    lines = [f"reranker weights (first/lines/phrases/dates/line_vectors), {r['grid_points']} points, k={r['k']}, "
             f"today {r['today']}, {r['seconds']}s"]
    lines.append("| set (queries) | default R@5 | precise R@5, product weights (gain) "
                 "| held out: weights chosen on the others | their gain |")
    lines.append("| --- | --- | --- | --- | --- |")
    for name, n in r["queries"].items():
        base, product = r["default_r5"][name], r["product"]["sets"][name]["r5"]
        held = r["held_out"].get(name)
        chosen = f"{weights(held['weights'])} | {held['gain']:+.3f}" if held else "- | -"
        lines.append(f"| {name} ({n}) | {base:.3f} | {product:.3f} ({product - base:+.3f}) | {chosen} |")
    robust = r["least_gain_best"]
    lines.append(f"product weights {weights(r['product']['weights'])}: least gain "
                 f"{min(r['product']['gain'].values()):+.3f}; best least gain {weights(robust['weights'])}: "
                 + ", ".join(f"{n} {g:+.3f}" for n, g in robust["gain"].items()))
    return "\n".join(lines)


if __name__ == "__main__":
    main()
