"""Cross-language retrieval check: Chinese notes found by Chinese and by English queries.

A small hand-written set (24 Chinese notes, 12 English notes; 24 Chinese queries and 24
English queries aimed at the Chinese notes, 12 Chinese queries aimed at the English notes).
Queries paraphrase their note rather than copy it, as a user would ask. Each note is a topic
file of its own, so a hit identifies the note. Reports top-1 accuracy and MRR (within the top
6) per direction for each embedder, in hybrid, keyword-only and vector-only modes.

    python bench/cjk.py                       # embedders local (USE) and e5
    python bench/cjk.py --embedders local
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mcp_memory.config import load_settings
from mcp_memory.memory import Memory

# (note, Chinese query, English query)
ZH_NOTES = [
    ("我们决定使用 PostgreSQL 作为主数据库，不再使用 MySQL。", "主数据库选了哪个？",
     "Which database did we choose as the main one?"),
    ("用户喜欢用 pnpm 管理前端依赖，不要用 npm 或 yarn。", "前端项目该用什么包管理器？",
     "What package manager should the frontend use?"),
    ("所有接口都必须加上 /api/v2 前缀。", "新接口的路径要以什么开头？", "What prefix do the API endpoints need?"),
    ("每周五下午三点开团队周会，地点在三楼会议室。", "周会是什么时候开？", "When is the weekly team meeting?"),
    ("生产环境部署在阿里云杭州区域，使用 Kubernetes 集群。", "线上服务部署在哪里？", "Where is production deployed?"),
    ("张伟负责支付模块，有问题先找他。", "支付相关的问题应该问谁？", "Who owns the payment module?"),
    ("代码提交前必须通过单元测试和代码检查。", "提交代码之前要做什么？", "What has to pass before committing code?"),
    ("用户对花生过敏，订餐时要避开花生。", "点外卖要注意什么过敏？", "What food allergy does the user have?"),
    ("日志统一输出为 JSON 格式并保留三十天。", "日志要保存多久？", "How long are logs kept?"),
    ("前端框架选用 Vue 3，状态管理用 Pinia。", "前端用的是什么框架？", "Which frontend framework did we pick?"),
    ("用户的生日是十月十二日。", "用户哪天过生日？", "When is the user's birthday?"),
    ("缓存层使用 Redis，过期时间默认十分钟。", "缓存默认多久过期？", "What is the default cache expiry?"),
    ("发布流程：先合并到 main 分支，再打标签触发流水线。", "怎么发布新版本？", "How do we release a new version?"),
    ("用户更喜欢简洁的回答，不要长篇大论。", "回答用户时应该是什么风格？", "What answer style does the user prefer?"),
    ("测试服务器的地址是 test.example.cn，只能在内网访问。", "测试环境怎么访问？",
     "How can the test server be reached?"),
    ("我们的客户主要在东南亚，所以时区以新加坡时间为准。", "排期按哪个时区？", "Which time zone do we schedule in?"),
    ("文档统一写在飞书知识库里。", "文档放在哪里？", "Where is the documentation kept?"),
    ("图片上传限制为五兆字节以内。", "上传图片最大多大？", "What is the image upload size limit?"),
    ("用户每天早上七点跑步五公里。", "用户早上有什么运动习惯？", "What does the user do every morning for exercise?"),
    ("密码必须至少十二位，并包含数字和符号。", "密码有什么规则？", "What are the password rules?"),
    ("搜索功能用 Elasticsearch 实现，中文分词用 IK 插件。", "搜索是用什么做的？", "What powers the search feature?"),
    ("下个季度的目标是把首页加载时间降到一秒以内。", "下季度的性能目标是什么？",
     "What is next quarter's performance goal?"),
    ("用户的猫叫小白，是一只三岁的英短。", "用户养的宠物叫什么名字？", "What is the name of the user's cat?"),
    ("数据库备份每天凌晨两点自动执行。", "备份什么时候跑？", "When do database backups run?"),
]
# (note, Chinese query aimed at it)
EN_NOTES = [
    ("The user is vegetarian and avoids fish as well.", "用户有什么饮食限制？"),
    ("We moved CI from Jenkins to GitHub Actions in March.", "持续集成现在用什么？"),
    ("The staging database is reset every Sunday night.", "预发布数据库多久重置一次？"),
    ("Alice is the designer; send her all UI mockups for review.", "界面设计稿要发给谁审核？"),
    ("The mobile app targets iOS 16 and Android 12 or newer.", "移动端最低支持哪些系统版本？"),
    ("Invoices are generated on the first day of every month.", "发票什么时候生成？"),
    ("The user speaks German and is learning Japanese.", "用户在学什么语言？"),
    ("Feature flags are managed in LaunchDarkly.", "功能开关在哪里管理？"),
    ("Our on-call rotation changes every Monday at 9 am.", "值班什么时候轮换？"),
    ("The user drives a blue electric car.", "用户开什么车？"),
    ("Error budgets are reviewed in the monthly SRE meeting.", "错误预算在哪个会议上讨论？"),
    ("Customer data must stay in EU data centers.", "客户数据必须存放在哪里？"),
]


def build(workspace: Path) -> None:
    for i, (note, _, _) in enumerate(ZH_NOTES):
        (workspace / "memory" / "set-a").mkdir(parents=True, exist_ok=True)
        (workspace / "memory" / "set-a" / f"note-{i:02d}.md").write_text(f"- {note}\n", encoding="utf-8")
    for i, (note, _) in enumerate(EN_NOTES):
        (workspace / "memory" / "set-b").mkdir(parents=True, exist_ok=True)
        (workspace / "memory" / "set-b" / f"note-{i:02d}.md").write_text(f"- {note}\n", encoding="utf-8")


def score(memory: Memory, cases: list[tuple[str, str]]) -> dict[str, float]:
    top1, rr = [], []
    for query, target in cases:
        paths = [h.path for h in memory.search(query)]
        rank = paths.index(target) if target in paths else None
        top1.append(1.0 if rank == 0 else 0.0)
        rr.append(1.0 / (rank + 1) if rank is not None else 0.0)
    return {"top1": round(statistics.fmean(top1), 3), "MRR": round(statistics.fmean(rr), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--embedders", default="local,e5")
    args = parser.parse_args()
    zh_zh = [(zq, f"memory/set-a/note-{i:02d}.md") for i, (_, zq, _) in enumerate(ZH_NOTES)]
    en_zh = [(eq, f"memory/set-a/note-{i:02d}.md") for i, (_, _, eq) in enumerate(ZH_NOTES)]
    zh_en = [(zq, f"memory/set-b/note-{i:02d}.md") for i, (_, zq) in enumerate(EN_NOTES)]
    results: dict[str, dict] = {}
    for provider in args.embedders.split(","):
        root = Path(tempfile.mkdtemp(prefix=f"mcp-memory-cjk-{provider}-"))
        try:
            build(root)
            settings = load_settings(root, overrides={"embedding.provider": provider}, environ={})
            with Memory(settings) as memory:
                memory.index()
                embedder = memory.engine.searcher.embedder
                for mode in ("hybrid", "bm25", "vector"):
                    memory.settings.search.text_weight, memory.settings.search.vector_weight = 0.5, 0.5
                    memory.engine.searcher.embedder = embedder
                    if mode == "bm25":
                        memory.engine.searcher.embedder = None
                    elif mode == "vector":
                        memory.settings.search.text_weight = 0.0
                    key = "bm25" if mode == "bm25" else f"{provider} {mode}"
                    if key in results:
                        continue
                    results[key] = {"zh->zh": score(memory, zh_zh), "en->zh": score(memory, en_zh),
                                    "zh->en": score(memory, zh_en)}
                    row = results[key]
                    print(f"{key:14s} zh->zh top1 {row['zh->zh']['top1']:.2f} MRR {row['zh->zh']['MRR']:.2f} | "
                          f"en->zh top1 {row['en->zh']['top1']:.2f} MRR {row['en->zh']['MRR']:.2f} | "
                          f"zh->en top1 {row['zh->en']['top1']:.2f} MRR {row['zh->en']['MRR']:.2f}", file=sys.stderr)
        finally:
            shutil.rmtree(root, ignore_errors=True)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
