"""Notes synced by git: commit the memory files, merge what other machines pushed, push.

``mcp-memory sync`` (and ``serve`` every ``[sync] interval_minutes``) works in a workspace that
is a git repository with a remote: a bare repository on disk, SSH or a hosted one. One run:

1. recovers from a sync that was killed: a lock file a dead git left behind is removed (only
   when no git process works in the repository), and a merge of sync's own left half-done is
   aborted. Git's own writes are atomic (objects first, then a ref renamed into place), so
   nothing else can be half-done;
2. under the workspace files lock, so that no edit of a memory file interleaves: writes the
   ``.gitattributes`` lines that merge memory files by union (once, when missing) and the
   ``.gitignore`` line that keeps the index out, then commits the memory files: ``MEMORY.md``,
   ``memory/**`` and the extra paths inside the workspace, never the index folder;
3. fetches the remote branch, reads the lines it would add to the memory files and refuses the
   merge when one holds a secret or reads as instructions to a model (``incoming.py``), then,
   under the files lock again, merges it (a merge, never a rebase: the history says what each
   machine wrote). Appends from two machines to the same
   file merge by union without a conflict; what union cannot settle keeps both sides
   (``git_conflicts.py``) and is reported; a merge that still cannot complete is aborted, so
   the repository is never left in the middle of one;
4. pushes; when another machine pushed meanwhile, fetches and merges again (three tries);
5. tells the index which files the merge changed, so search finds pulled memories at once.

Two syncs of a workspace never run at once (``git-sync.lock`` in the index folder). Git runs
without prompts and with a timeout on every call (``git_cli.py``); every failure is a
``GitSyncError`` with a message for people.
"""

from __future__ import annotations

import datetime as dt
import os
import socket
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from mcp_memory.config import Settings
from mcp_memory.core.folders import make_private_folder
from mcp_memory.core.workspace import Workspace
from mcp_memory.team.git_cli import Git, GitSyncError
from mcp_memory.team.git_conflicts import GitConflict, settle_conflicts
from mcp_memory.team.incoming import refusal_message, refused_lines

__all__ = ["GitConflict", "GitSyncError", "GitSyncReport", "sync_workspace"]

SYNC_LOCK = "git-sync.lock"
MESSAGE_PREFIX = "mcp-memory sync"
PUSH_ATTEMPTS = 3
_POLL_SECONDS = 0.1
# Union keeps the lines of both sides: appends (daily files, utility.jsonl) merge without conflict.
_UNION_PATTERNS = ("MEMORY.md", "memory.md", "memory/**/*.md", "memory/**/*.jsonl", ".gitattributes", ".gitignore")
_ATTRIBUTES_HEADER = "# mcp-memory: memory files merge by keeping the lines of both sides"
_IGNORE_HEADER = "# mcp-memory: the index is derived from the notes and stays on each machine"
# Temporary files of an atomic write that a crash left behind are not notes.
_NEVER_COMMITTED = (":(exclude,glob)**/.*.tmp", ":(exclude,glob)**/.*.sync-tmp")
_REJECTED = ("[rejected]", "fetch first", "non-fast-forward", "stale info", "failed to update ref",
             "cannot lock ref")
_MISSING_BRANCH = ("couldn't find remote ref", "could not find remote ref")


@dataclass
class GitSyncReport:
    """What one sync did, for ``mcp-memory sync`` and the server's log."""

    remote: str
    branch: str
    committed: list[str] = field(default_factory=list)  # files of this machine's new commit
    pulled: list[str] = field(default_factory=list)  # files the merge brought in or changed
    pushed: int = 0  # commits the remote received
    conflicts: list[GitConflict] = field(default_factory=list)
    recovered: list[str] = field(default_factory=list)  # what an interrupted sync had left, and was undone
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def changed(self) -> bool:
        return bool(self.committed or self.pulled or self.pushed or self.conflicts)

    def to_dict(self) -> dict[str, Any]:
        return {"remote": self.remote, "branch": self.branch, "committed": list(self.committed),
                "pulled": list(self.pulled), "pushed": self.pushed,
                "conflicts": [c.to_dict() for c in self.conflicts], "recovered": list(self.recovered),
                "warnings": list(self.warnings), "seconds": round(self.seconds, 3)}


@dataclass(frozen=True)
class _Repository:
    """Where things are in the workspace's repository."""

    root: Path  # the workspace, which is the repository's top folder
    git_dir: Path
    common_dir: Path  # refs and objects (the same as git_dir outside linked worktrees)
    remote: str
    branch: str  # the remote branch pulled and pushed
    identity: dict[str, str]  # user.name / user.email for commits when git has none configured


def sync_workspace(settings: Settings, *, files_lock: AbstractContextManager[Any] | None = None,
                   reindex: Callable[[set[str]], object] | None = None) -> GitSyncReport:
    """Commit, pull (fetch + merge) and push the memory files of ``settings.workspace``.

    ``files_lock`` is the workspace files lock of the caller's ``Workspace`` (a second lock
    object on the same file would wait for the first); ``reindex(paths)`` brings the index up
    to date for the files the merge changed. Raises ``GitSyncError`` when sync cannot run.
    """
    started = time.monotonic()
    git = Git(settings.workspace, settings.sync.timeout_seconds)
    repo = _open_repository(git, settings)
    make_private_folder(settings.index_dir)
    sync_lock = FileLock(str(settings.index_dir / SYNC_LOCK))
    try:
        sync_lock.acquire(timeout=settings.sync.timeout_seconds)
    except Timeout:
        raise GitSyncError("busy", "another sync of this workspace is still running; try again when it has "
                                   "finished") from None
    report = GitSyncReport(repo.remote, repo.branch)
    try:
        _sync_locked(git, repo, settings, files_lock, report)
    finally:
        sync_lock.release()
        # Even when a later step failed (push, say), the index takes in what a merge already changed.
        if reindex is not None and report.pulled:
            try:
                reindex(set(report.pulled))
            except Exception as exc:  # noqa: BLE001 - the notes are synced; the index catches up on its next sync
                report.warnings.append(f"the index could not take in the pulled files yet: {exc}")
    report.seconds = time.monotonic() - started
    return report


def _sync_locked(git: Git, repo: _Repository, settings: Settings,
                 files_lock: AbstractContextManager[Any] | None, report: GitSyncReport) -> None:
    """Recover, commit, then fetch, merge and push until the remote takes it; fills ``report``."""
    if files_lock is None:
        files_lock = Workspace(settings.workspace, settings.extra_paths, settings.index_dir / "files.lock").locked()
    report.recovered = _recover(git, repo)
    _check_state(repo)
    pathspecs = _memory_pathspecs(settings)
    with files_lock:
        _ensure_attributes(repo.root, settings)
        _ensure_ignored(repo.root, settings)
        report.committed = _commit_local(git, repo, pathspecs)
    for _ in range(PUSH_ATTEMPTS):
        theirs = _fetch(git, repo)
        if theirs is not None and not _contains(git, theirs):
            refused = refused_lines(git, theirs, pathspecs)
            if refused:
                raise GitSyncError("refused", refusal_message(refused, repo.remote, repo.branch))
            with files_lock:
                # Edits made while fetching are committed first: the merge needs a clean tree.
                late = _commit_local(git, repo, pathspecs)
                report.committed += [name for name in late if name not in report.committed]
                before = _head(git)
                report.conflicts += _merge(git, repo, theirs)
                pulled = _changed_files(git, before, _head(git))
                report.pulled += [name for name in pulled if name not in report.pulled]
        pushed = _push(git, repo, theirs)
        if pushed is not None:
            report.pushed = pushed
            return
    raise GitSyncError("failed", f"{repo.remote}/{repo.branch} changed again during each of {PUSH_ATTEMPTS} tries "
                                 "to push; sync again")


# ----- the repository ------------------------------------------------------------------------
def _open_repository(git: Git, settings: Settings) -> _Repository:
    """Check that the workspace is a repository's top folder with the remote; find its parts."""
    root = settings.workspace
    if not root.is_dir():
        raise GitSyncError("not_a_repository", f"the workspace {root} does not exist")
    found = git.run("rev-parse", "--show-toplevel", "--absolute-git-dir", "--git-common-dir", check=False)
    if found.code != 0:
        if "not a git repository" in found.stderr.lower():
            raise GitSyncError("not_a_repository", f"the workspace {root} is not a git repository: run `git init` "
                                                   "there and `git remote add origin URL`, or clone your notes "
                                                   "repository to it")
        raise git.error(("rev-parse",), found)
    top, git_dir, common = found.text.splitlines()[:3]
    if Path(top).resolve() != root.resolve():
        raise GitSyncError("not_a_repository", f"the workspace {root} is inside the git repository {top} but is not "
                                               "its top folder: sync needs a repository of the workspace's own "
                                               "(`git init` in the workspace)")
    remote = settings.sync.remote.strip()
    if git.run("remote", "get-url", "--", remote, check=False).code != 0:
        known = git.run("remote").text.split()
        hint = f" (this repository has: {', '.join(known)}; set [sync] remote)" if known else ""
        raise GitSyncError("no_remote", f"the repository has no remote {remote!r}: add one with "
                                        f"`git remote add {remote} URL`{hint}")
    branch = settings.sync.branch.strip()
    current = git.run("symbolic-ref", "--quiet", "--short", "HEAD", check=False)
    if current.code != 0:
        raise GitSyncError("state", "HEAD is detached (no branch is checked out): check out a branch, then sync")
    identity = {}
    if git.run("config", "user.name", check=False).code != 0:
        identity["user.name"] = "mcp-memory"
    if git.run("config", "user.email", check=False).code != 0:
        identity["user.email"] = f"mcp-memory@{socket.gethostname() or 'localhost'}"
    common_dir = Path(common) if Path(common).is_absolute() else root / common
    return _Repository(root, Path(git_dir), common_dir.resolve(), remote, branch or current.text, identity)


def _check_state(repo: _Repository) -> None:
    """Refuse to work in the middle of a git operation of someone else's (after recovery)."""
    for name, what in (("rebase-merge", "a rebase"), ("rebase-apply", "a rebase or `git am`"),
                       ("CHERRY_PICK_HEAD", "a cherry-pick"), ("REVERT_HEAD", "a revert"),
                       ("MERGE_HEAD", "a merge")):
        if (repo.git_dir / name).exists():
            raise GitSyncError("state", f"{what} is in progress in {repo.root}: finish or abort it, then sync")


# ----- recovery --------------------------------------------------------------------------------
def _recover(git: Git, repo: _Repository) -> list[str]:
    """Undo what an interrupted sync left: stale lock files, a merge of its own left half-done."""
    notes = []
    known = _wait_for_git(repo, git.timeout)
    for lock in _lock_files(repo):
        try:
            age = time.time() - lock.stat().st_mtime
        except OSError:
            continue
        if not known and age < git.timeout * 2:  # no process list here: only an old lock is surely stale
            raise GitSyncError("busy", f"{lock} exists: another git command may be at work in {repo.root}; "
                                       "sync again when it has finished (or delete the file if none is)")
        lock.unlink(missing_ok=True)
        notes.append(f"removed {lock.relative_to(repo.root) if lock.is_relative_to(repo.root) else lock}, "
                     "left by an interrupted git command")
    merge_head = repo.git_dir / "MERGE_HEAD"
    if merge_head.exists():
        message = _read(repo.git_dir / "MERGE_MSG")
        if not message.startswith(MESSAGE_PREFIX):
            raise GitSyncError("state", f"a merge is in progress in {repo.root} that sync did not start: commit it "
                                        "or run `git merge --abort`, then sync")
        if git.run("merge", "--abort", check=False).code != 0:
            git.run("reset", "--merge")
        notes.append("aborted the merge an interrupted sync had left; it is done again now")
    return notes


def _wait_for_git(repo: _Repository, timeout: float) -> bool:
    """Wait until no git process works in the repository; False when this cannot be known here."""
    deadline = time.monotonic() + timeout
    while True:
        running = _git_processes(repo)
        if running is None:
            return False
        if not running:
            return True
        if time.monotonic() > deadline:
            raise GitSyncError("busy", f"git (process {', '.join(map(str, running))}) is at work in {repo.root}; "
                                       "sync again when it has finished")
        time.sleep(_POLL_SECONDS)


def _git_processes(repo: _Repository) -> list[int] | None:
    """Pids of git processes whose folder is in the repository, from ``/proc``; None without it."""
    proc = Path("/proc")
    if not (proc / "self").exists():
        return None
    places = (repo.root.resolve(), repo.git_dir.resolve(), repo.common_dir)
    found = []
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if not (entry / "comm").read_text(encoding="utf-8", errors="replace").startswith("git"):
                continue
            cwd = Path(os.readlink(entry / "cwd"))
        except OSError:  # gone meanwhile, or another user's
            continue
        if any(cwd == place or cwd.is_relative_to(place) for place in places):
            found.append(int(entry.name))
    return found


def _lock_files(repo: _Repository) -> list[Path]:
    """The ``*.lock`` files git takes (index, HEAD, refs, config); a live git holds them only while it runs."""
    locks = {*repo.git_dir.glob("*.lock"), *repo.common_dir.glob("*.lock"), *repo.common_dir.glob("refs/**/*.lock")}
    return sorted(p for p in locks if p.is_file())


# ----- setup --------------------------------------------------------------------------------
def _ensure_attributes(root: Path, settings: Settings) -> None:
    """Add the union merge lines that ``.gitattributes`` lacks (the file is created when missing)."""
    patterns = list(_UNION_PATTERNS)
    for rel, is_folder in _extra_paths_inside(settings):
        patterns.append(f"{rel}/**/*.md" if is_folder else rel)
    _ensure_lines(root / ".gitattributes", [f"{p} merge=union" for p in patterns], _ATTRIBUTES_HEADER)


def _ensure_ignored(root: Path, settings: Settings) -> None:
    """Keep the index (``.mcp-memory*``, or a configured folder inside the workspace) out of git."""
    lines = ["/.mcp-memory*"]
    index = settings.index_dir.resolve()
    if index.is_relative_to(root.resolve()) and index != root.resolve():
        rel = index.relative_to(root.resolve()).as_posix()
        if not rel.startswith(".mcp-memory") and not any(ch.isspace() for ch in rel):
            lines.append(f"/{rel}/")
    _ensure_lines(root / ".gitignore", lines, _IGNORE_HEADER)


def _ensure_lines(path: Path, wanted: list[str], header: str) -> None:
    text = _read(path)
    present = {line.strip() for line in text.splitlines()}
    missing = [line for line in wanted if line not in present]
    if not missing:
        return
    prefix = text if not text or text.endswith("\n") else text + "\n"
    block = ([header] if header not in present else []) + missing
    temporary = path.with_name(f".{path.name}.sync-tmp")
    temporary.write_text(prefix + "\n".join(block) + "\n", encoding="utf-8")
    os.replace(temporary, path)


def _extra_paths_inside(settings: Settings) -> list[tuple[str, bool]]:
    """The extra paths inside the workspace, relative, each with whether it is a folder."""
    root = settings.workspace.resolve()
    found = []
    for raw in settings.extra_paths:
        path = Path(raw).expanduser()
        path = path if path.is_absolute() else settings.workspace / path
        if path.is_symlink():
            continue
        resolved = path.resolve()
        if resolved == root or not resolved.is_relative_to(root):
            continue
        rel = resolved.relative_to(root).as_posix()
        if rel.startswith(".mcp-memory") or any(ch.isspace() for ch in rel):
            continue  # the index never; a name with spaces would need quoting in .gitattributes
        found.append((rel, resolved.is_dir()))
    return found


def _memory_pathspecs(settings: Settings) -> list[str]:
    """What sync commits: the memory files, the extra paths inside the workspace, and its own setup."""
    specs = ["MEMORY.md", "memory.md", "memory", ".gitattributes", ".gitignore"]
    specs += [rel for rel, _ in _extra_paths_inside(settings)]
    return [f":(literal){spec}" for spec in specs]


# ----- commit, fetch, merge, push --------------------------------------------------------------
def _commit_local(git: Git, repo: _Repository, pathspecs: list[str]) -> list[str]:
    """Commit this machine's changes of the memory files; the files committed (none: no commit)."""
    present = [spec for spec in pathspecs if _matches(git, spec, repo.root)]
    if not present:
        return []
    git.run("add", "-A", "--", *present, *_NEVER_COMMITTED)
    staged = git.run("diff", "--cached", "--name-only", "-z", "--no-renames", "--", *present,
                     *_NEVER_COMMITTED).names()
    if not staged:
        return []
    stamp = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    message = f"{MESSAGE_PREFIX}: notes of {socket.gethostname() or 'this machine'} at {stamp}"
    # Only these paths: whatever else someone staged in the repository stays staged, not committed.
    # Each path named must hold a staged change (git refuses one that names nothing it knows).
    named = [spec for spec in present if any(_within(name, spec) for name in staged)]
    git.run("commit", "--quiet", "--no-verify", "-m", message, "--", *named, *_NEVER_COMMITTED,
            config=repo.identity)
    return staged


def _matches(git: Git, spec: str, root: Path) -> bool:
    """Whether a pathspec names something on disk or known to git (git refuses one that names nothing)."""
    name = _literal(spec)
    if (root / name).exists() or (root / name).is_symlink():
        return True
    return bool(git.run("ls-files", "-z", "--", spec).stdout)


def _within(name: str, spec: str) -> bool:
    """Whether a repository path is the literal pathspec's file or inside its folder."""
    target = _literal(spec)
    return name == target or name.startswith(target + "/")


def _literal(spec: str) -> str:
    return spec.split(")", 1)[1] if spec.startswith(":(") else spec


def _fetch(git: Git, repo: _Repository) -> str | None:
    """Fetch the remote branch; its commit, or None when the remote does not have it yet."""
    result = git.run("fetch", "--quiet", "--no-tags", "--no-recurse-submodules", repo.remote,
                     f"refs/heads/{repo.branch}", check=False, network=True)
    if result.code != 0:
        if any(phrase in result.stderr.lower() for phrase in _MISSING_BRANCH):
            return None
        raise git.error(("fetch", repo.remote), result, network=True)
    return git.run("rev-parse", "--verify", "--quiet", "FETCH_HEAD^{commit}").text


def _merge(git: Git, repo: _Repository, theirs: str) -> list[GitConflict]:
    """Merge the fetched commit; settle what union could not; never leave the merge half-done."""
    label = f"{repo.remote}/{repo.branch}"
    config = {**repo.identity, "merge.conflictStyle": "merge", "merge.autoStash": "false"}
    result = git.run("merge", "--no-edit", "--no-verify", "--allow-unrelated-histories", "--no-stat",
                     "-m", f"{MESSAGE_PREFIX}: merge {label}", theirs, check=False, config=config)
    if result.code == 0:
        return []
    if not (repo.git_dir / "MERGE_HEAD").exists():  # refused before it began (a local change in the way)
        raise GitSyncError("failed", f"git could not merge {label}: {_said(result.stderr)}")
    try:
        conflicts = settle_conflicts(git, repo.root, label, theirs[:7])
        if git.run("ls-files", "-u", "-z").stdout:
            raise GitSyncError("failed", "files outside the workspace's notes still conflict")
        git.run("commit", "--quiet", "--no-edit", "--no-verify", config=config)
    except BaseException as exc:
        git.run("merge", "--abort", check=False)
        if isinstance(exc, GitSyncError):
            raise GitSyncError(exc.kind, f"the merge of {label} was undone: {exc}") from None
        raise
    return conflicts


def _push(git: Git, repo: _Repository, theirs: str | None) -> int | None:
    """Push to the remote branch; the commits sent, or None when the remote moved meanwhile."""
    head = _head(git)
    if head is None or head == theirs:
        return 0
    count = int(git.run("rev-list", "--count", head, *([f"^{theirs}"] if theirs else [])).text or 0)
    result = git.run("push", "--quiet", "--no-verify", repo.remote, f"HEAD:refs/heads/{repo.branch}",
                     check=False, network=True)
    if result.code == 0:
        return count
    if any(phrase in result.stderr.lower() for phrase in _REJECTED):
        return None
    raise git.error(("push", repo.remote), result, network=True)


def _head(git: Git) -> str | None:
    """The current commit, or None on a branch without one yet."""
    result = git.run("rev-parse", "--verify", "--quiet", "HEAD^{commit}", check=False)
    return result.text if result.code == 0 else None


def _contains(git: Git, commit: str) -> bool:
    """Whether HEAD already holds ``commit`` (nothing to merge)."""
    head = _head(git)
    if head is None:
        return False
    return git.run("merge-base", "--is-ancestor", commit, head, check=False).code == 0


def _changed_files(git: Git, before: str | None, after: str | None) -> list[str]:
    """The files that differ between two commits (all files of ``after`` when there was none before)."""
    if after is None or before == after:
        return []
    if before is None:
        return git.run("ls-tree", "-r", "-z", "--name-only", after).names()
    return git.run("diff", "--name-only", "-z", "--no-renames", before, after).names()


def _said(stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip() and not line.startswith("hint:")]
    return " ".join(lines[-4:]) or "no reason given"


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""

