"""Fuzz target: building and running keyword queries never fails on any user text.

    python fuzz/fuzz_query.py -runs=100000
    python fuzz/fuzz_query.py -max_total_time=600

Each input is used as a query (and as a path prefix) against a small real Tantivy index built
once at start-up: tokenising, analysing, term queries, the prefix regex and the date range must
never raise, and every hit must be a document of the index.
"""

from __future__ import annotations

import datetime as dt
import sys
import tempfile
from pathlib import Path

import atheris

with atheris.instrument_imports():
    from mcp_memory.core.analysis import keyword_tokens
    from mcp_memory.index.keywords import KeywordIndex

_NOTES = [
    ("a", "MEMORY.md", "The user prefers pnpm over npm and yarn.", None),
    ("b", "memory/2026-11-20.md", "部署在阿里云杭州区域，使用 Kubernetes 集群。", dt.date(2026, 11, 20)),
    ("c", "memory/projects/db.md",
     "We chose PostgreSQL 16 (AND/OR NOT) \"quoted\" field:value [range] {x} ~2 ^3", None),
]
_INDEX: KeywordIndex | None = None


def _index() -> KeywordIndex:
    global _INDEX
    if _INDEX is None:
        _INDEX = KeywordIndex(Path(tempfile.mkdtemp(prefix="fuzz-query-")) / "tantivy")
        with _INDEX.writer() as writer:
            writer.add_many(_NOTES)
    return _INDEX


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    use_prefix = fdp.ConsumeBool()
    use_dates = fdp.ConsumeBool()
    prefix = fdp.ConsumeUnicode(fdp.ConsumeIntInRange(0, 24)) if use_prefix else None
    query = fdp.ConsumeUnicode(fdp.remaining_bytes())
    keyword_tokens(query)
    index = _index()
    after = dt.date(2026, 1, 1) if use_dates else None
    result = index.search(query, 10, prefix, after, None)
    ids = {note[0] for note in _NOTES}
    for hit in result.hits:
        if hit.id not in ids:
            raise AssertionError(f"hit {hit.id!r} is not a document of the index")


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
