"""Text analysis shared by the keyword index, search, recall, MMR and duplicate checks.

* ``keyword_tokens``: words of letters and digits, and for CJK runs (Han, kana, Hangul)
  every character plus every adjacent pair. Character bigrams are the classic strong
  baseline for Chinese retrieval and need no dictionary, so a whole Chinese sentence never
  becomes one token.
* ``TermAnalyzer``: those tokens lowercased, cut at 64 characters and stemmed by the English
  Snowball stemmer, as the keyword index holds them (``build_analyzer`` is the same pipeline,
  registered with Tantivy). ``query_terms`` also drops ``QUERY_STOPWORDS`` (the words of
  ``mcp_memory/core/words/query_stopwords.txt``) and the fragments of English contractions
  (``without_contractions``), and stops at ``MAX_QUERY_TERMS``.
* ``jaccard``: the overlap of two sets of tokens or terms (MMR, duplicate checks).

Importing this module is cheap: Tantivy is imported when the first analyzer is built.
"""

from __future__ import annotations

import importlib.resources
import re
from collections.abc import Iterator
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import tantivy

_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+")
_WORD = re.compile(r"[^\W_]+")
_ANALYZE_TOKENS = 512  # tokens handed to the analyzer at a time
MAX_QUERY_TERMS = 256  # a 100 KB query must not become a 20,000-clause query

# The share of a query's word weight (by IDF) that one line or note must hold before word evidence
# counts at all, and from which it counts fully (linear in between): the local reranker's windows,
# and how well the first stage hears a long query's focus (``index/long_query.py``).
WORDS_FOUND_LOW = 0.3
WORDS_FOUND_HIGH = 0.6


def _stopwords() -> frozenset[str]:
    """The words of words/query_stopwords.txt (comments, lines starting with #, left out)."""
    text = (importlib.resources.files("mcp_memory.core") / "words" / "query_stopwords.txt").read_text(encoding="utf-8")
    return frozenset(word for line in text.splitlines() if not line.lstrip().startswith("#") for word in line.split())


# Function words dropped from queries (not from the index): "what did we decide" should match
# on "decide", not on every note that says "we". A query of only such words keeps them.
QUERY_STOPWORDS = _stopwords()


def keyword_tokens(text: str) -> list[str]:
    """Split text into index tokens: words, plus CJK characters and character bigrams."""
    tokens: list[str] = []
    position = 0
    for match in _CJK_RUN.finditer(text):
        tokens.extend(_WORD.findall(text[position : match.start()]))
        run = match.group(0)
        tokens.extend(run)
        tokens.extend(run[i : i + 2] for i in range(len(run) - 1))
        position = match.end()
    tokens.extend(_WORD.findall(text[position:]))
    return tokens


# An English contraction or possessive splits into a fragment ("what's" -> "what", "s"; "don't"
# -> "don", "t") that nearly every note of a chat holds: as a query word it made a prompt look half
# covered by any line that says "it's" or "I'm". The query keeps the word before the apostrophe.
_IRREGULAR_NEGATIONS = {"wo": "will", "ca": "can", "sha": "shall"}  # won't, can't, shan't
_NEGATION = re.compile(r"\b(\w+?)n['\u2019]t\b", re.IGNORECASE)
_CLITIC = re.compile(r"(?<=[^\W_])['\u2019](?:s|d|ll|m|re|ve)\b", re.IGNORECASE)


def without_contractions(text: str) -> str:
    """``text`` with English contractions and possessives cut back to their first word:
    "what's" -> "what", "Kafka's" -> "Kafka", "didn't" -> "did", "won't" -> "will"."""
    if "'" not in text and "\u2019" not in text:
        return text
    text = _NEGATION.sub(lambda m: _IRREGULAR_NEGATIONS.get(m.group(1).lower(), m.group(1)), text)
    return _CLITIC.sub("", text)


# A Chinese stop word is cut out of the text before it is split: its characters and the pairs they
# form with their neighbours would otherwise stay as terms ("提醒" leaves "提", "醒", "醒我").
_CJK_STOPWORDS = sorted((w for w in QUERY_STOPWORDS if _CJK_RUN.search(w)), key=len, reverse=True)
_CJK_STOPWORD = re.compile("|".join(map(re.escape, _CJK_STOPWORDS))) if _CJK_STOPWORDS else None


def query_tokens(text: str) -> list[str]:
    """The tokens of a query without its stop words (all of them when nothing else is left) and
    without the fragments of its contractions."""
    text = without_contractions(text)
    stripped = _CJK_STOPWORD.sub(" ", text) if _CJK_STOPWORD is not None and _CJK_RUN.search(text) else text
    content = [t for t in keyword_tokens(stripped) if t.lower() not in QUERY_STOPWORDS]
    return content or keyword_tokens(text)


def words_among(terms: AbstractSet[str]) -> int:
    """How many words ``terms`` hold: a lone CJK character is not counted, as the pairs of
    characters the index also holds stand for the words it belongs to ("咖啡" is one word, not three terms)."""
    return sum(1 for term in terms if len(term) > 1 or not _CJK_RUN.match(term))


def jaccard(a: AbstractSet[str], b: AbstractSet[str]) -> float:
    """|a ∩ b| / |a ∪ b|, and 0.0 when either set is empty."""
    if not a or not b:
        return 0.0
    shared = len(a & b)
    return shared / (len(a) + len(b) - shared)  # the union's size without building the union


def build_analyzer() -> tantivy.TextAnalyzer:
    """Tantivy's pipeline over ``keyword_tokens`` joined by spaces: lowercase, length cap, stemmer."""
    import tantivy

    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace())
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.remove_long(64))
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )


class TermAnalyzer:
    """Analysed terms of texts and queries, exactly as the keyword index holds and searches them."""

    def __init__(self) -> None:
        self._analyzer = build_analyzer()

    def query_terms(self, text: str) -> list[str]:
        """The distinct analysed terms a query searches for, in order, at most MAX_QUERY_TERMS."""
        terms: list[str] = []
        seen: set[str] = set()
        for term in self._analysed(query_tokens(text)):
            if term not in seen:
                seen.add(term)
                terms.append(term)
                if len(terms) >= MAX_QUERY_TERMS:
                    break
        return terms

    def terms(self, text: str) -> frozenset[str]:
        """The analysed terms of a text, as the index holds them."""
        return frozenset(self._analysed(keyword_tokens(text)))

    def analysed(self, tokens: list[str]) -> list[str]:
        """The terms the keyword index holds for ``keyword_tokens`` output, in order: their number is
        the document's length in BM25."""
        return list(self._analysed(tokens))

    def sequence(self, text: str) -> list[str]:
        """The analysed terms of a text in order, stop words kept (for phrases)."""
        return list(self._analysed(keyword_tokens(text)))

    def _analysed(self, tokens: list[str]) -> Iterator[str]:
        """The analysed terms of ``tokens``, in order, the analyzer given a bounded piece at a time."""
        for start in range(0, len(tokens), _ANALYZE_TOKENS):
            yield from self._analyzer.analyze(" ".join(tokens[start : start + _ANALYZE_TOKENS]))
