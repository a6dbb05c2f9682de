"""Tokens from a file (``serve --token-file``, ``$MCP_MEMORY_TOKEN_FILE``): out of the process list.

A real ``serve --transport http`` reads a full, a read-only and a shared token from one file and
gives each its access; none of them appears in the process's command line, environment or log.
A file that cannot be used is a clear error that never repeats a token.
"""

from __future__ import annotations

import logging
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from conftest import start_server
from mcp_memory.processes.serve import ServeError, ServeOptions, collect_tokens
from test_transports import assert_pnpm_hit, make_workspace, raw_post

FULL, READ_ONLY, SHARED = "file-full-token-0123456", "file-read-only-token-45678", "file-shared-token-9abcdef"
TOKENS = f"# tokens of this server\nfull {FULL}\n\nread-only {READ_ONLY}\nshared {SHARED}\n"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _token_file(folder: Path, text: str = TOKENS, mode: int = 0o600) -> Path:
    path = folder / "tokens"
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)
    return path


async def _call(base: str, token: str, tool: str, args: dict):
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client,
    ):
        return await client.call_tool(tool, args)


@pytest.mark.anyio
async def test_a_server_takes_every_kind_of_token_from_its_file(tmp_path: Path) -> None:
    secrets = _token_file(tmp_path)
    server = start_server(make_workspace(tmp_path / "ws"), tmp_path, "--transport", "http",
                          "--token-file", str(secrets))
    try:
        assert raw_post(server.port)[0] == 401  # no token, no access
        assert raw_post(server.port, headers={"Authorization": "Bearer not-a-token-of-this-file"})[0] == 401
        assert_pnpm_hit(await _call(server.base, FULL, "memory_search", {"query": "pnpm"}))
        assert not (await _call(server.base, FULL, "memory_store", {"text": "The user likes oolong tea."})).is_error
        refused = await _call(server.base, READ_ONLY, "memory_store", {"text": "The user likes green tea."})
        assert refused.is_error and "read-only" in refused.content[0].text
        shared = await _call(server.base, SHARED, "memory_search", {"query": "pnpm"})
        assert "MEMORY.md" not in str(shared.structured_content)  # the private file stays private
        command_line = Path(f"/proc/{server.proc.pid}/cmdline").read_bytes()
        environment = Path(f"/proc/{server.proc.pid}/environ").read_bytes()
    finally:
        server.stop()
    for token in (FULL, READ_ONLY, SHARED):
        assert token.encode() not in command_line and token.encode() not in environment
        assert token not in server.output()
    assert "given on the command line" not in server.output()


def test_the_environment_may_name_the_file_and_a_scoped_line_gives_a_scope(tmp_path: Path) -> None:
    secrets = _token_file(tmp_path, f"{FULL}\nscoped:team {SHARED}\n")
    tokens = collect_tokens(ServeOptions(), environ={"MCP_MEMORY_TOKEN_FILE": str(secrets)})
    assert tokens.full == [FULL] and tokens.scoped == {SHARED: "team"}


def test_a_file_others_can_read_is_called_out(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    secrets = _token_file(tmp_path, mode=0o644)
    with caplog.at_level(logging.WARNING):
        collect_tokens(ServeOptions(token_file=str(secrets)), environ={})
    assert any("chmod 600" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(("text", "says"), [
    (f"owner {FULL}\n", "line 1: the kind must be"),
    (f"full {FULL} extra\n", "line 1: write KIND TOKEN"),
    (f"full {FULL}\nfull {READ_ONLY}\n", "more than one full-access token"),
    (f"read-only {FULL}\nshared {FULL}\n", "two kinds of token"),
    ("# nothing here\n\n", "holds no token"),
    ("full tok\u00e9n-with-a-non-ascii-letter\n", "line 1: a token may hold printable ASCII"),
    (f"scoped:../up {FULL}\n", "scope"),
])
def test_a_bad_token_file_is_a_clear_error_that_never_repeats_a_token(tmp_path: Path, text: str, says: str) -> None:
    secrets = _token_file(tmp_path, text)
    with pytest.raises(ServeError) as raised:
        collect_tokens(ServeOptions(token_file=str(secrets)), environ={})
    assert says in str(raised.value)
    assert FULL not in str(raised.value) and READ_ONLY not in str(raised.value)


def test_a_missing_token_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ServeError, match="cannot read the token file"):
        collect_tokens(ServeOptions(token_file=str(tmp_path / "absent")), environ={})
