"""The lexical signal: BM25 over each user's facts in shared tables, as FTS5 ranked them, in step, scoped, literal."""

from __future__ import annotations

import hashlib
import random
import re
import sqlite3
from datetime import datetime, timedelta, timezone

import pytest
from zep_core import Memory, MemoryConfig, Message
from zep_core.stores import fts
from zep_core.stores.fts import query_terms
from zep_core.stores.records import iso
from zep_core.stores.schema import SCHEMA_VERSION
from zep_core.tenant import Tenant

from tests.stores.state import lexical_index, lexical_tables

T = Tenant.of  # a checked user id: what the stores take

UTC = timezone.utc
T0 = datetime(2024, 3, 1, tzinfo=UTC)


def talk(memory, user, *turns, session="s", at=T0):
    """``turns``: (speaker, text) pairs; a speaker of None is an unnamed assistant turn."""
    msgs = [Message(text, role="assistant" if who is None else "user", name=who, timestamp=at + timedelta(seconds=i))
            for i, (who, text) in enumerate(turns)]
    return memory.conversation_end(session, msgs, user_id=user)


def contents(facts):
    return [f.content for f in facts]


def in_step(memory) -> dict:
    """The lexical index now, after checking it equals the one ``rebuild()`` makes from the facts."""
    before = lexical_index(memory)
    memory.rebuild()
    assert lexical_index(memory) == before
    assert memory.check_consistency() == {}
    return before


def test_a_fact_found_only_by_a_rare_word(memory):
    talk(memory, "u", ("Ana", "I keep a tiny axolotl named Pepper in a tank."),
         ("Ana", "I like long walks on the beach."), ("Ana", "My brother plays chess on Sundays."))
    # the embedder barely relates a question about the pet's species name to this fact; the word does
    found = memory.get_context("axolotl", user_id="u", threshold=0.99)
    assert contents(found) == ["Ana: I keep a tiny axolotl named Pepper in a tank."]
    assert found[0].lexical_score > 0 and found[0].semantic_score < 0.99


def test_a_fact_found_by_a_name(memory):
    talk(memory, "u", ("Ana", "Yesterday I had dinner with Przemyslaw."), ("Ana", "The weather was lovely."))
    found = memory.get_context("Przemyslaw", user_id="u", threshold=0.99)
    assert contents(found) == ["Ana: Yesterday I had dinner with Przemyslaw."]


def test_where_does_kim_work_ranks_the_job_above_the_home(memory):
    talk(memory, "u", ("Kim", "I work at Samsung."), ("Kim", "I live in Busan."))
    ranked = contents(memory.get_context("Where does Kim work?", user_id="u"))
    assert ranked.index("Kim works at Samsung.") < ranked.index("Kim lives in Busan.")


def test_a_reply_is_found_by_the_question_it_answers(memory):
    talk(memory, "u", ("Lee", "Which city did your grandmother grow up in?"), ("Kim", "Gyeongju, near the coast."))
    found = memory.get_context("Where did Kim's grandmother grow up?", user_id="u")
    assert found[0].content == "Kim: Gyeongju, near the coast."
    assert found[0].lexical_score > 0  # "grandmother" and "grow" are only in the question before it


@pytest.mark.parametrize("text", [
    'Kim AND Busan', 'Kim OR', 'NEAR(Kim Busan)', 'Kim NOT Busan', '"Kim', 'Kim"', '""', '"', "'",
    'Kim*', '*', 'text: Kim', 'owner: u', '-Kim', '(Kim', 'Kim)', '^Kim', '{Kim}', 'Kim + Busan', 'AND',
    'NEAR', 'NOT', 'a:b:c', '\\', 'Kim \u200b Busan', 'Ünïcödé KIM',
])
def test_fts_syntax_in_the_input_is_taken_literally(memory, text):
    talk(memory, "u", ("Kim", "I live in Busan."), ("Kim", "My favourite word is NEAR."))
    assert memory.get_context(text, user_id="u") is not None  # never raises
    # by words alone (no semantic match at 0.99), the text means its words and nothing more
    found = memory.get_context(text, user_id="u", threshold=0.99)
    same = memory.get_context(" ".join(re.findall(r"[^\W_]+", text)), user_id="u", threshold=0.99)
    assert {f.id: f.lexical_score for f in found} == {f.id: f.lexical_score for f in same}


def test_the_query_is_words_only():
    assert query_terms('Kim" OR text:"u00") NEAR(*') == ["kim", "text", "u00", "near"]
    assert query_terms("the and of it?") == []  # nothing to look up: no lexical candidates


def test_the_index_follows_supersession_and_as_of(memory):
    talk(memory, "u", ("Kim", "I live in Busan."), at=T0)
    talk(memory, "u", ("Kim", "I moved to Daegu."), at=T0 + timedelta(days=30))
    now = contents(memory.get_context("Busan", user_id="u", threshold=0.99))
    assert "Kim lives in Busan." not in now
    then = contents(memory.get_context("Busan", user_id="u", threshold=0.99, as_of=T0 + timedelta(days=1)))
    assert "Kim lives in Busan." in then
    in_step(memory)


def test_the_index_follows_reinforcement_forget_user_and_import(make_memory, tmp_path):
    memory = make_memory()
    talk(memory, "a", ("Kim", "I live in Busan."))
    talk(memory, "a", ("Kim", "I live in Busan."), session="s2")  # the same fact again: reinforced, one row
    talk(memory, "b", ("Bo", "I collect vintage typewriters."))
    index = in_step(memory)
    assert sum(row[1] == "Kim lives in Busan." for row in index.values()) == 1
    path = tmp_path / "b.jsonl"
    with path.open("w") as out:
        memory.export_user("b", out)
    memory.forget_user("b")
    assert {row[0] for row in lexical_index(memory).values()} == {"a"}
    assert memory.get_context("typewriters", user_id="a", threshold=0.99) == []
    in_step(memory)
    with path.open() as src:
        memory.import_user(src)  # back, written as exported, without extraction
    found = memory.get_context("typewriters", user_id="b", threshold=0.99)
    assert contents(found) == ["Bo: I collect vintage typewriters."] and found[0].lexical_score > 0
    in_step(memory)


def fts5_ranking(memory, user, text, limit, as_of=None, context_weight=1.0):
    """The ranking an FTS5 table of the user's facts gives, as the index was until schema 6: the oracle.

    Built in the connection's temp schema from the facts, with the old table's columns,
    tokenizer and query (quoted words OR-ed, ``state : current`` or the validity then).
    """
    records = memory._stores.records
    words = query_terms(text)
    if not words:
        return {}
    live = "f.valid_until IS NULL AND f.superseded_by IS NULL"
    columns = "{text context}" if context_weight > 0 else "text"
    query = f"{columns} : (" + " OR ".join(f'"{w}"' for w in words) + ")"
    match = ("reference MATCH '(' || ? || ') AND state : current'" if as_of is None else
             "reference MATCH ? AND reference.valid_from <= ? "
             "AND (reference.valid_until IS NULL OR reference.valid_until > ?)")
    with records._lock:
        conn = records.db.conn
        conn.execute("DROP TABLE IF EXISTS temp.reference")
        conn.execute("CREATE VIRTUAL TABLE temp.reference USING fts5(text, context, live UNINDEXED, valid_from "
                     "UNINDEXED, valid_until UNINDEXED, state, tokenize = 'porter unicode61 remove_diacritics 2')")
        conn.execute("INSERT INTO temp.reference(rowid, text, context, live, valid_from, valid_until, state) "
                     f"SELECT f.rowid, {fts._TEXT.format(f='f')}, {fts._CONTEXT.format(f='f')}, {live}, "
                     f"f.valid_from, f.valid_until, CASE WHEN {live} THEN 'current' ELSE 'ended' END FROM facts f "
                     "WHERE f.user_id = ?",
                     [user])
        rows = conn.execute(
            f"SELECT f.id, -bm25(reference, 1.0, ?, 0.0, 0.0, 0.0, 0.0) AS s FROM reference JOIN facts f "
            f"ON f.rowid = reference.rowid WHERE {match} ORDER BY s DESC, reference.rowid LIMIT ?",
            [float(context_weight), query, *([iso(as_of)] * 2 if as_of else []), limit]).fetchall()
        conn.execute("DROP TABLE temp.reference")
    return dict(rows)


def test_the_lexical_ranking_holds_only_valid_facts_however_many_are_retired(memory):
    """Thirty moves: every old "I moved to …" still matches the words, and only the facts valid then may rank."""
    cities = [f"{a}{b}ville" for a, b in zip("BCDFGHJKLMNPRSTV" * 2, "aeiou" * 6)][:30]
    for i, city in enumerate(cities):
        talk(memory, "u", ("Kim", f"I moved to {city}."), ("Kim", f"I love the bakeries in {city}."),
             session=f"s{i}", at=T0 + timedelta(days=10 * i))
    records = memory._stores.records
    text = "Which town did Kim move to, and the bakeries?"
    for as_of in (None, T0 + timedelta(days=45), T0 + timedelta(days=1000)):
        for limit in (1, 5, 50):
            got = records.lexical_search(T("u"), text, limit=limit, as_of=iso(as_of) if as_of else None)
            assert list(got) == list(fts5_ranking(memory, "u", text, limit, as_of))
            assert got == pytest.approx(fts5_ranking(memory, "u", text, limit, as_of), rel=1e-12)
    now = records.lexical_search(T("u"), "moved", limit=50)
    facts = records.get_facts(T("u"), list(now))
    assert now and all(cities[-1] in facts[i].content for i in now)  # the old towns' statements retired with them
    in_step(memory)


def test_no_lexical_candidates_from_another_tenant(memory):
    talk(memory, "a", ("Kim", "The password is zebrafish."))
    talk(memory, "b", ("Bo", "I like tea."))
    assert memory.get_context("zebrafish", user_id="b", threshold=0.99) == []
    assert contents(memory.get_context("zebrafish", user_id="a", threshold=0.99)) == ["Kim: The password is zebrafish."]


def test_another_tenants_words_do_not_change_a_users_scores(memory):
    talk(memory, "a", ("Kim", "I grow tomatoes and basil."), ("Kim", "Tomatoes need sun."))
    before = {f.id: f.lexical_score for f in memory.get_context("tomatoes basil", user_id="a")}
    for i in range(20):  # another tenant says "tomatoes" a lot: a shared BM25 would make the word common
        talk(memory, "b", ("Bo", f"Tomatoes again, day {i}."), session=f"b{i}")
    assert {f.id: f.lexical_score for f in memory.get_context("tomatoes basil", user_id="a")} == before


def test_an_unnamed_assistant_turn_is_indexed_and_cited(memory):
    talk(memory, "u", (None, "Hello! How can I help?"), ("Dana", "Any idea for a rainy Sunday in Lyon?"),
         (None, "I recommend the Musée des Confluences; it opens at 10."))
    found = memory.get_context("What museum did you recommend last time?", user_id="u")
    assert found[0].content == "Assistant: I recommend the Musée des Confluences; it opens at 10."
    assert "Musée des Confluences" in memory.context_block("What did you recommend?", user_id="u")


def test_the_newer_near_duplicate_value_ranks_first_and_the_older_is_marked_earlier(memory):
    talk(memory, "u", ("Dana", "I read a few novels every month."), at=T0)
    talk(memory, "u", ("Dana", "I now read lots of novels every month."), at=T0 + timedelta(days=60))
    found = memory.get_context("How many novels do I read?", user_id="u", speaker="Dana")
    ranked = contents(found)
    new, old = "Dana: I now read lots of novels every month.", "Dana: I read a few novels every month."
    assert ranked.index(new) < ranked.index(old)
    older = found[ranked.index(old)]
    assert older.is_current and older.newer_fact_id == found[ranked.index(new)].id  # not retired
    assert [f.score for f in found] == sorted((f.score for f in found), reverse=True)
    block = memory.context_block("How many novels do I read?", user_id="u", speaker="Dana")
    assert "a few novels every month. (earlier: valid from 2024-03-01; the fact above is newer)" in block


def test_a_count_said_again_retires_the_older_count(memory):
    talk(memory, "u", ("Dana", "I read 3 novels every month."), at=T0)
    talk(memory, "u", ("Dana", "I now read 5 novels every month."), at=T0 + timedelta(days=60))
    assert contents(memory.get_context("How many novels do I read?", user_id="u", speaker="Dana"))[0] == (
        "Dana: I now read 5 novels every month.")
    older = next(f for f in memory.facts("u") if f.content == "Dana: I read 3 novels every month.")
    assert not older.is_current and older.valid_until == T0 + timedelta(days=60)


@pytest.mark.parametrize("first, second", [("I like jazz.", "I like rock."), ("I have a dog.", "I have a cat.")])
def test_multi_valued_facts_stay_current(memory, first, second):
    talk(memory, "u", ("Dana", first), at=T0)
    talk(memory, "u", ("Dana", second), at=T0 + timedelta(days=60))
    current = {f.content for f in memory.facts("u") if f.is_current}
    said = {f"Dana {'likes' if 'like' in t else 'has a'} {t.rstrip('.').split()[-1]}." for t in (first, second)}
    assert said <= current
    assert len([f for f in memory.facts("u") if not f.is_current]) == 0


def legacy_table(user: str) -> str:
    """The name of a user's own FTS5 table in folders before schema version 6."""
    return fts.TABLE_PREFIX + hashlib.sha256(user.encode("utf-8")).hexdigest()[:32]


@pytest.mark.parametrize("version", [1, 2, 4, 5])
def test_an_older_folder_gets_the_index_on_open(tmp_path, embedder, version):
    data = tmp_path / "data"
    with Memory(MemoryConfig(data_dir=data, embedder=embedder)) as memory:
        talk(memory, "u", ("Kim", "I keep bees on the roof."), ("Kim", "I live in Busan."))
        talk(memory, "u", ("Kim", "I moved to Daegu."), session="s1b", at=T0 + timedelta(days=30))
        talk(memory, "v", ("Vi", "I keep goats."))
    db = sqlite3.connect(data / "zep.db")  # make it the folder an older zep-memory left: a table per user
    for table in ("lexical_postings", "lexical_docs", "lexical_stats"):
        db.execute(f"DROP TABLE {table}")
    live = "valid_until IS NULL AND superseded_by IS NULL"
    for user in ("u", "v"):
        table = legacy_table(user)
        if version == 2:  # words only, no validity: Busan's statements still look current there
            db.execute(f"CREATE VIRTUAL TABLE {table} USING fts5(text, context)")
            db.execute(f"INSERT INTO {table}(rowid, text, context) SELECT rowid, content, '' FROM facts "
                       "WHERE user_id = ?", [user])
        if version in (4, 5):  # validity (5: and the state word)
            state = ", state" if version == 5 else ""
            db.execute(f"CREATE VIRTUAL TABLE {table} USING fts5(text, context, live UNINDEXED, valid_from UNINDEXED, "
                       f"valid_until UNINDEXED{state}, tokenize = 'porter unicode61 remove_diacritics 2')")
            word = f", CASE WHEN {live} THEN 'current' ELSE 'ended' END" if state else ""
            db.execute(f"INSERT INTO {table}(rowid, text, context, live, valid_from, valid_until{state}) SELECT rowid, "
                       f"content, '', {live}, valid_from, valid_until{word} FROM facts WHERE user_id = ?", [user])
    db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", [str(version)])
    db.commit()
    db.close()
    with Memory(MemoryConfig(data_dir=data, embedder=embedder)) as memory:
        found = memory.get_context("bees", user_id="u", threshold=0.99)
        assert contents(found) == ["Kim: I keep bees on the roof."] and found[0].lexical_score > 0
        assert len(lexical_index(memory)) == len(memory.facts("u")) + len(memory.facts("v"))
        assert memory.check_consistency() == {}
        assert "Busan" not in " ".join(contents(memory.get_context("Busan", user_id="u", threshold=0.99)))
        assert memory.get_context("goats", user_id="u", threshold=0.99) == []
        talk(memory, "u", ("Kim", "I keep goats too."), session="s2")
        assert "Kim: I keep goats too." in contents(memory.get_context("goats", user_id="u", threshold=0.99))
    db = sqlite3.connect(data / "zep.db")
    assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (str(SCHEMA_VERSION),)
    assert lexical_tables(db) == []  # the per-user tables are gone
    db.close()


def test_no_table_is_made_per_user(memory):
    db = memory._stores.records.db.conn
    before = db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
    for n in range(5):
        talk(memory, f"user-{n}", ("Kim", f"I keep {n} bees on the roof."), session=f"s{n}")
    assert db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == before


def test_a_users_first_write_rolled_back_takes_its_lexical_rows_with_it(memory, monkeypatch):
    records = memory._stores.records
    real = records.set_episode_status
    calls = []

    def fail_once(*args, **kwargs):  # after the facts and their lexical rows are written, inside the transaction
        calls.append(args)
        if len(calls) == 1:
            raise RuntimeError("disk went away")
        return real(*args, **kwargs)

    monkeypatch.setattr(records, "set_episode_status", fail_once)
    with pytest.raises(RuntimeError):
        talk(memory, "new", ("Noa", "I keep bees on the roof."))
    assert lexical_index(memory) == {}  # rolled back with the write
    assert records.db.execute("SELECT count(*) FROM lexical_stats").fetchone()[0] == 0
    talk(memory, "new", ("Noa", "I keep goats in the yard."), session="s2")
    assert contents(memory.get_context("goats", user_id="new", threshold=0.99)) == ["Noa: I keep goats in the yard."]
    assert memory.check_consistency() == {}


SAYINGS = ["I live in {c}.", "I moved to {c}.", "My sister {p} lives in {c}.", "I work at {o} as a {j}.",
           "I like {t} and {t2}.", "I stopped playing {t}.", "{p} and I went running in {c} last week.",
           "Where did you say {p} works?", "{p} works at {o}, near the café in {c}.", "I'm learning {t} with {p}.",
           "Our naïve plan: {t} every Sunday in {c}.", "The {j}s at {o} run {t} clubs."]
FILL = {"c": ["Paris", "Berlin", "Lisbon", "Busan", "São Paulo", "Zürich"], "p": ["Ana", "Bo", "Kim", "Noa"],
        "o": ["Acme", "Initech", "the aquarium"], "j": ["teacher", "nurse", "runner"],
        "t": ["chess", "jazz", "running", "runs", "poetry", "café culture"], "t2": ["tea", "opera", "hiking"]}


def test_the_rankings_are_those_of_an_fts5_table_per_user(make_memory):
    """The shared tables rank as the per-user FTS5 tables did: the same facts in the same order, the same
    scores, for text only, text and context, now and as of a past moment, with a bystander's words around."""
    rng = random.Random(7)
    memory = make_memory()
    for user in ("u", "bystander"):
        for i in range(40):
            turns = []
            for k in range(rng.randint(1, 3)):
                said = rng.choice(SAYINGS).format(**{key: rng.choice(v) for key, v in FILL.items()})
                turns.append(("Kim" if user == "u" else "Bo", said) if k % 2 == 0 else (None, "Oh nice, " + said))
            talk(memory, user, *turns, session=f"{user}-{i}", at=T0 + timedelta(days=3 * i))
    memory.flush()
    records = memory._stores.records
    words = sorted({w for ws in FILL.values() for v in ws for w in v.split()} | {"live", "works", "moved", "run"})
    compared = 0
    for n in range(60):
        text = " ".join(rng.sample(words, rng.randint(1, 4)))
        as_of = None if n % 3 else T0 + timedelta(days=rng.randint(0, 130))
        weight = (1.0, 0.5, 0.0)[n % 3]
        ours = records.lexical_search(T("u"), text, limit=30, as_of=iso(as_of) if as_of else None,
                                      context_weight=weight)
        theirs = fts5_ranking(memory, "u", text, 30, as_of, context_weight=weight)
        assert list(ours) == list(theirs), text
        assert ours == pytest.approx(theirs, rel=1e-12), text
        compared += bool(ours)
    assert compared > 40
    before = records.lexical_search(T("u"), "chess Lisbon", limit=30)
    talk(memory, "u", ("Kim", "I play chess in Lisbon."), ("Kim", "Chess again, in Lisbon."), session="more",
         at=T0 + timedelta(days=200))  # the counts per term remembered from the queries above must follow
    memory.flush()
    after = records.lexical_search(T("u"), "chess Lisbon", limit=30)
    assert after != before and after == pytest.approx(fts5_ranking(memory, "u", "chess Lisbon", 30), rel=1e-12)
    assert list(after) == list(fts5_ranking(memory, "u", "chess Lisbon", 30))


def test_a_word_in_most_of_a_long_users_facts_is_not_looked_up(memory):
    """On a long history the user's own name is in nearly every fact: it has no BM25 weight (FTS5 clamps its
    IDF once it is in over half the rows), so it is not looked up there, and the rows it alone matched are
    not read. On a short one (under COMMON_MIN_ROWS rows) the name is looked up as before."""
    from zep_core.stores.fts import COMMON_MIN_ROWS

    many_rows = 1100
    assert COMMON_MIN_ROWS < many_rows
    records = memory._stores.records
    talk(memory, "u", ("Kim", "My cousin Ola lives in Bergen."))
    talk(memory, "u", *[("Kim", f"Kim here: I logged sighting number {n} of a heron.") for n in range(20)],
         session="few")
    few = records.lexical_search(T("u"), "Kim cousin", limit=50)
    assert len(few) > 10  # the name found the sightings too, with next to no score
    episodes = [{"session_id": f"birds-{n}", "user_id": "u",
                 "messages": [Message(f"Kim here: I logged sighting number {n} of a heron near pond {n}.", name="Kim",
                                      timestamp=T0 + timedelta(minutes=n))]} for n in range(many_rows)]
    memory.conversation_end_many(episodes)
    memory.flush()

    many = records.lexical_search(T("u"), "Kim cousin", limit=50)
    assert list(many) == list(records.lexical_search(T("u"), "cousin", limit=50))
    assert any("cousin" in f.content for f in memory.get_context("Kim cousin", user_id="u"))
