"""Checking the derived index against the markdown it was built from.

The index can drift from the files: a run killed mid-write, an index folder restored from a
backup, a file edited while no server watched. ``diagnose`` compares, without changing
anything:

* files on disk against the state table (missing from the index, gone from disk, changed since
  they were indexed);
* the LanceDB rows and Tantivy documents against the state table (rows of unknown files,
  duplicated chunk ids, per-file row counts, the two indexes' sizes);
* the stored fingerprint against the one the settings ask for;
* chunks still waiting for a vector, and which locks some process holds right now.

``Memory.repair`` then fixes what it finds: a sync for file-level drift, a full rebuild (with
cached vectors) when rows themselves are wrong.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from filelock import FileLock, Timeout

if TYPE_CHECKING:
    from mcp_memory.core.workspace import Workspace
    from mcp_memory.index.keywords import KeywordIndex
    from mcp_memory.index.state import IndexState
    from mcp_memory.index.sync import Indexer
    from mcp_memory.index.vectors import VectorStore

ROW_PROBLEMS = {"orphan rows", "duplicate rows", "row count", "keyword index size", "fingerprint"}
LOCKS = ("write.lock", "embed.lock", "files.lock")


@dataclass(frozen=True)
class Problem:
    kind: str  # "missing from index", "gone from disk", "changed since indexed", "orphan rows", ...
    detail: str
    path: str | None = None


@dataclass
class DoctorReport:
    files_on_disk: int = 0
    files_indexed: int = 0
    rows: int = 0
    keyword_documents: int = 0
    missing_vectors: int = 0
    fingerprint: dict[str, Any] = field(default_factory=dict)
    locks: dict[str, str] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        return not self.problems

    @property
    def needs_rebuild(self) -> bool:
        return any(p.kind in ROW_PROBLEMS for p in self.problems)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["healthy"] = self.healthy
        return data


def diagnose(indexer: Indexer, workspace: Workspace, state: IndexState, vectors: VectorStore, keywords: KeywordIndex,
             index_dir: Path) -> DoctorReport:
    """What is wrong with the index of this workspace (changes nothing)."""
    report = DoctorReport()
    vectors.refresh()
    keywords.reload()

    wanted = json.dumps(indexer.fingerprint, sort_keys=True)
    stored = state.get("fingerprint")
    report.fingerprint = {"stored": json.loads(stored) if stored else None, "expected": indexer.fingerprint}
    if stored and stored != wanted:
        report.problems.append(Problem("fingerprint", f"index built with {stored}; settings ask for {wanted}"))

    known = state.files()
    on_disk = {f.rel_path: f for f in workspace.list_files()}
    report.files_on_disk, report.files_indexed = len(on_disk), len(known)
    for rel, memory_file in sorted(on_disk.items()):
        previous = known.get(rel)
        if previous is None:
            report.problems.append(Problem("missing from index", "file is not indexed yet", rel))
            continue
        try:
            stat = memory_file.abs_path.stat()
            if stat.st_size == previous.size and stat.st_mtime_ns == previous.mtime_ns:
                continue
            if hashlib.sha256(memory_file.abs_path.read_bytes()).hexdigest() != previous.hash:
                report.problems.append(Problem("changed since indexed", "the file's text changed", rel))
        except OSError as exc:
            report.problems.append(Problem("unreadable", str(exc), rel))
    for rel in sorted(set(known) - set(on_disk)):
        report.problems.append(Problem("gone from disk", "indexed, but the file no longer exists", rel))

    rows = vectors.ids_and_paths() if vectors.count() else None
    report.rows = vectors.count()
    report.keyword_documents = keywords.count()
    report.missing_vectors = vectors.count_missing_vectors()
    if rows is not None:
        ids = Counter(rows.column("id").to_pylist())
        duplicated = sum(n - 1 for n in ids.values() if n > 1)
        if duplicated:
            report.problems.append(Problem("duplicate rows", f"{duplicated} chunk rows appear more than once"))
        # cast: path is a non-nullable string column (chunk_schema), so no None
        per_path = Counter(cast("list[str]", rows.column("path").to_pylist()))
        for rel in sorted(set(per_path) - set(known)):
            report.problems.append(
                Problem("orphan rows", f"{per_path[rel]} rows of a file the index does not know", rel))
        for rel, file_state in sorted(known.items()):
            if per_path.get(rel, 0) != file_state.chunks:
                report.problems.append(Problem(
                    "row count", f"{per_path.get(rel, 0)} rows, {file_state.chunks} chunks expected", rel))
    elif any(f.chunks for f in known.values()):
        report.problems.append(Problem("row count", "the vector table is empty but files are indexed"))
    if report.keyword_documents != report.rows:
        report.problems.append(Problem(
            "keyword index size", f"{report.keyword_documents} keyword documents for {report.rows} rows"))

    for name in LOCKS:
        report.locks[name] = _lock_state(index_dir / name)
    return report


def _lock_state(path: Path) -> str:
    if not path.exists():
        return "free"
    lock = FileLock(str(path), timeout=0)
    try:
        lock.acquire()
    except Timeout:
        return "held by another process"
    lock.release()
    return "free"
