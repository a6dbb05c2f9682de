"""Client hooks: recall before the model answers, capture after it has answered.

``mcp-memory hook claude-code prompt`` runs on Claude Code's ``UserPromptSubmit``: it reads
the hook JSON (``prompt``, ``session_id``) from stdin and prints the hook JSON whose
``hookSpecificOutput.additionalContext`` holds the ``<relevant-memories>`` block.
``mcp-memory hook claude-code stop`` runs on ``Stop``: it captures the latest messages of the
transcript at ``transcript_path``. ``session-end`` (on ``SessionEnd``) captures too, then writes
the session's episode from the transcript (``experience/episodes.py``). ``pre-compact`` (on ``PreCompact``)
writes what the coming compaction would lose: decisions, open tasks, fixes (``lifecycle/rescue.py``).
``session-start`` (on ``SessionStart``) prints the pinned rules of MEMORY.md and a new note of
the sleep cycle as ``additionalContext`` (``lifecycle/rules.py``). ``mcp-memory hook openclaw <event>``
does the same for OpenClaw's plugin hooks (``openclaw_hooks.py``) through the same functions.

Each hook works in a scope (``core/scopes.py``): the configured default (``[scopes] default``,
``$MCP_MEMORY_SCOPE``, ``--scope``), else, with ``[scopes] from_cwd``, the scope of the client's
working directory (the hook JSON's ``cwd``: its git repository's folder name). Recall searches
that scope plus the global memory; capture and rescue write into it. Its request to the
bridge names the scope, so one warm process serves the hooks of every project.

Both first ask a running ``mcp-memory serve`` of the workspace through the loopback bridge
(warm index and model: tens of milliseconds). With none running, recall answers from the
keyword index alone (no model to load) and capture runs in-process.

The bridge proves who answers (see ``mcp_memory.runtime.bridge``), but its replies are still data,
not text to print: recall comes back as memories (path, lines, date, snippet), checked field
by field and framed here by ``format_recall``, the same code that frames in-process recall,
so a stored ``</relevant-memories>`` is escaped whichever way the memory came. A reply that
does not check out is discarded and recall runs in-process. Capture replies are only logged.

A hook must never break the client: whatever happens, it exits 0, prints either valid hook
JSON or nothing, and writes what went wrong to ``<index_dir>/hooks.log``. OpenClaw's hooks also
write one line per warning or error to stderr, which the plugin passes on to the Gateway's log;
a client gone before reading the output (killed mid-hook) costs the output, never the work.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
import logging
import math
import os
import sys
import time
import uuid
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from mcp_memory.config import Settings
from mcp_memory.core.hits import SearchHit
from mcp_memory.core.memory_ids import is_memory_id
from mcp_memory.core.recall import format_recall
from mcp_memory.core.scopes import ScopeError, check_name, default_scope, read_filter
from mcp_memory.runtime.bridge import call_bridge, loggable

if TYPE_CHECKING:  # the prompt hook must not import the index (NumPy, Arrow) just to be typed
    from mcp_memory.memory import Memory
    from mcp_memory.writes.capture_flow import CaptureResult

log = logging.getLogger(__name__)

MAX_STDIN_BYTES = 16 * 1024 * 1024
MAX_LOG_BYTES = 1024 * 1024
# Seconds a prompt hook waits for the warm process (started by it when none runs) before answering
# alone from keywords. A warm process answers within about a second when its saved search snapshot
# is current (index/saved_snapshot.py); one that must sync first (files edited while none ran)
# takes two or more, and the hook then answers from keywords.
RECALL_TIMEOUT = 2.2
CAPTURE_TIMEOUT = 60.0
MAX_RECALLED = 100  # more memories than any recall budget holds: a longer list is not a real reply


# The command line's settings options (``--config``, ``--embedder``...), for a warm process a hook
# starts: it must compute the same settings as the hook (set by ``run_hook``).
warm_options: list[str] = []


class BadRequest(ValueError):
    """A bridge request that cannot be answered as asked (missing or mistyped fields)."""


class InvalidReply(ValueError):
    """A bridge reply whose memories do not check out field by field."""


# ----- server side: what the bridge answers ---------------------------------------------------
def private_allowed(settings: Settings, include_private: bool = True) -> bool:
    """Whether a hook's answer may hold private files: not when the caller's process says so (a
    ``--shared`` server), nor when the workspace's hooks serve others (``[privacy] shared_hooks``),
    whichever process answers."""
    return include_private and not settings.privacy.shared_hooks


def handle_request(memory: Memory, request: dict[str, Any], include_private: bool = True) -> dict[str, Any]:
    """Answer one bridge request with ``memory`` (a ``Memory``); raises ``ValueError`` on bad requests.

    ``include_private`` is passed on to recall and capture: false (a server shared with
    others) leaves private files out of both, as for any other shared caller. The request's
    ``scope`` (a scope name; none: the global memory) is where recall looks and capture writes.
    """
    include_private = private_allowed(memory.settings, include_private)
    op = request.get("op")
    if op == "ping":
        return {"pong": True}
    if op == "recall":
        prompt = _text_field(request, "prompt") or ""
        hits = memory.recall_hits(prompt, session_key=_text_field(request, "session_key"),
                                  include_private=include_private, scopes=read_filter(None, _scope_field(request)),
                                  prompt_id=_text_field(request, "prompt_id"))
        return {"memories": [hit.to_dict() for hit in hits]}
    if op == "capture":
        return capture_transcript(memory, request, include_private=include_private).to_dict()
    if op == "session-end":
        return end_session(memory, request, include_private=include_private)
    if op == "pre-compact":
        return rescue_transcript(memory, request, include_private=include_private)
    raise BadRequest(f"unknown operation {loggable(op, 40)!r}")


def capture_transcript(memory: Memory, request: dict[str, Any], include_private: bool = True) -> CaptureResult:
    """Capture from ``transcript_path`` or ``messages`` in a request or hook payload."""
    include_private = private_allowed(memory.settings, include_private)
    from mcp_memory.core.transcripts import messages_from_json, read_transcript

    last = memory.settings.capture.max_messages
    path = _text_field(request, "transcript_path")
    if request.get("messages") is not None:
        messages = messages_from_json(request["messages"])[-last:]
    elif path:
        messages = read_transcript(Path(path).expanduser(), last=last)
    else:
        raise BadRequest("give transcript_path or messages")
    session = _text_field(request, "session_key")
    key = _text_field(request, "idempotency_key") or turn_key(session, messages)
    return memory.capture(messages, session_key=session, idempotency_key=key, include_private=include_private,
                          scope=_scope_field(request))


def _text_field(request: dict[str, Any], name: str) -> str | None:
    """A field that is a string when given; anything else is a bad request."""
    value = request.get(name)
    if value is None or isinstance(value, str):
        return value
    raise BadRequest(f"{name} must be a string, not {type(value).__name__}")


def _scope_field(request: dict[str, Any]) -> str | None:
    """The request's scope: a scope name, or None (absent or empty) for the global memory."""
    value = _text_field(request, "scope")
    if not value:
        return None
    try:
        return check_name(value)
    except ScopeError as exc:
        raise BadRequest(str(exc)) from None


def hook_scope(settings: Settings, cwd: object) -> str | None:
    """The scope a hook works in: the configured default, else (``[scopes] from_cwd``) that of the
    client's working directory ``cwd``, else None (the global memory)."""
    return default_scope(settings.scopes.default, settings.scopes.from_cwd, cwd if isinstance(cwd, str) else None)


def turn_key(session_key: Any, messages: list[Any]) -> str:
    """Identifies a conversation state: ``Stop`` and ``SessionEnd`` on the same turn capture once."""
    digest = hashlib.sha256()
    for message in messages:
        digest.update(f"{message.role}\x00{message.content}\x01".encode("utf-8", "replace"))
    return f"turn:{session_key or ''}:{digest.hexdigest()[:24]}"


# ----- client side: the hook commands ---------------------------------------------------------
def run_hook(settings: Settings, client: str, event: str, stdin: IO[str], stdout: IO[str],
             options: list[str] | None = None) -> int:
    """Run one hook; always returns 0 (a failing hook must not disturb the client).

    ``options`` are the command line's settings options, given to a warm process it starts.
    """
    _log_to_file(settings.index_dir / "hooks.log")
    if client == "openclaw":
        _log_to_stderr()  # the plugin passes the command's stderr on to the Gateway's log
    warm_options[:] = options or []
    started = time.perf_counter()
    try:
        payload = _read_payload(stdin)
        if client == "openclaw":
            from mcp_memory.clients.openclaw_hooks import run_openclaw_hook

            output = run_openclaw_hook(settings, event, payload)
        elif client != "claude-code":
            raise ValueError(f"unknown client {client!r}")
        elif event == "prompt":
            output = _claude_code_prompt(settings, payload)
        elif event == "stop":
            output = _claude_code_stop(settings, payload)
        elif event == "session-end":
            output = _claude_code_session_end(settings, payload)
        elif event == "pre-compact":
            output = _claude_code_pre_compact(settings, payload)
        elif event == "session-start":
            output = _claude_code_session_start(settings, payload)
        else:
            raise ValueError(f"unknown hook event {event!r}")
        if output:
            _print(stdout, output)
    except Exception:
        log.exception("hook %s %s failed", client, event)
    finally:
        log.info("hook %s %s took %.0f ms", client, event, (time.perf_counter() - started) * 1000)
    return 0


def _print(stdout: IO[str], output: str) -> None:
    """Print the hook's output; a client that went away meanwhile (killed mid-hook) only gets a log line."""
    try:
        stdout.write(output + "\n")
        stdout.flush()
    except (BrokenPipeError, ValueError, OSError) as exc:
        log.warning("the client went away before reading the hook's output (%s); the work itself is done",
                    type(exc).__name__)
        try:  # so that the interpreter's own flush at exit does not fail again
            devnull = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - lives until exit
            os.dup2(devnull.fileno(), stdout.fileno())
        except (OSError, ValueError, io.UnsupportedOperation):
            pass


def _claude_code_prompt(settings: Settings, payload: dict[str, Any]) -> str:
    context = recall_context(settings, str(payload.get("prompt") or ""), _session_of(payload),
                             hook_scope(settings, payload.get("cwd")))
    if not context:
        return ""
    return json.dumps(
        {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": context}},
        ensure_ascii=False,
    )


def recall_context(settings: Settings, prompt: str, session: str | None, scope: str | None = None) -> str:
    """The ``<relevant-memories>`` block for a prompt (from ``scope`` and the global memory): from a
    running server, else from keywords here."""
    if len(prompt.strip()) < settings.recall.min_prompt_chars:
        return ""
    # One id for this prompt: if the warm process answers only after this hook stopped waiting,
    # its answer and the one made here count as one turn (see Ledger.next_turn).
    prompt_id = uuid.uuid4().hex
    request = {"op": "recall", "prompt": prompt, "session_key": session, "scope": scope, "prompt_id": prompt_id}
    reply = ask_warm(settings, request, RECALL_TIMEOUT)
    hits = _recalled(reply) if reply is not None else None
    if hits is not None:
        context = format_recall(hits, settings.recall.budget_chars)
        log.info("recall answered by a running server (%d characters)", len(context))
    else:
        from mcp_memory.memory import Memory

        context = Memory(settings).recall(prompt, session_key=session, keywords_only=True,
                                          include_private=private_allowed(settings),
                                          scopes=read_filter(None, scope), prompt_id=prompt_id)
        log.info("recall answered in-process from keywords (%d characters)", len(context))
    return context


def ask_warm(settings: Settings, request: dict[str, Any], timeout: float) -> dict[str, Any] | None:
    """The proven reply of the workspace's warm process (or of a running server) to ``request``.

    With none running, the warm process is started and asked once it listens, all within
    ``timeout`` seconds; so the session's first hook is already answered from the index and
    the model, and every later one in tens of milliseconds. None: answer in this process.
    """
    from mcp_memory.runtime.warm import ensure_warm, settings_digest

    deadline = time.monotonic() + timeout
    digest = settings_digest(settings)
    reply = call_bridge(settings.index_dir, request, timeout=timeout, settings_digest=digest)
    if reply is not None or not settings.warm.enabled:
        return reply
    if ensure_warm(settings, warm_options, max(0.0, deadline - time.monotonic())) is None:
        return None
    return call_bridge(settings.index_dir, request, timeout=max(0.0, deadline - time.monotonic()),
                       settings_digest=digest)


def _claude_code_stop(settings: Settings, payload: dict[str, Any]) -> str:
    capture_turn(settings, _transcript_request(settings, payload, "capture"))
    return ""  # Stop hooks print nothing: stdout there is not for the model


def capture_turn(settings: Settings, request: dict[str, Any]) -> None:
    """Capture the latest messages a ``capture`` request names: by a running server if any, else here."""
    if asked_server(settings, request, "capture"):
        return
    from mcp_memory.memory import Memory

    with Memory(settings) as memory:
        result = capture_transcript(memory, request)
    log.info("capture in-process: %s", result.message)


def _transcript_request(settings: Settings, payload: dict[str, Any], op: str) -> dict[str, Any]:
    """The bridge request of a hook that reads the transcript; ValueError when the input names none."""
    path = payload.get("transcript_path")
    if not path:
        raise ValueError("the hook input has no transcript_path")
    return {"op": op, "transcript_path": str(path), "session_key": _session_of(payload),
            "scope": hook_scope(settings, payload.get("cwd"))}


def asked_server(settings: Settings, request: dict[str, Any], what: str) -> bool:
    """Whether a running server did ``request`` (its index and model are warm); logs its answer."""
    reply = ask_warm(settings, request, CAPTURE_TIMEOUT)
    if reply is None:
        return False
    log.info("%s by a running server: %s", what, loggable(reply.get("message")))
    return True


def _claude_code_session_end(settings: Settings, payload: dict[str, Any]) -> str:
    finish_session(settings, _transcript_request(settings, payload, "session-end"))
    return ""


def finish_session(settings: Settings, request: dict[str, Any]) -> None:
    """Capture the last turn, then write the session's episode: by a running server if any, else here.

    A running server has the index open, so the episode is indexed in milliseconds instead of
    after loading the index (and the model) in this process; both paths run ``end_session``.
    """
    reply = ask_warm(settings, request, CAPTURE_TIMEOUT)
    if reply is not None:
        capture = reply.get("capture")
        log.info("capture by a running server: %s", loggable(capture.get("message") if isinstance(capture, dict)
                                                            else "failed"))
        log.info("session end by a running server: episode %s", loggable(reply.get("episode")))
        return
    from mcp_memory.memory import Memory

    with Memory(settings) as memory:
        result = end_session(memory, request)
    log.info("capture in-process: %s", (result["capture"] or {}).get("message", "failed"))
    log.info("session end in-process: episode %s", result.get("episode"))


def end_session(memory: Memory, request: dict[str, Any], include_private: bool = True) -> dict[str, Any]:
    """Capture from the transcript (or the ``messages`` a client handed over), then record its episode
    (with the ``[decision]`` facts just captured) under ``episode_key``, else ``session_key``."""
    include_private = private_allowed(memory.settings, include_private)
    from mcp_memory.experience.episodes import episode_from_records, episode_from_transcript

    decisions: list[str] = []
    capture: dict[str, Any] | None = None
    try:
        captured = capture_transcript(memory, request, include_private=include_private)
        decisions = [line.text for line in captured.captured if "[decision]" in line.text.lower()]
        capture = captured.to_dict()
    except ValueError as exc:
        log.warning("capture at session end failed: %s", loggable(str(exc)))
    key = _text_field(request, "episode_key") or _text_field(request, "session_key") or ""
    client = _text_field(request, "client") or "claude-code"
    path = _text_field(request, "transcript_path")
    if path:
        episode = episode_from_transcript(Path(path).expanduser(), key, client, decisions=decisions)
    elif isinstance(request.get("messages"), list):
        records = [record for record in request["messages"] if isinstance(record, dict)]
        episode = episode_from_records(records, key, client, decisions=decisions)
    else:
        raise BadRequest("give transcript_path or messages")
    if episode is None or not (episode.has_work() or episode.decisions):
        return {"capture": capture, "episode": None}
    return {"capture": capture, "episode": memory.episodes.record(episode).path}


def _claude_code_pre_compact(settings: Settings, payload: dict[str, Any]) -> str:
    request = _transcript_request(settings, payload, "pre-compact")
    request["session_key"] = request["session_key"] or ""
    rescue_before_compaction(settings, request)
    return ""  # PreCompact output is not for the model


def rescue_before_compaction(settings: Settings, request: dict[str, Any]) -> None:
    """Rescue what the coming compaction would lose: by a running server if any, else here.

    As at session end, a running server has the index and model warm, so the rescued lines are
    deduplicated and indexed in milliseconds; both paths run ``rescue_transcript``.
    """
    if asked_server(settings, request, "rescue"):
        return
    from mcp_memory.memory import Memory

    with Memory(settings) as memory:
        result = rescue_transcript(memory, request)
    log.info("rescue in-process: %s", result.get("message"))


def rescue_transcript(memory: Memory, request: dict[str, Any], include_private: bool = True) -> dict[str, Any]:
    """Rescue from the transcript a hook names, or the transcript records (``messages``) a client handed
    over (``MemoryInputError``, a ``ValueError``, when unreadable)."""
    include_private = private_allowed(memory.settings, include_private)
    path = _text_field(request, "transcript_path")
    messages = request.get("messages")
    source: Path | list[dict[str, Any]]
    if path:
        source = Path(path).expanduser()
    elif isinstance(messages, list):
        source = [record for record in messages if isinstance(record, dict)]
    else:
        raise BadRequest("give transcript_path or messages")
    session = _text_field(request, "session_key") or "unnamed"
    result = memory.rescuer.rescue(source, session, include_private=include_private, scope=_scope_field(request))
    return result.to_dict()


def _claude_code_session_start(settings: Settings, payload: dict[str, Any]) -> str:
    """The pinned rules and a new sleep note, as ``SessionStart`` context (see ``lifecycle/rules.py``).

    Read from the files alone, no index and no server: a session start must be quick. Runs
    on every start, including after a compaction (``source: compact``), which drops them.
    """
    from mcp_memory.lifecycle.rules import session_start_context

    source = payload.get("source")
    if source is not None and not isinstance(source, str):
        raise ValueError("the hook input's source is not a string")
    context = session_start_context(settings)
    log.info("session start (%s): %d characters of context", loggable(source or "unknown", 20), len(context))
    _start_warm_early(settings)
    if not context:
        return ""
    return json.dumps(
        {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": context}},
        ensure_ascii=False,
    )


def _start_warm_early(settings: Settings) -> None:
    """Start the warm process without waiting: it loads while the user types the first prompt."""
    from mcp_memory.runtime.warm import find_warm, start_warm

    if settings.warm.enabled and settings.workspace.is_dir() and find_warm(settings) is None:
        try:
            start_warm(settings, warm_options)
        except OSError as exc:
            log.info("could not start the warm process: %s", exc)


def _session_of(payload: dict[str, Any]) -> str | None:
    session = payload.get("session_id")
    return session if isinstance(session, str) else None


def _recalled(reply: dict[str, Any]) -> list[SearchHit] | None:
    """The memories of a server's recall reply; None (recall in-process) when it does not check out."""
    try:
        return hits_from_wire(reply.get("memories"))
    except ValueError as exc:
        log.warning("the running server's recall reply is invalid (%s); recalling in-process", loggable(str(exc)))
        return None


def hits_from_wire(items: Any) -> list[SearchHit]:
    """``SearchHit.to_dict()`` records back as hits, every field checked; ``ValueError`` on anything amiss."""
    if not isinstance(items, list) or len(items) > MAX_RECALLED:
        raise InvalidReply(f"memories must be a list of at most {MAX_RECALLED} records")
    return [_hit_from_wire(item) for item in items]


def _hit_from_wire(item: Any) -> SearchHit:
    if not isinstance(item, dict):
        raise InvalidReply("a memory is not an object")
    start, end = _wire_int(item, "start_line"), _wire_int(item, "end_line")
    if not 0 <= start <= end:
        raise InvalidReply("a memory's lines are out of order")
    date = item.get("date")
    if date is not None:
        date = dt.date.fromisoformat(_wire_text(item, "date"))
    similarity = item.get("vector_similarity")
    named = item.get("id", "")
    replaced = item.get("replaced_by", "")
    for value in (named, replaced):
        if value != "" and not (isinstance(value, str) and is_memory_id(value)):
            raise InvalidReply("a memory's id is not a memory id")
    return SearchHit(
        path=_wire_text(item, "path", empty=False), start_line=start, end_line=end,
        score=_wire_number(item, "score"), snippet=_wire_text(item, "snippet"), source=_wire_text(item, "source"),
        date=date, keyword_coverage=_wire_number(item, "keyword_coverage"),
        vector_similarity=None if similarity is None else _wire_number(item, "vector_similarity"), id=named,
        replaced_by=replaced,
    )


def _wire_text(item: dict[str, Any], name: str, empty: bool = True) -> str:
    value = item.get(name)
    if not isinstance(value, str) or not (empty or value):
        raise InvalidReply(f"a memory's {name} is not a string")
    try:
        value.encode("utf-8")  # a lone surrogate could not be printed as hook JSON
    except UnicodeEncodeError:
        raise InvalidReply(f"a memory's {name} is not valid text") from None
    return value


def _wire_int(item: dict[str, Any], name: str) -> int:
    value = item.get(name)
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidReply(f"a memory's {name} is not an integer")
    return value


def _wire_number(item: dict[str, Any], name: str) -> float:
    value = item.get(name)
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        raise InvalidReply(f"a memory's {name} is not a finite number")
    return float(value)


def log_hook_failure(workspace: str | None, message: str) -> None:
    """Record a hook that could not even start (bad command line, broken settings file)."""
    from mcp_memory.config import INDEX_DIRNAME, default_workspace

    root = Path(workspace).expanduser() if workspace else default_workspace()
    _log_to_file(root / INDEX_DIRNAME / "hooks.log")
    log.error("hook not run: %s", message)


def _read_payload(stdin: IO[str]) -> dict[str, Any]:
    raw = stdin.read(MAX_STDIN_BYTES + 1)
    if len(raw) > MAX_STDIN_BYTES:
        raise ValueError("hook input is larger than 16 MB")
    data = json.loads(raw) if raw.strip() else {}
    if not isinstance(data, dict):
        raise TypeError("hook input is not a JSON object")
    return data


class _OneLine(logging.Formatter):
    """A log record as one line for people: the message, and an exception's message without its traceback."""

    def format(self, record: logging.LogRecord) -> str:
        text = f"mcp-memory {record.levelname.lower()}: {record.getMessage()}"
        if record.exc_info and record.exc_info[1] is not None:
            text += f": {type(record.exc_info[1]).__name__}: {record.exc_info[1]}"
        return " ".join(text.split())[:2000]


def _log_to_stderr() -> None:
    """Warnings and errors also go to stderr, one line each (beside the full record in hooks.log)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.WARNING)
    handler.setFormatter(_OneLine())
    logging.getLogger("mcp_memory").addHandler(handler)


def _log_to_file(path: Path) -> None:
    """Hooks log to a file (capped at about 1 MB): the client may show stderr to the user."""
    root = logging.getLogger("mcp_memory")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() and path.stat().st_size > MAX_LOG_BYTES:
            path.replace(path.with_suffix(".log.1"))
        handler: logging.Handler = logging.FileHandler(path, encoding="utf-8")
    except OSError:
        handler = logging.NullHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s"))
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    root.propagate = False
