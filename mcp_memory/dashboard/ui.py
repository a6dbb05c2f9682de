"""``mcp-memory ui``: the dashboard on a loopback address of its own, signed in without a token in sight.

A server of its own (with ``/mcp`` too, behind a fresh full token that is never printed)
listens on a random loopback address, 127.x.y.z (Linux routes all of 127.0.0.0/8 to the
loopback interface), so its sign-in cookie belongs to a host no other web server uses:
browsers share cookies across the ports of a host, never across hosts. Where such an
address cannot be bound (macOS configures 127.0.0.1 only), it falls back to 127.0.0.1.

The browser is given a local sign-in page, not a URL with a token (a URL on a command line
is readable by every local user with ``ps``): an HTML file readable by this user alone
(0600, in a 0700 directory), holding a form that posts a one-time code (valid once, for
two minutes) to ``/signin`` and submits itself. The file is removed once the code is used,
and at exit.
"""

from __future__ import annotations

import html
import os
import secrets
import shutil
import signal
import socket
import sys
import tempfile
import webbrowser
from dataclasses import dataclass
from pathlib import Path

from mcp_memory.config import Settings

FALLBACK_HOST = "127.0.0.1"
ADDRESS_TRIES = 8


@dataclass(frozen=True)
class Listener:
    sock: socket.socket
    host: str
    port: int

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"


def listen(port: int = 0) -> Listener:
    """A socket bound to a random 127.x.y.z, else to 127.0.0.1; ``port`` 0 picks a free one."""
    problem: OSError | None = None
    for candidate in [*(_random_loopback() for _ in range(ADDRESS_TRIES)), FALLBACK_HOST]:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((candidate, port))
        except OSError as exc:
            sock.close()
            problem = exc
            continue
        return Listener(sock, candidate, sock.getsockname()[1])
    detail = (problem.strerror or str(problem)) if problem else "no address"
    raise OSError(f"cannot listen on {FALLBACK_HOST}:{port}: {detail}")


def _random_loopback() -> str:
    """127.x.y.z with x, y, z in 1..254: neither 127.0.0.1 itself nor a network or broadcast address."""
    return "127." + ".".join(str(1 + secrets.randbelow(254)) for _ in range(3))


def sign_in_page_path() -> Path:
    """Where the sign-in page goes: a new folder only this user may enter (mode 0700)."""
    return Path(tempfile.mkdtemp(prefix="mcp-memory-ui-")) / "signin.html"


def write_sign_in_page(page: Path, action: str, code: str) -> None:
    """A self-submitting page posting ``code`` to ``action``, created readable by this user alone (0600)."""
    fd = os.open(page, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(_SIGN_IN_PAGE.format(action=html.escape(action), code=html.escape(code)))


def remove_sign_in_page(page: Path) -> None:
    """Remove the sign-in page and its folder (once its code is used, and at exit)."""
    shutil.rmtree(page.parent, ignore_errors=True)


def _exit_on_signal(signum: int, frame: object) -> None:
    raise SystemExit(0)


_SIGN_IN_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="referrer" content="no-referrer">
<title>Signing in · mcp-memory</title></head>
<body>
<form method="post" action="{action}">
<input type="hidden" name="code" value="{code}">
<p>Signing in to the mcp-memory dashboard… <button id="signin">Open the dashboard</button></p>
</form>
<script>document.forms[0].submit();</script>
</body></html>
"""


def run_ui(settings: Settings, port: int = 0, open_browser: bool = True) -> int:
    """Serve the dashboard until interrupted; opens (or names, on stderr) the local sign-in page."""
    from mcp.server.transport_security import TransportSecuritySettings

    from mcp_memory.dashboard.app import dashboard_server
    from mcp_memory.dashboard.auth import CODE_SECONDS, Tokens
    from mcp_memory.dashboard.serving import run_http
    from mcp_memory.runtime.allocators import tune_for_long_running
    from mcp_memory.runtime.service import MemoryService

    tune_for_long_running()
    listener = listen(port)
    where = f"{listener.host}:{listener.port}"
    # Only this exact host and port: the dashboard's pages and /mcp refuse any other Host or Origin.
    security = TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=[where],
                                         allowed_origins=[f"http://{where}"])
    tokens = Tokens(full=[secrets.token_urlsafe(32)], read_only=[], shared=[])
    service = MemoryService(settings)
    app, dashboard = dashboard_server(service, tokens, host=listener.host, security=security)
    page = sign_in_page_path()
    try:
        code = dashboard.auth.issue_code("full", on_used=lambda: remove_sign_in_page(page))
        write_sign_in_page(page, f"{listener.base_url}/signin", code)
        print(f"mcp-memory: dashboard at {listener.base_url}/ ; sign-in page {page.as_uri()} "
              f"(works once, for {CODE_SECONDS // 60} minutes)", file=sys.stderr, flush=True)
        service.start()
        if open_browser:
            webbrowser.open(page.as_uri())
        # uvicorn re-raises the SIGTERM it stopped on: as an exit, so the sign-in page is removed below.
        signal.signal(signal.SIGTERM, _exit_on_signal)
        run_http(app, log_level="warning", sockets=[listener.sock])
    finally:
        remove_sign_in_page(page)
        service.close(timeout=5)
        listener.sock.close()
    return 0
