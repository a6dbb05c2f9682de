"""Answering a query beyond the index's first stage, and choosing what to recall before a prompt.

Precision search (``precision``: the first stage's candidates reordered by a reranker from
``rerank/``), deep search (``deep``: a second hop from the concepts of the first hits), and
auto-recall (``recaller``: candidates, the gate, the session primer, no repeats; ``recall_focus``
cuts each hit down to the memories that matched).

May import: ``index`` and everything below it. Of its sibling features, only
``experience.episodes`` (recall leaves the episode records out), allowed by name in the
import-linter contract of ``pyproject.toml``.
"""
