"""The derived index: vectors and chunk rows in LanceDB, BM25 in Tantivy, sync state in SQLite."""
