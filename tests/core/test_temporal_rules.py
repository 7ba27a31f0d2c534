"""The update rules as pure functions, with fixed times."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone

from zep_core.conflicts import Rivals
from zep_core.models import Fact
from zep_core.temporal import conflicts, plan_updates

UTC = timezone.utc
NOW = datetime(2025, 1, 1, tzinfo=UTC)
SINGLE = {"lives_in"}


def fact(obj, year, predicate="lives_in", subject="Alice", **kw):
    return Fact(content=f"{subject} {predicate} {obj}", subject=subject, predicate=predicate, object=obj,
                valid_from=datetime(year, 1, 1, tzinfo=UTC), **kw)


def test_plan_supersedes_within_one_episode_in_time_order():
    paris, berlin = fact("Paris", 2020), fact("Berlin", 2022)
    plan = plan_updates([], [berlin, paris], single_valued=SINGLE, now=NOW)
    by_obj = {f.object: f for f in plan.added}
    assert by_obj["Paris"].superseded_by == berlin.id and by_obj["Paris"].valid_until == berlin.valid_from
    assert by_obj["Berlin"].is_current


def test_conflict_needs_same_subject_and_single_valued_predicate():
    assert conflicts(fact("Paris", 2020), fact("Berlin", 2021), single_valued=SINGLE)
    assert not conflicts(fact("Paris", 2020), fact("Berlin", 2021, subject="Bob"), single_valued=SINGLE)
    assert not conflicts(fact("jazz", 2020, "likes"), fact("rock", 2021, "likes"), single_valued=SINGLE)
    old = fact("jazz", 2020, "likes")
    assert conflicts(old, fact("rock", 2021, "likes"), single_valued=SINGLE, contradicted={old.id})


def test_plan_does_not_touch_its_inputs():
    old = fact("Paris", 2020)
    plan_updates([old], [fact("Berlin", 2021)], single_valued=SINGLE, now=NOW)
    assert old.is_current


def test_discard_when_any_rival_is_newer_and_nothing_half_applied():
    a = fact("Paris", 2020)
    b = fact("jazz", 2023, "likes")
    new = fact("rock", 2022, "likes")
    plan = plan_updates([a, b], [new], single_valued=SINGLE, contradicted={b.id}, now=NOW)
    assert plan.added == () and plan.superseded == () and len(plan.discarded) == 1


def test_a_proposal_is_compared_only_with_the_facts_it_could_conflict_with():
    paris, jazz, kids = fact("Paris", 2020), fact("jazz", 2020, "likes"), fact("2 kids", 2020, "has")
    rome, named = fact("Rome", 2019, subject="Bob"), fact("tea", 2020, "likes")
    rivals = Rivals(SINGLE, contradicted={named.id})
    held = {f.id: f for f in (paris, jazz, kids, rome, named)}
    for f in held.values():
        rivals.hold(f)
    assert rivals.candidates(fact("Berlin", 2021), held) == [paris, named]
    assert rivals.candidates(fact("3 kids", 2021, "has"), held, named=False) == [kids]
    assert rivals.candidates(fact("rock", 2021, "likes"), held, named=False) == []
    held[paris.id] = replace(paris, valid_until=NOW)  # ended: never a rival again
    assert rivals.candidates(fact("Berlin", 2021), held, named=False) == []


def test_an_episode_of_many_facts_plans_as_it_would_fact_by_fact():
    moves = [fact(f"City{i}", 2000 + i % 20, valid_until=None) for i in range(400)]
    likes = [fact(f"thing{i}", 2020, "likes") for i in range(400)]
    plan = plan_updates([], moves + likes, single_valued=SINGLE, now=NOW)
    assert [f.object for f in plan.added if f.predicate == "lives_in" and f.is_current] == ["City19"]
    assert sum(f.predicate == "likes" for f in plan.added) == 400
    assert len(plan.discarded) == 380  # the moves dated no later than one already held
