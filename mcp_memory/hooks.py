"""Client hooks: recall before the model answers, capture after it has answered.

``mcp-memory hook claude-code prompt`` runs on Claude Code's ``UserPromptSubmit``: it reads
the hook JSON (``prompt``, ``session_id``) from stdin and prints the hook JSON whose
``hookSpecificOutput.additionalContext`` holds the ``<relevant-memories>`` block.
``mcp-memory hook claude-code stop`` runs on ``Stop`` (and ``SessionEnd``): it captures the
latest messages of the transcript at ``transcript_path``.

Both first ask a running ``mcp-memory serve`` of the workspace through the loopback bridge
(warm index and model: tens of milliseconds). With none running, recall answers from the
keyword index alone (no model to load) and capture runs in-process.

A hook must never break the client: whatever happens, it exits 0, prints either valid hook
JSON or nothing, and writes what went wrong to ``<index_dir>/hooks.log``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from pathlib import Path
from typing import IO, Any

from mcp_memory.bridge import call_bridge
from mcp_memory.config import Settings

log = logging.getLogger(__name__)

MAX_STDIN_BYTES = 16 * 1024 * 1024
MAX_LOG_BYTES = 1024 * 1024
RECALL_TIMEOUT = 2.0  # seconds a prompt hook waits for a running server before answering alone
CAPTURE_TIMEOUT = 60.0


# ----- server side: what the bridge answers ---------------------------------------------------
def handle_request(memory: Any, request: dict[str, Any]) -> dict[str, Any]:
    """Answer one bridge request with ``memory`` (a ``Memory``); raises on bad requests."""
    op = request.get("op")
    if op == "ping":
        return {"pong": True}
    if op == "recall":
        context = memory.recall(str(request.get("prompt") or ""), session_key=request.get("session_key"))
        return {"context": context}
    if op == "capture":
        return capture_transcript(memory, request).to_dict()
    raise ValueError(f"unknown operation {op!r}")


def capture_transcript(memory: Any, request: dict[str, Any]) -> Any:
    """Capture from ``transcript_path`` or ``messages`` in a request or hook payload."""
    from mcp_memory.transcripts import messages_from_json, read_transcript

    last = memory.settings.capture.max_messages
    if request.get("messages") is not None:
        messages = messages_from_json(request["messages"])[-last:]
    elif request.get("transcript_path"):
        messages = read_transcript(Path(str(request["transcript_path"])).expanduser(), last=last)
    else:
        raise ValueError("give transcript_path or messages")
    key = request.get("idempotency_key") or turn_key(request.get("session_key"), messages)
    return memory.capture(messages, session_key=request.get("session_key"), idempotency_key=key)


def turn_key(session_key: Any, messages: list[Any]) -> str:
    """Identifies a conversation state: ``Stop`` and ``SessionEnd`` on the same turn capture once."""
    digest = hashlib.sha256()
    for message in messages:
        digest.update(f"{message.role}\x00{message.content}\x01".encode("utf-8", "replace"))
    return f"turn:{session_key or ''}:{digest.hexdigest()[:24]}"


# ----- client side: the hook commands ---------------------------------------------------------
def run_hook(settings: Settings, client: str, event: str, stdin: IO[str], stdout: IO[str]) -> int:
    """Run one hook; always returns 0 (a failing hook must not disturb the client)."""
    _log_to_file(settings.index_dir / "hooks.log")
    started = time.perf_counter()
    try:
        payload = _read_payload(stdin)
        if client != "claude-code":
            raise ValueError(f"unknown client {client!r}")
        if event == "prompt":
            output = _claude_code_prompt(settings, payload)
        elif event in ("stop", "session-end"):
            output = _claude_code_stop(settings, payload)
        else:
            raise ValueError(f"unknown hook event {event!r}")
        if output:
            stdout.write(output + "\n")
            stdout.flush()
    except Exception:
        log.exception("hook %s %s failed", client, event)
    finally:
        log.info("hook %s %s took %.0f ms", client, event, (time.perf_counter() - started) * 1000)
    return 0


def _claude_code_prompt(settings: Settings, payload: dict[str, Any]) -> str:
    prompt = str(payload.get("prompt") or "")
    session = payload.get("session_id")
    if len(prompt.strip()) < settings.recall.min_prompt_chars:
        return ""
    request = {"op": "recall", "prompt": prompt, "session_key": session}
    reply = call_bridge(settings.index_dir, request, timeout=RECALL_TIMEOUT)
    if reply is not None:
        context = str(reply.get("context") or "")
        log.info("recall answered by a running server (%d characters)", len(context))
    else:
        from mcp_memory.memory import Memory

        context = Memory(settings).recall(prompt, session_key=session, keywords_only=True)
        log.info("recall answered in-process from keywords (%d characters)", len(context))
    if not context:
        return ""
    return json.dumps(
        {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": context}},
        ensure_ascii=False,
    )


def _claude_code_stop(settings: Settings, payload: dict[str, Any]) -> str:
    path = payload.get("transcript_path")
    if not path:
        raise ValueError("the hook input has no transcript_path")
    request = {"op": "capture", "transcript_path": str(path), "session_key": payload.get("session_id")}
    reply = call_bridge(settings.index_dir, request, timeout=CAPTURE_TIMEOUT)
    if reply is not None:
        log.info("capture by a running server: %s", reply.get("message"))
        return ""
    from mcp_memory.memory import Memory

    with Memory(settings) as memory:
        result = capture_transcript(memory, request)
    log.info("capture in-process: %s", result.message)
    return ""  # Stop hooks print nothing: stdout there is not for the model


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
        raise ValueError("hook input is not a JSON object")
    return data


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
