"""The long-running processes, above everything they host.

``serve`` is ``mcp-memory serve``: tokens, host checks, the hook bridge, the stdio or HTTP
transport and the dashboard beside it. ``warm_server`` is ``mcp-memory warm``: one process per
workspace and user, answering hooks and giving each connected front an MCP server of its own.

May import: everything but ``cli``; only ``cli`` imports it.
"""
