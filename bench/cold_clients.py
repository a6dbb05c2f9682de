"""Cold sessions inside the real clients: are the memory tools in the model's first request, and what
do the prompt hooks cost as the client runs them?

A hand-run benchmark, not a test. It drives the installed clients (``bash .ci/clients.sh`` puts
them in ``.ci-clients/``) through the end-to-end harness of ``tests/e2e`` (a throwaway HOME,
workspace and project per world, a scripted model on 127.0.0.1, ``mcp-memory setup <client>``),
with the prompt "help me set up a new Node.js project". The workspace holds the end-to-end seed
and one more memory, "The user prefers pnpm over npm and yarn.", which shares no word with the
prompt: only the vectors find it (the same pair as ``bench/hooks.py``).

For each client (Claude Code and Codex CLI by default; Gemini CLI on request):

* cold sessions (``--runs``): each in a new world, indexed beforehand with ``mcp-memory index``
  (so the model's prepared cache of that HOME exists, as for anyone who used it before) unless
  ``--no-index``; no ``mcp-memory`` process of the world runs before (checked), then one
  headless session. Counted: whether the first request offering tools (as the scripted model
  recorded it) holds ``memory_search`` and ``memory_store``; seconds from the client's spawn to
  that request, to the memory server connected (Claude Code's debug log: ``initialize``
  answered; Codex: its MCP tool catalog built, from its log with ``RUST_LOG=info``; Gemini CLI:
  not visible), to the spawn of the warm process and to its first answer to a ping (polled every
  20 ms through the bridge). The first prompt hook: when it was spawned, its wall time
  (spawn to exit of the ``mcp-memory hook claude-code prompt`` process the client started,
  watched in ``/proc`` every 20 ms), its own time (``hooks.log``), and whether it was semantic:
  answered by the warm process (``hooks.log``) with the pnpm memory in the model's first request.
* warm sessions (``--warm-runs``): one indexed world whose warm process stays up (idle time 2
  minutes), one session to start it, then sessions rotating the prompts of ``bench/hooks.py``;
  the same prompt hook figures.
* the floors of the same run: the client with no mcp-memory at all (``--baseline-runs``
  sessions: seconds to its first model request), and ``python -c pass``.

Every warm process the benchmark caused is stopped after its world, and the world's processes
must all be gone before the next session.

    python bench/cold_clients.py                                   # 10 cold, 10 warm per client
    python bench/cold_clients.py --clients claude-code --runs 3 --json out.json
    python bench/cold_clients.py --no-index                        # first use: no index, no cache
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.hooks import EXPECTED, FIRST_PROMPT, PROMPTS, answered_by_server, summary, time_process, warm_ready_after
from bench.machine import emit, loadavg, machine
from bench.warmproc import stop_warm, warm_pids, warm_processes_running
from tests.e2e.claude_code import run_claude
from tests.e2e.codex_cli import run_codex, write_provider
from tests.e2e.conftest import BINARIES, CLIENTS_DIR, World, make_world
from tests.e2e.gemini_cli import run_gemini, write_settings
from tests.e2e.model_anthropic import AnthropicModel
from tests.e2e.model_gemini import GeminiModel
from tests.e2e.model_responses import ResponsesModel
from tests.e2e.model_script import ModelServer, Recorded, Script
from tests.e2e.seed import seed

PNPM_NOTE = "# 2026-11-21\n\n- [preference] The user prefers pnpm over npm and yarn.\n"
WARM_IDLE_MINUTES = "2"  # the warm sessions' process outlives the gaps between their sessions
POLL_S = 0.02  # how often the hook watcher looks at /proc
WARM_PING_TIMEOUT_S = 40.0
HOOK_TARGETS = {"warm_p50_ms": 300.0, "cold_max_ms": 2500.0}
CLAUDE_CONNECTED = re.compile(r'^(\S+) \[DEBUG\] MCP server "memory": Successfully connected \(transport: stdio\) '
                              r"in (\d+)ms")
CODEX_CATALOG = re.compile(r'^(\S+)\s.*event\.name="mcp\.binding_catalog".*server_kind="configured".*tool_count=(\d+)')


# ----- the scripted models, each request stamped with the wall time it arrived -------------------
class _Stamped(ModelServer):
    """A model server that also notes when each request arrived (``stamps[i]`` for ``requests[i]``)."""

    stamps: list[float]

    def record(self, path: str, body: dict[str, Any], exchange: Any) -> None:
        super().record(path, body, exchange)
        self.stamps.append(time.time())


class _StampedAnthropic(_Stamped, AnthropicModel):
    pass


class _StampedResponses(_Stamped, ResponsesModel):
    pass


class _StampedGemini(_Stamped, GeminiModel):
    pass


class _Run(Protocol):
    returncode: int
    stderr: str
    requests: list[Recorded]


# ----- the clients --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Client:
    """How the harness runs one client, and where its log says the memory server is connected."""

    name: str  # as ``mcp-memory setup`` and ``tests/e2e/conftest.BINARIES`` name it
    model: Callable[[Script], _Stamped]
    prepare: Callable[[World, _Stamped], None]  # the user's own settings, written before setup
    run: Callable[[World, _Stamped, str], _Run]
    connected: Callable[[World, _Run], float | None]  # wall time the memory server was ready, if seen


def _claude_connected(world: World, run: _Run) -> float | None:
    try:
        lines = (world.home / "claude-debug.log").read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    found = [_wall(m.group(1)) for line in lines if (m := CLAUDE_CONNECTED.match(line))]
    return found[-1] if found else None  # the log grows across the sessions of one world


def _codex_connected(world: World, run: _Run) -> float | None:
    for line in run.stderr.splitlines():
        if (m := CODEX_CATALOG.match(line)) and m.group(2) != "0":
            return _wall(m.group(1))
    return None


def _codex_run(world: World, model: _Stamped, prompt: str) -> _Run:
    assert isinstance(model, ResponsesModel)
    return run_codex(world, model, prompt)


def _claude_run(world: World, model: _Stamped, prompt: str) -> _Run:
    assert isinstance(model, AnthropicModel)
    return run_claude(world, model, prompt)


def _gemini_run(world: World, model: _Stamped, prompt: str) -> _Run:
    assert isinstance(model, GeminiModel)
    return run_gemini(world, model, prompt)


def _codex_prepare(world: World, model: _Stamped) -> None:
    assert isinstance(model, ResponsesModel)
    write_provider(world, model)
    world.env["RUST_LOG"] = "info"  # its log says when the MCP tool catalog was built


CLIENTS = {
    "claude-code": Client("claude-code", _StampedAnthropic, lambda world, model: None, _claude_run,
                          _claude_connected),
    "codex": Client("codex", _StampedResponses, _codex_prepare, _codex_run, _codex_connected),
    "gemini": Client("gemini", _StampedGemini, lambda world, model: write_settings(world), _gemini_run,
                     lambda world, run: None),
}


def _wall(iso: str) -> float:
    """A client log's UTC timestamp (``2026-11-27T09:37:04.935Z``) as seconds since the epoch."""
    return dt.datetime.fromisoformat(iso).timestamp()


def installed(name: str) -> bool:
    return (CLIENTS_DIR / BINARIES[name]).exists()


def code_state() -> dict[str, Any]:
    """The commit measured, and the files of the package changed since (figures belong to a version)."""
    def git(*words: str) -> str:
        result = subprocess.run(["git", "-C", str(ROOT), *words], capture_output=True, text=True, check=False)
        return result.stdout.strip()

    return {"commit": git("rev-parse", "--short", "HEAD"),
            "changed": git("status", "--porcelain", "--", "mcp_memory").splitlines()}


# ----- the prompt hooks a client starts, watched in /proc -------------------------------------
_BOOTED = time.time() - time.clock_gettime(time.CLOCK_BOOTTIME)  # wall time of the boot


def spawn_time(pid: int) -> float:
    """The wall time process ``pid`` was spawned (``/proc/<pid>/stat``: 10 ms ticks since boot)."""
    with open(f"/proc/{pid}/stat", "rb") as handle:
        fields = handle.read().rsplit(b")", 1)[1].split()
    return _BOOTED + int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22, starttime


class HookWatcher:
    """Notes the spawn and exit (wall time) of every ``mcp-memory hook claude-code <event>`` process
    of one world (its HOME), while in a ``with`` block.

    The spawn comes from ``/proc/<pid>/stat`` (10 ms ticks), the exit is the first look that finds
    the process gone (or a zombie): the wall time is exact to about ``POLL_S`` + 10 ms.
    """

    def __init__(self, home: Path, event: str = "prompt"):
        self._home = f"HOME={home}".encode()
        self._words = [b"hook", b"claude-code", event.encode()]
        self.spans: dict[int, list[float]] = {}  # pid -> [spawned, gone (0 while running)]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> HookWatcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        time.sleep(2 * POLL_S)
        self._stop.set()
        self._thread.join(timeout=5)

    def wall_ms(self, pid: int) -> float | None:
        span = self.spans.get(pid)
        return round((span[1] - span[0]) * 1000, 1) if span and span[1] else None

    def _watch(self) -> None:
        while not self._stop.is_set():
            running = set(self._scan())
            now = time.time()
            for pid, span in self.spans.items():
                if not span[1] and pid not in running:
                    span[1] = now
            self._stop.wait(POLL_S)

    def _scan(self) -> list[int]:
        found = []
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/cmdline", "rb") as handle:
                    argv = handle.read().split(b"\0")
                if not all(word in argv for word in self._words):
                    continue
                pid = int(entry.name)
                if pid not in self.spans:
                    with open(f"/proc/{pid}/environ", "rb") as handle:
                        if self._home not in handle.read().split(b"\0"):
                            continue
                    self.spans[pid] = [spawn_time(pid), 0.0]
                found.append(pid)
            except (OSError, ValueError, IndexError):
                continue
        return found



# ----- one session --------------------------------------------------------------------------------
@dataclass
class HookFigures:
    """The session's first prompt hook, as the client ran it."""

    pid: int
    spawned_s: float  # client spawn -> the hook process spawned
    wall_ms: float | None  # spawn to exit of the hook process
    own_ms: float | None  # what the hook logged as its own time (hooks.log)
    by_warm: bool  # hooks.log: "recall answered by a running server"


@dataclass
class SessionFigures:
    """What one headless session showed, its times in seconds from the client's spawn."""

    client: str
    kind: str  # "cold", "warm-start" (starts the warm process), "warm" or "bare" (no mcp-memory)
    prompt: str
    returncode: int
    tools_in_first: bool | None  # memory_search and memory_store in the first request offering tools
    requests_before_first: int  # requests that offered no tools before it (side requests)
    first_request_s: float | None  # client spawn -> that request arrived at the model
    connected_s: float | None  # client spawn -> the memory server connected (per the client's log)
    warm_ready_s: float | None  # client spawn -> the warm process answered a ping
    warm_spawned_s: float | None  # client spawn -> the warm process that answered was spawned
    recalled_pnpm: bool  # the pnpm memory was in the model's first request
    hook: HookFigures | None
    load_before: list[float]
    load_after: list[float]
    seconds: float
    others_warm: int = 0  # warm processes of other workspaces on the machine (other users of the cores)
    notes: list[str] = field(default_factory=list)


def _hook_own_ms(workspace: Path, pid: int) -> float | None:
    pattern = re.compile(rf"^\S+ \S+ {pid} INFO \S+: hook claude-code prompt took (\d+) ms")
    try:
        lines = (workspace / ".mcp-memory" / "hooks.log").read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    found = [float(m.group(1)) for line in lines if (m := pattern.match(line))]
    return found[0] if found else None


def _first_with_tools(model: _Stamped, first: int) -> tuple[int | None, int]:
    """Index of the first request (from ``first`` on) offering tools, and how many came before it."""
    for index in range(first, len(model.requests)):
        exchange = model.requests[index].exchange
        if exchange is not None and exchange.tools:
            return index, index - first
    return None, len(model.requests) - first


def _holds_memory_tools(recorded: Recorded) -> bool:
    """``memory_search`` and ``memory_store`` of the server "memory", as each client names them."""
    names = set(recorded.exchange.tools if recorded.exchange else ())
    return all(names & {f"mcp__memory__{tool}", f"mcp__memory/{tool}", f"mcp_memory_{tool}"}
               for tool in ("memory_search", "memory_store"))


def _since(start: float, moment: float | None) -> float | None:
    return round(moment - start, 3) if moment is not None else None


def _warm_elsewhere(world: World) -> int:
    """Warm processes of other workspaces now running on the machine (they share the two cores)."""
    count = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/cmdline", "rb") as handle:
                argv = handle.read().split(b"\0")
        except OSError:
            continue
        if b"warm" in argv and b"mcp_memory" in argv and str(world.workspace).encode() not in argv:
            count += 1
    return count


def run_session(client: Client, world: World, model: _Stamped, prompt: str, kind: str,
                probe_warm: bool) -> SessionFigures:
    """One headless session of ``client`` in ``world``, timed from the client's spawn."""
    first = len(model.requests)
    load_before, others = loadavg(), _warm_elsewhere(world)
    ready: list[float | None] = []
    with HookWatcher(world.home) as watcher:
        start, start_perf = time.time(), time.perf_counter()
        pinger = threading.Thread(target=_probe_warm, args=(world, start, start_perf, ready), daemon=True)
        if probe_warm:
            pinger.start()
        run = client.run(world, model, prompt)
        seconds = time.time() - start
        if probe_warm:
            pinger.join(WARM_PING_TIMEOUT_S + 5)
    index, before = _first_with_tools(model, first)
    figures = SessionFigures(
        client=client.name, kind=kind, prompt=prompt, returncode=run.returncode,
        tools_in_first=_holds_memory_tools(model.requests[index]) if index is not None else None,
        requests_before_first=before,
        first_request_s=_since(start, model.stamps[index]) if index is not None else None,
        connected_s=_since(start, client.connected(world, run)),
        warm_ready_s=round(ready[0], 3) if ready and ready[0] is not None else None,
        warm_spawned_s=round(ready[1], 3) if len(ready) > 1 and ready[1] is not None else None,
        recalled_pnpm=index is not None and EXPECTED in json.dumps(model.requests[index].body, ensure_ascii=False),
        hook=_first_hook(watcher, world, start), load_before=load_before, load_after=loadavg(),
        seconds=round(seconds, 2), others_warm=others)
    if run.returncode != 0:
        figures.notes.append(f"exit {run.returncode}: {run.stderr[-500:]}")
    return figures


def _first_hook(watcher: HookWatcher, world: World, start: float) -> HookFigures | None:
    if not watcher.spans:
        return None
    pid = min(watcher.spans, key=lambda p: watcher.spans[p][0])
    return HookFigures(pid=pid, spawned_s=round(watcher.spans[pid][0] - start, 3), wall_ms=watcher.wall_ms(pid),
                       own_ms=_hook_own_ms(world.workspace, pid), by_warm=answered_by_server(world.workspace, pid))


def _probe_warm(world: World, start: float, start_perf: float, found: list[float | None]) -> None:
    """Appends the seconds from ``start`` until the warm process answers a ping, then when it was spawned."""
    ready = warm_ready_after(world.workspace, world.env, start_perf, WARM_PING_TIMEOUT_S)
    pids = warm_pids(world.workspace) if ready is not None else []
    try:
        spawned: float | None = spawn_time(pids[0]) - start if pids else None
    except (OSError, IndexError, ValueError):
        spawned = None
    found += [ready, spawned]


# ----- worlds -------------------------------------------------------------------------------------
def new_world(root: Path, name: str, index: bool, idle_minutes: str | None = None) -> World:
    """A world with the seeded memories (indexed, with ``index``) and no mcp-memory process running."""
    world = make_world(root / name)
    seed(world.workspace)
    (world.workspace / "memory" / "2026-11-21.md").write_text(PNPM_NOTE, encoding="utf-8")
    if idle_minutes:
        world.env["MCP_MEMORY_WARM_IDLE_MINUTES"] = idle_minutes  # setup writes it into server and hooks
    if index:
        subprocess.run([sys.executable, "-m", "mcp_memory", "index", "-q", "--workspace", str(world.workspace)],
                       env=world.env, check=True, capture_output=True, timeout=300)
        stop_warm(world.workspace)
    return world


def check_cold(world: World) -> None:
    """Nothing of this world may run before a cold session: no server, hook or warm process."""
    running = world.processes() + [str(p) for p in warm_pids(world.workspace)] \
        + [str(p) for p in warm_processes_running(world.workspace)]
    if running:
        raise SystemExit(f"not a cold start: already running for {world.workspace}: {running}")


def finish_world(world: World) -> list[str]:
    """Stop what the world's sessions left (the warm process); notes on anything that outlived its client."""
    notes = [f"outlived the client: {line}" for line in world.wait_until_gone(roles=("serve", "hook"), timeout=10)]
    stop_warm(world.workspace)
    notes += [f"still running after SIGTERM: {line}" for line in world.wait_until_gone(timeout=10)]
    world.kill_leftovers()
    return notes


def open_model(client: Client) -> _Stamped:
    model = client.model(Script())
    model.stamps = []
    return model


# ----- the phases ---------------------------------------------------------------------------------
def cold_sessions(client: Client, root: Path, runs: int, index: bool) -> list[SessionFigures]:
    out = []
    for i in range(runs):
        world = new_world(root, f"{client.name}-cold-{i}", index)
        model = open_model(client)
        try:
            with model:
                client.prepare(world, model)
                world.setup(client.name)
                check_cold(world)
                figures = run_session(client, world, model, FIRST_PROMPT, "cold", probe_warm=True)
        finally:
            left = finish_world(world)  # whatever happened, nothing of this world keeps running
        figures.notes += left
        out.append(figures)
        _progress(figures, f"cold {i + 1}/{runs}")
    return out


def warm_sessions(client: Client, root: Path, runs: int) -> list[SessionFigures]:
    """One session that starts the warm process, then ``runs`` with it running (the later ones)."""
    world = new_world(root, f"{client.name}-warm", index=True, idle_minutes=WARM_IDLE_MINUTES)
    out = []
    model = open_model(client)
    try:
        with model:
            client.prepare(world, model)
            world.setup(client.name)
            check_cold(world)
            start = run_session(client, world, model, FIRST_PROMPT, "warm-start", probe_warm=True)
            _progress(start, "warm start")
            for i in range(runs):
                world.wait_until_gone(roles=("serve", "hook"), timeout=10)
                figures = run_session(client, world, model, PROMPTS[i % len(PROMPTS)], "warm", probe_warm=False)
                if not warm_pids(world.workspace):
                    figures.notes.append("no warm process running after the session")
                out.append(figures)
                _progress(figures, f"warm {i + 1}/{runs}")
    finally:
        left = finish_world(world)
    start.notes += left
    return [start, *out]


def bare_sessions(client: Client, root: Path, runs: int) -> list[SessionFigures]:
    """The client alone (no mcp-memory setup: no server, no hooks): its own time to the first request."""
    out = []
    for i in range(runs):
        world = make_world(root / f"{client.name}-bare-{i}")
        model = open_model(client)
        with model:
            client.prepare(world, model)
            figures = run_session(client, world, model, FIRST_PROMPT, "bare", probe_warm=False)
        out.append(figures)
        _progress(figures, f"bare {i + 1}/{runs}")
    return out


def _progress(f: SessionFigures, label: str) -> None:
    hook = f.hook
    hook_text = (f"prompt hook spawned at {hook.spawned_s} s, {hook.wall_ms} ms (own {hook.own_ms} ms, "
                 f"by warm {hook.by_warm})" if hook else "no prompt hook")
    print(f"  {f.client} {label}: exit {f.returncode}, memory tools in first request {f.tools_in_first}, "
          f"first request {f.first_request_s} s, connected {f.connected_s} s, warm spawned {f.warm_spawned_s} s, "
          f"ready {f.warm_ready_s} s, "
          f"{hook_text}, pnpm {f.recalled_pnpm}; load {f.load_before[0]}{'; ' + '; '.join(f.notes) if f.notes else ''}",
          file=sys.stderr, flush=True)


# ----- figures ------------------------------------------------------------------------------------
def seconds(values: list[float | None]) -> dict[str, Any] | None:
    found = sorted(v for v in values if v is not None)
    if not found:
        return None
    return {"n": len(found), "median_s": round(statistics.median(found), 3), "min_s": found[0], "max_s": found[-1]}


def hook_summary(sessions: list[SessionFigures]) -> dict[str, Any]:
    hooks = [s.hook for s in sessions if s.hook]
    walls = [h.wall_ms for h in hooks if h.wall_ms is not None]
    owns = [h.own_ms for h in hooks if h.own_ms is not None]
    return {"wall": summary(walls) if walls else None, "own": summary(owns) if owns else None,
            "by_warm": sum(h.by_warm for h in hooks), "n": len(hooks),
            "semantic": sum(bool(s.hook and s.hook.by_warm and s.recalled_pnpm) for s in sessions)}


def client_summary(cold: list[SessionFigures], warm: list[SessionFigures],
                   bare: list[SessionFigures]) -> dict[str, Any]:
    later = [s for s in warm if s.kind == "warm"]
    out: dict[str, Any] = {
        "cold": {"sessions": len(cold), "tools_in_first": sum(bool(s.tools_in_first) for s in cold),
                 "exit_0": sum(s.returncode == 0 for s in cold),
                 "first_request": seconds([s.first_request_s for s in cold]),
                 "connected": seconds([s.connected_s for s in cold]),
                 "warm_ready": seconds([s.warm_ready_s for s in cold]),
                 "warm_spawned": seconds([s.warm_spawned_s for s in cold]),
                 "hook_spawned": seconds([s.hook.spawned_s if s.hook else None for s in cold]),
                 "prompt_hook": hook_summary(cold), "recalled_pnpm": sum(s.recalled_pnpm for s in cold)},
        "warm": {"sessions": len(later), "tools_in_first": sum(bool(s.tools_in_first) for s in later),
                 "prompt_hook": hook_summary(later)},
        "bare": {"sessions": len(bare), "first_request": seconds([s.first_request_s for s in bare])},
    }
    cold_hook, warm_hook = out["cold"]["prompt_hook"], out["warm"]["prompt_hook"]
    # None: not measured in this run (no sessions of that kind, or no hook seen)
    out["targets"] = {
        "tools_in_every_cold_first_request": out["cold"]["tools_in_first"] == len(cold) if cold else None,
        "warm_hook_p50_le_300_ms": warm_hook["wall"]["p50_ms"] <= HOOK_TARGETS["warm_p50_ms"]
        if warm_hook["wall"] else None,
        "cold_hook_le_2500_ms_and_semantic": cold_hook["semantic"] == len(cold)
        and cold_hook["wall"]["max_ms"] <= HOOK_TARGETS["cold_max_ms"] if cold_hook["wall"] else None,
    }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", default="claude-code,codex", help="comma-separated: claude-code, codex, gemini")
    parser.add_argument("--runs", type=int, default=10, help="cold sessions per client (default 10)")
    parser.add_argument("--warm-runs", type=int, default=10, help="sessions with the warm process running")
    parser.add_argument("--baseline-runs", type=int, default=3, help="sessions of the client without mcp-memory")
    parser.add_argument("--no-index", action="store_true", help="cold sessions on a workspace never indexed")
    parser.add_argument("--keep", type=Path, default=None,
                        help="keep the worlds in this folder (logs, configs; about 85 MB each: every HOME gets "
                        "the prepared model)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    names = [n.strip() for n in args.clients.split(",") if n.strip()]
    unknown = [n for n in names if n not in CLIENTS]
    if unknown:
        parser.error(f"unknown clients {unknown}; choose from {sorted(CLIENTS)}")
    results: dict[str, Any] = {"date": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
                               "machine": machine(), "load_before": loadavg(), "runs": args.runs,
                               "warm_runs": args.warm_runs, "indexed": not args.no_index, "code": code_state(),
                               "clients": {}}
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_MEMORY_")}
    results["python_floor"] = summary([time_process([sys.executable, "-c", "pass"], "", env)[0] for _ in range(10)])
    with tempfile.TemporaryDirectory(prefix="mcp-memory-clients-") as tmp:
        root = args.keep.resolve() if args.keep else Path(tmp).resolve()
        for name in names:
            if not installed(name):
                results["clients"][name] = {"skipped": f"not installed in {CLIENTS_DIR} (bash .ci/clients.sh)"}
                continue
            client = CLIENTS[name]
            print(f"{name}: {args.runs} cold sessions", file=sys.stderr, flush=True)
            cold = cold_sessions(client, root, args.runs, index=not args.no_index)
            print(f"{name}: {args.warm_runs} sessions with the warm process running", file=sys.stderr, flush=True)
            warm = warm_sessions(client, root, args.warm_runs) if args.warm_runs else []
            print(f"{name}: {args.baseline_runs} sessions without mcp-memory", file=sys.stderr, flush=True)
            bare = bare_sessions(client, root, args.baseline_runs)
            results["clients"][name] = {**client_summary(cold, warm, bare),
                                        "sessions": [asdict(s) for s in [*cold, *warm, *bare]]}
    results["load_after"] = loadavg()
    if code_state() != results["code"]:
        results["code_changed_during_run"] = code_state()  # the checkout moved under the benchmark
    emit(results, _text(results), args.json)


def _text(r: dict[str, Any]) -> str:
    m = r["machine"]
    lines = [f"cold sessions in the clients {r['date']}  {m['cpu']}  {m['cpu_count']} CPUs  python {m['python']}  "
             f"load {r['load_before']} -> {r['load_after']}; "
             f"workspace {'indexed' if r['indexed'] else 'never indexed'}; commit {r['code']['commit']}"
             f"{' with changes' if r['code']['changed'] else ''}"
             f"{'; THE CODE CHANGED DURING THE RUN' if 'code_changed_during_run' in r else ''}",
             f"python floor: p50 {r['python_floor']['p50_ms']} ms"]
    for name, c in r["clients"].items():
        if "skipped" in c:
            lines.append(f"{name}: skipped, {c['skipped']}")
            continue
        cold, warm, bare = c["cold"], c["warm"], c["bare"]
        lines += [
            f"{name}: memory tools in the first request of {cold['tools_in_first']}/{cold['sessions']} cold sessions "
            f"(exit 0: {cold['exit_0']})",
            f"  spawn -> first model request: cold {_med(cold['first_request'])}, without mcp-memory "
            f"{_med(bare['first_request'])}; -> memory server connected {_med(cold['connected'])}; "
            f"-> warm process spawned {_med(cold['warm_spawned'])}, answering {_med(cold['warm_ready'])}; "
            f"-> first prompt hook spawned {_med(cold['hook_spawned'])}",
            f"  first prompt hook (cold): {_ms(cold['prompt_hook'])}; semantic {cold['prompt_hook']['semantic']}/"
            f"{cold['sessions']} (by the warm process {cold['prompt_hook']['by_warm']}, "
            f"pnpm shown {cold['recalled_pnpm']})",
            f"  prompt hook, warm process running: {_ms(warm['prompt_hook'])}; by the warm process "
            f"{warm['prompt_hook']['by_warm']}/{warm['prompt_hook']['n']}",
            f"  targets: {c['targets']}",
        ]
    return "\n".join(lines)


def _med(s: dict[str, Any] | None) -> str:
    return f"median {s['median_s']} s (min {s['min_s']}, max {s['max_s']}, n {s['n']})" if s else "not seen"


def _ms(h: dict[str, Any]) -> str:
    wall, own = h["wall"], h["own"]
    if not wall:
        return "none seen"
    return (f"wall p50 {wall['p50_ms']} ms, p95 {wall['p95_ms']} ms, max {wall['max_ms']} ms"
            + (f" (the hook's own time p50 {own['p50_ms']} ms)" if own else ""))


if __name__ == "__main__":
    main()
