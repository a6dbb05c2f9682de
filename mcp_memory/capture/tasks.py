"""Tasks, to-dos, reminders and near-future plans, in English and Chinese.

"TODO: next we need to migrate the invoices table before Friday" is work to be done once,
soon: a person would put it on a list, not in their notes of what was decided. Capture
therefore never writes such a sentence as a decision or a fact, whatever it looks like
otherwise ("we need to" reads like a rule), and the compaction rescue, which exists to keep
open work across a compaction, files it as ``[task]``. Both ask the same question here.

A sentence is a task when it carries a to-do marker ("TODO", an unchecked ``- [ ]`` box,
"remember to", "don't forget to", "next we need to", "待办", "记得", "下一步"), a deadline
("before Friday", "by end of day", "周五前"), an intention or obligation set in the next days
("we should upgrade Node tomorrow", "明天要发版"), or an obligation to do a one-off piece of
work ("we need to fix the flaky test", "要把报告发给客户"). A standing rule is not a task,
even when it uses the same words: "remember to always rebase", "we must never push to main",
"每次上线前都要跑测试". Neither is a dated fact without an intention: "the demo is tomorrow".

The third-person forms capture writes ("the team needs to ...", "before 2026-11-27") are
understood too, so facts coming back from a model are checked the same way.
"""

from __future__ import annotations

import re

_WEEKDAY = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
_ISO_DATE = r"\d{4}-\d{2}-\d{2}"

# ----- English -------------------------------------------------------------------------------
_EN_SUBJECT = r"(?:i|we|you|the team|our team|the user|they|he|she)"
_EN_MARKER = re.compile(
    r"\bTODO\b|\bFIXME\b|(?i:^\s*(?:[-*+•]\s*)?\[\s?\])|(?i:^\s*todo\b|^\s*to-?do\s*[:\-])"
    r"|(?i:^\s*(?:action items?|follow[- ]ups?|next steps?|next up|reminder|to do|plans? for [\w\s]{1,20}?)\s*[:\-])"
    r"|(?i:\bnext,?\s+(?:i|we|the team|the user)\b(?:'ll|\s+(?:will|need|needs|have|has|should|must|are|is|'re|am)\b))"
    r"|(?i:\b(?:i|we|the team|the user)\s+still\s+(?:need|needs|have|has|must|should|got)\s+to\b)"
    r"|(?i:\bstill\s+to\s+do\b)"
    r"|(?i:\b(?:remind (?:me|us|the team|the user|him|her|them)|remember|don't forget|do not forget|dont forget|"
    r"make a note|make sure not to forget)\s+to\s+\w+)",
)
_EN_STANDING = re.compile(
    r"(?i)\b(?:always|never|every|whenever|each time|from now on|going forward|moving forward|by default|"
    r"as a rule|no matter|all (?:new |future )?(?:pull requests|prs|commits|releases|deploys|services|projects)|"
    r"on (?:mondays|tuesdays|wednesdays|thursdays|fridays|saturdays|sundays|weekdays|weekends)|"
    r"(?:daily|weekly|monthly|yearly|nightly)\b)"
)
_EN_SOON = (
    r"(?:tomorrow|tonight|later today|later this (?:week|month)|this (?:afternoon|evening|week|weekend|sprint)|"
    r"next (?:week|sprint|month|" + _WEEKDAY + r")|on " + _WEEKDAY + r"(?!s)|after lunch|first thing|asap|"
    r"as soon as possible|soon|in (?:a|an|one|two|three|a few|\d+) (?:minutes?|hours?|days?|weeks?)|"
    r"on " + _ISO_DATE + r")"
)
_EN_DEADLINE = re.compile(
    r"(?i)\b(?:by|before|no later than)\s+(?:the\s+)?(?:end of (?:the )?(?:day|week|month|sprint|quarter)|eod|eow|cob|"
    r"noon|lunch|tomorrow|tonight|" + _WEEKDAY + r"(?!s)|next (?:week|sprint|month)|" + _ISO_DATE + r"|"
    r"(?:the\s+)?(?:next\s+)?(?:release|demo|launch|audit|freeze|deadline|offsite|meeting|review|cutover))\b"
)
_EN_INTENT = re.compile(
    r"(?i)\b" + _EN_SUBJECT + r"(?:'ll|'re|'m|'ve got|\s+(?:\w+ly\s+|really\s+|just\s+|also\s+|still\s+|then\s+)*"
    r"(?:need|needs|have|has|got|must|should|ought|will|shall|want|wants|plan|plans|intend|intends|am|are|is|gotta|"
    r"gonna|would like))\b"
)
_EN_SOON_AFTER_INTENT = re.compile(r"(?i)\b" + _EN_SOON + r"\b")
_EN_OBLIGATION = re.compile(  # with its subject, or without one at the start ("need to reply to Sam")
    r"(?i)(?:\b(?:i|we|the team|our team|the user)\s+|^\s*)"
    r"(?:\w+ly\s+|really\s+|just\s+|also\s+|still\s+|then\s+|first\s+)*"
    r"(?:need|needs|have|has|must|should|ought|got|'ve got|gotta)\s+(?:to\s+)?(?:first\s+|still\s+|also\s+)?"
    r"(?:migrate|fix|add|update|write|rename|remove|delete|ship|release|send|email|call|ping|book|buy|order|"
    r"finish|complete|review|merge|upgrade|bump|rotate|clean|set up|refactor|rewrite|move|investigate|look into|"
    r"file|open|close|schedule|prepare|draft|publish|backfill|reply|submit|renew|cancel|pay|reboot|restart|patch|"
    r"debug|check|create|wire|hook up|benchmark|deploy|wrap up|sort out|figure out|talk to|ask|tell|follow up|"
    r"sync with|reach out|get back|pick up|land|roll out|roll back|revert|document|port|archive|tag|cut|resolve|"
    r"finali[sz]e|implement|install|configure|replace|split|retry|rerun|re-run)\b"
)

# ----- Chinese -------------------------------------------------------------------------------
_ZH_MARKER = re.compile(
    r"待办|待做|TODO|备忘[::]|提醒(?:我|一下|我们|大家)|下一步|接下来(?:要|需要|得|还要|还得|还需要)|还需要|还要|还得"
    r"|尚未完成|回头(?:要|得|再|记得)|稍后(?:要|得|再)|之后(?:要|得)|^\s*(?:[-*+•]\s*)?\[\s?\]"
    r"|(?:记得|别忘了|别忘记|不要忘了|不要忘记|千万别忘)(?:要|去|把|给|提醒|跟|和|找|在|先|再)?"
    r"(?:把|给|提|发|打|回|交|买|取|带|开|关|看|找|约|处理|修|改|跑|写|删|加|更新|提交|合并|上线|部署|升级|清理|整理|"
    r"联调|测试|检查|预订|订|续|准备|完成|跟进|确认|回复|排查|备份|迁|补|通知|告诉|问|催)"
)
_ZH_STANDING = re.compile(
    r"以后|今后|往后|将来|永远|一直|总是|始终|一律|每次|默认|从现在(?:开始|起)|长期"
    r"|每(?:[天日周月年]|个(?:月|星期|礼拜|周)|星期|礼拜|逢)"
)
_QUESTION = re.compile(r"[??]\s*$|要不要|是不是|能不能|可不可以|[吗呢]\s*[。.]?$")
_RULE_OF_ALL = re.compile(r"所有|凡是|都(?:要|得|需要|必须|应该)|(?i:\ball\b)")  # "所有接口都要...": a rule
_ZH_SOON = (
    r"(?:明天|明早|明晚|后天|大后天|今晚|今天|今早|今天下午|待会儿?|一会儿|稍后|这周|本周|这个?星期|下周[一二三四五六日天]?"
    r"|下个?(?:星期|礼拜)[一二三四五六日天]?|(?<!每)(?:周|星期|礼拜)[一二三四五六日天]|月底|月初|下个月|本月|这个月|下班"
    r"|午饭|" + _ISO_DATE + r")"
)
# "要" and "得" but not inside other words: 主要, 重要, 只要, 不要 (a rule), 觉得, 值得 ...
_ZH_MUST = r"(?:(?<![主重只想不总需])要|需要|(?<![觉记获懂值使晓难])得|必须|应该)"
_ZH_MODAL = r"(?:" + _ZH_MUST + r"|准备|打算|计划|记得|赶紧|尽快|争取)"
_ZH_DEADLINE = re.compile(_ZH_SOON + r"\s*(?:之前|以前|前|为止)")
_ZH_SOON_PLAN = re.compile(
    _ZH_SOON + r"[^,,。;;!!]{0,4}?" + _ZH_MODAL + r"|" + _ZH_MODAL + r"(?:在)?\s*" + _ZH_SOON
)
_ZH_OBLIGATION = re.compile(
    _ZH_MUST + r"(?:先|再|尽快|赶紧|马上|还)?(?:把|给"
    r"|迁移|修复?|补上?|更新|写|删掉?|发给?|提交|合并|上线|部署|升级|清理|整理|处理|联调|排查|重构|备份|续费|预订|订|买|交)"
)


def is_task(sentence: str) -> bool:
    """Whether ``sentence`` (English or Chinese) is a task, to-do, reminder or near-future plan."""
    return marked_task(sentence) or _obligation(sentence)


def marked_task(sentence: str) -> bool:
    """A task by a marker, a deadline or a plan set in the next days: the surest signs."""
    text = sentence.strip()
    if _EN_MARKER.search(text) or _ZH_MARKER.search(text):
        return not _standing(text) or bool(re.search(r"\bTODO\b|\[\s?\]|待办", text))
    if _standing(text) or _QUESTION.search(text):
        return False
    if _EN_DEADLINE.search(text) or _ZH_DEADLINE.search(text) or _ZH_SOON_PLAN.search(text):
        return True
    intent = _EN_INTENT.search(text)
    return bool(intent and _EN_SOON_AFTER_INTENT.search(text, intent.end()))


def _obligation(sentence: str) -> bool:
    """An obligation to do a one-off piece of work ("we need to fix the flaky test")."""
    text = sentence.strip()
    if _standing(text) or _RULE_OF_ALL.search(text) or _QUESTION.search(text):
        return False
    return bool(_EN_OBLIGATION.search(text) or _ZH_OBLIGATION.search(text))


def _standing(text: str) -> bool:
    return bool(_EN_STANDING.search(text) or _ZH_STANDING.search(text))
