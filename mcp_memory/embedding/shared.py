"""Vectors shared by machines: a LanceDB table on object storage, the second tier of the embedding cache.

With ``index_path = "s3://bucket/prefix"`` (or ``gs://``, ``az://``, ``s3+ddb://``) every machine
keeps its own index (chunk table, keyword index, state, locks) in ``<workspace>/.mcp-memory``
and shares only this: a table ``vectors`` at the URI, one row per embedded text, keyed by the
embedding cache key (a SHA-256 of provider, model, dimensions and text). A chunk embedded on
one machine is found by its hash on the others, which then never embed it again.

Why no locks are needed: a key names its content, so a row is never updated, only inserted,
and two machines that insert the same key insert the same vector. Inserts are
``merge_insert("key").when_not_matched_insert_all()``, with ``key`` declared the table's
(unenforced) primary key: Lance then records the inserted keys in each commit, and a commit
that inserts a key a concurrent commit inserted first is retried against the newer version,
where the key already exists. Commits themselves are atomic on any store with conditional
puts (S3, MinIO, R2, GCS, Azure); ``s3+ddb://`` adds a DynamoDB commit table for stores
without them. Readers keep the first row of a key anyway, so a duplicate left by an older
writer costs space, never a wrong answer. The one race Lance leaves, machines creating the
table at the same moment, is repaired by the later creator (see ``_create``).

Failure is never fatal: every remote call is bounded by ``[storage] timeout_seconds``. When
the store cannot be reached (endpoint down, credentials refused, bucket missing) the reason
is logged once and reported by ``status``, lookups return nothing and new vectors wait in a
bounded queue, and the next attempt comes ``RETRY_AFTER_SECONDS`` later: meanwhile this
machine embeds on its own, as it would without sharing. Writes go through one background
thread, so a store never waits for the network to write.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
import re
import socket
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar, cast

import numpy as np
import pyarrow as pa

from mcp_memory.embedding.base import Embedder

if TYPE_CHECKING:
    from lancedb.db import DBConnection
    from lancedb.table import Table

    from mcp_memory.config import Settings

log = logging.getLogger(__name__)
T = TypeVar("T")

TABLE_NAME = "vectors"
# After a failed call the store is left alone this long: a down endpoint costs one timeout a
# minute, not one per store.
RETRY_AFTER_SECONDS = 60.0
KEYS_PER_QUERY = 500  # keys per ``key IN (...)`` filter
ROWS_PER_WRITE = 2000  # rows per merge_insert (one commit)
WRITE_ATTEMPTS = 3  # a commit made incompatible by a concurrent creation of the table is tried again
# Vectors waiting for the store; past this the oldest are dropped (every one is in the local
# cache anyway: the cost of dropping is another machine embedding that text again).
MAX_PENDING = 20_000
# Every write adds a fragment, and every lookup reads each fragment's key column: compact once
# this many pile up. Versions older than the retention are deleted then; readers on other
# machines move to the newest version before each read, so an hour is a wide margin.
COMPACT_AT_FRAGMENTS = 24
COMPACT_CHECK_EVERY = 8  # writes between two looks at the fragment count
VERSION_RETENTION = dt.timedelta(hours=1)
# Declares the key column the table's primary key: concurrent inserts of one key conflict.
PRIMARY_KEY = {"lance-schema:unenforced-primary-key": "true"}


def shared_schema() -> pa.Schema:
    """Arrow schema of the shared table; vectors of every size live side by side (the key holds the size)."""
    return pa.schema([
        pa.field("key", pa.string(), nullable=False, metadata=PRIMARY_KEY),
        pa.field("vector", pa.list_(pa.float32()), nullable=False),
        pa.field("provider", pa.string()),
        pa.field("model", pa.string()),
        pa.field("dims", pa.int32()),
        pa.field("machine", pa.string()),  # informational: who embedded it first
        pa.field("at", pa.timestamp("ms", tz="UTC")),
    ])


@dataclass(frozen=True)
class VectorSpace:
    """Which embedder made a vector: stored beside it, for people reading the table."""

    provider: str
    model: str
    dimensions: int


class SharedVectors:
    """The shared ``vectors`` table at ``uri``: lookups by key, idempotent inserts, bounded waits."""

    def __init__(self, uri: str, storage_options: Mapping[str, str], timeout: float, space: VectorSpace,
                 machine: str | None = None, clock: Callable[[], float] = time.monotonic):
        self.uri = uri.rstrip("/")
        self.timeout = timeout
        self.space = space
        self.machine = machine or socket.gethostname()
        self._options = _with_timeouts(storage_options, timeout)
        self._secrets = [v for v in storage_options.values() if len(v) >= 4]
        self._clock = clock
        self._table: Table | None = None
        self._open_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._down_until = 0.0
        self._problem: str | None = None
        self._contacted = False
        # Remote calls run here, so a caller waits at most ``timeout`` even if LanceDB does not
        # return (a dropped connection): that thread finishes later, or never, on its own.
        self._calls = ThreadPoolExecutor(max_workers=4, thread_name_prefix="mcp-memory-shared")
        self._pending: dict[str, np.ndarray] = {}
        self._writing = False
        self._closing = False
        self._writes = 0
        self._queue = threading.Condition()
        self._writer = threading.Thread(target=self._write_loop, name="mcp-memory-shared-writer", daemon=True)
        self._writer.start()
        self.fetched = 0  # vectors found in the shared table (a counter for benchmarks and tests)
        self.written = 0  # vectors sent to it

    # ----- the cache tier --------------------------------------------------------------------
    def get_many(self, keys: list[str]) -> dict[str, np.ndarray]:
        """The shared vectors of ``keys`` that exist; nothing when the store is unavailable."""
        wanted = list(dict.fromkeys(keys))
        if not wanted or not self._usable():
            return {}
        try:
            found = self._bounded(lambda: self._lookup(wanted))
        except Exception as exc:  # noqa: BLE001 - any failure of the store: embed here instead
            self._failed(exc)
            return {}
        self._succeeded()
        self.fetched += len(found)
        return found

    def put_many(self, items: Mapping[str, np.ndarray]) -> None:
        """Queue vectors for the shared table; the background writer sends them in batches."""
        if not items:
            return
        with self._queue:
            if self._closing:
                return
            for key, vector in items.items():
                if key not in self._pending and len(self._pending) >= MAX_PENDING:
                    del self._pending[next(iter(self._pending))]
                self._pending[key] = np.asarray(vector, np.float32)
            self._queue.notify_all()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every queued vector is written (or the store is down); False on timeout."""
        deadline = time.monotonic() + (self.timeout * 3 if timeout is None else timeout)
        with self._queue:
            while self._pending or self._writing:
                if not self._writing and not self._usable():
                    return False  # the store is down: the queue waits for the next attempt
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._queue.wait(min(remaining, 0.1))
        return True

    def close(self) -> None:
        """Write what is queued (bounded by the timeout), then stop the writer."""
        self.flush()
        with self._queue:
            self._closing = True
            self._pending.clear()
            self._queue.notify_all()
        self._writer.join(timeout=1.0)
        self._calls.shutdown(wait=False, cancel_futures=True)

    # ----- health ----------------------------------------------------------------------------
    def problem(self, probe: bool = False) -> str | None:
        """Why the shared table is not used right now, or None.

        ``probe``: first try to connect when nothing was tried yet, or when the last failure's
        pause is over (so ``status`` tells the truth before anything needed the store).
        """
        with self._state_lock:
            untried = not self._contacted or self._problem is not None
        if probe and untried and self._usable():
            try:
                self._bounded(self._open)
            except Exception as exc:  # noqa: BLE001 - reported, not raised
                self._failed(exc)
            else:
                self._succeeded()
        with self._state_lock:
            return self._problem

    def keys(self) -> list[str]:
        """Every key in the shared table, duplicates included (raises when the store is unavailable)."""

        def read() -> list[str]:
            table = self._fresh_table()
            # cast: key is a non-nullable string column (shared_schema), so no None
            return cast("list[str]", table.search().select(["key"]).limit(None).to_arrow().column("key").to_pylist())

        return self._bounded(read)

    # ----- remote calls (each run through ``_bounded``) --------------------------------------
    def _open(self) -> Table:
        with self._open_lock:
            if self._table is not None:
                return self._table
            import lancedb  # slow import: deferred until the shared table is really needed

            db = lancedb.connect(self.uri, storage_options=self._options)
            try:
                table = db.open_table(TABLE_NAME)
            except (FileNotFoundError, ValueError):
                table = _create(db)
            self._table = table
            return table

    def _fresh_table(self) -> Table:
        table = self._open()
        table.checkout_latest()  # see what other machines wrote since
        return table

    def _lookup(self, keys: list[str]) -> dict[str, np.ndarray]:
        table = self._fresh_table()
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(keys), KEYS_PER_QUERY):
            part = keys[start : start + KEYS_PER_QUERY]
            where = "key IN (" + ",".join(_sql_string(k) for k in part) + ")"
            rows = table.search().where(where).select(["key", "vector"]).limit(None).to_arrow()
            vectors = rows.column("vector").to_pylist()
            for key, values in zip(cast("list[str]", rows.column("key").to_pylist()), vectors, strict=True):
                if key in found or values is None or len(values) != self.space.dimensions:
                    continue  # a duplicate row, or a vector of another size: keep the first good one
                vector = np.asarray(values, np.float32)
                if np.isfinite(vector).all():
                    found[key] = vector
        return found

    def _write(self, items: dict[str, np.ndarray]) -> None:
        for attempt in range(WRITE_ATTEMPTS):
            try:
                self._insert(items)
                break
            except (OSError, RuntimeError, ValueError) as exc:
                if "ncompatible transaction" not in str(exc) or attempt == WRITE_ATTEMPTS - 1:
                    raise
                # A commit Lance cannot rebase (one based on a version that another machine's
                # creation of the table replaced): again on the newest version.
                log.info("writing to the shared table again after a conflict: %s", exc)
        self._writes += 1
        self.written += len(items)
        if self._writes % COMPACT_CHECK_EVERY == 0 and self._table is not None:
            self._compact(self._table)

    def _insert(self, items: dict[str, np.ndarray]) -> None:
        table = self._fresh_table()
        now = dt.datetime.now(dt.UTC)
        count = len(items)
        rows = pa.Table.from_pydict({
            "key": list(items),
            "vector": [v.tolist() for v in items.values()],
            "provider": [self.space.provider] * count,
            "model": [self.space.model] * count,
            "dims": [self.space.dimensions] * count,
            "machine": [self.machine] * count,
            "at": [now] * count,
        }, schema=shared_schema())
        _insert_new(table, rows, dt.timedelta(seconds=self.timeout))

    def _compact(self, table: Table) -> None:
        try:
            # lancedb 0.40 annotates stats() as a TableStatistics, but it returns a dict
            fragments = int(table.stats()["fragment_stats"]["num_fragments"])  # type: ignore[index]
            if fragments >= COMPACT_AT_FRAGMENTS:
                table.optimize(cleanup_older_than=VERSION_RETENTION)
        except Exception as exc:  # noqa: BLE001 - an optimisation (another machine may be compacting too)
            log.info("compacting the shared vectors failed: %s", exc)

    # ----- the writer ------------------------------------------------------------------------
    def _write_loop(self) -> None:
        while True:
            with self._queue:
                while not self._closing and (not self._pending or not self._usable()):
                    wait = None if not self._pending else max(0.05, self._down_until - self._clock())
                    self._queue.wait(wait)
                if self._closing:
                    return
                keys = list(self._pending)[:ROWS_PER_WRITE]
                batch = {key: self._pending.pop(key) for key in keys}
                self._writing = True
            try:
                self._bounded(functools.partial(self._write, batch))
            except Exception as exc:  # noqa: BLE001 - kept for the next attempt
                self._failed(exc)
                with self._queue:
                    for key, vector in batch.items():
                        if len(self._pending) < MAX_PENDING:
                            self._pending.setdefault(key, vector)
            else:
                self._succeeded()
            finally:
                with self._queue:
                    self._writing = False
                    self._queue.notify_all()

    # ----- bounded calls and the state they leave --------------------------------------------
    def _bounded(self, call: Callable[[], T]) -> T:
        future = self._calls.submit(call)
        try:
            return future.result(timeout=self.timeout)
        except FutureTimeout:
            raise TimeoutError(f"no answer within {self.timeout:g} s") from None

    def _usable(self) -> bool:
        with self._state_lock:
            return self._clock() >= self._down_until

    def _failed(self, exc: BaseException) -> None:
        reason = self._redact(describe_failure(exc))
        message = (f"shared vectors at {self.uri} unavailable: {reason}; embedding on this machine "
                   f"(next attempt in {RETRY_AFTER_SECONDS:g} s)")
        with self._state_lock:
            repeated = message == self._problem
            self._problem = message
            self._contacted = True
            self._down_until = self._clock() + RETRY_AFTER_SECONDS
        if not repeated:
            log.warning(message)
        # Connect afresh next time (new credentials, a bucket created since). No lock: a call that
        # hangs may hold the open lock, and this must not wait for it.
        self._table = None

    def _succeeded(self) -> None:
        with self._state_lock:
            recovered = self._problem is not None
            self._problem = None
            self._contacted = True
        if recovered:
            log.warning("shared vectors at %s reachable again", self.uri)

    def _redact(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text


def describe_failure(exc: BaseException) -> str:
    """One plain sentence for a failed object-store call (LanceDB's errors are long Rust dumps)."""
    text = str(exc)
    if isinstance(exc, TimeoutError) and text.startswith("no answer"):
        return f"the object store gave {text}"
    code = re.search(r"<Code>([^<]+)</Code>", text)
    message = re.search(r"<Message>([^<]+)</Message>", text)
    detail = f"{code.group(1)}: {message.group(1)}" if code and message else (code.group(1) if code else "")
    if code and code.group(1) == "NoSuchBucket":
        return f"the bucket does not exist ({detail})"
    if code and code.group(1) in _CREDENTIAL_CODES:
        return f"the credentials were refused ({detail})"
    if detail:
        return detail
    status = re.search(r"status: (\d{3})", text)
    if status and status.group(1) in {"401", "403"}:
        return f"the credentials were refused (HTTP {status.group(1)})"
    if status and status.group(1) == "404":
        return "the bucket or path does not exist (HTTP 404)"
    endpoint = re.search(r"uri: Some\((\w+://[^/\s)]+)", text)
    where = f" at {endpoint.group(1)}" if endpoint else ""
    if "kind: Connect" in text or "Connection refused" in text or "dns error" in text:
        return f"cannot connect to the object store{where} (refused or unreachable)"
    if "timed out" in text.lower() or "kind: Timeout" in text:
        return f"the object store{where} did not answer in time"
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return first[:300]


_CREDENTIAL_CODES = {
    "InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "ExpiredToken", "InvalidToken",
    "AuthorizationHeaderMalformed", "InvalidClientTokenId", "AuthenticationFailed", "AuthorizationFailure",
}


def _with_timeouts(options: Mapping[str, str], timeout: float) -> dict[str, str]:
    """The storage options plus request timeouts and few retries (each can be overridden by the user)."""
    millis = max(1, round(timeout * 1000))
    merged = {"timeout": f"{millis}ms", "connect_timeout": f"{min(millis, 5000)}ms",
              "client_max_retries": "1", "client_retry_timeout": str(max(1, round(timeout)))}
    merged.update({key.lower(): value for key, value in options.items()})
    return merged


def _create(db: DBConnection) -> Table:
    """Create the shared table, or open the one another machine created first.

    Machines that start at once may all find no table and create one. Lance commits each
    creation, and a creation that finds another already committed lands on top of it, as an
    overwrite: whatever was written in between would be gone. So a creation that did not land
    first puts back the rows of the version it replaced (inserts are idempotent: nothing is
    doubled), and every writer retries a commit that such an overwrite made incompatible.
    """
    try:
        table = db.create_table(TABLE_NAME, schema=shared_schema())
    except (OSError, RuntimeError, ValueError):
        return db.open_table(TABLE_NAME)  # it exists now
    created = int(table.version)
    if created > 1:
        table.checkout(created - 1)
        replaced = table.to_arrow()
        table.checkout_latest()
        if replaced.num_rows:
            _insert_new(table, replaced)
        log.info("another machine created the shared table at the same time: %d rows put back", replaced.num_rows)
    return table


def _insert_new(table: Table, rows: pa.Table, timeout: dt.timedelta | None = None) -> None:
    """Insert the rows whose key the table lacks, in one commit.

    Never through a scalar index on the key, should one be added: Lance's indexed merge path
    does not record the inserted keys, so concurrent inserts of one key both commit (three
    writers left 81 rows for 75 keys); the plain join records them, and the later commit is
    retried. (The table has no such index: a lookup scans the key column, 5 requests and 0.1 s
    for 20,000 vectors on a local S3, where a B-tree took 10 requests and no less time.)
    """
    table.merge_insert("key").when_not_matched_insert_all().use_index(False).execute(rows, timeout=timeout)


def _sql_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def shared_vectors(settings: Settings, embedder: Embedder | None) -> SharedVectors | None:
    """The shared tier the settings ask for: None for a local index or without an embedder."""
    uri = settings.shared_vectors_uri
    if not uri or embedder is None:
        return None
    space = VectorSpace(embedder.provider, embedder.model, embedder.dimensions)
    return SharedVectors(uri, settings.storage_options, settings.storage.timeout_seconds, space)
