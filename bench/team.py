"""A team of machines sharing one vector table on S3: visibility, embedding work saved, requests per store.

A hand-run benchmark, not a test (``tests/test_shared_vectors.py`` is the short CI version).
One moto S3 server runs in its own process behind a request counter; each "machine" is its own
process with its own workspace and index, all with ``index_path = "s3://team-bench/<run>"``.

Each round, every machine stores one memory at once (machine *i* writes to its own daily file,
so the files never conflict); then every machine receives the others' files, as a git pull
would bring them, syncs and embeds what is new (what ``serve``'s file watcher does), and
searches for each of the others' new memories. Reported:

* time until visible everywhere: from the start of a round's stores until every machine
  finds every memory of the round with its vector in place (file transfer itself costs 0
  here: git's part is measured apart), median and p95 over the rounds;
* embedding work: texts embedded by all machines, with the shared table and without it (the
  same rounds run again with a local index on each machine), and the share saved;
* object-store requests per store: every request the store served during the rounds (writes
  of new vectors, lookups by other machines, version checks), divided by the stores, by kind.

    python bench/team.py                                # 3 machines x 100 stores, the local embedder
    python bench/team.py --machines 3 --stores 20 --json out.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))
from machine import emit, loadavg, machine, percentile

BUCKET = "team-bench"
KEYS = {"aws_access_key_id": "bench", "aws_secret_access_key": "bench-secret", "aws_region": "us-east-1"}
SUBJECTS = ["billing", "search", "gateway", "scheduler", "ledger", "mailer", "exporter", "importer", "auth", "cache"]
OWNERS = ["Ana", "Bo", "Chen", "Dara", "Eli", "Femi", "Gus", "Hana", "Ivo", "Jun"]
DAYS = ["monday", "tuesday", "wednesday", "thursday", "friday"]
SYLLABLES = ["ka", "lo", "mi", "ru", "se", "ta", "vo", "ne", "pi", "du"]
THINGS = ["staging database", "payment webhook", "nightly backup", "feature flag", "TLS certificate", "build cache",
          "message queue", "search index", "CDN bucket", "audit log"]
TOOLS = ["Grafana", "Terraform", "pytest", "Sentry", "Kafka", "Redis", "Postgres", "Bazel", "Helm", "Datadog"]
TEMPLATES = [
    "{owner} decided that project {code} moves the {subject} service to {day} releases after the load test",
    "in project {code} the {thing} broke twice this week; {owner} suspects the {subject} retry loop",
    "{owner} prefers {tool} for everything in project {code}, and wants the {thing} checked every {n} days",
    "project {code}: migrating the {subject} service needs about {n} minutes of downtime on a {day} night",
    "remember that {owner} owns the {thing} credentials for project {code} and rotates them monthly",
    "the retro of project {code} found that {tool} alerts on the {thing} fired {n} times for nothing",
    "customers of project {code} asked for {subject} exports in CSV; {owner} promised them by {day}",
    "project {code} keeps its {thing} in {tool}; never touch it before {owner} has reviewed the plan",
]


# ----- the object store: moto behind a request counter ------------------------------------------
def serve_s3(port: int) -> None:
    """Run moto's S3 on ``port``, counting requests by kind; GET /_requests returns the counts."""
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import make_server

    moto = DomainDispatcherApplication(create_backend_app)
    counts: Counter[str] = Counter()
    lock = threading.Lock()

    def app(environ: dict[str, Any], start_response: Any) -> Any:
        if environ.get("PATH_INFO") == "/_requests":  # no bucket name starts with "_"
            with lock:
                body = json.dumps(counts).encode()
            start_response("200 OK", [("Content-Type", "application/json")])
            return [body]
        method = environ.get("REQUEST_METHOD", "?")
        kind = "LIST" if method == "GET" and "list-type" in environ.get("QUERY_STRING", "") else method
        with lock:
            counts[kind] += 1
        return moto(environ, start_response)

    make_server("127.0.0.1", port, app, threaded=True, request_handler=MotoRequestHandler).serve_forever()


def start_s3(log: Path) -> tuple[subprocess.Popen[bytes], str]:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, __file__, "--serve-s3", str(port)], stdout=log.open("wb"),
                               stderr=subprocess.STDOUT)
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            requests_served(endpoint)
            break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the S3 server did not start: see {log}") from None
            time.sleep(0.2)
    import boto3

    boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=KEYS["aws_access_key_id"],
                 aws_secret_access_key=KEYS["aws_secret_access_key"],
                 region_name=KEYS["aws_region"]).create_bucket(Bucket=BUCKET)
    return process, endpoint


def requests_served(endpoint: str) -> Counter[str]:
    with urllib.request.urlopen(endpoint + "/_requests", timeout=10) as response:
        return Counter(json.loads(response.read()))


# ----- one machine: a process answering commands on stdin ----------------------------------------
def run_machine(workspace: Path) -> None:
    """Serve one JSON command per stdin line (store, pull, find, stats), one JSON answer per line."""
    from mcp_memory.config import load_settings
    from mcp_memory.embedding import create_embedder
    from mcp_memory.embedding.base import Embedder
    from mcp_memory.memory import Memory

    class Counting(Embedder):
        """The configured embedder, counting the texts it embeds (queries aside)."""

        def __init__(self, inner: Embedder):
            self.inner = inner
            self.provider, self.model = inner.provider, inner.model
            self.batch_size, self.relevance_floor = inner.batch_size, inner.relevance_floor
            self.texts = 0

        @property
        def dimensions(self) -> int:
            return self.inner.dimensions

        def embed_documents(self, texts: list[str]) -> Any:
            self.texts += len(texts)
            return self.inner.embed_documents(texts)

        def embed_query(self, text: str) -> Any:
            return self.inner.embed_query(text)

        def embed_queries(self, texts: list[str]) -> Any:
            return self.inner.embed_queries(texts)

    settings = load_settings(workspace, environ={})
    inner = create_embedder(settings.embedding)
    assert inner is not None
    embedder = Counting(inner)
    memory = Memory(settings, embedder=embedder)
    memory.open()
    started = time.perf_counter()
    memory.index()  # a machine joining the team: its notes are there, its index is not
    ready = {"ready": True, "index_seconds": time.perf_counter() - started, "embedded": embedder.texts}
    embedder.texts = 0
    print(json.dumps(ready), flush=True)
    for line in sys.stdin:
        command = json.loads(line)
        started = time.perf_counter()
        answer: dict[str, Any] = {}
        if command["op"] == "store":
            answer["stored"] = memory.store(command["text"], today=dt.date.fromisoformat(command["day"])).stored
            answer["store_seconds"] = time.perf_counter() - started
            if memory.engine.shared is not None:  # the new vectors reach the bucket in the background
                answer["flushed"] = memory.engine.shared.flush()
        elif command["op"] == "pull":
            for rel, text in command["files"].items():  # what a git pull writes
                target = workspace / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                temporary = target.with_suffix(".pulling")
                temporary.write_text(text, encoding="utf-8")
                os.replace(temporary, target)
            memory.sync()
            memory.backfill()
            answer["pending"] = memory.pending_embeddings()
        elif command["op"] == "find":
            hits = memory.search(command["query"], max_results=3)
            # Found: a hit comes from the chunk holding the memory's line (the lines it cites, and
            # its snippet, may be a narrower part of that chunk).
            lines = (workspace / command["path"]).read_text("utf-8").splitlines()
            answer["found"] = any(
                hit.path == command["path"]
                and command["expect"] in "\n".join(lines[hit.chunk_start_line - 1 : hit.chunk_end_line])
                for hit in hits)
            if not answer["found"] and os.environ.get("TEAM_BENCH_DEBUG"):
                print(json.dumps({"query": command["query"], "hits": [h.snippet[:300] for h in hits]}), file=sys.stderr)
        elif command["op"] == "stats":
            shared = memory.engine.shared
            answer.update(embedded=embedder.texts, fetched=shared.fetched if shared else 0,
                          written=shared.written if shared else 0,
                          problem=shared.problem() if shared else None)
        elif command["op"] == "quit":
            memory.close()
            print(json.dumps({"bye": True}), flush=True)
            return
        answer["seconds"] = time.perf_counter() - started
        print(json.dumps(answer), flush=True)


class Machine:
    """The coordinator's handle on one machine process."""

    def __init__(self, name: str, workspace: Path, log: Path):
        self.name, self.workspace = name, workspace
        self.process = subprocess.Popen([sys.executable, __file__, "--machine", str(workspace)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log.open("wb"),
                                        text=True, bufsize=1)
        self.ready = self._answer()  # once opened and indexed

    def ask(self, **command: Any) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        return self._answer()

    def _answer(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit(f"machine {self.name} stopped: see its log beside {self.workspace}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        self.ask(op="quit")
        self.process.wait(timeout=60)


def all_at_once(machines: list[Machine], commands: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Send each machine its command at the same time; their answers, in order."""
    answers: list[dict[str, Any]] = [{} for _ in machines]

    def one(i: int) -> None:
        answers[i] = machines[i].ask(**commands[i])

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(machines))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


# ----- a run ---------------------------------------------------------------------------------------
def memory_text(machine_index: int, k: int) -> tuple[str, str, str]:
    """A memory, a question that should find it, and the words that mark its line.

    Varied enough that none is a near-duplicate of another (store would not write it again).
    """
    pick = random.Random(machine_index * 100_003 + k)
    n = machine_index * 1000 + k
    codename = "".join(SYLLABLES[(n // 10**d) % len(SYLLABLES)] for d in range(4))  # one per memory
    words = {"code": codename, "owner": pick.choice(OWNERS), "subject": pick.choice(SUBJECTS),
             "day": pick.choice(DAYS), "thing": pick.choice(THINGS), "tool": pick.choice(TOOLS),
             "n": pick.randint(2, 90)}
    text = pick.choice(TEMPLATES).format(**words)
    return text, f"what do we know about project {codename}", f"project {codename}"


def run(label: str, folder: Path, endpoint: str | None, args: argparse.Namespace) -> dict[str, Any]:
    """One scenario: ``endpoint`` None means every machine keeps its vectors to itself."""
    uri = f"s3://{BUCKET}/{label}-{int(time.time())}"
    machines: list[Machine] = []
    for i in range(args.machines):
        workspace = folder / label / f"machine-{i}"
        (workspace / "memory").mkdir(parents=True)
        config = f'[embedding]\nprovider = "{args.embedder}"\n'
        if endpoint:
            options = {"aws_endpoint": endpoint, "allow_http": "true", **KEYS}
            config = (f'index_path = "{uri}"\n{config}[storage_options]\n'
                      + "".join(f'{key} = "{value}"\n' for key, value in options.items()))
        (workspace / "mcp-memory.toml").write_text(config, encoding="utf-8")
        machines.append(Machine(f"machine-{i}", workspace, folder / label / f"machine-{i}.log"))
    days = [(dt.date(2026, 1, 1) + dt.timedelta(days=i)).isoformat() for i in range(args.machines)]
    before = requests_served(endpoint) if endpoint else Counter()
    visible: list[float] = []
    store_seconds: list[float] = []
    flush_seconds: list[float] = []  # after a store, until its vectors are in the bucket
    not_found = not_embedded = not_stored = 0
    started_all = time.perf_counter()
    for k in range(args.stores):
        memories = [memory_text(i, k) for i in range(args.machines)]
        round_start = time.perf_counter()
        answers = all_at_once(machines, [{"op": "store", "text": memories[i][0], "day": days[i]}
                                         for i in range(args.machines)])
        store_seconds += [a["store_seconds"] for a in answers]
        not_stored += sum(not a["stored"] for a in answers)
        flush_seconds += [a["seconds"] - a["store_seconds"] for a in answers]
        files = {f"memory/{days[i]}.md": (machines[i].workspace / "memory" / f"{days[i]}.md").read_text("utf-8")
                 for i in range(args.machines)}
        pulls = [{"op": "pull", "files": {rel: text for rel, text in files.items() if days[i] not in rel}}
                 for i in range(args.machines)]
        pulled = all_at_once(machines, pulls)
        for shift in range(1, args.machines):  # every machine looks for each other machine's memory
            other = [(i + shift) % args.machines for i in range(args.machines)]
            finds = all_at_once(machines, [{"op": "find", "query": memories[j][1], "expect": memories[j][2],
                                            "path": f"memory/{days[j]}.md"} for j in other])
            not_found += sum(not f["found"] for f in finds)
        not_embedded += sum(p["pending"] > 0 for p in pulled)
        visible.append(time.perf_counter() - round_start)
    elapsed = time.perf_counter() - started_all
    stats = all_at_once(machines, [{"op": "stats"}] * args.machines)
    served = requests_served(endpoint) - before if endpoint else Counter()
    # Then one more machine joins with every note (a fresh clone): how long its first index takes.
    newcomer_space = folder / label / "newcomer"
    shutil.copytree(machines[0].workspace / "memory", newcomer_space / "memory")
    shutil.copyfile(machines[0].workspace / "mcp-memory.toml", newcomer_space / "mcp-memory.toml")
    newcomer = Machine("newcomer", newcomer_space, folder / label / "newcomer.log")
    machines.append(newcomer)
    for m in machines:
        m.close()
    stores = args.machines * args.stores
    ordered = sorted(visible)
    return {
        "shared": bool(endpoint), "machines": args.machines, "stores": stores, "seconds": round(elapsed, 1),
        "visible_everywhere_s": {"median": round(statistics.median(ordered), 3),
                                 "p95": round(percentile(ordered, 95), 3), "max": round(ordered[-1], 3)},
        "store_s": {"median": round(statistics.median(store_seconds), 3),
                    "p95": round(percentile(sorted(store_seconds), 95), 3)},
        "in_bucket_after_store_s": {"median": round(statistics.median(flush_seconds), 3),
                                    "p95": round(percentile(sorted(flush_seconds), 95), 3)},
        "newcomer_index_s": round(newcomer.ready["index_seconds"], 2), "newcomer_embedded": newcomer.ready["embedded"],
        "not_stored": not_stored, "not_found": not_found, "machines_with_chunks_not_embedded": not_embedded,
        "embedded_texts": sum(s["embedded"] for s in stats),
        "embedded_by_machine": [s["embedded"] for s in stats],
        "fetched_from_shared": sum(s["fetched"] for s in stats),
        "written_to_shared": sum(s["written"] for s in stats),
        "problems": [s["problem"] for s in stats if s["problem"]],
        "requests": dict(served), "requests_per_store": round(sum(served.values()) / stores, 1),
        "requests_per_store_by_kind": {k: round(v / stores, 1) for k, v in sorted(served.items())},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--machines", type=int, default=3)
    parser.add_argument("--stores", type=int, default=100, help="stores per machine (default 100)")
    parser.add_argument("--embedder", choices=["local", "e5"], default="local")
    parser.add_argument("--no-baseline", dest="baseline", action="store_false",
                        help="skip the run without sharing (embedding work then has nothing to compare to)")
    parser.add_argument("--keep", action="store_true", help="keep the workspaces and logs")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--serve-s3", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--machine", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_s3:
        serve_s3(args.serve_s3)
        return
    if args.machine:
        run_machine(args.machine)
        return

    from mcp_memory import __version__

    folder = Path(tempfile.mkdtemp(prefix="team-bench-"))
    options = {k: v for k, v in vars(args).items() if k not in ("json", "serve_s3", "machine")}
    results: dict[str, Any] = {"machine": machine(mcp_memory=__version__), "loadavg_start": loadavg(), "args": options}
    s3, endpoint = start_s3(folder / "s3.log")
    try:
        results["shared"] = run("shared", folder, endpoint, args)
        if args.baseline:
            results["alone"] = run("alone", folder, None, args)
    finally:
        s3.terminate()
        s3.wait(timeout=10)
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    results["loadavg_end"] = loadavg()
    shared, alone = results["shared"], results.get("alone")
    lines = [f"{args.machines} machines x {args.stores} stores, embedder {args.embedder}",
             f"shared: visible everywhere in {shared['visible_everywhere_s']['median']} s median, "
             f"{shared['visible_everywhere_s']['p95']} s p95; store {shared['store_s']['median']} s median "
             f"(+{shared['in_bucket_after_store_s']['median']} s until in the bucket); "
             f"{shared['embedded_texts']} texts embedded; {shared['requests_per_store']} requests per store "
             f"{shared['requests_per_store_by_kind']}; newcomer indexed in {shared['newcomer_index_s']} s, "
             f"{shared['newcomer_embedded']} texts embedded; not found: {shared['not_found']}, "
             f"not embedded: {shared['machines_with_chunks_not_embedded']}"]
    if alone:
        saved = 1 - shared["embedded_texts"] / alone["embedded_texts"] if alone["embedded_texts"] else 0.0
        results["embedding_saved"] = round(saved, 3)
        lines.append(f"alone:  visible everywhere in {alone['visible_everywhere_s']['median']} s median, "
                     f"{alone['visible_everywhere_s']['p95']} s p95; store {alone['store_s']['median']} s median; "
                     f"{alone['embedded_texts']} texts embedded; newcomer indexed in {alone['newcomer_index_s']} s, "
                     f"{alone['newcomer_embedded']} texts embedded; not found: {alone['not_found']}, "
                     f"not embedded: {alone['machines_with_chunks_not_embedded']}")
        lines.append(f"embedding work saved by sharing: {saved:.0%}")
    emit(results, "\n".join(lines), args.json)


if __name__ == "__main__":
    main()
