"""``check_consistency()`` names current facts that the update rules never leave current together.

Two homes at once, or one fact stored twice as current, is what a broken writer (two processes
applying one episode, before issue 44) left behind; the check must see it, on both backends and
on the double of the store seam.
"""

from __future__ import annotations

import pytest
from zep_core import Message
from zep_core.models import Fact
from zep_core.stores.rows import StoredFact
from zep_core.tenant import Tenant

from tests.backends import BACKENDS, DOUBLE


@pytest.mark.parametrize("backend", [*BACKENDS, DOUBLE])
def test_check_consistency_names_current_facts_that_cannot_hold_together(make_memory, embedder):
    memory = make_memory()
    memory.conversation_end("s1", [Message("I live in Paris. I like chess.", name="Ann")], user_id="ann")
    assert memory.check_consistency("ann") == {}
    stored = {f.predicate: f for f in memory.facts("ann") if f.is_current}
    records = memory._stores.records  # the records a writer that broke the rules would have left
    subject_id = records.entity_ids_for_aliases(Tenant.of("ann"), ["ann"])["ann"]
    extra = [Fact(subject="Ann", predicate="lives_in", object="Rome", content="Ann lives in Rome.", user_id="ann",
                  valid_from=stored["lives_in"].valid_from),
             Fact(subject="Ann", predicate="likes", object="Chess", content="Ann likes Chess.", user_id="ann",
                  valid_from=stored["likes"].valid_from)]
    with records.transaction():
        records.write_facts(StoredFact(f, subject_id, None, v) for f, v in zip(extra, embedder.embed(
            [f.content for f in extra])))
    older = [min(pair, key=lambda f: (f.valid_from, f.id)).id
             for pair in ((stored["lives_in"], extra[0]), (stored["likes"], extra[1]))]
    assert sorted(memory.check_consistency("ann")["rival_current_facts"]) == sorted(older)
