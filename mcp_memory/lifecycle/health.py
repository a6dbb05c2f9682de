"""What the index holds and how healthy it is (``status``), and fixing what ``doctor`` finds.

A caller that may not see private files gets a reduced status (``SharedStatus``), the one view
every face shows it (MCP tool and resource, dashboard pages): the files it can see, the embedder,
the share of *its* chunks embedded, and degraded reasons in fixed words. Every number in it is
counted over the rows that caller may search, so nothing in it moves with the size, the number
or the embedding state of private files; what cannot be counted that way (the time of the last
sync, which any private edit moves; error texts raised while embedding private chunks) is left out.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from mcp_memory.core.reading import Reader
from mcp_memory.index.doctor import DoctorReport, diagnose
from mcp_memory.index.engine import Engine
from mcp_memory.index.line_vectors import LineVectors
from mcp_memory.index.sync import Progress
from mcp_memory.lifecycle.rules import pinned_rules

KEYWORD_ONLY = "keyword-only mode (embedding.provider = 'none')"
SHARED_VECTORS_DOWN = "shared vectors unavailable: embedding on this machine"


@dataclass(frozen=True)
class EmbedderInfo:
    provider: str
    model: str
    dimensions: int


@dataclass(frozen=True)
class SharedStatus:
    """The status a caller that may not see private files gets, whatever the face.

    ``files`` and ``embedded_share`` are counted over the files and chunks it may see only,
    ``degraded`` holds reasons in fixed words that carry no detail of a private file.
    """

    files: int
    embedder: EmbedderInfo
    embedded_share: float | None  # None without an embedder
    degraded: list[str]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class StatusReport:
    workspace: str
    index_path: str
    files: int
    indexed_files: int
    chunks: int
    keyword_docs: int
    embedder: EmbedderInfo
    embedded_share: float | None  # None without an embedder
    fingerprint: dict[str, Any] | None
    last_sync: str | None
    last_rebuild_reason: str | None
    degraded: list[str]
    include_private: bool = True  # False: every field is of the rows a shared caller may see (see ``shared``)
    # Pinned rules: {"pinning": bool, "pinned": count, "warnings": [...]}; None in the reduced view.
    rules: dict[str, Any] | None = None
    shared_vectors: str | None = None  # the object-store URI of the vector table machines share
    # Line vectors of precision search ({"lines", "embedded"}); None when there are none (index/line_vectors.py).
    line_vectors: dict[str, int] | None = None

    @property
    def shared(self) -> SharedStatus:
        """What a caller that may not see private files is shown of this report."""
        return SharedStatus(
            files=self.files,
            embedder=self.embedder,
            embedded_share=None if self.embedded_share is None else round(self.embedded_share, 2),
            degraded=list(self.degraded),
        )

    def view(self) -> StatusReport | SharedStatus:
        """The report itself for the owner, its reduced ``shared`` view for anyone else."""
        return self if self.include_private else self.shared

    def to_dict(self) -> dict[str, Any]:
        """The owner's full report, or the reduced view (``shared``) of a report made for a shared caller."""
        if not self.include_private:
            return self.shared.to_dict()
        data = asdict(self)
        del data["include_private"]
        return data


def status_report(engine: Engine, reader: Reader, include_private: bool = True,
                  line_vectors: LineVectors | None = None) -> StatusReport:
    """The owner's report, or with ``include_private=False`` one counted only over the rows a shared
    caller may see (``line_vectors``: their coverage is counted for the owner only)."""
    engine.open()
    engine.recovering(engine.refresh_handles)
    if not include_private:
        return _shared_report(engine, reader)
    chunks = engine.vectors.count()
    missing = engine.vectors.count_missing_vectors()
    embedder = engine.embedder
    degraded = list(engine.degraded) + engine.workspace.link_warnings()
    shared_problem = _shared_vectors_problem(engine)
    if shared_problem:
        degraded.append(shared_problem)
    if embedder is None and engine.settings.embedding.provider == "none":
        degraded.append(KEYWORD_ONLY)
    elif missing:
        degraded.append(f"{missing} of {chunks} chunks not embedded yet: vector search covers the rest")
    fingerprint = engine.state.get("fingerprint")
    settings = engine.settings
    return StatusReport(
        workspace=str(settings.workspace),
        index_path=str(settings.index_dir),
        files=len(engine.workspace.list_files()),
        indexed_files=len(engine.state.files()),
        chunks=chunks,
        keyword_docs=engine.keywords.count(),
        embedder=_embedder_info(engine),
        embedded_share=_share(chunks, missing, engine),
        fingerprint=json.loads(fingerprint) if fingerprint else None,
        last_sync=engine.state.get("last_sync") or None,
        last_rebuild_reason=engine.state.get("rebuild_reason") or None,
        degraded=degraded,
        include_private=True,
        rules=_rules_summary(engine),
        shared_vectors=settings.shared_vectors_uri.rstrip("/") or None,
        line_vectors=(line_vectors.coverage(engine.chunk_texts, engine.state.generation)
                      if line_vectors is not None else None),
    )


def _shared_report(engine: Engine, reader: Reader) -> StatusReport:
    """The report of a caller that may not see private files: every count over the rows it may search.

    Chunks and their vectors are counted in the search snapshot under the same privacy mask a
    shared search uses, so neither the number nor the embedding state of private chunks shows.
    Fields only the owner is shown (folders, fingerprint, last sync, rules) are left empty.
    """
    chunks, missing = _visible_chunks(engine)
    privacy = engine.privacy
    return StatusReport(
        workspace="",
        index_path="",
        files=len(reader.list_files(include_private=False)),
        indexed_files=sum(1 for path in engine.state.files() if not privacy.is_private(path)),
        chunks=chunks,
        keyword_docs=chunks,  # one keyword document per chunk; the index's own count includes private ones
        embedder=_embedder_info(engine),
        embedded_share=_share(chunks, missing, engine),
        fingerprint=None,
        last_sync=None,
        last_rebuild_reason=None,
        degraded=_shared_degraded(engine),
        include_private=False,
    )


def _visible_chunks(engine: Engine) -> tuple[int, int]:
    """(chunks, chunks without a vector) among the rows a shared search may return."""
    engine.refresh_snapshot()
    snap = engine.searcher.snapshot
    has_vector = np.asarray(snap.has_vector, bool)
    if engine.privacy.patterns:
        visible = ~snap.hidden_mask(engine.privacy)
        return int(visible.sum()), int((visible & ~has_vector).sum())
    return len(has_vector), int((~has_vector).sum())


def _share(chunks: int, missing: int, engine: Engine) -> float | None:
    """The share of ``chunks`` with a vector, to 4 places; None without an embedder."""
    if engine.embedder is None:
        return None
    return round((chunks - missing) / chunks, 4) if chunks else 0.0


def _embedder_info(engine: Engine) -> EmbedderInfo:
    embedder = engine.embedder
    return EmbedderInfo(embedder.provider, embedder.model, embedder.dimensions) if embedder \
        else EmbedderInfo("none", "", 0)


def _shared_vectors_problem(engine: Engine) -> str | None:
    return engine.shared.problem(probe=True) if engine.shared is not None else None


def _shared_degraded(engine: Engine) -> list[str]:
    """The degraded reasons a shared caller is told, in fixed words.

    The engine's reasons quote exceptions, and a backfill's embedding error may have been raised
    by a private chunk (its length, its text echoed by an endpoint): each known reason is given
    without its detail, a backfill's failure not at all (its effect on the caller's own chunks
    shows in ``embedded_share``), and an unknown one is left out.
    """
    reasons = [reason for reason in map(_shared_reason, engine.degraded) if reason]
    if _shared_vectors_problem(engine):
        reasons.append(SHARED_VECTORS_DOWN)
    if engine.embedder is None and engine.settings.embedding.provider == "none":
        reasons.append(KEYWORD_ONLY)
    return list(dict.fromkeys(reasons))


def _shared_reason(reason: str) -> str | None:
    """One engine reason as a shared caller reads it (None: not told)."""
    if reason.startswith("query embedding failed"):
        return "query embedding failed: answered from keywords"
    if reason.startswith("index rebuilt after a read error"):
        return "index rebuilt after a read error"
    if reason.startswith("embedder ") and reason.endswith("keyword search only"):
        return "embedder unavailable: keyword search only"
    return None


def _rules_summary(engine: Engine) -> dict[str, Any]:
    """Whether rules are pinned, how many, and what is wrong with the block in MEMORY.md."""
    report = pinned_rules(engine.settings, engine.workspace)
    return {"pinning": report.pinning, "pinned": len(report.rules), "warnings": report.warnings}


def doctor(engine: Engine) -> DoctorReport:
    """The index checked against the files; changes nothing."""
    engine.open()
    return diagnose(engine.indexer, engine.workspace, engine.state, engine.vectors, engine.keywords,
                    engine.settings.index_dir)


def repair(engine: Engine, progress: Progress | None = None) -> tuple[DoctorReport, DoctorReport]:
    """Fix what ``doctor`` finds; returns the reports before and after.

    File-level drift is fixed by a sync. Wrong rows (orphans, duplicates, counts that do not
    match, a stale fingerprint) rebuild the index from the files, reusing cached vectors.
    """
    before = doctor(engine)
    if before.needs_rebuild:
        engine.indexer.rebuild("repair: " + "; ".join(sorted({p.kind for p in before.problems})))
    engine.sync(progress)
    engine.backfill(progress)
    return before, doctor(engine)
