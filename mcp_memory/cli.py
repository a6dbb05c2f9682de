"""The ``mcp-memory`` command line: a thin layer over ``Memory``.

Results go to stdout; logs, progress bars and notes go to stderr, so ``--json`` output can
be piped. Exit codes: 0 success, 1 runtime error, 2 bad input or configuration.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from typing import Any, TypeAlias

from mcp_memory import __version__
from mcp_memory.config import ConfigError, Settings, load_settings
from mcp_memory.core.hits import SearchAnswer, SearchHit
from mcp_memory.core.scopes import ScopeError, ScopeFilter, read_filter, write_scope
from mcp_memory.errors import SearchError

log = logging.getLogger("mcp_memory")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["hook"]:
        return _main_hook(argv)
    parser = _parser()
    args = parser.parse_args(argv)
    _setup_logging(getattr(args, "verbose", 0))
    if not getattr(args, "command", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        settings = load_settings(getattr(args, "workspace", None), getattr(args, "config", None), _overrides(args))
    except ConfigError as exc:
        print(f"mcp-memory: configuration error: {exc}", file=sys.stderr)
        return 2
    try:
        return int(args.handler(settings, args) or 0)
    except KeyboardInterrupt:
        print("mcp-memory: interrupted; the next run resumes where this one stopped", file=sys.stderr)
        return 130
    except _UserError as exc:
        print(f"mcp-memory: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # the last line of defence: a message, never a traceback
        log.debug("unexpected error", exc_info=True)
        print(f"mcp-memory: error: {exc} (run with -v for details)", file=sys.stderr)
        return 1


class _UserError(Exception):
    pass


def _main_hook(argv: list[str]) -> int:
    """``mcp-memory hook ...``: whatever goes wrong (usage, configuration), exit 0.

    A client reads a hook's exit code 2 as "block" (Claude Code would erase the prompt), so
    a hook reports its problems only in ``<index_dir>/hooks.log``.
    """
    import contextlib
    import io

    from mcp_memory.clients.hooks import log_hook_failure

    usage = io.StringIO()
    try:
        with contextlib.redirect_stderr(usage):
            args = _parser().parse_args(argv)
    except SystemExit:
        log_hook_failure(None, f"bad hook command line {argv!r}: {usage.getvalue().strip()}")
        return 0
    try:
        settings = load_settings(getattr(args, "workspace", None), getattr(args, "config", None), _overrides(args))
    except ConfigError as exc:
        log_hook_failure(getattr(args, "workspace", None), f"configuration error: {exc}")
        return 0
    return _cmd_hook(settings, args)


# ----- commands ----------------------------------------------------------------------------
def _cmd_index(settings: Settings, args: argparse.Namespace) -> int:
    from mcp_memory.memory import Memory

    with Memory(settings) as memory, _ProgressBars(disable=args.quiet) as bars:
        report = memory.sync(bars.update)
        for path, reason in sorted(report.skipped.items()):
            print(f"skipped {path}: {reason}", file=sys.stderr)
        embedded = memory.backfill(bars.update)
        status = memory.status()
    summary = (
        f"{status.files} files, {status.chunks} chunks "
        f"({len(report.added)} added, {len(report.changed)} changed, {len(report.removed)} removed); "
        f"{embedded} chunks embedded now"
    )
    if status.embedded_share is not None:
        summary += f", {status.embedded_share:.0%} of all chunks have vectors"
    if report.rebuilt:
        summary += "; index rebuilt because the fingerprint changed"
    print(summary, file=sys.stderr)
    return 0


def _cmd_search(settings: Settings, args: argparse.Namespace) -> int:
    from mcp_memory.core.requests import SearchRequest
    from mcp_memory.memory import Memory

    with Memory(settings) as memory:
        memory.catch_up()
        try:
            request = SearchRequest.of(args.query, max_results=args.k, min_score=args.min_score,
                                       path_prefix=args.path_prefix, after=args.after, before=args.before,
                                       source=args.source, scopes=_searched(settings, args))
            if args.mode == "precise":
                answer = memory.precise_search(request)
            elif args.mode == "deep":
                answer = memory.deep_search(request)
            else:
                answer = SearchAnswer(memory.search(request))
        except SearchError as exc:
            raise _UserError(str(exc)) from None
        missing = memory.pending_embeddings()
    hits = answer.hits
    warnings = list(answer.warnings)
    if args.mode == "precise" and settings.rerank.provider == "llm" and not settings.rerank.model:
        warnings.insert(0, "rerank.provider 'llm' without rerank.model reranks with an MCP client's model "
                           "(sampling), which the command line has not: the local reranker ordered these hits")
    # Warnings go to stderr even with --json, whose output stays the list of hits it always was.
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if missing and not args.json:
        print(f"note: {missing} chunks are not embedded yet (run `mcp-memory index`); "
              "they were searched by keywords only", file=sys.stderr)
    if args.json:
        print(json.dumps([_hit_dict(h, args.mode) for h in hits], ensure_ascii=False, indent=2))
        return 0
    if not hits:
        print("no results", file=sys.stderr)
        return 0
    if answer.concepts:
        print(f"concepts followed: {', '.join(answer.concepts)}\n")
    for rank, hit in enumerate(hits, 1):
        date = f"  {hit.date.isoformat()}" if hit.date else ""
        found = ""
        if args.mode == "deep":
            found = f"  hop {hit.hop}" + (f" via {', '.join(hit.concepts)}" if hit.concepts else "")
        named = f"  id {hit.id}" if hit.id else ""
        print(f"{rank}. {hit.citation}  score {hit.score:.3f}{date}{named}{found}")
        for line in hit.snippet.splitlines()[:8]:
            print(f"     {line}")
        print()
    return 0


def _hit_dict(hit: SearchHit, mode: str) -> dict[str, Any]:
    """A hit as ``--json`` prints it: deep search's hop and concepts only in deep mode."""
    data = hit.to_dict()
    if mode != "deep":
        data.pop("hop", None)
        data.pop("concepts", None)
    return data


def _cmd_get(settings: Settings, args: argparse.Namespace) -> int:
    from mcp_memory.memory import Memory, MemoryInputError, PathError

    memory = Memory(settings)
    try:
        result = memory.get(args.path, args.from_line, args.lines)
    except (PathError, MemoryInputError) as exc:
        raise _UserError(str(exc)) from None
    if args.json:
        print(json.dumps(result.__dict__, ensure_ascii=False, indent=2))
    else:
        sys.stdout.write(result.text + ("\n" if result.text else ""))
    return 0


def _cmd_utility(settings: Settings, args: argparse.Namespace) -> int:
    from mcp_memory.memory import Memory, MemoryInputError

    memory = Memory(settings)
    result: Any
    try:
        if args.action in ("reward", "penalize"):
            if not args.memory_id:
                raise _UserError(f"utility {args.action} needs a memory id (the id of a search hit)")
            change = getattr(memory.feedback, args.action)(args.memory_id, args.amount)
            result = change.to_dict()
            text = f"{change.memory_id}: utility {change.before:+.3f} -> {change.after:+.3f}"
        elif args.action == "decay":
            report = memory.utility.decay()
            result = report.__dict__
            text = f"{report.changed} utilities moved toward neutral, {report.dropped} back to neutral"
        else:
            result = dict(sorted(memory.utility.values().items(), key=lambda item: -item[1]))
            text = "\n".join(f"{key}  {value:+.3f}" for key, value in result.items()) or "no learned utility"
    except MemoryInputError as exc:
        raise _UserError(str(exc)) from None
    print(json.dumps(result, indent=2) if args.json else text)
    return 0


def _cmd_sleep(settings: Settings, args: argparse.Namespace) -> int:
    from mcp_memory.memory import Memory

    with Memory(settings) as memory:
        report = memory.sleep.run(dry_run=args.dry_run)
    if args.json:
        print(json.dumps(report.to_dict(), ensure_ascii=False, indent=2))
        return 0
    if report.skipped:
        print(f"sleep cycle skipped: {report.skipped}", file=sys.stderr)
        return 0
    for warning in report.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    would = "would mark" if report.dry_run else "marked"
    for r in report.retired:
        relation = "superseded by" if r.kind == "superseded" else "duplicate of"
        print(f"{would} {r.item.citation} {relation} {r.by.citation}: {r.item.text.strip()}")
    for move in report.chains_moved:
        print(f"{'would move' if report.dry_run else 'moved'} chain {move.chain.id} to the archive: {move.reason}")
    if not report.dry_run:
        decayed = report.utility.changed if report.utility else 0
        print(f"utility decayed for {decayed} memories; dropped {report.ledger_rows} ledger rows and "
              f"{report.log_lines} log lines; index compacted: {'yes' if report.compacted else 'no'}")
        print(f"note for the next session: {settings.index_dir / 'sleep-note.md'}")
    elif not report.retired and not report.chains_moved:
        print("nothing to consolidate")
    return 0


def _cmd_git_sync(settings: Settings, args: argparse.Namespace) -> int:
    from mcp_memory.memory import Memory
    from mcp_memory.team.git_sync import GitSyncError

    memory = Memory(settings)  # not opened: the index is opened only when something was pulled
    try:
        report = memory.git_sync()
    except GitSyncError as exc:
        if args.json:
            print(json.dumps({"error": exc.kind, "message": str(exc)}, ensure_ascii=False, indent=2))
        print(f"mcp-memory: sync: {exc}", file=sys.stderr)
        return 2 if exc.kind in ("not_a_repository", "no_remote", "state") else 1
    finally:
        memory.close()
    if args.json:
        print(json.dumps(report.to_dict(), ensure_ascii=False, indent=2))
        return 0
    for note in report.recovered:
        print(f"recovered: {note}", file=sys.stderr)
    for warning in report.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    where = f"{report.remote}/{report.branch}"
    print(f"committed {_count(report.committed, 'file')}" + (f": {', '.join(report.committed)}"
                                                             if report.committed else ""))
    print(f"pulled {_count(report.pulled, 'file')} from {where}" + (f": {', '.join(report.pulled)}"
                                                                     if report.pulled else ""))
    print(f"pushed {report.pushed} commit{'' if report.pushed == 1 else 's'} to {where}")
    for conflict in report.conflicts:
        print(f"conflict in {conflict.path}: {conflict.resolution}")
    return 0


def _count(items: list[str], noun: str) -> str:
    return f"{len(items)} {noun}{'' if len(items) == 1 else 's'}"


def _cmd_status(settings: Settings, args: argparse.Namespace) -> int:
    from mcp_memory.memory import Memory

    with Memory(settings) as memory:
        if not args.no_sync:
            memory.sync()
        status = memory.status()
    from mcp_memory.runtime.warm import describe_processes, serving_processes

    processes = serving_processes(settings)
    if args.json:
        print(json.dumps({**status.to_dict(), "processes": processes}, ensure_ascii=False, indent=2))
        return 0
    embedder = status.embedder
    share = status.embedded_share
    rows: list[tuple[str, object]] = [
        ("workspace", status.workspace),
        ("index", status.index_path),
        ("files", f"{status.files} on disk, {status.indexed_files} indexed"),
        ("chunks", status.chunks),
        ("embedder", f"{embedder.provider} {embedder.model}".strip()),
        ("dimensions", embedder.dimensions),
        ("embedded", "n/a (keyword-only)" if share is None else f"{share:.1%}"),
        ("fingerprint", json.dumps(status.fingerprint, sort_keys=True) if status.fingerprint else "none"),
        ("last sync", status.last_sync or "never"),
    ]
    lines = status.line_vectors
    if lines is not None:
        # At the limit, the background stops at the newest files; older lines come when searched.
        reach = (" of the newest files; older ones when a precise search reads them"
                 if lines["lines"] >= settings.rerank.line_vector_limit else "")
        rows.append(("line vectors", f"{lines['embedded']} of {lines['lines']} lines{reach} (precision search)"))
    if status.last_rebuild_reason:
        rows.append(("last rebuild", status.last_rebuild_reason))
    if status.shared_vectors:
        rows.append(("shared vectors", status.shared_vectors))
    rows.append(("degraded", "; ".join(status.degraded) or "no"))
    rows.append(("served by", describe_processes(processes)))
    if status.rules is not None:
        rules = status.rules
        rows.append(("rules", f"{rules['pinned']} pinned" if rules["pinning"] else "pinning off"))
        rows += [("rules warning", warning) for warning in rules["warnings"]]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name.ljust(width)}  {value}")
    return 0


def _cmd_doctor(settings: Settings, args: argparse.Namespace) -> int:
    from mcp_memory.memory import Memory

    with Memory(settings) as memory:
        if args.repair:
            before, after = memory.repair()
        else:
            before = after = memory.doctor()
        rule_warnings = memory.rules.report().warnings
    from mcp_memory.runtime.warm import describe_processes, serving_processes

    processes = serving_processes(settings)
    if args.json:
        data: dict[str, Any] = {"before": before.to_dict(), "after": after.to_dict()} if args.repair \
            else after.to_dict()
        data["rule_warnings"] = rule_warnings
        data["processes"] = processes
        print(json.dumps(data, ensure_ascii=False, indent=2, default=str))
        return 0 if after.healthy else 1
    print(f"files: {after.files_on_disk} on disk, {after.files_indexed} indexed; rows {after.rows}, "
          f"keyword documents {after.keyword_documents}, waiting for a vector {after.missing_vectors}")
    print("locks: " + ", ".join(f"{name} {state}" for name, state in after.locks.items()))
    print(f"served by: {describe_processes(processes)}")
    if args.repair:
        print(f"found {len(before.problems)} problems" + (", rebuilt the index" if before.needs_rebuild else "")
              + f"; {len(after.problems)} remain")
    for problem in after.problems:
        print(f"- {problem.kind}: {problem.path + ': ' if problem.path else ''}{problem.detail}")
    for warning in rule_warnings:  # the rules block of MEMORY.md: shown, not an index problem
        print(f"- pinned rules: {warning}")
    if after.healthy:
        print("the index matches the files")
    elif not args.repair:
        print("run `mcp-memory doctor --repair` to fix these")
    return 0 if after.healthy else 1


def _cmd_recall(settings: Settings, args: argparse.Namespace) -> int:
    from mcp_memory.memory import Memory

    with Memory(settings) as memory:
        if not args.keywords_only:
            memory.catch_up()
        block = memory.recall(args.prompt, session_key=args.session, keywords_only=args.keywords_only,
                              scopes=_searched(settings, args))
    if block:
        print(block)
    else:
        print("nothing relevant", file=sys.stderr)
    return 0


def _cmd_capture(settings: Settings, args: argparse.Namespace) -> int:
    from mcp_memory.core.transcripts import TranscriptError, messages_from_json, read_transcript
    from mcp_memory.memory import Memory

    last = settings.capture.max_messages
    try:
        if args.transcript in (None, "-"):
            messages = messages_from_json(json.loads(sys.stdin.read()))[-last:]
        else:
            messages = read_transcript(args.transcript, last=last)
    except json.JSONDecodeError as exc:
        raise _UserError(f"stdin is not a JSON list of messages: {exc}") from None
    except TranscriptError as exc:
        raise _UserError(str(exc)) from None
    if args.extractor:
        settings.capture.extractor = args.extractor
    scope = _written(settings, args)
    with Memory(settings) as memory:
        result = memory.capture(messages, session_key=args.session, idempotency_key=args.idempotency_key,
                                scope=scope)
    if args.json:
        print(json.dumps(result.to_dict(), ensure_ascii=False, indent=2))
        return 0
    print(result.message, file=sys.stderr)
    for line in result.captured:
        print(f"+ {line.citation}  {line.text}")
    for skipped in result.skipped:
        print(f"- skipped ({skipped.reason}): {skipped.text}")
    return 0


def _cmd_hook(settings: Settings, args: argparse.Namespace) -> int:
    from mcp_memory.clients.hooks import run_hook
    from mcp_memory.runtime.warm import command_line_options

    if getattr(args, "scope", None):
        settings.scopes.default = args.scope  # checked where the hook uses it: a hook never fails loudly
    return run_hook(settings, args.client, args.event, sys.stdin, sys.stdout,
                    command_line_options(_overrides(args), getattr(args, "config", None)))


def _cmd_serve(settings: Settings, args: argparse.Namespace) -> int:
    scope = _written(settings, args)
    if args.transport == "stdio" and settings.warm.enabled and not args.no_bridge:
        # A thin front to the workspace's warm process: no SDK, no index, no model here.
        from mcp_memory.runtime.front import Front, FrontError
        from mcp_memory.runtime.warm import command_line_options

        warm_options = command_line_options(_overrides(args), getattr(args, "config", None))
        front = Front(settings, warm_options, shared=args.shared, scope=scope)
        try:
            front.start()
        except FrontError as exc:
            log.warning("serving in this process: %s", exc)
        else:
            return front.run()
    # Lazy, as for every command: the server imports the MCP SDK (about a second) that others never need.
    from mcp_memory.processes.serve import ServeError, ServeOptions, serve

    options = ServeOptions(
        transport=args.transport, host=args.host, port=args.port, token=args.token,
        read_only_tokens=args.read_only_token, shared_tokens=args.shared_token, shared=args.shared,
        max_request_bytes=args.max_request_bytes, allowed_hosts=args.allowed_host,
        allowed_origins=args.allowed_origin, bridge=not args.no_bridge, scoped_tokens=args.scoped_token, scope=scope,
        token_file=args.token_file,
    )
    try:
        serve(settings, options)
    except ServeError as exc:
        raise _UserError(str(exc)) from None
    return 0


def _cmd_ui(settings: Settings, args: argparse.Namespace) -> int:
    from mcp_memory.dashboard.ui import run_ui

    try:
        return run_ui(settings, port=args.port, open_browser=not args.no_browser)
    except OSError as exc:
        raise _UserError(str(exc)) from None


def _cmd_warm(settings: Settings, args: argparse.Namespace) -> int:
    from mcp_memory.processes.warm_server import WarmProcess

    if not getattr(args, "verbose", 0):
        logging.getLogger("mcp_memory").setLevel(logging.INFO)  # its stderr is <index_dir>/warm.log
    return WarmProcess(settings).run()


# ----- plumbing ----------------------------------------------------------------------------
_PHASE_UNITS = {"files": "file", "line vectors": "line"}


class _ProgressBars:
    """The progress of each long phase of ``index`` (files, embeddings, line vectors), on stderr.

    On a terminal, one tqdm bar per phase with its rate and time left; otherwise (a log, a pipe,
    a CI job) one plain line when a phase starts and one when it ends, so a log is not flooded
    with carriage returns and still says what ran and for how long."""

    def __init__(self, disable: bool, terminal: bool | None = None):
        self._disable = disable
        self._terminal = sys.stderr.isatty() if terminal is None else terminal
        self._bars: dict[str, Any] = {}
        self._plain: dict[str, tuple[float, int, int]] = {}  # phase -> (started, done, total)

    def update(self, phase: str, done: int, total: int) -> None:
        if self._disable:
            return
        if not self._terminal:
            self._plain_update(phase, done, total)
            return
        from tqdm import tqdm

        bar = self._bars.get(phase)
        if bar is None:
            bar = self._bars[phase] = tqdm(total=total, desc=phase, unit=self._unit(phase), file=sys.stderr,
                                           dynamic_ncols=True)
        bar.total = max(total, done)
        bar.update(done - bar.n)

    def _plain_update(self, phase: str, done: int, total: int) -> None:
        if phase not in self._plain:
            if not total:
                return  # a phase with nothing to do prints nothing
            self._plain[phase] = (time.monotonic(), done, total)
            print(f"{phase}: {total} to do", file=sys.stderr, flush=True)
        started = self._plain[phase][0]
        self._plain[phase] = (started, done, max(total, done))
        if done >= total and total:
            self._finish(phase)

    def _finish(self, phase: str) -> None:
        started, done, total = self._plain.pop(phase)
        seconds = time.monotonic() - started
        rate = f" ({done / seconds:.1f} {self._unit(phase)}s/s)" if seconds > 0 and done else ""
        ended = "done in" if done >= total else "stopped after"
        print(f"{phase}: {done} of {total} {ended} {seconds:.1f} s{rate}", file=sys.stderr, flush=True)

    def _unit(self, phase: str) -> str:
        return _PHASE_UNITS.get(phase, "chunk")

    def __enter__(self) -> _ProgressBars:
        return self

    def __exit__(self, *exc: object) -> None:
        for bar in self._bars.values():
            bar.close()
        for phase in list(self._plain):  # a phase that stopped short (interrupted, or nothing to do)
            self._finish(phase)


def _searched(settings: Settings, args: argparse.Namespace) -> ScopeFilter:
    """The scopes a search or recall covers: ``--scope``, else ``[scopes] default`` (see ``core/scopes.py``)."""
    try:
        return read_filter(getattr(args, "scope", None), settings.scopes.default or None)
    except ScopeError as exc:
        raise _UserError(str(exc)) from None


def _written(settings: Settings, args: argparse.Namespace) -> str | None:
    """The scope a capture writes into, or a server's default scope: ``--scope``, else ``[scopes] default``."""
    try:
        return write_scope(getattr(args, "scope", None), settings.scopes.default or None)
    except ScopeError as exc:
        raise _UserError(str(exc)) from None


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if getattr(args, "index_path", None):
        out["index_path"] = args.index_path
    if getattr(args, "embedder", None):
        out["embedding.provider"] = args.embedder
    return out


def _setup_logging(verbose: int) -> None:
    level = logging.DEBUG if verbose > 1 else logging.INFO if verbose else logging.WARNING
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger("mcp_memory")
    root.handlers[:] = [handler]
    root.setLevel(level)
    root.propagate = False


def _parser() -> argparse.ArgumentParser:
    common = _common_options()
    parser = argparse.ArgumentParser(
        prog="mcp-memory", description="Local-first long-term memory for AI agents.", parents=[common]
    )
    parser.add_argument("--version", action="version", version=f"mcp-memory {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    # In this order in --help.
    _add_index_command(sub, common)
    _add_reading_commands(sub, common)
    _add_serve_command(sub, common)
    _add_doctor_command(sub, common)
    _add_recall_command(sub, common)
    _add_capture_commands(sub, common)
    _add_status_command(sub, common)
    _add_utility_command(sub, common)
    _add_sleep_command(sub, common)
    _add_sync_command(sub, common)
    _add_ui_command(sub, common)
    _add_setup_command(sub)
    return parser


_Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"  # what add_subparsers returns


def _common_options() -> argparse.ArgumentParser:
    """Options every command takes, before or after its name."""
    # SUPPRESS: an option given before the command must survive the sub-parser's defaults.
    common = argparse.ArgumentParser(add_help=False, argument_default=argparse.SUPPRESS)
    common.add_argument("--workspace", "-w",
                        help="workspace folder (default: $MCP_MEMORY_WORKSPACE or a per-user folder)")
    common.add_argument("--config", help="TOML settings file (default: <workspace>/mcp-memory.toml)")
    common.add_argument("--index-path", help="where the derived index lives (folder or LanceDB URI)")
    common.add_argument("--embedder", choices=["local", "e5", "openai", "none"], help="embedding provider")
    common.add_argument("--scope", help="memory scope (a project or agent name; default [scopes] default or "
                                        "$MCP_MEMORY_SCOPE): search and recall cover it plus the global memory "
                                        "('a,b': several, '*': every scope, 'global': global only), capture and "
                                        "serve write into it")
    common.add_argument("--verbose", "-v", action="count", help="log more to stderr (-vv: debug)")
    return common


def _add_index_command(sub: _Commands, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("index", parents=[common], help="sync the index with the files and embed new chunks")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bars")
    p.set_defaults(handler=_cmd_index)


def _add_reading_commands(sub: _Commands, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("search", parents=[common], help="search the memory")
    p.add_argument("query")
    p.add_argument("-k", "--max-results", dest="k", type=int, default=None, help="number of results (default 6)")
    p.add_argument("--min-score", type=float, default=None)
    p.add_argument("--path-prefix", default=None, help="only files whose path starts with this")
    p.add_argument("--after", default=None, help="only daily files dated on or after YYYY-MM-DD")
    p.add_argument("--before", default=None, help="only daily files dated on or before YYYY-MM-DD")
    p.add_argument("--mode", choices=["default", "precise", "deep"], default="default",
                   help="default: fast hybrid search; precise: the best candidates reranked ([rerank] settings); "
                        "deep: a second search through the concepts of the first hits (questions that connect "
                        "several memories)")
    p.add_argument("--source", choices=["memory", "extra", "sessions"], default=None,
                   help="only hits of this source (sessions: the transcripts of [sessions] paths)")
    p.add_argument("--json", action="store_true", help="print hits as JSON (warnings go to stderr)")
    p.set_defaults(handler=_cmd_search)

    p = sub.add_parser("get", parents=[common], help="print lines of a memory file")
    p.add_argument("path", help="workspace-relative path, e.g. memory/2026-11-26.md, or a memory id (m-...)")
    p.add_argument("--from", dest="from_line", type=int, default=None, help="first line (1-based)")
    p.add_argument("--lines", type=int, default=None, help="number of lines")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_cmd_get)


def _add_serve_command(sub: _Commands, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("serve", parents=[common], help="run the MCP server (stdio by default)")
    p.add_argument("--transport", choices=["stdio", "sse", "http"], default="stdio")
    p.add_argument("--host", default="127.0.0.1", help="HTTP/SSE address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8765, help="HTTP/SSE port (default 8765)")
    p.add_argument("--token", default=None,
                   help="bearer token clients must send (HTTP/SSE; default $MCP_MEMORY_TOKEN); "
                        "required when --host is not a loopback address")
    p.add_argument("--read-only-token", action="append", default=None,
                   help="a token that may search and read but not store, forget or capture (repeatable; "
                        "default $MCP_MEMORY_READ_ONLY_TOKEN, comma-separated)")
    p.add_argument("--shared-token", action="append", default=None,
                   help="a token for a shared client (group chat, team bot): it never sees the private files "
                        "(privacy.private_paths, default MEMORY.md) (repeatable; default $MCP_MEMORY_SHARED_TOKEN, "
                        "comma-separated)")
    p.add_argument("--scoped-token", action="append", default=None, metavar="NAME=TOKEN",
                   help="a shared token limited to scope NAME: it sees that scope and the global memory, never "
                        "another scope, and writes into NAME only (repeatable; default $MCP_MEMORY_SCOPED_TOKEN, "
                        "comma-separated)")
    p.add_argument("--token-file", default=None, metavar="PATH",
                   help="a file of tokens, one a line: KIND TOKEN (full, read-only, shared, scoped:NAME) or a token "
                        "alone (full); kept out of the process list and the environment (default "
                        "$MCP_MEMORY_TOKEN_FILE); it should be readable by its owner only")
    p.add_argument("--shared", action="store_true",
                   help="every caller of this server is shared: the private files are never served")
    p.add_argument("--max-request-bytes", type=int, default=1024 * 1024,
                   help="HTTP/SSE request bodies larger than this are refused with 413 (default 1 MiB)")
    p.add_argument("--allowed-host", action="append", default=None,
                   help="Host header accepted when listening beyond loopback (repeatable; default HOST:*)")
    p.add_argument("--allowed-origin", action="append", default=None,
                   help="browser Origin accepted when listening beyond loopback (repeatable; default none)")
    p.add_argument("--no-bridge", action="store_true",
                   help="no loopback port: neither answer hooks nor forward to the warm process (serve alone)")
    p.set_defaults(handler=_cmd_serve)

    p = sub.add_parser("warm", parents=[common],
                       help="the workspace's shared warm process (started by serve and the hooks; exits when idle)")
    p.set_defaults(handler=_cmd_warm)


def _add_doctor_command(sub: _Commands, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("doctor", parents=[common], help="check the index against the files (exit 1 on problems)")
    p.add_argument("--repair", action="store_true", help="fix what is found (sync, or rebuild when rows are wrong)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_cmd_doctor)


def _add_recall_command(sub: _Commands, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("recall", parents=[common], help="print the <relevant-memories> block for a prompt")
    p.add_argument("prompt")
    p.add_argument("--session", default=None, help="session key: memories recalled in its last turns are skipped")
    p.add_argument("--keywords-only", action="store_true", help="no vector index or model (as a cold hook)")
    p.set_defaults(handler=_cmd_recall)


def _add_capture_commands(sub: _Commands, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("capture", parents=[common],
                       help="capture durable facts from a transcript (JSONL/JSON) or a JSON message list on stdin")
    p.add_argument("transcript", nargs="?", default=None,
                   help="Claude Code or OpenClaw JSONL, or a JSON list of {role, content}; '-' or none: stdin")
    p.add_argument("--session", default=None, help="session key (keys holding :memory-capture: are skipped)")
    p.add_argument("--idempotency-key", default=None, help="a key already captured captures nothing again")
    p.add_argument("--extractor", choices=["auto", "rules", "llm"], default=None, help="override capture.extractor")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_cmd_capture)

    p = sub.add_parser("hook", parents=[common], help="run a client hook (reads the hook JSON on stdin; exits 0)")
    p.add_argument("client", help="claude-code or openclaw (the plugin in mcp_memory/clients/openclaw_plugin)")
    p.add_argument("event", help="prompt (UserPromptSubmit), stop (Stop), session-end (SessionEnd), "
                                 "pre-compact (PreCompact) or session-start (SessionStart)")
    p.set_defaults(handler=_cmd_hook)


def _add_utility_command(sub: _Commands, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("utility", parents=[common], help="reward, penalize, list or decay learned utility")
    p.add_argument("action", choices=["reward", "penalize", "list", "decay"])
    p.add_argument("memory_id", nargs="?", help="reward/penalize: the id of a search hit (m-...)")
    p.add_argument("--amount", type=float, default=0.2, help="reward or penalty, in (0, 1] (default 0.2)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_cmd_utility)


def _add_sleep_command(sub: _Commands, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("sleep", parents=[common],
                       help="consolidate memories, decay utility, tidy the graph and logs, note for the next session")
    p.add_argument("--dry-run", action="store_true", help="list what would change; change nothing")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_cmd_sleep)


def _add_ui_command(sub: _Commands, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("ui", parents=[common], help="open the memory dashboard in the browser (loopback, fresh token)")
    p.add_argument("--port", type=int, default=0, help="loopback port (default 0: a free one)")
    p.add_argument("--no-browser", action="store_true",
                   help="do not open the browser: print the path of the one-time sign-in page (valid two minutes)")
    p.set_defaults(handler=_cmd_ui)


def _add_sync_command(sub: _Commands, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("sync", parents=[common],
                       help="commit the memory files, merge the git remote's and push ([sync] settings)")
    p.add_argument("--json", action="store_true", help="print what was committed, pulled, pushed and conflicts")
    p.set_defaults(handler=_cmd_git_sync)


def _add_setup_command(sub: _Commands) -> None:
    from mcp_memory.clients.command import add_setup_command  # its own options: --scope is user|project there

    add_setup_command(sub)


def _add_status_command(sub: _Commands, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("status", parents=[common], help="what the index holds and its health")
    p.add_argument("--json", action="store_true")
    p.add_argument("--no-sync", action="store_true", help="report without syncing first")
    p.set_defaults(handler=_cmd_status)
