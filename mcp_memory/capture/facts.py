"""A captured fact, and how relative dates in it become absolute.

A memory is read weeks later, so "tomorrow" or "明天" must be pinned to a calendar day and
every fact carries the day it was learned: "The user prefers pnpm over npm (2026-11-26)".
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

CATEGORIES = ("preference", "decision", "entity", "fact", "other")
_LEARNED = re.compile(r"\(\d{4}-\d{2}-\d{2}\)$")
_WEEKDAYS_EN = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_WEEKDAYS_ZH = "一二三四五六日"


@dataclass(frozen=True)
class Fact:
    """One atomic, third-person memory, ready to be written as a bullet."""

    text: str
    category: str = "fact"
    source: int | None = None  # index of the message it came from, when known


def normalise_category(value: object) -> str:
    category = str(value or "").strip().lower()
    return category if category in CATEGORIES else "other"


def with_date(text: str, today: dt.date) -> str:
    """One line, relative days made absolute, ending with the day it was learned."""
    text = " ".join(text.split()).rstrip(" .。;;")  # noqa: B005 (a set of characters)
    text = absolute_dates(text, today)
    if _LEARNED.search(text):
        return text
    return f"{text} ({today.isoformat()})"


def absolute_dates(text: str, today: dt.date) -> str:
    """Replace today/tomorrow/yesterday, next/this <weekday> and their Chinese forms by dates."""
    def day(offset: int) -> str:
        return (today + dt.timedelta(days=offset)).isoformat()

    out = re.sub(r"(?i)\bthe day after tomorrow\b", f"on {day(2)}", text)
    out = re.sub(r"(?i)\b(?:tomorrow)\b", f"on {day(1)}", out)
    out = re.sub(r"(?i)\byesterday\b", f"on {day(-1)}", out)
    out = re.sub(r"(?i)\b(?:today|tonight)\b", f"on {day(0)}", out)
    out = re.sub(r"\bon on\b", "on", out)

    def english_weekday(match: re.Match[str]) -> str:
        index = _WEEKDAYS_EN.index(match.group(2).lower())
        return f"on {_weekday_date(today, index, match.group(1).lower() == 'next')}"

    out = re.sub(r"(?i)\b(?:on\s+)?(next|this)\s+(" + "|".join(_WEEKDAYS_EN) + r")\b", english_weekday, out)

    def chinese_weekday(match: re.Match[str]) -> str:
        index = _WEEKDAYS_ZH.index("日" if match.group(3) == "天" else match.group(3))
        return f" {_weekday_date(today, index, match.group(1) == '下')} "

    out = re.sub(r"(下|这|本)(?:个)?(周|星期|礼拜)([一二三四五六日天])", chinese_weekday, out)
    for word, offset in (("大后天", 3), ("后天", 2), ("明天", 1), ("今天", 0), ("今晚", 0), ("昨天", -1), ("前天", -2)):
        out = out.replace(word, f" {day(offset)} ")
    return " ".join(out.split())


def _weekday_date(today: dt.date, index: int, following_week: bool) -> str:
    """The date of weekday ``index`` (0 = Monday) in this week, or in the next one."""
    monday = today - dt.timedelta(days=today.weekday())
    if following_week:
        monday += dt.timedelta(days=7)
    return (monday + dt.timedelta(days=index)).isoformat()
