"""Resident memory across many small write transactions, with and without `serve`'s allocator settings.

A hand-run benchmark, not a test (``tests/test_allocators.py`` is the short CI version). Each
measurement runs in a fresh interpreter, since resident memory is a per-process figure:

* ``keywords``: a Tantivy index of 2,000 documents, then ``--transactions`` write transactions
  (``KeywordIndex.writer()``: delete one file's documents, add one), the shape of a store's sync;
* ``vectors``: a LanceDB chunk table, then as many ``VectorStore.replace_paths`` of one 40-line
  file (about three chunks, 64-dimension vectors) followed by ``compact()``.

Each runs twice: as the library is (``default``) and after ``allocators.tune_for_long_running()``
(``tuned``), the settings ``mcp-memory serve`` applies. Printed: anonymous resident memory
(``RssAnon``) every 50 transactions, in MB.

    python bench/write_memory.py                     # 600 transactions each
    python bench/write_memory.py --transactions 1500 --json out.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import emit, loadavg, machine

_CHILD = r"""
import json, sys, tempfile
from pathlib import Path
import numpy as np

component, tuned, count = sys.argv[1], sys.argv[2] == "tuned", int(sys.argv[3])
if tuned:
    from mcp_memory.runtime.allocators import tune_for_long_running
    tune_for_long_running()

def anonymous_mb():
    for line in open("/proc/self/status"):
        if line.startswith("RssAnon:"):
            return round(int(line.split()[1]) / 1024, 1)

folder = Path(tempfile.mkdtemp())
marks = []
if component == "keywords":
    from mcp_memory.index.keywords import KeywordIndex
    index = KeywordIndex(folder / "keywords")
    with index.writer() as writer:
        for i in range(2000):
            writer.add(f"c{i}", f"memory/topic-{i % 100}.md", f"note number {i} about the project", None)
    for i in range(count):
        with index.writer() as writer:
            writer.delete_path("memory/topic-1.md")
            writer.add(f"new-{i}", "memory/topic-1.md", f"a stored memory, number {i}", None)
        if i % 50 == 0 or i == count - 1:
            marks.append((i + 1, anonymous_mb()))
else:
    from mcp_memory.core.chunking import chunk_markdown
    from mcp_memory.index.vectors import VectorStore
    store = VectorStore(str(folder / "vectors"), 64)
    text = "\n".join(f"line {j} of a note about the project and its people" for j in range(40))
    rng = np.random.default_rng(1)
    for i in range(count):
        chunks = chunk_markdown(text + f"\nstored memory {i}", "memory/topic-1.md")
        store.replace_paths(["memory/topic-1.md"], chunks,
                            {c.id: rng.random(64).astype(np.float32) for c in chunks})
        store.compact()
        if i % 50 == 0 or i == count - 1:
            marks.append((i + 1, anonymous_mb()))
print(json.dumps(marks))
"""


def measure(component: str, mode: str, transactions: int) -> list[tuple[int, float]]:
    out = subprocess.run([sys.executable, "-c", _CHILD, component, mode, str(transactions)],
                         capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        raise SystemExit(f"{component}/{mode} failed:\n{out.stderr[-3000:]}")
    return [tuple(m) for m in json.loads(out.stdout)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--transactions", type=int, default=600)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    results = {"machine": machine(), "loadavg_start": loadavg(), "transactions": args.transactions, "runs": {}}
    lines = []
    for component in ("keywords", "vectors"):
        for mode in ("default", "tuned"):
            marks = measure(component, mode, args.transactions)
            first, after_50, last = marks[0][1], marks[min(1, len(marks) - 1)][1], marks[-1][1]
            results["runs"][f"{component}/{mode}"] = {"marks": marks, "first": first, "last": last}
            lines.append(f"{component:8} {mode:7}  after 1: {first:6.1f} MB  after 51: {after_50:6.1f} MB  "
                         f"after {marks[-1][0]}: {last:6.1f} MB  growth {last - first:+6.1f} MB")
    results["loadavg_end"] = loadavg()
    emit(results, "\n".join(lines), args.json)


if __name__ == "__main__":
    main()
