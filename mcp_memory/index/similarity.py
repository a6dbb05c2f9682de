"""How close a text is to the lines already in memory: duplicate checks and line ranking.

Store and capture must not write a memory twice, and forget must find the one line a query
means. Both compare a text with the lines of the chunks that best match it, line by line (a
chunk-level score is diluted by its neighbours): cosine similarity of embeddings when an
embedder is ready, token overlap otherwise, and always 1.0 for the same words up to case,
spacing and punctuation. Embeddings of lines go through the embedding cache, since the same
lines come back from call to call.

Duplicate checks also see through capture's own rewrites. A decision the compaction rescue
keeps verbatim ("We decided to use Redis for the session cache.") and the fact capture wrote
from the same sentence ("[decision] The team decided to use Redis for the session cache
(2026-11-26)") say the same thing: both are read through ``statement_key`` (what capture would
write for the text, with the subject, "has" before a past participle, category tags and dates
set aside), and the same key counts as the same words.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING, TypeVar

from mcp_memory.capture.rules import captured_form
from mcp_memory.core.analysis import jaccard, keyword_tokens
from mcp_memory.core.hits import MemoryLine, SearchHit
from mcp_memory.core.memory_ids import LEARNED_DATE, memory_body
from mcp_memory.core.reading import Reader
from mcp_memory.core.requests import SearchRequest
from mcp_memory.core.scopes import ScopeFilter
from mcp_memory.embedding import EmbeddingError
from mcp_memory.embedding.cache import embed_through_cache
from mcp_memory.index.engine import Engine

if TYPE_CHECKING:
    import numpy as np

T = TypeVar("T")
_NOT_LETTER_OR_DIGIT = re.compile(r"[\W_]+")  # \w is exactly str.isalnum() plus "_"
CANDIDATE_CHUNKS = 5  # chunks whose lines a text is compared with
# A near-duplicate shares most of its words. Over 7,455 memory lines (the LoCoMo conversations and
# the bench sets), every pair at a cosine of 0.93 or more shared at least 30% of their words (but
# two lines of emoji, which have none), and translations reach at most 0.91. So at a duplicate
# threshold of WORDS_SUFFICE_FROM or more, a line sharing less than MIN_SHARED_WORDS of its words
# with the text is no duplicate and is not embedded: most candidate lines of a store, whose
# embedding was most of its time.
WORDS_SUFFICE_FROM = 0.93
MIN_SHARED_WORDS = 0.2
# After capture's rewrite "I" reads "the user" and "we" "the team": each subject keeps its own word, so
# "The user prefers tea" and "The team prefers tea" stay two statements.
_KEY_SUBJECT = re.compile(r"\b(?:the\s+)?(user|team)\b|(用户)|(团队)")
_KEY_PERFECT = re.compile(r"\b(?:has|have|had)\s+(?=\w+ed\b|chosen\b|picked\b|gone\b|made\b|taken\b)")
_KEY_LEAD = re.compile(r"^(?:decision|decided|todo|note|update|fyi|决定|待办)\s*[:：-]\s*", re.IGNORECASE)


class Similarity:
    """Compares texts with memory lines for one engine."""

    def __init__(self, engine: Engine, reader: Reader):
        self.engine = engine
        self.reader = reader

    # ----- finding lines -------------------------------------------------------------------
    def matching_lines(self, text: str, limit: int, include_private: bool = True,
                       scopes: ScopeFilter | None = None) -> list[MemoryLine]:
        """Lines of the best-matching chunks, ranked by their own similarity to ``text``."""
        return self.rank_lines(text, self.candidate_lines(text, include_private, scopes), limit)

    def candidate_lines(self, text: str, include_private: bool = True,
                        scopes: ScopeFilter | None = None) -> list[MemoryLine]:
        """The non-blank, non-heading lines of the chunks that best match ``text`` (in ``scopes``: None, all)."""
        request = SearchRequest(text, max_results=CANDIDATE_CHUNKS, min_score=0.0, include_private=include_private,
                                scopes=scopes)
        hits = self.engine.search(request)
        return [MemoryLine(hit.path, number, raw) for hit, number, raw in self.hit_lines(hits)
                if raw.strip() and not raw.strip().startswith("#")]

    def hit_lines(self, hits: list[SearchHit], skip: set[tuple[str, int]] | None = None,
                  ) -> list[tuple[SearchHit, int, str]]:
        """Each distinct (hit, line number, line text) the hits cover, reading every file once."""
        seen = set(skip or ())
        files: dict[str, list[str]] = {}
        out: list[tuple[SearchHit, int, str]] = []
        for hit in hits:
            if hit.path not in files:
                files[hit.path] = self.reader.file_lines(hit.path)
            file_lines = files[hit.path]
            # The whole chunk, not only the lines its citation narrows to: a near-duplicate
            # may sit anywhere in it.
            for number in range(hit.chunk_start_line, min(hit.chunk_end_line, len(file_lines)) + 1):
                if (hit.path, number) not in seen:
                    seen.add((hit.path, number))
                    out.append((hit, number, file_lines[number - 1].rstrip("\r")))
        return out

    def rank_lines(self, text: str, lines: list[MemoryLine], limit: int) -> list[MemoryLine]:
        if not lines:
            return []
        scores = self.exact_first(text, [memory_body(m.text) for m in lines])
        ranked = sorted(zip(scores, lines, strict=True), key=lambda pair: pair[0], reverse=True)[:limit]
        return [MemoryLine(m.path, m.line, m.text, round(float(s), 4)) for s, m in ranked]

    # ----- duplicates ----------------------------------------------------------------------
    def find_duplicates(self, texts: list[str], include_private: list[bool] | None = None,
                        scopes: list[ScopeFilter | None] | None = None) -> list[MemoryLine | None]:
        """For each text, the memory line it nearly repeats (similarity >= dedupe_threshold), or None.

        The texts are checked together: one embedding call for their searches, one for the texts
        and one for the candidate lines those searches bring back, instead of three per text. A
        group of queued stores (or a capture's facts) costs a fraction of checking each alone.
        ``include_private[i]`` False: text i is only compared with lines its caller may read;
        ``scopes[i]``: only with lines of those scopes (``scopes.seen_from`` of where it is written).
        """
        try:
            self.engine.searcher.embed_queries_ahead(texts)  # does nothing for a lone text
        except EmbeddingError:
            pass  # each search falls back to keywords on its own and notes the degradation
        visible = include_private or [True] * len(texts)
        # include_private comes from the caller: as before, a shorter list checks fewer texts
        where = scopes or [None] * len(texts)
        candidates = [self.candidate_lines(text, private, scope)
                      for text, private, scope in zip(texts, visible, where, strict=False)]
        threshold = self.engine.settings.capture.dedupe_threshold
        candidates = [self._may_repeat(text, lines, threshold, lambda m: m.text)
                      for text, lines in zip(texts, candidates, strict=False)]
        if len(texts) > 1:  # a lone text's comparison embeds its candidate lines in one call anyway
            self._embed_ahead(list(dict.fromkeys(
                [*texts, *(memory_body(m.text) for lines in candidates for m in lines)])))
        found: list[MemoryLine | None] = []
        for text, lines in zip(texts, candidates, strict=False):
            best = self._closest_line(text, lines)
            found.append(best if best is not None and best.score >= threshold else None)
        return found

    def is_duplicate(self, text: str, others: list[str]) -> int | None:
        """The index of the first of ``others`` that ``text`` nearly repeats, or None."""
        threshold = self.engine.settings.capture.dedupe_threshold
        places = self._may_repeat(text, list(range(len(others))), threshold, lambda i: others[i])
        if not places:
            return None
        scores = self.duplicate_scores(text, [others[i] for i in places])
        best = max(range(len(places)), key=lambda i: scores[i])
        return places[best] if scores[best] >= threshold else None

    def _may_repeat(self, text: str, items: list[T], threshold: float, line_of: Callable[[T], str]) -> list[T]:
        """The items whose line could be a duplicate of ``text`` at ``threshold``: all of them below
        ``WORDS_SUFFICE_FROM``; from it, those sharing ``MIN_SHARED_WORDS`` of their words with the
        text, saying the same in capture's words, or with no words to compare (emoji)."""
        if threshold < WORDS_SUFFICE_FROM or not items:
            return items
        words = set(keyword_tokens(text.lower()))
        key = statement_key(text)
        kept = []
        for item in items:
            line = line_of(item)
            other = set(keyword_tokens(memory_body(line).lower()))
            if (not words or not other or jaccard(words, other) >= MIN_SHARED_WORDS
                    or (key and statement_key(line) == key)):
                kept.append(item)
        return kept

    def duplicate_scores(self, text: str, others: list[str], keyed: list[str] | None = None) -> list[float]:
        """``exact_first``, with 1.0 also where both say the same thing in capture's words (``statement_key``).

        ``keyed``: the whole lines ``others`` are the bodies of, when known (their learned dates
        date the relative days in them).
        """
        key = statement_key(text)
        scores = self.exact_first(text, others)
        return [1.0 if key and statement_key(line) == key else score
                for line, score in zip(keyed or others, scores, strict=True)]

    def _closest_line(self, text: str, lines: list[MemoryLine]) -> MemoryLine | None:
        """The line ``text`` is closest to by ``duplicate_scores``, with its score."""
        if not lines:
            return None
        scores = self.duplicate_scores(text, [memory_body(m.text) for m in lines], [m.text for m in lines])
        best = max(range(len(lines)), key=lambda i: scores[i])
        line = lines[best]
        return MemoryLine(line.path, line.line, line.text, round(float(scores[best]), 4))

    # ----- scores --------------------------------------------------------------------------
    def similarities(self, text: str, others: list[str]) -> list[float]:
        """Cosine similarity of embeddings when an embedder is ready, else token overlap."""
        if self.engine.embedder is not None:
            try:
                vectors = self._embed_cached([text, *others])
                return [float(v) for v in vectors[1:] @ vectors[0]]
            except EmbeddingError as exc:
                self.engine.note_degraded(f"embedding failed: {exc}")
        query = set(keyword_tokens(text.lower()))
        return [jaccard(query, set(keyword_tokens(o.lower()))) for o in others]

    def exact_first(self, text: str, others: list[str]) -> list[float]:
        """``similarities``, with 1.0 where case, spacing and punctuation are all that differ."""
        key = _letters(text)
        scores = self.similarities(text, others)
        return [1.0 if _letters(o) == key else s for o, s in zip(others, scores, strict=True)]

    def _embed_ahead(self, texts: list[str]) -> None:
        """Embed many short texts in one call, so each comparison after it finds them cached."""
        if self.engine.embedder is not None and len(texts) > 1:
            try:
                self._embed_cached(texts)
            except EmbeddingError:
                pass  # each comparison falls back on its own and notes the degradation

    def _embed_cached(self, texts: list[str]) -> np.ndarray:
        """Embeddings of short texts (memory lines), through the embedding cache."""
        assert self.engine.embedder is not None
        # Local only: these lines come from any file, private ones too (embedding/cache.py).
        return embed_through_cache(self.engine.embedder, self.engine.cache, texts, "line", local_only=True)


def statement_key(line: str, today: dt.date | None = None) -> str:
    """What a memory line says, in a form that ignores how capture rewrote it.

    The line without bullet, category tag and learned date, put in capture's words
    (``capture.rules.captured_form``: third person, verbs in agreement, markers and fillers
    dropped, relative days made dates as of the day the line was learned, else ``today``); then
    the subject's article ("the user" and 用户 are one, "the team" and 团队 another), "has"
    before a past participle, a "Decision:" lead-in, case, spacing and punctuation set aside.
    Empty when nothing is left.
    """
    return _statement_key(memory_body(line), _learned_day(line) or today or dt.date.today())


def _learned_day(line: str) -> dt.date | None:
    """The day a captured line was learned ("... (2026-11-26)"), when it says one."""
    learned = LEARNED_DATE.search(line.strip())
    try:
        return dt.date.fromisoformat(learned.group(1)) if learned else None
    except ValueError:
        return None  # "(2026-13-45)": not a day


@lru_cache(maxsize=4096)
def _statement_key(body: str, day: dt.date) -> str:
    form = _KEY_LEAD.sub("", captured_form(body, day).casefold().strip())
    form = _KEY_PERFECT.sub("", _KEY_SUBJECT.sub(_subject_word, form))
    return _NOT_LETTER_OR_DIGIT.sub("", form)


def _subject_word(match: re.Match[str]) -> str:
    return " team " if match.group(1) == "team" or match.group(3) else " user "


def _letters(text: str) -> str:
    return _NOT_LETTER_OR_DIGIT.sub("", memory_body(text).casefold())
