"""The ``git`` command line, run so that it can never hang or ask anything, with errors in words.

Sync (``git_sync.py``) drives git through its command line: no library to install, and every
remote git knows (a folder, SSH, HTTPS with the user's credential helper) works the same way.
Each call here:

* runs without a terminal prompt (``GIT_TERMINAL_PROMPT=0``), with SSH in batch mode unless the
  user configured their own SSH command, and without an editor;
* is stopped after ``timeout`` seconds, with every process it started (its own process group);
* ignores ``GIT_DIR`` and friends inherited from a caller (a git hook), so it works on the
  workspace and nothing else.

A failure becomes a ``GitSyncError`` whose ``kind`` a program can test and whose message a person
can act on: git missing, not a repository, no such remote, remote unreachable, authentication
failed, timed out, busy.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Git", "GitResult", "GitSyncError"]

# Variables that would point git at another repository than the workspace's.
_FOREIGN_REPOSITORY = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
                       "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_PREFIX", "GIT_NAMESPACE")
# Phrases of git's, ssh's and curl's messages (in the C locale), most specific first.
_AUTH_PHRASES = ("authentication failed", "permission denied", "could not read username",
                 "could not read password", "terminal prompts disabled", "invalid username or password",
                 "the requested url returned error: 401", "the requested url returned error: 403")
_HOST_KEY_PHRASES = ("host key verification failed",)
_UNREACHABLE_PHRASES = ("could not resolve host", "could not resolve hostname", "connection refused",
                        "connection timed out", "network is unreachable", "no route to host",
                        "does not appear to be a git repository", "repository not found",
                        "could not read from remote repository", "unable to access", "not a git repository",
                        "no such file or directory", "connection closed", "failed to connect")


class GitSyncError(Exception):
    """Sync cannot go on; ``kind`` names why, the message says what to do.

    Kinds: ``git_missing``, ``not_a_repository``, ``no_remote``, ``unreachable``, ``auth``,
    ``timeout``, ``busy`` (another sync or git command is at work), ``state`` (the repository is
    in a state sync will not touch: detached HEAD, a rebase or a merge of someone else's),
    ``refused`` (the remote brings a secret or a prompt injection into the memory files), and
    ``failed`` (anything else git refused, with its words).
    """

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class GitResult:
    """What one git command answered."""

    code: int
    stdout: bytes
    stderr: str

    @property
    def text(self) -> str:
        """Standard output as text, without the trailing newline."""
        return os.fsdecode(self.stdout).rstrip("\n")

    def names(self) -> list[str]:
        """The NUL-separated paths of a ``-z`` listing."""
        return [os.fsdecode(name) for name in self.stdout.split(b"\0") if name]


class Git:
    """One repository's git, run in ``cwd`` (the workspace) with a bound on every call."""

    def __init__(self, cwd: Path, timeout: float):
        self.cwd = cwd
        self.timeout = timeout
        self._env = _environment(cwd)

    def run(self, *args: str, check: bool = True, network: bool = False, timeout: float | None = None,
            config: dict[str, str] | None = None) -> GitResult:
        """Run ``git args``; a failure raises ``GitSyncError`` when ``check`` is set.

        ``network`` marks commands that talk to the remote (fetch, push, ls-remote): their
        failures are read for an unreachable remote or refused credentials. ``config`` sets
        ``-c key=value`` for this call only.
        """
        settings = [part for key, value in (config or {}).items() for part in ("-c", f"{key}={value}")]
        command = ["git", *settings, *args]
        limit = self.timeout if timeout is None else timeout
        try:
            process = subprocess.Popen(command, cwd=self.cwd, env=self._env, stdin=subprocess.DEVNULL,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                       start_new_session=sys.platform != "win32")
        except FileNotFoundError:
            if not self.cwd.is_dir():
                raise GitSyncError("not_a_repository", f"the workspace {self.cwd} does not exist") from None
            raise GitSyncError("git_missing", "git is not installed or not on PATH: install git to sync "
                                              "memory across machines") from None
        try:
            out, err = process.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            _kill(process)
            raise GitSyncError("timeout", f"`git {args[0]}` did not finish within {limit:g} s "
                                          "(raise [sync] timeout_seconds for a slow remote)") from None
        except BaseException:  # interrupted: git and its helpers (ssh) must not outlive us
            _kill(process)
            raise
        result = GitResult(process.returncode, out, err.decode("utf-8", "replace"))
        if check and result.code != 0:
            raise self.error(args, result, network)
        return result

    def error(self, args: tuple[str, ...], result: GitResult, network: bool = False) -> GitSyncError:
        """The ``GitSyncError`` for a failed call, classified by git's own words."""
        said = _last_lines(result.stderr) or f"exit status {result.code}"
        lowered = result.stderr.lower()
        if network:
            if any(p in lowered for p in _HOST_KEY_PHRASES):
                return GitSyncError("auth", f"the remote's SSH host key is not known or has changed; connect once "
                                            f"with ssh to check and accept it ({said})")
            if any(p in lowered for p in _AUTH_PHRASES):
                return GitSyncError("auth", f"authentication to the remote failed; set up an SSH key or a credential "
                                            f"helper that works without a prompt ({said})")
            if any(p in lowered for p in _UNREACHABLE_PHRASES):
                return GitSyncError("unreachable", f"the remote cannot be reached ({said})")
        return GitSyncError("failed", f"`git {' '.join(args[:2])}` failed: {said}")

    def blob(self, spec: str) -> bytes | None:
        """The bytes of an object (``:2:path``, ``HEAD:path``), or None when there is none."""
        result = self.run("cat-file", "blob", spec, check=False)
        return result.stdout if result.code == 0 else None


def _environment(cwd: Path) -> dict[str, str]:
    """The environment of every git call: no prompt, no editor, messages in English, this repository."""
    env = {k: v for k, v in os.environ.items() if k not in _FOREIGN_REPOSITORY}
    env["GIT_TERMINAL_PROMPT"] = "0"  # no username or password prompt on HTTPS
    env["GCM_INTERACTIVE"] = "never"  # Git Credential Manager: no window either
    env["GIT_EDITOR"] = env["GIT_SEQUENCE_EDITOR"] = ":"
    env["GIT_MERGE_AUTOEDIT"] = "no"
    env["LC_ALL"] = "C"  # the messages classified above are git's English ones
    env.pop("LANGUAGE", None)
    if not env.get("GIT_SSH_COMMAND") and not env.get("GIT_SSH") and not _configured_ssh_command(cwd, env):
        # BatchMode: a key that needs a passphrase, or a password, fails at once instead of asking.
        env["GIT_SSH_COMMAND"] = "ssh -o BatchMode=yes"
    return env


def _configured_ssh_command(cwd: Path, env: dict[str, str]) -> bool:
    """Whether ``core.sshCommand`` is set: the user's own SSH command is left as it is."""
    try:
        result = subprocess.run(["git", "config", "--get", "core.sshCommand"], cwd=cwd, env=env,
                                stdin=subprocess.DEVNULL, capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return result.returncode == 0 and bool(result.stdout.strip())


def _kill(process: subprocess.Popen[bytes]) -> None:
    """Stop git and the helpers it started (ssh, remote helpers): its whole process group."""
    try:
        if sys.platform != "win32":
            os.killpg(process.pid, signal.SIGKILL)
        else:
            process.kill()
    except (ProcessLookupError, PermissionError):
        pass
    process.wait()


def _last_lines(stderr: str, count: int = 3) -> str:
    """Git's last few meaningful lines (hints left out), on one line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip() and not line.startswith("hint:")]
    return " ".join(lines[-count:])
