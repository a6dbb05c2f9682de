"""The offline extractor: durable statements found by patterns, in English and Chinese.

It needs no model, so it is the default and always the fallback. It reads one sentence at a
time and keeps those that state something lasting about the user or their work:

* explicit requests to remember ("remember that ...", "记住 ...");
* preferences ("I prefer", "never use", "from now on", "以后都", "别再");
* decisions ("we decided", "let's go with", "决定", "改用");
* entities and facts ("my manager is Priya", "our prod database is on Neon", "我在上海");
* corrections ("actually, it's Postgres 16", "更正").

Questions, hypotheticals, one-off tasks ("fix line 30", "帮我跑一下测试"), to-dos, reminders and
plans for the next days ("TODO: ...", "remember to ...", "we should upgrade Node tomorrow",
"明天要发版": ``tasks``) and talk about the moment ("for now", "这次") are left out. A kept
sentence is rewritten in the third person with its verbs in agreement ("I prefer pnpm" -> "The
user prefers pnpm", "we need to" -> "the team needs to", "我喜欢猫" -> "用户喜欢猫"; ``person``)
and dated; a sentence whose verb cannot be put in agreement stays in the first person.
"""

from __future__ import annotations

import datetime as dt
import re

from mcp_memory.capture.base import Extractor
from mcp_memory.capture.facts import Fact, absolute_dates, with_date
from mcp_memory.capture.filters import Candidate
from mcp_memory.capture.person import third_person_en
from mcp_memory.capture.tasks import is_task

MAX_FACTS_PER_MESSAGE = 3
_SENTENCE_SPLIT = re.compile(r"(?<=[。!?;!?])|(?<=[.;])\s+|\n+")
_CJK = re.compile(r"[\u3400-\u9fff]")
_LEARNED_SUFFIX = re.compile(r"\s*\(\d{4}-\d{2}-\d{2}\)$")

# ----- English -------------------------------------------------------------------------------
_EN_EXPLICIT = re.compile(
    r"^(?:(?:hey|oh|ok|okay|also|and|so|btw|by the way|fyi|one more thing)[,:!]?\s+)*"
    r"(?:please\s+)?(?:(?:always\s+)?remember|note|make a note|take note|keep in mind|don't forget|do not forget|"
    r"for (?:future )?reference|for the record|just so you know|heads up|fyi|btw|by the way|note to self|"
    r"save this|memori[sz]e)\b[\s,:;-]*(?:that\s+|this[:\s]+)?",
    re.IGNORECASE,
)
_EN_FILLER = re.compile(r"^(?:(?:oh|ok|okay|also|and|so|well|hey|hi|yeah|yes|no|btw|fyi)[,!:]?\s+)+", re.IGNORECASE)
_EN_QUESTION_START = re.compile(
    r"^(?:what|how|why|when|where|which|who|whose|do you|does|did you|can you|could you|would you|will you|"
    r"should i|should we|is it|is there|are there|are you|have you|any idea|wondering)\b",
    re.IGNORECASE,
)
_EN_HYPOTHETICAL = re.compile(
    r"^(?:if|what if|suppose|supposing|imagine|assuming|hypothetically)\b|\bwould it be\b", re.IGNORECASE
)
_EN_DURABLE = re.compile(
    r"\b(?:always|never|from now on|going forward|moving forward|from here on|in (?:the )?future|by default|"
    r"every time|whenever|all of our|all our|for all|each time|as a rule|no matter what|(?:don't|do not|never) ever|"
    r"every (?:day|weekday|week|month|morning|evening|night|sprint|release|year|monday|tuesday|wednesday|thursday|"
    r"friday|saturday|sunday))\b",
    re.IGNORECASE,
)
_EN_TRANSIENT = re.compile(
    r"\b(?:right now|for now|at the moment|this time|just this once|this (?:one|file|function|pr|commit|branch|bug|"
    r"error|test|line|snippet|method|class|message|chat|session|step|part)|line \d+|today|tonight|this morning|"
    r"this afternoon|this evening|in a (?:minute|sec|second)|real quick)\b",
    re.IGNORECASE,
)
_EN_TASK = re.compile(
    r"^(?:(?:please|pls|can you|could you|would you|will you|go ahead and|let's|lets|now)\s+)*"
    r"(?:fix|run|add|create|update|delete|remove|rename|refactor|write|implement|change|check|look|show|explain|tell|"
    r"give|make|help|open|close|merge|push|commit|deploy|install|test|debug|find|search|generate|build|review|"
    r"summari[sz]e|translate|try|start|stop|restart|continue|undo|revert|move|copy|paste|send|draft|list|print|"
    r"format|lint|bump|upgrade|downgrade|clean|set up|setup|investigate)\b",
    re.IGNORECASE,
)
_EN_MOMENT = re.compile(  # only about this exchange, whatever else the sentence says
    r"\b(?:this (?:message|reply|answer|response|conversation|chat|time)|just this once|right now|for now)\b",
    re.IGNORECASE,
)
_EN_REPORTED = re.compile(
    r"\b(?:swears|thinks|says|said|believes|claims|told me|reckons|argues|joked)\b", re.IGNORECASE
)
_EN_STYLE = re.compile(
    r"^(?:please\s+)?(?:keep|be|write|answer|respond|reply|talk|explain|give)\b.{0,40}\b(?:short|concise|brief|minimal|"
    r"simple|terse|formal|casual|detailed|in (?:english|chinese|spanish|french|german|japanese|plain language))\b",
    re.IGNORECASE,
)
_EN_RULE_MODAL = re.compile(
    r"^(?!you\b|u\b)[\w\s./'-]{2,60}?\b(?:must|should|must not|should not|shouldn't|mustn't|needs? to|has to|"
    r"have to)\b",
    re.IGNORECASE,
)
_EN_LOCATED = re.compile(
    r"\b(?:is|are|lives?|sits?|runs?|hosted|located|deployed|kept|stored)\s+(?:at|in|on)\s+"
    r"(?:https?://|[\w-]+\.[a-z]{2,}\b|[A-Z0-9])"
)
_EN_SCHEDULE = re.compile(r"\b(?:is|are|happens?|runs?|meets?)\s+(?:every|each|on)\s+\w+", re.IGNORECASE)
_EN_LEAD = re.compile(
    r"(?i)^(from now on|going forward|moving forward|from here on|in (?:the )?future|by default)[,:]?\s+"
)
_EN_REMINDER = re.compile(r"^to\s+\w+", re.IGNORECASE)  # "remember to close the PR": a to-do, not a fact
_EN_PREFERENCE = re.compile(
    r"\b(?:i|we)\s+(?:really\s+|strongly\s+|much\s+|generally\s+|usually\s+|definitely\s+|always\s+|still\s+|do\s+)?"
    r"(?:prefer|like|love|hate|dislike|enjoy|can't stand|cannot stand|favou?r|loathe|despise|avoid)\b"
    r"|\bi'd rather\b|\bi would rather\b|\bmy (?:favou?rite|preferred|go-to)\b|\bour preferred\b"
    r"|\b(?:i|we)\s+(?:don't|do not|never|won't|will not|no longer|can't|cannot)\s+(?:like|want|use|touch|do|write|"
    r"need|drink|eat|smoke|drive|watch|stand|work|fly|tolerate)\b"
    r"|\b(?:i|we)\s+(?:always|never|usually|only|mostly)\s+(?:use|write|code|work|run|deploy|go with|pick|choose|"
    r"test|format|commit|review|ship|name|indent|drink|eat|read|take|book|fly|wear|sleep|wake)\b"
    r"|\bi(?:'m| am) not a fan of\b|\bi(?:'m| am) a (?:big )?fan of\b|^(?:please\s+)?prefer\b",
    re.IGNORECASE,
)
_EN_IMPERATIVE_RULE = re.compile(
    r"^(?:(?:please|pls)\s+)?(?:always|never|don't|do not|don't ever|do not ever|stop|avoid|prefer|only|use|"
    r"make sure|be sure|ensure|keep|no more)\b",
    re.IGNORECASE,
)
_EN_DECISION = re.compile(
    r"\b(?:we|i|the team|team)\s*(?:have\s+|'ve\s+|just\s+|finally\s+|officially\s+)*"
    r"(?:decided|agreed|chose|chosen|picked|settled on|went with|are going with|'re going with|will go with|"
    r"are switching|'re switching|switched|migrated|are migrating|'re migrating|are moving|'re moving|moved|"
    r"are standardi[sz]ing|'re standardi[sz]ing|standardi[sz]ed|adopted|dropped|ditched|are dropping|"
    r"'re dropping|will use|'ll use|will be using|are using .* instead|'re using .* instead|are sticking with|"
    r"'re sticking with|stick with)\b"
    r"|\blet's (?:go with|use|stick with|standardi[sz]e on|switch to|adopt)\b"
    r"|\b(?:the )?decision (?:is|was)\b|\bwe're going to use\b|\bwe are going to use\b",
    re.IGNORECASE,
)
_EN_CONVENTION = re.compile(
    r"^(?:all|every|each|any)\s+(?:of\s+)?(?:our\s+|the\s+)?[\w./-]+(?:\s+[\w./-]+){0,3}\s+"
    r"(?:use|uses|must|should|go|goes|live|lives|start|starts|are|is|need|needs|get|gets|follow|follows|have|has)\b"
    r"|\bwe (?:always|never|don't|do not|only)\b|\b(?:must|should) (?:always|never)\b"
    r"|\b(?:our|the)\s+(?:convention|rule|policy|standard|style guide)\b",
    re.IGNORECASE,
)
_EN_ENTITY = re.compile(
    r"\b(?:my|our)\s+(?:[\w'./-]+\s+){0,2}(?:is|are|was|lives|sits|runs|goes)\b"
    r"|\bcall me\b|\bi(?:'m| am) (?:called|named)\b"
    r"|\b[A-Z][\w-]+'s (?:email|phone|number|birthday|address|handle|username|role|title) is\b",
    re.IGNORECASE,
)
_EN_FACT = re.compile(
    r"\b(?:i|we)\s+(?:live|work|am based|'m based|are based|'re based|moved|grew up|study|studied|teach)\b"
    r"|\b(?:i'm|i am|i was|we're|we are|we were)\s+(?:a|an|the|on|in|based|from)\s+(?!it\b)\w+"
    r"|\bi(?:'m| am)\s+(?:allergic|vegetarian|vegan|lactose|gluten|left-handed|"
    r"colou?r-?blind|based|from|in the|on the|on call|responsible|in charge)\b"
    r"|\b(?:i|we)\s+(?:use|run|deploy|host|build|ship|develop|maintain|own|have|manage|target|support)\b"
    r"|\b(?:our|the)\s+(?:stack|repo|monorepo|project|team|app|api|backend|frontend|server|database|db|prod|"
    r"production|staging|ci|cluster|company|startup|product)\b.*\b(?:is|are|uses|runs|lives|is on|is hosted|"
    r"deploys|targets)\b"
    r"|\bmy (?:timezone|time zone|birthday|email|name|role|title|pronouns)\b",
    re.IGNORECASE,
)
_EN_CORRECTION = re.compile(
    r"^(?:actually|correction|to clarify|i was wrong|sorry,? i meant|i meant|update|small correction)\b[\s,:;-]*",
    re.IGNORECASE,
)
_EN_VAGUE_OBJECT = re.compile(
    r"\b(?:prefer|like|love|hate|dislike|enjoy)\s+(?:it|this|that|these|those|them|the (?:first|second|last) one)\b"
    r"(?!\s+\w+\s+\w+)",
    re.IGNORECASE,
)

# ----- Chinese -------------------------------------------------------------------------------
_ZH_EXPLICIT = re.compile(
    r"^(?:(?:对了|另外|还有|顺便(?:说一下|说下|提一下)?|哦|嗯|好|那个)[,,::\s]*)*"
    r"(?:请|麻烦)?(?:帮我)?(?:记住|记一下|记下来|记下|记得|别忘了|不要忘了|不要忘记|备注一下|备注|注意)"
    r"(?:一下)?[,,::\s]*"
)
_ZH_FILLER = re.compile(
    r"^(?:对了|另外|还有|顺便(?:说一下|说下|提一下)?|先说一下|先说下|说一下|哦|嗯|好的?|那个|其实)[,,::\s]*"
)
_ZH_QUESTION = re.compile(
    r"[??]|[吗呢么嘛]\s*$|什么|怎么|为什么|为啥|如何|哪个|哪些|哪里|哪儿|是否|能不能|可不可以|有没有|要不要|是不是|会不会|多少"
)
_ZH_HYPOTHETICAL = re.compile(r"^(?:如果|假如|要是|假设|万一|倘若)")
_ZH_DURABLE = re.compile(
    r"以后|今后|往后|将来|永远|一直|总是|始终|一律|统一|每次|默认|所有|全部都|凡是|从现在(?:开始|起)|长期"
)
_ZH_TRANSIENT = re.compile(
    r"现在|马上|立刻|等下|等一下|一会儿|待会|这次|这一次|刚才|暂时|先这样"
    r"|这个(?:文件|函数|PR|bug|报错|错误|测试)|第\s*\d+\s*行|今天|今晚"
)
_ZH_TASK_VERBS = (
    r"(?:修|改|跑|运行|执行|看|查|检查|解释|写|生成|翻译|删|删除|加|添加|创建|更新|重构|部署|安装|测试|调试|找|搜|总结|整理|"
    r"打开|关闭|合并|提交|推送|发|列|格式化|升级|试)"
)
_ZH_TASK = re.compile(  # "帮我跑一下测试", "修一下这个": asked of the assistant now
    r"^(?:请|麻烦|帮我|给我|你|现在|先|再)+(?:帮我|给我)?" + _ZH_TASK_VERBS
    + r"|^" + _ZH_TASK_VERBS + r"(?:一下|下|个|掉|好)"
)
_ZH_REMINDER = re.compile(r"^(?:要|去)?(?:把|给|提交|发|打|回|交|买|取|带|开|关|看|找|约|处理)")
_ZH_CONVENTION = re.compile(
    r"(?:字段|命名|接口|变量|函数|分支|提交信息|commit|缩进|注释|代码|文档|版本|日志|测试|格式)[^,,。]{0,8}"
    r"(?:用|使用|采用|必须|要|统一|锁在|固定在|是)|必须|不许|不准|硬性规定|规范|规定|尽量"
)
_ZH_PREFERENCE = re.compile(
    r"我(?:们)?(?:很|比较|更|最|真的|一直|还是|通常|一般|特别|非常|都)?(?:喜欢|偏好|偏爱|爱用|习惯|讨厌|不喜欢|不爱|受不了|"
    r"倾向于?|希望|想要|只用|只喝|只吃|不用|不喝|不吃|不想|不要)"
    r"|以后(?:都|一律|请|统一|全部|就)?|永远(?:不要|别|都)|别再|不要再|不要用|别用|不准|禁止|一律|统一(?:用|使用|采用)|"
    r"每次都|默认(?:用|使用)|始终(?:用|使用)|总是(?:用|使用)|都用|别给我|不要给我"
)
_ZH_DECISION = re.compile(
    r"(?:我们|团队|我)?(?:已经|最终|最后)?(?:决定|定了|确定(?:了|用|使用)|选择了|选定|选了|商量好|约定|达成一致|拍板)"
    r"|就用|改用|换成|换到|迁移到|迁到|切换到|切到|采用|弃用|不再用|放弃(?:了)?用?"
)
_ZH_ENTITY = re.compile(
    r"我(?:们)?的[^,,。;;]{1,12}(?:是|叫|在)|我叫|叫我|我(?:老板|经理|上司|领导|同事|老婆|老公|妻子|丈夫|女朋友|男朋友|"
    r"女儿|儿子|孩子|爸|妈|父亲|母亲|猫|狗)(?:是|叫)|[^,,。\s]{1,10}的(?:邮箱|电话|手机|生日|地址|微信)是"
    r"|我的?(?:生日|名字|邮箱|电话|手机号?|地址|时区|微信|工号|职位|岗位)(?:是|在|叫)"
    r"|(?:负责人|联系人|经理|老板|主管|对接人|产品经理|同事|老师|医生)(?:是|叫)"
)
_ZH_FACT = re.compile(
    r"我(?:现在)?(?:在|住在|住|来自|是|是个|是一名|是一个|做|从事|负责|对[^,,。]{1,8}过敏|吃素|不吃|过敏|有)"
    r"|我(?:平时|一般|通常|日常|主要|一直)?(?:用|使用)"
    r"|我们[^,,。]{0,8}?(?:用|使用|在用|部署在|跑在|托管在|基于|的|是|叫|在)"
    r"|(?:生产|测试|线上|预发|开发|正式|主)?(?:环境|数据库|库|服务器|仓库|项目|接口|集群|域名|网站|后端|前端|服务|公司|代码)"
    r"[^,,。]{0,4}?(?:是|在|用|都|部署在|跑在)"
    r"|所有[^,,。]{1,16}都|时区"
)
_ZH_CORRECTION = re.compile(r"^(?:更正(?:一下)?|纠正(?:一下)?|其实|说错了|我搞错了|搞错了|不对)[,,::\s]*")
_ZH_VAGUE_OBJECT = re.compile(r"(?:喜欢|讨厌|偏好)(?:这个|那个|这样|那样|它|这些|那些)[。!!]?$")

_EN_SPELLING = [
    (re.compile(r"\bi\b"), "I"), (re.compile(r"(?i)\bim\b"), "I'm"), (re.compile(r"(?i)\bive\b"), "I've"),
    (re.compile(r"(?i)\bi'?d\s+rather\b"), "I'd rather"), (re.compile(r"(?i)\bdont\b"), "don't"),
    (re.compile(r"(?i)\bcant\b"), "can't"), (re.compile(r"(?i)\bwont\b"), "won't"),
    (re.compile(r"(?i)\bdoesnt\b"), "doesn't"),
    # "were using" typed for "we're using", but only where no subject comes before it ("we were on 14")
    (re.compile(r"(?i)^((?:(?:ok|okay|so|and|also|yeah|btw)[,]?\s+)*)were\s+(?=using|on|moving|switching|going)"),
     r"\1we're "),
    (re.compile(r"(?i)\bpls\b|\bplz\b"), "please"), (re.compile(r"[’‘]"), "'"),
]

class RuleExtractor(Extractor):
    """Durable statements by pattern; no model, no network, same answer every time."""

    name = "rules"

    def extract(self, candidates: list[Candidate], today: dt.date) -> list[Fact]:
        facts: list[Fact] = []
        for candidate in candidates:
            if candidate.role != "user":
                continue
            found = 0
            for sentence in _sentences(candidate.text):
                fact = extract_sentence(sentence, today)
                if fact is not None:
                    facts.append(Fact(fact.text, fact.category, candidate.index))
                    found += 1
                    if found >= MAX_FACTS_PER_MESSAGE:
                        break
        return facts


def extract_sentence(sentence: str, today: dt.date) -> Fact | None:
    """The fact one sentence states, or None when it states nothing lasting."""
    sentence = sentence.strip(" \t-*•>\"'“”")
    if len(sentence) < 4:
        return None
    if _CJK.search(sentence):
        chinese = _extract_chinese(sentence, today)
        if chinese is not None or _mostly_cjk(sentence):
            return chinese
    return _extract_english(sentence, today)


def captured_form(text: str, today: dt.date) -> str:
    """``text`` as capture would write it, without the day it was learned: the fact the rules extract
    from it, else the text itself in the third person. A line rescued verbatim ("We decided to use
    Redis.") and the fact captured from the same sentence ("The team decided to use Redis") have
    the same form, so duplicate checks can see they say the same thing."""
    sentence = text.strip()
    fact = extract_sentence(sentence, today)
    if fact is not None:
        form = _LEARNED_SUFFIX.sub("", fact.text)
        if _keeps_every_word(sentence, form):
            return form
        # The extraction dropped words that carry meaning (a lead-in "Project Alpha: ..."):
        # the whole text is compared instead, so two lines differing there stay apart.
    sentence = sentence.strip(" \t-*•>\"'“”").rstrip(" .。!！;；")
    if _CJK.search(sentence) and _mostly_cjk(sentence):
        return absolute_dates(_third_person_zh(sentence), today)
    return absolute_dates(_third_person_en(_normalise_english(sentence)), today)


# Words capture may drop or change without changing what a sentence says: markers ("remember
# that", "actually"), fillers, pronouns and their contractions, relative days, function words.
_DROPPABLE_WORDS = frozenset(
    "i me my mine myself we us our ours ourselves you re ve ll d m s t am are were have do don haven aren weren "  # noqa: SIM905
    "remember note make take keep mind forget for future reference record just so know heads up fyi btw by way "
    "one more thing self save this that these memorise memorize please pls hey oh ok okay also and well hi yeah "
    "yes no actually correction clarify wrong sorry meant update small to a an the of in on at is it "
    "today tomorrow yesterday tonight next day after monday tuesday wednesday thursday friday saturday sunday".split()
)
_DROPPABLE_CJK = frozenset("我们的记住一下得别忘了不要记备注意对另外还有顺便说提哦嗯好那个"
                           "先其实更正纠搞错请麻烦帮今明后昨前天晚")


def _keeps_every_word(text: str, form: str) -> bool:
    """Whether ``form`` still holds every word of ``text`` that carries meaning (inflected or not)."""
    said = set(re.findall(r"[a-z0-9]+", form.casefold()))
    for word in set(re.findall(r"[a-z0-9]+", text.casefold())) - _DROPPABLE_WORDS:
        forms = {word, word + "s", word + "es", word[:-1] + "ies"}
        if not forms & said:
            return False
    return not (set(_CJK.findall(text)) - set(_CJK.findall(form)) - _DROPPABLE_CJK)


# ----- English -------------------------------------------------------------------------------
def _extract_english(sentence: str, today: dt.date) -> Fact | None:
    text = _normalise_english(sentence.strip())
    if is_task(text):
        return None  # work to do, kept by the compaction rescue, never a decision or a fact
    explicit = _EN_EXPLICIT.match(text)
    if explicit:
        text = text[explicit.end():].strip(" ,:;-")
        if _EN_REMINDER.match(text) and not _EN_DURABLE.search(text):
            return None  # "remember to close the PR": a to-do
        text = re.sub(r"^to\s+", "", text, flags=re.IGNORECASE) if _EN_DURABLE.search(text) else text
    text = _EN_FILLER.sub("", _drop_preamble(text))
    correction = _EN_CORRECTION.match(text)
    if correction:
        text = text[correction.end():].strip(" ,:;-")
    if len(text) < 4:
        return None
    if text.rstrip().endswith("?") or _EN_QUESTION_START.match(text) or _EN_HYPOTHETICAL.search(text):
        return None
    durable = bool(_EN_DURABLE.search(text))
    if _EN_MOMENT.search(text) or (_EN_TRANSIENT.search(text) and not durable):
        return None
    if (_EN_VAGUE_OBJECT.search(text) or _EN_REPORTED.search(text)) and not explicit:
        return None

    category: str | None = None
    if _EN_DECISION.search(text):
        category = "decision"
    elif (_EN_PREFERENCE.search(text) or _EN_STYLE.match(text)
          or (_EN_IMPERATIVE_RULE.match(text) and (durable or explicit))):
        category = "preference"
    elif _EN_CONVENTION.search(text) or _EN_RULE_MODAL.match(text):
        category = "decision" if re.search(r"\bwe\b", text, re.IGNORECASE) else "fact"
    elif _EN_ENTITY.search(text):
        category = "entity"
    elif _EN_FACT.search(text) or _EN_LOCATED.search(text) or _EN_SCHEDULE.search(text):
        category = "fact"
    elif explicit or correction or _durable_rule(text):
        category = "preference" if _EN_IMPERATIVE_RULE.match(_EN_LEAD.sub("", text)) else "fact"
    if category is None:
        return None
    if _EN_TASK.match(text) and not (durable or explicit):
        return None
    return Fact(with_date(_third_person_en(text), today), category)


def _durable_rule(text: str) -> bool:
    """A standing rule ("dates are always ISO 8601", "from now on write ..."), not a habit ("I always forget")."""
    match = _EN_DURABLE.search(text)
    return match is not None and not re.search(r"(?i)\bI\s+$", text[: match.start()])


def _normalise_english(text: str) -> str:
    """Chat spelling to standard forms, so one set of patterns reads both ("im" -> "I'm")."""
    for pattern, replacement in _EN_SPELLING:
        text = pattern.sub(replacement, text)
    return text


def _third_person_en(text: str) -> str:
    text = text.strip().rstrip(".!;")
    lead = _EN_LEAD.match(text)
    prefix = ""
    if lead:
        prefix, text = lead.group(1).capitalize() + ", ", text[lead.end():]
    first_person = _capitalise(prefix + text)
    if _EN_IMPERATIVE_RULE.match(text) and not re.match(r"(?i)^(?:i|we)\b", text):
        body = re.sub(r"(?i)^(?:please|pls)\s+", "", text)
        negative = re.match(r"(?i)^(?:don't|do not)(?:\s+ever)?\s+", body)
        rest = third_person_en(body[negative.end():] if negative else _lower_first(body))
        if rest is None:
            return first_person
        wants = "the user does not want the assistant to " if negative else "the user wants the assistant to "
        return _capitalise(prefix + wants + rest)
    sentence = third_person_en(text)
    return first_person if sentence is None else _capitalise(prefix + sentence)


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:] if text[:2] != text[:2].upper() else text


def _capitalise(text: str) -> str:
    return text[:1].upper() + text[1:]


# ----- Chinese -------------------------------------------------------------------------------
def _extract_chinese(sentence: str, today: dt.date) -> Fact | None:
    text = sentence.strip()
    if is_task(text):
        return None  # "待办", "记得提交 PR", "明天要发版": work to do, not a fact
    explicit = _ZH_EXPLICIT.match(text)
    if explicit and explicit.end() > 0:
        text = text[explicit.end():].strip(" ,,::")  # noqa: B005 (a set of characters)
        if (explicit.group(0).rstrip(" ,,::").endswith("记得")  # noqa: B005 (a set of characters)
                and _ZH_REMINDER.match(text) and not _ZH_DURABLE.search(text)):
            return None  # "记得提交 PR": a to-do
    else:
        explicit = None
    correction = _ZH_CORRECTION.match(text)
    if correction:
        text = text[correction.end():]
    text = _ZH_FILLER.sub("", _drop_preamble(text))
    if len(text) < 2:
        return None
    if _ZH_QUESTION.search(text) or _ZH_HYPOTHETICAL.match(text):
        return None
    durable = bool(_ZH_DURABLE.search(text))
    if _ZH_TRANSIENT.search(text) and not durable:
        return None
    if _ZH_VAGUE_OBJECT.search(text) and not explicit:
        return None

    category: str | None = None
    if _ZH_DECISION.search(text):
        category = "decision"
    elif _ZH_PREFERENCE.search(text):
        category = "preference"
    elif _ZH_ENTITY.search(text):
        category = "entity"
    elif _ZH_FACT.search(text) or _ZH_CONVENTION.search(text) or explicit or correction:
        category = "fact"
    if category is None:
        return None
    if _ZH_TASK.match(text) and not (durable or explicit):
        return None
    return Fact(with_date(_third_person_zh(text), today), category)


def _third_person_zh(text: str) -> str:
    text = text.strip().rstrip("。!!;;")  # noqa: B005 (a set of characters)
    if "我" not in text and re.match(r"^(?:以后|今后|往后|永远|总是|始终|一律|统一|每次|默认|别|不要|请|从现在)", text):
        return "用户要求:" + text
    text = text.replace("我们的", "团队的").replace("我们", "团队").replace("我的", "用户的").replace("我", "用户")
    return text


def _drop_preamble(text: str) -> str:
    """Drop a short lead-in before a colon ("Quick note before we start: ...", "先说一下:...")."""
    match = re.match(r"^([^:：]{1,40})[:：]\s*(.{4,})$", text)
    if not match:
        return text
    head = match.group(1)
    if (len(head.split()) > 6 or re.search(r"\d|/|https?", head)
            or _EN_PREFERENCE.search(head) or _ZH_PREFERENCE.search(head)):
        return text
    return match.group(2)


def _sentences(text: str) -> list[str]:
    return [s for s in (part.strip() for part in _SENTENCE_SPLIT.split(text)) if s]


def _mostly_cjk(text: str) -> bool:
    letters = [ch for ch in text if ch.isalpha()]
    return bool(letters) and sum(1 for ch in letters if _CJK.match(ch)) * 2 >= len(letters)
