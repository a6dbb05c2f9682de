"""The dates a query names, and how close a daily file's date is to them.

"What did we decide on 3 June 2023?", "what broke in October 2023", "2023年6月3日的会议": a
question that names a day, a month or a year is about notes from then. Daily files carry
their date, so a reranker can prefer the notes of that period, and lean towards the days
just after it (people write about an event a few days later). English and Chinese forms,
plus ISO dates. A day without a year ("on May 4th", "5月4号") is the last such day up to the
day of the search: one asks a memory about the past. A month without a year is left alone (it
names every year).
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

_MONTHS = {name.lower(): number for number, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.lower(): number for number, name in enumerate(calendar.month_abbr) if name})
_MONTHS["sept"] = 9
_MONTH = r"(january|february|march|april|may|june|july|august|september|october|november|december|" \
         r"jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\.?"
_ORDINAL = r"(?:st|nd|rd|th)?"
_DIGIT = re.compile(r"\d")
HALF_DISTANCE_DAYS = 14.0  # a file this many days outside the period counts half


@dataclass(frozen=True)
class Period:
    first: dt.date
    last: dt.date


def _day(year: str, month: int | str, day: str) -> Period | None:
    try:
        date = dt.date(int(year), int(month), int(day))
    except ValueError:
        return None
    return Period(date, date)


def _month(year: str, month: int | str) -> Period | None:
    y, m = int(year), int(month)
    if not (1 <= m <= 12 and 1 <= y <= 9999):
        return None
    return Period(dt.date(y, m, 1), dt.date(y, m, calendar.monthrange(y, m)[1]))


def _year(year: str) -> Period | None:
    y = int(year)
    return Period(dt.date(y, 1, 1), dt.date(y, 12, 31)) if 1900 <= y <= 2200 else None


def _recent_day(month: int | str, day: str, today: dt.date) -> Period | None:
    """The last ``month``/``day`` on or before ``today`` (within the eight years before it: Feb 29)."""
    for year in range(today.year, today.year - 8, -1):
        try:
            date = dt.date(year, int(month), int(day))
        except ValueError:
            continue
        if date <= today:
            return Period(date, date)
    return None


def _month_number(name: str) -> int | None:
    """The month an English name says; "may" only capitalised, as "May" (else the verb)."""
    if name.lower().rstrip(".") == "may" and name != "May":
        return None
    return _MONTHS.get(name.lower().rstrip("."))


# Days without a year, read only against the day of the search, after the forms with a year.
_YEARLESS: list[tuple[re.Pattern[str], Callable[[re.Match[str], dt.date], Period | None]]] = [
    (re.compile(rf"\b{_MONTH}\s+(\d{{1,2}}){_ORDINAL}\b(?![:.]?\d)", re.IGNORECASE),
     lambda m, today: _recent_day(month, m[2], today) if (month := _month_number(m[1])) else None),
    (re.compile(rf"\b(\d{{1,2}}){_ORDINAL}\s+(?:of\s+)?{_MONTH}(?!\w)", re.IGNORECASE),
     lambda m, today: _recent_day(month, m[1], today) if (month := _month_number(m[2])) else None),
    (re.compile(r"(?<![\d年])(\d{1,2})\s*月\s*(\d{1,2})\s*[日号號]"), lambda m, today: _recent_day(m[1], m[2], today)),
]

# Most specific first: a span taken by a day is not read again as a month or a year.
_PATTERNS: list[tuple[re.Pattern[str], Callable[[re.Match[str]], Period | None]]] = [
    (re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b"), lambda m: _day(m[1], m[2], m[3])),
    (re.compile(r"(\d{4})\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]"), lambda m: _day(m[1], m[2], m[3])),
    (re.compile(rf"\b(\d{{1,2}}){_ORDINAL}\s+(?:of\s+)?{_MONTH},?\s+(\d{{4}})\b", re.IGNORECASE),
     lambda m: _day(m[3], _MONTHS[m[2].lower()], m[1])),
    (re.compile(rf"\b{_MONTH}\s+(\d{{1,2}}){_ORDINAL},?\s+(\d{{4}})\b", re.IGNORECASE),
     lambda m: _day(m[3], _MONTHS[m[1].lower()], m[2])),
    (re.compile(r"(\d{4})\s*年\s*(\d{1,2})\s*月"), lambda m: _month(m[1], m[2])),
    (re.compile(r"\b(\d{4})-(\d{1,2})\b(?!-)"), lambda m: _month(m[1], m[2])),
    (re.compile(rf"\b{_MONTH},?\s+(\d{{4}})\b", re.IGNORECASE), lambda m: _month(m[2], _MONTHS[m[1].lower()])),
    (re.compile(r"\b(?:in|of|since|during|from|year)\s+(\d{4})\b", re.IGNORECASE), lambda m: _year(m[1])),
    (re.compile(r"(\d{4})\s*年"), lambda m: _year(m[1])),
]


def query_periods(text: str, today: dt.date | None = None) -> list[Period]:
    """The days, months and years ``text`` names, in the order of the patterns above; with
    ``today``, also the days it names without a year (the last such day up to ``today``)."""
    return [period for period, _ in named_periods(text, today)]


def named_periods(text: str, today: dt.date | None = None) -> list[tuple[Period, str]]:
    """``query_periods`` with the words of ``text`` that name each period ("May 4th", "5月4号")."""
    found: list[tuple[Period, str]] = []
    if not _DIGIT.search(text):
        return found  # every form holds a number: a long text without one is read once, not per form
    taken: list[tuple[int, int]] = []
    patterns: list[tuple[re.Pattern[str], Callable[[re.Match[str]], Period | None]]] = list(_PATTERNS)
    if today is not None:
        patterns += [(pattern, partial(_on_day, build, today)) for pattern, build in _YEARLESS]
    for pattern, build in patterns:
        for match in pattern.finditer(text):
            if any(start < match.end() and match.start() < end for start, end in taken):
                continue
            period = build(match)
            if period is not None:
                found.append((period, match.group(0)))
                taken.append((match.start(), match.end()))
    return found


def _on_day(build: Callable[[re.Match[str], dt.date], Period | None], today: dt.date,
            match: re.Match[str]) -> Period | None:
    return build(match, today)


def date_closeness(periods: list[Period], date: dt.date | None) -> float:
    """1.0 inside a period, halving every ``HALF_DISTANCE_DAYS`` outside; 0.0 without periods or date."""
    if not periods or date is None:
        return 0.0
    best = 0.0
    for period in periods:
        if period.first <= date <= period.last:
            return 1.0
        distance = (period.first - date).days if date < period.first else (date - period.last).days
        best = max(best, 0.5 ** (distance / HALF_DISTANCE_DAYS))
    return best
