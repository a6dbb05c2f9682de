"""Connecting the product to each client: ``mcp-memory setup <client>``.

Every MCP client keeps its server list (and, for those that have them, its hooks) in its own
file and format. ``setup.py`` holds the command's core (read, merge, show a diff, write
atomically) and a registry of clients; each client is one small function that says which
files it edits and how. A module may add a client with one call to ``setup.register``.
"""
