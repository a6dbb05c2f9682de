"""Private files (``privacy.private_paths``, MEMORY.md by default) never reach a shared client.

A shared client is a server started with ``--shared`` (every caller), or an HTTP/SSE caller
whose token was given with ``--shared-token``. It may search, store and capture, but learns
nothing of a private file: not its text, not its length, not even that it exists. Every
decision is taken on the resolved path, so no spelling of a path gets around it.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from conftest import close_server, indexed_memory, write
from mcp_memory.config import load_settings
from mcp_memory.runtime.service import MemoryService
from mcp_memory.server import create_server
from test_transports import running_server, stdio_params

PRIVATE = "The user's therapist is Dr. Okafor; sessions on Wednesdays."
NESTED_PRIVATE = "The quarterly bonus pool for the platform team is 40k."
PUBLIC = "The team deploys the billing service on Wednesdays."
FULL, SHARED = "owner-token-0123456789", "team-bot-token-0123456789"

# Ways of naming MEMORY.md that a raw-string check would miss.
SPELLINGS = ["./MEMORY.md", "MEMORY.md ", " MEMORY.md", ".\\MEMORY.md", "././MEMORY.md", ".//MEMORY.md",
             "MEMORY.md\t", ".\\.\\MEMORY.md"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _seed(workspace: Path) -> None:
    write(workspace, "MEMORY.md", f"# Memory\n\n- {PRIVATE}\n- The user's salary is 9000 zorkmids.\n")
    write(workspace, "memory/projects/MEMORY.md", f"# Platform\n\n- {NESTED_PRIVATE}\n")
    write(workspace, "memory/2026-11-20.md", f"# 2026-11-20\n\n- {PUBLIC}\n")


@pytest.fixture
def shared_server(workspace, settings):
    _seed(workspace)
    service = MemoryService(settings, memory_factory=indexed_memory, start_delay=0, watch=False)
    server = create_server(settings, service, shared=True)
    yield server
    close_server(service)


def _text(result) -> str:
    return json.dumps(result.model_dump(mode="json"), ensure_ascii=False)


def _private_bytes(workspace: Path) -> dict[str, bytes]:
    return {rel: (workspace / rel).read_bytes() for rel in ("MEMORY.md", "memory/projects/MEMORY.md")}


def _leaks(text: str) -> bool:
    return any(s in text for s in ("Okafor", "zorkmids", "40k", "MEMORY.md#", "(private)"))


@pytest.mark.anyio
async def test_a_shared_server_never_serves_private_files(shared_server, workspace):
    before = _private_bytes(workspace)
    async with Client(shared_server) as client:
        outputs = [
            await client.call_tool("memory_search", {"query": "Wednesdays therapist Okafor", "max_results": 10}),
            await client.call_tool("memory_search", {"query": "quarterly bonus pool platform", "max_results": 10}),
            await client.call_tool("memory_search", {"query": "salary zorkmids", "path_prefix": "MEMORY"}),
            await client.call_tool("memory_recall", {"prompt": "who is the user's therapist, Dr. Okafor?"}),
            await client.call_tool("memory_forget", {"query": "therapist Okafor"}),
            await client.call_tool("memory_forget", {"query": "therapist Okafor sessions", "confirm": True}),
            await client.call_tool("memory_forget", {"query": "salary zorkmids", "confirm": True}),
            await client.get_prompt("recall", {"message": "when does the user see Dr. Okafor the therapist?"}),
            await client.read_resource("memory://files"),
            await client.read_resource("memory://recall/therapist%20Okafor"),
        ]
        public = await client.call_tool("memory_search", {"query": "billing service deploys"})
    for output in outputs:  # (the recall prompt echoes the question, so look for the memory's own words)
        text = _text(output)
        assert "sessions on Wednesdays" not in text and "zorkmids" not in text and "bonus pool" not in text
        assert "MEMORY.md" not in text
    assert public.structured_content["results"][0]["path"] == "memory/2026-11-20.md"
    assert _private_bytes(workspace) == before


@pytest.mark.anyio
@pytest.mark.parametrize("spelling", [*SPELLINGS, "memory/projects/MEMORY.md", "./memory/projects/MEMORY.md",
                                      "memory\\projects\\MEMORY.md", "memory/./projects/MEMORY.md"])
async def test_no_spelling_of_a_private_path_reads_or_deletes_it(shared_server, workspace, spelling):
    before = _private_bytes(workspace)
    async with Client(shared_server) as client:
        results = [await client.call_tool("memory_get", {"path": spelling}),
                   await client.call_tool("memory_get", {"path": spelling, "from_line": 3, "line_count": 1})]
        for line in (1, 3, 4):
            results.append(await client.call_tool("memory_forget", {"path": spelling, "line": line}))
            results.append(await client.call_tool("memory_forget", {"path": spelling, "line": line, "confirm": True}))
        for result in results:
            assert result.is_error, _text(result)
            assert not _leaks(_text(result))
        with pytest.raises(Exception) as raised:
            await client.read_resource(f"memory://files/{spelling.strip()}")
        assert not _leaks(str(raised.value))
    assert _private_bytes(workspace) == before


@pytest.mark.anyio
async def test_errors_do_not_tell_private_files_from_missing_ones(shared_server):
    async with Client(shared_server) as client:
        async def error(path: str) -> str:
            result = await client.call_tool("memory_get", {"path": path})
            assert result.is_error
            return result.content[0].text.replace(repr(path.strip()), "<path>")

        async def forget_error(path: str) -> str:
            result = await client.call_tool("memory_forget", {"path": path, "line": 3, "confirm": True})
            assert result.is_error
            return result.content[0].text.replace(repr(path.strip()), "<path>")

        private = {await error("MEMORY.md"), await error("./memory/projects/MEMORY.md")}
        missing = {await error("NOTES.md"), await error("memory/projects/nothing.md")}
        assert len(private | missing) == 1
        assert len({await forget_error("MEMORY.md"), await forget_error("memory/nope.md")}) == 1


@pytest.mark.anyio
async def test_shared_stores_and_captures_learn_nothing_about_private_files(shared_server, workspace):
    before = _private_bytes(workspace)
    async with Client(shared_server) as client:
        evergreen = await client.call_tool("memory_store", {"text": "The office plant is a ficus.", "evergreen": True})
        # The same fact as a private line: a shared client is told nothing of it, so it is stored.
        repeat = await client.call_tool("memory_store", {"text": PRIVATE})
        capture = await client.call_tool("memory_capture", {"messages": [
            {"role": "user", "content": "Remember that my salary is 9000 zorkmids per month."},
            {"role": "user", "content": "I prefer the quarterly bonus pool for the platform team to be 40k."},
        ]})
        status = await client.call_tool("memory_status", {})
        status_resource = await client.read_resource("memory://status")
    assert evergreen.is_error and "evergreen" in evergreen.content[0].text
    assert not _leaks(_text(evergreen)) and not any(ch.isdigit() for ch in evergreen.content[0].text)
    assert repeat.structured_content["stored"] is True
    assert repeat.structured_content["path"] == f"memory/{dt.date.today().isoformat()}.md"
    assert "MEMORY.md" not in _text(capture)
    assert all("already in memory" not in s["reason"] for s in capture.structured_content["skipped"])
    for output in (status, status_resource):
        text = _text(output)
        assert str(workspace) not in text and "MEMORY.md" not in text and "chunks" not in text
    assert status.structured_content["files"] == 2  # the daily files this client can see
    assert _private_bytes(workspace) == before


@pytest.mark.anyio
async def test_a_shared_listener_hears_nothing_about_private_files(workspace, settings):
    """Hand edits reach listeners through the file watcher; a shared one hears only of files it may read."""
    _seed(workspace)
    service = MemoryService(settings, memory_factory=indexed_memory, start_delay=0, watch=True)
    shared = create_server(settings, service, shared=True)
    events: list[tuple[float, object]] = []
    try:
        async with Client(shared) as client:
            await client.call_tool("memory_status", {})
            await anyio.sleep(2)  # the watcher is running
            uris = ["memory://files/MEMORY.md", "memory://files/memory/2026-11-20.md"]
            async with client.listen(resources_list_changed=True, resource_subscriptions=uris) as stream:

                async def collect() -> None:
                    async for event in stream:
                        events.append((time.monotonic(), event))

                async with anyio.create_task_group() as group:
                    group.start_soon(collect)
                    await anyio.sleep(0.1)
                    with open(workspace / "MEMORY.md", "a", encoding="utf-8") as handle:
                        handle.write("- The user's new therapist is Dr. Lindqvist.\n")
                    await anyio.sleep(4)  # well past the watcher's debounce: a private-only batch
                    public_edit = time.monotonic()
                    with open(workspace / "memory/2026-11-20.md", "a", encoding="utf-8") as handle:
                        handle.write("- The billing service moved to Thursdays.\n")
                    deadline = time.monotonic() + 10
                    while not events and time.monotonic() < deadline:
                        await anyio.sleep(0.1)
                    await anyio.sleep(0.3)
                    group.cancel_scope.cancel()
    finally:
        close_server(service)
    assert events, "the public edit was not heard (the watcher or the listener did not work)"
    assert all(at >= public_edit for at, _ in events), "an event arrived for the private edit alone"
    assert not any("MEMORY.md" in repr(e) for _, e in events)
    assert any("2026-11-20.md" in repr(e) for _, e in events)


def test_private_patterns_match_resolved_paths_in_any_case(workspace):
    settings = load_settings(workspace, environ={},
                             overrides={"privacy.private_paths": ["MEMORY.md", "memory/health/"]})
    from mcp_memory.memory import Memory, PathError

    write(workspace, "memory/Health/2026-01-05.md", "# 2026-01-05\n\n- Blood pressure 120/80.\n")
    write(workspace, "memory/health/meds.md", "# Meds\n\n- Takes 5 mg of something daily.\n")
    write(workspace, "memory/teams/Memory.md", "# Team memory\n\n- Sprint reviews on Thursdays.\n")
    write(workspace, "memory/ok.md", "# Ok\n\n- Public note about kites.\n")
    memory = Memory(settings, embedder=None)
    memory.sync()
    visible = {f.path for f in memory.reader.list_files(include_private=False)}
    assert visible == {"memory/ok.md"}
    for path in ("memory/Health/2026-01-05.md", "./memory/health/meds.md", "memory\\teams\\Memory.md"):
        with pytest.raises(PathError, match="not a memory file shared with this client"):
            memory.get(path, include_private=False)
    hits = memory.search("blood pressure meds sprint kites", include_private=False)
    assert [h.path for h in hits] == ["memory/ok.md"]


# ----- over the wire: stdio --shared, HTTP and SSE shared tokens ------------------------------------------
async def _attack(client: Client, ws: Path) -> None:
    """What an adversarial shared client tries; nothing of MEMORY.md may come back or change."""
    before = (ws / "MEMORY.md").read_bytes()
    for spelling in SPELLINGS:
        got = await client.call_tool("memory_get", {"path": spelling})
        forgot = await client.call_tool("memory_forget", {"path": spelling, "line": 3, "confirm": True})
        assert got.is_error and forgot.is_error, spelling
        assert "pnpm" not in _text(got) + _text(forgot)
    forgot = await client.call_tool("memory_forget", {"query": "pnpm npm yarn", "confirm": True})
    assert forgot.structured_content["removed"] is None and "MEMORY.md" not in _text(forgot)
    search = await client.call_tool("memory_search", {"query": "pnpm npm yarn"})
    status = await client.call_tool("memory_status", {})
    assert "pnpm" not in _text(search) and str(ws) not in _text(status)
    assert (ws / "MEMORY.md").read_bytes() == before


@pytest.mark.anyio
async def test_shared_stdio_server(tmp_path: Path):
    from test_transports import make_workspace

    ws = make_workspace(tmp_path / "ws")
    async with Client(stdio_params(ws, "--embedder", "none", "--shared")) as client:
        await _attack(client, ws)


@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_shared_token_over_the_network(tmp_path_factory, transport):
    with running_server(tmp_path_factory, f"privacy-{transport}", "--transport", transport, "--token", FULL,
                        "--shared-token", SHARED) as server:
        ws = server.log.parent / "ws"
        assert "pnpm" in (ws / "MEMORY.md").read_text(encoding="utf-8")

        def connect(token: str, http: httpx2.AsyncClient):
            if transport == "http":
                return Client(streamable_http_client(f"{server.base}/mcp", http_client=http))
            return Client(sse_client(f"{server.base}/sse", headers={"Authorization": f"Bearer {token}"}))

        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {SHARED}"}) as http,
            connect(SHARED, http) as client,
        ):
            await _attack(client, ws)
            files = await client.read_resource("memory://files")
            assert "MEMORY.md" not in _text(files)
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {FULL}"}) as http,
            connect(FULL, http) as client,
        ):
            search = await client.call_tool("memory_search", {"query": "pnpm npm yarn"})
            got = await client.call_tool("memory_get", {"path": "./MEMORY.md"})
            assert "pnpm" in _text(search) and not got.is_error and "pnpm" in got.structured_content["text"]


# ----- every tool, prompt and resource, including ones added later ---------------------------------------
# Words of the private lines, without the marker words that ``_leaks`` looks for.
_PROBE_TEXT = "the user's therapist sessions, salary per month and the quarterly pool for the platform team"


_OMIT = object()  # a probe value meaning: leave this optional argument out


def _probe_values(name: str, schema: dict) -> list[object]:
    """Hostile values for one argument, chosen by its name and type."""
    kind = schema.get("type") or next((s.get("type") for s in schema.get("anyOf", []) if s.get("type") != "null"), None)
    lowered = name.lower()
    if kind == "string":
        if "path" in lowered or lowered in ("uri", "file"):
            # Left out first: a search tool must also be probed over every file, not only through a prefix.
            return [*([_OMIT] if "default" in schema else []), *SPELLINGS[:4], "memory/projects/MEMORY.md",
                    "./memory/projects/MEMORY.md"]
        if lowered in ("after", "before") or "date" in lowered:
            # A date keeps only daily files, so a search probed with dates alone would never reach MEMORY.md.
            return [*([_OMIT] if "default" in schema else []), "2026-01-01"]
        if "id" in lowered:
            return ["MEMORY.md#L3", "MEMORY.md", "1"]
        return [_PROBE_TEXT]
    if kind == "integer":
        return [3]
    if kind == "number":
        return [0.0]
    if kind == "boolean":
        return [True]
    if kind == "array":
        return [[{"role": "user", "content": f"Remember that {_PROBE_TEXT}."}]]
    return [None]


@pytest.mark.anyio
async def test_every_tool_prompt_and_resource_keeps_private_files_private(shared_server, workspace):
    """Driven by the server's own listings, so a tool added later is checked too."""
    before = _private_bytes(workspace)
    async with Client(shared_server) as client:
        tools = (await client.list_tools()).tools
        assert len(tools) >= 7
        assert {"memory_search", "precision_memory_search", "deep_memory_search"} <= {t.name for t in tools}
        for tool in tools:
            properties = tool.input_schema.get("properties", {})
            variants = [{}]
            for name, schema in properties.items():
                values = _probe_values(name, schema)
                variants = [v if value is _OMIT else {**v, name: value}
                            for v in variants for value in values if value is not None][:12] or variants
            for arguments in variants:
                result = await client.call_tool(tool.name, arguments)
                assert not _leaks(_text(result)), (tool.name, arguments, _text(result)[:300])
        for prompt in (await client.list_prompts()).prompts:
            arguments = {a.name: _PROBE_TEXT for a in prompt.arguments or [] if a.required}
            result = await client.get_prompt(prompt.name, arguments)
            text = _text(result).replace(_PROBE_TEXT, "")
            assert not _leaks(text) and "sessions on Wednesdays" not in text, prompt.name
        for resource in (await client.list_resources()).resources:
            assert not _leaks(_text(await client.read_resource(str(resource.uri)))), resource.uri
        for template in (await client.list_resource_templates()).resource_templates:
            for value in [*SPELLINGS[:3], "memory/projects/MEMORY.md", "therapist%20sessions%20salary"]:
                uri = template.uri_template.split("{")[0] + value.strip()
                try:
                    result = await client.read_resource(uri)
                except Exception as exc:  # noqa: BLE001 - refused: the refusal must not tell anything either
                    assert not _leaks(str(exc)), uri
                else:
                    assert not _leaks(_text(result).replace(_PROBE_TEXT, "")), uri
    assert _private_bytes(workspace) == before
