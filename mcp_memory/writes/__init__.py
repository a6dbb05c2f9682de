"""Every change to the memory files, and the log of what was written and recalled.

Store and forget (``edits``: checks, group commit, the locked append, then sync), one line
replaced if it still reads as shown (``line_edits``), a conversation captured into checked,
deduplicated, dated facts (``capture_flow``, with the extraction rules of ``capture/``), and the
activity the dashboard shows (``activity``, ``write_log``, ``recall_log``).

May import: ``index`` and everything below it; no sibling feature. ``experience`` and
``lifecycle`` write through ``edits``, never the reverse.
"""
