"""The derived index of a workspace, and the first-stage search it answers.

What is stored: LanceDB vectors and chunk rows (``vectors``), Tantivy BM25 (``keywords``) and the
SQLite sync state (``state``), kept in step with the files by ``sync`` and checked by ``doctor``.
What reads it: ``snapshot`` (one generation of the chunk table in memory), ``hybrid`` (the hybrid
searcher: fusion, decay, utility, MMR, citations narrowed to the matched lines), ``line_vectors``
(vectors of memory lines), ``similarity`` (duplicate checks and line ranking, which every feature
that writes asks) and ``engine``, which opens all of it lazily and rebuilds it when unreadable.

May import: ``embedding``, ``capture``, ``config``, ``core``, ``safety`` and ``errors``. Never a
feature (``search``, ``writes``, ``experience``, ``lifecycle``, ``team``) or anything above them.
"""
