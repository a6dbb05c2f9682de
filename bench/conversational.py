"""Conversational queries: the conversation so far as the query, as a client passes it.

A question asked alone ("What did Caroline research?") is not how a client often searches: it
passes the conversation so far, several turns of small talk ending with the user's question.
This benchmark builds such queries from three sources and runs them in the three search modes.

* ``--source locomo``: LoCoMo (``../shared/data/locomo/locomo10.json``, CC BY-NC 4.0, read in
  place, never copied), the workspace of ``bench/locomo.py`` (one file per session). For each
  question with evidence: 2-8 consecutive turns of a LATER session of the same conversation
  (``Speaker: text`` lines; an earlier non-evidence session when the evidence is in the last one)
  and the question as the last turn, 60-150 words in all. Two variants: ``plain`` (the question
  as it is) and ``aside`` ("... by the way, remind me, <question>").
* ``--source dialogue``: the same shape from the bilingual set of ``bench/dialogue.py``
  (``bench/data/dialogues.json``; Chinese queries measured in characters, 100-250), per language.
* ``--source ours``: ``bench/data/conversations.jsonl``, written for this benchmark: one short
  memory per file, a 3-10-turn conversation of about 100 words whose last user turn relates to
  one memory (often indirectly), distractor memories on nearby topics; half Chinese.
* ``--source facts``: LoCoMo again, in the shape an agent's own memory takes: one short fact per
  file (the dataset's per-session observations, "Caroline attended an LGBTQ support group", 2,541
  of them, dated by their session), never the conversations themselves. A question's relevant
  files are the facts drawn from its evidence turns (questions whose evidence produced no fact
  are left out); the queries are built as for ``locomo`` (a later session's turns, then the
  question), and the facts of that later session are not scored.

``--distractors NAME=PATH`` (repeatable) adds other people's memories, one short memory per file
under ``memory/distractors/``, which no query is about: a small set (ours: 44 queries over a few
dozen files; the dialogues: 57 sessions) is easy at any setting, and a user's memory holds
thousands of notes. ``facts=LOCOMO_JSON``: LoCoMo's observations (English, 2,541);
``memorybank=EVAL_DATA``: what MemoryBank's users said to their companion, one message per file
(English and Chinese; MIT licence, read in place from the folder named).

Every query is seeded from its id (``--seed``), so a run is reproducible. Each source has a
dev and a test split (LoCoMo: even/odd conversations; dialogue: the first two conversations of
each language are dev; ours: the ``split`` field); tune on dev only.

Figures are those of ``bench/locomo.py`` (``score_question``): R@5 and MRR over the distinct
files of the default result count, hit@5 and evidence coverage@5; per group (source, variant,
language, split). The session the conversation's turns are taken from is in the workspace (it
holds the query's own words) and is skipped when scoring (``score``); R@10 is not measured.

    python bench/conversational.py --source ours
    python bench/conversational.py --source locomo --workspace /tmp/conv-locomo --today 2026-11-26 --sample 400
    python bench/conversational.py --source dialogue --modes default,precise --json /tmp/conv.json
    python bench/conversational.py --source ours --workspace /tmp/conv-ours-crowd \
        --distractors facts=../shared/data/locomo/locomo10.json --distractors memorybank=/path/to/eval_data
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import re
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import dialogue as dialogue_bench
from bench import locomo as locomo_bench
from bench.locomo import Scores, run_search
from bench.machine import emit, loadavg, machine
from mcp_memory.config import load_settings
from mcp_memory.memory import Memory

OURS = ROOT / "bench" / "data" / "conversations.jsonl"
MODES = ("default", "precise", "deep")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_WORD = re.compile(r"[A-Za-z0-9'’-]+")


@dataclass
class Query:
    id: str
    text: str
    group: str  # source/variant/lang
    split: str  # dev or test
    files: set[str]  # relevant files (workspace-relative)
    lines: set[tuple[str, int]]  # (path, line) of each evidence line
    skip: frozenset[str] = frozenset()  # the file the conversation's own turns come from: not scored


def words(text: str) -> float:
    """Words of ``text``; a Chinese character counts as half a word (about 1.5-2 characters a word)."""
    return len(_WORD.findall(text)) + len(_CJK.findall(text)) / 2


def conversation(turns: list[tuple[str, str]], asker: str, question: str, rng: random.Random, variant: str,
                 lang: str) -> str:
    """2-8 consecutive ``turns`` then ``question`` as ``asker``'s last turn, 60-150 words in all."""
    if variant == "aside":
        question = ("对了，顺便提醒我一下，" + question if lang == "zh"
                    else "Anyway, that reminds me. By the way, remind me, " + question[:1].lower() + question[1:])
    target = rng.randint(60, 150)
    budget = target - words(question)
    start = rng.randrange(max(1, len(turns) - 1))
    chosen: list[tuple[str, str]] = []
    for speaker, text in turns[start:]:
        if len(chosen) >= 8 or (len(chosen) >= 2 and budget <= 0):
            break
        chosen.append((speaker, text))
        budget -= words(text) + 1
    # Near the session's end: earlier turns until the length is reached.
    while start > 0 and len(chosen) < 8 and (len(chosen) < 2 or budget > 0):
        start -= 1
        chosen.insert(0, turns[start])
        budget -= words(turns[start][1]) + 1
    # Over the longest length: drop turns from the front (keep two), then cut the first one short.
    while len(chosen) > 2 and budget < -(150 - target):
        budget += words(chosen[0][1]) + 1
        chosen.pop(0)
    if budget < -(150 - target) and chosen:
        speaker, text = chosen[0]
        keep = max(5, int(words(text) + budget + (150 - target)))
        text = text[: keep * 2] if lang == "zh" else " ".join(text.split()[-keep:])
        chosen[0] = (speaker, text)
    lines = [f"{speaker}: {text}" for speaker, text in chosen]
    return "\n".join([*lines, f"{asker}: {question}"])


def asker_of(speakers: tuple[str, str], question: str, rng: random.Random) -> str:
    """Who asks: a speaker the question does not name, else either."""
    unnamed = [s for s in speakers if s not in question]
    return rng.choice(unnamed if len(unnamed) == 1 else list(speakers))


def later_session(evidence: set[int], count: int, rng: random.Random) -> int:
    """A session after the last evidence session; else one with no evidence (1-based)."""
    later = [n for n in range(1, count + 1) if n > max(evidence)]
    return rng.choice(later or [n for n in range(1, count + 1) if n not in evidence] or [1])


def locomo_conversation(conv: dict, evidence: set[int], count: int, question: str,
                        rng: random.Random, variant: str) -> tuple[int, str]:
    """A LoCoMo query: the turns of a session later than the ``evidence`` sessions (of ``count``),
    then ``question`` asked by one of the speakers. Returns that session's number and the text."""
    later = later_session(evidence, count, rng)
    turns = [(t["speaker"], t["text"].replace("\n", " ")) for t in conv[f"session_{later}"]]
    asker = asker_of((conv["speaker_a"], conv["speaker_b"]), question, rng)
    return later, conversation(turns, asker, question, rng, variant, "en")


def locomo_queries(workspace: Path, data_path: Path, seed: int, sample: int | None) -> list[Query]:
    data = json.loads(data_path.read_text(encoding="utf-8"))
    locomo_bench.write_workspace(data, workspace)
    out: list[Query] = []
    for ci, sample_data in enumerate(data):
        conv = sample_data["conversation"]
        sessions = {}
        n = 1
        while f"session_{n}" in conv:
            date = locomo_bench.session_date(conv[f"session_{n}_date_time"])
            sessions[n] = (f"memory/locomo/conv-{ci:02d}/{date.isoformat()}-session-{n:02d}.md", conv[f"session_{n}"])
            n += 1
        for qi, qa in enumerate(sample_data["qa"]):
            evidence = [(int(s), int(t)) for s, t in re.findall(r"D(\d+):(\d+)", " ".join(qa.get("evidence", [])))]
            evidence = [(s, t) for s, t in evidence if s in sessions]
            if not evidence:
                continue
            lines = set()
            for s, t in evidence:
                path, turns = sessions[s]
                for i, turn in enumerate(turns):
                    if turn["dia_id"] == f"D{s}:{t}":
                        lines.add((path, 5 + i))
            if not lines:
                continue
            for variant in ("plain", "aside"):
                rng = random.Random(f"{seed}:locomo:{ci}:{qi}:{variant}")
                later, text = locomo_conversation(conv, {s for s, _ in evidence}, len(sessions), qa["question"],
                                                  rng, variant)
                out.append(Query(f"locomo-{ci}-{qi}-{variant}", text, f"locomo/{variant}/en",
                                 "dev" if ci % 2 == 0 else "test", {p for p, _ in lines}, lines,
                                 frozenset({sessions[later][0]})))
    return _sample(out, seed, sample)


def facts_workspace(data: list[dict], workspace: Path) -> tuple[dict[tuple[int, str], set[str]],
                                                                  dict[tuple[int, int], set[str]]]:
    """One file per LoCoMo observation, ``memory/facts/conv-NN/<session date>-sNN-KKK.md`` (a dated
    name, as a daily log's), holding the fact as one bullet. Returns the files of each (conversation,
    dialogue turn) the facts were drawn from, and those of each (conversation, session)."""
    folder = workspace / "memory" / "facts"
    wanted: dict[Path, str] = {}
    by_turn: dict[tuple[int, str], set[str]] = defaultdict(set)
    by_session: dict[tuple[int, int], set[str]] = defaultdict(set)
    for ci, key, k, text, turns in _observations(data):
        conv = data[ci]["conversation"]
        n = int(re.findall(r"\d+", key)[0])
        if f"session_{n}_date_time" not in conv:
            continue
        date = locomo_bench.session_date(conv[f"session_{n}_date_time"])
        rel = f"memory/facts/conv-{ci:02d}/{date.isoformat()}-s{n:02d}-{k:03d}.md"
        wanted[workspace / rel] = f"- {' '.join(text.split())}\n"
        by_session[(ci, n)].add(rel)
        for dia in re.findall(r"D\d+:\d+", str(turns)):
            by_turn[(ci, dia)].add(rel)
    locomo_bench.write_wanted(folder, wanted)
    return by_turn, by_session


def _observations(data: list[dict]) -> Iterator[tuple[int, str, int, str, object]]:
    """(conversation, session key, index within the session, fact, its dialogue turns) of every
    LoCoMo observation, the speakers of a session in name order."""
    for ci, sample_data in enumerate(data):
        for key, by_speaker in sample_data.get("observation", {}).items():
            facts = [fact for speaker in sorted(by_speaker) for fact in by_speaker[speaker]]
            for k, (text, turns) in enumerate(facts):
                yield ci, key, k, str(text), turns


def facts_queries(workspace: Path, data_path: Path, seed: int, sample: int | None) -> list[Query]:
    """The ``locomo`` queries over a workspace of single facts (``facts_workspace``): relevant files
    are the facts of the question's evidence turns; every fact's only line is its evidence. The facts
    of the session the conversation's turns come from are not scored: they hold the query's words
    (as that session's file does in ``locomo``)."""
    data = json.loads(data_path.read_text(encoding="utf-8"))
    by_turn, by_session = facts_workspace(data, workspace)
    out: list[Query] = []
    for ci, sample_data in enumerate(data):
        conv = sample_data["conversation"]
        count = 1
        while f"session_{count + 1}" in conv:
            count += 1
        for qi, qa in enumerate(sample_data["qa"]):
            turns_named = re.findall(r"D(\d+):(\d+)", " ".join(qa.get("evidence", [])))
            files = set().union(*(by_turn.get((ci, f"D{s}:{t}"), set()) for s, t in turns_named)) if turns_named \
                else set()
            if not files:
                continue
            evidence = {int(s) for s, _ in turns_named}
            for variant in ("plain", "aside"):
                rng = random.Random(f"{seed}:facts:{ci}:{qi}:{variant}")
                later, text = locomo_conversation(conv, evidence, count, qa["question"], rng, variant)
                out.append(Query(f"facts-{ci}-{qi}-{variant}", text, f"facts/{variant}/en",
                                 "dev" if ci % 2 == 0 else "test", files, {(path, 1) for path in files},
                                 frozenset(by_session.get((ci, later), set()) - files)))
    return _sample(out, seed, sample)


def dialogue_queries(workspace: Path, data_path: Path, seed: int) -> list[Query]:
    data = json.loads(data_path.read_text(encoding="utf-8"))
    questions = dialogue_bench.write_workspace(data, workspace)
    by_conv = defaultdict(list)
    for q in questions:
        by_conv[q.conv].append(q)
    out: list[Query] = []
    for conv in data["conversations"]:
        dev = conv["id"].endswith(("-1", "-2"))
        for qi, (qa, q) in enumerate(zip(conv["questions"], by_conv[conv["id"]], strict=True)):
            evidence = {s for s, _ in qa["evidence"]}
            for variant in ("plain", "aside"):
                rng = random.Random(f"{seed}:dialogue:{conv['id']}:{qi}:{variant}")
                later = later_session(evidence, len(conv["sessions"]), rng)
                turns = [(t["speaker"], t["text"]) for t in conv["sessions"][later - 1]["turns"]]
                asker = asker_of(tuple(conv["speakers"]), qa["q"], rng)
                text = conversation(turns, asker, qa["q"], rng, variant, qa["lang"])
                own = dialogue_bench.session_path(conv["id"], later, conv["sessions"][later - 1]["date"])
                out.append(Query(f"dialogue-{conv['id']}-{qi}-{variant}", text, f"dialogue/{variant}/{q.group}",
                                 "dev" if dev else "test", q.sessions, q.lines, frozenset({own})))
    return out


def ours_queries(workspace: Path, data_path: Path) -> list[Query]:
    """One file per memory (``memory/conversations/<id>.md``); each query's relevant file is its memory's."""
    records = [json.loads(line) for line in data_path.read_text(encoding="utf-8").splitlines() if line.strip()]
    folder = workspace / "memory" / "conversations"
    wanted = {}
    for r in records:
        if r["kind"] == "memory":
            wanted[folder / f"{r['id']}.md"] = f"- {r['text']}\n"
    locomo_bench.write_wanted(folder, wanted)
    out = []
    for r in records:
        if r["kind"] != "query":
            continue
        text = "\n".join(f"{t['role']}: {t['text']}" for t in r["turns"])
        path = f"memory/conversations/{r['memory']}.md"
        out.append(Query(r["id"], text, f"ours/{r['lang']}", r["split"], {path}, {(path, 1)}))
    return out


DISTRACTORS = ("facts", "memorybank")


def write_distractors(workspace: Path, specs: list[str]) -> None:
    """Other people's memories, one per file under ``memory/distractors/NAME/`` (``--distractors``);
    none given: that folder is emptied, so a workspace serves runs with and without."""
    wanted: dict[Path, str] = {}
    folder = workspace / "memory" / "distractors"
    for spec in specs:
        name, _, where = spec.partition("=")
        if name not in DISTRACTORS or not where:
            raise SystemExit(f"--distractors takes NAME=PATH with NAME one of {', '.join(DISTRACTORS)}; got {spec!r}")
        for key, text in _distractor_texts(name, Path(where)):
            wanted[folder / name / f"{key}.md"] = f"- {' '.join(text.split())}\n"
    locomo_bench.write_wanted(folder, wanted)


def _distractor_texts(name: str, where: Path) -> list[tuple[str, str]]:
    """(file key, memory) of a distractor source."""
    out: list[tuple[str, str]] = []
    if name == "facts":
        return [(f"conv-{ci:02d}/{key}-{k:03d}", text)
                for ci, key, k, text, _ in _observations(json.loads(where.read_text(encoding="utf-8")))]
    for lang in ("en", "cn"):
        bank = json.loads((where / lang / f"memory_bank_{lang}.json").read_text(encoding="utf-8"))
        for ui, (_, record) in enumerate(sorted(bank.items())):
            for date, turns in sorted(record.get("history", {}).items()):
                out.extend((f"{lang}/user-{ui:02d}/{date}-{ti:02d}", str(turn.get("query", "")))
                           for ti, turn in enumerate(turns) if str(turn.get("query", "")).strip())
    return out


def _sample(queries: list[Query], seed: int, sample: int | None) -> list[Query]:
    """``sample`` questions (both variants of each), drawn reproducibly."""
    if not sample:
        return queries
    ids = sorted({q.id.rsplit("-", 1)[0] for q in queries})
    keep = set(random.Random(seed).sample(ids, min(sample, len(ids))))
    return [q for q in queries if q.id.rsplit("-", 1)[0] in keep]


def score(memory: Memory, mode: str, q: Query, today: dt.date, into: list[Scores]) -> tuple[float, int | None]:
    """One query in one mode, as ``bench/locomo.py`` scores it (R@5, hit@5, MRR, coverage@5 over the
    default result count), except that the file the conversation's own turns come from is not
    counted: it holds the query's words, and the held-out shape (one memory per file, the
    conversation not among them) has no such file. The search asks for as many more hits as there
    are skipped files, so the scored list holds the default count. R@10 is left out. Returns the
    latency (ms) and the rank of the first relevant file (None when not among the hits)."""
    k = memory.settings.search.max_results
    started = time.perf_counter()
    # The skipped files are asked for on top of the default count and dropped, so that the
    # list scored is the default count of the others (a later session holds dozens of facts).
    hits = run_search(memory, mode, q.text, today, min(100, k + len(q.skip)) if q.skip else None)
    hits = [h for h in hits if h.path not in q.skip][:k]
    latency = (time.perf_counter() - started) * 1000
    ranked = list(dict.fromkeys(h.path for h in hits))
    first = next((i for i, path in enumerate(ranked) if path in q.files), None)
    covered = sum(1 for path, line in q.lines if any(h.path == path and h.start_line <= line <= h.end_line
                                                     for h in hits[:5]))
    for s in into:
        s.recall5.append(len(q.files & set(ranked[:5])) / len(q.files))
        s.hit5.append(1.0 if first is not None and first < 5 else 0.0)
        s.rr.append(1.0 / (first + 1) if first is not None else 0.0)
        s.coverage.append(covered / len(q.lines))
        s.lines_per_hit.extend(h.end_line - h.start_line + 1 for h in hits[:5])
    return latency, first


def evaluate(memory: Memory, queries: list[Query], today: dt.date, mode: str) -> tuple[dict, dict, dict]:
    """Scores per group, latency, and the rank of each query's first relevant file (None: not found)."""
    table: dict[str, Scores] = defaultdict(Scores)
    latencies: list[float] = []
    ranks: dict[str, int | None] = {}
    for q in queries:
        into = [table["overall"], table[q.group], table[f"{q.group}/{q.split}"], table[f"split:{q.split}"]]
        latency, ranks[q.id] = score(memory, mode, q, today, into)
        latencies.append(latency)
    latencies.sort()
    timing = {"p50_ms": round(latencies[len(latencies) // 2], 2),
              "p95_ms": round(latencies[int(len(latencies) * 0.95)], 2)}
    return {k: v.row() for k, v in sorted(table.items())}, timing, ranks


def below_default(results: dict, mode: str) -> dict[str, int]:
    """Queries whose first relevant file ``mode`` ranks lower than the default search does."""
    default, other = results["modes"]["default"]["ranks"], results["modes"][mode]["ranks"]
    far = 10**6
    worse = [q for q in default if (other[q] if other[q] is not None else far) > (default[q] if default[q] is not None
                                                                                   else far)]
    lost = [q for q in worse if default[q] is not None and default[q] < 5 and (other[q] is None or other[q] >= 5)]
    return {"queries": len(default), "ranked_lower": len(worse), "lost_from_top5": len(lost)}


def summary(results: dict) -> str:
    modes = list(results["modes"])
    out = [f"{'':28s}{'n':>5s}  " + " | ".join(f"{m + ' R@5/MRR':^16s}" for m in modes)]
    for row in results["modes"][modes[0]]["scores"]:
        n = results["modes"][modes[0]]["scores"][row]["n"]
        scores = [results["modes"][m]["scores"][row] for m in modes]
        cells = " | ".join(f"{s['R@5']:7.3f} {s['MRR']:7.3f} " for s in scores)
        out.append(f"{row:28s}{n:5d}  {cells}")
    for m in modes:
        lat = results["modes"][m]["latency"]
        worse = results["modes"][m].get("below_default")
        versus = (f"  below default on {worse['ranked_lower']} of {worse['queries']} queries, "
                  f"out of the top 5 on {worse['lost_from_top5']}") if worse else ""
        out.append(f"{m:8s} p50 {lat['p50_ms']:8.1f} ms  p95 {lat['p95_ms']:8.1f} ms{versus}")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", choices=("locomo", "facts", "dialogue", "ours"), default="ours")
    parser.add_argument("--data", type=Path, default=None, help="the source's data file")
    parser.add_argument("--workspace", type=Path, default=None)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--sample", type=int, default=None, help="LoCoMo: this many questions (both variants)")
    parser.add_argument("--split", choices=("dev", "test", "all"), default="all")
    parser.add_argument("--today", default=None, help="reference date of the searches (default: today)")
    parser.add_argument("--show", type=int, default=0, help="print this many queries first")
    parser.add_argument("--distractors", action="append", default=[], metavar="NAME=PATH",
                        help="other people's memories beside the set's: facts=LOCOMO_JSON, memorybank=EVAL_DATA")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not modes or any(m not in MODES for m in modes):
        raise SystemExit(f"--modes takes a comma-separated subset of {', '.join(MODES)}; got {args.modes!r}")
    workspace = args.workspace or Path(os.environ.get("TMPDIR", "/tmp")) / f"mcp-memory-conv-{args.source}"
    if args.source == "locomo":
        queries = locomo_queries(workspace, args.data or locomo_bench.DEFAULT_DATA, args.seed, args.sample)
    elif args.source == "facts":
        queries = facts_queries(workspace, args.data or locomo_bench.DEFAULT_DATA, args.seed, args.sample)
    elif args.source == "dialogue":
        queries = dialogue_queries(workspace, args.data or dialogue_bench.DEFAULT_DATA, args.seed)
    else:
        queries = ours_queries(workspace, args.data or OURS)
    write_distractors(workspace, args.distractors)
    if args.split != "all":
        queries = [q for q in queries if q.split == args.split]
    for q in queries[: args.show]:
        print(f"--- {q.id} ({words(q.text):.0f} words) -> {sorted(q.files)}\n{q.text}", file=sys.stderr)

    memory = Memory(load_settings(workspace, environ={})).open()
    started = time.perf_counter()
    memory.sync()
    memory.backfill()
    status = memory.status().to_dict()
    index_s = time.perf_counter() - started
    lengths = sorted(words(q.text) for q in queries)
    print(f"{args.source}: files {status['files']}, chunks {status['chunks']}, index {index_s:.1f}s, "
          f"queries {len(queries)}, words p50 {lengths[len(lengths) // 2]:.0f} "
          f"(min {lengths[0]:.0f}, max {lengths[-1]:.0f})", file=sys.stderr)
    today = dt.date.fromisoformat(args.today) if args.today else dt.date.today()
    results = {"machine": machine(), "load": loadavg(), "source": args.source, "seed": args.seed,
               "sample": args.sample, "distractors": args.distractors, "split": args.split,
               "files": status["files"], "chunks": status["chunks"],
               "embedder": status["embedder"], "line_vectors": status.get("line_vectors"),
               "today": today.isoformat(), "queries": len(queries), "modes": {}}
    for mode in modes:
        locomo_bench.run_search(memory, mode, "warm up", today)
        dialogue_bench.forget_query_vectors(memory)
        table, timing, ranks = evaluate(memory, queries, today, mode)
        results["modes"][mode] = {"scores": table, "latency": timing, "ranks": ranks}
    for mode in modes:
        if mode != "default" and "default" in results["modes"]:
            results["modes"][mode]["below_default"] = below_default(results, mode)
    memory.close()
    emit(results, summary(results), args.json)


if __name__ == "__main__":
    main()
