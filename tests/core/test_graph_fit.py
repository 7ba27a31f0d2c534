"""``graph_fit="auto"``: how the asker's own facts are ordered depends on how many there are.

In a first-person question every fact of the asker is one hop away, and the graph ranking
orders them. While the asker holds no more facts than the meaning ranking fetches
(``semantic_candidates``), meaning reaches every one of them and orders them; past that,
the facts found by their words alone would all fall below those found by meaning, so
meaning and words order them together. Here the reach is made short instead of the history
made long: the same ten statements are a "long" history for a reach of three.
"""

from __future__ import annotations

import pytest
from zep_core import Memory, MemoryConfig, Message
from zep_core.config import ScoringSettings

#: One side remark that says the question's words inside a message about something else, and
#: nine statements on the question's topic that do not say them.
SAID = (
    "Can you help me write a cover letter for a marketing job at a bank? I have five years of experience "
    "with social media campaigns and budgets, and I can only interview on Wednesdays because of Zumba.",
    "I love working out in the morning before work, it keeps me energised all day.",
    "My workout routine is mostly running and some weights at the gym.",
    "I try to exercise five days a week to stay fit.",
    "Stretching after a workout helps me recover faster.",
    "I bought new running shoes for my training last month.",
    "My dance fitness class is so much fun, the instructor plays great music.",
    "I joined a new aerobics class at the community center.",
    "The group fitness classes at my gym are always crowded in the evening.",
    "I prefer cardio classes with upbeat music to lifting weights.",
)
QUESTION = "When is my Zumba class?"


@pytest.fixture(scope="module")
def folder(tmp_path_factory, embedder):
    """The user's ten statements, each its own conversation, stored once."""
    path = tmp_path_factory.mktemp("fit") / "data"
    with Memory(MemoryConfig(data_dir=path, embedder=embedder)) as memory:
        for n, text in enumerate(SAID):
            assert memory.conversation_end(f"s{n}", [Message(text, role="user")], user_id="u1").status == "done"
    return path


def top3(folder, embedder, question: str = QUESTION, **scoring) -> list[str]:
    with Memory(MemoryConfig(data_dir=folder, embedder=embedder, scoring=ScoringSettings(**scoring))) as memory:
        return [f.content for f in memory.get_context(question, user_id="u1", limit=3)]


def test_a_long_history_orders_the_askers_facts_by_meaning_and_words(folder, embedder):
    long = top3(folder, embedder, semantic_candidates=3)  # ten facts of the asker, three reached by meaning
    assert "Zumba" in long[0]
    assert long == top3(folder, embedder, semantic_candidates=3, graph_fit="words")
    by_meaning = top3(folder, embedder, semantic_candidates=3, graph_fit="cosine")
    assert not any("Zumba" in text for text in by_meaning)  # topical neighbours only: what auto avoids


def test_a_short_history_keeps_the_meaning_order(folder, embedder):
    short = top3(folder, embedder)  # the default reach (50) holds all ten
    assert short == top3(folder, embedder, graph_fit="cosine")
    assert short != top3(folder, embedder, graph_fit="words")


def test_a_request_for_advice_keeps_the_meaning_order_in_a_long_history(folder, embedder):
    """"Any tips?" names what it wants, not what was said: the asker's circumstances come by meaning."""
    request = "My Zumba class is getting hard. Any tips for keeping up?"
    asked = top3(folder, embedder, request, semantic_candidates=3)
    assert asked == top3(folder, embedder, request, semantic_candidates=3, graph_fit="cosine")
    assert asked != top3(folder, embedder, request, semantic_candidates=3, graph_fit="words")
