"""Sharing one workspace between machines through git.

``mcp-memory sync`` (``git_sync``), the ``git`` command line without prompts and with timeouts
(``git_cli``), and the conflicts a union merge cannot settle (``git_conflicts``).

May import: ``index`` and everything below it; no sibling feature.
"""
