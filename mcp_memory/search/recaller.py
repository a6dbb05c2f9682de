"""Auto-recall: which memories to show a model before it answers a prompt.

Candidates come from search (or, for a hook with no server running, from the keyword index
and the files alone, without loading the vector index or the model). The gate in
``core/recall.py`` keeps those related to the prompt in absolute terms; a keyword match whose
chunk of unrelated bullets reads far from the prompt gets a second look, by the cosine of the
memory that matched. A prompt that names a day keeps that day's notes. A session's first recall
adds the user's standing rules closest to the prompt (the primer), and memories shown in the
session's last few turns are left out (the ledger remembers them). ``recall_focus.py`` cuts
each hit down to the memories that matched, without the product's bookkeeping; ``core/recall.py``
formats the block.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import replace
from itertools import islice

from mcp_memory.capture import is_memory_run, strip_recall_blocks
from mcp_memory.core import updates
from mcp_memory.core.analysis import words_among
from mcp_memory.core.chunking import Chunk, chunk_markdown
from mcp_memory.core.hits import SearchHit
from mcp_memory.core.ledger import Ledger, clean_key
from mcp_memory.core.memory_ids import memory_body, retired_by
from mcp_memory.core.periods import Period, date_closeness
from mcp_memory.core.recall import close_to_best, fit_to_budget, is_relevant, recall_key
from mcp_memory.core.requests import SearchRequest
from mcp_memory.core.scopes import ScopeFilter
from mcp_memory.errors import PathError
from mcp_memory.index.engine import Engine
from mcp_memory.index.hybrid import HybridSearcher, dates_named
from mcp_memory.index.keywords import KeywordIndex
from mcp_memory.index.similarity import Similarity
from mcp_memory.index.snapshot import SearchSnapshot
from mcp_memory.index.state import IndexState
from mcp_memory.index.visible_keywords import visible_in_index
from mcp_memory.safety import looks_like_injection, redact_secrets
from mcp_memory.search.recall_focus import focus, memory_terms

PRIMER_MARGIN = 0.05  # standing rules may sit this far below the relevance floor (bench/recall.py)
# One memory's cosine runs higher than its chunk's: a memory turned away by its chunk's cosine must
# clear the floor by this much on its own (bench/conversational_recall.py, bench/updates.py)
MEMORY_FLOOR_MARGIN = 0.05
# A memory that shares fewer of the prompt's words than a keyword match needs (a name, one noun of
# several) must be closer still: on the dialogues, unrelated prompts came in on one shared word by
# memories at 0.30-0.47 with no more than MEMORY_FLOOR_MARGIN (bench/conversational_recall.py).
WEAK_MATCH_MARGIN = 0.10
_STANDING = re.compile(r"^\s*[-*+]\s+\[(?:preference|decision)\]\s", re.IGNORECASE)


class Recaller:
    def __init__(self, engine: Engine, similarity: Similarity, ledger: Callable[[], Ledger]):
        self.engine = engine
        self.similarity = similarity
        self._ledger = ledger

    def recall_hits(self, prompt: str, session_key: str | None = None, max_items: int | None = None,
                    budget_chars: int | None = None, min_score: float | None = None, keywords_only: bool = False,
                    include_private: bool = True, scopes: ScopeFilter | None = None,
                    prompt_id: str | None = None) -> list[SearchHit]:
        """The memories ``recall`` shows for a prompt (within the budget), in order; [] when none.

        ``scopes``: memories of these scopes and the global memory only (None: every file).
        ``prompt_id``: names the prompt, so a second answer to it counts as the same turn.

        ``keywords_only`` answers from the keyword index and the files alone: the path a hook
        takes when no server is running to answer it. With a ``session_key``, memories injected
        in that session's last ``repeat_turns`` recalls are left out: the model still has them.
        """
        r = self.engine.settings.recall
        prompt = strip_recall_blocks(prompt or "")
        if is_memory_run(session_key) or len(prompt.strip()) < max(1, r.min_prompt_chars):
            return []
        max_items = r.max_items if max_items is None else max(1, int(max_items))
        budget = r.budget_chars if budget_chars is None else max(100, int(budget_chars))
        candidates, floor = self._candidates(prompt, max_items * 2 + r.primer_items * 2,
                                             r.min_score if min_score is None else min_score,
                                             keywords_only, include_private, scopes)
        # A memory the sleep cycle retired (superseded, or said again elsewhere), or that a later
        # memory among the hits updates (core/updates.py), is never recalled: the later one, when
        # among the candidates, takes its place.
        # The days the prompt names ("what did I see on May 4th?"): their memories are its topic.
        periods = [period for period, _ in dates_named(prompt, dt.date.today())]
        topic_floors = self._topic_floors(prompt, candidates, keywords_only, periods)
        passed = [is_relevant(h, floor, r.min_keyword_coverage if h.vector_similarity is not None
                              else r.keyword_only_coverage, topic)
                  for h, topic in zip(candidates, topic_floors, strict=True)]
        second = self._close_memories(prompt, candidates, passed, floor, r.keyword_only_coverage,
                                      r.min_keyword_coverage, topic_floors)
        relevant = [h for i, h in enumerate(candidates) if passed[i] or i in second]
        stale = {h.id for h in candidates if h.replaced_by}
        candidates = [h for h in candidates if not h.replaced_by]
        current = {h.id: h for h in reversed(candidates)}  # the first hit of each memory
        hits: list[SearchHit] = []
        for found in relevant:
            hit = current.get(found.replaced_by) if found.replaced_by else found
            if hit is not None and hit not in hits:
                hits.append(hit)
        hits = hits[: max_items * 2]
        # A later memory shown in place of a relevant earlier one holds the place that one earned.
        updates_shown = {found.replaced_by for found in relevant if found.replaced_by}
        # The matched memories of each hit, not its chunk; the product's own bookkeeping left out.
        hits, stale_now, updated = self._settled(focus(hits, prompt, self.engine.naming), candidates, prompt, stale)
        stale |= stale_now
        updates_shown |= updated
        # A memory of the day the prompt names stays as well: the prompt is about that day, however
        # close the other days' memories are to its words.
        named_day = {h.id for h in hits if h.id and periods and date_closeness(periods, h.date) >= 1.0}
        hits = close_to_best(hits, r.similarity_margin, r.min_keyword_coverage, keep=updates_shown | named_day,
                             score_ratio=r.min_score_ratio)
        session = clean_key(session_key)
        ledger = self._ledger()
        turn = ledger.next_turn(session, prompt_id) if session else 0
        if turn == 1 and r.primer_items and not keywords_only:
            hits = self._standing_rules(prompt, candidates, hits, r.primer_items, stale) + hits
        if session and r.repeat_turns > 0:
            recent = ledger.recalled_since(session, turn - r.repeat_turns)
            hits = [h for h in hits if recall_key(h) not in recent]
        hits = fit_to_budget(list(islice(filter(None, map(_without_instructions_or_secrets, hits)), max_items)),
                             budget)
        if session:
            ledger.record_recall(session, turn, [recall_key(h) for h in hits])
        return hits

    def _topic_floors(self, prompt: str, candidates: list[SearchHit], keywords_only: bool,
                      periods: list[Period]) -> list[float | None]:
        """The cosine each candidate must reach for its keyword match to count as the prompt's topic:
        the engine's ``topic_floor``, or the relevance floor when the candidate shares one word
        with the prompt and is not of a day the prompt names (``periods``). That word (a name,
        "coffee", the one noun of a short prompt) may carry half of the prompt's keyword weight and
        still say little of what it is about: among the sessions of LoCoMo, unrelated prompts came
        in on one shared word (docs/benchmarks.md). None each (keywords alone decide) without an
        embedder."""
        topic_floor = None if keywords_only else self.engine.topic_floor()
        if topic_floor is None:
            return [None] * len(candidates)
        one_word_floor = max(topic_floor, self.engine.relevance_floor() or topic_floor)
        asked = frozenset(self.engine.searcher.analyzer.query_terms(prompt))
        return [one_word_floor if words_among(asked & memory_terms(h.snippet)) <= 1
                and date_closeness(periods, h.date) < 1.0 else topic_floor for h in candidates]

    def _close_memories(self, prompt: str, candidates: list[SearchHit], passed: list[bool], floor: float | None,
                        coverage: float, named_coverage: float, topic_floors: list[float | None]) -> set[int]:
        """Indices of the candidates the gate turned away that deserve a second look, and pass it:
        a keyword match whose chunk reads far from the prompt, while the memory that matched is
        close to it on its own. A daily log's chunk holds many unrelated bullets, whose meanings
        dilute its vector (a bullet of a day's log at 0.63 to its question, its chunk at 0.21).

        The memory faces the gate its chunk faced, by its own cosine (less ``MEMORY_FLOOR_MARGIN``
        in its favour): a match on ``named_coverage`` of the prompt's words needs its topic floor,
        one on ``coverage`` the similarity floor, one on fewer of its words (a name, one noun of
        several) the similarity floor plus ``WEAK_MATCH_MARGIN``: few words say little, and a
        short memory comes close to an unrelated prompt by chance more often than a chunk does."""
        if floor is None:
            return set()
        doubtful = [i for i, h in enumerate(candidates) if not passed[i] and h.vector_similarity is not None
                    and h.keyword_coverage > 0 and h.vector_similarity < floor]
        if not doubtful:
            return set()
        texts = []
        for i in doubtful:
            shown = focus([candidates[i]], prompt, self.engine.naming)
            texts.append(memory_body(shown[0].snippet) if shown else candidates[i].snippet)
        scores = self.similarity.similarities(prompt, texts)
        return {i for i, score in zip(doubtful, scores, strict=True)
                if score >= _gate_faced(candidates[i], floor, coverage, named_coverage, topic_floors[i])
                + MEMORY_FLOOR_MARGIN}

    def _settled(self, shown: list[SearchHit], candidates: list[SearchHit], prompt: str,
                 stale: set[str]) -> tuple[list[SearchHit], set[str], set[str]]:
        """The memories shown (but ``stale`` ones), each that a later one among them or the other
        candidates updates (``core/updates.py``) replaced by that one: a chunk's memories are
        compared one by one here. Also the ids of the memories found stale here, and of the later
        ones that replaced them."""
        naming = self.engine.naming
        stale_now: set[str] = set()
        updated: set[str] = set()
        shown = [h for h in shown if h.id not in stale]
        ids = {h.id for h in shown}
        reserve = [h for h in candidates if h.id not in ids]
        settled = updates.settle(shown + reserve, lambda hit: updates.statement_of(hit, naming), len(shown),
                                 same_fact=self.engine.searcher.same_fact if self.engine.is_open else None)
        out = []
        for hit in settled:
            if hit.replaced_by:
                stale_now.add(hit.id)
                updated.add(hit.replaced_by)
            elif hit.id in ids:
                out.append(hit)
            else:  # a later memory come in from the candidates: shown as its memory, not its chunk
                out.extend([h for h in focus([hit], prompt, naming) if h.id == hit.id][:1] or [hit])
        return out, stale_now, updated

    def _candidates(self, prompt: str, pool: int, threshold: float, keywords_only: bool,
                    include_private: bool, scopes: ScopeFilter | None = None) -> tuple[list[SearchHit], float | None]:
        """Search hits for the prompt, and the similarity floor of the gate (None by keywords)."""
        if keywords_only:
            hits = self._keyword_hits(prompt, pool, threshold, scopes, include_private)
            if not include_private:
                hits = [h for h in hits if not self.engine.privacy.is_private(h.path)]
            return hits, None
        request = SearchRequest(prompt, max_results=pool, min_score=threshold, include_private=include_private,
                                scopes=scopes)
        return self.engine.search(request), self.engine.recall_floor()

    def _standing_rules(self, prompt: str, candidates: list[SearchHit], gated: list[SearchHit],
                        limit: int, stale: set[str]) -> list[SearchHit]:
        """The [preference] and [decision] bullets of the candidates closest to the prompt, one line each.

        Lines already shown by a gated hit, and ``stale`` memories (updated by a later one), are
        left out. A line must still resemble the prompt (the relevance floor less ``PRIMER_MARGIN``,
        compared line by line rather than chunk by chunk), so an unrelated prompt primes nothing.
        """
        shown = {(h.path, n) for h in gated for n in range(h.start_line, h.end_line + 1)}
        lines = [(hit, number, raw.strip()) for hit, number, raw in self.similarity.hit_lines(candidates, skip=shown)
                 if _STANDING.match(raw) and not retired_by(raw)
                 and not (stale and self._line_id(hit.path, number) in stale)]
        floor = self.engine.relevance_floor()
        if not lines or floor is None:
            return []
        scores = self.similarity.similarities(prompt, [memory_body(text) for _, _, text in lines])
        ranked = sorted(zip(scores, lines, strict=True), key=lambda pair: pair[0], reverse=True)
        return [
            SearchHit(path=hit.path, start_line=number, end_line=number, score=round(float(score), 4), snippet=text,
                      source=hit.source, date=hit.date, keyword_coverage=0.0, vector_similarity=round(float(score), 4),
                      id=self._line_id(hit.path, number))
            for score, (hit, number, text) in ranked[:limit] if score >= floor - PRIMER_MARGIN
        ]

    def _line_id(self, path: str, line: int) -> str:
        found = self.engine.naming.unit_at(path, line)
        return found.id if found else ""

    def _indexed_paths(self) -> list[str]:
        """Every indexed file's path, from the state database (the engine may not be open: a hook)."""
        state = IndexState(self.engine.settings.index_dir / "state.sqlite")
        try:
            return list(state.files())
        finally:
            state.close()

    def _keyword_hits(self, prompt: str, max_results: int, min_score: float,
                      scopes: ScopeFilter | None = None, include_private: bool = True) -> list[SearchHit]:
        """Keyword search whose hits are re-chunked from the files as they are now.

        A chunk whose file changed since it was indexed no longer has the same id, so it is
        left out: a citation never points at lines that hold other text. Nothing here opens
        the vector index or loads the model.
        """
        settings = self.engine.settings
        folder = settings.index_dir / "tantivy"
        if not folder.is_dir():
            return []
        keywords = KeywordIndex(folder)
        # A caller who may not see every file gets candidates among those it may see only
        # (index/visible_keywords.py): the others' words must not decide which come in.
        confined = scopes if scopes is not None and scopes.confined else None
        hidden = None if include_private else self.engine.privacy
        visible = (visible_in_index(keywords, self._indexed_paths(), hidden, confined)
                   if hidden is not None or confined is not None else None)
        found = keywords.search(prompt, max_results * settings.search.candidate_multiplier, None, None, None,
                                visible.excluded if visible is not None else (), visible)
        wanted: dict[str, set[str]] = {}
        for hit in found.hits:
            if scopes is None or scopes.covers(hit.path):
                wanted.setdefault(hit.path, set()).add(hit.id)
        chunks: list[Chunk] = []
        c = settings.chunking
        for path, ids in wanted.items():
            try:
                file = self.engine.workspace.resolve(path)
                text = self.engine.workspace.read_memory(file)
            except (PathError, OSError, UnicodeDecodeError, ValueError):
                continue
            pieces = chunk_markdown(text, file.rel_path, file.date, c.tokens, c.overlap)
            chunks.extend(ch for ch in pieces if ch.id in ids)
        searcher = HybridSearcher(keywords, None, settings.search, self.engine.naming, self.engine.utility,
                                  visible=visible)
        searcher.set_snapshot(SearchSnapshot.from_chunks(chunks))
        # Private files are left out of the ranking itself, not only of its result: a private
        # memory must not update (and so hide) a shared one that a shared caller is shown.
        return searcher.search(SearchRequest(prompt, max_results=max_results, min_score=min_score, scopes=scopes),
                               hidden=None if include_private else self.engine.privacy)


def _gate_faced(hit: SearchHit, floor: float, coverage: float, named_coverage: float,
                topic_floor: float | None) -> float:
    """The cosine ``hit`` had to reach: its topic floor when its keywords cover ``named_coverage``
    of the prompt's (the prompt names it), the similarity ``floor`` when they cover ``coverage``,
    and that floor plus ``WEAK_MATCH_MARGIN`` when they cover less."""
    if topic_floor is not None and hit.keyword_coverage >= named_coverage:
        return topic_floor
    return floor if hit.keyword_coverage >= coverage else floor + WEAK_MATCH_MARGIN


def _without_instructions_or_secrets(hit: SearchHit) -> SearchHit | None:
    """``hit`` as recall may show it unasked: secrets redacted, and without the lines that read as
    instructions to a model; None when nothing is left.

    What the product writes passed these filters already, but a file edited by hand, a line a
    teammate's sync brought in or a document of an extra path never did, and recall puts its text
    before the model's next answer without being asked. A search, which the model asks for, still
    returns the lines as they are.
    """
    kept = [line for line in hit.snippet.split("\n") if not line.strip() or not _instructions(line)]
    if _instructions(" ".join(kept)):  # instructions spread over lines that pass one by one
        return None
    shown = redact_secrets("\n".join(kept))  # the whole, so a key broken over two lines goes whole
    if not shown.strip():
        return None
    return hit if shown == hit.snippet else replace(hit, snippet=shown)


# The recall block's own tags: written in a note (about this very product, say) they are escaped
# like any markup (core/recall.py) and cannot close the block, so they alone make no line instructions.
_BLOCK_TAGS = re.compile(r"</?\s*(?:relevant-memories|memory)\b[^>]*>", re.IGNORECASE)


def _instructions(text: str) -> bool:
    return looks_like_injection(_BLOCK_TAGS.sub(" ", text))
