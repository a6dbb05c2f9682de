"""A cross-encoder behind ``POST /rerank``: Cohere, Jina, Text Embeddings Inference, Infinity, vLLM, llama.cpp.

These servers agree on the idea (a query, a list of documents, one relevance score per
document) but not on the details. The request names the documents ``documents`` everywhere
except in Text Embeddings Inference, which wants ``texts``; the answer is
``{"results": [{"index", "relevance_score"}]}`` (Cohere, Jina, vLLM, llama.cpp), the same with
``score`` (Infinity and others), ``{"data": [...]}``, or a bare list ``[{"index", "score"}]``
(TEI). This module speaks all of them, checks every answer strictly, and turns every failure
into ``RerankError`` so that precision search falls back to the local reranker instead of
ordering hits by a broken answer.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx2

from mcp_memory.core.retries import retry_after_seconds
from mcp_memory.search.rerank.base import RerankCandidate, RerankError

MAX_DOCUMENT_CHARS = 4000  # cross-encoders read ~512 tokens; more only costs upload and server time
_BASE_DELAY = 0.25  # first retry pause; doubles per attempt
_MAX_DELAY = 2.0  # a search is interactive: never pause longer between attempts
_MAX_RETRY_AFTER = 5.0  # a server asking for a longer pause gets none: the local reranker answers now
_RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})
_FIELD_REJECTED = frozenset({400, 422})  # how servers refuse a body with a field they do not know


class HttpReranker:
    """Scores from a cross-encoder endpoint; raises ``RerankError`` whenever it cannot trust the answer."""

    name = "http"

    def __init__(self, base_url: str, model: str, api_key: str, timeout: float, retries: int):
        self.url = rerank_url(base_url)
        self.model = model
        self._api_key = api_key or os.environ.get("RERANK_API_KEY", "")
        self._timeout = float(timeout)
        self._retries = max(0, int(retries))
        # True once the server has accepted ``texts`` (TEI) where the others take ``documents``.
        self._texts_field = False
        self._client: httpx2.Client | None = None
        self._lock = threading.Lock()
        self._sleep: Callable[[float], None] = time.sleep  # tests replace it so retries do not wait

    def rerank(self, query: str, candidates: Sequence[RerankCandidate]) -> list[float]:
        if not candidates:
            return []
        if not self.url:
            raise RerankError("rerank.base_url is not set")
        # Some servers refuse empty documents; a space scores as "unrelated" everywhere.
        documents = [c.text[:MAX_DOCUMENT_CHARS] if c.text.strip() else " " for c in candidates]
        if not self._texts_field:
            response = self._post(self._body(query, documents, texts=False))
            if response.status_code not in _FIELD_REJECTED:
                return self._scores(response, len(documents))
            # The body was refused: perhaps a TEI server, which names the documents ``texts``.
            retried = self._post(self._body(query, documents, texts=True))
            if not 200 <= retried.status_code < 300:
                raise RerankError(self._status_message(response))  # the first refusal explains more
            scores = self._scores(retried, len(documents))
            self._texts_field = True
            return scores
        return self._scores(self._post(self._body(query, documents, texts=True)), len(documents))

    def close(self) -> None:
        """Release the connection pool (the reranker keeps working: the next call opens a new one)."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    # ----- the request -----------------------------------------------------------------------
    def _body(self, query: str, documents: list[str], texts: bool) -> dict[str, Any]:
        if texts:
            # TEI's own request: no model (one model per server); truncate instead of a 413
            # when a document is longer than the model reads.
            return {"query": query, "texts": documents, "truncate": True}
        body: dict[str, Any] = {"query": query, "documents": documents, "top_n": len(documents)}
        if self.model:
            body["model"] = self.model
        return body

    def _http(self) -> httpx2.Client:
        with self._lock:
            if self._client is None:
                headers = {"Accept": "application/json"}
                if self._api_key:
                    headers["Authorization"] = f"Bearer {self._api_key}"
                # No redirects: a redirect to another host would be somewhere the key was not meant for.
                self._client = httpx2.Client(headers=headers, timeout=self._timeout, follow_redirects=False)
            return self._client

    def _post(self, body: dict[str, Any]) -> httpx2.Response:
        """The server's response (any status but a retryable one); retries 429, 5xx and refused connections."""
        try:
            client = self._http()
        except (ValueError, TypeError) as exc:  # e.g. a key with characters a header cannot carry
            raise RerankError(f"rerank endpoint {self._where}: cannot build a request ({type(exc).__name__})") from None
        attempt = 0
        while True:
            try:
                response = client.post(self.url, json=body)
            except httpx2.TimeoutException as exc:
                if isinstance(exc, httpx2.ConnectTimeout) and attempt < self._retries:
                    self._sleep(self._delay(attempt, None))
                    attempt += 1
                    continue
                # A slow answer is not retried: the search has already waited the whole timeout.
                raise RerankError(f"rerank endpoint {self._where} timed out after {self._timeout:g} s") from None
            except httpx2.UnsupportedProtocol:
                raise RerankError(f"rerank endpoint {self._where}: base_url needs http:// or https://") from None
            except httpx2.TransportError as exc:
                if attempt < self._retries:
                    self._sleep(self._delay(attempt, None))
                    attempt += 1
                    continue
                raise RerankError(
                    f"rerank endpoint {self._where} unreachable after {attempt + 1} attempts "
                    f"({type(exc).__name__}: {self._redact(str(exc))})"
                ) from None
            except (httpx2.HTTPError, httpx2.InvalidURL, ValueError) as exc:
                # InvalidURL and ValueError: a base_url or key that cannot make a request at all.
                raise RerankError(f"rerank endpoint {self._where} failed: {self._redact(str(exc))}") from None
            if response.status_code not in _RETRYABLE_STATUS:
                return response
            retry_after = retry_after_seconds(response.headers)
            if attempt >= self._retries or (retry_after is not None and retry_after > _MAX_RETRY_AFTER):
                raise RerankError(self._status_message(response, attempt + 1))
            self._sleep(self._delay(attempt, retry_after))
            attempt += 1

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return retry_after
        return float(min(_MAX_DELAY, _BASE_DELAY * 2**attempt))

    # ----- the answer ------------------------------------------------------------------------
    def _scores(self, response: httpx2.Response, count: int) -> list[float]:
        if not 200 <= response.status_code < 300:
            raise RerankError(self._status_message(response))
        try:
            # parse_constant: NaN and Infinity are not JSON, though Python's parser reads them.
            data = json.loads(response.content, parse_constant=_reject_constant)
        except (ValueError, UnicodeDecodeError) as exc:
            raise RerankError(f"rerank endpoint {self._where} answered with something that is not JSON: "
                              f"{self._redact(_snippet(response.text))!r}") from exc
        try:
            return parse_rerank_answer(data, count)
        except RerankError as exc:
            raise RerankError(f"rerank endpoint {self._where}: {exc}") from None

    def _status_message(self, response: httpx2.Response, attempts: int = 1) -> str:
        after = f" after {attempts} attempts" if attempts > 1 else ""
        detail = _server_message(response)
        detail = f": {self._redact(detail)}" if detail else ""
        return f"rerank endpoint {self._where} answered HTTP {response.status_code}{after}{detail}"

    def _redact(self, text: str) -> str:
        # Some servers echo the key they refused; the message ends up in search results.
        return text.replace(self._api_key, "***") if self._api_key else text

    @property
    def _where(self) -> str:
        model = f" (model {self.model!r})" if self.model else ""
        return f"{_display_url(self.url)}{model}"


def rerank_url(base_url: str) -> str:
    """The endpoint to post to: ``base_url`` itself when it names ``/rerank``, else ``{base_url}/rerank``.

    ``http://host:8080`` and ``http://host:8080/v1`` become ``.../rerank`` and ``.../v1/rerank``.
    """
    base = base_url.strip().rstrip("/")
    if not base:
        return ""
    return base if base.endswith("/rerank") else f"{base}/rerank"


def parse_rerank_answer(data: Any, count: int) -> list[float]:
    """One score per document from a decoded rerank answer, in the documents' order.

    Documents the answer leaves out (a server that caps ``top_n``) score below every
    document it names, in their original order. Raises ``RerankError`` for an answer that
    is not one of the known shapes or names a document that does not exist, twice, or
    with a score that is not a finite number.
    """
    items = _result_items(data)
    if not items:
        raise RerankError("the answer holds no results")
    scores: dict[int, float] = {}
    for item in items:
        if not isinstance(item, dict):
            raise RerankError(f"a result is not an object: {_snippet(repr(item))}")
        index = item.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            raise RerankError(f"a result has no integer index: {_snippet(repr(item))}")
        if not 0 <= index < count:
            raise RerankError(f"a result names document {index}, but {count} were sent")
        if index in scores:
            raise RerankError(f"document {index} is scored twice")
        scores[index] = _score(item)
    return _complete(scores, count)


def _result_items(data: Any) -> list[Any]:
    if isinstance(data, list):
        return data  # TEI: a bare list
    if isinstance(data, dict):
        for key in ("results", "data"):
            items = data.get(key)
            if isinstance(items, list):
                return items
    raise RerankError(f"unexpected answer {_snippet(json.dumps(data))}")


def _score(item: dict[str, Any]) -> float:
    value = item.get("relevance_score", item.get("score"))
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise RerankError(f"a result has no numeric score: {_snippet(repr(item))}")
    score = float(value)
    if not math.isfinite(score):
        raise RerankError(f"document {item.get('index')} has score {score}")
    return score


def _complete(scores: dict[int, float], count: int) -> list[float]:
    """Every document's score in 0..1, in order; the ones the answer left out below all the others."""
    values = list(scores.values())
    if min(values) < 0.0 or max(values) > 1.0:
        # Raw logits (llama.cpp, TEI with raw_scores): the logistic function keeps their order
        # and makes them probabilities like everybody else's, which precision search expects.
        scores = {index: _logistic(value) for index, value in scores.items()}
    missing = [index for index in range(count) if index not in scores]
    if missing:
        floor = min(scores.values())
        for rank, index in enumerate(missing):
            # Strictly below the lowest named score, decreasing in the original order, and still
            # non-negative when possible so that clipping to 0..1 keeps the order.
            scores[index] = floor * 0.5 * (len(missing) - rank) / len(missing) if floor > 0 else floor - (rank + 1)
    return [scores[index] for index in range(count)]


def _logistic(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)  # no overflow for very negative logits
    return z / (1.0 + z)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _server_message(response: httpx2.Response) -> str:
    """The server's own explanation of an error status, kept short."""
    try:
        data = json.loads(response.content)
    except (ValueError, UnicodeDecodeError):
        return ""
    if isinstance(data, dict):
        for key in ("error", "message", "detail"):
            value = data.get(key)
            if isinstance(value, dict):
                value = value.get("message")
            if isinstance(value, str | list) and value:
                return _snippet(value if isinstance(value, str) else json.dumps(value))
    return ""


def _snippet(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _display_url(url: str) -> str:
    """``url`` without user info, query or fragment: safe to show in a warning."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if parts.port is not None:
            host = f"{host}:{parts.port}"
    except ValueError:
        return "<invalid url>"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))
