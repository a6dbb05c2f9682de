"""``Memory``: the one façade that the command line, the MCP server and the hooks call.

It wires the parts of one workspace and delegates to them; each concern lives in a module of
its own:

* ``index/engine.py``: the derived index, opened lazily, searched, synced, rebuilt when unreadable;
* ``core/reading.py``: lines of a file and the list of files, as a caller may see them;
* ``lifecycle/health.py``: status, doctor and repair;
* ``index/similarity.py``: duplicate checks and line ranking;
* ``writes/edits.py``: store (with group commit) and forget;
* ``writes/capture_flow.py``: from a conversation to captured bullets;
* ``search/recaller.py``: which memories to show before a prompt (``core/recall.py`` formats them);
* ``search/precision.py``: precision search (first stage, then a ``Reranker`` from ``search/rerank/``);
* ``index/line_vectors.py``: multilingual-e5 vectors of memory lines that the local reranker reads;
* ``search/deep.py``: deep search (a second hop through the concepts of the first hits);
* ``experience/feedback.py``: reward and penalize memories by id (``core/utility.py`` keeps what they learn);
* ``experience/episodes.py``: one markdown record per session, merged from the server's and the hook's view;
* ``lifecycle/sleep.py``: the daily upkeep (consolidation, decay, graph upkeep, logs, a note);
* ``experience/graph.py``: cause → action → effect chains in ``memory/experience.md``, deduplicated.
* ``lifecycle/rescue.py``: what a compaction would lose, written to today's file once per compaction.
* ``team/git_sync.py``: the notes committed, merged with other machines' and pushed through git.
* ``writes/line_edits.py``: one line of a file replaced in place (the dashboard's edit action);
* ``writes/write_log.py`` and ``writes/recall_log.py``: what each store, capture and recall did (the dashboard's
  history).
* ``core/scopes.py``: memories of a project or agent in ``memory/scopes/<name>/``; searches cover a scope plus global.

A new feature is a module of its own plus a line here. Constructing a ``Memory`` is instant;
the first call that needs the index pays for the slow imports.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from mcp_memory.capture import Extractor
from mcp_memory.config import Settings
from mcp_memory.core.hits import MemoryLine, SearchAnswer, SearchHit
from mcp_memory.core.ledger import Ledger
from mcp_memory.core.memory_ids import is_memory_id
from mcp_memory.core.memory_lookup import LocatedMemory
from mcp_memory.core.reading import FileInfo, FileLines, Reader
from mcp_memory.core.recall import format_recall
from mcp_memory.core.requests import SearchRequest
from mcp_memory.core.scopes import ScopeFilter
from mcp_memory.core.transcripts import Message
from mcp_memory.core.utility import UTILITY_FILE, DecayReport, UtilityChange, UtilityStore
from mcp_memory.core.workspace import Workspace
from mcp_memory.errors import MemoryInputError, PathError, SearchError, WorkspaceGone
from mcp_memory.experience.episodes import Episode, EpisodeLog
from mcp_memory.experience.feedback import Feedback
from mcp_memory.experience.graph import Chain, ChainMatch, ExperienceGraph, GraphAddResult, GraphSummary
from mcp_memory.index.doctor import DoctorReport
from mcp_memory.index.engine import CONFIGURED, Engine
from mcp_memory.index.line_vectors import LineVectors, line_vectors_for
from mcp_memory.index.similarity import Similarity
from mcp_memory.index.sync import Progress, SyncReport
from mcp_memory.lifecycle.health import StatusReport, doctor, repair, status_report
from mcp_memory.lifecycle.rescue import LastRescue, Rescuer, RescueResult
from mcp_memory.lifecycle.rules import RulePinning, RulesReport
from mcp_memory.lifecycle.sleep import SleepCycle, SleepReport
from mcp_memory.search.deep import DeepSearch
from mcp_memory.search.precision import PrecisionSearch
from mcp_memory.search.recaller import Recaller
from mcp_memory.search.rerank import Reranker, Rerankers
from mcp_memory.team.git_sync import GitSyncReport, sync_workspace
from mcp_memory.writes.capture_flow import CaptureFlow, CaptureResult
from mcp_memory.writes.edits import Editor, ForgetResult, StoreResult
from mcp_memory.writes.line_edits import LineEditor
from mcp_memory.writes.recall_log import RecallEvent, RecallLog
from mcp_memory.writes.write_log import WriteEvent, WriteLog, capture_event, store_event

log = logging.getLogger(__name__)

__all__ = [
    "CaptureResult", "FileInfo", "FileLines", "ForgetResult", "Memory", "MemoryInputError", "MemoryLine", "PathError",
    "SearchAnswer", "SearchError", "SearchHit", "SearchRequest", "StatusReport", "StoreResult", "SyncReport",
]


class Memory:
    """Search and read the memory of one workspace; keep its index in step with the files."""

    def __init__(self, settings: Settings, embedder: Any = CONFIGURED, line_vectors: bool | None = None):
        self.settings = settings
        self.workspace = Workspace(settings.workspace, settings.extra_paths, settings.index_dir / "files.lock",
                                   settings.sessions.paths)
        self.utility = UtilityStore(settings.workspace / UTILITY_FILE, self.workspace.locked, settings.utility.weight,
                                    settings.utility.half_life_days)
        self.engine = Engine(settings, self.workspace, embedder, self.utility)
        self.privacy = self.engine.privacy
        self.reader = Reader(self.workspace, self.privacy)
        self.similarity = Similarity(self.engine, self.reader)
        self.editor = Editor(self.engine, self.reader, self.similarity)
        self.capture_flow = CaptureFlow(self.engine, self.similarity, self.editor, lambda: self.ledger)
        self.recaller = Recaller(self.engine, self.similarity, lambda: self.ledger)
        # Line vectors come with the configured models; a caller that passes its own embedder
        # (a test, a benchmark) gets none unless it asks (``line_vectors=True``).
        wanted = embedder is CONFIGURED if line_vectors is None else line_vectors
        self.line_vectors: LineVectors | None = (
            line_vectors_for(settings, lambda: self.engine.open().cache) if wanted else None)
        self.rerankers = Rerankers(settings, self.engine, self.line_vectors)
        self.precision = PrecisionSearch(self.engine, settings, self.rerankers.local, self.rerankers.configured)
        self.deep = DeepSearch(self.engine, settings, lambda: self.precision, self.rerankers.local)
        self.feedback = Feedback(self.reader, self.engine.naming, self.utility)
        self.experience = ExperienceGraph(self.engine, self.reader, self.similarity, self.editor)
        self.episodes = EpisodeLog(self.engine, self.reader, self.editor)
        self.rescuer = Rescuer(self.engine, self.similarity, self.editor, lambda: self.ledger)
        self.rules = RulePinning(settings, self.reader, lambda: self.ledger)
        self.sleep = SleepCycle(self.engine, self.similarity, self.editor, self.utility, lambda: self.ledger, settings)
        self.line_editor = LineEditor(self.editor, self.reader)
        self.write_log = WriteLog(settings.index_dir / "activity.sqlite")
        self.recall_log = RecallLog(settings.index_dir / "activity.sqlite")
        self._ledger: Ledger | None = None
        self._ledger_lock = threading.Lock()

    # ----- lifecycle -----------------------------------------------------------------------
    def open(self, warm: bool = False) -> Memory:
        """Open the index; ``warm`` (a server) starts loading the model at once, in the background."""
        self.engine.open(warm=warm)
        return self

    def warm_up(self) -> None:
        """Pay one-time costs now rather than on the first search (model weights, snapshot)."""
        self.engine.warm_up()

    @property
    def ledger(self) -> Ledger:
        """Idempotency keys and recall history (opened on first use, without the index)."""
        with self._ledger_lock:
            if self._ledger is None:
                self._ledger = Ledger(self.settings.index_dir / "ledger.sqlite")
            return self._ledger

    def close(self) -> None:
        with self._ledger_lock:
            if self._ledger is not None:
                self._ledger.close()
                self._ledger = None
        self.write_log.close()
        self.recall_log.close()
        self.rerankers.close()
        self.engine.close()

    def __enter__(self) -> Memory:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----- indexing ------------------------------------------------------------------------
    def sync(self, progress: Progress | None = None, only: set[str] | None = None) -> SyncReport:
        """Bring keyword rows and cached vectors up to date (fast; no new embeddings).

        ``only``: just these workspace-relative paths (files changed by a known edit or a pull).
        Episodes that came to cite a private file are then moved where only the owner sees them.
        """
        report = self.engine.sync(progress, only=only)
        try:
            self.episodes.recheck_privacy([*report.added, *report.changed])
        except (OSError, ValueError) as exc:  # never fails a sync; the next one tries again
            log.warning("could not check the episodes' privacy: %s", exc)
        return report

    def git_sync(self) -> GitSyncReport:
        """Commit the memory files, merge the remote's, push; the index takes in what was pulled
        (``team/git_sync.py``)."""
        return sync_workspace(self.settings, files_lock=self.workspace.locked(),
                              reindex=lambda paths: self.sync(only=paths))

    def backfill(self, progress: Progress | None = None, should_stop: Callable[[], bool] | None = None,
                 wait: float = 0, lines: bool = True) -> int:
        """Embed chunks still missing a vector, then (``lines``) memory lines (slow; resumable; one
        process at a time). Returns how many chunks got a vector."""
        done = self.engine.backfill(progress, should_stop, wait=wait)
        if lines:
            self.fill_line_vectors(progress, should_stop)
        return done

    def fill_line_vectors(self, progress: Progress | None = None, should_stop: Callable[[], bool] | None = None) -> int:
        """Embed the memory lines precision search reads (``index/line_vectors.py``); how many were embedded."""
        if self.line_vectors is None:
            return 0
        try:
            self.engine.check_present()
            return self.line_vectors.fill(self.engine.chunk_texts(), should_stop, progress)
        except WorkspaceGone as exc:
            log.warning("line vectors: %s", exc)
            return 0
        except Exception:  # precision search works without them
            log.exception("embedding memory lines failed")
            return 0

    def index(self, progress: Progress | None = None) -> SyncReport:
        """Sync, then embed everything that is missing."""
        report = self.sync(progress)
        self.backfill(progress)
        return report

    def pending_embeddings(self) -> int:
        """Chunks whose vector is not computed yet (found by keywords only until then)."""
        self.engine.open()
        return self.engine.vectors.count_missing_vectors()

    # ----- reading -------------------------------------------------------------------------
    def search(self, request: SearchRequest | str, **options: Any) -> list[SearchHit]:
        """Ranked hits for a ``SearchRequest`` (or a query and ``SearchRequest.of`` options).

        See ``index/hybrid.py`` for how hits are scored. ``include_private=False`` leaves out the
        files of ``privacy.private_paths``.
        """
        if not isinstance(request, SearchRequest):
            request = SearchRequest.of(request, **options)
        return self.engine.search(request)

    def precise_search(self, request: SearchRequest | str, reranker: Reranker | None = None,
                       **options: Any) -> SearchAnswer:
        """Hits of the first stage reordered by a reranker (``reranker``: instead of the configured one)."""
        if not isinstance(request, SearchRequest):
            request = SearchRequest.of(request, **options)
        return self.precision.search(request, reranker)

    def deep_search(self, request: SearchRequest | str, **options: Any) -> SearchAnswer:
        """Hits of the query and of the concepts its first hits name (see ``search/deep.py``)."""
        if not isinstance(request, SearchRequest):
            request = SearchRequest.of(request, **options)
        return self.deep.search(request)

    def get(self, path: str, from_line: int | None = None, lines: int | None = None,
            include_private: bool = True) -> FileLines:
        """Lines of one memory file (1-based ``from_line``; all lines when ``lines`` is None).

        ``path`` may be a memory id instead: the lines of that memory, wherever it is now.
        """
        if isinstance(path, str) and is_memory_id(path.strip()):
            found = self.feedback.locate(path, include_private)
            path, from_line, lines = found.path, found.start_line, found.end_line - found.start_line + 1
        return self.reader.get(path, from_line, lines, include_private)

    def list_files(self, include_private: bool = True) -> list[FileInfo]:
        """Every memory file with its size and date."""
        return self.reader.list_files(include_private)

    # ----- health --------------------------------------------------------------------------
    def status(self, include_private: bool = True) -> StatusReport:
        """What the index holds and how healthy it is (``to_dict()``: a reduced view for shared callers)."""
        report = status_report(self.engine, self.reader, include_private)
        if self.line_vectors is None or not include_private:
            return report
        coverage = self.line_vectors.coverage(self.engine.chunk_texts, self.engine.state.generation)
        return replace(report, line_vectors=coverage)

    def doctor(self) -> DoctorReport:
        """The index checked against the files; changes nothing."""
        return doctor(self.engine)

    def repair(self, progress: Progress | None = None) -> tuple[DoctorReport, DoctorReport]:
        """Fix what ``doctor`` finds; returns the reports before and after."""
        return repair(self.engine, progress)

    # ----- writing -------------------------------------------------------------------------
    def store(self, text: str, category: str | None = None, evergreen: bool = False, today: dt.date | None = None,
              include_private: bool = True, scope: str | None = None) -> StoreResult:
        """Append one durable memory as a bullet to today's daily file (or MEMORY.md); see ``writes/edits.py``.

        ``scope``: into that scope's files (``core/scopes.py``); None: the global ones."""
        result = self.editor.store(text, category, evergreen, today, include_private, scope)
        self.write_log.record(store_event(text, result, include_private))
        return result

    def forget(self, query: str | None = None, path: str | None = None, line: int | None = None,
               confirm: bool = False, include_private: bool = True,
               scopes: ScopeFilter | None = None) -> ForgetResult:
        """Find memories to remove (among ``scopes``); remove one when it is certain which (see ``writes/edits.py``)."""
        return self.editor.forget(query, path, line, confirm, include_private, scopes)

    def capture(self, messages: list[Message], session_key: str | None = None, idempotency_key: str | None = None,
                extractor: Extractor | None = None, now: dt.datetime | None = None,
                include_private: bool = True, scope: str | None = None) -> CaptureResult:
        """Write the durable facts of a conversation's latest messages (see ``writes/capture_flow.py``), into
        ``scope``'s daily file (None: the global one)."""
        result = self.capture_flow.capture(messages, session_key, idempotency_key, extractor, now, include_private,
                                           scope)
        self.write_log.record(capture_event(session_key, result, include_private))
        return result

    def edit_line(self, path: str, line: int, expected: str, text: str, include_private: bool = True) -> MemoryLine:
        """Replace one line of a memory file if it still reads ``expected`` (see ``writes/line_edits.py``)."""
        return self.line_editor.replace(path, line, expected, text, include_private)

    def write_history(self, limit: int = 500) -> list[WriteEvent]:
        """The latest stores and captures, newest first, with what each skipped (see ``writes/write_log.py``)."""
        return self.write_log.recent(limit)

    def recall_history(self, limit: int = 500) -> list[RecallEvent]:
        """The latest recalls that injected memories, newest first, with their prompts (see
        ``writes/recall_log.py``)."""
        return self.recall_log.recent(limit)

    # ----- recall --------------------------------------------------------------------------
    def recall(self, prompt: str, session_key: str | None = None, max_items: int | None = None,
               budget_chars: int | None = None, min_score: float | None = None, keywords_only: bool = False,
               include_private: bool = True, scopes: ScopeFilter | None = None, prompt_id: str | None = None) -> str:
        """The ``<relevant-memories>`` block for a prompt, or "" when nothing relevant is found.

        ``scopes``: from these scopes and the global memory only (None: every file)."""
        budget = self.settings.recall.budget_chars if budget_chars is None else max(100, int(budget_chars))
        hits = self.recall_hits(prompt, session_key, max_items, budget, min_score, keywords_only, include_private,
                                scopes, prompt_id)
        return format_recall(hits, budget)

    def recall_hits(self, prompt: str, session_key: str | None = None, max_items: int | None = None,
                    budget_chars: int | None = None, min_score: float | None = None, keywords_only: bool = False,
                    include_private: bool = True, scopes: ScopeFilter | None = None,
                    prompt_id: str | None = None) -> list[SearchHit]:
        """The memories ``recall`` shows for a prompt, in order (see ``search/recaller.py``)."""
        hits = self.recaller.recall_hits(prompt, session_key, max_items, budget_chars, min_score, keywords_only,
                                         include_private, scopes, prompt_id)
        self.recall_log.record(prompt, session_key, hits, include_private)
        return hits

    # ----- utility -------------------------------------------------------------------------
    def find_memory(self, memory_id: str, include_private: bool = True) -> LocatedMemory:
        """Where the memory with this id is written now (``memory_get`` by id); MemoryInputError if nowhere."""
        return self.feedback.locate(memory_id, include_private)

    def find_memories(self, memory_ids: list[str], include_private: bool = True) -> dict[str, LocatedMemory]:
        """Where each of these memories is written now; ids no visible file holds are left out."""
        return self.feedback.locate_many(memory_ids, include_private)

    def utility_values(self) -> dict[str, float]:
        """Every memory id with a learned (non-neutral) utility, in [-1, 1]."""
        return self.utility.values()

    def reward(self, memory_id: str, amount: float = 0.2, include_private: bool = True) -> UtilityChange:
        """Raise the utility of a memory that helped (see ``experience/feedback.py`` and ``core/utility.py``)."""
        return self.feedback.reward(memory_id, amount, include_private)

    def penalize(self, memory_id: str, amount: float = 0.2, include_private: bool = True) -> UtilityChange:
        """Lower the utility of a memory that misled."""
        return self.feedback.penalize(memory_id, amount, include_private)

    def decay_utility(self, now: dt.datetime | None = None) -> DecayReport:
        """Move every utility toward neutral by the time since it changed (the sleep cycle runs this)."""
        return self.utility.decay(now)

    # ----- experience graph ----------------------------------------------------------------
    def graph_add(self, cause: str, action: str, effect: str, outcome: str, tags: list[str] | None = None,
                  include_private: bool = True) -> GraphAddResult:
        """Log a cause → action → effect chain, or count one more sighting of it (see ``experience/graph.py``)."""
        return self.experience.add(cause, action, effect, outcome, tags, include_private)

    def graph_query(self, query: str, outcome_filter: str | None = None, tags: list[str] | None = None,
                    max_results: int = 5, include_private: bool = True) -> list[ChainMatch]:
        """Chains matching a query, best first, filtered by outcome and tags."""
        return self.experience.query(query, outcome_filter, tags, max_results, include_private)

    def graph_summary(self, include_private: bool = True) -> GraphSummary:
        """Totals, frequent patterns, the latest chains and the actions that failed."""
        return self.experience.summary(include_private)

    def graph_chains(self, include_private: bool = True) -> list[Chain]:
        """Every chain of ``memory/experience.md`` in file order (none for a caller that may not see it)."""
        return self.experience.chains(include_private)

    # ----- sleep cycle -----------------------------------------------------------------------
    def sleep_cycle(self, dry_run: bool = False, now: dt.datetime | None = None) -> SleepReport:
        """Consolidate, decay, tidy and leave a note for the next session (see ``lifecycle/sleep.py``)."""
        return self.sleep.run(dry_run, now)

    # ----- episodes ------------------------------------------------------------------------
    def record_episode(self, episode: Episode) -> Episode:
        """Write one session's episode, merged with what else recorded that session (see ``experience/episodes.py``)."""
        return self.episodes.record(episode)

    def list_episodes(self, query: str | None = None, after: str | None = None, before: str | None = None,
                      max_results: int = 20, include_private: bool = True) -> list[Episode]:
        """Episodes newest first, optionally those a search finds and those within YYYY-MM-DD dates."""
        return self.episodes.find(query, after, before, max_results, include_private)

    # ----- compaction rescue ---------------------------------------------------------------
    def rescue(self, source: Any, session_key: str, now: dt.datetime | None = None,
               include_private: bool = True, scope: str | None = None) -> RescueResult:
        """Write what a compaction would lose from a transcript or messages (see ``lifecycle/rescue.py``), into
        ``scope``'s daily file (None: the global one)."""
        return self.rescuer.rescue(source, session_key, now, include_private, scope)

    def last_rescue(self, session_key: str, include_private: bool = True) -> LastRescue | None:
        """What the last compaction of a session rescued, if this caller may see its file."""
        return self.rescuer.last(session_key, include_private)

    # ----- pinned rules --------------------------------------------------------------------
    def pinned_rules(self, include_private: bool = True) -> RulesReport:
        """The rules MEMORY.md pins when ``[rules] pinning`` is on, with warnings (see ``lifecycle/rules.py``)."""
        return self.rules.report(include_private)

    def first_recall_rules(self, session_key: str | None, include_private: bool = True) -> str:
        """The ``<pinned-rules>`` block on a session's first recall, else empty."""
        return self.rules.first_recall_block(session_key, include_private)
