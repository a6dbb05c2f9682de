"""Sleep cycle consolidation: are repeated statements marked, changed ones retired, compatible ones kept?

``bench/data/consolidation.json`` holds labelled pairs of list items in English and Chinese (and
pairs across the two) over preferences, hosts and config, people, schedules, tools, health,
travel, food, work decisions and home; its ``description`` states the labelling rules. Each pair
gets a workspace of its own (consolidation compares every item with every other, so pairs in one
workspace would meet): the older item in ``memory/2026-01-01.md``, the newer in
``memory/2026-03-01.md``. The workspace is indexed with the configured embedder (the default:
local), and ``memory.sleep.run(dry_run=True)`` plans the retirements with the offline rules.

The predicted label is "superseded" when the older item is retired as superseded, "duplicate"
when a duplicate mark is planned, else "distinct". The script prints precision and recall per
label, a confusion matrix, accuracy per language, every wrong case with its cosine, and a JSON
summary.

    python bench/consolidation.py                      # the module's thresholds
    python bench/consolidation.py --supersede 0.75     # try other thresholds (the module is unchanged)
    python bench/consolidation.py --json out.json      # also write the per-case results
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mcp_memory.config import load_settings
from mcp_memory.embedding import create_embedder
from mcp_memory.embedding.base import Embedder
from mcp_memory.lifecycle import consolidation
from mcp_memory.memory import Memory

DATA = Path(__file__).resolve().parent / "data" / "consolidation.json"
LABELS = ("superseded", "duplicate", "distinct")
OLDER_DAY, NEWER_DAY = "2026-01-01", "2026-03-01"
NOW = dt.datetime(2026, 3, 2, 12, 0, tzinfo=dt.UTC)


@dataclass
class Outcome:
    """One case's prediction, and the cosine of its two items (for reading the errors)."""

    id: str
    lang: str
    label: str
    predicted: str
    cosine: float


def predict(case: dict[str, Any], embedder: Embedder | None) -> Outcome:
    """Write the pair to a fresh workspace, run a dry sleep cycle, and read what it would retire."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        (root / "memory").mkdir(parents=True)
        older = f"memory/{OLDER_DAY}.md"
        (root / older).write_text(f"- {case['older']}\n", encoding="utf-8")
        (root / f"memory/{NEWER_DAY}.md").write_text(f"- {case['newer']}\n", encoding="utf-8")
        memory = Memory(load_settings(root, environ={}), embedder=embedder)
        try:
            memory.index()
            report = memory.sleep.run(dry_run=True, now=NOW)
            cosine = _cosine(memory)
        finally:
            memory.close()
    predicted = "distinct"
    for retired in report.retired:
        if retired.kind == "duplicate":
            predicted = "duplicate"
        elif retired.kind == "superseded" and retired.item.path == older:
            predicted = "superseded"
    return Outcome(case["id"], case["lang"], case["label"], predicted, cosine)


def _cosine(memory: Memory) -> float:
    """The cosine consolidation reads for the pair (NaN without an embedder)."""
    items = consolidation.collect_items(memory.engine)
    vectors = consolidation._vectors(memory.engine, [item.body for item in items])
    if vectors is None or len(items) != 2:
        return float("nan")
    return float(vectors[0] @ vectors[1])


# ----- scoring ---------------------------------------------------------------------------------
def per_label(outcomes: list[Outcome]) -> dict[str, dict[str, float]]:
    """Precision, recall and support of each label."""
    out: dict[str, dict[str, float]] = {}
    for label in LABELS:
        predicted = sum(o.predicted == label for o in outcomes)
        actual = sum(o.label == label for o in outcomes)
        right = sum(o.predicted == label == o.label for o in outcomes)
        out[label] = {"precision": round(right / predicted, 4) if predicted else 1.0,
                      "recall": round(right / actual, 4) if actual else 1.0, "support": actual, "predicted": predicted}
    return out


def confusion(outcomes: list[Outcome]) -> dict[str, dict[str, int]]:
    counts = Counter((o.label, o.predicted) for o in outcomes)
    return {label: {p: counts[(label, p)] for p in LABELS} for label in LABELS}


def per_language(outcomes: list[Outcome]) -> dict[str, dict[str, Any]]:
    """Accuracy per language, and recall of each label within it."""
    out: dict[str, dict[str, Any]] = {}
    for lang in sorted({o.lang for o in outcomes}):
        mine = [o for o in outcomes if o.lang == lang]
        row: dict[str, Any] = {"cases": len(mine),
                               "accuracy": round(sum(o.label == o.predicted for o in mine) / len(mine), 4)}
        for label in LABELS:
            labelled = [o for o in mine if o.label == label]
            row[label] = f"{sum(o.predicted == label for o in labelled)}/{len(labelled)}"
        out[lang] = row
    return out


def print_report(outcomes: list[Outcome], cases: dict[str, dict[str, Any]], seconds: float) -> dict[str, Any]:
    """The tables and the wrong cases on stdout; the summary as a dict."""
    labels, matrix, langs = per_label(outcomes), confusion(outcomes), per_language(outcomes)
    accuracy = sum(o.label == o.predicted for o in outcomes) / len(outcomes)
    print(f"\n{len(outcomes)} cases, accuracy {accuracy:.3f}, {seconds / len(outcomes) * 1000:.0f} ms per case "
          f"(SUPERSEDE_COSINE {consolidation.SUPERSEDE_COSINE}, with a cue {consolidation.SUPERSEDE_COSINE_WITH_CUE})")
    print("| label | cases | predicted | precision | recall |\n| --- | ---: | ---: | ---: | ---: |")
    for label, row in labels.items():
        print(f"| {label} | {row['support']} | {row['predicted']} | {row['precision']:.3f} | {row['recall']:.3f} |")
    print("\n| labelled \\ predicted | " + " | ".join(LABELS) + " |\n| --- | ---: | ---: | ---: |")
    for label in LABELS:
        print(f"| {label} | " + " | ".join(str(matrix[label][p]) for p in LABELS) + " |")
    print("\n| lang | cases | accuracy | superseded found | duplicate found | distinct kept |\n"
          "| --- | ---: | ---: | ---: | ---: | ---: |")
    for lang, row in langs.items():
        print(f"| {lang} | {row['cases']} | {row['accuracy']:.3f} | {row['superseded']} | {row['duplicate']} | "
              f"{row['distinct']} |")
    wrong = [o for o in outcomes if o.label != o.predicted]
    print(f"\nwrong: {len(wrong)}")
    for o in wrong:
        case = cases[o.id]
        print(f"  {o.id} {o.lang} {o.label} -> {o.predicted} (cosine {o.cosine:.3f}): "
              f"{case['older']!r} / {case['newer']!r}")
    return {"cases": len(outcomes), "accuracy": round(accuracy, 4), "labels": labels, "confusion": matrix,
            "languages": langs, "wrong": [o.id for o in wrong], "ms_per_case": round(seconds / len(outcomes) * 1000)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--supersede", type=float, help="instead of the module's SUPERSEDE_COSINE")
    parser.add_argument("--supersede-cue", type=float, help="instead of SUPERSEDE_COSINE_WITH_CUE")
    parser.add_argument("--json", type=Path, help="write every case's outcome here")
    args = parser.parse_args()
    if args.supersede is not None:
        consolidation.SUPERSEDE_COSINE = args.supersede
    if args.supersede_cue is not None:
        consolidation.SUPERSEDE_COSINE_WITH_CUE = args.supersede_cue
    data = json.loads(args.data.read_text(encoding="utf-8"))
    cases = {case["id"]: case for case in data["cases"]}
    with tempfile.TemporaryDirectory() as tmp:
        embedder = create_embedder(load_settings(Path(tmp), environ={}).embedding)  # one model for every case
    started = time.perf_counter()
    outcomes = [predict(case, embedder) for case in cases.values()]
    summary = print_report(outcomes, cases, time.perf_counter() - started)
    print(json.dumps({key: value for key, value in summary.items() if key != "wrong"}, ensure_ascii=False))
    if args.json:
        args.json.write_text(json.dumps([asdict(o) for o in outcomes], ensure_ascii=False, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
