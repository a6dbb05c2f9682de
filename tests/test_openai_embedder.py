"""OpenAIEmbedder against a real local HTTP server that speaks the OpenAI embeddings protocol."""

from __future__ import annotations

import hashlib
import json
import random
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import numpy as np
import pytest

from conftest import http_server
from mcp_memory.config import EmbeddingSettings
from mcp_memory.embedding.base import EmbeddingError
from mcp_memory.embedding.openai_compat import OpenAIEmbedder

API_KEY = "sk-test-secret"


def fake_vector(text: str, dims: int) -> list[float]:
    """Deterministic, deliberately unnormalised vector for a text."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")
    return (np.random.default_rng(seed).standard_normal(dims) * 3.0).tolist()


@dataclass
class FakeOpenAI:
    port: int = 0
    requests: list[dict[str, Any]] = field(default_factory=list)
    shuffle: bool = False
    ignore_dimensions: bool = False
    failures: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def fail_next(self, count: int, status: int, headers: dict[str, str] | None = None) -> None:
        self.failures.extend([(status, headers or {})] * count)

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [r["body"] for r in self.requests]


def _make_handler(state: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # keep pytest output clean
            pass

        def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
            raw = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(raw)

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            with state.lock:
                state.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                failure = state.failures.pop(0) if state.failures else None
            if self.path != "/v1/embeddings":
                self._send(404, {"error": {"message": "not found", "type": "invalid_request_error"}})
                return
            if failure is not None:
                status, headers = failure
                # Real servers do echo the key in 401s; the embedder must not pass it on.
                message = f"Incorrect API key provided: {API_KEY}" if status == 401 else f"status {status}"
                self._send(status, {"error": {"message": message, "type": "test_error"}}, headers)
                return
            inputs = body["input"]
            if any(not text for text in inputs):
                self._send(400, {"error": {"message": "'$.input' is invalid", "type": "invalid_request_error"}})
                return
            dims = 8 if state.ignore_dimensions else int(body.get("dimensions") or 8)
            data = [
                {"object": "embedding", "index": i, "embedding": fake_vector(text, dims)}
                for i, text in enumerate(inputs)
            ]
            if state.shuffle:
                random.Random(len(state.requests)).shuffle(data)
            self._send(
                200,
                {
                    "object": "list",
                    "data": data,
                    "model": body["model"],
                    "usage": {"prompt_tokens": 1, "total_tokens": 1},
                },
            )

    return Handler


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    state = FakeOpenAI()
    with http_server(_make_handler(state)) as port:
        state.port = port
        yield state


class SleepRecorder:
    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


def make_embedder(base_url: str, **overrides: Any) -> tuple[OpenAIEmbedder, SleepRecorder]:
    options: dict[str, Any] = {"max_retries": 3, "timeout": 5.0}
    options.update(overrides)
    settings = EmbeddingSettings(
        provider="openai", model="test-embed", base_url=base_url, api_key=API_KEY, **options
    )
    embedder = OpenAIEmbedder(settings)
    sleeper = SleepRecorder()
    embedder._sleep = sleeper
    return embedder, sleeper


def test_vectors_are_normalised_deterministic_and_shaped(server: FakeOpenAI) -> None:
    embedder, _ = make_embedder(server.base_url)
    assert (embedder.provider, embedder.model) == ("openai", "test-embed")

    docs = embedder.embed_documents(["alpha", "beta", "alpha"])
    assert docs.shape == (3, 8)
    assert docs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(docs, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(docs[0], docs[2])
    assert not np.allclose(docs[0], docs[1])

    query = embedder.embed_query("alpha")
    assert query.shape == (8,)
    np.testing.assert_allclose(query, docs[0], rtol=1e-6)
    expected = np.asarray(fake_vector("alpha", 8))
    np.testing.assert_allclose(query, expected / np.linalg.norm(expected), rtol=1e-5)
    assert server.bodies[0]["model"] == "test-embed"
    assert server.bodies[0]["encoding_format"] == "float"


def test_order_preserved_when_server_shuffles(server: FakeOpenAI) -> None:
    server.shuffle = True
    texts = [f"text number {i}" for i in range(20)]
    embedder, _ = make_embedder(server.base_url)
    vectors = embedder.embed_documents(texts)
    for text, vector in zip(texts, vectors, strict=True):
        expected = np.asarray(fake_vector(text, 8))
        np.testing.assert_allclose(vector, expected / np.linalg.norm(expected), rtol=1e-5)


def test_batches_of_batch_size(server: FakeOpenAI) -> None:
    embedder, _ = make_embedder(server.base_url, batch_size=32)
    vectors = embedder.embed_documents([f"note {i}" for i in range(70)])
    assert vectors.shape == (70, 8)
    assert [len(body["input"]) for body in server.bodies] == [32, 32, 6]
    assert server.bodies[2]["input"][-1] == "note 69"


def test_dimensions_setting_is_forwarded(server: FakeOpenAI) -> None:
    embedder, _ = make_embedder(server.base_url, dimensions=16)
    assert embedder.dimensions == 16
    assert embedder.embed_documents([]).shape == (0, 16)
    assert server.requests == []  # known from the settings: no call needed
    assert embedder.embed_query("hello").shape == (16,)
    assert server.bodies[0]["dimensions"] == 16


def test_dimensions_learned_without_setting(server: FakeOpenAI) -> None:
    embedder, _ = make_embedder(server.base_url)
    assert embedder.embed_documents([]).shape == (0, 0)
    assert server.requests == []
    embedder.embed_documents(["first"])
    assert "dimensions" not in server.bodies[0]
    assert embedder.dimensions == 8
    assert embedder.embed_documents([]).shape == (0, 8)
    assert len(server.requests) == 1


def test_dimensions_probe_happens_once(server: FakeOpenAI) -> None:
    embedder, _ = make_embedder(server.base_url)
    assert embedder.dimensions == 8
    assert embedder.dimensions == 8
    assert [body["input"] for body in server.bodies] == [["dimension probe"]]


def test_wrong_dimensions_from_server_is_an_error(server: FakeOpenAI) -> None:
    server.ignore_dimensions = True
    embedder, _ = make_embedder(server.base_url, dimensions=16)
    with pytest.raises(EmbeddingError, match="expected 16"):
        embedder.embed_documents(["hello"])


def test_retries_server_errors_with_growing_backoff(server: FakeOpenAI) -> None:
    server.fail_next(2, 500)
    embedder, sleeper = make_embedder(server.base_url, max_retries=3)
    vectors = embedder.embed_documents(["hello"])
    assert vectors.shape == (1, 8)
    assert len(server.requests) == 3
    assert len(sleeper.calls) == 2
    assert 0 < sleeper.calls[0] < sleeper.calls[1] <= 8.0


def test_rate_limit_honours_retry_after(server: FakeOpenAI) -> None:
    server.fail_next(1, 429, {"Retry-After": "2"})
    embedder, sleeper = make_embedder(server.base_url)
    assert embedder.embed_query("hello").shape == (8,)
    assert sleeper.calls == [2.0]
    assert len(server.requests) == 2


def test_retry_after_is_capped(server: FakeOpenAI) -> None:
    server.fail_next(1, 429, {"Retry-After": "600"})
    embedder, sleeper = make_embedder(server.base_url)
    embedder.embed_query("hello")
    assert sleeper.calls == [30.0]


def test_retries_exhausted_raise(server: FakeOpenAI) -> None:
    server.fail_next(10, 503)
    embedder, sleeper = make_embedder(server.base_url, max_retries=2)
    with pytest.raises(EmbeddingError) as info:
        embedder.embed_documents(["hello"])
    assert len(server.requests) == 3
    assert len(sleeper.calls) == 2
    assert "503" in str(info.value)
    assert server.base_url in str(info.value)


def test_unauthorised_fails_at_once_without_leaking_key(server: FakeOpenAI) -> None:
    server.fail_next(1, 401)
    embedder, sleeper = make_embedder(server.base_url)
    with pytest.raises(EmbeddingError) as info:
        embedder.embed_documents(["hello"])
    message = str(info.value)
    assert len(server.requests) == 1
    assert sleeper.calls == []
    assert "401" in message
    assert server.base_url in message and "test-embed" in message
    assert API_KEY not in message


def test_unreachable_endpoint_raises() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # Nothing listens on the port once the socket is closed.
    embedder, sleeper = make_embedder(f"http://127.0.0.1:{port}/v1", max_retries=1, timeout=2.0)
    with pytest.raises(EmbeddingError, match=r"127\.0\.0\.1"):
        embedder.embed_query("hello")
    assert len(sleeper.calls) == 1


def test_empty_and_blank_strings_are_embedded(server: FakeOpenAI) -> None:
    embedder, _ = make_embedder(server.base_url)
    vectors = embedder.embed_documents(["", "   ", "real text"])
    assert vectors.shape == (3, 8)
    assert all(text.strip() or text == " " for text in server.bodies[0]["input"])
    assert embedder.embed_query("").shape == (8,)


def test_api_key_sent_as_bearer(server: FakeOpenAI) -> None:
    embedder, _ = make_embedder(server.base_url)
    embedder.embed_query("hello")
    headers = {key.lower(): value for key, value in server.requests[0]["headers"].items()}
    assert headers["authorization"] == f"Bearer {API_KEY}"


def test_missing_api_key_uses_placeholder(server: FakeOpenAI) -> None:
    settings = EmbeddingSettings(provider="openai", model="test-embed", base_url=server.base_url, api_key="")
    OpenAIEmbedder(settings).embed_query("hello")
    headers = {key.lower(): value for key, value in server.requests[0]["headers"].items()}
    assert headers["authorization"] == "Bearer not-needed"
