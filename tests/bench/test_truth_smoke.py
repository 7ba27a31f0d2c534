"""Smoke tests of bench/truth.py: the README's metric, a tiny case file of known outcome, a few real cases.

The figure itself is not a test; these check that the runner reads the data, asks as
the README says and counts right.
"""

from __future__ import annotations

import json

import pytest

from bench.common import TRUTH_DEV
from bench.report import render
from bench.truth import BM25, FACTS_ONLY, ROWS, ZEP, Check, Record, judge, load, main, run, select


def _check(must=(), must_not=()):
    return Check("u", "Ana", "Where do I live?", tuple(must), tuple(must_not))


def test_a_phrase_is_found_in_one_field_of_one_record_case_blind():
    fact = Record("Ana lives in Lisbon.", "Ana", "lives_in", "Lisbon")
    assert judge(_check(["LISBON"]), [fact]).held
    assert judge(_check(["lives in lisbon"]), [fact]).held  # the content
    assert judge(_check(["lives in"]), [Record("x", "Ana", "lives_in", "Lisbon")]).held  # predicate, _ as a space
    assert not judge(_check(["ana lisbon"]), [fact]).held  # fields are not joined
    assert judge(_check(["porto|lisbon"]), [fact]).held  # "a|b": either


def test_a_check_fails_on_a_missing_must_or_any_must_not_in_the_top_five():
    records = [Record(f"filler {i}") for i in range(5)] + [Record("Ana lives in Porto.")]
    assert judge(_check(["lisbon"]), records).missing == ("lisbon",)
    assert judge(_check(["filler"], ["porto"]), records).held  # the 6th record is not read
    v = judge(_check(["filler"], ["nothing|filler 3"]), records)
    assert not v.held and v.stale == (("nothing|filler 3", 3),)


def _case(case_id, kind, users, checks):
    return {"id": case_id, "class": kind, "note": "", "users": users, "checks": checks}


def _user(key, name, *conversations):
    return {"key": key, "name": name, "conversations": [
        {"when": f"2024-0{n + 1}-01T10:00:00Z", "turns": [{"role": role, "text": text} for role, text in turns]}
        for n, turns in enumerate(conversations)]}


def _ask(user, speaker, question, must, must_not=()):
    return {"user": user, "speaker": speaker, "question": question, "must": list(must), "must_not": list(must_not)}


@pytest.fixture
def tiny(tmp_path):
    """Two cases: one holds; one has a check that holds and one that fails on its must_not."""
    cases = [
        _case("t-hold", "move", [_user("a", "Ana", [("user", "I live in Lisbon."), ("assistant", "Lovely city!")]),
                                 _user("b", "Ben", [("user", "I live in Oslo.")])],
              [_ask("a", "Ana", "Where do I live?", ["lisbon"], ["oslo"]),
               _ask("b", "Ben", "Where do I live?", ["oslo"], ["lisbon"])]),
        _case("t-stale", "joke", [_user("u", "Cleo", [("user", "I live in Rome, and I am a famous astronaut lol.")])],
              [_ask("u", "Cleo", "Where do I live?", ["rome"]),
               _ask("u", "Cleo", "What is my job?", ["rome"], ["astronaut"])]),
    ]
    path = tmp_path / "truth.json"
    path.write_text(json.dumps({"version": 1, "cases": cases}))
    return path


def test_the_runner_counts_cases_and_checks_as_the_readme_defines(tiny, embedder):
    result, outcomes = run(load(tiny), embedder=embedder)
    zep = result["rows"][ZEP]
    assert (zep["cases_held"], zep["cases"], zep["checks_held"], zep["checks"]) == (1, 2, 3, 4)
    assert zep["by_class"] == {"move": {"cases_held": 1, "cases": 1, "checks_held": 2, "checks": 2},
                               "joke": {"cases_held": 0, "cases": 1, "checks_held": 1, "checks": 2}}
    (failed,) = result["failed"]
    assert (failed["case"], failed["question"], failed["missing"]) == ("t-stale", "What is my job?", [])
    assert failed["stale"][0]["phrase"] == "astronaut"
    assert any(r["statement"] for r in failed["returned"])  # the quote of the joke is what came back
    assert set(result["rows"]) == set(ROWS) and len(outcomes) == 4
    assert result["rows"][BM25]["cases_held"] == 1  # the same words in the raw turns, the same verdicts


def test_the_command_line_selects_writes_the_result_and_dumps_the_failures(tiny, tmp_path, capsys):
    dump = tmp_path / "failed.json"
    assert main(["--data", str(tiny), "--classes", "joke", "--dump", str(dump), "--out", str(tmp_path), "--quiet"]) == 0
    result = json.loads((tmp_path / "truth.json").read_text())
    assert result["benchmark"] == "truth" and result["cases"] == 1 and result["selection"]["classes"] == ["joke"]
    assert [f["case"] for f in json.loads(dump.read_text())] == ["t-stale"]
    assert "cases held" in capsys.readouterr().out
    page = render(tmp_path)  # docs/benchmarks.md's section, from the same file
    assert "## What is true now, in chat written by others (truth_chat)" in page
    assert "| joke | 0/1 (0.0%) |" in page and "A selection (classes ['joke'])" in page


def test_unknown_case_ids_and_a_missing_endpoint_are_refused(tiny, monkeypatch):
    with pytest.raises(ValueError, match="no case nope"):
        select(load(tiny), ids=["nope"])
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(SystemExit) as exited:
        main(["--data", str(tiny), "--extractor", "openai", "--quiet"])
    assert exited.value.code == 2


@pytest.mark.skipif(not TRUTH_DEV.is_file(), reason="the truth_chat evaluation data (../shared/data) is not here")
def test_a_few_real_cases_run_on_every_row(embedder):
    cases = load(TRUTH_DEV)
    assert len(cases) == 260 and sum(len(c.checks) for c in cases) == 443
    some = select(cases, classes=["move", "two_users"], limit=4)
    result, _ = run(some, embedder=embedder)
    for row in (ZEP, FACTS_ONLY, BM25):
        r = result["rows"][row]
        assert r["cases"] == 4 and r["checks"] == sum(len(c.checks) for c in some)
        assert 0 <= r["cases_held"] <= r["cases"] and 0 <= r["checks_held"] <= r["checks"]
