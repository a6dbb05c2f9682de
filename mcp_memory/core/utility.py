"""Learned utility: how much each memory helped (rewarded) or misled (penalized) before.

Utility cannot be rebuilt from the markdown, so it does not live in the derived index folder
(deleting ``.mcp-memory`` stays harmless). It lives in ``memory/utility.jsonl`` in the
workspace: one JSON object per line, appended, never edited in place::

    {"id": "m-3f2a9c1b7e4d", "op": "reward", "amount": 0.2, "at": "2026-11-26T19:00:00+00:00"}
    {"id": "m-3f2a9c1b7e4d", "op": "penalize", "amount": 0.2, "at": "2026-11-27T08:12:03+00:00"}
    {"id": "m-3f2a9c1b7e4d", "op": "set", "utility": 0.03, "at": "2026-12-01T03:00:00+00:00"}

A memory's utility is the fold of its lines in file order, starting from 0 (neutral):
a reward of ``a`` moves it ``a`` of the way to +1, a penalty ``a`` of the way to -1, so it is
always within [-1, 1]; ``set`` (written by ``decay``) states it outright. Appends from many
processes are serialised by the workspace files lock and each is one ``write`` of a whole line,
so every reward lands exactly once; the same file merged from several machines (a union of
lines) folds to the same values wherever it is read.

Search weighs a memory's score by ``1 + weight × sign(u) × √|u|`` (``[utility] weight``, 0.5 by
default): a rewarded memory rises among comparable matches, a penalized one sinks, and a
neutral memory 50% better than the most rewarded one still comes first.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import math
import os
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp_memory.core.memory_ids import is_memory_id
from mcp_memory.errors import MemoryInputError

log = logging.getLogger(__name__)

UTILITY_FILE = "memory/utility.jsonl"
_OPS = ("reward", "penalize", "set")


@dataclass(frozen=True)
class UtilityChange:
    """What one reward or penalty did."""

    memory_id: str
    before: float
    after: float
    at: dt.datetime

    def to_dict(self) -> dict[str, Any]:
        return {"memory_id": self.memory_id, "utility_before": round(self.before, 4),
                "utility": round(self.after, 4), "at": self.at.isoformat(timespec="seconds")}


@dataclass(frozen=True)
class DecayReport:
    changed: int  # memories whose utility moved toward neutral
    dropped: int  # memories back to neutral (no longer listed)
    lines_before: int
    lines_after: int


@dataclass(frozen=True)
class _Learned:
    utility: float
    at: dt.datetime  # of the last line that changed it


class UtilityStore:
    """The utility of every memory of one workspace, read from and appended to its utility file."""

    def __init__(self, path: Path, lock: Callable[[], AbstractContextManager[Any]], weight: float = 0.5,
                 half_life_days: float = 30.0):
        self.path = path
        self._lock = lock
        self.weight = weight
        self.half_life_days = half_life_days
        self._cache_key: tuple[int, int, int] | None = None
        self._learned: dict[str, _Learned] = {}
        self._read_lock = threading.Lock()

    # ----- reading -------------------------------------------------------------------------
    def values(self) -> dict[str, float]:
        """Every memory with a non-neutral utility."""
        return {key: item.utility for key, item in self._current().items() if item.utility != 0.0}

    def get(self, memory_id: str) -> float:
        item = self._current().get(memory_id)
        return item.utility if item else 0.0

    def active(self) -> bool:
        """Whether any utility is recorded (search skips the weighing otherwise)."""
        return self.weight > 0 and bool(self._current())

    def factor(self, memory_id: str | None) -> float:
        """The multiplier a memory's search score gets: 1 for neutral or unknown memories."""
        if not memory_id or self.weight <= 0:
            return 1.0
        value = self.get(memory_id)
        # The square root lets the first reward or two count (one reward of 0.2 is worth a factor
        # of 1.22 at the default weight) while the factor stays within 1 ± weight.
        return 1.0 + self.weight * math.copysign(math.sqrt(abs(value)), value)

    # ----- writing -------------------------------------------------------------------------
    def reward(self, memory_id: str, amount: float = 0.2, now: dt.datetime | None = None) -> UtilityChange:
        """Move a memory's utility ``amount`` (0, 1] of the way toward +1."""
        return self._append(memory_id, "reward", amount, now)

    def penalize(self, memory_id: str, amount: float = 0.2, now: dt.datetime | None = None) -> UtilityChange:
        """Move a memory's utility ``amount`` (0, 1] of the way toward -1."""
        return self._append(memory_id, "penalize", amount, now)

    def decay(self, now: dt.datetime | None = None, half_life_days: float | None = None) -> DecayReport:
        """Move every utility toward neutral by the time since it last changed, and rewrite the
        file as one ``set`` line per memory (the sleep cycle runs this about once a day).

        Halves a utility every ``half_life_days``; one within 0.01 of neutral is dropped.
        """
        now = _aware(now)
        half_life = self.half_life_days if half_life_days is None else float(half_life_days)
        if half_life <= 0:
            raise MemoryInputError("half_life_days must be positive")
        with self._lock():
            learned, lines_before = self._fold(self._read_lines())
            out: list[str] = []
            changed = dropped = 0
            for key, item in sorted(learned.items()):
                days = max(0.0, (now - item.at).total_seconds() / 86400)
                value = item.utility * 0.5 ** (days / half_life)
                changed += value != item.utility
                if abs(value) < 0.01:
                    dropped += 1
                    continue
                out.append(_line({"id": key, "op": "set", "utility": round(value, 6), "at": _stamp(now)}))
            _replace(self.path, "".join(out))
        return DecayReport(changed, dropped, lines_before, len(out))

    def _append(self, memory_id: str, op: str, amount: float, now: dt.datetime | None) -> UtilityChange:
        memory_id = _checked_id(memory_id)
        amount = _checked_amount(amount, "reward" if op == "reward" else "penalty")
        now = _aware(now)
        with self._lock():
            before = self._current().get(memory_id)
            value = before.utility if before else 0.0
            record = {"id": memory_id, "op": op, "amount": amount, "at": _stamp(now)}
            _append_line(self.path, _line(record))
            self._cache_key = None
            after = _apply(value, op, amount)
        return UtilityChange(memory_id, value, after, now)

    # ----- the file ------------------------------------------------------------------------
    def _current(self) -> dict[str, _Learned]:
        with self._read_lock:
            try:
                st = self.path.stat()
            except FileNotFoundError:
                self._cache_key, self._learned = None, {}
                return self._learned
            key = (st.st_ino, st.st_size, st.st_mtime_ns)
            if key != self._cache_key:
                self._learned, _ = self._fold(self._read_lines())
                self._cache_key = key
            return self._learned

    def _read_lines(self) -> list[str]:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return []
        text = data.decode("utf-8", "replace")
        # A last line without its newline is an append still being written: not read yet.
        return text.split("\n")[:-1]

    def _fold(self, lines: list[str]) -> tuple[dict[str, _Learned], int]:
        learned: dict[str, _Learned] = {}
        count = 0
        for number, raw in enumerate(lines, 1):
            if not raw.strip():
                continue
            count += 1
            parsed = _parse(raw)
            if parsed is None:
                log.warning("%s line %d is not a utility record; it is skipped", self.path.name, number)
                continue
            key, op, amount, at = parsed
            before = learned.get(key)
            value = _apply(before.utility if before else 0.0, op, amount)
            learned[key] = _Learned(value, at)
        return learned, count


def weighted(scores: list[float], factors: list[float]) -> list[float]:
    """``scores`` times their utility factors, scaled back under 1 when a factor lifted one above it."""
    out = [score * factor for score, factor in zip(scores, factors, strict=True)]
    high = max(out, default=0.0)
    return [score / high for score in out] if high > 1.0 else out


def _apply(value: float, op: str, number: float) -> float:
    """``value`` after one line: ``number`` is the amount of a reward or penalty, the value of a set."""
    if op == "set":
        return max(-1.0, min(1.0, number))
    amount = number
    if op == "reward":
        return value + amount * (1.0 - value)
    return value - amount * (1.0 + value)


def _parse(raw: str) -> tuple[str, str, float, dt.datetime] | None:
    try:
        record = json.loads(raw)
        key, op = str(record["id"]), str(record["op"])
        number = float(record["utility"] if op == "set" else record["amount"])
        at = _aware(dt.datetime.fromisoformat(str(record["at"])))
    except (ValueError, KeyError, TypeError):
        return None
    if op not in _OPS or not is_memory_id(key) or number != number:  # NaN
        return None
    if op != "set" and not 0 < number <= 1:
        return None
    return key, op, number, at


def _checked_id(memory_id: object) -> str:
    if not isinstance(memory_id, str) or not is_memory_id(memory_id.strip()):
        raise MemoryInputError(f"{memory_id!r} is not a memory id (ids look like m-3f2a9c1b7e4d: "
                               "take them from the id field of a search hit)")
    return memory_id.strip()


def _checked_amount(amount: object, name: str) -> float:
    if isinstance(amount, bool) or not isinstance(amount, int | float):
        raise MemoryInputError(f"{name} must be a number in (0, 1]")
    value = float(amount)
    if not 0 < value <= 1:
        raise MemoryInputError(f"{name} must be in (0, 1], got {amount}")
    return value


def _aware(moment: dt.datetime | None) -> dt.datetime:
    if moment is None:
        return dt.datetime.now(dt.UTC)
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)


def _stamp(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).isoformat(timespec="seconds")


def _line(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(", ", ": ")) + "\n"


def _append_line(path: Path, line: str) -> None:
    """One whole line in one write, after a newline if a damaged file lacks its last one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(fd).st_size
        prefix = ""
        if size:
            with path.open("rb") as existing:
                existing.seek(size - 1)
                prefix = "" if existing.read(1) == b"\n" else "\n"
        os.write(fd, (prefix + line).encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)


def _replace(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    path.parent.mkdir(parents=True, exist_ok=True)
    with tmp.open("w", encoding="utf-8") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)
