"""What the memory learns from being used.

The experience graph of cause, action and effect chains in ``memory/experience.md`` (``graph``)
and its upkeep (``graph_upkeep``), rewards and penalties by memory id (``feedback``, folded into
``core/utility.py``), and episodes: one record per working session (``episodes``).

May import: ``index`` and everything below it, and ``writes.edits``: the graph and the episodes
are written through the Editor, the one locked writer.
"""
