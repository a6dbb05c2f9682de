"""The keyword (BM25) index in Tantivy, with CJK-aware tokens and queries that cannot fail.

Text is split by ``analysis.keyword_tokens`` before Tantivy sees it (words, plus CJK
characters and character bigrams); Tantivy then lowercases and applies the English Snowball
stemmer (``analysis.build_analyzer``, registered on every open).

Queries are built from ``analysis.TermAnalyzer.query_terms`` as a boolean OR of term queries.
User text never reaches Tantivy's query parser, so quotes, parentheses, ``AND`` or ``field:``
in a query are just words, never a syntax error.

A caller who may not see every file is scored with BM25's statistics over what it may see
(``visible_keywords.py``): Tantivy only knows the whole index's, so its candidates are boosted
word by word and their scores rebuilt from the terms each document keeps (``KeywordIndex._search_as``).
Each document also keeps its length in terms as a fast field for the visible average length.

Tantivy allows a single writer per index across all processes; callers hold the
workspace write lock (see ``sync.py``) around ``KeywordIndex.writer()``.
"""

from __future__ import annotations

import datetime as dt
import heapq
import json
import logging
import math
import re
import shutil
from collections import Counter
from collections.abc import Collection, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import tantivy

from mcp_memory.core.analysis import TermAnalyzer, build_analyzer, keyword_tokens

log = logging.getLogger(__name__)

_TOKENIZER_NAME = "mcp_memory_text"
_LAYOUT = "4"  # bump when the schema or the tokens change; an index of another layout is rebuilt
# Tantivy's BM25 parameters (its defaults): a restricted caller's scores are rebuilt with them.
_K1, _B = 1.2, 0.75
_MOST_FETCHED = 16  # a restricted caller's search reads at most this many times the hits it asks for


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("id", stored=True, tokenizer_name="raw")
    builder.add_text_field("path", stored=True, tokenizer_name="raw")
    builder.add_text_field("text", stored=False, tokenizer_name=_TOKENIZER_NAME, index_option="freq")
    builder.add_integer_field("day", indexed=True, fast=True)  # date.toordinal() of daily files
    # How many terms ``text`` holds, as Tantivy counts them: the average a restricted caller's
    # BM25 divides by is summed over the documents it may see (``total_length``).
    builder.add_integer_field("length", indexed=False, fast=True)
    # The analysed terms themselves, space-separated (stored only): a restricted caller's BM25 counts
    # the query's words in them, where asking Tantivy would take one search per word.
    builder.add_bytes_field("terms", stored=True)
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


class KeywordStatistics(Protocol):
    """BM25's statistics over the documents one caller may see (``visible_keywords.VisibleKeywords``)."""

    def idf(self, terms: Iterable[str]) -> dict[str, float]: ...

    def average_length(self) -> float: ...


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

    def close(self) -> None:
        """Let go of the index. Its reader's thread, which watches the folder for commits, ends
        with it, so the folder of a closed workspace may be removed at once (the thread would
        otherwise take a lock file in it as it notices the removal). The object is not used again:
        ``Engine.open`` makes a new one."""
        if hasattr(self, "_index"):
            del self._index

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
            yield _KeywordWriter(writer, self._terms)
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
        stats: KeywordStatistics | None = None,
    ) -> KeywordResult:
        """BM25 top ``limit`` chunks for any user text (never raises on the text itself), none of
        the files ``excluded_paths`` names.

        Filters are part of the query, so a match ranked low overall is still found. ``stats``: BM25's
        statistics over what a restricted caller may see (``visible_keywords.py``), to rank and
        score by instead of the whole index's.
        """
        terms = self._terms.query_terms(text)
        if not terms or limit <= 0:
            return KeywordResult([], 0.0)
        searcher = self._index.searcher()
        filters = []
        if path_prefix:
            try:
                pattern = tantivy.Query.regex_query(self._schema, "path", re.escape(path_prefix) + ".*")
                filters.append((tantivy.Occur.Must, pattern))
            except ValueError:
                pass  # a prefix the regex engine refuses: the caller filters the hits instead
        if after or before:
            filters.append((tantivy.Occur.Must, tantivy.Query.range_query(
                self._schema, "day", tantivy.FieldType.Integer,
                after.toordinal() if after else None, before.toordinal() if before else None,
            )))
        filters += _excluding(self._schema, excluded_paths)
        if stats is None:
            query = self._matching(terms, filters)
            docs = [(searcher.doc(address), score) for score, address in searcher.search(query, limit).hits]
            weight = sum(_idf(searcher, term) for term in terms)
            return KeywordResult([KeywordHit(d["id"][0], float(score), d["path"][0]) for d, score in docs], weight)
        return self._search_as(stats, searcher, terms, filters, limit)

    def _matching(self, terms: list[str], filters: list[tuple[tantivy.Occur, tantivy.Query]],
                  boosts: dict[str, float] | None = None) -> tantivy.Query:
        """Documents holding any of ``terms`` (each boosted by ``boosts``, when given) that pass ``filters``."""
        clauses = []
        for term in terms:
            clause = tantivy.Query.term_query(self._schema, "text", term)
            if boosts is not None:
                clause = tantivy.Query.boost_query(clause, boosts[term])
            clauses.append((tantivy.Occur.Should, clause))
        query = tantivy.Query.boolean_query(clauses)
        return tantivy.Query.boolean_query([(tantivy.Occur.Must, query), *filters]) if filters else query

    def _search_as(self, stats: KeywordStatistics, searcher: tantivy.Searcher, terms: list[str],
                   filters: list[tuple[tantivy.Occur, tantivy.Query]], limit: int) -> KeywordResult:
        """The best ``limit`` documents by BM25 over the statistics ``stats`` gives, each scored by them.

        Tantivy weighs a word by its IDF over the whole index and compares a document's length with
        the whole index's average. A boost per word turns its weight into the visible one, so the
        candidates are picked by the caller's word weights; each candidate's score is then rebuilt
        from the terms it keeps (how often each word occurs in it, how long it is) with the
        visible weights and average length, so that nothing of the unseen documents is left in it.
        """
        weights = stats.idf(terms)
        terms = [term for term in terms if weights.get(term, 0.0) > 0]
        whole = _WholeIndex.read(searcher, self._matching(terms, filters)) if terms else None
        if whole is None:
            return KeywordResult([], sum(weights.values()))
        boosts = {term: weights[term] / whole.idf(searcher, term) for term in terms}
        matching = self._matching(terms, filters, boosts)
        average = max(stats.average_length(), 1.0)
        # From Tantivy's score to the rebuilt one, a document's score grows by at most the ratio of the
        # visible average length to the whole one (a longer average shortens every document): once
        # the ``limit``-th rebuilt score beats the last fetched document's score by that much, no
        # document left unfetched can enter. Until then, fetch more.
        growth = max(1.0, average / max(whole.average_length, 1.0)) * (1 + 1e-4)
        scores: dict[tuple[int, int], float] = {}
        docs: dict[tuple[int, int], tantivy.Document] = {}
        fetch = 2 * limit
        while True:
            hits = searcher.search(matching, fetch).hits
            for _, address in hits:
                key = (address.segment_ord, address.doc)
                if key not in docs:
                    docs[key] = searcher.doc(address)
                    scores[key] = _visible_score(docs[key], weights, average)
            best = heapq.nlargest(limit, scores.values())
            if (len(hits) < fetch or fetch >= _MOST_FETCHED * limit
                    or (len(best) == limit and best[-1] > float(hits[-1][0]) * growth)):
                break
            fetch *= 2
        ranked = [key for key in heapq.nlargest(limit, scores, key=scores.__getitem__) if scores[key] > 0]
        return KeywordResult([KeywordHit(docs[key]["id"][0], scores[key], docs[key]["path"][0]) for key in ranked],
                             sum(weights.values()))

    def holding(self, terms: Iterable[str], excluded_paths: Collection[str]) -> dict[str, int]:
        """How many documents hold each analysed term, outside the files ``excluded_paths`` names."""
        searcher = self._index.searcher()
        unseen = _excluding(self._schema, excluded_paths)
        counts = {}
        for term in terms:
            counts[term] = _count(searcher, tantivy.Query.boolean_query(
                [(tantivy.Occur.Must, tantivy.Query.term_query(self._schema, "text", term)), *unseen]))
        return counts

    def total_length(self, excluded_paths: Collection[str]) -> tuple[int, int]:
        """How many terms the documents outside the files ``excluded_paths`` names hold, in all,
        and how many documents those are: BM25's average length over what a caller may see."""
        query = tantivy.Query.boolean_query(
            [(tantivy.Occur.Must, tantivy.Query.all_query()), *_excluding(self._schema, excluded_paths)])
        found = self._index.searcher().aggregate(
            query, {"terms": {"sum": {"field": "length"}}, "documents": {"value_count": {"field": "length"}}})
        return int(found["terms"]["value"] or 0), int(found["documents"]["value"] or 0)

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
    def __init__(self, writer: tantivy.IndexWriter, terms: TermAnalyzer):
        self._writer = writer
        self._terms = terms

    def delete_path(self, path: str) -> None:
        self._writer.delete_documents_by_term("path", path)

    def delete_all(self) -> None:
        self._writer.delete_all_documents()

    def add(self, chunk_id: str, path: str, index_text: str, date: dt.date | None = None) -> None:
        tokens = keyword_tokens(index_text)
        doc = tantivy.Document(id=chunk_id, path=path, text=" ".join(tokens))
        terms = self._terms.analysed(tokens)
        doc.add_integer("length", len(terms))
        doc.add_bytes("terms", " ".join(terms).encode("utf-8"))
        if date is not None:
            doc.add_integer("day", date.toordinal())
        self._writer.add_document(doc)

    def add_many(self, rows: Iterable[tuple[str, str, str, dt.date | None]]) -> None:
        for chunk_id, path, index_text, date in rows:
            self.add(chunk_id, path, index_text, date)


@dataclass(frozen=True)
class _WholeIndex:
    """The statistics Tantivy scores with: its document count (deleted documents not yet merged away
    included) and average length, read from its explanation of one match."""

    documents: float
    average_length: float

    @classmethod
    def read(cls, searcher: tantivy.Searcher, query: tantivy.Query) -> _WholeIndex | None:
        hits = searcher.search(query, 1).hits
        if not hits:
            return None
        facts = _facts(json.loads(query.explain(searcher, hits[0][1]).to_json()))
        return cls(facts.get("N", float(searcher.num_docs)), facts.get("avgdl", 1.0))

    def idf(self, searcher: tantivy.Searcher, term: str) -> float:
        df = int(searcher.doc_freq("text", term))
        return math.log(1 + (self.documents - df + 0.5) / (df + 0.5))


def _facts(explanation: dict[str, Any]) -> dict[str, float]:
    """The named numbers of an explanation ("N", "avgdl", ...), from its first term's branch."""
    facts: dict[str, float] = {}
    for detail in explanation.get("details", []):
        name = str(detail.get("description", "")).split(",")[0]
        if detail.get("details"):
            facts = _facts(detail) | facts
        elif name not in facts:
            facts[name] = float(detail["value"])
    return facts


def _visible_score(doc: tantivy.Document, weights: dict[str, float], average: float) -> float:
    """BM25 of one document with the words weighed by ``weights`` and its length compared with
    ``average``, from the analysed terms it keeps."""
    held = doc["terms"][0].decode("utf-8").split() if doc["terms"] else []
    counts = Counter(term for term in held if term in weights)
    norm = 1 - _B + _B * _fieldnorm(len(held)) / average
    return sum(weights[term] * (_K1 + 1) * freq / (freq + _K1 * norm) for term, freq in counts.items())


def _fieldnorm(length: int) -> int:
    """A document length as Tantivy keeps it: on one byte, like Lucene (exact below 24, then four
    significant bits), so the length a score was computed with."""
    if length < 24:
        return length
    rest = length - 24
    shift = max(rest.bit_length() - 4, 0)
    return 24 + ((rest >> shift) << shift)


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
