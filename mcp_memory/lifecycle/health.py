"""What the index holds and how healthy it is (``status``), and fixing what ``doctor`` finds.

A caller that may not see private files gets a reduced status: the files it can see, the
embedder and health, but no folder paths and no counts that include private files.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from mcp_memory.core.reading import Reader
from mcp_memory.index.doctor import DoctorReport, diagnose
from mcp_memory.index.engine import Engine
from mcp_memory.index.line_vectors import LineVectors
from mcp_memory.index.sync import Progress
from mcp_memory.lifecycle.rules import pinned_rules


@dataclass(frozen=True)
class EmbedderInfo:
    provider: str
    model: str
    dimensions: int


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
    include_private: bool = True  # False: the reduced view a shared caller gets
    # Pinned rules: {"pinning": bool, "pinned": count, "warnings": [...]}; None in the reduced view.
    rules: dict[str, Any] | None = None
    shared_vectors: str | None = None  # the object-store URI of the vector table machines share
    # Line vectors of precision search ({"lines", "embedded"}); None when there are none (index/line_vectors.py).
    line_vectors: dict[str, int] | None = None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        del data["include_private"]
        if self.include_private:
            return data
        return {
            "files": self.files,
            "embedder": data["embedder"],
            "embedded_share": None if self.embedded_share is None else round(self.embedded_share, 2),
            "last_sync": self.last_sync,
            "degraded": [_reduced(reason, self.workspace, self.shared_vectors) for reason in self.degraded
                         if "chunks not embedded" not in reason],
        }


def status_report(engine: Engine, reader: Reader, include_private: bool = True,
                  line_vectors: LineVectors | None = None) -> StatusReport:
    """``line_vectors``: their coverage is counted for a caller that may see private files."""
    engine.open()
    engine.recovering(engine.refresh_handles)
    chunks = engine.vectors.count()
    missing = engine.vectors.count_missing_vectors()
    embedder = engine.embedder
    embedded_share = (chunks - missing) / chunks if chunks and embedder else (0.0 if embedder else None)
    degraded = list(engine.degraded) + (engine.workspace.link_warnings() if include_private else [])
    shared_problem = engine.shared.problem(probe=True) if engine.shared is not None else None
    if shared_problem:
        degraded.append(shared_problem)
    if embedder is None and engine.settings.embedding.provider == "none":
        degraded.append("keyword-only mode (embedding.provider = 'none')")
    elif missing:
        degraded.append(f"{missing} of {chunks} chunks not embedded yet: vector search covers the rest")
    fingerprint = engine.state.get("fingerprint")
    settings = engine.settings
    files = engine.workspace.list_files() if include_private else reader.list_files(include_private=False)
    return StatusReport(
        workspace=str(settings.workspace),
        index_path=str(settings.index_dir),
        files=len(files),
        indexed_files=len(engine.state.files()),
        chunks=chunks,
        keyword_docs=engine.keywords.count(),
        embedder=EmbedderInfo(embedder.provider, embedder.model, embedder.dimensions) if embedder
        else EmbedderInfo("none", "", 0),
        embedded_share=None if embedded_share is None else round(embedded_share, 4),
        fingerprint=json.loads(fingerprint) if fingerprint else None,
        last_sync=engine.state.get("last_sync") or None,
        last_rebuild_reason=engine.state.get("rebuild_reason") or None,
        degraded=degraded,
        include_private=include_private,
        rules=_rules_summary(engine) if include_private else None,
        shared_vectors=settings.shared_vectors_uri.rstrip("/") or None,
        line_vectors=(line_vectors.coverage(engine.chunk_texts, engine.state.generation)
                      if line_vectors is not None and include_private else None),
    )


def _reduced(reason: str, workspace: str, shared_uri: str | None) -> str:
    """A degraded reason as a shared caller sees it: no local folder, no bucket or endpoint."""
    if shared_uri and reason.startswith(f"shared vectors at {shared_uri} "):
        return "shared vectors unavailable: embedding on this machine"
    return reason.replace(workspace, "<workspace>")


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
