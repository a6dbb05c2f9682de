"""What every end-to-end test starts from and looks for: seeded memories, citations, recall blocks."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

SEEDED = """# 2026-11-20

- [fact] The staging database runs PostgreSQL 16 on port 6543 (2026-11-20)
- [preference] The user deploys every service with Kubernetes on Hetzner (2026-11-20)
"""
CITATION = re.compile(r"memory/2026-11-20\.md#L\d+-L\d+")
RECALLED = "Relevant memories from earlier sessions"  # the first line inside a <relevant-memories> block
RULE = "Answer in British English and cite the memory file you used."


def seed(workspace: Path) -> None:
    (workspace / "memory").mkdir(parents=True, exist_ok=True)
    (workspace / "memory" / "2026-11-20.md").write_text(SEEDED, encoding="utf-8")


def pin_rule(workspace: Path) -> None:
    """MEMORY.md pins ``RULE``, with pinning turned on in the workspace's settings."""
    (workspace / "MEMORY.md").write_text(f"# Memory\n\n```yaml\nrules:\n  - rule: {RULE}\n```\n", encoding="utf-8")
    (workspace / "mcp-memory.toml").write_text("[rules]\npinning = true\n", encoding="utf-8")


def daily_file(workspace: Path) -> Path:
    """Today's daily file, where stores and captures go."""
    return workspace / "memory" / f"{dt.date.today().isoformat()}.md"


def lines_with(path: Path, text: str) -> list[str]:
    if not path.exists():
        return []
    return [line for line in path.read_text(encoding="utf-8").splitlines() if text in line]
