"""``python -m mcp_memory`` is the same program as ``mcp-memory``."""

from mcp_memory.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
