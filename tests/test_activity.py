"""The activity database behind the write and recall logs: append-only, pruned, never failing its caller."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

from mcp_memory.core.hits import SearchHit
from mcp_memory.writes.activity import RETENTION_DAYS, ActivityTable, json_list, safe_text
from mcp_memory.writes.recall_log import RecallLog


def test_rows_come_back_newest_first_and_old_ones_are_pruned_on_open(tmp_path: Path) -> None:
    path = tmp_path / "activity.sqlite"
    table = ActivityTable(path, "events", ["name TEXT"])
    old = time.time() - (RETENTION_DAYS + 1) * 86400
    table.append((old, "too old"), "an event")
    table.append((time.time() - 5, "first"), "an event")
    table.append((time.time(), "second"), "an event")
    assert [row[1] for row in table.newest(10, "events")] == ["second", "first", "too old"]
    table.close()
    reopened = ActivityTable(path, "events", ["name TEXT"])
    assert [row[1] for row in reopened.newest(10, "events")] == ["second", "first"]
    assert [row[1] for row in reopened.newest(1, "events")] == ["second"]
    reopened.close()


def test_a_log_that_cannot_be_written_or_read_never_raises(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    folder = tmp_path / "activity.sqlite"
    folder.mkdir()  # a folder where the database should be: SQLite cannot open it
    table = ActivityTable(folder, "events", ["name TEXT"])
    with caplog.at_level(logging.WARNING):
        table.append((time.time(), "x"), "an event")
        assert table.newest(5, "the events") == []
    assert "could not log an event" in caplog.text and "could not read the events" in caplog.text


def test_recall_log_keeps_lone_surrogates_and_redacts_secrets(tmp_path: Path) -> None:
    log = RecallLog(tmp_path / "activity.sqlite")
    hit = SearchHit(path="memory/a\udcff.md", start_line=1, end_line=2, score=0.5, snippet="- uses pnpm",
                    source="memory", date=None)
    log.record("deploy with key sk-proj-abcdefghijklmnopqrstuvwxyz012345 \ud800", "s1", [hit], by_owner=True)
    (event,) = log.recent()
    assert "sk-proj-abcdefghijklmnopqrstuvwxyz012345" not in event.prompt
    assert event.items[0].citation == "memory/a?.md#L1-L2"
    log.close()


def test_stored_json_that_is_not_a_list_of_objects_reads_as_empty() -> None:
    assert json_list("not json") == [] and json_list('{"a": 1}') == [] and json_list('[1, {"a": 1}]') == [{"a": 1}]
    assert safe_text(None) == "" and safe_text("a\ud800b") == "a?b"
