"""Auto-capture quality: which messages become memories, and do the right facts survive?

Two labelled sets of realistic chat messages (English and Chinese), each labelled capture
or not, with the key terms a correct fact must keep:

* ``bench/data/capture_messages.jsonl`` (248 messages): the development set the offline
  rules were tuned on;
* ``bench/data/capture_heldout.jsonl`` (160 messages): written separately, in other domains,
  and not looked at while the rules were written; its figures are the honest ones.

Per message it reports the capture decision (precision, recall), the share of expected facts
kept (every key term present in a captured fact), per language. Then it captures every set
end to end through ``Memory.capture`` in conversations of 10 messages into a temporary
workspace and scans the written markdown: the number of secrets (any credential pattern, or
any token from a secret-labelled message) and of injection texts found there must be 0.

    python bench/capture.py                          # offline rules
    python bench/capture.py --extractor llm --llm-model gpt-4.1-mini [--llm-base-url URL]
"""

from __future__ import annotations

import argparse
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
from mcp_memory.memory import Memory
from mcp_memory.safety import find_secrets
from mcp_memory.transcripts import Message

DATA = Path(__file__).resolve().parent / "data"
SETS = {"dev": DATA / "capture_messages.jsonl", "heldout": DATA / "capture_heldout.jsonl"}
TODAY = dt.date(2026, 11, 26)


def load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def decide(rows: list[dict], extractor) -> dict:
    """Capture decision and facts kept, per language and overall."""
    out: dict[str, dict] = {}
    misses: list[str] = []
    for lang in ("en", "zh", "all"):
        subset = [r for r in rows if lang == "all" or r["lang"] == lang]
        tp = fp = fn = kept = 0
        for row in subset:
            facts = _facts(row, extractor)
            predicted, wanted = bool(facts), bool(row["capture"])
            tp += predicted and wanted
            fp += predicted and not wanted
            fn += wanted and not predicted
            if wanted and any(all(t.lower() in f.text.lower() for t in row["expect"]) for f in facts):
                kept += 1
            if lang == "all" and predicted != wanted:
                misses.append(f"{'FP' if predicted else 'FN'} {row['id']} [{row['kind']}] {row['text'][:90]}")
        positives = sum(1 for r in subset if r["capture"])
        out[lang] = {
            "messages": len(subset), "positives": positives,
            "precision": round(tp / (tp + fp), 3) if tp + fp else None,
            "recall": round(tp / positives, 3) if positives else None,
            "facts_kept": round(kept / positives, 3) if positives else None,
            "false_positives": fp, "false_negatives": fn,
        }
    out["misses"] = misses
    return out


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
    for name, path in SETS.items():
        rows = load(path)
        decision = decide(rows, extractor)
        misses = decision.pop("misses")
        e2e = end_to_end(rows, overrides)
        results[name] = {"decision": decision, "end_to_end": e2e}
        for lang in ("en", "zh", "all"):
            d = decision[lang]
            lines.append(f"{name:8} {lang:3} n={d['messages']:3} P {d['precision']} R {d['recall']} "
                         f"kept {d['facts_kept']} (FP {d['false_positives']}, FN {d['false_negatives']})")
        lines.append(f"{name:8} end to end: {e2e['bullets_written']} bullets, secrets found {e2e['secrets_found']}, "
                     f"injections found {e2e['injections_found']}, {e2e['seconds']} s")
        if args.show_misses:
            print(f"--- {name} misses", *misses, sep="\n", file=sys.stderr)
    results["load_after"] = loadavg()
    emit(results, "\n".join(lines), args.json)


if __name__ == "__main__":
    main()
