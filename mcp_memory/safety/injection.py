"""Prompt injections in text on its way into memory.

Recall re-injects memories into future prompts. Text that tries to steer a model ("ignore
previous instructions") would come back as if it were the user's own note, so it is refused
at the door. Detection is by patterns (offline, exact, testable), by family and language.
"""

from __future__ import annotations

import re

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


def looks_like_injection(text: str) -> bool:
    """True when ``text`` tries to instruct a model rather than state a fact."""
    return any(pattern.search(text) for pattern in _INJECTION_PATTERNS)
