"""Changed facts: whether a later memory gives a new value to what an earlier one stated.

"The user prefers npm" and, weeks later, "The user now prefers pnpm, no longer npm" are both
on disk; the later one is the truth. ``supersedes`` reads two memories (text and date) and says
whether the later updates the earlier. It is pure text logic, in English, Chinese and across the
two, shared by the sleep cycle (``lifecycle/consolidation.py``, which adds its cosine gate) and by
every search mode (``settle``: among a result's first hits, an earlier memory the later one
updates is moved just below it and names it in ``replaced_by``).

A false "update" hides a true memory, so the rules ask for positive evidence and refuse on any
sign of two facts that both hold. Two kinds of pair are read as an update:

* **a change said in words**: the later holds a change cue ("now", "no longer", "switched",
  "moved to", "instead of", "as of", "went up to", 改用, 不再, 换成, 搬到, 现在, 已经, 涨到, 从…起)
  and is about the same thing: it names the earlier's value after "no longer", "instead of",
  "from", "replaced", 不再, 从… ("now pnpm, no longer npm"); or they share specific words (a name,
  a noun; Chinese character pairs); or the same subject and the same kind of fact ("the user's
  manager" / "the user now reports to"; across languages, names, Latin words and the bilingual
  words of ``_CONCEPTS``);
* **the same sentence with one value replaced** ("The staging DB is on db-1" → "… db-2"): one
  differing stretch of words, not at the start (there it names another subject: "Bob's phone" /
  "Carol's phone", 华东区 / 华北区), in statements of state, not of events.

Refused whatever the cue: an addition ("also", "too", 也, 还, 又), an action and its reversal
(``core/opposites.py``), different owners ("Bob's" / "Carol's", 小王的 / 小李的), contrasting
qualifiers (staging / production, sister / brother, iOS / Android, 前端 / 后端), different
``[category]`` tags, an earlier event (what happened stays true) or a plan beside one, pairs where
the later says nothing new or the earlier nothing the later lacks, and what is not one short
statement of fact: a question, a line of a conversation ("**Jon:** ..."), a passage.
"""

from __future__ import annotations

import datetime as dt
import difflib
import functools
import itertools
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from mcp_memory.core.hits import SearchHit
from mcp_memory.core.memory_ids import HTML_COMMENT, LIST_MARKER, split_memories
from mcp_memory.core.opposites import opposed

if TYPE_CHECKING:
    from mcp_memory.core.memory_lookup import MemoryLookup

# How many of a result's first hits are read for updates (0: off). A newer memory found among
# them takes the place of an older one it updates even when it ranked below the hits shown.
SEARCH_WINDOW = 20
# A later memory worded unlike the query is often not among those hits at all ("which editor does
# the user like" finds "favourite editor is Sublime Text", not "now mostly uses Zed"). So the first
# NEAR_STATEMENTS dated statements shown also bring the memories closest to themselves (their own
# words and vector): up to NEAR_PER_STATEMENT each, with a cosine of at least NEAR_COSINE, the
# sleep cycle's lowest gate for an update (lifecycle/consolidation.py). The text rules decide.
NEAR_STATEMENTS = 3
NEAR_PER_STATEMENT = 4
NEAR_COSINE = 0.5

MAX_TOKENS = 40  # a memory longer than this (words; Chinese: characters) is a passage, not one fact
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_TOKEN = re.compile(rf"\d+(?:[.:]\d+)*|@?[a-z]+(?:'s\b)?|[{_CJK}]")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_CATEGORY = re.compile(r"^\[([A-Za-z][\w-]{0,30})\]\s*")
_STATED = re.compile(r"\((\d{4}-\d{2}-\d{2})\)\s*$")

# A change said in words. English phrases match whole words; Chinese ones anywhere.
_CHANGE_EN = re.compile(
    r"\b(?:now|no longer|anymore|any more|nowadays|these days|currently|from now on|as of|instead|"
    r"switch(?:ed|es|ing)?|chang(?:ed|es|ing)|mov(?:ed|es|ing)|migrat(?:ed|es|ing)|replac(?:ed|es|ing)|"
    r"went (?:up|down)|gone (?:up|down)|raised|lowered|increased|decreased|bumped|reduced|cut|shortened|"
    r"extended|lengthened|rescheduled|postponed|pushed back|delayed|upgrad(?:ed|es|ing|e)|downgrad(?:ed|es|ing|e)|"
    r"sold|dropped|relocated|transferred|handed over|passed to|took over|taken over|reassigned|renamed|updated|"
    r"became|stopped|quit|gave up|rather than)\b")
# "new" says a change only of something one has one of at a time ("new email address").
_NEW_VALUE = re.compile(r"\bnew (?:email|e-mail|mail|address|phone|number|id|handle|home|flat|apartment|office|"
                        r"desk|role|title|manager|boss|lead|owner|host|server|url|domain|name|price|rate|plan)\b")
_CHANGE_ZH = re.compile(
    r"现在|目前|如今|已经|改用|改成|改为|改到|改约|改了|换成|换了|换到|换为|更换|不再|不用了|没再|搬到|搬去|搬了|迁移|迁到|"
    r"调到|调整|调为|调成|调去|挪到|涨到|涨价|涨了|降到|降为|降了|提高到|提升到|降低到|升级到|升到|缩短|延长|交给|转给|移交|"
    r"接手|接管|收回|以后|今后|从此|变成|变为|取代|代替|替换|从.{1,8}起")
# After these the earlier value is named as the one left behind ("no longer npm", 不再用蓝湖).
_LEFT_BEHIND = re.compile(
    r"\b(?:no longer|not|instead of|rather than|replac(?:ed|ing)|dropped|sold|quit|stopped using|"
    r"(?:switch|mov|migrat|chang)\w* from|from(?! now)(?=.{1,40}\bto\b))\b"
    r"|\b(?:the|my|our|his|her|their) (?:old|former|previous)\b"
    r"|不再|不用|从(?=.{1,12}(?:迁|换|改|搬|转|调))|取代|替换掉|代替|卖了|旧的|原来的|之前的|"
    r"把(?=.{1,12}(?:换成|改成|改为|替换))")
_ADDITION = re.compile(r"\b(?:also|too|as well|another|in addition|additionally|besides|again|still|both)\b"
                       r"|也|还|又|另外|同时|再次|以及|仍|依然|照样")
_PLAN = re.compile(r"\b(?:plans?|planning|will|going to|intends?|next (?:week|month|year|summer|winter|spring|"
                   r"autumn|fall))\b|计划|打算|准备|将要|下个月|明年|下周")
_PAST_EN = re.compile(r"\b(?:was|were|had|did|went|yesterday|ago|last (?:week|month|year|night))\b")
_PAST_FIRST = re.compile(r"^(?:[a-z]+ed|paid|went|met|held|had|made|sent|bought|took|gave|got|ran|saw|wrote|"
                         r"began|left|found|built|did|said|told|spent|won|lost|flew|drove|ate)\b")
_STATE = re.compile(r"\b(?:is|are|am|has|have|(?:cost|use|run|live|work|take|prefer|like|want|need|own|lead|manage|"
                    r"start|end|open|close|expire|renew|keep|hold|go|sit|stay|belong|mean)s?)\b")
_LIKES = re.compile(r"\b(?:likes?|loves?|enjoys?)\b|喜欢|爱吃|爱喝|爱看|爱听|爱玩")
_PAST_ZH = re.compile(rf"[了过](?=[{_CJK}\w])")
_CJK_CHAR = re.compile(rf"[{_CJK}]")
# A question, or a line of a conversation ("**Jon:** ...", "user: ..."), states no fact of its own.
_NOT_A_STATEMENT = re.compile(
    r"[?？]|^\*\*[^*\n]{1,40}?(?:[:：]\s*\*\*|\*\*\s*[:：])|^(?:user|assistant|human|ai|system|model)\s*[:：]")
_SENTENCE_END = re.compile(r"[.!?](?=\s+[a-z])|[。！？](?=.)")

_STOP_EN = frozenset((
    "a", "an", "the", "is", "are", "am", "be", "been", "being", "of", "in", "on", "at", "to", "for", "with", "by",
    "from", "as", "and", "or", "but", "it", "its", "this", "that", "these", "those", "our", "we", "us", "i", "my",
    "me", "you", "your", "he", "she", "his", "her", "they", "them", "their", "has", "have", "do", "does", "will",
    "would", "should", "can", "could", "there", "here", "about", "into", "than", "then", "so", "if", "up", "down",
    "per", "every", "each", "very", "just", "mostly", "usually", "was", "were", "had", "did", "got", "get", "go",
    "goes", "come", "comes"))
_STOP_ZH = frozenset("的了是在和与及把被给从到对为于着过呢吗吧啊这那之其而或个都就得地")
_GENERIC = frozenset(["user", "users", "用户", "我们", "我", "他", "她", "它"])
# The same person across languages.
_GENERIC_SAME = {"user": "user", "users": "user", "用户": "user", "we": "we", "我们": "we"}
# Words of the change cues (stemmed): they say that something changed, not what.
_CUE_STEMS = frozenset((
    "now", "no", "longer", "anymore", "nowadays", "currently", "instead", "switch", "chang", "mov", "migrat", "replac",
    "went", "gone", "rais", "lower", "increas", "decreas", "bump", "reduc", "cut", "shorten", "extend", "lengthen",
    "reschedul", "postpon", "delay", "upgrad", "downgrad", "sold", "drop", "relocat", "transfer", "hand", "pass",
    "reassign", "renam", "updat", "becam", "stop", "quit", "gave", "not", "rather"))
_CUE_CHARS = frozenset("现目如已经改换更再搬迁调挪涨降升缩延交转移接收替变取代")
# Words of values (numbers, days, times, durations): shared, they say nothing about the subject.
_VALUE_WORDS = frozenset((
    "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve", "twenty",
    "hundred", "thousand", "million", "half", "first", "second", "third", "monday", "tuesday", "wednesday",
    "thursday", "friday", "saturday", "sunday", "january", "february", "march", "april", "may", "june", "july",
    "august", "september", "october", "november", "december", "minute", "hour", "day", "week", "month", "year",
    "daily", "weekly", "monthly", "yearly", "annual", "night", "morning", "afternoon", "evening", "noon", "today",
    "tomorrow", "am", "pm", "utc"))
_VALUE_CHARS = frozenset("一二三四五六七八九十百千万亿两零半几每年月日号周天点时分秒午早晚上下前后今明昨")

# Words naming the same kind of fact, in English and Chinese: two memories on one subject that
# name the same concept are about the same thing, across languages too. The kinds of fact a
# memory holds (a preference, a place, a role, an owner, a price, an appointment, a way to reach
# someone, a version) and a few words memories often share across languages.
_CONCEPTS: dict[str, tuple[str, ...]] = {
    "prefer": ("prefer", "preference", "like", "favourite", "favorite", "love", "want", "enjoy", "喜欢", "偏好",
               "最爱", "习惯", "想要"),
    "live": ("live", "living", "based", "reside", "住", "定居"),
    "boss": ("manager", "boss", "supervisor", "report", "head", "lead", "leader", "主管", "领导", "上级", "汇报",
             "经理", "组长", "负责人"),
    "own": ("own", "owner", "ownership", "responsible", "charge", "maintain", "handle", "负责", "归属"),
    "cost": ("cost", "price", "fee", "rent", "bill", "budget", "pay", "dollar", "euro", "yuan", "费", "价格", "钱",
             "租", "预算", "账单", "元", "美元", "欧元"),
    "meet": ("meeting", "appointment", "class", "lesson", "session", "review", "sync", "standup", "会议", "例会",
             "周会", "课", "预约"),
    "contact": ("email", "mail", "phone", "address", "wechat", "邮箱", "电话", "手机号", "号码", "地址", "微信"),
    "version": ("version", "release", "版本"),
    "place": ("office", "floor", "city", "办公室", "城市"),
    "video": ("video", "film", "视频"),
    "mobile": ("mobile", "移动端", "手机端"),
    "doc": ("doc", "docs", "document", "documentation", "wiki", "文档"),
    "project": ("project", "项目"),
    "code": ("code", "repo", "repository", "source", "代码", "仓库", "源码"),
    "commute": ("commute", "cycle", "cycling", "bike", "metro", "subway", "train", "bus", "骑车", "地铁", "通勤",
                "上班"),
    "error": ("error", "crash", "bug", "错误", "崩溃"),
}
# A person has one manager, one home, one address, one office, one version of a thing at a time:
# the same subject naming one of these twice is one fact changing. The other kinds (preferences,
# prices, appointments, what one owns) are many at once; the nouns name things shared across languages.
_ONE_AT_A_TIME = frozenset(("boss", "live", "contact", "place", "version"))
_THINGS = frozenset(("video", "mobile", "doc", "project", "commute", "error"))
_SLOT_VERBS = frozenset(("prefer", "live", "own"))
# Members of one family that name different things: a memory about one is not about another.
_CONTRASTS: tuple[tuple[tuple[str, ...], ...], ...] = (
    (("staging", "预发"), ("production", "prod", "生产", "线上"), ("test", "testing", "qa", "测试"),
     ("dev", "development", "开发环境"), ("local", "本地")),
    (("ios", "苹果端"), ("android", "安卓"), ("web", "网页", "网站"), ("desktop", "桌面")),
    (("frontend", "前端"), ("backend", "后端")),
    (("mother", "mom", "mum", "妈妈", "母亲"), ("father", "dad", "爸爸", "父亲"), ("sister", "姐姐", "妹妹"),
     ("brother", "哥哥", "弟弟"), ("wife", "妻子", "老婆", "太太"), ("husband", "丈夫", "老公"), ("son", "儿子"),
     ("daughter", "女儿"), ("parents", "父母"), ("friend", "朋友"), ("colleague", "coworker", "同事"),
     ("grandmother", "grandma", "奶奶", "外婆"), ("grandfather", "grandpa", "爷爷", "外公")),
    (("mentor", "导师"), ("manager", "lead", "boss", "主管", "经理", "组长", "领导"), ("intern", "实习生")),
    (("east", "华东", "东区"), ("north", "华北", "北区"), ("south", "华南", "南区"), ("west", "华西", "西区"),
     ("eu", "europe", "欧洲"), ("usa", "america", "美国"), ("asia", "亚洲")),
)


@dataclass(frozen=True)
class Statement:
    """One memory: its text as written (bullet, ``[category]`` and marks are read past) and its date."""

    text: str
    date: dt.date | None


def supersedes(later: Statement, earlier: Statement) -> bool:
    """Whether ``later`` (stated on a later day) gives a new value to what ``earlier`` stated."""
    if later.date is None or earlier.date is None or later.date <= earlier.date:
        return False
    return changes(earlier.text, later.text)


def has_change_cue(text: str) -> bool:
    """Whether a memory says in words that something changed ("now", "switched to", 改用...)."""
    return _read(text).cue


def stated_date(text: str, fallback: dt.date | None) -> dt.date | None:
    """The ``(YYYY-MM-DD)`` a memory ends with, else ``fallback`` (its file's day)."""
    found = _STATED.search(HTML_COMMENT.sub("", text).rstrip())
    if found:
        try:
            return dt.date.fromisoformat(found.group(1))
        except ValueError:
            return fallback
    return fallback


# ----- reading one memory ---------------------------------------------------------------------
@dataclass(frozen=True)
class _Read:
    text: str  # folded, without marker, category, date or marks
    category: str | None
    tokens: tuple[str, ...]  # in order: stemmed English words, numbers, Chinese characters
    content: tuple[bool, ...]  # per token: neither a stop word nor part of a change cue
    aligned: tuple[str, ...]  # the tokens with concept words folded to their concept (for alignment)
    words: frozenset[str]  # content tokens, generic ones ("user", 用户) left out
    units: frozenset[str]  # specific words: those words, Chinese as character pairs, no bare numbers
    latin: frozenset[str]  # Latin words of three letters or more: anchors across languages
    concepts: frozenset[str]
    contrasts: tuple[frozenset[int], ...]  # per family of _CONTRASTS, the members named
    owner: str | None  # the first possessor ("bob" of "Bob's", 小王 of 小王的)
    person: str | None  # the first content word or character pair, generic ones included ("user", 用户)
    subject: str | None  # the first specific word or character pair (not generic, a value or a concept word)
    cue: bool  # says in words that something changed
    cjk: bool  # mostly Chinese
    statement: bool  # a short statement of fact: not a question, a line of dialogue or a paragraph


@functools.lru_cache(maxsize=8192)
def _read(text: str) -> _Read:
    body = HTML_COMMENT.sub(" ", text)
    body = " ".join(LIST_MARKER.sub("", line).strip() for line in body.split("\n"))
    body = unicodedata.normalize("NFKC", body).strip()
    category = _CATEGORY.match(body)
    body = _STATED.sub("", _CATEGORY.sub("", body)).strip().casefold().replace("’", "'")
    body = _THOUSANDS.sub("", body)
    # Chinese verbs of one kind of fact become one token (喜欢 and 偏好 align as one word).
    folded = _FOLD_ZH.sub(lambda m: f" @{_CONCEPT_ZH[m.group(0)]} ", body)
    cue_spans = [m.span() for m in _CHANGE_ZH.finditer(folded)]
    owner, owner_at = None, None
    tokens: list[str] = []
    content: list[bool] = []
    for found in _TOKEN.finditer(folded):
        word = found.group(0)
        if word.endswith("'s"):
            word = word[:-2]
            if owner is None:
                owner, owner_at = _stem(word), len(tokens)
        token = _stem(word) if word.isalpha() and word.isascii() else word
        tokens.append(token)
        in_cue = token in _CUE_CHARS and any(start <= found.start() < end for start, end in cue_spans)
        content.append(_is_content(token) and not in_cue)
    if owner is None:
        possessor = re.search(rf"([{_CJK}]{{2}}|[a-z][a-z0-9]*)\s*的", body)
        owner = possessor.group(1) if possessor else None
    ordered = _ordered_units(tokens, content)
    # The subject is named after its owner: "the user's gym membership" is about the gym membership.
    cut = owner_at if owner_at is not None else (tokens.index("的") if "的" in tokens else None)
    after = len(_ordered_units(tokens[: cut + 1], content[: cut + 1])) if cut is not None else 0
    words = frozenset(t for t, c in zip(tokens, content, strict=True) if c and t not in _GENERIC)
    named = set(tokens) | set(_WORDS_ZH.findall(body))  # English stems and the Chinese words of the tables
    concepts = frozenset(_CONCEPT_OF[w] for w in named if w in _CONCEPT_OF)
    members: list[set[int]] = [set() for _ in _CONTRASTS]
    for word in named & _CONTRAST_OF.keys():
        family, member = _CONTRAST_OF[word]
        members[family].add(member)
    contrasts = tuple(frozenset(m) for m in members)
    return _Read(
        text=body, category=category.group(1).lower() if category else None, tokens=tuple(tokens),
        content=tuple(content), aligned=tuple(f"@{_CONCEPT_OF[t]}" if t in _CONCEPT_OF and _is_slot_verb(t) else t
                                               for t in tokens),
        words=words, units=frozenset(u for u in ordered if u not in _GENERIC and not _is_value(u)),
        latin=frozenset(t for t in words if t.isascii() and t.isalpha() and len(t) >= 3),
        concepts=concepts, contrasts=contrasts, owner=owner,
        person=_GENERIC_SAME.get(ordered[0], ordered[0]) if ordered else None,
        subject=next((u for u in ordered[after:] if u not in _GENERIC and not _is_value(u) and not _is_slot_verb(u)),
                     None),
        cue=bool(_CHANGE_EN.search(body) or cue_spans or _NEW_VALUE.search(body)),
        cjk=len(_CJK_CHAR.findall(body)) > 2 * len(re.findall(r"[a-z]+", body)),
        statement=bool(words) and len(tokens) <= MAX_TOKENS and not _NOT_A_STATEMENT.search(body)
        and len(_SENTENCE_END.findall(body.rstrip(".!?。！？ "))) < 2)


_NUMBER = re.compile(r"\d+(?:[.:]\d+)*")


def _stem(word: str) -> str:
    """A light English stemmer: "moved", "moves", "moving" → "mov"; "preferred" → "prefer"."""
    if len(word) <= 3:
        return word
    for suffix in ("ing", "ies", "es", "ed", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            word = word[: -len(suffix)] + ("y" if suffix == "ies" else "")
            break
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "sl":
        word = word[:-1]
    return word[:-1] if len(word) > 3 and word.endswith("e") else word


_STOP_STEMS = _STOP_EN | {_stem(word) for word in _STOP_EN}  # "were" → "wer"
# The tables by word: an English word by its stem, a Chinese one as written.
_CONCEPT_OF = {(_stem(form) if form.isascii() else form): name for name, forms in _CONCEPTS.items() for form in forms}
_CONTRAST_OF = {(_stem(word) if word.isascii() else word): (family, member)
                for family, members in enumerate(_CONTRASTS) for member, words in enumerate(members) for word in words}
_WORDS_ZH = re.compile("|".join(sorted({w for w in [*_CONCEPT_OF, *_CONTRAST_OF] if not w.isascii()},
                                       key=lambda w: (-len(w), w))))
_CONCEPT_ZH = {form: name for name, forms in _CONCEPTS.items() for form in forms
               if not form.isascii() and len(form) > 1 and name in _SLOT_VERBS}
_FOLD_ZH = re.compile("|".join(sorted(_CONCEPT_ZH, key=lambda w: (-len(w), w))))


def _is_value(unit: str) -> bool:
    """A number, a day, a time or a duration (a Chinese pair: both characters such)."""
    if _NUMBER.fullmatch(unit) or unit in _VALUE_WORDS or _stem(unit) in _VALUE_WORDS:
        return True
    return len(unit) == 2 and all(ch in _VALUE_CHARS for ch in unit)


def _is_slot_verb(unit: str) -> bool:
    """A verb naming the kind of fact ("prefers", 喜欢, "lives", "owns"): shared, it says nothing of the subject."""
    return _CONCEPT_OF.get(unit, unit.lstrip("@")) in _SLOT_VERBS


def _is_cjk(token: str) -> bool:
    return len(token) == 1 and bool(_CJK_CHAR.match(token))


def _is_content(token: str) -> bool:
    if _is_cjk(token):
        return token not in _STOP_ZH
    return token not in _STOP_STEMS and token not in _CUE_STEMS


def _ordered_units(tokens: list[str], content: list[bool]) -> list[str]:
    """The content words and Chinese character pairs, in order."""
    out = []
    for i, token in enumerate(tokens):
        if not content[i]:
            continue
        if _is_cjk(token):
            if i + 1 < len(tokens) and content[i + 1] and _is_cjk(tokens[i + 1]):
                out.append(token + tokens[i + 1])
        else:
            out.append(token)
    return out


# ----- comparing two memories -----------------------------------------------------------------
def changes(old_text: str, new_text: str) -> bool:
    """Whether ``new_text`` gives a new value to what ``old_text`` stated (their order in time is the caller's)."""
    old, new = _read(old_text), _read(new_text)
    if not (old.statement and new.statement) or old.text == new.text:
        return False
    if not (old.units & new.units or old.latin & new.latin or old.concepts & new.concepts):
        return False  # nothing in common: the cheap answer for most pairs of a result
    if old.category and new.category and old.category != new.category:
        return False
    if _ADDITION.search(new.text) or _other_subject(old, new) or _is_event(old):
        return False  # an addition, another subject, or history (what happened stays true)
    if _is_event(new) and bool(_PLAN.search(old.text)) != bool(_PLAN.search(new.text)):
        return False  # a plan and what happened
    found = _changed_in_words(old, new) if new.cue else _one_value_replaced(old, new)
    return found and not opposed(old.text, new.text)  # an action and its reversal both happened


def _other_subject(old: _Read, new: _Read) -> bool:
    """Different owners (in one script) or contrasting qualifiers: two facts that both hold."""
    if old.owner and new.owner and old.owner != new.owner and old.owner.isascii() == new.owner.isascii():
        return True
    return any(a and b and not (a & b) for a, b in zip(old.contrasts, new.contrasts, strict=True))


def _is_event(r: _Read) -> bool:
    """A statement of something that happened ("Deployed 2.4 on Monday", 三月五号开了复盘会)."""
    return bool(_PAST_FIRST.match(r.text) or _PAST_EN.search(r.text) or _PAST_ZH.search(r.text))


def _changed_in_words(old: _Read, new: _Read) -> bool:
    """The later says a change happened: about the earlier's subject, and leaving a value behind."""
    left = _left_behind(new) & (old.words | old.units)
    if left:
        return bool(new.words - old.words) or _turned_off(new)  # "no longer npm", 不再用蓝湖, "switched from"
    if not old.words - new.words:
        # The later holds every word of the earlier: it says more, unless it turns the earlier off.
        return _turned_off(new)
    if not new.words - old.words:
        return False
    concepts = old.concepts & new.concepts
    same_person = old.person is not None and old.person == new.person
    if old.cjk != new.cjk:  # across languages: names and Latin words, or the same thing or slot
        # ...and the earlier's Latin words and numbers, its value when it has them, are not all said again
        named = {t for t in old.tokens if t.isascii() and t.isalnum() and t not in _STOP_STEMS} - _GENERIC
        if named and named <= set(new.tokens):
            return False  # "安卓端用 Kotlin 写" / "the user writes Kotlin now": the same value, not a new one
        return bool(old.latin & new.latin or len(concepts) >= 2
                    or (same_person and concepts & (_ONE_AT_A_TIME | _THINGS)))
    # Specific words both hold (not the verb of the fact: "prefers" twice says nothing of the subject).
    shared = {u for u in old.units & new.units if not _is_slot_verb(u)}
    # Most of the earlier is said again (Chinese pairs are many, some across word boundaries: a quarter).
    if len(shared) >= 2 and len(shared) >= (0.25 if old.cjk else 0.5) * len(old.units):
        return True
    if shared and same_person and old.subject is not None and old.subject == new.subject and _same_head(old, new):
        return True  # one word in common, leading both: "Sprints" / "The sprint length"
    if same_person and old.person in _GENERIC_SAME.values() and any(_is_cjk(u[:1]) and len(u) == 2 for u in shared):
        return True  # 用户的私人教练 / 用户现在跟另一位教练: a pair of characters names a thing, not an action
    return same_person and bool(concepts & _ONE_AT_A_TIME)


def _same_head(old: _Read, new: _Read) -> bool:
    """Whether the words that follow the shared subject agree: "the staging DB" is not "the staging
    cluster", 手机号 is not 手机套餐, unless one just stops ("the gym" / "the gym membership")."""
    a, b = _compound(old), _compound(new)
    if old.cjk:  # no spaces: the character after the pair, when both have one
        a, b = a[:3], b[:3]
    return a[: len(b)] == b or b[: len(a)] == a


def _compound(r: _Read) -> tuple[str, ...]:
    """The run of content tokens starting at the subject."""
    assert r.subject is not None
    first = r.subject if not _is_cjk(r.subject[:1]) else r.subject[:1]
    start = next((i for i, t in enumerate(r.tokens) if t == first and r.content[i]), len(r.tokens))
    run = []
    for token, content in zip(r.tokens[start:], r.content[start:], strict=True):
        if not content or _is_value(token):
            break
        run.append(token)
    return tuple(run)


def _left_behind(r: _Read) -> set[str]:
    """Words (Chinese: character pairs) within a few words after "no longer", "instead of", 不再, 从..."""
    out: set[str] = set()
    for found in _LEFT_BEHIND.finditer(r.text):
        tail = r.text[found.end() : found.end() + 30]
        cjk = re.match(rf"\s*([{_CJK}]{{1,6}})", tail)
        if cjk:  # 不再用蓝湖: the characters that follow, as pairs
            out.update(a + b for a, b in itertools.pairwise(cjk.group(1)))
        # English: the first run of content words ("the Civic", "Markdown tables"), at most three
        run: list[str] = []
        for word in _TOKEN.findall(tail):
            token = _stem(word) if word.isalpha() and word.isascii() else word
            if _is_content(token) and token not in _GENERIC and not _is_cjk(token):
                run.append(token)
                if len(run) == 3:
                    break
            elif run:
                break
        out.update(run)
    return out


def _turned_off(r: _Read) -> bool:
    return bool(re.search(r"\b(?:no longer|not any ?more|stopped|quit|gave up)\b|不再|不用了|没再|戒了|停了", r.text))


def _one_value_replaced(old: _Read, new: _Read) -> bool:
    """The same statement with one stretch of words replaced, not at its start, about a state."""
    if old.cjk != new.cjk or _is_event(new) or _LIKES.search(old.text) or _LIKES.search(new.text):
        return False  # across languages, an event, or a liking: one likes many things at once
    if not old.cjk and not (_STATE.search(old.text) and _STATE.search(new.text)):
        return False  # no statement of a state: "Read an article about X" / "... about Y" are two events
    matcher = difflib.SequenceMatcher(None, old.aligned, new.aligned, autojunk=False)
    changed = [op for op in matcher.get_opcodes()
               if op[0] != "equal" and (any(old.content[op[1]:op[2]]) or any(new.content[op[3]:op[4]]))]
    if len(changed) != 1 or changed[0][0] != "replace":
        return False
    _, i1, i2, j1, j2 = changed[0]
    if not any(old.content[i1:i2]) or not any(new.content[j1:j2]):
        return False
    lead = 2 if old.cjk else 1  # a Chinese subject is two characters or more (小纪 / 小蔡)
    if sum(old.content[:i1]) < lead or sum(new.content[:j1]) < lead:
        return False  # the subject differs: another person, place or thing
    # A value is short, and the rest of the statement (its subject) is most of it.
    replaced_old, replaced_new = sum(old.content[i1:i2]), sum(new.content[j1:j2])
    kept = sum(old.content) - replaced_old
    return (max(replaced_old, replaced_new) <= (4 if old.cjk else 3) and kept >= 2
            and kept >= 0.6 * max(sum(old.content), sum(new.content)))


# ----- search results -------------------------------------------------------------------------
def statement_of(hit: SearchHit, naming: MemoryLookup | None) -> Statement | None:
    """The memory a hit is named by, with its date; None when undated or already retired."""
    if not hit.id or hit.replaced_by:
        return None
    text = None
    if naming is not None:
        found = naming.find(hit.id, [hit.path])
        if found:
            text = min(found, key=lambda m: abs(m.start_line - hit.start_line)).text
    if text is None:  # no lookup, or the file changed: the cited lines
        lines = hit.snippet.split("\n")
        unit = next((u for u in split_memories(lines) if u.id == hit.id), None)
        if unit is None:
            return None
        text = "\n".join(lines[unit.start : unit.end + 1])
    date = stated_date(text, hit.date)
    return Statement(text, date) if date else None


def settle(hits: Sequence[SearchHit], statement: Callable[[SearchHit], Statement | None], keep: int,
           more: Callable[[], Sequence[SearchHit]] | None = None,
           near: Callable[[list[tuple[int, Statement]]], Sequence[SearchHit]] | None = None) -> list[SearchHit]:
    """The first ``keep`` of ``hits`` (ranked; any after them, and ``more()``, are a reserve), each
    memory that a later one among the first ``SEARCH_WINDOW`` updates moved just below it, with
    ``replaced_by``.

    The later memory takes the earlier's place (and its score, when higher), so one found below
    the hits shown comes in; the earlier stays in the result, just below it, and the hit that
    leaves is the last one no update concerns. Hits past the window (a long result) keep their
    places. ``statement`` gives a hit's memory and date, or None (undated, or retired by the sleep
    cycle: it neither wins nor is marked again). ``more`` is called only when a hit shown is a
    dated statement of fact, which a later one could update; so is ``near``, with the first
    ``NEAR_STATEMENTS`` such hits (their places and statements): it gives the memories closest to
    them, which may hold an update the query's words missed.
    """
    shown = min(keep, len(hits), SEARCH_WINDOW)  # the hits whose memories may give way
    read = [statement(h) if h.id else None for h in hits[:shown]]
    if not any(r is not None and _read(r.text).statement for r in read):
        return list(hits[:keep])  # nothing shown that could have changed: conversation lines, undated notes
    pool = [*hits, *(more() if more is not None and len(hits) < SEARCH_WINDOW else ())]
    window, rest = pool[: max(shown, SEARCH_WINDOW)], list(hits[max(shown, SEARCH_WINDOW) : keep])
    read += [statement(h) if h.id else None for h in window[shown:]]
    if near is not None:
        facts = [(i, r) for i, r in enumerate(read[:shown]) if r is not None and r.date and _read(r.text).statement]
        listed_ids = {h.id for h in window}
        for hit in near(facts[:NEAR_STATEMENTS]):
            if hit.id and hit.id not in listed_ids:
                listed_ids.add(hit.id)
                window.append(hit)
                read.append(statement(hit))
    winner: dict[int, int] = {}  # the earlier's position -> the later's
    for i, earlier in enumerate(read[:shown]):
        if earlier is None or earlier.date is None:
            continue
        later = [j for j, r in enumerate(read) if r is not None and r.date is not None and r.date > earlier.date
                 and window[j].id != window[i].id and supersedes(r, earlier)]
        if later:
            winner[i] = max(later, key=lambda j: (read[j].date, -j))  # type: ignore[union-attr]
    if not winner:
        return list(hits[:keep])
    order = list(range(len(window)))
    for old in sorted(winner):
        new = winner[old]
        if order.index(new) > order.index(old):
            order.remove(new)
            order.insert(order.index(old), new)
    out = {i: replace(window[i], replaced_by=window[new].id) for i, new in winner.items()}
    for new in set(winner.values()):
        best = max(window[new].score, *(window[i].score for i, n in winner.items() if n == new))
        out[new] = replace(out.get(new, window[new]), score=best)
    # What was shown stays shown; a later memory moved in takes the place of the last hit no update concerns.
    listed = min(keep, len(window))
    chosen = [i for i in order if i < listed or i in winner.values()]
    involved = set(winner) | set(winner.values())
    while len(chosen) > listed:
        spare = [i for i in chosen if i not in involved] or chosen
        chosen.remove(spare[-1])
    return [out.get(i, window[i]) for i in chosen] + rest
