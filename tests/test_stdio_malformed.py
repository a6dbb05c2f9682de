"""The stdio server fed malformed input over raw pipes (no SDK client): it stays up and stays clean.

A real ``python -m mcp_memory serve --embedder none --workspace WS -vv`` subprocess gets a valid
``initialize`` handshake written by hand, then one malformed input per case: lines that are not
JSON, JSON arrays and scalars, objects that are not JSON-RPC, a 10 MB line, invalid UTF-8 bytes,
deep nesting, unknown methods, ``tools/call`` with wrong argument types. After each the server
must answer as JSON-RPC 2.0 asks, and then still answer a valid ``memory_search`` (or exit cleanly
with a message on stderr):

* every request gets an answer with its id: a JSON-RPC error, or for a tool call a tool-level
  ``isError`` result, even when the line could not be read as a message;
* every other unreadable line gets an error with id null: -32700 when it is not JSON, -32600
  when it is JSON but not a message;
* blank lines, valid notifications and responses get nothing (a response's id is never echoed).

What came back is recorded per case (``record_property("outcome", ...)``, and printed: run with
``-rP`` to see it).

Every line the server writes to stdout must be one JSON-RPC 2.0 message; nothing else may ever
appear there. Closing stdin makes the server exit within a few seconds with code 0.

One server is shared by the cases (a fresh one is started when a case makes it exit); the
whole module runs in about 15 s.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from conftest import server_env

PNPM_NOTE = "The user prefers pnpm over npm and yarn."
RESPONSE_TIMEOUT = 30.0  # the first search waits for the engine to open (a few seconds)
EXIT_TIMEOUT = 5.0
BIG = 10 * 1024 * 1024


def make_workspace(root: Path) -> Path:
    (root / "memory").mkdir(parents=True)
    (root / "MEMORY.md").write_text(f"# Preferences\n\n{PNPM_NOTE}\n", encoding="utf-8")
    (root / "memory" / "2026-11-20.md").write_text("# 2026-11-20\n\nDeployed the zebracorn service.\n",
                                                   encoding="utf-8")
    return root


def rpc(request_id: int | str | None, method: str, params: object = None) -> bytes:
    message: dict = {"jsonrpc": "2.0", "method": method}
    if request_id is not None:
        message["id"] = request_id
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode()


def check_stdout_line(raw: bytes) -> dict:
    """One stdout line: a complete JSON-RPC 2.0 message and nothing else."""
    assert raw.endswith(b"\n"), f"stdout ended in the middle of a line: {raw[:200]!r}"
    try:
        message = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise AssertionError(f"not JSON on stdout ({exc}): {raw[:300]!r}") from None
    assert isinstance(message, dict) and message.get("jsonrpc") == "2.0", raw[:300]
    if "method" in message:  # a request or notification from the server
        assert isinstance(message["method"], str), raw[:300]
    else:
        assert "id" in message and (("result" in message) != ("error" in message)), raw[:300]
        if "error" in message:
            error = message["error"]
            assert isinstance(error.get("code"), int) and isinstance(error.get("message"), str), raw[:300]
    return message


class RawServer:
    """``serve`` on raw pipes; reader threads collect every stdout line and all of stderr."""

    def __init__(self, workspace: Path):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mcp_memory", "serve", "--embedder", "none", "--workspace", str(workspace), "-vv"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=server_env(),
            cwd=str(workspace.parent),
        )
        self.lines: list[bytes] = []
        self._stderr: list[bytes] = []
        self._q: queue.Queue[bytes | None] = queue.Queue()
        self._next_id = 1000
        self._out = threading.Thread(target=self._read_out, daemon=True)
        self._err = threading.Thread(target=self._read_err, daemon=True)
        self._out.start()
        self._err.start()

    def _read_out(self) -> None:
        for line in self.proc.stdout:  # type: ignore[union-attr]
            self.lines.append(line)
            self._q.put(line)
        self._q.put(None)

    def _read_err(self) -> None:
        for line in self.proc.stderr:  # type: ignore[union-attr]
            self._stderr.append(line)

    @property
    def stderr(self) -> str:
        return b"".join(self._stderr).decode("utf-8", "replace")

    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def send(self, data: bytes) -> bool:
        """Write one line; False when the server no longer reads its stdin."""
        try:
            self.proc.stdin.write(data + b"\n")  # type: ignore[union-attr]
            self.proc.stdin.flush()  # type: ignore[union-attr]
            return True
        except (BrokenPipeError, OSError):
            return False

    def collect_until(self, request_id: int, timeout: float = RESPONSE_TIMEOUT) -> tuple[dict | None, list[dict]]:
        """Messages up to the response to ``request_id`` (None when stdout closed first)."""
        seen: list[dict] = []
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._q.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(
                    f"no response to {request_id} within {timeout} s; stderr:\n{self.stderr[-3000:]}") from None
            if line is None:
                return None, seen
            message = check_stdout_line(line)
            if message.get("id") == request_id and "method" not in message:
                return message, seen
            seen.append(message)

    def handshake(self) -> None:
        assert self.send(rpc(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                                "clientInfo": {"name": "malformed-test", "version": "0"}}))
        init, _ = self.collect_until(1)
        assert init is not None and init["result"]["serverInfo"]["name"] == "mcp-memory", self.stderr[-2000:]
        assert self.send(rpc(None, "notifications/initialized"))

    def search_works(self) -> tuple[dict | None, list[dict]]:
        """Send a valid memory_search; its response (None if the server exited) and what came before it."""
        request_id = self.new_id()
        if not self.send(rpc(request_id, "tools/call", {"name": "memory_search", "arguments": {"query": "pnpm"}})):
            return None, []
        response, before = self.collect_until(request_id)
        if response is not None:
            result = response.get("result")
            assert result is not None and result["isError"] is False, response
            top = result["structuredContent"]["results"][0]
            assert top["path"] == "MEMORY.md" and "pnpm" in top["snippet"], top
        return response, before

    def close(self, timeout: float = EXIT_TIMEOUT) -> int | None:
        """Close stdin and wait; the exit code, or None when the server had to be killed."""
        try:
            self.proc.stdin.close()  # type: ignore[union-attr]
        except OSError:
            pass
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        finally:
            self.kill()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)
        self._out.join(5)
        self._err.join(5)


@dataclass
class Servers:
    """The shared server; a fresh one (with its own workspace) when a case made the last one exit."""

    root: Path
    current: RawServer | None = None
    retired: list[RawServer] = field(default_factory=list)
    count: int = 0

    def get(self) -> RawServer:
        if self.current is None or self.current.proc.poll() is not None:
            if self.current is not None:
                self.retired.append(self.current)
            self.count += 1
            server = RawServer(make_workspace(self.root / f"ws{self.count}"))
            server.handshake()
            response, _ = server.search_works()  # waits for the engine to open
            assert response is not None, server.stderr[-3000:]
            self.current = server
        return self.current


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    pool = Servers(tmp_path_factory.mktemp("stdio-malformed"))
    try:
        yield pool
    finally:
        if pool.current is not None:
            pool.current.close()
        for server in [*pool.retired, pool.current]:
            if server is not None:
                server.kill()


# ----- the malformed inputs ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    name: str
    lines: list[bytes]  # written one per line
    request_id: int | None = None  # the id the case's own request carries: it must be answered
    # What the answer to that id may be: "error" (JSON-RPC error), "tool-error" (JSON-RPC error or a
    # result with isError), "any" (a result or an error).
    answer: str = "error"
    # The codes of the errors with id null that must come back, in order: one per line that is not
    # a readable message (-32700: not JSON; -32600: JSON but not a message). Blank lines, valid
    # notifications and responses get nothing.
    null_errors: tuple[int, ...] = ()


def _call(request_id: int, params: object) -> bytes:
    return rpc(request_id, "tools/call", params)


PARSE, INVALID = -32700, -32600
CASES = [
    Case("garbage-line", [b"this is not json {"], null_errors=(PARSE,)),
    Case("garbage-control-bytes", [b"\x1b[31m\x07\x08 \x7f not json at all \x1b[0m"], null_errors=(PARSE,)),
    Case("empty-and-blank-lines", [b"", b"   ", b"\t"]),
    Case("json-array-empty", [b"[]"], null_errors=(INVALID,)),
    Case("json-array-batch", [b"[" + rpc(201, "tools/list") + b"]"], null_errors=(INVALID,)),
    Case("json-scalars", [b"42", b"null", b'"a string"', b"true", b"1e999"], null_errors=(INVALID,) * 5),
    Case("object-not-jsonrpc", [b'{"hello": "world"}', b'{"id": 202, "method": "tools/list"}'], 202,
         null_errors=(INVALID,)),
    Case("jsonrpc-wrong-version", [b'{"jsonrpc": "1.0", "id": 203, "method": "tools/list"}'], 203),
    # Without a method it may be a broken response: its id is not echoed.
    Case("jsonrpc-id-without-method", [b'{"jsonrpc": "2.0", "id": "x"}'], null_errors=(INVALID,)),
    Case("unsolicited-response", [b'{"jsonrpc": "2.0", "id": 9999, "result": {}}',
                                  b'{"jsonrpc": "2.0", "id": 9998, "error": {"code": 1, "message": "?"}}']),
    Case("malformed-response", [b'{"jsonrpc": "2.0", "id": 9997, "result": 5}']),
    Case("unknown-notification", [rpc(None, "notifications/no_such_thing", {"x": 1})]),
    Case("malformed-notification", [b'{"jsonrpc": "2.0", "method": "notifications/x", "params": 3}'],
         null_errors=(INVALID,)),
    Case("deeply-nested", [b"[" * 100_000 + b"]" * 100_000, b'{"a":' * 50_000 + b"1" + b"}" * 50_000],
         null_errors=(PARSE, PARSE)),
    Case("line-of-10-mb-garbage", [b"y" * BIG], null_errors=(PARSE,)),
    Case("line-of-10-mb-json-string", [b'{"jsonrpc": "2.0", "method": "notifications/x", "params": {"s": "'
                                       + b"z" * BIG + b'"}}']),
    Case("search-with-10-mb-query", [_call(204, {"name": "memory_search", "arguments": {"query": "q" * BIG}})],
         204, "any"),
    Case("invalid-utf8-line", [b"\xff\xfe\xc3\x28 \xa0\xa1 \xed\xa0\x80 not utf-8"], null_errors=(PARSE,)),
    Case("invalid-utf8-inside-request", [b'{"jsonrpc": "2.0", "id": 205, "method": "tools/call", "params": '
                                         b'{"name": "memory_search", "arguments": {"query": "pnpm \xff\xfe"}}}'],
         205, "any"),
    # json.dumps writes the lone surrogate as the escape \ud800: legal JSON text, not encodable as UTF-8.
    Case("lone-surrogate-escape-in-request",
         [_call(206, {"name": "memory_search", "arguments": {"query": "\ud800 pnpm"}})], 206, "error"),
    Case("unknown-method", [rpc(207, "no/such/method")], 207, "error"),
    Case("tools-call-unknown-tool", [_call(208, {"name": "no_such_tool", "arguments": {}})], 208, "tool-error"),
    Case("tools-call-query-not-a-string", [_call(209, {"name": "memory_search", "arguments": {"query": 42}})],
         209, "tool-error"),
    Case("tools-call-query-list", [_call(210, {"name": "memory_search", "arguments": {"query": ["pnpm"]}})],
         210, "tool-error"),
    Case("tools-call-query-null", [_call(211, {"name": "memory_search", "arguments": {"query": None}})],
         211, "tool-error"),
    Case("tools-call-max-results-wrong", [_call(212, {"name": "memory_search",
                                                      "arguments": {"query": "pnpm", "max_results": "lots"}})],
         212, "tool-error"),
    Case("tools-call-max-results-huge", [_call(213, {"name": "memory_search",
                                                     "arguments": {"query": "pnpm", "max_results": 10**30}})],
         213, "tool-error"),
    Case("tools-call-missing-arguments", [_call(214, {"name": "memory_search"})], 214, "tool-error"),
    Case("tools-call-arguments-not-object", [_call(215, {"name": "memory_search", "arguments": "pnpm"})],
         215, "tool-error"),
    Case("tools-call-params-not-object", [_call(216, "memory_search")], 216, "error"),
    Case("tools-call-name-not-string", [_call(217, {"name": 42, "arguments": {}})], 217, "tool-error"),
    Case("tools-call-get-wrong-types", [_call(218, {"name": "memory_get",
                                                    "arguments": {"path": {"a": 1}, "from_line": "x"}})],
         218, "tool-error"),
    Case("tools-call-store-wrong-types", [_call(219, {"name": "memory_store", "arguments": {"text": 123}})],
         219, "tool-error"),
    Case("initialize-again", [rpc(220, "initialize", {"protocolVersion": 5, "capabilities": "none"})], 220, "any"),
]


def _outcome(case: Case, answer: dict | None, null_errors: list[int], exited: bool) -> str:
    if exited:
        return "exited"
    parts = [f"null-id error {code}" for code in null_errors]
    if answer is not None:
        if "error" in answer:
            parts.append(f"json-rpc error {answer['error']['code']}")
        else:
            parts.append("tool error (isError)" if answer["result"].get("isError") else "answered")
    return ", ".join(parts) or "nothing (as it should)"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_malformed_input_is_answered_and_search_still_works(servers: Servers, case: Case, record_property) -> None:
    server = servers.get()
    written = all(server.send(line) for line in case.lines)
    response, before = server.search_works() if written else (None, [])
    exited = response is None
    if case.request_id is not None and not exited and not any(m.get("id") == case.request_id for m in before):
        # Requests are handled concurrently: the case's answer may come after the search's.
        late, between = server.collect_until(case.request_id)
        before += between + ([late] if late is not None else [])
    if exited:
        # Allowed: a clean exit that says why on stderr.
        code = server.proc.wait(EXIT_TIMEOUT)
        assert code == 0, f"exit code {code}; stderr:\n{server.stderr[-3000:]}"
        assert server.stderr.strip(), "the server exited without a word on stderr"
    answer = None if case.request_id is None else next(
        (m for m in before if "method" not in m and m.get("id") == case.request_id), None)
    null_errors = []
    for message in before:
        if "method" in message:
            continue  # a server-side request or notification (logging, list changes)
        # Only the case's own id, or null for input that has no readable id, may be answered.
        assert message.get("id") in (case.request_id, None), message
        if message.get("id") is None:
            assert "error" in message, message
            null_errors.append(message["error"]["code"])
    if not exited:
        assert tuple(null_errors) == case.null_errors, (case.name, before)
        if case.request_id is not None:
            assert answer is not None, f"{case.name}: request {case.request_id} was never answered"
    if answer is not None:
        if case.answer == "error":
            assert "error" in answer, answer
        elif case.answer == "tool-error":
            assert "error" in answer or answer["result"].get("isError") is True, answer
    if case.name == "search-with-10-mb-query" and answer is not None and "result" in answer:
        assert answer["result"]["isError"] is False or answer["result"]["content"], answer
    outcome = _outcome(case, answer, null_errors, exited)
    record_property("outcome", outcome)
    print(f"{case.name}: {outcome}")


def test_a_burst_of_malformed_input_then_search(servers: Servers) -> None:
    """All the cases back to back without waiting, then a search: still answered, stdout still clean."""
    server = servers.get()
    for case in CASES:
        for line in case.lines:
            if len(line) < 1_000_000:  # the 10 MB lines have their own cases
                assert server.send(line)
    response, _ = server.search_works()
    assert response is not None, server.stderr[-3000:]
    for raw in server.lines:
        check_stdout_line(raw)


def test_garbage_before_the_handshake(tmp_path: Path) -> None:
    server = RawServer(make_workspace(tmp_path / "ws"))
    try:
        for line in (b"garbage", b"[]", b"{}", b"\xff\xfe", rpc(3, "tools/list")):
            assert server.send(line)
        server.handshake()
        response, _ = server.search_works()
        assert response is not None, server.stderr[-3000:]
    finally:
        code = server.close()
    assert code == 0, server.stderr[-3000:]
    for raw in server.lines:
        check_stdout_line(raw)


@pytest.mark.parametrize("tail", [b"", b'{"jsonrpc": "2.0", "id": 77, "meth'], ids=["after-a-line", "mid-line"])
def test_closing_stdin_exits_within_seconds_with_code_0(tmp_path: Path, tail: bytes) -> None:
    server = RawServer(make_workspace(tmp_path / "ws"))
    try:
        server.handshake()
        response, _ = server.search_works()  # the engine is open: the index threads are running
        assert response is not None
        if tail:
            server.proc.stdin.write(tail)  # type: ignore[union-attr]
            server.proc.stdin.flush()  # type: ignore[union-attr]
        started = time.monotonic()
        code = server.close()
        elapsed = time.monotonic() - started
    finally:
        server.kill()
    assert code == 0, f"exit code {code} (None: still running after {EXIT_TIMEOUT} s); stderr:\n{server.stderr[-3000:]}"
    assert elapsed < EXIT_TIMEOUT
    assert "Traceback" not in server.stderr, server.stderr[-3000:]
    for raw in server.lines:
        check_stdout_line(raw)


def test_shared_server_stdout_was_json_rpc_only_and_it_exits_cleanly(servers: Servers) -> None:
    """Runs after the cases: everything the shared servers wrote was JSON-RPC; EOF ends the last one with 0."""
    server = servers.get()
    code = server.close()
    assert code == 0, f"exit code {code}; stderr:\n{server.stderr[-3000:]}"
    for one in [*servers.retired, server]:
        assert one.lines
        for raw in one.lines:
            check_stdout_line(raw)
    servers.retired.append(server)
    servers.current = None
