"""``Memory``: the one façade that the command line, the MCP server and the hooks call.

It wires the parts of one workspace. Its methods are the core (index, search, get, store, capture, recall,
status); every other feature is an attribute, called directly (``memory.experience.add(...)``):

* ``engine``: ``index/engine.py``, the derived index (opened lazily, synced, rebuilt when unreadable);
* ``reader``, ``similarity``: ``core/reading.py`` (files as a caller may see them), ``index/similarity.py``;
* ``editor``, ``line_editor``: ``writes/edits.py`` (store with group commit, forget), ``writes/line_edits.py``;
* ``capture_flow``, ``recaller``: ``writes/capture_flow.py``, ``search/recaller.py`` (what recall shows);
* ``precision``, ``deep``, ``line_vectors``: ``search/precision.py`` (rerankers in ``search/rerank/``),
  ``search/deep.py`` (a second hop through concepts), ``index/line_vectors.py`` (e5 vectors of memory lines);
* ``feedback``, ``utility``: ``experience/feedback.py`` (find by id, reward, penalize), ``core/utility.py``;
* ``episodes``, ``experience``: ``experience/episodes.py`` (one record per session), ``experience/graph.py``
  (cause → action → effect chains in ``memory/experience.md``);
* ``sleep``, ``rescuer``, ``rules``: ``lifecycle/sleep.py`` (the daily upkeep), ``lifecycle/rescue.py`` (what a
  compaction would lose), ``lifecycle/rules.py`` (the rules MEMORY.md pins);
* ``write_log``, ``recall_log``: ``writes/write_log.py``, ``writes/recall_log.py`` (the dashboard's history);
* status, doctor, repair: ``lifecycle/health.py``; ``git_sync``: ``team/git_sync.py``; scopes: ``core/scopes.py``.

A new feature is a module of its own plus an attribute here. Constructing a ``Memory`` is instant; the
first call that needs the index pays for the slow imports.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Callable
from typing import Any

from mcp_memory.capture import Extractor
from mcp_memory.config import Settings
from mcp_memory.core.hits import MemoryLine, SearchAnswer, SearchHit
from mcp_memory.core.ledger import Ledger
from mcp_memory.core.memory_ids import is_memory_id
from mcp_memory.core.reading import FileInfo, FileLines, Reader
from mcp_memory.core.recall import format_recall
from mcp_memory.core.requests import SearchRequest
from mcp_memory.core.scopes import ScopeFilter
from mcp_memory.core.transcripts import Message
from mcp_memory.core.utility import UTILITY_FILE, UtilityStore
from mcp_memory.core.workspace import Workspace
from mcp_memory.errors import MemoryInputError, PathError, SearchError
from mcp_memory.experience.episodes import EpisodeLog
from mcp_memory.experience.feedback import Feedback
from mcp_memory.experience.graph import ExperienceGraph
from mcp_memory.index.doctor import DoctorReport
from mcp_memory.index.engine import CONFIGURED, Engine
from mcp_memory.index.line_vectors import line_vectors_for
from mcp_memory.index.similarity import Similarity
from mcp_memory.index.sync import Progress, SyncReport
from mcp_memory.lifecycle.health import StatusReport, doctor, repair, status_report
from mcp_memory.lifecycle.rescue import Rescuer
from mcp_memory.lifecycle.rules import RulePinning
from mcp_memory.lifecycle.sleep import SleepCycle
from mcp_memory.search.deep import DeepSearch
from mcp_memory.search.precision import PrecisionSearch
from mcp_memory.search.recaller import Recaller
from mcp_memory.search.rerank import Reranker, Rerankers
from mcp_memory.team.git_sync import GitSyncReport, sync_workspace
from mcp_memory.writes.capture_flow import CaptureFlow, CaptureResult
from mcp_memory.writes.edits import Editor, ForgetResult, StoreResult
from mcp_memory.writes.line_edits import LineEditor
from mcp_memory.writes.recall_log import RecallLog
from mcp_memory.writes.write_log import WriteLog, capture_event, store_event

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
        # With the configured models only: a caller passing its own embedder must ask (``line_vectors=True``).
        wanted = embedder is CONFIGURED if line_vectors is None else line_vectors
        self.line_vectors = line_vectors_for(settings, lambda: self.engine.open().cache) if wanted else None
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

    def open(self, warm: bool = False) -> Memory:
        """Open the index; ``warm`` (a server) starts loading the model at once, in the background."""
        self.engine.open(warm=warm)
        return self

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
        if self.line_vectors is not None:
            self.line_vectors.close()
        self.engine.close()

    def __enter__(self) -> Memory:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def sync(self, progress: Progress | None = None, only: set[str] | None = None) -> SyncReport:
        """Bring keyword rows and cached vectors up to date (fast; no new embeddings); ``only``: just these
        workspace paths. Episodes that came to cite a private file then move where only the owner sees them."""
        report = self.engine.sync(progress, only=only)
        try:
            self.episodes.recheck_privacy([*report.added, *report.changed])
        except (OSError, ValueError) as exc:  # never fails a sync; the next one tries again
            log.warning("could not check the episodes' privacy: %s", exc)
        return report

    def catch_up(self) -> SyncReport:
        """Sync before a command reads (``search``, ``recall``), as a server starts: from the saved
        search snapshot first, when it is current, whose row counts spare the sync the chunk table
        (``import lancedb``: about 1.5 s of a command-line search). As in a server, the table itself
        is checked by the first write (``index/vectors.py``, ``counts_hint``); ``sync`` and ``status``
        check it at once."""
        try:
            self.engine.adopt_saved_snapshot()
        except Exception as exc:  # noqa: BLE001 - an optimisation: the sync below recovers or reports it
            log.info("the saved search snapshot is of no use here (%s)", exc)
        return self.sync()

    def git_sync(self) -> GitSyncReport:
        """Commit the memory files, merge the remote's, push; the index takes in what was pulled."""
        return sync_workspace(self.settings, files_lock=self.workspace.locked(),
                              reindex=lambda paths: self.sync(only=paths))

    def backfill(self, progress: Progress | None = None, should_stop: Callable[[], bool] | None = None,
                 wait: float = 0, lines: bool = True) -> int:
        """Embed chunks missing a vector, then (``lines``) memory lines; how many chunks got one (slow, resumable)."""
        done = self.engine.backfill(progress, should_stop, wait=wait)
        if lines:
            self.fill_line_vectors(progress, should_stop)
        return done

    def fill_line_vectors(self, progress: Progress | None = None, should_stop: Callable[[], bool] | None = None) -> int:
        """Embed the memory lines precision search reads (``index/line_vectors.py``); how many were embedded."""
        if self.line_vectors is None:
            return 0
        return self.line_vectors.fill_quietly(self.engine.chunk_texts, self.engine.check_present, should_stop, progress)

    def index(self, progress: Progress | None = None) -> SyncReport:
        """Sync, embed everything that is missing, and save the search snapshot for the next process."""
        report = self.sync(progress)
        self.backfill(progress)
        self.engine.save_snapshot(load=True)
        return report

    def pending_embeddings(self) -> int:
        """Chunks whose vector is not computed yet (found by keywords only until then)."""
        self.engine.open()
        return self.engine.vectors.count_missing_vectors()

    def search(self, request: SearchRequest | str, **options: Any) -> list[SearchHit]:
        """Ranked hits for a ``SearchRequest`` (or a query and ``SearchRequest.of`` options), scored as
        ``index/hybrid.py`` says. ``include_private=False`` leaves out the files of ``privacy.private_paths``."""
        return self.engine.search(SearchRequest.coerce(request, **options))

    def precise_search(self, request: SearchRequest | str, reranker: Reranker | None = None,
                       **options: Any) -> SearchAnswer:
        """Hits of the first stage reordered by a reranker (``reranker``: instead of the configured one)."""
        return self.precision.search(SearchRequest.coerce(request, **options), reranker)

    def deep_search(self, request: SearchRequest | str, **options: Any) -> SearchAnswer:
        """Hits of the query and of the concepts its first hits name (see ``search/deep.py``)."""
        return self.deep.search(SearchRequest.coerce(request, **options))

    def get(self, path: str, from_line: int | None = None, lines: int | None = None,
            include_private: bool = True) -> FileLines:
        """Lines of a memory file, or of the memory a memory id names (1-based ``from_line``; ``lines`` None: all)."""
        if isinstance(path, str) and is_memory_id(path.strip()):
            found = self.feedback.locate(path, include_private)
            path, from_line, lines = found.path, found.start_line, found.end_line - found.start_line + 1
        return self.reader.get(path, from_line, lines, include_private)

    def status(self, include_private: bool = True) -> StatusReport:
        """What the index holds and how healthy it is (``to_dict()``: a reduced view for shared callers)."""
        return status_report(self.engine, self.reader, include_private, self.line_vectors)

    def doctor(self) -> DoctorReport:
        """The index checked against the files; changes nothing."""
        return doctor(self.engine)

    def repair(self, progress: Progress | None = None) -> tuple[DoctorReport, DoctorReport]:
        """Fix what ``doctor`` finds; returns the reports before and after."""
        return repair(self.engine, progress)

    def store(self, text: str, category: str | None = None, evergreen: bool = False, today: dt.date | None = None,
              include_private: bool = True, scope: str | None = None) -> StoreResult:
        """Append one durable memory as a bullet to today's daily file (or MEMORY.md), of ``scope`` (None: the
        global files); see ``writes/edits.py``."""
        result = self.editor.store(text, category, evergreen, today, include_private, scope)
        self.write_log.record(store_event(text, result, include_private))
        return result

    def capture(self, messages: list[Message], session_key: str | None = None, idempotency_key: str | None = None,
                extractor: Extractor | None = None, now: dt.datetime | None = None,
                include_private: bool = True, scope: str | None = None) -> CaptureResult:
        """Write the durable facts of a conversation's latest messages (see ``writes/capture_flow.py``), into
        ``scope``'s daily file (None: the global one)."""
        result = self.capture_flow.capture(messages, session_key, idempotency_key, extractor, now, include_private,
                                           scope)
        self.write_log.record(capture_event(session_key, result, include_private))
        return result

    def recall(self, prompt: str, session_key: str | None = None, max_items: int | None = None,
               budget_chars: int | None = None, min_score: float | None = None, keywords_only: bool = False,
               include_private: bool = True, scopes: ScopeFilter | None = None, prompt_id: str | None = None) -> str:
        """The ``<relevant-memories>`` block for a prompt, or "" when nothing relevant is found; ``scopes``:
        from these scopes and the global memory only (None: every file)."""
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
