"""`context`, `history`, `related`, `cypher`: what the library answers, printed as text or JSON."""

from __future__ import annotations

import json

from zep_core.transfer import fact_to_dict


def test_context_json_is_get_context(cli, alice_data, open_memory):
    result = cli("context", "Where does Alice live?", "--data", alice_data, "--user", "alice", "--json")
    assert result.code == 0, result.err
    rows = json.loads(result.out)
    with_library = open_memory(alice_data).get_context("Where does Alice live?", user_id="alice")
    assert [r["id"] for r in rows] == [f.id for f in with_library]
    assert rows[0]["content"] == "Alice lives in Berlin." and rows[0]["valid_until"] is None
    assert rows[0]["score"] > 0 and {"semantic_score", "graph_score"} <= set(rows[0])


def test_context_text_and_block_show_only_what_is_true_now(cli, alice_data):
    text = cli("context", "Where does Alice live?", "--data", alice_data, "--user", "alice", "--limit", "3")
    assert text.code == 0 and text.out.splitlines()[0].endswith("Alice lives in Berlin.  (2024-02-01 .. now)")
    assert len(text.out.splitlines()) == 3
    block = cli("context", "Where does Alice live?", "--data", alice_data, "--user", "alice", "--block")
    assert "Alice lives in Berlin." in block.out and "Alice lives in Paris." not in block.out.split("ENTITIES")[0]


def test_context_as_of_answers_what_was_true_then(cli, alice_data):
    result = cli("context", "Where does Alice live?", "--data", alice_data, "--user", "alice",
                 "--as-of", "2023-12-01", "--json")
    contents = [r["content"] for r in json.loads(result.out)]
    assert "Alice lives in Paris." in contents and "Alice lives in Berlin." not in contents


def test_history_json_is_entity_history_with_superseded_facts(cli, alice_data, open_memory):
    result = cli("history", "alice", "--data", alice_data, "--user", "alice", "--json")
    assert result.code == 0
    expected = [fact_to_dict(f) for f in open_memory(alice_data).entity_history("Alice", user_id="alice")]
    assert json.loads(result.out) == expected
    paris = next(r for r in expected if r["content"] == "Alice lives in Paris.")
    assert paris["superseded_by"] and paris["valid_until"].startswith("2024-02-01")


def test_history_text_marks_superseded_facts(cli, alice_data):
    out = cli("history", "Alice", "--data", alice_data, "--user", "alice").out
    assert "2023-05-08 .. 2024-02-01  Alice lives in Paris.  (superseded)" in out
    assert "2024-02-01 .. now         Alice lives in Berlin." in out


def test_history_text_says_a_corrected_fact_was_taken_back(cli, alice_data, open_memory):
    from zep_core import Message

    memory = open_memory(alice_data)
    memory.conversation_end("s3", [Message("I have a cat called Tom.", name="Alice", id="c1"),
                                   Message("Sorry, I meant Tim, not Tom.", name="Alice", id="c2")], user_id="alice")
    memory.close()
    out = cli("history", "Alice", "--data", alice_data, "--user", "alice").out
    assert "Alice: I have a cat called Tom.  (taken back: a correction)" in out
    assert "Alice: I have a cat called Tim." in out.replace("  (superseded)", "")


def test_related_lists_the_graph_neighbours(cli, alice_data, open_memory):
    result = cli("related", "Alice", "--data", alice_data, "--user", "alice", "--json")
    names = [e["name"] for e in json.loads(result.out)]
    assert names == [e.name for e in open_memory(alice_data).related_entities("Alice", user_id="alice")]
    assert {"Berlin", "Paris", "Acme"} <= set(names)


def test_unknown_entity_is_a_one_line_error(cli, alice_data):
    result = cli("history", "Zorro", "--data", alice_data, "--user", "alice")
    assert result.code == 2 and result.err == "error: no entity named 'Zorro' for user 'alice'\n"


def test_cypher_with_params(cli, alice_data):
    result = cli("cypher", "MATCH (a:Entity {name: $n})-[r:FACT]->(b:Entity) WHERE r.current = $cur "
                 "RETURN b.name AS place, r.predicate AS predicate ORDER BY place",
                 "--param", "n=Alice", "--param", "cur=true", "--data", alice_data, "--user", "alice", "--json")
    assert result.code == 0, result.err
    rows = json.loads(result.out)
    assert {"place": "Berlin", "predicate": "lives_in"} in rows
    assert all(r["place"] != "Paris" for r in rows)
    text = cli("cypher", "MATCH (a:Entity {name: $n}) RETURN a.name AS name, a.entity_type AS type",
               "--param", "n=Alice", "--data", alice_data, "--user", "alice")
    assert text.out == "name\ttype\nAlice\tperson\n"


def test_cypher_refuses_writes_and_bad_params(cli, alice_data):
    write = cli("cypher", "MATCH (a:Entity) DETACH DELETE a", "--data", alice_data, "--user", "alice")
    assert write.code == 2 and write.err.startswith("error: ") and write.err.count("\n") == 1
    bad = cli("cypher", "MATCH (a:Entity) RETURN a.name", "--param", "novalue", "--data", alice_data,
              "--user", "alice")
    assert bad.code == 2 and "KEY=VALUE" in bad.err


def test_another_user_sees_nothing_of_alice(cli, alice_data, open_memory):
    memory = open_memory(alice_data)
    memory.conversation_end("s", [{"role": "user", "name": "Bob", "content": "I live in Rome."}], user_id="bob")
    memory.close()
    out = cli("context", "Where does Alice live?", "--data", alice_data, "--user", "bob", "--json").out
    assert all("Alice" not in r["content"] for r in json.loads(out))
    assert cli("history", "Alice", "--data", alice_data, "--user", "bob").code == 2
