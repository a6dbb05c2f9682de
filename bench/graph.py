"""Experience graph: are paraphrased chains merged, near misses kept apart, and chains found?

``bench/data/chains.json`` holds 240 labelled chains in English and Chinese over many domains,
grouped by situation. Each group opens with a base chain; its paraphrases (same language, or
the other language) must update the base chain, and its near misses (the same cause with
another action, the same action for another cause) must stay chains of their own. The chains
are added in order to a fresh workspace with the configured embedder (the default: local), and
the script measures, pairwise:

* dedupe precision: of the adds that updated a chain, the share that updated the right one;
* dedupe recall: of the labelled paraphrases, the share that updated the right chain;
* new kept new: of the chains that must be new (bases, near misses), the share added as new;
* query precision@3 over labelled queries: relevant chains among the first three, divided by
  min(3, number of relevant chains), and hit@1.

Groups are split in halves by their number: odd groups (split A) choose the threshold
(``--calibrate`` sweeps it on A alone), even groups (split B) check it.

    python bench/graph.py                  # the run with the module's threshold, both splits
    python bench/graph.py --calibrate      # sweep the threshold on split A, report A and B
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mcp_memory.config import load_settings
from mcp_memory.embedding.base import Embedder
from mcp_memory.experience import graph as experience
from mcp_memory.experience.graph import _letters, best_duplicate
from mcp_memory.memory import Memory

DATA = Path(__file__).resolve().parent / "data" / "chains.json"


@dataclass
class Tally:
    updates: int = 0  # adds that updated a chain
    right_updates: int = 0  # ... the chain they paraphrase
    duplicates: int = 0  # labelled paraphrases
    news: int = 0  # labelled new chains
    kept_new: int = 0  # ... added as new

    def row(self) -> tuple[float, float, float]:
        precision = self.right_updates / self.updates if self.updates else 1.0
        recall = self.right_updates / self.duplicates if self.duplicates else 1.0
        return precision, recall, self.kept_new / self.news if self.news else 1.0


def split_of(item: dict[str, Any]) -> str:
    return "A" if int(item["group"][1:]) % 2 else "B"


def score(items: list[dict[str, Any]], outcomes: dict[str, tuple[str, str]]) -> dict[str, Tally]:
    """Tallies per split and overall from each item's (status, chain id)."""
    tallies = {"A": Tally(), "B": Tally(), "all": Tally()}
    for item in items:
        status, chain = outcomes[item["id"]]
        for tally in (tallies[split_of(item)], tallies["all"]):
            if item["same_as"]:
                tally.duplicates += 1
            else:
                tally.news += 1
                tally.kept_new += status == "added"
            if status == "updated":
                tally.updates += 1
                tally.right_updates += bool(item["same_as"]) and chain == outcomes[item["same_as"]][1]
    return tallies


# ----- calibration: the module's decision, simulated in memory ------------------------------
def simulate(items: list[dict[str, Any]], vectors: dict[str, np.ndarray], threshold: float,
             ) -> dict[str, tuple[str, str]]:
    """Each item's (status, chain) when added in order, deciding as ``ExperienceGraph.add`` does."""
    chains: list[tuple[str, str, str]] = []  # (chain id, cause, action)
    outcomes: dict[str, tuple[str, str]] = {}
    for item in items:
        causes = [_similar(item["cause"], c, vectors) for _, c, _ in chains]
        actions = [_similar(item["action"], a, vectors) for _, _, a in chains]
        found = best_duplicate(causes, actions, threshold) if chains else None
        if found is None:
            chains.append((item["id"], item["cause"], item["action"]))
            outcomes[item["id"]] = ("added", item["id"])
        else:
            outcomes[item["id"]] = ("updated", chains[found[0]][0])
    return outcomes


def _similar(a: str, b: str, vectors: dict[str, np.ndarray]) -> float:
    return 1.0 if _letters(a) == _letters(b) else float(vectors[a] @ vectors[b])


def calibrate(items: list[dict[str, Any]], embedder: Embedder) -> float:
    """The threshold with the best F1 of dedupe precision and recall on split A; prints the sweep."""
    texts = list(dict.fromkeys(t for i in items for t in (i["cause"], i["action"])))
    vectors = dict(zip(texts, embedder.embed_documents(texts), strict=True))
    half = [i for i in items if split_of(i) == "A"]
    best = (-1.0, 0.0)
    print("threshold  precision(A)  recall(A)  kept-new(A)")
    for threshold in np.arange(0.30, 0.91, 0.02):
        p, r, k = score(half, simulate(half, vectors, float(threshold)))["A"].row()
        f1 = 2 * p * r / (p + r) if p + r else 0.0
        print(f"{threshold:9.2f}  {p:12.3f}  {r:9.3f}  {k:11.3f}")
        if f1 > best[0] + 1e-9:
            best = (f1, round(float(threshold), 2))
    print(f"best on split A: {best[1]:.2f} (F1 {best[0]:.3f})")
    return best[1]


# ----- the run through Memory ----------------------------------------------------------------
def run(items: list[dict[str, Any]], queries: list[dict[str, Any]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        (root / "memory").mkdir(parents=True)
        memory = Memory(load_settings(root, environ={}))  # the default embedder (local)
        memory.index()
        outcomes: dict[str, tuple[str, str]] = {}
        started = time.perf_counter()
        for item in items:
            result = memory.experience.add(item["cause"], item["action"], item["effect"], item["outcome"], item["tags"])
            outcomes[item["id"]] = (result.status, result.chain.id)
        add_ms = (time.perf_counter() - started) / len(items) * 1000
        p3, hit1, query_ms = evaluate_queries(memory, queries, outcomes)
        total = len(memory.experience.chains())
        memory.close()
    tallies = score(items, outcomes)
    print(f"\nthreshold {experience.DUPLICATE_THRESHOLD:.2f}, {len(items)} adds -> {total} chains, "
          f"{add_ms:.0f} ms per add (write, sync and embed included)")
    print("split  paraphrases  new  dedupe precision  dedupe recall  new kept new")
    for name, tally in tallies.items():
        p, r, k = tally.row()
        print(f"{name:5}  {tally.duplicates:11}  {tally.news:3}  {p:16.3f}  {r:13.3f}  {k:12.3f}")
    print(f"queries: {len(queries)}, precision@3 {p3:.3f}, hit@1 {hit1:.3f}, {query_ms:.1f} ms per query")
    print_errors(items, outcomes)


def print_errors(items: list[dict[str, Any]], outcomes: dict[str, tuple[str, str]]) -> None:
    """Each wrong decision: a paraphrase added as new, or an add that updated the wrong chain."""
    for item in items:
        status, chain = outcomes[item["id"]]
        expected = outcomes[item["same_as"]][1] if item["same_as"] else None
        if (status == "updated") != bool(expected) or (expected and chain != expected):
            print(f"  wrong: {item['id']} ({item['kind']}) {status} {chain}: {item['cause']} / {item['action']}")


def evaluate_queries(memory: Memory, queries: list[dict[str, Any]], outcomes: dict[str, tuple[str, str]],
                     ) -> tuple[float, float, float]:
    precisions, hits = [], []
    started = time.perf_counter()
    for query in queries:
        relevant = {outcomes[r][1] for r in query["relevant"]}
        found = [m.chain.id for m in memory.experience.query(query["query"], max_results=3)]
        precisions.append(len(relevant & set(found)) / min(3, len(relevant)))
        hits.append(bool(found) and found[0] in relevant)
    elapsed = (time.perf_counter() - started) / len(queries) * 1000
    return float(np.mean(precisions)), float(np.mean(hits)), elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--calibrate", action="store_true", help="sweep the threshold on split A first, then use it")
    parser.add_argument("--threshold", type=float, help="instead of the module's DUPLICATE_THRESHOLD")
    args = parser.parse_args()
    data = json.loads(args.data.read_text(encoding="utf-8"))
    items, queries = data["chains"], data["queries"]
    if args.calibrate:
        from mcp_memory.embedding.local import USEEmbedder

        experience.DUPLICATE_THRESHOLD = calibrate(items, USEEmbedder())
    if args.threshold is not None:
        experience.DUPLICATE_THRESHOLD = args.threshold
    run(items, queries)


if __name__ == "__main__":
    main()
