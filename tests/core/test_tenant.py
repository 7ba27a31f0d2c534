"""The tenant key: made from a checked user id at the API boundary, and the only key the record store takes."""

from __future__ import annotations

import inspect
import pickle

import pytest
from zep_core import Message, NotFoundError, ValidationError
from zep_core.stores.records import RecordStore
from zep_core.tenant import Tenant


def talk(memory, user, text):
    return memory.conversation_end("s", [Message(text, name=user.capitalize())], user_id=user)


def test_a_tenant_is_made_only_from_a_checked_user_id():
    alice = Tenant.of("alice")
    assert alice == "alice" and isinstance(alice, str) and Tenant.of(alice) is alice
    for bad, said in (("", "non-empty"), ("x" * 300, "limit is 256"), ("a\x00b", "NUL"), (7, "non-empty string")):
        with pytest.raises(ValidationError, match=said):
            Tenant.of(bad)
    with pytest.raises(TypeError, match=r"Tenant\.of"):
        Tenant("alice")


def test_a_tenant_crosses_a_process_boundary_as_its_plain_id():
    copied = pickle.loads(pickle.dumps(Tenant.of("alice")))
    assert copied == "alice" and type(copied) is str


def _tenant_methods() -> dict[str, inspect.Signature]:
    return {name: inspect.signature(fn) for name, fn in inspect.getmembers(RecordStore, inspect.isfunction)
            if not name.startswith("_")}


def test_no_record_store_method_takes_a_bare_user_id():
    """A user's rows are reached only through a ``tenant`` parameter, and every one of them is checked."""
    methods = _tenant_methods()
    assert not [name for name, sig in methods.items() if "user_id" in sig.parameters]
    taking = [name for name, sig in methods.items() if "tenant" in sig.parameters]
    assert len(taking) > 40  # the reads and writes of one user's rows
    unchecked = [name for name in taking if "key(tenant)" not in inspect.getsource(getattr(RecordStore, name))]
    assert unchecked == []


def test_the_record_store_refuses_a_plain_string_where_a_tenant_goes(make_memory):
    memory = make_memory()
    talk(memory, "alice", "I live in Paris.")
    records = memory._stores.records
    assert records.users() == ["alice"] and all(type(u) is Tenant for u in records.users())  # rows' ids: tenants
    for call in (lambda u: records.get_facts(u, ["x"]), lambda u: records.lexical_ranking(u, "Paris", limit=5),
                 lambda u: records.session_messages(u, "s1"), lambda u: records.delete_user(u)):
        with pytest.raises(TypeError, match="takes a Tenant"):
            call("alice")
        call(Tenant.of("alice"))  # the same call with the checked id goes through
    assert records.users() == []


def test_the_api_takes_plain_strings_and_checks_them(make_memory):
    memory = make_memory()
    talk(memory, "alice", "I live in Paris.")
    assert [f.content for f in memory.get_context("Where does Alice live?", user_id="alice")][:1] == [
        "Alice lives in Paris."]
    for bad in ("", "a\x00b", None):
        with pytest.raises(ValidationError, match="user_id"):
            memory.get_context("Where?", user_id=bad)
    episode = memory.get_episode(memory.episode_ids(user_id="alice")[0], user_id="alice")
    assert episode.user_id == "alice"
    talk(memory, "bob", "I live in Rome.")
    with pytest.raises(NotFoundError, match="of user 'bob'"):  # another user's episode is not found under bob
        memory.get_episode(episode.id, user_id="bob")
