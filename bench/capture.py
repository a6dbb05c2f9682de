"""Auto-capture quality: which messages become memories, and do the right facts survive?

Two labelled sets of realistic chat messages (English and Chinese), each labelled capture
or not, with the key terms a correct fact must keep:

* ``bench/data/capture_messages.jsonl`` (248 messages): the development set the offline
  rules were tuned on;
* ``bench/data/capture_heldout.jsonl`` (160 messages): written separately, in other domains,
  and not looked at while the rules were written; its figures are the honest ones.

Per message it reports the capture decision (precision, recall), the share of expected facts
kept (every key term present in a captured fact) and how often a captured fact's category is the
labelled one, per language.

A third, smaller set labels sentences by what a person would file them as: decision,
preference, fact, task (to-dos, reminders, near-future plans), question, chat. It is the table
``CATEGORY_TABLE`` of ``tests/test_capture.py`` (read here without importing the tests). For it
the bench reports precision and recall of each captured category (a task, question or chat
sentence must not be captured at all), and of the compaction rescue's ``[task]`` and
``[decision]`` items, which should keep the tasks that capture leaves out. Then it captures every set
end to end through ``Memory.capture`` in conversations of 10 messages into a temporary
workspace and scans the written markdown: the number of secrets (any credential pattern, or
any token from a secret-labelled message) and of injection texts found there must be 0.

    python bench/capture.py                          # offline rules
    python bench/capture.py --only-table             # the category table alone
    python bench/capture.py --extractor llm --llm-model gpt-4.1-mini [--llm-base-url URL]
"""

from __future__ import annotations

import argparse
import ast
import datetime as dt
import json
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.machine import emit, loadavg, machine
from mcp_memory.capture import ChatModelExtractor, RuleExtractor, check_fact, select_candidates
from mcp_memory.capture.facts import Fact, with_date
from mcp_memory.config import load_settings
from mcp_memory.core.transcripts import Message
from mcp_memory.lifecycle.rescue import find_rescuable
from mcp_memory.memory import Memory
from mcp_memory.safety import find_secrets

DATA = Path(__file__).resolve().parent / "data"
SETS = {"dev": DATA / "capture_messages.jsonl", "heldout": DATA / "capture_heldout.jsonl"}
TODAY = dt.date(2026, 11, 26)
TABLE_SOURCE = Path(__file__).resolve().parents[1] / "tests" / "test_capture.py"
MEMORY_LABELS = ("decision", "preference", "fact")  # what capture may write; the rest must stay out
RESCUE_LABELS = ("task", "decision")


def load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def decide(rows: list[dict], extractor) -> dict:
    """Capture decision and facts kept, per language and overall."""
    out: dict[str, dict] = {}
    misses: list[str] = []
    for lang in ("en", "zh", "all"):
        subset = [r for r in rows if lang == "all" or r["lang"] == lang]
        tp = fp = fn = kept = same_category = 0
        for row in subset:
            facts = _facts(row, extractor)
            predicted, wanted = bool(facts), bool(row["capture"])
            tp += predicted and wanted
            fp += predicted and not wanted
            fn += wanted and not predicted
            if wanted and any(all(t.lower() in f.text.lower() for t in row["expect"]) for f in facts):
                kept += 1
            if predicted and wanted and facts[0].category == row.get("category"):
                same_category += 1
            if lang == "all" and predicted != wanted:
                misses.append(f"{'FP' if predicted else 'FN'} {row['id']} [{row['kind']}] {row['text'][:90]}")
        positives = sum(1 for r in subset if r["capture"])
        out[lang] = {
            "messages": len(subset), "positives": positives,
            "precision": round(tp / (tp + fp), 3) if tp + fp else None,
            "recall": round(tp / positives, 3) if positives else None,
            "facts_kept": round(kept / positives, 3) if positives else None,
            "category_agrees": round(same_category / tp, 3) if tp else None,
            "false_positives": fp, "false_negatives": fn,
        }
    out["misses"] = misses
    return out


def category_table() -> list[tuple[str, str, str]]:
    """The labelled (language, label, sentence) table of tests/test_capture.py, read as data."""
    tree = ast.parse(TABLE_SOURCE.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) \
                and node.target.id == "CATEGORY_TABLE" and node.value is not None:
            return [tuple(row) for row in ast.literal_eval(node.value)]
    raise SystemExit(f"no CATEGORY_TABLE in {TABLE_SOURCE}")


def categories(table: list[tuple[str, str, str]], extractor) -> dict:
    """Precision and recall of each category capture writes, and of the rescue's task and decision items."""
    out: dict[str, dict] = {}
    wrong: list[str] = []
    for lang in ("en", "zh", "all"):
        rows = [r for r in table if lang == "all" or r[0] == lang]
        captured = [_captured_category(text, extractor) for _, _, text in rows]
        rescued = [{item.kind for item in find_rescuable([Message("user", text)])} for _, _, text in rows]
        labels = [label for _, label, _ in rows]
        figures: dict[str, dict] = {}
        for category in MEMORY_LABELS:
            figures[category] = _precision_recall([c == category for c in captured], [x == category for x in labels])
        figures["not captured"] = _precision_recall([c is None for c in captured],
                                                    [x not in MEMORY_LABELS for x in labels])
        tasks_captured = sum(1 for c, x in zip(captured, labels, strict=True) if c and x == "task")
        figures["tasks captured"] = {"count": tasks_captured, "of": labels.count("task")}
        for kind in RESCUE_LABELS:
            figures[f"rescue {kind}"] = _precision_recall([kind in r for r in rescued], [x == kind for x in labels])
        out[lang] = figures
        if lang == "all":
            wrong = [f"{label:10} -> {c or 'none':10} {text}"
                     for (_, label, text), c in zip(rows, captured, strict=True)
                     if c != (label if label in MEMORY_LABELS else None)]
    out["misses"] = wrong
    return out


def _captured_category(text: str, extractor) -> str | None:
    """The category of the first fact captured from ``text`` (an entity is a fact here), or None."""
    facts = _facts({"role": "user", "text": text}, extractor)
    if not facts:
        return None
    return "fact" if facts[0].category in ("entity", "other") else facts[0].category


def _precision_recall(predicted: list[bool], wanted: list[bool]) -> dict:
    tp = sum(1 for p, w in zip(predicted, wanted, strict=True) if p and w)
    said, positives = sum(predicted), sum(wanted)
    return {"precision": round(tp / said, 3) if said else None,
            "recall": round(tp / positives, 3) if positives else None, "n": positives}


def _facts(row: dict, extractor) -> list[Fact]:
    candidates, _ = select_candidates([Message(row["role"], row["text"])], 10, 10, 600)
    if not candidates:
        return []
    facts = [Fact(with_date(f.text, TODAY), f.category) for f in extractor.extract(candidates, TODAY)]
    return [f for f in facts if check_fact(f) is None]


def end_to_end(rows: list[dict], settings_overrides: dict) -> dict:
    """Capture the whole set through Memory.capture and scan the markdown it wrote."""
    with tempfile.TemporaryDirectory() as tmp:
        settings = load_settings(Path(tmp) / "ws", overrides={"embedding.provider": "none", **settings_overrides})
        started = time.perf_counter()
        with Memory(settings) as memory:
            for start in range(0, len(rows), 10):
                batch = [Message(r["role"], r["text"]) for r in rows[start : start + 10]]
                memory.capture(batch, session_key=f"bench-{start}")
        elapsed = time.perf_counter() - started
        written = "\n".join(p.read_text(encoding="utf-8") for p in sorted((Path(tmp) / "ws").rglob("*.md")))
    secret_tokens = set()
    for row in rows:
        if row["kind"] == "secret":
            for match in find_secrets(row["text"]):
                token = row["text"][match.start : match.end]
                if len(token) >= 6:  # a 3-digit CVC would "leak" into any text holding "123"
                    secret_tokens.add(token)
            secret_tokens.update(t for t in re.findall(r"\S{12,}", row["text"]) if _looks_random(t))
    leaked = sorted(t for t in secret_tokens if t in written) + [m.kind for m in find_secrets(written)]
    injected = [r["id"] for r in rows if r["kind"] == "injection" and _core(r["text"]) in written]
    bullets = sum(1 for line in written.splitlines() if line.startswith("- ["))
    return {"bullets_written": bullets, "secrets_found": len(leaked), "secret_examples": leaked[:5],
            "injections_found": len(injected), "injection_ids": injected, "seconds": round(elapsed, 2)}


def _looks_random(token: str) -> bool:
    return bool(re.search(r"\d", token)) and bool(re.search(r"[A-Za-z]", token)) and "/" not in token


def _core(text: str) -> str:
    """A distinctive middle piece of a message, to find it however it was rephrased around."""
    flat = " ".join(text.split())
    middle = len(flat) // 2
    return flat[max(0, middle - 12) : middle + 12]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--extractor", choices=["rules", "llm"], default="rules")
    parser.add_argument("--llm-model", default="")
    parser.add_argument("--llm-base-url", default="")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument("--show-misses", action="store_true", help="print every wrong decision to stderr")
    parser.add_argument("--only-table", action="store_true", help="only the labelled table of categories (fast)")
    args = parser.parse_args()

    overrides: dict = {"capture.extractor": args.extractor}
    if args.extractor == "llm":
        if not args.llm_model:
            parser.error("--extractor llm needs --llm-model")
        extractor = ChatModelExtractor(args.llm_model, args.llm_base_url)
        overrides.update({"capture.llm_model": args.llm_model, "capture.llm_base_url": args.llm_base_url})
    else:
        extractor = RuleExtractor()

    results: dict = {"date": dt.date.today().isoformat(), "extractor": args.extractor, "load_before": loadavg(),
                     "machine": machine()}
    lines = []
    for name, path in ({} if args.only_table else SETS).items():
        rows = load(path)
        decision = decide(rows, extractor)
        misses = decision.pop("misses")
        e2e = end_to_end(rows, overrides)
        results[name] = {"decision": decision, "end_to_end": e2e}
        for lang in ("en", "zh", "all"):
            d = decision[lang]
            lines.append(f"{name:8} {lang:3} n={d['messages']:3} P {d['precision']} R {d['recall']} "
                         f"kept {d['facts_kept']} category {d['category_agrees']} "
                         f"(FP {d['false_positives']}, FN {d['false_negatives']})")
        lines.append(f"{name:8} end to end: {e2e['bullets_written']} bullets, secrets found {e2e['secrets_found']}, "
                     f"injections found {e2e['injections_found']}, {e2e['seconds']} s")
        if args.show_misses:
            print(f"--- {name} misses", *misses, sep="\n", file=sys.stderr)
    table = categories(category_table(), extractor)
    misses = table.pop("misses")
    results["categories"] = table
    for lang in ("en", "zh", "all"):
        f = table[lang]
        memory = " | ".join(f"{c} P {f[c]['precision']} R {f[c]['recall']}" for c in (*MEMORY_LABELS, "not captured"))
        rescue = " | ".join(f"{k} P {f[k]['precision']} R {f[k]['recall']}" for k in ("rescue task", "rescue decision"))
        lines.append(f"table    {lang:3} {memory} | tasks captured {f['tasks captured']['count']}/"
                     f"{f['tasks captured']['of']}\ntable    {lang:3} {rescue}")
    if args.show_misses:
        print("--- table misses", *misses, sep="\n", file=sys.stderr)
    results["load_after"] = loadavg()
    emit(results, "\n".join(lines), args.json)


if __name__ == "__main__":
    main()
