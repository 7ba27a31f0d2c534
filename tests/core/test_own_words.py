"""The memory never learns its own words: what a reply quotes of a context block or a memory tool is not new.

An agent's model, or a scripted one in an example, often answers with what memory gave it: a
context block, ``search_memory``'s answer, an entity's history, or filler that acknowledges ("I'll
remember that."). None of it is stored as something the assistant said; what the reply adds is.
"""

from __future__ import annotations

from datetime import datetime, timezone

from zep_core import Message
from zep_core.render import facts_answer, history_answer, related_answer

T = datetime(2024, 3, 1, tzinfo=timezone.utc)


def test_a_reply_quoting_the_memorys_own_answers_stores_only_what_it_adds(memory):
    memory.conversation_end("s1", [Message("I live in Paris.", name="Alice", timestamp=T)], user_id="alice")
    facts = memory.get_context("Where does Alice live?", user_id="alice")
    history = memory.entity_history("Alice", user_id="alice")
    related = memory.related_entities("Alice", user_id="alice")
    replies = [facts_answer("Where do I live?", facts), history_answer("Alice", history),
               memory.context_block("Where does Alice live?", user_id="alice"),
               related_answer("Alice", related) if related else "Noted.",
               "I'll remember that.", "Noted.",
               facts_answer("Where do I live?", facts) + "\nThe Louvre opens at 9 on Sundays."]
    result = memory.conversation_end("s2", [Message(r, role="assistant", timestamp=T) for r in replies]
                                     + [Message("Thanks!", name="Alice", timestamp=T)], user_id="alice")
    assert [f.content for f in result.added] == ["Assistant: The Louvre opens at 9 on Sundays."]
