"""What a process holds while it loads a large index, and after: peak and resident memory.

A hand-run benchmark, not a test. It removes the saved search snapshot of ``--workspace`` (an
indexed workspace, e.g. the million-chunk one ``bench/speed.py`` writes) so that one process
loads the chunk table from LanceDB, then searches; a second process loads the snapshot that the
first saved. Each prints ``/proc/self/status`` (MB) after opening, after the load, after the first
search and after four more, and the load's wall time.

    python bench/load_peak.py --workspace /tmp/mcp-memory-speed/ws-1000000

Linux only (``/proc``). The saved file is written again by the first process, so the workspace
is left as it was found.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

QUERIES = ["When did Caroline go to the LGBTQ support group?", "What did Melanie paint recently?",
           "Where did John move?", "What is Caroline's identity?", "What does Maria do for a living?"]
FIELDS = ("VmHWM", "VmRSS", "RssAnon", "RssFile")


def status() -> dict[str, int]:
    found = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in FIELDS:
            found[key] = int(value.split()[0]) // 1024
    return found


def one_process(workspace: Path, from_lance: bool) -> dict:
    from mcp_memory.config import load_settings
    from mcp_memory.index import saved_snapshot
    from mcp_memory.memory import Memory

    settings = load_settings(workspace, environ={})
    if from_lance:
        saved_snapshot.saved_path(settings.index_dir).unlink(missing_ok=True)
    out: dict = {"from": "lancedb" if from_lance else "saved file"}
    memory = Memory(settings).open()
    out["opened"] = status()
    started = time.perf_counter()
    memory.engine.refresh_snapshot()
    out["load_s"] = round(time.perf_counter() - started, 1)
    out["searched_from_saved_file"] = memory.engine.snapshot_from_saved
    out["loaded"] = status()
    started = time.perf_counter()
    memory.search(QUERIES[0])
    out["first_search_ms"] = round((time.perf_counter() - started) * 1000)
    out["first_search"] = status()
    for query in QUERIES[1:]:
        memory.search(query)
    out["five_searches"] = status()
    memory.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workspace", type=Path, required=True)
    parser.add_argument("--child", choices=("lancedb", "saved"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(one_process(args.workspace, args.child == "lancedb")))
        return
    from bench.machine import loadavg, machine

    print(json.dumps({"machine": machine(), "load": loadavg(), "workspace": str(args.workspace)}))
    for child in ("lancedb", "saved"):  # each in a fresh process: peaks are per process
        done = subprocess.run([sys.executable, __file__, "--workspace", str(args.workspace), "--child", child],
                              capture_output=True, text=True, check=True)
        print(done.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
