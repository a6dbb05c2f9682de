"""Shared fixtures: workspaces in temp dirs, and a deterministic embedder for unit tests.

``HashEmbedder`` is for tests whose subject is not embedding quality: it hashes keyword tokens
into a bag-of-words vector, so texts sharing words are similar and results are repeatable.
Integration tests use the real default embedder.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mcp_memory.config import Settings, load_settings
from mcp_memory.core.analysis import keyword_tokens
from mcp_memory.embedding.base import Embedder, normalize
from mcp_memory.memory import Memory


class HashEmbedder(Embedder):
    provider = "test-hash"
    model = "bag-of-words"
    batch_size = 8

    def __init__(self, dims: int = 64):
        self._dims = dims
        self.calls: list[int] = []  # batch sizes of embed_documents calls

    @property
    def dimensions(self) -> int:
        return self._dims

    def _vector(self, text: str) -> np.ndarray:
        v = np.zeros(self._dims, np.float32)
        for token in keyword_tokens(text.lower()):
            h = int(hashlib.md5(token.encode()).hexdigest(), 16)
            v[h % self._dims] += 1.0 if (h >> 8) % 2 else -1.0
        if not v.any():
            v[0] = 1.0
        return normalize(v)

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        self.calls.append(len(texts))
        return np.stack([self._vector(t) for t in texts]) if texts else np.zeros((0, self._dims), np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self._vector(text)


# Every stdio server of a test is a front to a warm process that would otherwise idle for ten
# minutes after its last client: in tests it goes a few seconds after, so a run does not pile
# them up. Children that inherit this environment get the same.
WARM_IDLE = "0.05"
os.environ["MCP_MEMORY_WARM_IDLE_MINUTES"] = WARM_IDLE


@pytest.fixture(autouse=True)
def _product_logging_restored() -> Iterator[None]:
    """A hook run in-process sets up the product's logger as a hook process would (its own file,
    no propagation): put it back after each test, so later tests' ``caplog`` sees the records."""
    logger = logging.getLogger("mcp_memory")
    handlers, level, propagate = list(logger.handlers), logger.level, logger.propagate
    yield
    for handler in logger.handlers:
        if handler not in handlers:
            handler.close()
    logger.handlers[:] = handlers
    logger.setLevel(level)
    logger.propagate = propagate


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "memory").mkdir(parents=True)
    return root


@pytest.fixture
def settings(workspace: Path) -> Settings:
    return load_settings(workspace, environ={})


def recalled(block: str) -> list[tuple[str, str]]:
    """The memories of a recall block, in order: (source citation, text)."""
    return re.findall(r'<memory source="([^"]+)"[^>]*>(.*?)</memory>', block, re.DOTALL)


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def indexed_memory(settings: Settings) -> Memory:
    """A HashEmbedder memory, synced and fully embedded before a service reports it open."""
    memory = Memory(settings, embedder=HashEmbedder())
    memory.index()
    return memory


def make_server(settings: Settings, memory_factory: Any = indexed_memory) -> tuple[Any, Any]:
    """An MCP server and its service, which opens ``memory_factory(settings)`` at once and does not watch."""
    from mcp_memory.runtime.service import MemoryService
    from mcp_memory.server import create_server

    service = MemoryService(settings, memory_factory=memory_factory, start_delay=0, watch=False)
    return create_server(settings, service), service


def close_server(service: Any) -> None:
    """Stop the service of a server: its background thread (sync + backfill) ends, its memory is closed."""
    service.close()


@contextmanager
def http_server(handler: type[BaseHTTPRequestHandler]) -> Iterator[int]:
    """A local HTTP server (standing in for a remote API) on a free loopback port; yields the port."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    # A short poll interval keeps shutdown() from adding half a second to every test.
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield httpd.server_address[1]
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def free_port() -> int:
    """A loopback TCP port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


# ----- `mcp-memory serve` in a child process ------------------------------------------------------
SERVER_READY_TIMEOUT = 30.0


def server_env(**extra: str) -> dict[str, str]:
    """The environment for a child server: no MCP_MEMORY_* settings leak in, output unbuffered,
    and a warm process it starts exits seconds after its last client (see WARM_IDLE)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_MEMORY_")}
    env["PYTHONUNBUFFERED"] = "1"
    env["MCP_MEMORY_WARM_IDLE_MINUTES"] = WARM_IDLE
    env.update(extra)
    return env


class ServerProcess:
    """``python -m mcp_memory serve`` (keyword-only) on a free loopback port, its output in a log file."""

    def __init__(self, workspace: Path, logdir: Path, *args: str, env: dict[str, str] | None = None):
        self.port = free_port()
        self.log = logdir / f"server-{self.port}.log"
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "mcp_memory", "serve", "--workspace", str(workspace), "--embedder", "none",
                 "--host", "127.0.0.1", "--port", str(self.port), *args],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=server_env(**(env or {})),
                cwd=str(logdir),
            )

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """The Streamable HTTP endpoint."""
        return f"{self.base}/mcp"

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_listening(self, timeout: float = SERVER_READY_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while not port_open(self.port):
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}: {self.output()}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"server did not listen on {self.port} within {timeout} s: {self.output()}")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def start_server(workspace: Path, logdir: Path, *args: str, env: dict[str, str] | None = None) -> ServerProcess:
    """Start ``serve`` with ``args`` and wait until it accepts connections."""
    server = ServerProcess(workspace, logdir, *args, env=env)
    server.wait_listening()
    return server
