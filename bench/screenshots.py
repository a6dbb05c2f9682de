"""Screenshots of the dashboard's main pages for the documentation (``docs/screenshots/*.png``).

Builds a small demo workspace (notes, a capture with skipped lines, recalls, experience
chains, learned utility, an episode) with the hash embedder of the tests, serves it on a
free loopback port, signs a headless Chromium (Debian's ``/usr/bin/chromium``, through
Playwright) in with the sign-in form, and saves one PNG per page.

    python bench/screenshots.py                       # into docs/screenshots/
    python bench/screenshots.py --out /tmp/shots
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # the hash embedder of the tests (conftest.py)

import uvicorn

from conftest import HashEmbedder
from mcp_memory.config import load_settings
from mcp_memory.core.transcripts import Message
from mcp_memory.dashboard.app import dashboard_app
from mcp_memory.dashboard.auth import Tokens
from mcp_memory.experience.episodes import Episode, MemoryRef
from mcp_memory.memory import Memory
from mcp_memory.runtime.service import MemoryService

TOKEN = "screenshot-token-0123456789abcdef"
PAGES = [  # (file name, path, full page)
    ("search.png", "/search?q=how+do+we+deploy+the+api&k=4", True),
    ("file.png", "/files/memory/2026-03-12.md?hl=5-5#L5", False),
    ("experience.png", "/experience", True),
    ("overview.png", "/", False),
    ("timeline.png", "/timeline", False),
]


def demo_workspace(root: Path) -> None:
    (root / "memory" / "projects").mkdir(parents=True)
    (root / "MEMORY.md").write_text(
        "# Memory\n\n"
        "- [preference] The user prefers pnpm over npm for JavaScript projects.\n"
        "- [preference] Answers should be short, with commands in code blocks.\n"
        "- [decision] All services deploy through the GitHub Actions pipeline, never by hand.\n", encoding="utf-8")
    (root / "memory" / "2026-03-12.md").write_text(
        "# 2026-03-12\n\n"
        "## Deploys\n\n"
        "- [decision] We deploy the API with blue-green releases, never on Fridays.\n"
        "- [fact] The deploy job runs `make release` and waits for the health check on /healthz.\n"
        "- [fact] A failed health check rolls the release back within two minutes.\n\n"
        "## Database\n\n"
        "- [fact] The staging database runs Postgres 16 on the db-staging host.\n"
        "- [decision] Migrations run before the new release takes traffic.\n", encoding="utf-8")
    (root / "memory" / "projects" / "api.md").write_text(
        "# API service\n\n"
        "The API is a FastAPI app behind nginx. Its deploy is described in the 2026-03-12 notes.\n\n"
        "- [fact] Rate limits: 100 requests per minute per token.\n"
        "- [fact] Logs go to Loki; dashboards live in Grafana under 'API'.\n", encoding="utf-8")


def populate(memory: Memory) -> None:
    memory.capture([Message("user", "Remember that the API deploy needs the VPN to be up first."),
                    Message("user", "Can you check the logs?"),
                    Message("assistant", "Sure.")], session_key="deploy-review")
    memory.store("The on-call rotation changes every Monday at 10:00.")
    memory.recall_hits("How do we deploy the API?", session_key="deploy-review")
    memory.recall_hits("Which Postgres version does staging run?", session_key="db-question")
    for cause, action, effect, outcome, tags in [
        ("deploy failed health check", "rolled back the release", "service restored in 2 minutes", "success",
         ["deploy"]),
        ("deploy failed health check", "restarted the pods by hand", "still failing after 10 minutes", "failure",
         ["deploy"]),
        ("slow staging queries", "added an index on orders.created_at", "p95 from 900 ms to 40 ms", "success",
         ["postgres"]),
        ("disk full on the build host", "pruned old docker images", "40 GB freed", "success", ["ci"]),
        ("flaky login test", "added a sleep before the assertion", "still flaky", "failure", ["tests"]),
        ("flaky login test", "waited for the session cookie instead", "stable for 200 runs", "partial", ["tests"]),
    ]:
        memory.experience.add(cause, action, effect, outcome, tags)
    hits = memory.search("deploy health check rollback")
    for hit in hits[:2]:
        memory.feedback.reward(hit.id)
        memory.feedback.reward(hit.id)
    for hit in memory.search("restarted pods by hand")[:1]:
        memory.feedback.penalize(hit.id, 0.4)
    start = dt.datetime(2026, 3, 12, 9, 30)
    memory.episodes.record(Episode(start=start, end=start + dt.timedelta(minutes=45), client="claude-code",
                                   session_key="deploy-review", tools={"server": {"memory_search": 4, "Bash": 7}},
                                   recalled=[MemoryRef("memory/2026-03-12.md#L5-L5")]))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    logging.getLogger("mcp_memory").setLevel(logging.WARNING)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "workspace"
        demo_workspace(root)
        settings = load_settings(root, environ={})
        memory = Memory(settings, embedder=HashEmbedder())
        memory.index()
        populate(memory)
        service = MemoryService(settings, memory_factory=lambda _: memory, start_delay=0, watch=False)
        port = _free_port()
        server = uvicorn.Server(uvicorn.Config(dashboard_app(service, Tokens([TOKEN], [], [])), host="127.0.0.1",
                                               port=port, log_level="warning"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.05)
        base = f"http://127.0.0.1:{port}"
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
                page = browser.new_page(viewport={"width": 1200, "height": 820})
                page.goto(f"{base}/")
                page.fill("input[name=token]", TOKEN)
                page.click("form[action='/signin'] button")
                page.wait_for_selector(".level")
                for name, path, full in PAGES:
                    page.goto(base + path)
                    page.wait_for_load_state("load")
                    page.screenshot(path=str(args.out / name), full_page=full)
                    print(f"saved {args.out / name}", file=sys.stderr)
                browser.close()
        finally:
            server.should_exit = True
            thread.join(10)
            service.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
