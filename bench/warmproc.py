"""The warm processes of a benchmark's workspace: find them, stop them, read a process's memory.

Shared by ``bench/hooks.py`` and ``bench/server.py``. A warm process announces itself with a
bridge file ``<workspace>/.mcp-memory/bridges/<pid>.json`` whose ``role`` is ``"warm"``; it is
started detached (its own session), so a benchmark finds it through that file, not as a child.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from mcp_memory.config import INDEX_DIRNAME
from mcp_memory.runtime.bridge import BRIDGE_DIRNAME, bridge_infos, owner_state, process_identity
from mcp_memory.runtime.warm import WARM_ROLE

POLL_S = 0.05


@dataclass
class Stopped:
    """What stopping the warm processes of a workspace took."""

    pids: list[int]
    seconds: float
    stale_files_removed: int  # bridge files still there once their process had gone


def bridges_dir(workspace: Path) -> Path:
    return workspace / INDEX_DIRNAME / BRIDGE_DIRNAME


def warm_pids(workspace: Path) -> list[int]:
    """The live warm processes of the workspace (any settings), by their bridge files."""
    return [info.pid for info in bridge_infos(bridges_dir(workspace))
            if info.role == WARM_ROLE and owner_state(info) == "alive"]


def warm_processes_running(workspace: Path) -> list[int]:
    """Processes of this user whose command line is ``... mcp_memory warm --workspace <workspace>``,
    whether or not they still have a bridge file (a check that does not trust the files)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"warm" in argv and str(workspace).encode() in argv and process_identity(int(entry.name)) is not None:
            found.append(int(entry.name))
    return found


def stop_warm(workspace: Path, timeout: float = 30.0) -> Stopped:
    """SIGTERM every warm process of the workspace; wait until each has gone and its bridge file too.

    A bridge file whose process has gone is removed here, as the next client would remove it
    (``find_warm``): the count says how many were left behind.
    """
    started = time.perf_counter()
    infos = [info for info in bridge_infos(bridges_dir(workspace))
             if info.role == WARM_ROLE and owner_state(info) == "alive"]
    for info in infos:
        try:
            os.kill(info.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    stale = 0
    deadline = time.monotonic() + timeout
    for info in infos:
        while process_identity(info.pid) == info.identity and time.monotonic() < deadline:
            time.sleep(POLL_S)
        while info.path.exists() and time.monotonic() < deadline:
            if process_identity(info.pid) != info.identity:  # gone (or a zombie): the file is stale
                try:
                    info.path.unlink()
                    stale += 1
                except FileNotFoundError:
                    pass
                break
            time.sleep(POLL_S)
        if process_identity(info.pid) == info.identity:
            raise SystemExit(f"the warm process {info.pid} is still running {timeout:.0f} s after SIGTERM")
    return Stopped([info.pid for info in infos], time.perf_counter() - started, stale)


def wait_until_no_warm(workspace: Path, timeout: float) -> float | None:
    """Seconds until no warm process of the workspace runs (by bridge file and by command line);
    None if one still runs after ``timeout`` seconds."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if not warm_pids(workspace) and not warm_processes_running(workspace):
            return time.monotonic() - started
        time.sleep(0.2)
    return None


def rss_mb(pid: int) -> float | None:
    """VmRSS of a process in MB (from ``/proc/<pid>/status``); None when it cannot be read."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except (OSError, ValueError, IndexError):
        pass
    return None


def children_with(args: list[str]) -> list[int]:
    """This process's children whose command line contains all of ``args`` (oldest first)."""
    me = os.getpid()
    found: list[tuple[int, int]] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_bytes()
            argv = [a.decode(errors="replace") for a in (entry / "cmdline").read_bytes().split(b"\0")]
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 1:].split()
        if int(fields[1]) == me and all(a in argv for a in args):
            found.append((int(fields[19]), int(entry.name)))
    return [pid for _, pid in sorted(found)]
