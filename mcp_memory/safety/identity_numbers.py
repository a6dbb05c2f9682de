"""National identity numbers in text on its way into memory.

A national identity number opens bank accounts and loans in its holder's name; like a card
number it never belongs in notes that are replayed into every later prompt and copied with the
folder. Two are recognised, each by its own structure so that order, phone and ticket numbers
pass:

* **US Social Security numbers**, only where the text names them ("SSN", "social security
  number"): nine digits (``078-05-1120``, ``078 05 1120``, ``078051120``) whose area is not 000,
  666 or 900-999, whose group is not 00 and whose serial is not 0000.
* **Chinese resident identity numbers** (居民身份证号码): a province code, a birth date that
  exists, a sequence and a check character. Named ("身份证", "ID card", ...), a number with a
  real date is enough, as a mistyped one is still personal; unnamed, its ISO 7064 MOD 11-2 check
  character must be right as well.

Detection reads the normalised text of ``secrets.py`` and reports spans in it.
"""

from __future__ import annotations

import datetime as dt
import re

_SSN_NAME = re.compile(
    r"(?i)\b(?:ssn|social[ -]security(?:[ -](?:number|no\b\.?|num\b|#))?|社会安全号码?|社會安全號碼?)"
)
_SSN = re.compile(r"(?<![\d-])(\d{3})([- ]?)(\d{2})\2(\d{4})(?![\d-])")
_SSN_GAP = 24  # characters between the name and the number ("SSN is", "social security number: ")
_SSN_LENGTH = 11  # nine digits and two separators
_SENTENCE_END = re.compile(r"[.!?\n]")

_CN_ID = re.compile(r"(?<![0-9A-Za-z])([1-9]\d)\d{4}((?:18|19|20)\d{2})(\d{2})(\d{2})\d{3}[\dXx](?![0-9A-Za-z])")
_CN_NAME = re.compile(
    r"(?i)身份证|身份證|身份号码|身份號碼|居民身份|证件号|證件號|\bid[ -]?card\b|\bidentity (?:card|number)\b|"
    r"\bresident id\b|\bchinese id\b|\bnational id\b"
)
_CN_PROVINCES = frozenset({
    11, 12, 13, 14, 15, 21, 22, 23, 31, 32, 33, 34, 35, 36, 37, 41, 42, 43, 44, 45, 46, 50, 51, 52, 53, 54,
    61, 62, 63, 64, 65, 71, 81, 82, 83, 91,
})
_CN_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_CN_CHECK = "10X98765432"
_NAME_REACH = 30  # characters before a number its name may stand in


def identity_numbers(text: str) -> list[tuple[str, int, int]]:
    """(kind, start, end) of each national identity number in ``text``."""
    found: list[tuple[str, int, int]] = []
    if any(ch.isdigit() for ch in text):
        found += _ssns(text)
        found += _resident_ids(text)
    return found


def _ssns(text: str) -> list[tuple[str, int, int]]:
    found = []
    for name in _SSN_NAME.finditer(text):
        match = _SSN.search(text, name.end(), name.end() + _SSN_GAP + _SSN_LENGTH)
        if match is None or _SENTENCE_END.search(text, name.end(), match.start()):
            continue
        area, group, serial = int(match.group(1)), int(match.group(3)), int(match.group(4))
        if area in (0, 666) or area >= 900 or group == 0 or serial == 0:
            continue
        found.append(("social security number", match.start(), match.end()))
    return found


def _resident_ids(text: str) -> list[tuple[str, int, int]]:
    found = []
    for match in _CN_ID.finditer(text):
        if int(match.group(1)) not in _CN_PROVINCES or not _real_date(*map(int, match.group(2, 3, 4))):
            continue
        named = _CN_NAME.search(text, max(0, match.start() - _NAME_REACH), match.start()) is not None
        if named or _cn_check_ok(match.group(0)):
            found.append(("resident identity number", match.start(), match.end()))
    return found


def _real_date(year: int, month: int, day: int) -> bool:
    try:
        born = dt.date(year, month, day)
    except ValueError:
        return False
    return born <= dt.date.today()


def _cn_check_ok(number: str) -> bool:
    """ISO 7064 MOD 11-2: the 18th character follows from the first 17 digits."""
    total = sum(int(digit) * weight for digit, weight in zip(number[:17], _CN_WEIGHTS, strict=True))
    return _CN_CHECK[total % 11] == number[17].upper()
