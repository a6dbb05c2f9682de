"""Placeholder: filled in by the episode feature."""

from mcp.server import MCPServer

from mcp_memory.server.context import ServerContext


def register_episode_tools(server: MCPServer, app: ServerContext) -> None:
    """Register the episode tools on ``server``."""
