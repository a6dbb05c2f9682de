"""The dates a query names, and how close a daily file's date is to them.

"What did we decide on 3 June 2023?", "what broke in October 2023", "2023年6月3日的会议": a
question that names a day, a month or a year is about notes from then. Daily files carry
their date, so a reranker can prefer the notes of that period, and lean towards the days
just after it (people write about an event a few days later). English and Chinese forms,
plus ISO dates; a month without a year is left alone (it names every year).
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass

_MONTHS = {name.lower(): number for number, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.lower(): number for number, name in enumerate(calendar.month_abbr) if name})
_MONTHS["sept"] = 9
_MONTH = r"(january|february|march|april|may|june|july|august|september|october|november|december|" \
         r"jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\.?"
_ORDINAL = r"(?:st|nd|rd|th)?"
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


def query_periods(text: str) -> list[Period]:
    """The days, months and years ``text`` names, in the order of the patterns above."""
    periods: list[Period] = []
    taken: list[tuple[int, int]] = []
    for pattern, build in _PATTERNS:
        for match in pattern.finditer(text):
            if any(start < match.end() and match.start() < end for start, end in taken):
                continue
            period = build(match)
            if period is not None:
                periods.append(period)
                taken.append((match.start(), match.end()))
    return periods


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
