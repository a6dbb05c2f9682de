"""The auto-recall gate stays quiet: the block carries what the prompt is about, not the next topics over.

A memory recalled on meaning alone must reach the recall floor and come within
``recall.similarity_margin`` of the best memory's cosine; one the prompt names by its words stays
whatever its cosine. With the real default embedder, a prompt about one person's allergy brings
that memory alone, and an unrelated prompt brings nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import write
from mcp_memory.config import ConfigError, load_settings
from mcp_memory.core.analysis import TermAnalyzer
from mcp_memory.core.hits import SearchHit
from mcp_memory.core.recall import close_to_best
from mcp_memory.memory import Memory


def _hit(line: int, similarity: float | None, coverage: float = 0.0, score: float = 1.0, id: str = "") -> SearchHit:
    return SearchHit(path="memory/2026-01-01.md", start_line=line, end_line=line, score=score, snippet=f"line {line}",
                     source="memory", date=None, keyword_coverage=coverage, vector_similarity=similarity, id=id)


def test_hits_far_below_the_best_cosine_are_left_out_unless_named_by_the_prompt() -> None:
    hits = [_hit(1, 0.41), _hit(2, 0.38), _hit(3, 0.30), _hit(4, 0.29, coverage=0.6), _hit(5, None, coverage=0.2)]
    kept = [h.start_line for h in close_to_best(hits, 0.05, 0.5)]
    assert kept == [1, 2, 4, 5]
    assert close_to_best(hits, 2.0, 0.5) == hits  # no margin: everything the gate let through
    keyword_only = [_hit(1, None, 0.4), _hit(2, None, 0.3)]
    assert close_to_best(keyword_only, 0.05, 0.5) == keyword_only


def test_hits_far_behind_the_best_score_are_left_out_even_when_they_share_the_prompts_words() -> None:
    """A memory that shares one of the prompt's words (coverage past the gate) but scores well behind
    the best one is the next topic over; a memory kept by ``keep`` (a later memory shown in place of
    an earlier one, a memory of the day the prompt names) stays."""
    hits = [_hit(1, 0.45, 0.6, score=0.80), _hit(2, 0.44, 0.6, score=0.70), _hit(3, 0.30, 0.6, score=0.40),
            _hit(4, 0.20, 0.6, score=0.30, id="kept")]
    kept = [h.start_line for h in close_to_best(hits, 0.05, 0.5, keep={"kept"}, score_ratio=0.8)]
    assert kept == [1, 2, 4]
    assert close_to_best(hits, 0.05, 0.5, score_ratio=0.0) == hits  # off: only the cosine margin


@pytest.mark.parametrize(("key", "value"), [("recall.similarity_margin", -0.1), ("recall.min_score_ratio", 1.5),
                                            ("recall.min_score_ratio", -0.2)])
def test_a_margin_or_ratio_out_of_range_is_a_clear_configuration_error(tmp_path: Path, key: str, value: float) -> None:
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        load_settings(tmp_path, environ={}, overrides={key: value})


MEMORIES = {
    "memory/people/maya-allergy.md": "- Maya is allergic to penicillin: she came out in a rash after amoxicillin.\n",
    "memory/people/maya-migraine.md": "- Maya takes ibuprofen for her migraines, but it upsets her stomach unless "
                                      "she eats first.\n",
    "memory/people/tom-run.md": "- Tom is training for the Berlin marathon and runs every morning.\n",
    "memory/people/tom-knee.md": "- Tom's physiotherapist told him to ice his knee after long runs.\n",
    "memory/home/boiler.md": "- The boiler service is due in March; the engineer is called Dave.\n",
    "memory/food/curry.md": "- The family curry recipe uses three cardamom pods and a cinnamon stick.\n",
}
# Each prompt is about one memory; the other memory of the same person sits 0.07-0.2 below it in
# cosine (0.30-0.32), above the old floor of 0.20: the old gate showed both.
ABOUT = {
    "Maya has one of her bad headaches again, what should she take?": "memory/people/maya-migraine.md",
    "The doctor wants to prescribe Maya an antibiotic for her ear infection.": "memory/people/maya-allergy.md",
    "Tom's knee hurts after his long run this morning, any advice?": "memory/people/tom-knee.md",
}


def test_with_the_default_embedder_the_block_holds_what_the_prompt_is_about(tmp_path: Path) -> None:
    for path, text in MEMORIES.items():
        write(tmp_path, path, text)
    with Memory(load_settings(tmp_path, environ={})) as memory:
        memory.index()
        for prompt, path in ABOUT.items():
            shown = memory.recall_hits(prompt)
            assert [h.path for h in shown] == [path], (prompt, [h.snippet for h in shown])
        assert memory.recall_hits("Write a short haiku about falling snow at night.") == []


SESSION = """# Weekend call

Date: 2025-02-15

- **Priya:** Happy holidays, Tom! Did the bees survive the first cold snap?
- **Tom:** They did, I wrapped the hive in straw before the frost.
- **Priya:** The venue's booked, the Garfield Park Conservatory.
- **Tom:** How's the truck? Still making that noise?
"""
OTHER_NOTES = {
    "memory/home/garden.md": "- The tomatoes go in the raised bed by the fence in late May.\n",
    "memory/work/deploys.md": "- Deploys to production happen on Tuesdays after the standup.\n",
}


def test_words_shared_by_chance_recall_nothing_but_a_prompt_on_the_topic_does(tmp_path: Path) -> None:
    """A prompt whose keywords all appear in a memory (a number in a date, "how", "cold") while
    its meaning is far from it gets no block; one about the memory's topic still gets it."""
    write(tmp_path, "memory/dialogues/2025-02-15-call.md", SESSION)
    for path, text in OTHER_NOTES.items():
        write(tmp_path, path, text)
    with Memory(load_settings(tmp_path, environ={})) as memory:
        memory.index()
        for prompt in ("What's 15% of 240?", "How does a refrigerator keep things cold?"):
            assert memory.recall_hits(prompt) == [], (prompt, [h.snippet for h in memory.recall_hits(prompt)])
        shown = memory.recall_hits("Did Tom's bees make it through the cold snap?")
        assert any("bees survive" in h.snippet for h in shown), [h.snippet for h in shown]


def test_a_memory_found_by_keywords_alone_is_judged_by_its_cosine_too(tmp_path: Path) -> None:
    """A memory outside the vector candidates shares a word with an unrelated prompt by chance.
    Its cosine is low, not unknown: recall judges it as any other (a keyword share of a third is
    not enough when the meaning is far), and search reports that cosine."""
    nearer = ["The book club read a history of Venetian merchants and their ships.",
              "A documentary about medieval explorers and the maps they drew.",
              "The museum's new exhibit covers the silk trade between Europe and China.",
              "Grandpa's stories about sailing to Asia as a young man.",
              "Notes on the Mongol empire for the history quiz night.",
              "A podcast episode about famous journeys across the desert.",
              "The kids' school project on explorers of the thirteenth century.",
              "An old atlas found in the attic, with routes drawn in pencil.",
              "Planning a trip to Venice next spring, maybe in April.",
              "Watched a film about a merchant's long voyage to the east.",
              "The library's talk on ancient trade roads was sold out.",
              "Read an article on how caravans crossed Central Asia.",
              "The history teacher recommended a biography of Kublai Khan.",
              "A board game about trading spices across the Mediterranean."]
    notes = [*nearer, "Safe travels, see you soon after the conference!"]
    for day, note in enumerate(notes, start=1):
        write(tmp_path, f"memory/2026-03-{day:02d}.md", f"# 2026-03-{day:02d}\n\n- {note}\n")
    settings = load_settings(tmp_path, environ={"MCP_MEMORY_SEARCH_CANDIDATE_MULTIPLIER": "1"})
    memory = Memory(settings)
    memory.index()
    try:
        prompt = "Who was Marco Polo and where did he travel?"
        hits = memory.search(prompt, max_results=3)
        assert hits and all(h.vector_similarity is not None for h in hits), hits
        assert "Safe travels" not in memory.recall(prompt)
    finally:
        memory.close()


def test_a_bullet_close_to_the_prompt_is_recalled_from_a_chunk_of_unrelated_ones(tmp_path: Path) -> None:
    """A day's log holds a dozen unrelated bullets: their meanings dilute the chunk's vector far
    below the recall floor. The bullet that matches the prompt's words is judged on its own."""
    bullets = ["The hallway plant needs water every four days.", "Greta brought a lemon tart to the potluck.",
               "The attic window sticks in cold weather.", "Hugo is training for a half marathon.",
               "Read a long article about coral reefs on the train.", "Ines collects vintage fountain pens.",
               "The design mockups now live in Figma, no longer in Lanhu.", "The router is in the hallway closet.",
               "Weekly one-on-one with Grace is on Mondays.", "The backup server is in Frankfurt.",
               "The user's budget for the new laptop is 1,500 dollars.", "用户的儿子转学到了实验中学。"]
    write(tmp_path, "memory/2026-11-10.md", "# 2026-11-10\n\n" + "".join(f"- {b}\n" for b in bullets))
    for day, note in enumerate(["The office coffee machine was repaired.", "老马负责招聘。",
                                "Code freeze is on December 12."], start=1):
        write(tmp_path, f"memory/2026-10-{day:02d}.md", f"# 2026-10-{day:02d}\n\n- {note}\n")
    memory = Memory(load_settings(tmp_path, environ={}))
    memory.index()
    try:
        prompt = "Where are the design mockups kept for the mobile project?"
        chunk = next(h for h in memory.search(prompt, max_results=5) if h.path == "memory/2026-11-10.md")
        # Neither the chunk's words (under half the prompt's) nor its cosine would let it through.
        assert chunk.keyword_coverage < 0.5 and chunk.vector_similarity is not None
        assert chunk.vector_similarity < memory.engine.recall_floor()
        assert "The design mockups now live in Figma" in memory.recall(prompt)
        assert "Greta" not in memory.recall(prompt)
    finally:
        memory.close()


CHAT = """# Catch-up

- **Ana:** It's been a wild week, I'm still catching up on sleep.
- **Ben:** That's rough! What's keeping you up, the new novel you're writing?
- **Ana:** Yes, it's the novel. I've rewritten the last chapter three times, and it still doesn't work.
- **Ben:** You'll get there. Don't forget we're meeting Sam's sister on Friday.
"""


def test_the_fragments_of_contractions_are_not_query_words() -> None:
    """"What's", "Kafka's" and "don't" leave "s" and "t", which nearly every chat line holds."""
    analyzer = TermAnalyzer()
    assert analyzer.query_terms("What's the plot of Kafka's novel? I don't remember, won't you tell me?") == [
        "plot", "kafka", "novel"]
    assert analyzer.query_terms("Kafka’s novel") == ["kafka", "novel"]  # a typographic apostrophe too
    assert analyzer.query_terms("rock 'n' roll in the '90s, l'homme") == ["rock", "n", "roll", "90s", "l", "homm"]


def test_a_chat_full_of_contractions_does_not_cover_a_prompt_with_one(tmp_path: Path) -> None:
    """A prompt about stretching shares "sleep" and the "s" of "What's" with a chat whose lines say
    "it's" and "that's": the chat covers one of its three words, not half, and no block comes back;
    a prompt about the chat's own novel still recalls it."""
    write(tmp_path, "memory/chats/2026-02-03.md", CHAT)
    for path, text in OTHER_NOTES.items():
        write(tmp_path, path, text)
    with Memory(load_settings(tmp_path, environ={})) as memory:
        memory.index()
        prompt = "What's a good stretch before sleep?"
        chat = [h for h in memory.search(prompt, max_results=5) if h.path == "memory/chats/2026-02-03.md"]
        assert chat and all(h.keyword_coverage < 0.5 for h in chat), chat
        assert memory.recall_hits(prompt) == [], [h.snippet for h in memory.recall_hits(prompt)]
        shown = memory.recall_hits("How is Ana's novel going? Did she fix the last chapter?")
        assert any("rewritten the last chapter" in h.snippet for h in shown), [h.snippet for h in shown]



DEBORAH = ["Deborah and her husband go hiking in the hills together most weekends.",
           "Deborah has a pendant that reminds her of her mother.",
           "Deborah values love and openness in her relationship with her husband.",
           "Deborah teaches yoga classes at the community centre.",
           "Deborah's neighbour Anna joined her yoga class last spring.",
           "Deborah planted tomatoes and basil in her garden.",
           "Deborah's old photo album reminds her of growing up by the sea.",
           "Deborah is reading a novel about a lighthouse keeper.",
           "Deborah's husband is learning to bake bread.",
           "Deborah volunteers at the animal shelter on Saturdays."]


@pytest.mark.parametrize("prompt", [
    "Anyway, that reminds me. By the way, remind me, what do Deborah and her husband do together?",
    "Oh, do you remember what Deborah and her husband do together? She told me once.",
])
def test_the_words_a_chat_turn_wraps_its_question_in_find_nothing(tmp_path: Path, prompt: str) -> None:
    """"Remind me", "do you remember", "she told me": how a turn asks, not what about. The notes
    that something "reminds" Deborah of stay out of the block and of search's first hits; the note
    on what she and her husband do together leads both."""
    for day, note in enumerate(DEBORAH, start=1):
        write(tmp_path, f"memory/2026-04-{day:02d}.md", f"# 2026-04-{day:02d}\n\n- {note}\n")
    with Memory(load_settings(tmp_path, environ={})) as memory:
        memory.index()
        found = [h.snippet for h in memory.search(prompt, max_results=3)]
        shown = [h.snippet for h in memory.recall_hits(prompt)]
    assert "hiking" in found[0] and not any("reminds" in text for text in found), found
    assert shown and "hiking" in shown[0] and not any("reminds" in text for text in shown), shown
