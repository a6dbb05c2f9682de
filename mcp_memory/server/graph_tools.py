"""Placeholder: filled in by the graph feature."""

from mcp.server import MCPServer

from mcp_memory.server.context import ServerContext


def register_graph_tools(server: MCPServer, app: ServerContext) -> None:
    """Register the graph tools on ``server``."""
