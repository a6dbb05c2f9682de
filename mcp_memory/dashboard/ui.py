"""``mcp-memory ui``: the dashboard on a loopback port, signed in with a fresh token, in the browser.

A server of its own (with ``/mcp`` too, behind the same fresh token) on 127.0.0.1; port 0
picks a free one. The socket is bound before the link is printed, so the link always names
the port that answers. The token lives as long as the process: the next ``ui`` makes another.
"""

from __future__ import annotations

import secrets
import socket
import sys
import webbrowser

from mcp_memory.config import Settings

HOST = "127.0.0.1"


def run_ui(settings: Settings, port: int = 0, open_browser: bool = True) -> int:
    """Serve the dashboard until interrupted; prints the sign-in link on stderr."""
    import uvicorn

    from mcp_memory.allocators import tune_for_long_running
    from mcp_memory.dashboard.app import dashboard_app
    from mcp_memory.dashboard.auth import Tokens, sign_in_link
    from mcp_memory.service import MemoryService

    tune_for_long_running()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, port))
    except OSError as exc:
        sock.close()
        raise OSError(f"cannot listen on {HOST}:{port}: {exc.strerror or exc}") from None
    actual = sock.getsockname()[1]
    token = secrets.token_urlsafe(32)
    tokens = Tokens(full=[token], read_only=[], shared=[])
    base = f"http://{HOST}:{actual}"
    service = MemoryService(settings)
    app = dashboard_app(service, tokens, host=HOST)
    link = sign_in_link(base, tokens)
    print(f"mcp-memory: dashboard at {link}", file=sys.stderr, flush=True)
    service.start()
    if open_browser:
        webbrowser.open(link)
    try:
        uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
    finally:
        service.close(timeout=5)
        sock.close()
    return 0
