"""Vectors shared by machines through object storage, against a real S3 (moto in server mode).

Two workspaces with the same ``index_path = "s3://bucket/prefix"`` stand for two machines: each
keeps its own index, and a text embedded on one is never embedded again on the other. A store
that cannot be reached, refuses the credentials or has no such bucket costs at most the
configured timeout, is named in ``status``, and leaves a working local memory.
"""

from __future__ import annotations

import datetime as dt
import logging
import shutil
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest

from conftest import HashEmbedder, free_port, port_open, write
from mcp_memory.config import CONFIG_FILENAME, Settings, load_settings
from mcp_memory.core.chunking import chunk_markdown
from mcp_memory.core.memory_ids import statement_body
from mcp_memory.embedding import shared
from mcp_memory.embedding.cache import text_key
from mcp_memory.memory import Memory

BUCKET = "team-memory"
KEYS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing-secret", "aws_region": "us-east-1"}
TIMEOUT = 5.0  # [storage] timeout_seconds where the store fails
SHARING_TIMEOUT = 30.0  # where it works: never taken for an outage on a busy test machine
SLACK = 4.0  # local work on top of the timeout (indexing, embedding, a slow shared test machine)


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The endpoint of a moto S3 (and DynamoDB) server on a free loopback port, with a bucket.

    Its own process, like a real store: in this one it would compete for the interpreter with
    the machines under test, and a slow answer would look like an outage.
    """
    port = free_port()
    log = (tmp_path_factory.mktemp("moto") / "moto.log").open("wb")
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while not port_open(port):
            assert server.poll() is None and time.monotonic() < deadline, "moto did not start"
            time.sleep(0.1)
        endpoint = f"http://127.0.0.1:{port}"
        _client("s3", endpoint).create_bucket(Bucket=BUCKET)
        yield endpoint
    finally:
        server.terminate()
        server.wait(timeout=10)
        log.close()


def _client(service: str, endpoint: str):  # type: ignore[no-untyped-def]
    return boto3.client(service, endpoint_url=endpoint, aws_access_key_id=KEYS["aws_access_key_id"],
                        aws_secret_access_key=KEYS["aws_secret_access_key"], region_name=KEYS["aws_region"])


def machine(root: Path, index_path: str, endpoint: str, timeout: float = SHARING_TIMEOUT, **options: str) -> Settings:
    """A workspace whose mcp-memory.toml points its vectors at the object store, as a user writes it."""
    (root / "memory").mkdir(parents=True, exist_ok=True)
    storage = {"aws_endpoint": endpoint, "allow_http": "true", **KEYS, **options}
    lines = [f'index_path = "{index_path}"', "", "[storage]", f"timeout_seconds = {timeout}", "",
             "[storage_options]"] + [f'{key} = "{value}"' for key, value in storage.items()]
    write(root, CONFIG_FILENAME, "\n".join(lines) + "\n")
    return load_settings(root, environ={})


def shared_keys(memory: Memory) -> list[str]:
    assert memory.engine.shared is not None
    return memory.engine.shared.keys()


def local_keys(settings: Settings) -> set[str]:
    with sqlite3.connect(settings.index_dir / "embeddings.sqlite") as conn:
        return {key for (key,) in conn.execute("SELECT key FROM embeddings")}


def chunk_keys(settings: Settings, rel: str) -> set[str]:
    """The cache keys of the chunks of the file ``rel`` (a daily file's chunks carry its date)."""
    text = (settings.workspace / rel).read_text(encoding="utf-8")
    try:
        day: dt.date | None = dt.date.fromisoformat(Path(rel).stem)
    except ValueError:
        day = None
    c = settings.chunking
    return {text_key(HashEmbedder(), chunk.index_text) for chunk in chunk_markdown(text, rel, day, c.tokens, c.overlap)}


def embedded(embedder: HashEmbedder) -> int:
    """Texts the embedder was asked to embed (queries aside)."""
    return sum(embedder.calls)


def copy_notes(source: Path, target: Path) -> None:
    """What a git sync does between two machines: the same markdown on both."""
    for path in (source / "memory").rglob("*.md"):
        destination = target / path.relative_to(source)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, destination)


# ----- sharing -------------------------------------------------------------------------------------
def test_a_memory_embedded_on_one_machine_is_found_on_the_other_without_embedding_it_again(tmp_path, s3):
    uri = f"s3://{BUCKET}/found-elsewhere"
    laptop, desktop = machine(tmp_path / "laptop", uri, s3), machine(tmp_path / "desktop", uri, s3)
    laptop_embedder, desktop_embedder = HashEmbedder(), HashEmbedder()

    with Memory(laptop, embedder=laptop_embedder) as memory:
        memory.store("the staging database password rotates every tuesday at noon")
        assert embedded(laptop_embedder) >= 1
        assert memory.engine.shared is not None and memory.engine.shared.flush()
        assert len(shared_keys(memory)) == len(local_keys(laptop))

    copy_notes(laptop.workspace, desktop.workspace)
    write(desktop.workspace, CONFIG_FILENAME, (desktop.workspace / CONFIG_FILENAME).read_text()
          + "\n[search]\nvector_weight = 1.0\ntext_weight = 0.0\n")  # meaning only: no keyword score
    desktop = load_settings(desktop.workspace, environ={})
    with Memory(desktop, embedder=desktop_embedder) as memory:
        memory.index()
        hits = memory.search("when does the staging database password rotate")
        status = memory.status()

    assert embedded(desktop_embedder) == 0  # every vector came from the shared table
    assert status.embedded_share == 1.0
    assert hits and "rotates every tuesday" in hits[0].snippet
    assert status.shared_vectors == uri
    assert not [reason for reason in status.degraded if "shared vectors" in reason]


def test_single_memories_a_search_embeds_stay_on_this_machine(tmp_path, s3):
    """A search embeds single bullets (to name a hit whose bullets tie on the query's words): it
    neither waits on the shared store for them nor sends them there; the chunks are shared."""
    uri = f"s3://{BUCKET}/single-memories"
    laptop = machine(tmp_path / "laptop", uri, s3)
    bullets = ["- The user walks by the river after dinner.", "- The user keeps a ThinkPad for work."]
    write(laptop.workspace, "memory/2026-05-02.md", "# 2026-05-02\n\n" + "\n".join(bullets) + "\n")
    embedder = HashEmbedder()
    with Memory(laptop, embedder=embedder) as memory:
        memory.index()
        assert memory.search("what about the user")
        assert memory.engine.shared is not None and memory.engine.shared.flush()
        shared_now, local_now = set(shared_keys(memory)), local_keys(laptop)
    single = {text_key(embedder, statement_body(bullet), "line") for bullet in bullets}
    assert single <= local_now  # embedded for the tie, here
    assert not single & shared_now
    assert shared_now and shared_now <= local_now  # the chunk's vector was shared


def test_concurrent_stores_on_two_machines_leave_each_vector_once_in_the_shared_table(tmp_path, s3):
    uri = f"s3://{BUCKET}/concurrent"
    machines = [machine(tmp_path / name, uri, s3) for name in ("laptop", "desktop")]
    memories = [Memory(settings, embedder=HashEmbedder()).open() for settings in machines]
    common = [f"the deploy checklist item {word} is shared by both machines" for word in
              ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot")]
    errors: list[BaseException] = []

    def store_all(memory: Memory, name: str) -> None:
        try:
            for i, text in enumerate(common):
                memory.store(text)
                memory.store(f"{name} alone noted fact number {i} about the {name} desk")
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=store_all, args=(memory, name))
               for memory, name in zip(memories, ("laptop", "desktop"), strict=True)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    try:
        assert not errors
        for memory in memories:
            assert memory.engine.shared is not None and memory.engine.shared.flush(timeout=30)
        keys = shared_keys(memories[0])
    finally:
        for memory in memories:
            memory.close()

    assert len(keys) == len(set(keys))  # nothing twice, though both machines wrote the common lines
    chunks = {key for settings in machines for path in (settings.workspace / "memory").glob("*.md")
              for key in chunk_keys(settings, path.relative_to(settings.workspace).as_posix())}
    # No chunk lost (each version of the daily files was shared as it was written); the single
    # lines of the duplicate checks stay on each machine.
    assert chunks <= set(keys) < local_keys(machines[0]) | local_keys(machines[1])


def test_the_dynamodb_commit_store_shares_vectors_too(tmp_path, s3):
    """``s3+ddb://`` commits through a DynamoDB table: for S3-compatible stores without conditional puts."""
    _client("dynamodb", s3).create_table(
        TableName="lance-commits", BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "base_uri", "AttributeType": "S"},
                              {"AttributeName": "version", "AttributeType": "N"}],
        KeySchema=[{"AttributeName": "base_uri", "KeyType": "HASH"},
                   {"AttributeName": "version", "KeyType": "RANGE"}])
    uri = f"s3+ddb://{BUCKET}/with-dynamodb?ddbTableName=lance-commits"
    laptop = machine(tmp_path / "laptop", uri, s3, dynamodb_endpoint=s3)
    desktop = machine(tmp_path / "desktop", uri, s3, dynamodb_endpoint=s3)
    with Memory(laptop, embedder=HashEmbedder()) as memory:
        memory.store("the release train leaves on the first monday of the month")
        assert memory.engine.shared is not None and memory.engine.shared.flush()
    copy_notes(laptop.workspace, desktop.workspace)
    desktop_embedder = HashEmbedder()
    with Memory(desktop, embedder=desktop_embedder) as memory:
        memory.index()
        assert memory.status().embedded_share == 1.0
    assert embedded(desktop_embedder) == 0
    assert _client("dynamodb", s3).scan(TableName="lance-commits")["Count"] >= 2  # commits went through it


# ----- failures: a clear reason, and the local memory keeps working ---------------------------------
@pytest.fixture
def credentials_checked(s3: str) -> Iterator[None]:
    """Moto checks access keys from now on (it knows none, so every key is refused)."""
    _moto_auth(s3, "0")
    yield
    _moto_auth(s3, "inf")


def _moto_auth(endpoint: str, count: str) -> None:
    request = urllib.request.Request(endpoint + "/moto-api/reset-auth", data=count.encode(), method="POST",
                                     headers={"Content-Type": "text/plain"})
    with urllib.request.urlopen(request, timeout=10) as response:
        response.read()


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections and never answers (a hung endpoint, not a refused one)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    yield listener.getsockname()[1]
    listener.close()


def failing(tmp_path: Path, case: str, s3: str, silent_port: int | None = None) -> Settings:
    """A machine whose store fails in the way ``case`` names."""
    if case == "missing_bucket":
        return machine(tmp_path / "ws", "s3://no-such-bucket/x", s3, TIMEOUT)
    endpoint = {"unreachable": f"http://127.0.0.1:{free_port()}", "refused_credentials": s3,
                "silent": f"http://127.0.0.1:{silent_port}"}[case]
    return machine(tmp_path / "ws", f"s3://{BUCKET}/x", endpoint, TIMEOUT)


@pytest.mark.parametrize("case, expected", [
    ("unreachable", "cannot connect to the object store"),
    ("refused_credentials", "the credentials were refused (InvalidAccessKeyId"),
    ("missing_bucket", "the bucket does not exist (NoSuchBucket"),
    ("silent", "no answer within 5 s"),
])
def test_a_store_that_fails_is_named_and_the_memory_works_locally_within_the_timeout(
        tmp_path, s3, request, caplog, case, expected):
    if case == "refused_credentials":
        request.getfixturevalue("credentials_checked")
    port = request.getfixturevalue("silent_port") if case == "silent" else None
    settings = failing(tmp_path, case, s3, port)
    embedder = HashEmbedder()
    caplog.set_level(logging.WARNING, logger="mcp_memory")
    with Memory(settings, embedder=embedder) as memory:
        started = time.monotonic()
        stored = memory.store("the backup job runs nightly at two in the morning")
        hits = memory.search("when does the backup job run")
        status = memory.status()
        elapsed = time.monotonic() - started

    assert stored.stored
    assert hits and "backup job runs nightly" in hits[0].snippet
    assert status.embedded_share == 1.0  # embedded here instead
    assert embedded(embedder) >= 1
    reasons = [reason for reason in status.degraded if "shared vectors" in reason]
    assert len(reasons) == 1 and expected in reasons[0], status.degraded
    assert "embedding on this machine" in reasons[0]
    assert "testing-secret" not in reasons[0]
    assert elapsed < TIMEOUT + SLACK, elapsed  # one timeout at most: later calls wait for the next attempt
    warnings = [r for r in caplog.records if "shared vectors" in r.getMessage()]
    assert warnings and expected in warnings[0].getMessage()
    assert not any(r.exc_info for r in caplog.records)  # a sentence in the log, never a traceback


def test_status_names_a_store_that_fails_before_anything_was_embedded(tmp_path, s3):
    settings = failing(tmp_path, "missing_bucket", s3)
    with Memory(settings, embedder=HashEmbedder()) as memory:
        started = time.monotonic()
        status = memory.status()
        assert time.monotonic() - started < TIMEOUT + SLACK
        shared_client_view = memory.status(include_private=False).to_dict()
    assert any("the bucket does not exist" in reason for reason in status.degraded)
    # A shared client learns that sharing is down, not where the bucket or the endpoint is.
    assert "shared vectors unavailable: embedding on this machine" in shared_client_view["degraded"]
    assert "no-such-bucket" not in str(shared_client_view) and "127.0.0.1" not in str(shared_client_view)


def test_sharing_resumes_once_the_store_is_fixed(tmp_path, s3, monkeypatch):
    monkeypatch.setattr(shared, "RETRY_AFTER_SECONDS", 0.5)  # rather than a minute
    settings = machine(tmp_path / "ws", "s3://late-bucket/x", s3, TIMEOUT)
    with Memory(settings, embedder=HashEmbedder()) as memory:
        memory.store("the office wifi password changes every quarter")
        assert any("the bucket does not exist" in reason for reason in memory.status().degraded)
        _client("s3", s3).create_bucket(Bucket="late-bucket")
        time.sleep(0.6)
        assert not [reason for reason in memory.status().degraded if "shared vectors" in reason]
        memory.store("the printer on the third floor needs a badge")
        assert memory.engine.shared is not None and memory.engine.shared.flush()
        keys = set(shared_keys(memory))
    assert keys == local_keys(settings)  # what was queued while the bucket was missing went too


def test_private_files_and_single_lines_stay_on_this_machine(tmp_path, s3):
    """A vector and its key (a hash of the text) say something of the text: the chunks of a private
    file (``MEMORY.md``, and what is stored there) and the single lines a duplicate check embeds
    never reach the shared store; the shared notes' chunks do, and another machine finds them."""
    uri = f"s3://{BUCKET}/private-stays"
    laptop, desktop = machine(tmp_path / "laptop", uri, s3), machine(tmp_path / "desktop", uri, s3)
    write(laptop.workspace, "MEMORY.md", "# Notes\n\n- The user's therapist is Dr. Amsel, on Thursdays.\n")
    write(laptop.workspace, "memory/notes/garden.md", "# Garden\n\n- The apple tree by the barn still fruits.\n")
    embedder = HashEmbedder()
    with Memory(laptop, embedder=embedder) as memory:
        memory.index()
        memory.store("The user's bank hint is the dog's first birthday.", evergreen=True)
        memory.store("The pear tree by the gate was planted in the spring of 2019.")
        memory.index()
        assert memory.engine.shared is not None and memory.engine.shared.flush()
        shared_now, local_now = set(shared_keys(memory)), local_keys(laptop)

    daily = next(p.relative_to(laptop.workspace).as_posix() for p in (laptop.workspace / "memory").glob("*.md"))
    private = chunk_keys(laptop, "MEMORY.md")
    public = chunk_keys(laptop, "memory/notes/garden.md") | chunk_keys(laptop, daily)
    assert private <= local_now and not private & shared_now
    assert shared_now == public  # nothing else: no single line of the duplicate checks either
    assert local_now - private - public  # those lines were embedded, here

    shutil.copyfile(laptop.workspace / "MEMORY.md", desktop.workspace / "MEMORY.md")
    copy_notes(laptop.workspace, desktop.workspace)
    desktop_embedder = HashEmbedder()
    with Memory(desktop, embedder=desktop_embedder) as memory:
        memory.index()
        hits = memory.search("apple tree barn")
    assert embedded(desktop_embedder) == len(private)  # the private file embedded again, here only
    assert hits and "apple tree" in hits[0].snippet
