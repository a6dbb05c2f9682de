"""Whether two short statements do opposite things: "added proxy_pass" against "removed proxy_pass".

Sentence embeddings place an action and its reversal close together (the default model rates
"added proxy_pass" and "removed proxy_pass" at 0.88), so near-duplicate checks ask here before
merging. Each verb of a small bilingual list belongs to a concept with a direction (add +,
remove -); two statements are opposed when one holds a concept in one direction only and the
other holds it in the other direction only, in any mix of English and Chinese.

Negation is not read: in "cut every paragraph that did not support the thesis" it belongs to a
clause, not to the action, and treating it as a reversal split true paraphrases apart.
"""

from __future__ import annotations

import re
import unicodedata

# concept: (words going one way, words going the other); English forms are matched as whole
# words (with common inflections), Chinese as substrings.
_PAIRS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "add": (("add", "added", "adding", "adds", "insert", "inserted", "append", "appended", "添加", "增加", "加上",
             "新增", "加入"),
            ("remove", "removed", "removing", "removes", "delete", "deleted", "deleting", "drop", "dropped",
             "删除", "移除", "删掉", "去掉", "去除")),
    "enable": (("enable", "enabled", "enabling", "turn on", "turned on", "switch on", "switched on", "启用", "开启",
                "打开"),
               ("disable", "disabled", "disabling", "turn off", "turned off", "switch off", "switched off", "禁用",
                "关闭", "停用")),
    "install": (("install", "installed", "installing", "安装"),
                ("uninstall", "uninstalled", "uninstalling", "卸载")),
    "start": (("start", "started", "starting", "restart", "restarted", "启动"),
              ("stop", "stopped", "stopping", "kill", "killed", "停止", "停掉", "杀掉")),
    "increase": (("increase", "increased", "raise", "raised", "bump", "bumped", "grow", "grew", "增大", "提高",
                  "调高", "加大"),
                 ("decrease", "decreased", "lower", "lowered", "reduce", "reduced", "shrink", "shrank", "减小",
                  "降低", "调低", "减少")),
    "upgrade": (("upgrade", "upgraded", "upgrading", "升级"), ("downgrade", "downgraded", "downgrading", "降级")),
    "allow": (("allow", "allowed", "permit", "permitted", "whitelist", "whitelisted", "允许", "放行"),
              ("deny", "denied", "block", "blocked", "forbid", "forbade", "blacklist", "blacklisted", "禁止",
               "拒绝", "屏蔽", "拦截")),
    "create": (("create", "created", "creating", "创建", "新建"), ("destroy", "destroyed", "销毁")),
    "connect": (("connect", "connected", "attach", "attached", "mount", "mounted", "连接", "挂载"),
                ("disconnect", "disconnected", "detach", "detached", "unmount", "unmounted", "断开")),
    "lock": (("lock", "locked", "pin", "pinned", "加锁", "锁定"), ("unlock", "unlocked", "unpin", "unpinned", "解锁")),
    "encrypt": (("encrypt", "encrypted", "加密"), ("decrypt", "decrypted", "解密")),
    "include": (("include", "included", "包含"), ("exclude", "excluded", "排除")),
    "show": (("show", "showed", "shown", "display", "displayed", "显示"), ("hide", "hid", "hidden", "隐藏")),
    "open": (("open", "opened", "打开端口", "开放"), ("close", "closed", "关闭端口", "封闭")),
}
_WORD = re.compile(r"[a-z]+(?: (?:on|off))?")


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def _directions(text: str) -> dict[str, set[int]]:
    """For each concept the text names, the directions (+1, -1) in which it names it."""
    folded = _fold(text)
    words = set(_WORD.findall(folded)) | set(folded.split())
    found: dict[str, set[int]] = {}
    for concept, (up, down) in _PAIRS.items():
        for direction, forms in ((1, up), (-1, down)):
            for form in forms:
                hit = (form in folded) if not form.isascii() else (form in words or f" {form} " in f" {folded} ")
                if hit:
                    found.setdefault(concept, set()).add(direction)
    return found


def opposed(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` do opposite things (one adds what the other removes, and the like)."""
    first, second = _directions(a), _directions(b)
    shared = first.keys() & second.keys()
    return any(len(first[c]) == 1 and len(second[c]) == 1 and first[c] != second[c] for c in shared)
