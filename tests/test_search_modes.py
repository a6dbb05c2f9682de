"""precision_memory_search and deep_memory_search as an MCP client sees them, and ``search --mode``.

The tools are driven through the real ``mcp.Client`` in memory, on a workspace whose notes are
one chunk each, so a passage of a reranking prompt names its hit by path. The client's "model"
is a sampling callback that records each request and answers a fixed text. The command line is
driven through ``mcp_memory.cli.main`` with ``--embedder none``.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, MCPError
from mcp.types import CreateMessageRequestParams, CreateMessageResult, ErrorData, TextContent

from conftest import close_server, free_port, http_server, indexed_memory, make_server, write
from mcp_memory.cli import main
from mcp_memory.config import Settings
from mcp_memory.runtime.service import MemoryService
from mcp_memory.server import create_server

MODES = ["auto", "legacy"]
PRECISE, DEEP = "precision_memory_search", "deep_memory_search"

PRIVATE = "The user's billing password hint is the cat Okafor-zorkmid."
NOTES = {
    "memory/2026-01-05.md": "# 2026-01-05\n\n- Decided to use PostgreSQL 16 for the billing service.\n",
    "memory/2026-02-10.md": "# 2026-02-10\n\n- The billing service moved to a new database cluster in Frankfurt.\n",
    "memory/2026-03-02.md": "# 2026-03-02\n\n- Dana reviewed the billing service invoices with the finance team.\n",
    "memory/projects/atlas.md": "# Atlas\n\nAtlas is the data platform; it runs on Kubernetes with Airflow.\n",
}
HIT_FIELDS = {"path", "start_line", "end_line", "chunk_start_line", "chunk_end_line", "score", "snippet", "source",
              "date", "citation", "id", "replaced_by"}
QUERY = "billing service database"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def populated(workspace: Path) -> Path:
    write(workspace, "MEMORY.md", f"# Memory\n\n- {PRIVATE}\n")
    for path, text in NOTES.items():
        write(workspace, path, text)
    return workspace


@pytest.fixture
def server(populated: Path, settings: Settings):
    srv, service = make_server(settings)
    yield srv
    close_server(service)


@pytest.fixture
def sampling_server(populated: Path, settings: Settings):
    """A server whose precision search asks the client's model (``rerank.provider = "llm"``, no model)."""
    settings.rerank.provider = "llm"
    srv, service = make_server(settings)
    yield srv
    close_server(service)


def shared_sampling_server(settings: Settings) -> tuple[Any, MemoryService]:
    settings.rerank.provider = "llm"
    service = MemoryService(settings, memory_factory=indexed_memory, start_delay=0, watch=False)
    return create_server(settings, service, shared=True), service


class FakeModel:
    """A client-side model: records each sampling request and answers ``answer``."""

    def __init__(self, answer: str):
        self.answer = answer
        self.requests: list[CreateMessageRequestParams] = []

    async def __call__(self, context: Any, params: CreateMessageRequestParams) -> CreateMessageResult:
        self.requests.append(params)
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text=self.answer),
                                   model="fake-model", stop_reason="endTurn")

    def prompt(self) -> str:
        """The system prompt and user messages of the one request this model got."""
        (request,) = {json.dumps(r.model_dump(mode="json"), sort_keys=True): r for r in self.requests}.values()
        users = [m.content.text for m in request.messages if isinstance(m.content, TextContent)]
        return "\n".join([request.system_prompt or "", *users])

    def passages(self) -> dict[int, str]:
        """The path of each numbered passage in the prompt."""
        found = re.findall(r"^\[(\d+)\] (\S+?)(?: \(\d{4}-\d{2}-\d{2}\))?: ", self.prompt(), re.MULTILINE)
        return {int(n): path for n, path in found}


@asynccontextmanager
async def connect(srv: Any, mode: str = "auto", model: Any = None) -> AsyncIterator[Client]:
    kwargs = {"sampling_callback": model} if model is not None else {}
    async with Client(srv, mode=mode, **kwargs) as client:
        yield client


def text_of(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def dump(result: Any) -> str:
    return json.dumps(result.model_dump(mode="json"), ensure_ascii=False)


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, text_of(result)
    return result.structured_content


async def assert_still_serving(client: Client) -> None:
    out = await call(client, "memory_search", query="PostgreSQL billing")
    assert out["results"][0]["path"] == "memory/2026-01-05.md"


# ----- discovery and shapes --------------------------------------------------------------------
@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_both_tools_are_listed_with_schemas(server, mode):
    async with connect(server, mode) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    precise, deep = tools[PRECISE], tools[DEEP]
    assert set(precise.input_schema["properties"]) == {"query", "top_k", "min_score", "path_prefix", "after",
                                                       "before", "scope"}
    assert set(deep.input_schema["properties"]) == {"query", "max_results", "path_prefix", "after", "before", "scope"}
    assert precise.input_schema["required"] == ["query"] and deep.input_schema["required"] == ["query"]
    top_k = precise.input_schema["properties"]["top_k"]
    assert (top_k["default"], top_k["minimum"], top_k["maximum"]) == (5, 1, 50)
    assert deep.input_schema["properties"]["max_results"]["default"] == 8
    assert set(precise.output_schema["properties"]) == {"results", "warnings", "reranker"}
    assert set(deep.output_schema["properties"]) == {"results", "concepts", "warnings"}
    for tool in (precise, deep):
        assert tool.annotations.read_only_hint is True and tool.annotations.destructive_hint is not True
    # Each description tells a model when to pick it over memory_search.
    assert "exact answer" in precise.description
    assert "connects several memories" in deep.description
    assert "fast default" in tools["memory_search"].description


@pytest.mark.anyio
async def test_instructions_say_when_to_use_which(server):
    async with connect(server) as client:
        instructions = client.instructions or ""
    assert "fast default" in instructions
    assert PRECISE in instructions and DEEP in instructions and "the friend who" in instructions


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_precision_results_shape(server, mode):
    async with connect(server, mode) as client:
        out = await call(client, PRECISE, query=QUERY, top_k=3)
    assert set(out) == {"results", "warnings", "reranker"}
    assert out["reranker"] == "local" and out["warnings"] == []
    hits = out["results"]
    assert 1 <= len(hits) <= 3
    for hit in hits:
        assert set(hit) == HIT_FIELDS
        assert hit["citation"] == f"{hit['path']}#L{hit['start_line']}-L{hit['end_line']}"
        assert hit["chunk_start_line"] <= hit["start_line"] <= hit["end_line"] <= hit["chunk_end_line"]
        assert 0.0 <= hit["score"] <= 1.0
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    assert {h["path"] for h in hits} <= set(NOTES) | {"MEMORY.md"}


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_deep_results_have_hop_and_concepts(server, mode):
    async with connect(server, mode) as client:
        out = await call(client, DEEP, query="Who reviewed the invoices of the billing service?")
    assert set(out) == {"results", "concepts", "warnings"}
    assert isinstance(out["concepts"], list) and all(isinstance(c, str) for c in out["concepts"])
    hits = out["results"]
    assert hits and len(hits) <= 8
    for hit in hits:
        assert set(hit) == HIT_FIELDS | {"hop", "concepts"}
        assert hit["hop"] in (1, 2)
        assert isinstance(hit["concepts"], list) and all(isinstance(c, str) for c in hit["concepts"])
        if hit["hop"] == 1:
            assert hit["concepts"] == []
    assert any(h["path"] == "memory/2026-03-02.md" for h in hits)


@pytest.mark.anyio
async def test_filters_apply_to_both_tools(server):
    async with connect(server) as client:
        for tool in (PRECISE, DEEP):
            window = await call(client, tool, query=QUERY, after="2026-02-01", before="2026-02-28")
            projects = await call(client, tool, query="Atlas Kubernetes Airflow", path_prefix="memory/projects/")
            assert {h["path"] for h in window["results"]} == {"memory/2026-02-10.md"}, tool
            assert {h["path"] for h in projects["results"]} == {"memory/projects/atlas.md"}, tool


# ----- bad input: an error that says why, or nothing found; never a traceback -------------------
@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_empty_queries_find_nothing(server, mode):
    async with connect(server, mode) as client:
        for query in ("", "   ", "\n\t"):
            precise = await call(client, PRECISE, query=query)
            deep = await call(client, DEEP, query=query)
            assert precise["results"] == [] and deep["results"] == [], repr(query)
        await assert_still_serving(client)


@pytest.mark.anyio
async def test_a_100_kb_query_is_answered(server):
    query = ("billing service database " * 5000)[: 100 * 1024]
    async with connect(server) as client:
        for tool in (PRECISE, DEEP):
            out = await call(client, tool, query=query)
            assert out["results"] and out["results"][0]["path"] in NOTES, tool
        await assert_still_serving(client)


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_out_of_range_counts_are_clear_errors(server, mode):
    async with connect(server, mode) as client:
        for tool, name in ((PRECISE, "top_k"), (DEEP, "max_results")):
            for value in (0, -3, 51, 10**9, 2.5, "many"):
                result = await client.call_tool(tool, {"query": "billing", name: value})
                message = text_of(result)
                assert result.is_error, (tool, value)
                assert name in message and "validation error" in message, (tool, value, message)
                assert "Traceback" not in message
            assert len((await call(client, tool, query="billing", **{name: 1}))["results"]) == 1
            assert len((await call(client, tool, query="the billing", **{name: 50}))["results"]) <= 50
        await assert_still_serving(client)


BAD_DATES = [
    ({"after": "2026-13-01"}, r"after must be a date like \d{4}-\d{2}-\d{2}, got '2026-13-01'"),
    ({"before": "last tuesday"}, r"before must be a date like \d{4}-\d{2}-\d{2}, got 'last tuesday'"),
    ({"after": "2026-03-01", "before": "2026-02-01"}, r"after \(2026-03-01\) is later than before"),
]


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_bad_dates_are_clear_errors(server, mode):
    async with connect(server, mode) as client:
        for tool in (PRECISE, DEEP):
            for arguments, reason in BAD_DATES:
                result = await client.call_tool(tool, {"query": "billing", **arguments})
                message = text_of(result)
                assert result.is_error, (tool, arguments)
                assert re.search(reason, message), (tool, arguments, message)
                assert "Traceback" not in message
        await assert_still_serving(client)


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_bad_dates_never_sample(sampling_server, mode):
    model = FakeModel("[1]")
    async with connect(sampling_server, mode, model) as client:
        for arguments, reason in BAD_DATES:
            result = await client.call_tool(PRECISE, {"query": "billing", **arguments})
            assert result.is_error and re.search(reason, text_of(result)), arguments
    assert model.requests == []


@pytest.mark.anyio
async def test_wrongly_typed_arguments(server):
    cases = [({"query": None}, "query"), ({}, "query"), ({"query": ["billing"]}, "query"),
             ({"query": "billing", "min_score": 1.5}, "min_score"), ({"query": "billing", "after": 20260105}, "after"),
             ({"query": "billing", "path_prefix": {"a": 1}}, "path_prefix")]
    async with connect(server) as client:
        for tool in (PRECISE, DEEP):
            for arguments, field in cases:
                if tool == DEEP and field == "min_score":
                    continue  # deep search takes no min_score (an unknown argument is ignored)
                result = await client.call_tool(tool, arguments)
                assert result.is_error and field in text_of(result), (tool, arguments, text_of(result))
        await assert_still_serving(client)


# ----- sampling: the client's model orders the candidates ---------------------------------------
@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_sampled_order_is_followed(sampling_server, mode):
    model = FakeModel("[2, 1]")
    async with connect(sampling_server, mode, model) as client:
        out = await call(client, PRECISE, query=QUERY, top_k=2)
    passages = model.passages()
    assert len(passages) >= 2
    assert out["reranker"] == "sampling" and out["warnings"] == []
    assert [h["path"] for h in out["results"]] == [passages[2], passages[1]]
    prompt = model.prompt()
    assert QUERY in prompt and "JSON array" in prompt
    (request,) = {r.model_dump_json(): r for r in model.requests}.values()
    assert request.temperature == 0 and request.max_tokens >= 8 * len(passages)


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_sampled_order_differs_from_the_local_order(sampling_server, mode):
    async with connect(sampling_server, mode) as client:
        local = await call(client, PRECISE, query=QUERY, top_k=3)
    first = FakeModel("[1, 2, 3]")
    async with connect(sampling_server, mode, first) as client:
        await call(client, PRECISE, query=QUERY, top_k=3)
    n = len(first.passages())
    model = FakeModel(json.dumps(list(range(n, 0, -1))))  # the first stage's order, reversed
    async with connect(sampling_server, mode, model) as client:
        sampled = await call(client, PRECISE, query=QUERY, top_k=3)
    passages = model.passages()
    assert [h["path"] for h in sampled["results"]] == [passages[n], passages[n - 1], passages[n - 2]]
    assert [h["path"] for h in sampled["results"]] != [h["path"] for h in local["results"]]
    assert local["reranker"] == "local" and sampled["reranker"] == "sampling"


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("answer", ["I cannot rank these passages.", "", "[0, 99]", "{\"ranking\": \"none\"}"])
async def test_garbage_from_the_model_means_local_order_and_a_warning(sampling_server, mode, answer):
    async with connect(sampling_server, mode) as client:
        local = await call(client, PRECISE, query=QUERY, top_k=3)
    model = FakeModel(answer)
    async with connect(sampling_server, mode, model) as client:
        out = await call(client, PRECISE, query=QUERY, top_k=3)
        await assert_still_serving(client)
    assert model.requests
    assert out["reranker"] == "local"
    assert [h["citation"] for h in out["results"]] == [h["citation"] for h in local["results"]]
    assert len(out["warnings"]) == 1 and "sampling" in out["warnings"][0], out["warnings"]


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_client_without_sampling_gets_local_order_and_a_warning(sampling_server, mode):
    async with connect(sampling_server, mode) as client:
        out = await call(client, PRECISE, query=QUERY, top_k=3)
    assert out["results"] and out["reranker"] == "local"
    assert len(out["warnings"]) == 1 and "no sampling" in out["warnings"][0]


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_local_provider_never_samples(server, mode):
    model = FakeModel("[2, 1]")
    async with connect(server, mode, model) as client:
        out = await call(client, PRECISE, query=QUERY, top_k=2)
        await call(client, DEEP, query=QUERY)
    assert model.requests == [] and out["reranker"] == "local" and out["warnings"] == []


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_nothing_to_order_never_samples(sampling_server, mode):
    model = FakeModel("[1]")
    async with connect(sampling_server, mode, model) as client:
        empty = await call(client, PRECISE, query="")
        none = await call(client, PRECISE, query=QUERY, after="2030-01-01")
    assert model.requests == []
    assert empty["results"] == none["results"] == [] and empty["warnings"] == none["warnings"] == []


@pytest.mark.anyio
async def test_refused_sampling_legacy_means_local_order_and_a_warning(sampling_server):
    """Under a handshake protocol the server sends the sampling request itself and survives a refusal."""
    calls: list[CreateMessageRequestParams] = []

    async def refuse(context: Any, params: CreateMessageRequestParams) -> ErrorData:
        calls.append(params)
        return ErrorData(code=-1, message="User rejected sampling request")

    async with connect(sampling_server, "legacy") as client:
        local = await call(client, PRECISE, query=QUERY, top_k=3)
    async with connect(sampling_server, "legacy", refuse) as client:
        out = await call(client, PRECISE, query=QUERY, top_k=3)
        await assert_still_serving(client)
    assert len(calls) == 1
    assert out["reranker"] == "local"
    assert [h["citation"] for h in out["results"]] == [h["citation"] for h in local["results"]]
    assert len(out["warnings"]) == 1 and "User rejected sampling request" in out["warnings"][0]


@pytest.mark.anyio
async def test_refused_sampling_2026_is_the_clients_own_abort(sampling_server):
    """Under 2026-07-28 the sampling request rides the tool call's retries: a client callback that
    refuses makes the SDK client abort the call on its side, before the server hears of it. The
    server is not hurt by it: the same client's next calls are answered."""

    async def refuse(context: Any, params: CreateMessageRequestParams) -> ErrorData:
        return ErrorData(code=-1, message="User rejected sampling request")

    async with connect(sampling_server, "auto", refuse) as client:
        with pytest.raises(MCPError, match="User rejected sampling request"):
            await client.call_tool(PRECISE, {"query": QUERY})
        await assert_still_serving(client)
        deep = await call(client, DEEP, query=QUERY)
    assert deep["results"]


# ----- privacy: a shared caller's results and its model's prompt hold no private file -----------
@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_shared_callers_never_see_private_files(populated, settings, mode):
    query = "billing password hint cat Okafor zorkmid"
    srv, service = shared_sampling_server(settings)
    try:
        model = FakeModel("[1, 2]")
        async with connect(srv, mode, model) as client:
            outputs = [
                await client.call_tool(PRECISE, {"query": query, "top_k": 10}),
                await client.call_tool(PRECISE, {"query": query, "path_prefix": "MEMORY"}),
                await client.call_tool(PRECISE, {"query": query, "path_prefix": "./MEMORY.md"}),
                await client.call_tool(DEEP, {"query": query, "max_results": 20}),
                await client.call_tool(DEEP, {"query": query, "path_prefix": "MEMORY"}),
            ]
        for result in outputs:
            assert not result.is_error, text_of(result)
            assert "Okafor" not in dump(result) and "MEMORY.md" not in dump(result), dump(result)[:300]
        assert model.requests, "the shared caller's model was asked to order the public candidates"
        for request in model.requests:  # the query names the private words; the private line never shows
            asked = request.model_dump_json()
            assert "Okafor-zorkmid" not in asked and "password hint is" not in asked and "MEMORY.md" not in asked
    finally:
        close_server(service)


@pytest.mark.anyio
async def test_the_owner_sees_private_files_through_both_tools(sampling_server):
    """The counterpart of the shared test: the same queries do reach MEMORY.md for a full caller."""
    model = FakeModel("[1]")
    async with connect(sampling_server, "auto", model) as client:
        precise = await call(client, PRECISE, query="billing password hint Okafor zorkmid", top_k=10)
        deep = await call(client, DEEP, query="billing password hint Okafor zorkmid", max_results=20)
    assert "MEMORY.md" in {h["path"] for h in precise["results"]}
    assert "MEMORY.md" in {h["path"] for h in deep["results"]}
    assert "Okafor-zorkmid" in model.prompt()


# ----- the command line: mcp-memory search --mode ----------------------------------------------
@pytest.fixture
def restore_logging():
    """``main`` points the package logger at the current stderr; undo that after each test."""
    logger = logging.getLogger("mcp_memory")
    saved = (list(logger.handlers), logger.level, logger.propagate)
    yield
    logger.handlers[:], logger.level, logger.propagate = saved[0], saved[1], saved[2]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.usefixtures("restore_logging")
def test_cli_modes_json(populated, capsys):
    ws = str(populated)
    outputs = {}
    for mode in ("default", "precise", "deep"):
        code, out, err = run(capsys, "search", QUERY, "-w", ws, "--embedder", "none", "--mode", mode, "--json",
                             "-k", "3")
        assert code == 0, err
        hits = json.loads(out)
        assert isinstance(hits, list) and 1 <= len(hits) <= 3, mode
        assert all(h["citation"] == f"{h['path']}#L{h['start_line']}-L{h['end_line']}" for h in hits)
        outputs[mode] = hits
    assert all("hop" in h and "concepts" in h for h in outputs["deep"])
    assert not any("hop" in h or "concepts" in h for h in outputs["default"] + outputs["precise"])
    code, out, err = run(capsys, "search", QUERY, "-w", ws, "--embedder", "none", "--json")
    assert code == 0 and [h["citation"] for h in json.loads(out)] == [
        h["citation"] for h in json.loads(run(capsys, "search", QUERY, "-w", ws, "--embedder", "none", "--json",
                                              "--mode", "default")[1])]


@pytest.mark.usefixtures("restore_logging")
def test_cli_deep_prints_hop_and_concepts(populated, capsys):
    code, out, err = run(capsys, "search", QUERY, "-w", str(populated), "--embedder", "none", "--mode", "deep")
    assert code == 0, err
    ranked = [line for line in out.splitlines() if re.match(r"\d+\. ", line)]
    assert ranked
    for line in ranked:
        assert re.fullmatch(r"\d+\. \S+#L\d+-L\d+  score \d\.\d{3}(  \d{4}-\d{2}-\d{2})?  id m-[0-9a-f]{12}"
                            r"  hop [12]( via .+)?", line), line


@pytest.mark.usefixtures("restore_logging")
def test_cli_precise_human_output_and_warnings_on_stderr(populated, capsys):
    ws = str(populated)
    code, out, err = run(capsys, "search", QUERY, "-w", ws, "--embedder", "none", "--mode", "precise")
    assert code == 0 and re.match(r"1\. memory/\S+#L\d+-L\d+  score \d\.\d{3}", out), out
    assert "hop" not in out and "warning" not in err
    # An llm reranker without a model needs an MCP client's sampling: local order, a warning on stderr.
    write(populated, "mcp-memory.toml", '[rerank]\nprovider = "llm"\n')
    code, out, err = run(capsys, "search", QUERY, "-w", ws, "--embedder", "none", "--mode", "precise", "--json")
    assert code == 0
    assert isinstance(json.loads(out), list)  # stdout stays pure JSON
    assert "warning:" in err and "sampling" in err


@pytest.mark.usefixtures("restore_logging")
def test_cli_mode_bad_input(populated, capsys):
    ws = str(populated)
    with pytest.raises(SystemExit) as exc:
        main(["search", QUERY, "-w", ws, "--embedder", "none", "--mode", "fastest"])
    assert exc.value.code == 2
    assert "invalid choice" in capsys.readouterr().err
    for mode in ("precise", "deep"):
        code, out, err = run(capsys, "search", "x", "-w", ws, "--embedder", "none", "--mode", mode,
                             "--after", "2026-12-01", "--before", "2026-11-01")
        assert code == 2 and out == "" and "later than" in err, mode
        code, out, err = run(capsys, "search", "x", "-w", ws, "--embedder", "none", "--mode", mode, "-k", "0")
        assert code == 2 and out == "" and "between 1 and" in err, (mode, err)


# ----- a remote reranker that fails, through the protocol -------------------------------------
class _RerankEndpoint(BaseHTTPRequestHandler):
    """A rerank endpoint whose answer depends on the path it is configured under."""

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        documents = json.loads(self.rfile.read(length) or b"{}").get("documents") or []
        if self.path.startswith("/garbage"):
            body = b"<html>upstream error</html>"
        elif self.path.startswith("/out-of-range"):
            body = json.dumps({"results": [{"index": len(documents) + 7, "relevance_score": 0.9}]}).encode()
        elif self.path.startswith("/slow"):
            time.sleep(1.5)
            body = json.dumps({"results": []}).encode()
        else:  # the last document is the most relevant, the first the least
            body = json.dumps({"results": [{"index": i, "relevance_score": (i + 1) / len(documents)}
                                           for i in range(len(documents))]}).encode()
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the slow case: the client gave up waiting, as it should

    def log_message(self, *args: Any) -> None:
        pass


@pytest.mark.anyio
@pytest.mark.parametrize("endpoint", ["closed", "garbage", "out-of-range", "slow"])
async def test_a_failing_rerank_endpoint_means_local_order_and_a_warning(populated: Path, settings: Settings,
                                                                         endpoint: str):
    with http_server(_RerankEndpoint) as port:
        base = f"http://127.0.0.1:{free_port() if endpoint == 'closed' else port}/{endpoint}"
        settings.rerank.provider, settings.rerank.base_url = "http", base
        settings.rerank.timeout, settings.rerank.retries = 0.5, 0
        srv, service = make_server(settings)
        try:
            async with connect(srv) as client:
                started = time.monotonic()
                out = await call(client, PRECISE, query=QUERY)
                assert time.monotonic() - started < 5
                assert out["reranker"] == "local"
                assert out["warnings"] and "http" in out["warnings"][0]
                assert out["results"] and out["results"][0]["path"].startswith("memory/")
                deep = await call(client, DEEP, query=QUERY)
                assert deep["results"] and deep["warnings"]
                await assert_still_serving(client)
        finally:
            close_server(service)


@pytest.mark.anyio
async def test_a_working_rerank_endpoint_orders_the_hits(populated: Path, settings: Settings):
    with http_server(_RerankEndpoint) as port:
        settings.rerank.provider, settings.rerank.base_url = "http", f"http://127.0.0.1:{port}/ok"
        srv, service = make_server(settings)
        try:
            async with connect(srv) as client:
                out = await call(client, PRECISE, query=QUERY, top_k=5)
                local = await client.call_tool("memory_search", {"query": QUERY, "max_results": 30})
        finally:
            close_server(service)
    assert out["reranker"] == "http" and out["warnings"] == []
    scores = [hit["score"] for hit in out["results"]]
    assert scores == sorted(scores, reverse=True)
    assert local.structured_content["results"]
