"""Opposite actions, in English, Chinese and across the two."""

from __future__ import annotations

import pytest

from mcp_memory.core.opposites import opposed


@pytest.mark.parametrize(("a", "b"), [
    ("added proxy_pass", "removed proxy_pass"),
    ("added proxy_pass", "删除了 proxy_pass"),
    ("启用了 gzip", "turned off gzip"),
    ("restarted nginx", "stopped nginx"),
    ("pinned numpy to 1.26", "unpinned numpy"),
    ("升级了 Node 到 22", "downgraded Node to 20"),
    ("allowed port 22 from the office", "blocked port 22"),
    ("turned the beta flag on for checkout", "turned the beta flag off for checkout"),  # a verb split by its object
    ("switched the staging cache off", "enabled the staging cache"),
])
def test_reversals_are_opposed(a: str, b: str) -> None:
    assert opposed(a, b) and opposed(b, a)


@pytest.mark.parametrize(("a", "b"), [
    ("added proxy_pass", "在 upstream 里添加了 proxy_pass"),
    ("restarted nginx", "重启了 nginx"),
    ("increased the heap to 4g", "raised the JVM heap size"),
    ("cut every paragraph that did not support the thesis", "删掉所有不支撑论点的段落"),
    ("added and removed the flag until it worked", "removed the flag"),  # both directions: no clear reversal
    ("rewrote the query", "rewrote the query"),
])
def test_paraphrases_and_mixed_statements_are_not(a: str, b: str) -> None:
    assert not opposed(a, b)
