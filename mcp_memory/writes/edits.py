"""Writing memory: store one bullet, forget one line, and keep the index in step.

Every edit appends or removes lines atomically under the workspace lock (``core/workspace.py``),
then syncs the edited file and waits for its new rows' vectors, so a search right after an
edit finds it. Stores that queue behind the edit lock are written as one group: one append
per file, one sync and one embedding pass (group commit). Text is refused when it carries a
secret or reads as instructions to a model, and cleaned of control characters, before
anything is written.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from dataclasses import dataclass

from mcp_memory.core.chunking import chunk_markdown
from mcp_memory.core.hits import MemoryLine
from mcp_memory.core.reading import Reader
from mcp_memory.core.scopes import ScopeError, ScopeFilter, check_name, daily_path, evergreen_path, seen_from
from mcp_memory.core.workspace import read_text
from mcp_memory.embedding import EmbeddingError
from mcp_memory.embedding.cache import embed_kept_private
from mcp_memory.errors import MemoryInputError, PathError
from mcp_memory.index.engine import Engine
from mcp_memory.index.similarity import Similarity
from mcp_memory.safety import clean_memory_text
from mcp_memory.safety.lines import checked_line
from mcp_memory.safety.split_secrets import RECENT as SPLIT_SECRET_MEMORIES
from mcp_memory.safety.split_secrets import completes_secret

MAX_MEMORY_CHARS = 4000
EDIT_EMBED_WAIT = 15.0  # at most this long store/capture wait for their new rows' vectors
FORGET_CANDIDATES = 5
CLEAR_MATCH = 0.5  # forget by query removes the best line only at this similarity ...
CLEAR_MARGIN = 0.15  # ... and this far ahead of the next one


@dataclass(frozen=True)
class StoreResult:
    stored: bool  # False when a near-identical memory already existed
    memory: MemoryLine  # the new line, or the existing near-duplicate


@dataclass(frozen=True)
class ForgetResult:
    removed: MemoryLine | None
    candidates: list[MemoryLine]
    message: str


@dataclass(eq=False)
class _StoreRequest:
    """One ``store`` call waiting to be written, and then its outcome."""

    text: str
    line: str  # the bullet as written
    path: str
    header: str  # for a new file
    include_private: bool
    seen: ScopeFilter  # the memories it is compared with (its scope's and the global ones)
    written_at: int = 0
    duplicate_of: _StoreRequest | None = None
    result: StoreResult | None = None
    error: BaseException | None = None


class Editor:
    """The one writer of memory files in this process (``files.lock`` covers other processes)."""

    def __init__(self, engine: Engine, reader: Reader, similarity: Similarity):
        self.engine = engine
        self.reader = reader
        self.similarity = similarity
        self.lock = threading.RLock()  # one edit at a time per process; files.lock across processes
        self._queue: list[_StoreRequest] = []  # stores waiting for the edit lock (group commit)
        self._queue_lock = threading.Lock()

    # ----- store ---------------------------------------------------------------------------
    def store(self, text: str, category: str | None = None, evergreen: bool = False,
              today: dt.date | None = None, include_private: bool = True, scope: str | None = None) -> StoreResult:
        """Append one durable memory as a bullet to today's daily file (or MEMORY.md).

        ``scope``: into that scope's files (``memory/scopes/<scope>/``) instead of the global ones.
        A near-identical existing memory (similarity >= dedupe_threshold) where the new one would
        be seen is returned instead of writing a duplicate. The index covers the new line before
        this returns.
        """
        request = self._request(text, category, evergreen, today or dt.date.today(), include_private, scope)
        with self._queue_lock:
            self._queue.append(request)
        with self.lock:
            # Group commit: whoever holds the edit lock writes every store queued meanwhile in
            # one append per file, one sync and one embedding pass. A caller whose request a
            # previous holder wrote finds its answer ready.
            if request.result is None and request.error is None:
                with self._queue_lock:
                    batch, self._queue = self._queue, []
                self._write_stores(batch)
        if request.error is not None:
            raise request.error
        assert request.result is not None
        return request.result

    def _request(self, text: str, category: str | None, evergreen: bool, day: dt.date,
                 include_private: bool, scope: str | None = None) -> _StoreRequest:
        """The checked, cleaned store request for ``text``; ``MemoryInputError`` says why not."""
        text = _checked_text(text)
        category = " ".join(clean_memory_text(category or "").split()).lower()
        if category and not all(c.isalnum() or c in "-_ " for c in category):
            raise MemoryInputError("category may hold letters, digits, spaces, '-' and '_' only")
        scope = check_name(scope) if scope is not None else None
        self.engine.open()
        workspace = self.engine.workspace
        if scope is not None:
            path = evergreen_path(scope) if evergreen else daily_path(scope, day)
        else:
            path = workspace.evergreen_path() if evergreen else workspace.daily_path(day)
        if not include_private and self.engine.privacy.is_private(path):
            # Writing there would tell a shared client the private file's length (the new line's number).
            where = f"evergreen memories ({path})" if evergreen else "today's daily file"
            raise MemoryInputError(f"not stored: {where} is not shared with this client; "
                                   + ("store it without evergreen" if evergreen else "ask the owner to store it"))
        return _StoreRequest(
            text=text,
            line=f"- [{category}] {text}" if category else f"- {text}",
            path=path,
            header="# Memory\n\n" if evergreen else f"# {day.isoformat()}\n\n",
            include_private=include_private,
            seen=seen_from(scope),
        )

    def _write_stores(self, batch: list[_StoreRequest]) -> None:
        """Write a batch of store requests; each gets its result or the error that stopped it."""
        try:
            with self.engine.workspace.locked():  # no other process writes between the check and the append
                written = self._completing_no_secret(self._fresh_requests(batch))
                self._append_grouped(written)
                for r in written:
                    r.result = StoreResult(True, MemoryLine(r.path, r.written_at, r.line))
                for r in batch:
                    if r.result is None and r.duplicate_of is not None:  # repeats a line written just now
                        first = r.duplicate_of
                        if first.error is not None:  # ... or refused just now
                            r.error = first.error
                        else:
                            r.result = StoreResult(False, MemoryLine(first.path, first.written_at, first.line))
        except BaseException as exc:
            for r in batch:
                if r.result is None:
                    r.error = exc
            if not isinstance(exc, Exception):
                raise

    def _fresh_requests(self, batch: list[_StoreRequest]) -> list[_StoreRequest]:
        """The requests to write: not near-duplicates of memory, nor of an earlier request in the batch."""
        written: list[_StoreRequest] = []
        duplicates = self.similarity.find_duplicates([r.text for r in batch], [r.include_private for r in batch],
                                                     [r.seen for r in batch])
        for request, duplicate in zip(batch, duplicates, strict=True):
            if duplicate is not None:
                request.result = StoreResult(False, duplicate)
                continue
            # A shared caller is only told about lines it could read, a scoped one about lines of its scope.
            earlier = [w for w in written if (request.include_private or not self.engine.privacy.is_private(w.path))
                       and request.seen.covers(w.path)]
            index = self.similarity.is_duplicate(request.text, [w.text for w in earlier])
            request.duplicate_of = earlier[index] if index is not None else None
            if request.duplicate_of is None:
                written.append(request)
        return written

    def _completing_no_secret(self, requests: list[_StoreRequest]) -> list[_StoreRequest]:
        """The requests whose text completes no secret with the memories written before it in its
        file (``safety/split_secrets.py``); each other one gets its error."""
        kinds = self.split_secrets([(r.path, r.text) for r in requests])
        for request, kind in zip(requests, kinds, strict=True):
            if kind is not None:
                request.error = MemoryInputError(
                    f"not stored: with the memories written just before it, the text completes a secret ({kind}); "
                    "secrets are never written to memory")
        return [r for r, kind in zip(requests, kinds, strict=True) if kind is None]

    def split_secrets(self, writes: list[tuple[str, str]]) -> list[str | None]:
        """For each (file, text) to be appended in this order, the kind of secret the text completes
        with the memories before it in that file (the file's last ones, then the texts before it
        here), or None. The caller holds the workspace lock, so the file's end is the one appended to."""
        earlier: dict[str, list[str]] = {}
        kinds: list[str | None] = []
        for path, text in writes:
            before = earlier.setdefault(path, self._last_memories(path))
            kind = completes_secret(before, text)
            kinds.append(kind)
            if kind is None:
                before.append(text)
        return kinds

    def _last_memories(self, path: str) -> list[str]:
        """The last memory lines of ``path`` (not headings, not blank), oldest first; [] for a new file."""
        try:
            text = read_text(self.engine.workspace.root / path)
        except (OSError, UnicodeDecodeError):  # a new file, or a binary one the append refuses anyway
            return []
        lines = [line.strip() for line in text.splitlines()[-4 * SPLIT_SECRET_MEMORIES :]]
        return [line for line in lines if line and not line.startswith("#")][-SPLIT_SECRET_MEMORIES:]

    def _append_grouped(self, written: list[_StoreRequest]) -> None:
        """One append per file for the requests to write, then one sync and the new vectors."""
        paths = list(dict.fromkeys(r.path for r in written))
        for path in paths:
            requests = [r for r in written if r.path == path]
            start, _ = self.engine.workspace.append(path, [r.line for r in requests],
                                                    new_file_header=requests[0].header)
            for offset, r in enumerate(requests):
                r.written_at = start + offset
        if paths:
            self.embed_ahead(paths)
            self.sync_edited(*paths)
            for path in paths:
                self.check_indexed(path)
                self.embed_edited(path)

    # ----- forget --------------------------------------------------------------------------
    def forget(self, query: str | None = None, path: str | None = None, line: int | None = None,
               confirm: bool = False, include_private: bool = True,
               scopes: ScopeFilter | None = None) -> ForgetResult:
        """Find memories to remove; remove one when it is certain which.

        ``path`` + ``line`` + ``confirm`` removes that line. ``query`` + ``confirm`` removes the
        best match only when it is a clear one; otherwise the candidates come back and nothing
        is removed. ``scopes``: a query finds candidates there only (None: everywhere); a caller
        confined to its scopes may name no line outside them either.
        """
        self.engine.open()
        if path is not None or line is not None:
            if path is None or line is None:
                raise MemoryInputError("give both path and line, or a query")
            target = self._read_line(path, int(line), include_private)
            if scopes is not None and scopes.confined and not scopes.covers(target.path):
                raise ScopeError(f"{target.path} is outside the scope this token may change")
            if not confirm:
                return ForgetResult(None, [target], "call again with confirm=true to remove this line")
            return self._remove(target)
        if not query or not query.strip():
            raise MemoryInputError("give a query, or a path and line")
        candidates = self.similarity.matching_lines(query, FORGET_CANDIDATES, include_private=include_private,
                                                    scopes=scopes)
        if not candidates:
            return ForgetResult(None, [], "no memory matches the query; nothing removed")
        if not confirm:
            return ForgetResult(None, candidates,
                                "candidates only; call again with confirm=true, or with path and line")
        best = candidates[0]
        runner_up = candidates[1].score if len(candidates) > 1 else 0.0
        if best.score >= CLEAR_MATCH and best.score - runner_up >= CLEAR_MARGIN:
            return self._remove(best)
        return ForgetResult(None, candidates, "no single clear match; nothing removed: pick one by path and line")

    def _remove(self, target: MemoryLine) -> ForgetResult:
        with self.lock:
            try:
                self.engine.workspace.remove_line(target.path, target.line, target.text)
            except PathError as exc:
                raise MemoryInputError(str(exc)) from None
            self.sync_edited(target.path)
        return ForgetResult(target, [], f"removed {target.citation}")

    def _read_line(self, path: str, line: int, include_private: bool = True) -> MemoryLine:
        lines = self.reader.get(path, include_private=include_private)
        if not 1 <= line <= lines.total_lines:
            raise MemoryInputError(f"{lines.path} has no line {line} ({lines.total_lines} lines)")
        text = lines.text.split("\n")[line - 1]
        if not text.strip():
            raise MemoryInputError(f"{lines.path} line {line} is blank")
        return MemoryLine(lines.path, line, text.rstrip("\r"))

    # ----- keeping the index in step -------------------------------------------------------
    def sync_edited(self, *rels: str) -> None:
        self.engine.sync(only=set(rels))

    def check_indexed(self, rel: str) -> None:
        """Refuse to report a write that search could not find (the file must be a memory file)."""
        try:
            self.engine.workspace.resolve(rel)
        except PathError as exc:
            raise MemoryInputError(f"{rel} was written but is not readable as a memory file ({exc})") from None

    def embed_ahead(self, rels: list[str]) -> None:
        """Put the vectors of the edited files' chunks into the embedding cache before their sync.

        The sync then writes the new rows with their vectors (it takes what the cache holds), so
        an edit makes one table write instead of a write without vectors and a second one to fill
        them in, and ``embed_edited`` finds nothing left to do. The chunks are cut as the sync
        cuts them; should they differ, the cache only misses and the backfill embeds them as before.
        """
        engine = self.engine
        if engine.embedder is None:
            return
        texts: list[str] = []
        private: list[bool] = []  # per text: from a private file, so kept off any shared vector store
        for rel in rels:
            try:
                file = engine.workspace.resolve(rel)
                text = engine.workspace.read_memory(file)
            except (PathError, OSError, UnicodeDecodeError, ValueError):
                continue  # the sync says what is wrong with it
            chunking = engine.settings.chunking
            chunks = chunk_markdown(text, path=rel, date=file.date, tokens=chunking.tokens, overlap=chunking.overlap)
            texts.extend(c.index_text for c in chunks)
            private.extend([engine.privacy.is_private(file.rel_path)] * len(chunks))
        try:
            embed_kept_private(engine.embedder, engine.cache, texts, private)  # embeds only what the cache lacks
        except EmbeddingError:
            return  # the backfill tries again and reports it

    def embed_edited(self, rel: str) -> None:
        """Give the edited file's new rows their vectors before the edit returns.

        Usually ``embed_ahead`` gave them theirs already. When a backfill already runs (another
        thread or process), it picks up the new rows too: wait for them, up to ``EDIT_EMBED_WAIT``,
        instead of for that whole backfill.
        """
        if self.engine.embedder is None:
            return
        deadline = time.monotonic() + EDIT_EMBED_WAIT
        where = f"path = '{rel.replace(chr(39), chr(39) * 2)}' AND vector IS NULL"
        while True:
            self.engine.vectors.refresh()
            if self.engine.vectors.count(where) == 0 or time.monotonic() > deadline:
                return
            if self.engine.backfill() == 0:  # 0 at once when another backfill holds the embed lock
                time.sleep(0.05)


def _checked_text(text: object) -> str:
    """``text`` as one clean line, or ``MemoryInputError`` saying why it cannot be stored."""
    # Control characters (NUL, ESC sequences, ...) never reach a file; see safety/text.py.
    return checked_line(text, "text", MAX_MEMORY_CHARS)
