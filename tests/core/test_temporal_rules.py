"""The update rules as pure functions, with fixed times."""

from __future__ import annotations

from datetime import datetime, timezone

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
