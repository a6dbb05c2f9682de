"""Changed facts: does the later statement win in every search mode, in recall and in the sleep cycle?

``bench/data/updates.jsonl`` holds labelled pairs of memories (an older and a newer bullet, each
with its day, a question asking for the current value, worded unlike both, and a ``dev`` or
``test`` half): ``update`` (the newer gives a value the older cannot still hold: "prefers npm" →
"now prefers pnpm, no longer npm", "Alice owns billing" → "Billing moved to Bob's team", 物业费每月
380 元 → 涨到每月 420 元了), ``lookalike`` (both stay true: an addition, another person or project
with the same kind of fact, a past event and a plan, an action and its reversal, a recurring event
on another day, numbers of different things) and ``unrelated``; in English, Chinese and across the
two (one side each). The sentences are the project's own, written for this benchmark.

Every pair goes into one workspace (the older bullet in ``memory/<older_date>.md``, the newer in
``memory/<newer_date>.md``) with 200 unrelated filler bullets on other days, indexed with the
default embedder. For each pair and each mode, with the feature on and off
(``mcp_memory.core.updates.SEARCH_WINDOW``); a memory's place is that of the hit it names (a hit
is named by the memory holding its best line):

* search modes (``memory.search`` with 6 hits, ``precise_search`` 5, ``deep_search`` 8, the
  tools' defaults): an update wins when the newer is listed above the older (or the older is not
  listed); "(won/listed)" counts only the pairs where either is listed; ``marked``: the older is
  listed with ``replaced_by`` = the newer's id;
* recall (``memory.recall_hits``): an update wins when the newer is shown and the older is not;
* a lookalike or unrelated pair is falsely superseded when either of its memories gets a
  ``replaced_by`` (search) or is shown with the feature off but not with it on (recall); an
  update pair is "marked by a third" when its older names another memory than the newer, or its
  newer names any (a false supersession too, counted apart).

Then ``memory.sleep.run(dry_run=True)``: an update is found when its older memory is marked
superseded by its newer one; any mark on a lookalike or unrelated pair, or between memories of
different pairs or fillers, is a false supersession. A false supersession hides a true memory,
so it counts double: the weighted accuracy is (right) / (pairs + false supersessions).
Figures per split (tune on ``dev`` only), per language (en, zh, cross) and per mode; the time of
a default search, p50, with the feature on and off (query vectors cached, back to back).

    python bench/updates.py                    # both halves, every mode, and the sleep cycle
    python bench/updates.py --split dev        # the half thresholds may be tuned on
    python bench/updates.py --json out.json    # also write every pair's outcome
    python bench/updates.py --window 10        # another SEARCH_WINDOW (the module is unchanged)
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.machine import emit, loadavg, machine
from mcp_memory.config import load_settings
from mcp_memory.core.hits import SearchHit
from mcp_memory.core.memory_ids import memory_id
from mcp_memory.memory import Memory

try:  # absent before the feature: the whole run is then "off"
    from mcp_memory.core import updates as feature
except ImportError:  # pragma: no cover - the baseline run
    feature = None  # type: ignore[assignment]

DATA = Path(__file__).resolve().parent / "data" / "updates.jsonl"
MODES = {"default": 6, "precise": 5, "deep": 8, "recall": 0}  # hits per mode: the MCP tools' defaults
TODAY = dt.date(2026, 11, 27)
NOW = dt.datetime(2026, 11, 27, 12, 0, tzinfo=dt.UTC)

# Filler memories: unrelated to every pair and to each other (a subject each), on days no pair uses.
FILLERS_EN = [
    "{p} recommended the novel {b}.", "The {r} plant needs water every {n} days.", "{p} brought {f} to the potluck.",
    "Watched the documentary {b} with {p}.", "The {r} window sticks in cold weather.",
    "{p} is training for a half marathon.", "The {r} lamp uses an E14 bulb.", "{p} speaks {l} at home.",
    "Read a long article about {t} on the train.", "{p} collects vintage {c}.",
]
FILLERS_ZH = [
    "{p}推荐了一本书叫《{b}》。", "{r}的绿植每{n}天浇一次水。", "{p}聚餐时带了{f}。", "和{p}一起看了纪录片《{b}》。",
    "{r}的窗户冬天不太好关。", "{p}在准备半程马拉松。", "{r}的台灯要用小螺口灯泡。", "{p}在家里说{l}。",
    "在地铁上读了一篇关于{t}的长文。", "{p}收藏老式{c}。",
]
EN_WORDS = {
    "p": ["Ana", "Bruno", "Chloe", "Dmitri", "Elif", "Farid", "Greta", "Hugo", "Ines", "Jonas"],
    "b": ["The Glass Orchard", "Salt Roads", "Paper Lanterns", "North of Quiet", "The Long Tide", "Copper Hill",
          "Night Ferry", "Small Weather", "The Tin Garden", "River Maps"],
    "r": ["hallway", "attic", "guest room", "porch", "laundry room", "study", "nursery", "pantry", "garage", "loft"],
    "n": ["3", "4", "5", "6", "7", "8", "9", "10", "12", "14"],
    "f": ["lentil soup", "a lemon tart", "dumplings", "flatbread", "a bean salad", "spring rolls", "a plum cake",
          "hummus", "roasted peppers", "rice pudding"],
    "l": ["Portuguese", "Turkish", "Greek", "Polish", "Dutch", "Swedish", "Czech", "Hungarian", "Finnish", "Danish"],
    "t": ["tidal energy", "bee colonies", "Roman roads", "glacier melt", "deep sea vents", "desert lichens",
          "old maps", "bird migration", "cave paintings", "coral reefs"],
    "c": ["postcards", "fountain pens", "vinyl records", "tin toys", "stamps", "pocket watches", "film cameras",
          "matchboxes", "enamel pins", "typewriters"],
}
ZH_WORDS = {
    "p": ["阿宁", "小蔡", "老包", "丁丁", "二宝", "范姐", "葛叔", "韩梅", "小纪", "孔哥"],
    "b": ["玻璃果园", "盐路", "纸灯笼", "安静以北", "长潮", "铜山", "夜渡", "小天气", "锡花园", "河流地图"],
    "r": ["玄关", "阁楼", "客房", "门廊", "洗衣间", "书房", "婴儿房", "储藏间", "车库", "夹层"],
    "n": ["三", "四", "五", "六", "七", "八", "九", "十", "十二", "十四"],
    "f": ["扁豆汤", "柠檬挞", "饺子", "烙饼", "豆子沙拉", "春卷", "李子蛋糕", "鹰嘴豆泥", "烤辣椒", "米布丁"],
    "l": ["粤语", "闽南话", "客家话", "上海话", "四川话", "潮汕话", "东北话", "湖南话", "温州话", "山东话"],
    "t": ["潮汐能", "蜂群", "古罗马道路", "冰川融化", "深海热泉", "沙漠地衣", "古地图", "候鸟迁徙", "洞穴壁画",
          "珊瑚礁"],
    "c": ["明信片", "钢笔", "黑胶唱片", "铁皮玩具", "邮票", "怀表", "胶片相机", "火柴盒", "珐琅徽章", "打字机"],
}


def fillers() -> list[str]:
    """200 filler sentences: each template with ten different fills, in English and in Chinese."""
    out = []
    for templates, words in ((FILLERS_EN, EN_WORDS), (FILLERS_ZH, ZH_WORDS)):
        for t, template in enumerate(templates):
            for i in range(10):
                out.append(template.format(**{k: v[(i + t) % 10] for k, v in words.items()}))
    return out


def write_workspace(root: Path, pairs: list[dict[str, Any]]) -> None:
    """The pairs and the fillers as daily files, one bullet each."""
    days: dict[str, list[str]] = defaultdict(list)
    for pair in pairs:
        days[pair["older_date"]].append(pair["older"])
        days[pair["newer_date"]].append(pair["newer"])
    used = set(days)
    free = [d for d in (dt.date(2025, 1, 1) + dt.timedelta(days=i) for i in range(700)) if d.isoformat() not in used]
    for i, text in enumerate(fillers()):
        days[free[(i * 7) % len(free)].isoformat()].append(text)
    (root / "memory").mkdir(parents=True)
    for day, texts in days.items():
        lines = [f"# {day}", ""] + [f"- {t}" for t in texts]
        (root / f"memory/{day}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


def rank_of(hits: list[SearchHit], mid: str) -> int | None:
    """The position of the hit named by the memory (a hit is the memory holding its best line)."""
    return next((i for i, hit in enumerate(hits) if hit.id == mid), None)


def run_mode(memory: Memory, mode: str, query: str) -> list[SearchHit]:
    k = MODES[mode]
    if mode == "default":
        return memory.search(query, max_results=k, today=TODAY)
    if mode == "precise":
        return memory.precise_search(query, max_results=k, today=TODAY).hits
    if mode == "deep":
        return memory.deep_search(query, max_results=k, today=TODAY).hits
    return memory.recall_hits(query)


WINDOW = feature.SEARCH_WINDOW if feature is not None else 0  # the product's window ("on")


def set_feature(on: bool) -> None:
    if feature is not None:
        feature.SEARCH_WINDOW = WINDOW if on else 0


def observe(memory: Memory, pair: dict[str, Any], on: bool, times: list[float]) -> dict[str, Any]:
    """Where the pair's memories are in each mode, and what replaced_by each carries."""
    set_feature(on)
    old_id, new_id = memory_id(f"- {pair['older']}") or "", memory_id(f"- {pair['newer']}") or ""
    out: dict[str, Any] = {}
    for mode in MODES:
        if mode == "default":  # timed with the query's vector cached, as the other state finds it
            memory.search(pair["query"], max_results=MODES[mode], today=TODAY)
        started = time.perf_counter()
        hits = run_mode(memory, mode, pair["query"])
        if mode == "default":
            times.append((time.perf_counter() - started) * 1000)
        old_at, new_at = rank_of(hits, old_id), rank_of(hits, new_id)
        out[mode] = {
            "older": old_at, "newer": new_at,
            "older_replaced_by": hits[old_at].replaced_by if old_at is not None else None,
            "newer_replaced_by": hits[new_at].replaced_by if new_at is not None else None,
            "new_id": new_id,
        }
    return out


def judge_mode(pair: dict[str, Any], mode: str, on: dict[str, Any], off: dict[str, Any] | None) -> dict[str, Any]:
    """The outcome of one pair in one mode."""
    seen = on[mode]
    old_at, new_at = seen["older"], seen["newer"]
    if pair["label"] == "update":
        if mode == "recall":
            win = new_at is not None and old_at is None
        else:
            win = new_at is not None and (old_at is None or new_at < old_at)
        marked = old_at is not None and seen["older_replaced_by"] == seen["new_id"]
        # Either memory named stale by a third one ("prefers npm as the package manager" by "switched
        # the task manager to Todoist"): a false supersession on an update pair.
        wrong = seen["older_replaced_by"] not in (None, "", seen["new_id"]) or bool(seen["newer_replaced_by"])
        return {"win": win, "marked": marked, "both": old_at is not None and new_at is not None,
                "shown": old_at is not None or new_at is not None, "newer_found": new_at is not None,
                "wrong": wrong}
    false = bool(seen["older_replaced_by"]) or bool(seen["newer_replaced_by"])
    if mode == "recall" and off is not None:
        before = off[mode]
        false = false or (before["older"] is not None and old_at is None) or (
            before["newer"] is not None and new_at is None)
    return {"false": false}


def sleep_marks(memory: Memory, pairs: list[dict[str, Any]]) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """For each pair: "superseded" (the older marked superseded by the newer), "wrong" (any other mark
    between the two), or ""; and the marks between memories of different pairs or fillers."""
    report = memory.sleep.run(dry_run=True, now=NOW)
    by_id: dict[str, tuple[str, str]] = {}
    for pair in pairs:
        by_id[memory_id(f"- {pair['older']}") or ""] = (pair["id"], "older")
        by_id[memory_id(f"- {pair['newer']}") or ""] = (pair["id"], "newer")
    found: dict[str, str] = {}
    other: list[dict[str, Any]] = []
    for r in report.retired:
        item, by = by_id.get(r.item.id), by_id.get(r.by.id)
        if item and by and item[0] == by[0]:
            right = r.kind == "superseded" and item[1] == "older"
            found[item[0]] = "superseded" if right else f"wrong:{r.kind}:{item[1]}"
        else:
            other.append({"kind": r.kind, "item": r.item.text, "by": r.by.text, "similarity": round(r.similarity, 3)})
    return found, other


def summarise(pairs: list[dict[str, Any]], outcomes: dict[str, dict[str, Any]], sleep: dict[str, str],
              other_marks: int) -> dict[str, Any]:
    """Figures per split and language: each mode's win rate (on, off) and false supersessions; sleep."""
    table: dict[str, Any] = {}
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for pair in pairs:
        for split in (pair["split"], "all"):
            groups[f"{split}/{pair['lang']}"].append(pair)
            groups[f"{split}/all"].append(pair)
    for key, members in sorted(groups.items()):
        ups = [p for p in members if p["label"] == "update"]
        rest = [p for p in members if p["label"] != "update"]
        row: dict[str, Any] = {"updates": len(ups), "lookalikes": sum(p["label"] == "lookalike" for p in rest),
                               "unrelated": sum(p["label"] == "unrelated" for p in rest)}
        for mode in MODES:
            for state in ("on", "off"):
                results = [outcomes[p["id"]][state][mode] for p in ups if state in outcomes[p["id"]]]
                if results:
                    row[f"{mode}_{state}"] = round(sum(r["win"] for r in results) / len(results), 3)
                    shown = [r for r in results if r["shown"]]  # pairs where either memory is listed
                    row[f"{mode}_{state}_shown"] = f"{sum(r['win'] for r in shown)}/{len(shown)}"
            marked = [outcomes[p["id"]]["on"][mode] for p in ups]
            if mode != "recall" and marked:
                row[f"{mode}_marked"] = round(sum(r["marked"] for r in marked) / len(marked), 3)
                row[f"{mode}_wrong"] = sum(r.get("wrong", False) for r in marked)
            row[f"{mode}_false"] = sum(outcomes[p["id"]]["on"][mode]["false"] for p in rest)
        found = sum(sleep.get(p["id"]) == "superseded" for p in ups)
        false = sum(bool(sleep.get(p["id"])) for p in rest) + sum(
            sleep.get(p["id"], "").startswith("wrong") for p in ups)
        row["sleep_found"] = round(found / len(ups), 3) if ups else None
        row["sleep_false"] = false
        row["sleep_false_rate"] = round(false / len(rest), 3) if rest else None
        right = found + (len(rest) - sum(bool(sleep.get(p["id"])) for p in rest))
        row["sleep_weighted_accuracy"] = round(right / (len(members) + false), 3)
        table[key] = row
    table["other_sleep_marks"] = other_marks
    return table


def print_table(table: dict[str, Any]) -> str:
    lines = ["| split/lang | updates | default on/off | precise on/off | deep on/off | recall on/off | marked d/p/dp "
             "| false d/p/dp/r (non-updates) | marked by a third d/p/dp (updates) | sleep found | sleep false (rate) "
             "| sleep weighted acc |",
             "| --- | ---: | --- | --- | --- | --- | --- | --- | --- | ---: | --- | ---: |"]
    for key, row in table.items():
        if not isinstance(row, dict):
            continue
        modes = " | ".join(f"{row.get(f'{m}_on', '-')} ({row.get(f'{m}_on_shown', '-')}) / {row.get(f'{m}_off', '-')} "
                           f"({row.get(f'{m}_off_shown', '-')})" for m in MODES)
        marked = " / ".join(str(row.get(f"{m}_marked", "-")) for m in ("default", "precise", "deep"))
        false = " / ".join(str(row[f"{m}_false"]) for m in MODES)
        wrong = " / ".join(str(row.get(f"{m}_wrong", "-")) for m in ("default", "precise", "deep"))
        lines.append(f"| {key} | {row['updates']} | {modes} | {marked} | {false} of "
                     f"{row['lookalikes'] + row['unrelated']} | {wrong} | {row['sleep_found']} | {row['sleep_false']} "
                     f"({row['sleep_false_rate']}) | {row['sleep_weighted_accuracy']} |")
    lines.append(f"\nsleep marks between memories of different pairs or fillers: {table['other_sleep_marks']}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--split", choices=("dev", "test", "all"), default="all",
                        help="which pairs are scored (every pair is still written to the workspace)")
    parser.add_argument("--no-off", action="store_true", help="skip the runs with the feature off")
    parser.add_argument("--verbose", action="store_true", help="print every wrong pair")
    parser.add_argument("--window", type=int, help="instead of the module's SEARCH_WINDOW (the module is unchanged)")
    parser.add_argument("--json", type=Path, help="write the figures and every pair's outcome here")
    args = parser.parse_args()
    global WINDOW
    if args.window is not None:
        WINDOW = args.window
    pairs = [json.loads(line) for line in args.data.read_text(encoding="utf-8").splitlines() if line.strip()]
    scored = [p for p in pairs if args.split in ("all", p["split"])]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        write_workspace(root, pairs)
        memory = Memory(load_settings(root, environ={}))
        try:
            memory.index()
            run_mode(memory, "precise", "warm up")
            outcomes: dict[str, dict[str, Any]] = {}
            times: dict[str, list[float]] = {"on": [], "off": []}
            for pair in scored:
                seen = {"on": observe(memory, pair, True, times["on"])}
                if feature is None:
                    seen = {"off": seen["on"], "on": seen["on"]}
                elif not args.no_off:
                    seen["off"] = observe(memory, pair, False, times["off"])
                set_feature(True)
                outcomes[pair["id"]] = {state: {m: judge_mode(pair, m, s, seen.get("off")) for m in MODES}
                                        for state, s in seen.items()}
            set_feature(True)
            sleep, other = sleep_marks(memory, pairs)
        finally:
            memory.close()
    table = summarise(scored, outcomes, sleep, len(other))
    text = print_table(table)
    p50 = {state: round(statistics.median(t), 2) for state, t in times.items() if t}
    text += f"\ndefault search p50 ms: {p50} ({len(times['on'])} searches each)"
    wrong = []
    for pair in scored:
        modes = outcomes[pair["id"]]["on"]
        bad = [m for m, r in modes.items() if not r.get("win", True) or r.get("false")]
        s = sleep.get(pair["id"], "")
        if (s != "superseded") if pair["label"] == "update" else bool(s):
            bad.append(f"sleep({s or 'unmarked'})")
        if bad:
            wrong.append({"id": pair["id"], "split": pair["split"], "label": pair["label"], "bad": bad,
                          "older": pair["older"], "newer": pair["newer"]})
    if args.verbose:
        text += "\n\nwrong:\n" + "\n".join(f"  {w['id']} {w['split']} {w['label']} {','.join(w['bad'])}: "
                                           f"{w['older']!r} -> {w['newer']!r}" for w in wrong)
        text += "\n\nother sleep marks:\n" + "\n".join(f"  {o['kind']} {o['item']!r} by {o['by']!r} "
                                                       f"({o['similarity']})" for o in other)
    results = {"machine": machine(), "loadavg": loadavg(), "date": dt.date.today().isoformat(),
               "feature": feature is not None, "pairs": len(pairs), "scored": len(scored), "split": args.split,
               "seconds": round(time.perf_counter() - started, 1), "table": table, "search_p50_ms": p50,
               "wrong": wrong, "other_sleep_marks": other}
    emit({k: v for k, v in results.items() if k not in ("wrong", "other_sleep_marks")}, text, None)
    if args.json:
        args.json.write_text(json.dumps({**results, "outcomes": outcomes, "sleep": sleep}, ensure_ascii=False,
                                        indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
