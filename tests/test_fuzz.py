"""Short runs of the fuzz targets in fuzz/ (the long runs are recorded in docs/reliability.md)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

FUZZ = Path(__file__).resolve().parents[1] / "fuzz"
RUNS = "200000" if os.environ.get("MCP_MEMORY_LONG_TESTS") else "3000"

pytestmark = pytest.mark.skipif(importlib.util.find_spec("atheris") is None,
                                reason="atheris has no wheel for this platform")


@pytest.mark.parametrize("target", ["fuzz_chunking.py", "fuzz_query.py"])
def test_fuzz_target_short_run(target: str, tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(FUZZ / target), f"-runs={RUNS}", "-max_total_time=60"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"Done {RUNS} runs" in proc.stderr or "Done" in proc.stderr
