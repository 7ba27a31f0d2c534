"""A first-person question that asks how many finds what the asker said in numbers.

"How many fish are in my aquariums?" is answered by a side remark ("the big tank now has
10 neon tetras and 5 honey gouramis"), not by the many messages on the same topic that count
nothing; the asker's own facts that say a number form a ranking of their own
(``count_weight``). And in a long history, where the graph orders the asker's facts by
meaning and words together, the meaning ranking reaches ``long_history_candidates`` deep.
"""

from __future__ import annotations

import pytest
from zep_core import Memory, MemoryConfig, Message
from zep_core.config import ScoringSettings
from zep_core.resolve import asks_how_many

#: Kim's aquarium talk: nine messages on the topic, one that counts the fish in passing.
SAID = (
    "I'm thinking of adding some decorations to the fish tank to create more hiding places for the fish.",
    "What plants are easy to keep in a freshwater aquarium with shy fish?",
    "I'm planning to add some schooling fish to my tank, like lemon tetras or zebra danios.",
    "My gouramis get aggressive with each other at feeding time, any idea why?",
    "I clean the aquarium glass every Sunday and change a third of the water.",
    "By the way, my new filter arrived, and the big tank now has 10 neon tetras and 5 honey gouramis in it.",
    "The small tank on my desk is home to a betta called Finn and two nerite snails.",
    "I want the fish tank to look like a river bed with sand and driftwood.",
    "Should I feed my fish flakes or pellets?",
    "I've been reading about how fish sleep at night.",
)
COUNTED = "10 neon tetras"


@pytest.fixture(scope="module")
def folder(tmp_path_factory, embedder):
    path = tmp_path_factory.mktemp("counts") / "data"
    with Memory(MemoryConfig(data_dir=path, embedder=embedder)) as memory:
        for n, text in enumerate(SAID):
            assert memory.conversation_end(f"s{n}", [Message(text, name="Kim")], user_id="kim").status == "done"
    return path


def ask(folder, embedder, question: str, limit: int, **scoring) -> list[str]:
    with Memory(MemoryConfig(data_dir=folder, embedder=embedder, scoring=ScoringSettings(**scoring))) as memory:
        return [f.content for f in memory.get_context(question, user_id="kim", speaker="Kim", limit=limit)]


def test_how_many_finds_the_count_said_in_passing(folder, embedder):
    found = ask(folder, embedder, "How many fish are there in total in my aquariums?", 3)
    assert any(COUNTED in text for text in found), found


def test_without_the_count_ranking_the_topical_messages_crowd_it_out(folder, embedder):
    """The control: ``count_weight=0`` leaves the count out of the first five."""
    found = ask(folder, embedder, "How many fish are there in total in my aquariums?", 5, count_weight=0)
    assert not any(COUNTED in text for text in found), found


@pytest.mark.parametrize(("question", "counts"), [
    ("How many fish are there in total in my aquariums?", True),
    ("What is the total number of siblings I have?", True),
    ("How much did I spend on workshops?", True),
    ("How many days passed between buying the tank and the filter?", False),  # time between dates
    ("How much time do I spend cleaning the tank?", False),
    ("Which fish did I add first?", False),
])
def test_what_asks_for_a_count(question, counts):
    assert asks_how_many(question) is counts


def test_a_long_first_person_history_reaches_deeper_by_meaning(folder, embedder):
    """Ten facts of the asker against a reach of three: a "long" history, ordered by meaning and words.

    A fact found by its words is ranked by meaning among the fetched facts only: with three
    fetched, a word match ranks fourth by meaning at worst, however far it is. The deeper reach
    ranks it among the facts that are nearer, and the order below the answer changes; a question
    about Kim in the third person keeps the short reach, and its order.
    """
    short = {"semantic_candidates": 3, "context_limit": 3, "count_weight": 0}
    mine = "Where is my small tank?"
    reached = ask(folder, embedder, mine, 3, **short, long_history_candidates=3)
    deeper = ask(folder, embedder, mine, 3, **short, long_history_candidates=10)
    assert "on my desk" in reached[0] and "on my desk" in deeper[0]
    assert reached != deeper
    about = "Where does Kim keep the small tank?"
    assert ask(folder, embedder, about, 3, **short, long_history_candidates=3) == ask(
        folder, embedder, about, 3, **short, long_history_candidates=10)
