"""Each client the product works with: connecting it (``mcp-memory setup <client>``) and its hooks.

Every MCP client keeps its server list (and, for those that have them, its hooks) in its own
file and format. ``setup.py`` holds the command's core (read, merge, show a diff, write
atomically) and a registry of clients; each client is one small function that says which
files it edits and how. A module may add a client with one call to ``setup.register``.
``hooks`` reads Claude Code's hook input and writes its output (asking a running server first,
else working alone, never failing); ``openclaw_hooks`` maps OpenClaw's plugin hooks onto the
same paths.

May import: ``runtime``, ``memory`` and everything below them. Never ``server``, ``dashboard`` or
``processes``.
"""
