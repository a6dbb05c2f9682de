"""What keeps a memory healthy over time.

The sleep cycle (``sleep``) and its consolidation (``consolidation``, ``consolidation_judge``),
the compaction rescue (``rescue``), the owner's pinned rules (``rules``), and the status and
doctor report (``health``, which counts the pinned rules).

May import: ``index`` and everything below it; ``writes.edits`` (sleep and rescue write through
the Editor) and ``experience.graph`` with ``experience.graph_upkeep`` (sleep runs the graph's
upkeep), each allowed by name in the import-linter contract of ``pyproject.toml``.
"""
