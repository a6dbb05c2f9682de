"""mcp-memory: local-first long-term memory for AI agents.

Markdown files are the source of truth; a hybrid index (LanceDB vectors + Tantivy BM25) is
derived from them. ``Memory`` (in ``memory.py``) is the one façade that the command line,
the MCP server and the client hooks share.
"""

__version__ = "0.1.0"
