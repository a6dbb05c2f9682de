"""Credentials in text on its way into memory.

Memory is plain markdown replayed into future prompts: a key written there leaks to every
later model call and every copy of the folder. Detection is by patterns (offline, exact,
testable): the documented token formats of common providers, and generic ``name = value``
shapes for names that mean secret.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# (kind, pattern). Provider token formats are public; the generic rules catch "key = value".
_SECRET_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("private key", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")),
    ("Anthropic API key", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{20,}")),
    ("OpenAI API key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}")),
    ("GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})")),
    ("GitLab token", re.compile(r"\bglpat-[A-Za-z0-9_\-]{20,}")),
    ("AWS access key", re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b")),
    ("Google API key", re.compile(r"\bAIza[A-Za-z0-9_\-]{35}\b")),
    ("Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}")),
    ("Stripe key", re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}")),
    ("Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{30,}")),
    ("JSON Web Token", re.compile(r"\beyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}")),
    ("bearer token", re.compile(r"(?i)\bbearer\s+[A-Za-z0-9_\-\.=]{20,}")),
    ("credential in a URL", re.compile(r"\b[a-z][a-z0-9+.\-]*://[^\s:/@]+:[^\s/@]{3,}@")),
    (
        "password",
        re.compile(
            r"(?i)\b(?:password|passwd|passcode|pwd|passphrase|pin)\b(?:\s+(?:for|on|to|of|at)\s+[^.\n]{1,30}?)?\s*(?:is|was|=|:|：)\s*\S{3,}"
            r"|\b(?:password|passwd|passcode|pwd|passphrase)\s*(?:=|:|：)\s*\S{3,}"
            r"|(?:密码|口令)[^,，。\n]{0,12}?(?:是|为|:|：|=)\s*\S{3,}"
        ),
    ),
    (
        "secret assignment",
        re.compile(
            r"(?i)\b(?:api[_\- ]?key|secret(?:[_\- ]?key)?|access[_\- ]?token|auth[_\- ]?token|client[_\- ]?secret)"
            r"\b\s*(?:is|=|:|：)\s*['\"]?[A-Za-z0-9_\-\.+/=]{12,}"
        ),
    ),
]
_CARD_CANDIDATE = re.compile(r"(?<![\d])(?:\d[ \-]?){12,18}\d(?![\d])")


@dataclass(frozen=True)
class SecretMatch:
    kind: str
    start: int
    end: int


def find_secrets(text: str) -> list[SecretMatch]:
    """Every credential-looking span in ``text``, by kind; card numbers pass the Luhn check."""
    found: list[SecretMatch] = []
    for kind, pattern in _SECRET_PATTERNS:
        for match in pattern.finditer(text):
            found.append(SecretMatch(kind, match.start(), match.end()))
    for match in _CARD_CANDIDATE.finditer(text):
        digits = re.sub(r"\D", "", match.group(0))
        if 13 <= len(digits) <= 19 and _luhn_ok(digits) and len(set(digits)) > 1:
            found.append(SecretMatch("payment card number", match.start(), match.end()))
    found.sort(key=lambda m: (m.start, -m.end))
    return found


def contains_secret(text: str) -> bool:
    return bool(find_secrets(text))


def redact_secrets(text: str) -> str:
    """``text`` with each secret replaced by ``[redacted <kind>]``."""
    out: list[str] = []
    position = 0
    for match in find_secrets(text):
        if match.start < position:
            continue  # overlaps a span already redacted
        out.append(text[position : match.start])
        out.append(f"[redacted {match.kind}]")
        position = match.end
    out.append(text[position:])
    return "".join(out)


def _luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        value = int(ch)
        if i % 2 == 1:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0
