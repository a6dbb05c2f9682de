"""A year of conversation transcripts as a source: how long until they are searchable?

A hand-run benchmark, not a test. It writes ``--megabytes`` of Claude Code-shaped JSONL
transcripts (``[sessions] paths``) into a fresh workspace: sessions of LoCoMo turns (read from
``--data`` at run time, never copied into the repository) as the user's and the assistant's
messages, between tool calls and tool results of a few hundred bytes to 15 KB (file reads, command
output), which make up most of a real transcript's bytes and are not indexed. Then, timed:

1. the first sync (every transcript rendered, chunked, written to the keyword index and the chunk
   table without vectors): JSONL megabytes a second, chunks;
2. a keyword search right after it, before any vector: a sentence of one transcript found or not;
3. ``--embed-seconds`` of the chunk vectors' backfill: chunks a second, and the time the rest needs.

    python bench/transcripts.py --megabytes 200 --embed-seconds 60
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.locomo import DEFAULT_DATA
from bench.machine import emit, loadavg, machine

_FILLER = ("def handler(event, context):\n    return {'status': 200, 'body': json.dumps(event)}\n",
           "2026-03-04T10:22:31Z INFO worker[12] processed batch 8812 in 412 ms (queue depth 3)\n",
           "| id | name | status | updated |\n|----|------|--------|---------|\n| 41 | api  | ok     | 10:21   |\n")


def turns_of(data: Path) -> list[str]:
    conversations = json.loads(data.read_text(encoding="utf-8"))
    out = []
    for item in conversations:
        conv = item["conversation"]
        n = 1
        while f"session_{n}" in conv:
            out.extend(turn["text"] for turn in conv[f"session_{n}"] if turn.get("text"))
            n += 1
    return out


def record(kind: str, content: object, at: int) -> str:
    role = "user" if kind == "user" else "assistant"
    return json.dumps({"type": kind, "uuid": f"u{at}", "timestamp": "2026-03-04T10:00:00Z",
                       "message": {"role": role, "content": content}}, ensure_ascii=False)


def write_transcripts(folder: Path, megabytes: float, turns: list[str], seed: int) -> tuple[int, int, str]:
    """Transcripts totalling about ``megabytes``; their count, the messages written, and one
    sentence of the last one (a keyword search should find it)."""
    rng = random.Random(seed)
    folder.mkdir(parents=True)
    target, written, files, messages, at = int(megabytes * 1_000_000), 0, 0, 0, 0
    planted = ""
    while written < target:
        lines = []
        for _ in range(rng.randint(20, 120)):  # one session: 20-120 exchanges
            asked = rng.choice(turns)
            lines.append(record("user", asked, at))
            for _ in range(rng.randint(0, 2)):  # tool calls and their results
                size = rng.choice((300, 1_500, 5_000, 15_000))
                body = "".join(rng.choice(_FILLER) for _ in range(size // 90))
                lines.append(record("assistant", [{"type": "tool_use", "id": f"t{at}", "name": "Read",
                                                   "input": {"file_path": f"/src/m{at}.py"}}], at))
                lines.append(record("user", [{"type": "tool_result", "tool_use_id": f"t{at}", "content": body}], at))
                at += 1
            answer = " ".join(rng.choice(turns) for _ in range(rng.randint(1, 4)))
            lines.append(record("assistant", [{"type": "text", "text": answer}], at))
            messages += 2
            at += 1
            planted = asked
        text = "\n".join(lines) + "\n"
        (folder / f"session-{files:05d}.jsonl").write_text(text, encoding="utf-8")
        written += len(text.encode("utf-8"))
        files += 1
    return files, messages, planted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--megabytes", type=float, default=200.0)
    parser.add_argument("--embed-seconds", type=float, default=60.0)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", action="store_true", help="leave the workspace in place")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    from mcp_memory.config import load_settings
    from mcp_memory.memory import Memory

    root = Path(tempfile.mkdtemp(prefix="mcp-memory-transcripts-"))
    workspace, folder = root / "ws", root / "transcripts"
    (workspace / "memory").mkdir(parents=True)
    started = time.perf_counter()
    files, messages, planted = write_transcripts(folder, args.megabytes, turns_of(args.data), args.seed)
    out: dict = {"machine": machine(), "load": loadavg(), "megabytes": args.megabytes, "files": files,
                 "messages": messages, "write_s": round(time.perf_counter() - started, 1)}
    settings = load_settings(workspace, environ={}, overrides={"sessions.paths": [str(folder)]})
    try:
        with Memory(settings) as memory:
            started = time.perf_counter()
            report = memory.sync()
            out["sync_s"] = round(time.perf_counter() - started, 1)
            out["megabytes_per_s"] = round(args.megabytes / out["sync_s"], 2)
            status = memory.status()
            out["chunks"] = status.chunks
            started = time.perf_counter()
            hits = memory.search(planted, source="sessions")
            out["keyword_search_ms"] = round((time.perf_counter() - started) * 1000, 1)
            out["planted_found_before_vectors"] = any(planted[:40] in hit.snippet for hit in hits)
            out["sync"] = str(report)[:200]
            deadline = time.monotonic() + args.embed_seconds
            started = time.perf_counter()
            embedded = memory.backfill(should_stop=lambda: time.monotonic() > deadline, lines=False)
            seconds = time.perf_counter() - started
            out["embedded"] = embedded
            out["embed_chunks_per_s"] = round(embedded / seconds, 1) if seconds else None
            rest = status.chunks - embedded
            out["embed_rest_minutes"] = round(rest / out["embed_chunks_per_s"] / 60, 1) if embedded else None
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    out["load_end"] = loadavg()
    summary = (f"{files} transcripts, {args.megabytes} MB, {messages} messages: first sync {out['sync_s']} s "
               f"({out['megabytes_per_s']} MB/s), {out['chunks']} chunks; keyword search before any vector "
               f"{out['keyword_search_ms']} ms, found: {out['planted_found_before_vectors']}; vectors "
               f"{out['embed_chunks_per_s']} chunks/s, the rest in {out['embed_rest_minutes']} min")
    emit(out, summary, args.json)


if __name__ == "__main__":
    main()
