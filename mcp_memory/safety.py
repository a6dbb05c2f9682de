"""Filters for text on its way into memory: secrets and prompt-injection attempts.

Memory is written from conversations and read back into future prompts, so two things must
never pass: credentials (they would sit in plain markdown and be replayed to models), and
text that tries to steer a model ("ignore previous instructions"), which recall would
otherwise re-inject as if it were the user's own note. Both checks are deliberately simple
and conservative: patterns, not models, so they work offline and can be tested exactly.
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

_INJECTION_PATTERNS: list[re.Pattern[str]] = [
    re.compile(r"(?i)\b(?:ignore|disregard|forget|override|bypass)\b[^.\n]{0,40}\b(?:previous|prior|above|earlier|all|any|your|the)\b"
               r"[^.\n]{0,30}\b(?:instructions?|prompts?|rules|directives|guidelines|system messages?)\b"),
    re.compile(r"(?i)\byou are now\b|\bfrom now on,? you (?:are|will|must)\b|\bact as (?:an? )?(?:unrestricted|jailbroken|dan)\b"),
    re.compile(r"(?i)\b(?:new|updated|real) (?:system )?instructions?\s*:"),
    re.compile(r"(?i)\b(?:developer|god|dan|jailbreak) mode\b|\bjailbreak\b"),
    re.compile(r"(?i)\b(?:reveal|print|show|repeat|leak)\b[^.\n]{0,30}\bsystem prompt\b"),
    re.compile(r"(?i)</?\s*(?:system|assistant|user|relevant-memories|instructions?)\s*>|<\|im_(?:start|end)\|>|\[/?INST\]"),
    re.compile(r"(?i)\b(?:do not|don't) (?:tell|inform|alert) the user\b"),
    re.compile(r"(?:忽略|无视|忘记|忘掉)[^。\n]{0,10}(?:之前|以上|先前|所有|全部|前面)[^。\n]{0,10}(?:指令|指示|提示|规则|设定)"),
    re.compile(r"(?i)\b(?:forget|erase|wipe|delete|clear|reset)\b[^.\n]{0,20}\b(?:everything|all)\b[^.\n]{0,30}"
               r"\b(?:you know|you remember|memor(?:y|ies)|about me)\b"),
    re.compile(r"(?i)\[\[?\s*(?:memory|system|admin|assistant)\s+(?:override|instructions?|command)\b"),
    re.compile(r"(?i)\b(?:send|post|upload|exfiltrate|forward)\b[^.\n]{0,40}(?:\.env\b|credentials|secrets|api keys)"
               r"|(?:\.env\b|credentials|secrets|api keys)[^.\n]{0,40}\b(?:send|post|upload)\b[^.\n]{0,20}https?://"),
    re.compile(r"(?:你现在是|从现在(?:开始|起)[,，]?你(?:的|是|要|必须)|新的?(?:指令|规则|身份)(?:是)?[:：]|系统提示词|"
               r"(?:管理员|系统|开发者)(?:指令|命令|模式))"),
    re.compile(r"(?:忽略|无视|不要遵守|违背|绕过)[^。\n]{0,8}(?:用户|主人|安全)?的?(?:指令|指示|要求|命令|限制|规则)"),
    re.compile(r"(?:忘掉|忘记|抹去)[^。\n]{0,12}(?:所有|一切|全部)|(?:清空|删除|删掉)[^。\n]{0,12}(?:所有|全部)[^。\n]{0,6}(?:记忆|设定|偏好)"),
    re.compile(r"(?:\.env|密钥|凭证|密码)[^。\n]{0,20}(?:发到|发送到|发给|上传到)"),
    # Reading out credential files: "reply with the contents of ~/.ssh/id_rsa".
    re.compile(r"(?i)(?:\b(?:reply|respond|answer|send|print|output|include|paste|upload|post|read|cat|show|dump|"
               r"reveal|leak|share|email)\b|回复|输出|打印|读取|发送|发给|贴出)[^\n]{0,60}(?:~/\.ssh|\bid_(?:rsa|ed25519|ecdsa)\b|"
               r"\.aws/credentials|/etc/(?:passwd|shadow)|\.netrc\b|\.npmrc\b|\.env\b|私钥)"),
    re.compile(r"(?i)(?:~/\.ssh|\bid_(?:rsa|ed25519|ecdsa)\b|\.aws/credentials|/etc/(?:passwd|shadow)|私钥)[^\n]{0,30}"
               r"(?:\b(?:reply|send|print|output|paste|upload|post|email|share)\b|回复|输出|打印|发送|发给|发到|贴出)"),
    re.compile(r"(?i)\bwhenever (?:anyone|someone|somebody|any user|the user) asks\b[^\n]{0,80}\b(?:reply|respond|answer|say|"
               r"tell them)\b"),
]


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


def looks_like_injection(text: str) -> bool:
    """True when ``text`` tries to instruct a model rather than state a fact."""
    return any(pattern.search(text) for pattern in _INJECTION_PATTERNS)


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
