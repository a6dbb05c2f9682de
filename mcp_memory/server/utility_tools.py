"""Placeholder: filled in by the utility feature."""

from mcp.server import MCPServer

from mcp_memory.server.context import ServerContext


def register_utility_tools(server: MCPServer, app: ServerContext) -> None:
    """Register the utility tools on ``server``."""
