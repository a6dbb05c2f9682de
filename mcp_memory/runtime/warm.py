"""Finding, or starting, the one warm process of a workspace.

Loading the index and the embedding model costs seconds and hundreds of megabytes, so one
process per workspace and user pays it for everyone: ``mcp-memory warm`` (see
``processes/warm_server.py``). The stdio servers of that workspace become thin fronts forwarding MCP
messages to it (``front.py``), and the hooks ask it through the bridge. It exits after
``[warm] idle_minutes`` with no client and no request.

A warm process announces itself with a bridge file (``<index_dir>/bridges/<pid>.json``, see
``bridge.py``) whose ``role`` is ``"warm"`` and whose ``settings`` is a digest of the settings
it serves with: a front or hook uses it only when the digest matches its own settings, so a
process started with another embedder or config never answers for this one. Only one can hold
``<index_dir>/warm-<uid>-<digest>.lock``; a second one started at the same moment exits at once.

This module is deliberately light (the standard library and ``bridge.py``): a hook or a front
that imports it must start in tens of milliseconds.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from mcp_memory import __version__
from mcp_memory.config import Settings
from mcp_memory.core.folders import make_private_folder
from mcp_memory.runtime.bridge import BRIDGE_DIRNAME, BridgeInfo, bridge_infos, owner_state

log = logging.getLogger(__name__)

WARM_ROLE = "warm"
CALL_KEY = "io.mcp-memory/call"  # in a forwarded tools/call's params._meta: the same key on every retry
POLL_SECONDS = 0.02
LOG_FILE = "warm.log"
MAX_LOG_BYTES = 1024 * 1024


def settings_digest(settings: Settings) -> str:
    """A digest of the version and every effective setting: a warm process serves only callers
    with the same (after an upgrade, the new version starts its own; the old one idles out).

    The ``[scopes]`` settings are each client's own (its default scope travels with its stream
    request or hook request), so clients of different scopes share one warm process. The ``[warm]``
    settings say how the process itself lives (idle time, client limit), not what it serves: a
    server and a hook started with different environments (an MCP client gives its servers a
    minimal one) still share one warm process, whichever of them started it."""
    values = dataclasses.asdict(settings)
    for own in ("scopes", "warm"):
        values.pop(own, None)
    data = json.dumps([__version__, values], sort_keys=True, default=str)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()[:24]


def lock_path(settings: Settings, digest: str) -> Path:
    """Held by the warm process of these settings for its whole life."""
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return settings.index_dir / f"warm-{uid}-{digest}.lock"


def find_warm(settings: Settings) -> BridgeInfo | None:
    """The live warm process serving these settings, if any (files of dead ones are removed)."""
    digest = settings_digest(settings)
    for info in bridge_infos(settings.index_dir / BRIDGE_DIRNAME):
        if info.role != WARM_ROLE:
            continue
        state = owner_state(info)
        if state == "stale":
            _unlink(info.path)
            continue
        if state == "alive" and info.settings == digest:
            return info
    return None


def start_warm(settings: Settings, options: list[str]) -> subprocess.Popen[bytes]:
    """Spawn ``mcp-memory warm`` for the workspace, detached from the caller (its own session).

    ``options`` are the command-line settings the caller was given (``--config``, ``--embedder``,
    ...), so that the new process computes the same settings; the environment is inherited.
    Its log goes to ``<index_dir>/warm.log``; stdin and stdout are the null device. Returns the
    child, so that a caller waiting for it can tell when it died without ever listening.
    """
    make_private_folder(settings.index_dir)
    log_path = settings.index_dir / LOG_FILE
    try:
        if log_path.stat().st_size > MAX_LOG_BYTES:
            log_path.replace(log_path.with_suffix(".log.1"))
    except OSError:
        pass
    argv = [sys.executable, "-m", "mcp_memory", "warm", "--workspace", str(settings.workspace), *options]
    with open(log_path, "ab") as log_file:
        kwargs: dict[str, Any] = {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL, "stderr": log_file,
                                  "close_fds": True, "cwd": str(settings.workspace)}
        if os.name == "posix":
            kwargs["start_new_session"] = True  # not killed with the terminal or the client that started it
        else:
            kwargs["creationflags"] = getattr(subprocess, "DETACHED_PROCESS", 0) | getattr(
                subprocess, "CREATE_NEW_PROCESS_GROUP", 0)
        child = subprocess.Popen(argv, **kwargs)  # our own interpreter and module
    log.info("started a warm process for %s", settings.workspace)
    return child


def wait_for_warm(settings: Settings, timeout: float,
                  child: subprocess.Popen[bytes] | None = None) -> BridgeInfo | None:
    """The warm process once it listens, polling for up to ``timeout`` seconds.

    ``child``, the process this caller started, ends the wait early when it exits with an error
    (it will never listen; its reason is in ``warm.log``). Exiting with 0 means another process
    of these settings holds the lock and will listen: the wait goes on for that one.
    """
    deadline = time.monotonic() + timeout
    while True:
        info = find_warm(settings)
        if info is not None or time.monotonic() >= deadline:
            return info
        if child is not None and child.poll() not in (None, 0):
            log.warning("the warm process %d exited with status %s before listening (see %s)",
                        child.pid, child.returncode, settings.index_dir / LOG_FILE)
            return find_warm(settings)
        time.sleep(POLL_SECONDS)


def ensure_warm(settings: Settings, options: list[str], timeout: float,
                started: subprocess.Popen[bytes] | None = None) -> BridgeInfo | None:
    """The warm process of these settings, started if none runs; None when warm processes are off
    or none listens within ``timeout`` seconds (the caller then works alone).

    ``started`` is a warm process this caller already spawned (``start_warm``): it is waited for
    rather than another one started, unless it already died with an error."""
    if not settings.warm.enabled:
        return None
    info = find_warm(settings)
    if info is not None:
        return info
    if not settings.workspace.is_dir():
        return None
    if started is None or started.poll() not in (None, 0):
        try:
            started = start_warm(settings, options)
        except OSError as exc:
            log.warning("could not start a warm process: %s", exc)
            return None
    return wait_for_warm(settings, timeout, started)


def command_line_options(overrides: dict[str, Any], config: str | None) -> list[str]:
    """The options that give a warm process the same settings as a caller started with these."""
    options: list[str] = []
    if config:
        options += ["--config", str(Path(config).expanduser().absolute())]
    if overrides.get("index_path"):
        options += ["--index-path", str(overrides["index_path"])]
    if overrides.get("embedding.provider"):
        options += ["--embedder", str(overrides["embedding.provider"])]
    return options


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


def serving_processes(settings: Settings) -> list[dict[str, Any]]:
    """Who serves the workspace now: its warm processes and servers, with pid, role and since when.

    For ``status`` and ``doctor``: read from the bridge files of live processes (this user's).
    """
    digest = settings_digest(settings)
    found = []
    for info in bridge_infos(settings.index_dir / BRIDGE_DIRNAME):
        if owner_state(info) != "alive":
            continue
        since = dt.datetime.fromtimestamp(info.started).astimezone().isoformat(timespec="seconds") \
            if info.started else None
        found.append({"pid": info.pid, "role": info.role, "since": since, "port": info.port,
                      "same_settings": info.role != WARM_ROLE or info.settings == digest})
    return found


def describe_processes(processes: list[dict[str, Any]]) -> str:
    """One line for people: "warm process 123 since 2026-11-26T10:00:00+00:00; server 456 since ..."."""
    if not processes:
        return "none running (the next client or hook starts the warm process)"
    names = {WARM_ROLE: "warm process", "server": "server"}
    return "; ".join(f"{names.get(p['role'], p['role'])} {p['pid']} since {p['since'] or '?'}"
                     + ("" if p["same_settings"] else " (other settings)") for p in processes)
