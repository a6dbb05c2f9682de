"""Shared pieces of the end-to-end tests: the installed clients, a throwaway world, process checks.

The clients are installed by ``.ci/clients.sh`` into ``.ci-clients/`` of the checkout (or the
folder named by ``$MCP_MEMORY_E2E_CLIENTS``). A client that is not there makes its tests skip,
saying so: they never pass without it.

A ``World`` is one user's machine in miniature: a temporary HOME, a memory workspace, a
project folder the client runs in, and the environment every client and hook of the test
inherits (no MCP_MEMORY_* of the machine, a warm process that idles out in seconds, the
clients' telemetry and updates off). Each client is connected with ``mcp-memory setup``, the
documented way. After a test, no ``mcp-memory`` process of that world may be left running.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLIENTS_DIR = Path(os.environ.get("MCP_MEMORY_E2E_CLIENTS") or ROOT / ".ci-clients")
# A warm process exits this many minutes after its last client: long enough to serve the
# sessions of one test in a row, short enough that nothing outlives the test for long.
WARM_IDLE_MINUTES = "0.1"
LEFTOVER_TIMEOUT = 30.0  # seconds for every process of a world to be gone after its clients exited

BINARIES = {
    "claude-code": "claude-code/node_modules/.bin/claude",
    "codex": "codex/node_modules/.bin/codex",
    "gemini": "gemini/node_modules/.bin/gemini",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.e2e)


def client_binary(name: str) -> Path:
    """The installed client's program; skips the test (loudly) when it is not installed."""
    path = CLIENTS_DIR / BINARIES[name]
    if not path.exists():
        pytest.skip(f"SKIPPED, NOT PASSED: {name} is not installed in {CLIENTS_DIR} (run bash .ci/clients.sh)")
    return path


@dataclass
class World:
    """A temporary HOME, workspace and project, and the environment clients run with there."""

    home: Path
    workspace: Path
    project: Path
    env: dict[str, str] = field(default_factory=dict)

    def setup(self, client: str, *options: str) -> str:
        """``mcp-memory setup CLIENT --workspace W``, as a user would run it; returns its output."""
        result = subprocess.run([sys.executable, "-m", "mcp_memory", "setup", client, "--workspace",
                                 str(self.workspace), *options], env=self.env, cwd=self.project,
                                capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        return result.stdout

    def processes(self, roles: tuple[str, ...] = ("serve", "warm", "hook")) -> list[str]:
        """The command lines of running ``mcp-memory`` processes of this world (any of ``roles``)."""
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
                environ = (entry / "environ").read_bytes().split(b"\0")
            except OSError:
                continue
            words = [a.decode(errors="replace") for a in argv if a]
            if not any("mcp_memory" in w or w.endswith("mcp-memory") for w in words[:3]):
                continue
            if not any(role in words for role in roles):
                continue
            ours = str(self.workspace) in words or f"MCP_MEMORY_WORKSPACE={self.workspace}".encode() in environ \
                or f"HOME={self.home}".encode() in environ
            if ours:
                found.append(f"{entry.name}: {' '.join(words)}")
        return found

    def wait_until_gone(self, roles: tuple[str, ...] = ("serve", "warm", "hook"),
                        timeout: float = LEFTOVER_TIMEOUT) -> list[str]:
        """Waits for this world's processes to exit; returns those still running at the deadline."""
        deadline = time.monotonic() + timeout
        while (left := self.processes(roles)) and time.monotonic() < deadline:
            time.sleep(0.25)
        return left

    def kill_leftovers(self) -> None:
        for line in self.processes():
            try:
                os.kill(int(line.split(":", 1)[0]), 9)
            except OSError:
                pass


HEADLESS_TIMEOUT = 180  # seconds one headless client session may take


def run_headless(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, list[dict[str, Any]], str]:
    """Run a client headless, stdin closed: its exit code, the JSON events it printed one per
    line on stdout (other lines skipped), and its stderr."""
    result = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=HEADLESS_TIMEOUT,
                            stdin=subprocess.DEVNULL)
    events = []
    for line in result.stdout.splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            continue
    return result.returncode, events, result.stderr


def make_world(root: Path) -> World:
    home, workspace, project = root / "home", root / "memory", root / "project"
    for folder in (home, workspace / "memory", project):
        folder.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_MEMORY_", "ANTHROPIC_", "OPENAI_",
                                                                       "GEMINI_", "GOOGLE_", "CLAUDE", "CODEX_"))}
    env.update(HOME=str(home), MCP_MEMORY_WARM_IDLE_MINUTES=WARM_IDLE_MINUTES, PYTHONUNBUFFERED="1",
               NO_COLOR="1", CI="true", DISABLE_AUTOUPDATER="1", DISABLE_TELEMETRY="1")
    env.pop("XDG_CONFIG_HOME", None)
    env.pop("XDG_DATA_HOME", None)
    return World(home=home, workspace=workspace, project=project, env=env)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """One world for a module's tests; at its end, every mcp-memory process of it must be gone."""
    made = make_world(tmp_path_factory.mktemp("world"))
    yield made
    left = made.wait_until_gone()
    made.kill_leftovers()
    assert not left, f"mcp-memory processes still running {LEFTOVER_TIMEOUT} s after the clients exited: {left}"
