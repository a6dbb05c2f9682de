"""The resources: the list of memory files, each file's text, a recall block, the pinned rules, the index status.

A shared caller gets the same view as through the tools: no private file is listed or read, and
a scoped token lists and reads its scope and the global memory only (``scoping.py``).
"""

from __future__ import annotations

import json
from urllib.parse import quote

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ResourceError
from mcp.server.mcpserver.resources.templates import ResourceSecurity

from mcp_memory.errors import PathError
from mcp_memory.server.context import ServerContext
from mcp_memory.server.scoping import check_visible, visible

FILES_URI = "memory://files"


def file_uri(path: str) -> str:
    """The resource URI of a memory file (characters such as '#' and '?' percent-encoded)."""
    return f"{FILES_URI}/" + quote(path, safe="/")


def register_resources(server: MCPServer, app: ServerContext) -> None:
    """Register the ``memory://`` resources on ``server``."""

    @server.resource(FILES_URI, mime_type="application/json", description="The memory files")
    def files_resource() -> str:
        # A static resource gets no Context; the token still comes from the request's context.
        files = [f for f in app.memory().reader.list_files(include_private=app.include_private(None))
                 if visible(None, f.path)]
        return json.dumps([{"path": f.path, "size": f.size, "date": f.date.isoformat() if f.date else None,
                            "evergreen": f.evergreen, "uri": file_uri(f.path)} for f in files],
                          ensure_ascii=False)

    # Absolute paths are admitted here because configured extra paths may live outside the
    # workspace; Memory.get still refuses anything that is not a memory file.
    @server.resource(f"{FILES_URI}/{{+path}}", mime_type="text/markdown", description="A memory file's text",
                     security=ResourceSecurity(reject_absolute_paths=False))
    def file_resource(path: str, ctx: Context | None = None) -> str:
        try:
            lines = app.memory().get(path, include_private=app.include_private(ctx))
            check_visible(ctx, lines.path, path)
            return lines.text
        except PathError as exc:
            raise ResourceError(str(exc)) from None

    @server.resource("memory://recall/{query}", mime_type="text/plain",
                     description="The recall block for a query")
    def recall_resource(query: str, ctx: Context | None = None) -> str:
        return app.memory().recall(query, include_private=app.include_private(ctx), scopes=app.searched(ctx))

    @server.resource("memory://rules", mime_type="application/json",
                     description="The rules MEMORY.md pins (none for callers that may not read it)")
    def rules_resource() -> str:
        return json.dumps(app.memory().rules.report(include_private=app.include_private(None)).to_dict(),
                          ensure_ascii=False)

    @server.resource("memory://status", mime_type="application/json", description="Index status")
    def status_resource() -> str:
        return json.dumps(app.memory().status(include_private=app.include_private(None)).to_dict(), ensure_ascii=False)
