"""The floor of ``bench/cold_start.py`` and ``bench/server.py``: a minimal MCPServer, one trivial tool.

Each benchmark starts it exactly as it starts ``mcp-memory serve`` (a Python interpreter, stdio),
so the ratio between the two is what the product adds to a bare server of the same SDK.
"""

from mcp.server import MCPServer

server = MCPServer("floor")


@server.tool()
def ping() -> str:
    """Return a short string."""
    return "pong"


if __name__ == "__main__":
    server.run()
