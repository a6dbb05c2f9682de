"""The records and rules every layer shares: the bottom of the package, above ``safety`` and ``errors``.

Which files are memory and how a caller may read them (``workspace``, ``reading``, ``privacy``,
``scopes``, ``session_source``, ``transcripts``); what a memory, a chunk and a hit are
(``chunking``, ``memory_ids``, ``memory_lookup``, ``hits``, ``requests``); text rules
(``analysis``, ``periods``, ``opposites``); the recall block's gate and format (``recall``); and
the small stores every layer reads: learned utility (``utility``), the capture and recall ledger
(``ledger``), shared SQLite files (``sqlite``), bearer tokens (``tokens``), and what a remote
endpoint says about trying again (``retries``).

May import: ``safety`` and ``errors``. Never ``config`` (which reads ``scopes``), the index, the
embedders, a feature or anything that serves: all of them import this.
"""
