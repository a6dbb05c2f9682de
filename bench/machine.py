"""What every benchmark prints beside its figures: the machine, and how loaded it was."""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path
from typing import Any


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def machine(**extra: Any) -> dict[str, Any]:
    """Platform, CPU model and count, Python, thread settings, plus ``extra`` versions."""
    model = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"platform": platform.platform(), "python": platform.python_version(), "cpu": model,
            "cpu_count": os.cpu_count(), "executable": sys.executable, **extra,
            "thread_env": {k: v for k, v in os.environ.items() if k.startswith(("OMP_", "GOMP_", "OPENBLAS_"))}}


def emit(results: dict[str, Any], summary: str, json_path: Path | None) -> None:
    """The human summary to stderr; all figures as JSON to stdout (and to ``json_path``)."""
    import json

    print(summary, file=sys.stderr)
    if json_path:
        json_path.write_text(json.dumps(results, indent=2))
    print(json.dumps(results))


def percentile(ordered: list[float], p: float) -> float:
    """The ``p``-th percentile of sorted values, by linear interpolation (numpy's default)."""
    pos = (len(ordered) - 1) * p / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def mean3(values: list[float]) -> float:
    """The mean of ``values`` to three places (nan for none): a rate as benchmarks report it."""
    return round(sum(values) / len(values), 3) if values else float("nan")


def share3(part: int, whole: int) -> float:
    """``part / whole`` to three places (0.0 when ``whole`` is 0)."""
    return round(part / whole, 3) if whole else 0.0
