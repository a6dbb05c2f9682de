"""How well the secret and injection filters do on labelled notes: caught, false alarms, speed.

Reads every ``bench/data/filters/*.jsonl`` (one ``{"text", "label", "lang", "family"}`` per
line; ``label`` true = a secret, or an injection) and runs the detector the file is named
after (``secrets*`` -> ``contains_secret``, ``injections*`` -> ``looks_like_injection``).
The ``*_heldout`` sets were written apart from the rules, without looking at them: their
figures are the honest ones; the main sets grew with the rules and flatter them.
Reports the share of positives caught (overall, by family, by language), the false-positive
rate on the negatives (ordinary notes, many of which mention passwords, keys and
instructions legitimately) and the mean time per text.

``--baseline REV`` runs the filters of an earlier commit on the same data in the same run,
so the figures compare on this machine at this moment.

    python bench/filters.py [--baseline d235697] [--misses] [--json]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench" / "data" / "filters"
sys.path.insert(0, str(ROOT))

Detector = Callable[[str], bool]


def current_detectors() -> dict[str, Detector]:
    from mcp_memory.safety import contains_secret, looks_like_injection

    return {"secrets": contains_secret, "injections": looks_like_injection}


def baseline_detectors(rev: str) -> dict[str, Detector]:
    """The detectors as they were at ``rev`` (a single ``safety.py`` module, or the package)."""
    def show(path: str) -> str | None:
        done = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:{path}"], capture_output=True, text=True)
        return done.stdout if done.returncode == 0 else None

    folder = Path(tempfile.mkdtemp(prefix="filters-baseline-"))
    single = show("mcp_memory/safety.py")
    if single is not None:
        (folder / "baseline_safety.py").write_text(single, encoding="utf-8")
        module = _load(folder / "baseline_safety.py", "baseline_safety")
        return {"secrets": module.contains_secret, "injections": module.looks_like_injection}
    package = folder / "baseline_pkg" / "mcp_memory" / "safety"
    package.mkdir(parents=True)
    (package.parent / "__init__.py").write_text("", encoding="utf-8")
    # Every file of the package at that revision: its modules and its rule files (rules/*.toml).
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-tree", "-r", "--name-only", rev, "mcp_memory/safety/"],
                            capture_output=True, text=True)
    paths = [path for path in listed.stdout.splitlines() if not path.endswith(".pyc")]
    if listed.returncode != 0 or "mcp_memory/safety/__init__.py" not in paths:
        raise SystemExit(f"{rev} has no mcp_memory/safety package")
    for path in paths:
        source = show(path)
        if source is None:
            raise SystemExit(f"{rev}: cannot read {path}")
        target = package / Path(path).relative_to("mcp_memory/safety")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(source, encoding="utf-8")
    # Import the old package under its own name, without the installed one in the way.
    saved = {k: v for k, v in sys.modules.items() if k == "mcp_memory" or k.startswith("mcp_memory.")}
    for key in saved:
        del sys.modules[key]
    sys.path.insert(0, str(folder / "baseline_pkg"))
    try:
        import mcp_memory.safety as old  # type: ignore[import-not-found]

        detectors = {"secrets": old.contains_secret, "injections": old.looks_like_injection}
    finally:
        sys.path.remove(str(folder / "baseline_pkg"))
        for key in [k for k in sys.modules if k == "mcp_memory" or k.startswith("mcp_memory.")]:
            del sys.modules[key]
        sys.modules.update(saved)
    return detectors


def _load(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def read_set(path: Path) -> list[dict[str, Any]]:
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            row = json.loads(line)
            if not isinstance(row.get("text"), str) or not isinstance(row.get("label"), bool):
                raise SystemExit(f"{path.name}:{number}: needs a text and a boolean label")
            rows.append(row)
    return rows


def evaluate(rows: list[dict[str, Any]], detect: Detector, repeats: int = 3) -> dict[str, Any]:
    flagged = [bool(detect(row["text"])) for row in rows]
    started = time.perf_counter()
    for _ in range(repeats):
        for row in rows:
            detect(row["text"])
    micros = (time.perf_counter() - started) / (repeats * len(rows)) * 1e6
    positives = [(row, hit) for row, hit in zip(rows, flagged, strict=True) if row["label"]]
    negatives = [(row, hit) for row, hit in zip(rows, flagged, strict=True) if not row["label"]]
    by_family: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    by_lang: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    fp_by_lang: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row, hit in positives:
        for table, key in ((by_family, row.get("family", "?")), (by_lang, row.get("lang", "?"))):
            table[key][0] += hit
            table[key][1] += 1
    for row, hit in negatives:
        fp_by_lang[row.get("lang", "?")][0] += hit
        fp_by_lang[row.get("lang", "?")][1] += 1
    return {
        "positives": len(positives),
        "caught": sum(hit for _, hit in positives),
        "negatives": len(negatives),
        "false_positives": sum(hit for _, hit in negatives),
        "mean_us": round(micros, 1),
        "by_family": {k: v for k, v in sorted(by_family.items())},
        "by_lang": {k: v for k, v in sorted(by_lang.items())},
        "fp_by_lang": {k: v for k, v in sorted(fp_by_lang.items())},
        "misses": [row["text"] for row, hit in positives if not hit],
        "false_alarms": [row["text"] for row, hit in negatives if hit],
    }


def _share(pair: list[int]) -> str:
    return f"{pair[0]}/{pair[1]} ({pair[0] / pair[1]:.0%})" if pair[1] else "-"


def report(name: str, result: dict[str, Any], baseline: dict[str, Any] | None, show_misses: bool) -> None:
    print(f"\n## {name}: {result['positives']} positives, {result['negatives']} negatives")
    line = (f"caught {_share([result['caught'], result['positives']])}, false positives "
            f"{_share([result['false_positives'], result['negatives']])}, {result['mean_us']} µs per text")
    print(line)
    if baseline is not None:
        print(f"baseline: caught {_share([baseline['caught'], baseline['positives']])}, false positives "
              f"{_share([baseline['false_positives'], baseline['negatives']])}, {baseline['mean_us']} µs per text "
              f"(speed ratio {result['mean_us'] / max(baseline['mean_us'], 0.01):.2f}x)")
    print("caught by family: " + ", ".join(f"{k} {_share(v)}" for k, v in result["by_family"].items()))
    print("caught by language: " + ", ".join(f"{k} {_share(v)}" for k, v in result["by_lang"].items()))
    print("false positives by language: " + ", ".join(f"{k} {_share(v)}" for k, v in result["fp_by_lang"].items()))
    if show_misses:
        for text in result["misses"]:
            print(f"  missed: {text[:140]!r}")
        for text in result["false_alarms"]:
            print(f"  false alarm: {text[:140]!r}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", default=None, help="a git revision whose filters run on the same data")
    parser.add_argument("--misses", action="store_true", help="list what was missed and the false alarms")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    detectors = current_detectors()
    old = baseline_detectors(args.baseline) if args.baseline else None
    out: dict[str, Any] = {}
    for path in sorted(DATA.glob("*.jsonl")):
        name = path.stem  # secrets.jsonl, secrets_heldout.jsonl, ... : the detector is the first word
        if name.split("_")[0] not in detectors:
            print(f"(skipping {path.name}: no detector named {name!r})", file=sys.stderr)
            continue
        rows = read_set(path)
        kind = name.split("_")[0]
        result = evaluate(rows, detectors[kind])
        base = evaluate(rows, old[kind]) if old else None
        out[name] = {"current": result, "baseline": base}
        if not args.json:
            report(name, result, base, args.misses)
    if args.json:
        print(json.dumps(out, ensure_ascii=False, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
