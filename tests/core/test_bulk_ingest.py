"""conversation_end_many: the bulk form of conversation_end, with the same results as one call per episode."""

from __future__ import annotations

import itertools
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from zep_core import Memory, Message, ValidationError
from zep_core.ingest_files import EpisodeInput, ingest
from zep_core.providers.rules import RuleExtractor
from zep_core.tenant import Tenant

from tests.core.fakes import ScriptedExtractor, said
from tests.core.waiting import until

T = Tenant.of  # a checked user id: what the stores take

UTC = timezone.utc
START = datetime(2023, 3, 1, 9, tzinfo=UTC)
README = Path(__file__).resolve().parents[2] / "README.md"

#: (user, session, texts): one episode each; the user's name speaks every text.
SCRIPT = [
    ("alice", "a1", ["I live in Paris."]),
    ("bob", "b1", ["I live in Rome."]),
    ("alice", "a2", ["I like jazz."]),
    ("carol", "c1", ["I live in Oslo.", "I work at Acme."]),
    ("alice", "a3", ["I work at Acme."]),
    ("alice", "a4", ["I like jazz."]),                        # the same statement again, in the same batch
    ("bob", "b2", ["I work at Globex."]),
    ("alice", "a5", ["I moved to Berlin."]),                  # Paris -> Berlin: supersedes
    ("alice", "a6", ["I live in Berlin."]),                   # the next episode of the batch reinforces it
    ("bob", "boom", ["I have a dog named Rex."]),             # the extractor fails on this one
    ("dave", "d1", ["I live in Lisbon.", "Nice!"]),           # "Nice!" is the assistant's
    ("carol", "c2", ["My sister Dana lives in Rome."]),
    ("bob", "b3", ["I like hiking."]),
    ("alice", "a7", ["My sister Carol lives in Rome."]),
    ("dave", "d2", ["I work at Initech."]),
    ("alice", "a8", ["I started working at Initech."]),        # job change: Acme -> Initech
    ("bob", "b4", ["I moved to Madrid."]),
    ("carol", "c3", ["I like jazz."]),
    ("dave", "d3", ["I like jazz.", "Great taste!"]),
    ("alice", "a9", ["I now work at Initech."]),              # reinforces the new job
    ("bob", "b5", ["I live in Madrid."]),
    ("carol", "c4", ["I moved to Bergen."]),
    ("dave", "d4", ["I have a cat."]),
    ("alice", "a10", ["I like hiking."]),
    ("bob", "b6", ["I started working at Initech."]),
    ("carol", "c5", ["I like hiking."]),
    ("dave", "d5", ["I moved to Porto."]),
    ("alice", "a11", ["I have a dog named Rex."]),
    ("bob", "b7", ["I like jazz."]),
    ("carol", "c6", ["I work at Globex."]),
    ("dave", "d6", ["I live in Porto."]),
    ("alice", "a12", ["I like jazz."]),
    ("bob", "b8", ["I have a cat."]),
    ("carol", "c7", ["I live in Bergen."]),
    ("dave", "d7", ["I work at Acme."]),
    ("alice", "a13", ["I moved to Munich."]),
    ("bob", "b9", ["I like hiking."]),
    ("carol", "c8", ["I have a dog."]),
    ("dave", "d8", ["I like hiking."]),
    ("alice", "a14", ["I live in Munich."]),
]
QUESTIONS = {"alice": ["Where does Alice live?", "Where does Alice work?", "What does Alice like?"],
             "bob": ["Where does Bob live?", "Does Bob have pets?"], "carol": ["Where does Carol live?"],
             "dave": ["Where does Dave work?"]}
USERS = sorted(QUESTIONS)


def episodes(script=SCRIPT) -> list[EpisodeInput]:
    """The script as EpisodeInputs with fixed ids, each said a day after the one before."""
    out = []
    for i, (user, session, texts) in enumerate(script):
        when = START + timedelta(days=i)
        messages = [Message(t, name=user.capitalize(), timestamp=when + timedelta(minutes=j)) if j == 0 or
                    not t.endswith("!") else Message(t, role="assistant", timestamp=when + timedelta(minutes=j))
                    for j, t in enumerate(texts)]
        out.append(EpisodeInput(user, session, f"ep-{i:02d}-{session}", messages))
    return out


class Failing:
    """The offline extractor, except that it raises for the sessions named (once each, if ``once``)."""

    needs_known_facts = False

    def __init__(self, sessions=("boom",), *, once: bool = False) -> None:
        self.inner, self.sessions, self.once = RuleExtractor(), set(sessions), once
        self.calls: list[str] = []
        self.stored_at_call: list[int] = []
        self.memory: Memory | None = None

    def extract(self, messages, context):
        self.calls.append(context.session_id)
        if self.memory is not None:
            self.stored_at_call.append(len(self.memory.episode_ids()))
        if context.session_id in self.sessions:
            if self.once:
                self.sessions.discard(context.session_id)
            raise RuntimeError("model overloaded")
        return self.inner.extract(messages, context)


class Counting:
    """An embedder that counts ``embed`` calls and delegates everything to the real one."""

    def __init__(self, inner) -> None:
        self.inner, self.name, self.dimension = inner, inner.name, inner.dimension
        self.calls: list[list[str]] = []

    def embed(self, texts):
        self.calls.append(list(texts))
        return self.inner.embed(texts)

    def embed_query(self, text):
        return self.inner.embed_query(text)


def one_by_one(memory: Memory, items):
    return [memory.conversation_end(e.session_id, e.messages, user_id=e.user_id, episode_id=e.episode_id)
            for e in items]


def snapshot(memory: Memory) -> dict:
    """What a user of the memory sees, with the random fact ids replaced by contents."""
    out: dict = {"users": memory.users(), "episodes": {}}
    for eid in memory.episode_ids():
        e = memory.get_episode(eid)
        out["episodes"][eid] = (e.user_id, e.status, e.summary, e.error, [(m.id, m.content) for m in e.messages])
    for user in memory.users():
        facts = memory.facts(user)
        content = {f.id: f.content for f in facts}
        out[user] = {
            "facts": sorted(((f.content, f.predicate, f.subject, f.object, f.valid_from, f.valid_until, f.is_current,
                              content.get(f.superseded_by or ""), f.confidence, f.source_message_ids, f.episode_id,
                              f.created_at, f.expired_at) for f in facts), key=repr),
            "entities": sorted((r["id"], r["name"], r["entity_type"], tuple(sorted(r["aliases"])))
                               for r in memory.export_records(user) if r["type"] == "entity"),
            # facts of equal score come in the order of their random ids: compared as a set per score
            "context": {q: sorted(((f.content, round(f.score, 6)) for f in memory.get_context(q, user_id=user)),
                                  key=lambda pair: (-pair[1], pair[0]))
                        for q in QUESTIONS.get(user, [])},
        }
    return out


def indexes(memory: Memory) -> dict:
    memory.flush()
    assert memory.check_consistency() == {}
    stats = memory.stats()
    return {k: v for k, v in stats.items() if k not in ("data_dir", "chroma_url")}


@pytest.fixture
def pair(make_memory, tmp_path):
    """The script ingested one by one into A, and in batches of 7 into B (the same clock)."""
    a = make_memory(tmp_path / "a", extractor=Failing())
    b = make_memory(tmp_path / "b", extractor=Failing())
    return a, b, one_by_one(a, episodes()), b.conversation_end_many(episodes(), batch_size=7)


def kind(result) -> tuple:
    return (result.episode_id, result.status, result.error, [f.content for f in result.added],
            [f.content for f in result.reinforced], [f.content for f in result.superseded],
            [(d.fact.content, d.reason) for d in result.discarded], result.invalid, result.summary)


def test_bulk_ingest_leaves_what_one_call_per_episode_leaves(pair):
    a, b, _, _ = pair
    left, right = snapshot(a), snapshot(b)
    assert left == right
    assert indexes(a) == indexes(b)
    alice = right["alice"]
    current = {f[0] for f in alice["facts"] if f[6]}
    assert "Alice lives in Munich." in current and "Alice works at Initech." in current
    assert "Alice lives in Paris." not in current and "Alice works at Acme." not in current
    paris = next(f for f in alice["facts"] if f[0] == "Alice lives in Paris.")
    assert paris[7] == "Alice lives in Berlin."  # superseded by, across the batch
    assert sum(f[0] == "Alice likes jazz." for f in alice["facts"]) == 1  # the repeats reinforced it
    assert right["episodes"]["ep-09-boom"][1] == "pending"
    top = alice["context"]["Where does Alice live?"][0][0]  # the fact or Alice's own newer words, by the embedder
    assert top in {"Alice lives in Munich.", "Alice: I live in Munich."}


def test_results_come_back_in_input_order_and_say_what_one_by_one_says(pair):
    _, _, singles, bulk = pair
    assert [r.episode_id for r in bulk] == [e.episode_id for e in episodes()]
    assert [kind(r) for r in bulk] == [kind(r) for r in singles]
    assert [r.status for r in bulk].count("pending") == 1 and "model overloaded" in bulk[9].error
    assert {r.status for i, r in enumerate(bulk) if i != 9} == {"done"}
    berlin = bulk[7]
    assert [f.content for f in berlin.superseded][:1] == ["Alice lives in Paris."]
    assert "Alice lives in Berlin." in [f.content for f in bulk[8].reinforced]


def test_running_it_again_adds_nothing(make_memory):
    memory = make_memory()
    first = memory.conversation_end_many(episodes(), batch_size=7)
    before, stores = snapshot(memory), indexes(memory)
    again = memory.conversation_end_many(episodes(), batch_size=5)
    assert [r.status for r in again] == ["duplicate"] * len(first)
    assert [r.episode_id for r in again] == [r.episode_id for r in first]
    assert all(not r.added and not r.reinforced for r in again)
    assert snapshot(memory) == before and indexes(memory) == stores


@pytest.mark.parametrize("bad, match", [
    ({"messages": [{"role": "robot", "content": "hi"}]}, r"episode 5: .*role 'robot'"),
    ({"messages": []}, "episode 5: messages is empty"),
    ({"messages": [Message("x" * 50)]}, "episode 5: message 0 has 50 characters, over max_message_chars=40"),
    ({"session_id": ""}, "episode 5: session_id must be a non-empty string"),
    ({"user_id": 7}, "episode 5: user_id must be a non-empty string"),
    ({"episode_id": "ep-01-b1"}, "episode 5: episode id 'ep-01-b1' is also that of episode 1"),
    ({"sesion_id": "s"}, "episode 5: unknown key 'sesion_id'"),
    ({"messages": "I live in Paris."}, "episode 5: messages must be a list"),
])
def test_a_bad_episode_is_named_by_position_and_nothing_is_written(make_memory, bad, match):
    memory = make_memory(max_message_chars=40)
    items = [dict(session_id=e.session_id, messages=e.messages, user_id=e.user_id, episode_id=e.episode_id)
             for e in episodes()[:8]]
    items[5] = {**items[5], **bad}
    with pytest.raises(ValidationError, match=match):
        memory.conversation_end_many(items, batch_size=2)
    assert memory.episode_ids() == [] and memory.users() == []


def test_an_episode_id_of_another_user_is_refused_before_anything_is_written(make_memory):
    memory = make_memory()
    memory.conversation_end("s", [Message("I live in Oslo.", name="Zed")], user_id="zed", episode_id="taken")
    items = [{"session_id": "s1", "messages": [Message("I live in Rome.", name="Ann")], "user_id": "ann"},
             {"session_id": "s2", "messages": [Message("I like tea.", name="Ann")], "user_id": "ann",
              "episode_id": "taken"}]
    with pytest.raises(ValidationError, match="episode 1: episode id 'taken' belongs to another user"):
        memory.conversation_end_many(items)
    assert memory.users() == ["zed"] and memory.episode_ids() == ["taken"]


@pytest.mark.parametrize("given, match", [
    ({"session_id": "s", "messages": []}, "wrap a single episode in a list"),
    ("I live in Paris.", "episodes must be an iterable"),
    (None, "episodes must be an iterable"),
])
def test_episodes_that_are_not_a_list_of_episodes_are_refused(memory, given, match):
    with pytest.raises(ValidationError, match=match):
        memory.conversation_end_many(given)


def test_batch_size_is_checked(memory):
    with pytest.raises(ValidationError, match="batch_size must be >= 1"):
        memory.conversation_end_many(episodes()[:1], batch_size=0)


def test_every_episode_is_stored_before_extraction_and_a_failure_leaves_only_its_own_pending(make_memory):
    extractor = Failing(once=True)
    memory = make_memory(extractor=extractor)
    extractor.memory = memory
    results = memory.conversation_end_many(episodes()[:12], batch_size=6)
    # each batch stored whole before its first extraction: 6, then 5 and 1 (the last batch cut to a quarter of 6)
    assert extractor.stored_at_call == [6] * 6 + [11] * 5 + [12]
    assert [r.status for r in results] == ["done"] * 9 + ["pending"] + ["done"] * 2
    boom = memory.get_episode("ep-09-boom")
    assert boom.status == "pending" and "model overloaded" in boom.error
    assert [m.content for m in boom.messages] == ["I have a dog named Rex."]
    report = memory.maintain()
    assert report.completed == 1 and report.still_pending == ()
    assert memory.get_episode("ep-09-boom").status == "done"
    assert "Bob has a dog." in [f.content for f in memory.facts("bob")]


@pytest.mark.parametrize(("index_writes", "batches"), [("background", [8, 8, 2, 2]), ("sync", [8, 8, 4])])
def test_the_last_batch_is_cut_to_a_quarter_when_the_index_writes_go_in_the_background(make_memory, tmp_path,
                                                                                        index_writes, batches):
    # What is left to index when the call ends is the last batch's users; with no background indexer everything
    # is indexed at the end anyway, and the batches stay whole.
    extractor = Failing(sessions=())
    memory = make_memory(tmp_path / index_writes, extractor=extractor, index_writes=index_writes)
    extractor.memory = memory
    results = memory.conversation_end_many(episodes()[:20], batch_size=8)
    stored = list(itertools.accumulate(batches))
    assert extractor.stored_at_call == [n for size, n in zip(batches, stored) for _ in range(size)]
    assert [r.status for r in results] == ["done"] * 20
    memory.flush()
    assert memory.check_consistency() == {}


def test_each_batch_embeds_its_facts_and_new_entities_in_one_call(make_memory, embedder):
    from zep_core.providers.rules import RuleExtractor

    counting = Counting(embedder)
    # the extractor reading by rules only: its own reading by meaning embeds each episode's sentences apart
    memory = make_memory(embedder=counting, extractor=RuleExtractor())
    counting.calls.clear()
    memory.conversation_end_many(episodes()[:15], batch_size=7)
    assert len(counting.calls) == 3  # batches of 7, 7 and 1
    for texts in counting.calls:
        assert len(texts) == len(set(texts))
    first = counting.calls[0]
    assert {"Alice lives in Paris.", "Alice likes jazz.", "Paris", "Rome", "Acme"} <= set(first)
    assert first.count("Rome") == 1  # alice's and bob's Rome: one text, one vector each
    facts = {f.content for user in memory.users() for f in memory.facts(user)}
    assert facts <= {t for call in counting.calls for t in call}


def test_an_extractor_that_needs_known_facts_goes_one_episode_at_a_time(make_memory):
    scripted = ScriptedExtractor()
    scripted.push(said("Alice", "lives_in", "Paris"))
    scripted.push(said("Alice", "lives_in", "Berlin"))
    memory = make_memory(extractor=scripted)
    items = [EpisodeInput("alice", f"s{i}", f"e{i}", [Message(t, name="Alice", timestamp=START + timedelta(days=i))])
             for i, t in enumerate(["I live in Paris.", "I moved to Berlin."])]
    results = memory.conversation_end_many(items)
    assert [r.status for r in results] == ["done", "done"]
    assert scripted.calls[0][1].known_facts == ()  # the second episode was stored, but not yet extracted
    assert [f.content for f in scripted.calls[1][1].known_facts] == ["Alice lives in Paris."]
    assert [f.content for f in results[1].superseded] == ["Alice lives in Paris."]


def test_ingest_reports_progress_per_episode_with_its_position(make_memory):
    memory = make_memory(extractor=Failing())
    seen = []
    items = episodes()[:10]
    totals = ingest(memory, iter(items), batch_size=4,
                    progress=lambda i, episode, result: seen.append((i, episode.episode_id, result.status)))
    assert sorted(i for i, _, _ in seen) == list(range(1, 11))  # each episode once, with its own position
    assert all(items[i - 1].episode_id == e for i, e, _ in seen)
    for user in {e.user_id for e in items}:  # each user's episodes in input order
        mine = [i for i, _, _ in seen if items[i - 1].user_id == user]
        assert mine == sorted(mine)
    assert totals.episodes == 10 and totals.done == 9 and totals.pending == 1


def test_the_readme_bulk_snippet_runs(tmp_path, monkeypatch):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.DOTALL)
    snippet = next(b for b in blocks if "conversation_end_many(" in b)
    monkeypatch.chdir(tmp_path)
    exec(compile(snippet, str(README), "exec"), {})
    with Memory.open("./data") as memory:
        assert memory.get_context("Where does Alice live?", user_id="alice")[0].content == "Alice lives in Berlin."


@pytest.mark.parametrize("index_writes", ["background", "sync"])
def test_a_users_index_writes_wait_for_its_last_batch_and_a_read_in_between_sees_every_batch(make_memory, tmp_path,
                                                                                              index_writes):
    memory = make_memory(tmp_path / index_writes, index_writes=index_writes)
    records = memory._stores.records
    ends: list[tuple[int, int, bool]] = []  # per batch: Alice's and Bob's queued index writes, what a read finds
    calls = itertools.count(1)
    # batches: Alice's first 7 episodes (the 5th moves her to Berlin); her last 2 and Bob's first 5; Bob's last,
    # Carol's and Dave's, the last of Dave's a batch of its own when the index writes go in the background
    batch_ends = {7, 14, 20, 21} if index_writes == "background" else {7, 14, 21}

    def progress(position, result):
        if next(calls) not in batch_ends:
            return
        if ends and index_writes == "background":  # Alice's last episode was in this batch: she was released
            assert until(lambda: records.outbox_size(T("alice")) == 0)
        queued = (records.outbox_size(T("alice")), records.outbox_size(T("bob")))
        found = "Berlin" in memory.context_block("Where does Alice live?", user_id="alice")
        ends.append((*queued, found))

    memory.conversation_end_many(episodes()[:21], batch_size=7, progress=progress)
    assert len(ends) == len(batch_ends)
    (alice_1, _, found_1), (alice_2, bob_2, found_2), *later = ends
    assert alice_1 > 0  # held back while Alice has episodes to come
    assert bob_2 > 0  # Bob's wait for his last episode, in the third batch
    if index_writes == "background":
        assert alice_2 == 0  # indexed during the call, once her last batch committed
    else:
        assert alice_2 > 0  # no background indexer: everything at the end of the call
    assert found_1 and found_2 and all(found for *_, found in later)  # each read applied what it needed first
    memory.flush()
    assert records.outbox_size() == 0 and memory.check_consistency() == {}
