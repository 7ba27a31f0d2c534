"""The PostgreSQL store's lexical index gives the SQLite store's rankings and scores, on the same facts.

Both stores get the same episodes (two speakers, so a reply's question is its context) and
the same facts in the same order, some of them later superseded; then a few hundred queries
(current and as of a past moment, with and without the context) must rank the same facts in
the same order with the same BM25 scores.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest
from zep_core.models import Episode, Fact, Message
from zep_core.stores.records import RecordStore, StoredFact, iso
from zep_core.tenant import Tenant

pytest.importorskip("psycopg", reason="PostgreSQL tests need the test extra: pip install -e '.[test]'")

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
WORDS = ("Paris Berlin tea coffee chess piano running marathon grandmother Gyeongju coast sister brother dog cat "
         "hiking Lisbon guitar painting yoga tennis cooking pasta sushi violin novel poetry garden roses tulips "
         "moved lives works teaches studies loves hates visited adopted started stopped finished bought sold "
         "café naïve résumé über 2023 42 km").split()
SPEAKERS = ("Ann", "Kim")


def _corpus(user: Tenant, rng: random.Random):
    episodes, facts = [], []
    for e in range(40):
        at = T0 + timedelta(days=e)
        turns = tuple(Message(" ".join(rng.choices(WORDS, k=rng.randint(4, 30))) + "?" * (i % 2),
                              name=SPEAKERS[i % 2], role="user" if i % 2 == 0 else "assistant",
                              id=f"{user}-e{e}-m{i}", timestamp=at) for i in range(rng.randint(2, 5)))
        episodes.append(Episode(id=f"{user}-e{e}", user_id=user, session_id="s", created_at=at, messages=turns,
                                status="done"))
        for n in range(rng.randint(1, 6)):
            source = rng.choice(turns)
            predicate = rng.choice(("lives_in", "likes", "statement", "works_at", "plays"))
            obj = " ".join(rng.choices(WORDS, k=rng.randint(1, 3)))
            fact = Fact(content=f"{source.name} {predicate.replace('_', ' ')} {obj}.", subject=source.name,
                        predicate=predicate, object=obj, valid_from=at, user_id=user, episode_id=f"{user}-e{e}",
                        source_message_ids=(source.id,), created_at=at, id=f"{user}-f{e}-{n}")
            vector = np.asarray(rng.choices(range(-5, 6), k=8), dtype=np.float32) + 0.5
            facts.append(StoredFact(fact, f"{user}:{source.name}", f"{user}:{obj}", vector / np.linalg.norm(vector)))
    return episodes, facts


def _fill(store, users, rng_seed=7):
    rng = random.Random(rng_seed)
    for user in users:
        episodes, facts = _corpus(user, rng)
        with store.transaction():
            for episode in episodes:
                store.insert_episode(episode, [m.id for m in episode.messages])
            store.write_facts(facts)
        ended = [s.fact for s in facts[::5]]  # every fifth fact ends 10 days after it began
        with store.transaction():
            store.update_facts([Fact(**{**f.__dict__, "valid_until": f.valid_from + timedelta(days=10)})
                                for f in ended])
        with store.transaction():  # and a few are written again (replaced: a new row)
            store.write_facts(facts[1:40:7])


def test_the_same_facts_rank_the_same_with_the_same_scores(pg_url, tmp_path):
    from zep_core.stores.postgres import PgRecordStore

    users = [Tenant.of("ann"), Tenant.of("bob")]
    sqlite, postgres = RecordStore(tmp_path / "zep.db"), PgRecordStore(pg_url)
    try:
        _fill(sqlite, users)
        _fill(postgres, users)
        rng = random.Random(11)
        compared = ties = 0
        for _ in range(150):
            user = rng.choice(users)
            text = " ".join(rng.choices(WORDS + ["the", "where", "does", "what"], k=rng.randint(1, 6)))
            as_of = rng.choice([None, iso(T0 + timedelta(days=rng.randint(0, 45)))])
            weight = rng.choice([1.0, 0.5, 0.0])
            want = sqlite.lexical_search(user, text, limit=10, as_of=as_of, context_weight=weight)
            got = postgres.lexical_search(user, text, limit=10, as_of=as_of, context_weight=weight)
            # the same scores in the same order; facts whose scores tie (to the last bits, which the two
            # databases' sums may round apart) may come in either order, and one may stand for another at the cut
            assert np.allclose(list(got.values()), list(want.values()), rtol=1e-12, atol=1e-12), (text, as_of, weight)
            last = min(want.values(), default=0.0) + 1e-9
            assert {(i, round(s, 9)) for i, s in got.items() if s > last} == {
                (i, round(s, 9)) for i, s in want.items() if s > last}, (text, as_of, weight)
            ties += list(got) != list(want)
            compared += bool(want)
        assert compared > 100  # most queries found something: the comparison was not of empty rankings
        assert ties < 15  # and most came in exactly the same order
        assert postgres.lexical_problems() == {} == sqlite.lexical_problems()
        with postgres.transaction():
            postgres.rebuild_lexical()
        assert postgres.lexical_search(users[0], "Paris tea", limit=10) == pytest.approx(
            sqlite.lexical_search(users[0], "Paris tea", limit=10))
    finally:
        sqlite.close()
        postgres.close()
