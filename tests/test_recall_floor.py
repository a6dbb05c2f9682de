"""Auto-recall's floors hold on any workspace: chance reaches higher among more memories, and one
shared word is not a topic.

An embedder whose cosines are planned (each prompt its own axis; a memory's share of that axis is
its cosine to the prompt) runs a real index and the real gate, so each figure below is exactly
the cosine the gate sees:

* a memory that clears the recall floor on meaning alone among a few dozen memories is chance
  among a thousand, where an unrelated prompt's best cosine is the largest of a thousand draws:
  the floor rises with the workspace (``core/recall.floor_for_size``), unless the user set one,
  and so does the topic floor a keyword match must reach;
* a keyword match that shares a single word with the prompt must reach the relevance floor,
  not only the topic floor a match on several words needs.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from conftest import write
from mcp_memory.config import load_settings
from mcp_memory.core.analysis import TermAnalyzer, words_among
from mcp_memory.core.recall import floor_for_size
from mcp_memory.embedding.base import Embedder, normalize
from mcp_memory.memory import Memory

BEACON = "Who tends the beacon on the coast?"  # shares no word with the lighthouse memory
LIGHTHOUSE = "- The lighthouse keeper retired in May and moved inland."
BOAT = "When does the boat to the islands go?"  # shares no word with the ferry memory
FERRY = "- The harbour ferry now leaves from the north pier at seven."
PLURAL = "What is the plural of octopus?"  # one word in common with the guitar memory
PAINTED = "Who painted the octopus on Calvin's guitar?"  # three words in common
GUITAR = "- Calvin's guitar has an octopus design painted by a friend from Osaka."
BILLING = "Who is responsible for billing?"  # one word in common with the billing memory
BOB = "- Billing moved to Bob's team."
PLANTS = "- The office plants need water on Fridays."  # with BOB in one daily chunk, which it dilutes
WEATHER = "What was the weather like on April 30th?"  # names a day; one word in common with SWIM
SWIM = "- The weather turned hot, so we went swimming at the lake."
# One word of five in common with CLINIC ("clinic"): a keyword coverage of 0.2, under the 0.3 a
# keyword match needs. KEYS shares the daily chunk and dilutes it (0.10).
EXAM = "When is my annual physical exam at the clinic scheduled?"
FLU = "Which clinic gives the annual flu shots this year?"
CLINIC = "- The clinic moved my checkup to June 10."
KEYS = "- The spare keys hang by the back door."


class PlannedEmbedder(Embedder):
    """Each prompt of ``PROMPTS`` is an axis of its own; a memory's vector holds, on each prompt's
    axis, its planned cosine to that prompt, the rest on an axis of its own. Every other text is a
    random direction among axes no prompt uses, so its cosine to every prompt is 0."""

    provider = "test-planned"
    model = "planned-cosines"
    relevance_floor = 0.20
    recall_floor = 0.25
    topic_floor = 0.14
    noise_spread = 0.045
    PROMPTS = (BEACON, BOAT, PLURAL, PAINTED, BILLING, WEATHER, EXAM, FLU)
    # Read in order: a text holding PLANTS (alone, or the chunk it shares with BOB) is far from BILLING.
    PLANS: ClassVar[dict[str, dict[str, float]]] = {
        LIGHTHOUSE: {BEACON: 0.27}, FERRY: {BOAT: 0.40}, GUITAR: {PLURAL: 0.17, PAINTED: 0.16},
        PLANTS: {BILLING: 0.12}, BOB: {BILLING: 0.28}, SWIM: {WEATHER: 0.17},
        KEYS: {EXAM: 0.10, FLU: 0.10}, CLINIC: {EXAM: 0.45, FLU: 0.33}}
    _DIMS = 64

    @property
    def dimensions(self) -> int:
        return self._DIMS

    def _vector(self, text: str) -> np.ndarray:
        v = np.zeros(self._DIMS, np.float32)
        for k, prompt in enumerate(self.PROMPTS):
            if prompt in text:
                v[k] = 1.0
                return v
        for n, (memory, plan) in enumerate(self.PLANS.items()):
            if memory[2:] in text:
                for k, prompt in enumerate(self.PROMPTS):
                    v[k] = plan.get(prompt, 0.0)
                v[len(self.PROMPTS) + n] = math.sqrt(1.0 - float(np.dot(v, v)))
                return v
        free = len(self.PROMPTS) + len(self.PLANS)
        seed = int(hashlib.md5(text.encode()).hexdigest()[:8], 16)
        v[free:] = np.random.default_rng(seed).normal(size=self._DIMS - free)
        return normalize(v)

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return np.stack([self._vector(t) for t in texts]) if texts else np.zeros((0, self._DIMS), np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self._vector(text)


def _workspace(root: Path, fillers: int) -> None:
    write(root, "memory/places/coast.md", f"{LIGHTHOUSE}\n")
    write(root, "memory/places/harbour.md", f"{FERRY}\n")
    write(root, "memory/people/calvin.md", f"{GUITAR}\n")
    write(root, "memory/2026-02-06.md", f"# 2026-02-06\n\n{BOB}\n{PLANTS}\n")
    write(root, "memory/2026-03-02.md", f"# 2026-03-02\n\n{KEYS}\n{CLINIC}\n")
    for i in range(fillers):
        parcel = i * 7919 % 10007
        write(root, f"memory/errands/e{i:04d}.md", f"- Errand {i}: pick up parcel {parcel} at counter {i % 13}.\n")


def _recalled(root: Path, prompt: str, environ: dict[str, str] | None = None) -> list[str]:
    with Memory(load_settings(root, environ=environ or {}), embedder=PlannedEmbedder()) as memory:
        memory.index()
        return [h.snippet for h in memory.recall_hits(prompt)]


def test_the_floor_rises_with_the_number_of_memories_and_never_falls() -> None:
    assert floor_for_size(0.25, 40, 0.045) == floor_for_size(0.25, 100, 0.045) == 0.25
    assert floor_for_size(0.25, 100_000, None) == 0.25  # a model whose chance spread is not known
    rising = [floor_for_size(0.25, n, 0.045) for n in (1_000, 10_000, 100_000, 1_000_000)]
    assert rising == sorted(rising) and rising[0] > 0.27 and rising[-1] < 0.40


def test_a_memory_close_enough_among_dozens_is_chance_among_a_thousand(tmp_path: Path) -> None:
    small, large = tmp_path / "small", tmp_path / "large"
    _workspace(small, 20)
    _workspace(large, 1_000)
    assert any("lighthouse keeper" in s for s in _recalled(small, BEACON))
    # Among a thousand memories 0.27 is what chance reaches: the lighthouse stays out, while the
    # ferry, at 0.40, is still what its prompt is about.
    shown = _recalled(large, BEACON)
    assert not any("lighthouse keeper" in s for s in shown), shown
    assert any("harbour ferry" in s for s in _recalled(large, BOAT))
    # The topic floor a keyword match needs rises too: three shared words at 0.16 name the guitar
    # among a few memories, not among a thousand.
    assert any("octopus design" in s for s in _recalled(small, PAINTED))
    assert not any("octopus design" in s for s in _recalled(large, PAINTED))
    # A floor the user set is kept as set, whatever the workspace's size.
    fixed = _recalled(large, BEACON, {"MCP_MEMORY_RECALL_SIMILARITY_FLOOR": "0.25"})
    assert any("lighthouse keeper" in s for s in fixed), fixed


@pytest.mark.parametrize(("prompt", "recalled"), [(PLURAL, False), (PAINTED, True)])
def test_one_shared_word_must_also_be_close_in_meaning(tmp_path: Path, prompt: str, recalled: bool) -> None:
    """Above the topic floor and below the relevance floor (0.16, 0.17) the guitar memory is the
    topic of a prompt that names it by three words, not of one that shares only "octopus"."""
    _workspace(tmp_path, 5)
    shown = _recalled(tmp_path, prompt)
    assert any("octopus design" in s for s in shown) is recalled, shown


def test_a_memory_diluted_by_its_chunk_faces_the_gate_by_its_own_cosine(tmp_path: Path) -> None:
    """A daily chunk of two bullets reads far from the prompt (0.12, below even the topic floor);
    the bullet that shares the prompt's one word is close on its own (0.28): it passes the gate a
    one-word match faces (the relevance floor, with the margin a single memory's cosine is given)."""
    _workspace(tmp_path, 5)
    shown = _recalled(tmp_path, BILLING)
    assert [s for s in shown if "Bob's team" in s] and not [s for s in shown if "office plants" in s], shown


@pytest.mark.parametrize(("prompt", "recalled"), [(EXAM, True), (FLU, False)])
def test_a_memory_that_shares_few_words_is_judged_by_its_own_cosine_with_a_wider_margin(
        tmp_path: Path, prompt: str, recalled: bool) -> None:
    """A daily chunk reads far from the prompt (0.10) and shares one word of its five ("clinic"):
    too few for a keyword match. The bullet itself is close to one prompt (0.45) and is recalled
    alone; to the other it is at 0.33, within the margin a memory gets over the floor (0.25 + 0.05)
    but short of the one a weak match needs (0.40): chance comes that close among short memories."""
    _workspace(tmp_path, 5)
    shown = _recalled(tmp_path, prompt)
    assert any("moved my checkup" in s for s in shown) is recalled, shown
    assert not any("spare keys" in s for s in shown), shown


@pytest.mark.parametrize("named", [True, False])
def test_one_shared_word_is_enough_in_a_memory_of_the_day_the_prompt_names(tmp_path: Path, named: bool) -> None:
    """"What was the weather like on April 30th?" is about that day: its memory that shares the word
    "weather" (0.17) is recalled; the same memory on another day is not."""
    today = dt.date.today()
    year = today.year if (today.month, today.day) >= (4, 30) else today.year - 1
    day = dt.date(year, 4, 30) if named else dt.date(year, 4, 12)
    write(tmp_path, f"memory/{day.isoformat()}.md", f"# {day.isoformat()}\n\n{SWIM}\n")
    _workspace(tmp_path, 5)
    shown = _recalled(tmp_path, WEATHER)
    assert any("went swimming" in s for s in shown) is named, shown


@pytest.mark.parametrize(("prompt", "memory", "words"), [
    ("What is the plural of octopus?", "Calvin has an octopus guitar.", 1),
    ("咖啡最早是在哪个国家被发现的？", "我们住的民宿老板自己种咖啡。", 1),  # 咖啡, not 咖 + 啡 + 咖啡 (nor 的)
    ("用户喜欢喝什么咖啡", "用户只喝美式咖啡。", 2),
])
def test_the_words_a_memory_shares_with_a_prompt_count_a_chinese_word_once(prompt: str, memory: str,
                                                                            words: int) -> None:
    analyzer = TermAnalyzer()
    assert words_among(frozenset(analyzer.query_terms(prompt)) & analyzer.terms(memory)) == words
