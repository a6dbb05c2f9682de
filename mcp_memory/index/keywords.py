"""The keyword (BM25) index in Tantivy, with CJK-aware tokens and queries that cannot fail.

Text is split by ``analysis.keyword_tokens`` before Tantivy sees it (words, plus CJK
characters and character bigrams); Tantivy then lowercases and applies the English Snowball
stemmer (``analysis.build_analyzer``, registered on every open).

Queries are built from ``analysis.TermAnalyzer.query_terms`` as a boolean OR of term queries.
User text never reaches Tantivy's query parser, so quotes, parentheses, ``AND`` or ``field:``
in a query are just words, never a syntax error.

Tantivy allows a single writer per index across all processes; callers hold the
workspace write lock (see ``sync.py``) around ``KeywordIndex.writer()``.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import math
import re
import shutil
from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import tantivy

from mcp_memory.core.analysis import TermAnalyzer, build_analyzer, keyword_tokens

log = logging.getLogger(__name__)

_TOKENIZER_NAME = "mcp_memory_text"
_LAYOUT = "2"  # bump when the schema or the tokens change; an index of another layout is rebuilt


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("id", stored=True, tokenizer_name="raw")
    builder.add_text_field("path", stored=True, tokenizer_name="raw")
    builder.add_text_field("text", stored=False, tokenizer_name=_TOKENIZER_NAME, index_option="freq")
    builder.add_integer_field("day", indexed=True, fast=True)  # date.toordinal() of daily files
    return builder.build()


@dataclass(frozen=True)
class KeywordHit:
    id: str
    score: float
    path: str = ""


@dataclass(frozen=True)
class KeywordResult:
    hits: list[KeywordHit]
    # The BM25 score a chunk of average length would get by holding every query term once:
    # the sum of the terms' IDF. ``best score / query_weight`` says how much of the query the
    # best match covers, which min-max normalisation alone would hide.
    query_weight: float


class KeywordIndex:
    """A Tantivy index of chunk ids and their tokenised text, on disk in ``folder``."""

    def __init__(self, folder: Path):
        self._folder = folder
        layout = folder / "mcp-memory-layout"
        if folder.exists() and (not layout.exists() or layout.read_text().strip() != _LAYOUT):
            log.warning("keyword index at %s has another layout: rebuilding it", folder)
            shutil.rmtree(folder)
        folder.mkdir(parents=True, exist_ok=True)
        if not layout.exists():
            layout.write_text(_LAYOUT)
        self._schema = _schema()
        self._terms = TermAnalyzer()
        try:
            self._index = tantivy.Index(self._schema, path=str(folder), reuse=True)
        except ValueError as exc:
            # Derived data that cannot be read is rebuilt from the files (the next sync sees
            # the missing documents and re-indexes every file).
            log.warning("keyword index at %s cannot be read (%s): rebuilding it", folder, exc)
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True, exist_ok=True)
            layout.write_text(_LAYOUT)
            self._index = tantivy.Index(self._schema, path=str(folder), reuse=True)
        # Custom tokenizers are not persisted: register on every open, before any read or write.
        self._index.register_tokenizer(_TOKENIZER_NAME, build_analyzer())

    # ----- writing (caller holds the workspace write lock) ---------------------------------
    @contextmanager
    def writer(self) -> Iterator[_KeywordWriter]:
        """One short write transaction: changes are committed at the end, or dropped on error."""
        writer = self._index.writer(heap_size=64_000_000, num_threads=1)
        try:
            # A commit killed half-way leaves files the index does not reference (a segment's
            # .del file, say); a later commit writing the same name would fail. Holding the only
            # writer, remove them first.
            writer.garbage_collect_files()
            self._remove_stale_delete_files()
            yield _KeywordWriter(writer)
            writer.commit()
            writer.wait_merging_threads()
        except BaseException:
            writer.rollback()
            raise
        finally:
            del writer
        self._index.reload()

    def _remove_stale_delete_files(self) -> None:
        """Delete ``<segment>.<opstamp>.del`` files that meta.json does not reference.

        Tantivy's own garbage collection only knows the files it registered; a commit killed
        between writing a delete file and publishing meta.json can leave one it never will, and
        the next commit of the same change would then fail on "file already exists".
        """
        try:
            meta = json.loads((self._folder / "meta.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        wanted = set()
        for segment in meta.get("segments") or []:
            deletes = segment.get("deletes") or {}
            if "opstamp" in deletes:
                wanted.add(f"{str(segment.get('segment_id', '')).replace('-', '')}.{deletes['opstamp']}.del")
        for path in self._folder.glob("*.del"):
            if path.name not in wanted:
                log.warning("removing %s, left by an interrupted keyword-index commit", path.name)
                path.unlink(missing_ok=True)

    # ----- reading -------------------------------------------------------------------------
    def reload(self) -> None:
        """See commits made since the last reload (by this or any other process)."""
        self._index.reload()

    def count(self) -> int:
        return int(self._index.searcher().num_docs)

    def search(
        self,
        text: str,
        limit: int,
        path_prefix: str | None = None,
        after: dt.date | None = None,
        before: dt.date | None = None,
        excluded_paths: Collection[str] = (),
        idf: Callable[[list[str]], dict[str, float]] | None = None,
    ) -> KeywordResult:
        """BM25 top ``limit`` chunks for any user text (never raises on the text itself), none of
        the files ``excluded_paths`` names.

        Filters are part of the query, so a match ranked low overall is still found. ``idf``: each
        query term's weight to score by instead of the whole index's IDF (what a restricted caller
        may see, ``visible_keywords.py``); the hits' term frequencies stay Tantivy's.
        """
        terms = self._terms.query_terms(text)
        if not terms or limit <= 0:
            return KeywordResult([], 0.0)
        query = tantivy.Query.boolean_query(
            [(tantivy.Occur.Should, tantivy.Query.term_query(self._schema, "text", t)) for t in terms]
        )
        must = [(tantivy.Occur.Must, query)]
        if path_prefix:
            try:
                pattern = tantivy.Query.regex_query(self._schema, "path", re.escape(path_prefix) + ".*")
                must.append((tantivy.Occur.Must, pattern))
            except ValueError:
                pass  # a prefix the regex engine refuses: the caller filters the hits instead
        if after or before:
            must.append((tantivy.Occur.Must, tantivy.Query.range_query(
                self._schema, "day", tantivy.FieldType.Integer,
                after.toordinal() if after else None, before.toordinal() if before else None,
            )))
        must += _excluding(self._schema, excluded_paths)
        if len(must) > 1:
            query = tantivy.Query.boolean_query(must)
        searcher = self._index.searcher()
        hits = searcher.search(query, limit).hits
        docs = [(searcher.doc(address), score, address) for score, address in hits]
        if idf is None:
            weight = sum(_idf(searcher, term) for term in terms)
            return KeywordResult([KeywordHit(d["id"][0], float(score), d["path"][0]) for d, score, _ in docs], weight)
        weights = idf(terms)
        found = {(address.segment_ord, address.doc): d["id"][0] for d, _, address in docs}
        scores = _reweighed(self._schema, searcher, terms, weights, found)
        return KeywordResult([KeywordHit(d["id"][0], scores.get(d["id"][0], 0.0), d["path"][0]) for d, _, _ in docs
                              if scores.get(d["id"][0], 0.0) > 0], sum(weights.values()))

    def holding(self, terms: Iterable[str], excluded_paths: Collection[str]) -> dict[str, int]:
        """How many documents hold each analysed term, outside the files ``excluded_paths`` names."""
        searcher = self._index.searcher()
        unseen = _excluding(self._schema, excluded_paths)
        counts = {}
        for term in terms:
            counts[term] = _count(searcher, tantivy.Query.boolean_query(
                [(tantivy.Occur.Must, tantivy.Query.term_query(self._schema, "text", term)), *unseen]))
        return counts

    def documents_in(self, paths: Collection[str]) -> int:
        """How many documents the files ``paths`` names hold."""
        if not paths:
            return 0
        return _count(self._index.searcher(), tantivy.Query.boolean_query(
            [(tantivy.Occur.Should, tantivy.Query.term_query(self._schema, "path", path)) for path in paths]))

    def idf(self, terms: Iterable[str]) -> dict[str, float]:
        """BM25's inverse document frequency of each analysed term: how telling it is in this memory."""
        searcher = self._index.searcher()
        return {term: _idf(searcher, term) for term in terms}

    def all_paths(self) -> set[str]:
        """Every file path with documents in the index (for consistency checks)."""
        searcher = self._index.searcher()
        total = searcher.num_docs
        if total == 0:
            return set()
        hits = searcher.search(tantivy.Query.all_query(), total).hits
        return {searcher.doc(address)["path"][0] for _, address in hits}


class _KeywordWriter:
    def __init__(self, writer: tantivy.IndexWriter):
        self._writer = writer

    def delete_path(self, path: str) -> None:
        self._writer.delete_documents_by_term("path", path)

    def delete_all(self) -> None:
        self._writer.delete_all_documents()

    def add(self, chunk_id: str, path: str, index_text: str, date: dt.date | None = None) -> None:
        doc = tantivy.Document(id=chunk_id, path=path, text=" ".join(keyword_tokens(index_text)))
        if date is not None:
            doc.add_integer("day", date.toordinal())
        self._writer.add_document(doc)

    def add_many(self, rows: Iterable[tuple[str, str, str, dt.date | None]]) -> None:
        for chunk_id, path, index_text, date in rows:
            self.add(chunk_id, path, index_text, date)


def _reweighed(schema: tantivy.Schema, searcher: tantivy.Searcher, terms: list[str], weights: dict[str, float],
               found: dict[tuple[int, int], str]) -> dict[str, float]:
    """BM25 of the ``found`` documents (address -> id) with each term weighed by ``weights`` instead
    of its IDF: each term's own score in each document, divided by the IDF Tantivy gave it."""
    if not found:
        return {}
    among = tantivy.Query.const_score_query(tantivy.Query.boolean_query(
        [(tantivy.Occur.Should, tantivy.Query.term_query(schema, "id", chunk)) for chunk in found.values()]), 0.0)
    scores: dict[str, float] = {}
    for term in terms:
        weight, whole = weights.get(term, 0.0), _idf(searcher, term)
        if weight <= 0 or whole <= 0:
            continue
        query = tantivy.Query.boolean_query([(tantivy.Occur.Must, tantivy.Query.term_query(schema, "text", term)),
                                             (tantivy.Occur.Must, among)])
        for score, address in searcher.search(query, len(found), count=False).hits:
            chunk = found.get((address.segment_ord, address.doc))
            if chunk is not None:
                scores[chunk] = scores.get(chunk, 0.0) + float(score) / whole * weight
    return scores


def _count(searcher: tantivy.Searcher, query: tantivy.Query) -> int:
    """How many documents match ``query``."""
    return int(getattr(searcher.search(query, 1, count=True), "count", 0) or 0)  # the stubs omit the count


def _excluding(schema: tantivy.Schema, paths: Collection[str]) -> list[tuple[tantivy.Occur, tantivy.Query]]:
    return [(tantivy.Occur.MustNot, tantivy.Query.term_query(schema, "path", path)) for path in paths]


def _idf(searcher: tantivy.Searcher, term: str) -> float:
    """BM25's IDF, as Tantivy computes it."""
    total = max(int(searcher.num_docs), 1)
    df = int(searcher.doc_freq("text", term))
    return math.log(1 + (total - df + 0.5) / (df + 0.5))
