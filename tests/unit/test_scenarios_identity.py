"""SCENARIOS.md section A (1-10): identity, duplicates, reinforcement.

Everything goes through the public `Memory` API with the deterministic hashing embedder.
The semantic scenarios (5, 6, 8) pin the identity texts of their predicates to vectors at an
exact cosine distance with `overrides`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from distill import Memory
from distill.adapters.embed.calibrations import calibration_for
from distill.adapters.embed.hashing import HashingEmbedder, vectors_at_distance
from distill.core.identity import identity_text
from distill.core.models import Event, FactKind, FactStatus, JobStatus
from distill.engine import Report
from tests.unit.scenario_support import (
    SUBJECT,
    MemoryFactory,
    at,
    by_value,
    every_fact,
    only,
    say,
)


def learned_aliases(*reports: Report) -> list[dict[str, Any]]:
    return [a["after"] for r in reports for a in r.actions if a["action"] == "learn_alias"]


# The threshold these tests' Memory runs with: the hashing embedder's entry in the registry.
_RECORDED = calibration_for(HashingEmbedder().model_id)
assert _RECORDED is not None, "the hashing embedder has no entry in calibrations.json"
THRESHOLD = _RECORDED.max_distance
# A distance well within the calibrated threshold, whatever it is calibrated to.
CLOSE = THRESHOLD / 2


def identity_texts(predicate: str, value: dict[str, Any]) -> set[str]:
    """The texts the engine may embed for a claim's identity: its predicate with its value,
    and the bare predicate name."""
    return {identity_text(predicate, value), identity_text(predicate)}


def pinned_pair(
    first: tuple[str, dict[str, Any]], second: tuple[str, dict[str, Any]], distance: float
) -> dict[str, list[float]]:
    """Overrides placing the identity texts of two claims at cosine distance `distance`."""
    a, b = vectors_at_distance(distance, 256)
    pinned = {text: a for text in identity_texts(*first)}
    pinned.update({text: b for text in identity_texts(*second)})
    return pinned


# -- A1 ----------------------------------------------------------------------------------------
def test_replayed_job_is_a_plain_duplicate(mem: Memory) -> None:
    """SCENARIOS A1: replaying a finished job changes nothing and counts a duplicate."""
    e1 = say(mem, "language", {"lang": "fr"}, when=at(0))
    first = mem.consolidate()
    assert (first.created, first.duplicates) == (1, 0)
    before = only(mem.facts(subject=SUBJECT))

    assert mem.replay() == 1
    assert [j.status for j in mem.jobs()] == [JobStatus.PENDING]

    second = mem.consolidate()
    assert second.jobs_done == 1
    assert (second.duplicates, second.created) == (1, 0)
    assert (second.reinforced, second.superseded, second.conflicts) == (0, 0, 0)
    fact = only(every_fact(mem))
    assert fact.status is FactStatus.ACTIVE
    assert fact.reinforcement_count == 0
    assert fact.source_event_ids == (e1.id,)
    assert fact == before
    assert [j.status for j in mem.jobs()] == [JobStatus.DONE]


def test_replaying_twice_still_changes_nothing(mem: Memory) -> None:
    """SCENARIOS A1 (invariant 4): any number of replays leave the same store."""
    say(mem, "language", {"lang": "fr"}, when=at(0))
    say(mem, "language", {"lang": "fr"}, when=at(5))
    mem.consolidate()
    settled = every_fact(mem)
    for _ in range(2):
        mem.replay()
        report = mem.consolidate()
        assert (report.created, report.reinforced, report.duplicates) == (0, 0, 2)
        assert every_fact(mem) == settled
    assert only(settled).reinforcement_count == 1


# -- A2 ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("same_run", [False, True], ids=["separate-runs", "one-run"])
def test_repeated_value_reinforces_the_same_fact(mem: Memory, same_run: bool) -> None:
    """SCENARIOS A2: a new event repeating the value reinforces; it never adds a row."""
    e1 = say(mem, "language", {"lang": "fr"}, when=at(0))
    if not same_run:
        mem.consolidate()
    e2 = say(mem, "language", {"lang": "fr"}, when=at(60))
    report = mem.consolidate()

    assert report.reinforced == 1
    assert report.created == (1 if same_run else 0)
    fact = only(every_fact(mem))
    assert fact.status is FactStatus.ACTIVE
    assert fact.reinforcement_count == 1
    assert set(fact.source_event_ids) == {e1.id, e2.id}
    assert fact.last_reinforced_at == e2.occurred_at
    assert fact.valid_from == e1.occurred_at


# -- A3 ----------------------------------------------------------------------------------------
def test_lower_trust_repetition_is_a_source_but_not_fresher(mem: Memory) -> None:
    """SCENARIOS A3: a third-party repetition is recorded, last_reinforced_at is unchanged."""
    e1 = say(mem, "language", {"lang": "fr"}, when=at(0))
    mem.consolidate()
    e2 = say(mem, "language", {"lang": "fr"}, when=at(60), trust="third_party")
    mem.consolidate()

    fact = only(every_fact(mem))
    assert set(fact.source_event_ids) == {e1.id, e2.id}
    assert fact.last_reinforced_at == e1.occurred_at
    assert fact.trust.value == "trusted"
    assert fact.status is FactStatus.ACTIVE


def test_older_repetition_never_moves_freshness_back(mem: Memory) -> None:
    """SCENARIOS A3: an event older than the last reinforcement does not rewind it."""
    e1 = say(mem, "language", {"lang": "fr"}, when=at(days=10))
    mem.consolidate()
    e0 = say(mem, "language", {"lang": "fr"}, when=at(days=1))
    mem.consolidate()

    fact = only(every_fact(mem))
    assert set(fact.source_event_ids) == {e0.id, e1.id}
    assert fact.last_reinforced_at == e1.occurred_at
    # It was stated earlier, so it was true earlier.
    assert fact.valid_from == e0.occurred_at


def test_higher_trust_repetition_refreshes(mem: Memory) -> None:
    """SCENARIOS A3 (converse): a trusted repetition of a third-party fact does refresh."""
    say(mem, "language", {"lang": "fr"}, when=at(0), trust="third_party")
    mem.consolidate()
    e2 = say(mem, "language", {"lang": "fr"}, when=at(60))
    mem.consolidate()

    fact = only(every_fact(mem))
    assert fact.last_reinforced_at == e2.occurred_at
    assert fact.trust.value == "trusted"


# -- A4 ----------------------------------------------------------------------------------------
def test_changed_value_with_create_opens_a_conflict(mem: Memory) -> None:
    """SCENARIOS A4 / invariant 7: 3 bikes then 4 bikes (create) is a conflict, never a
    reinforcement."""
    say(mem, "bike_count", {"count": 3}, when=at(0))
    mem.consolidate()
    say(mem, "bike_count", {"count": 4}, when=at(60))
    report = mem.consolidate()

    assert report.reinforced == 0
    assert report.conflicts == 1
    rows = every_fact(mem)
    assert len(rows) == 2
    three = by_value(rows, count=3)
    four = by_value(rows, count=4)
    assert three.status is FactStatus.ACTIVE
    assert four.status is FactStatus.CANDIDATE
    assert three.reinforcement_count == 0
    assert three.identity_key == four.identity_key
    conflict = only(mem.conflicts(subject=SUBJECT))
    assert set(conflict.member_ids) == {three.id, four.id}
    # A held candidate is never served.
    assert [f.id for f in mem.facts(subject=SUBJECT)] == [three.id]


def test_changed_value_with_supersede_retires_the_old_value(mem: Memory) -> None:
    """SCENARIOS A4: with action supersede the old value is retired with a receipt."""
    say(mem, "bike_count", {"count": 3}, when=at(0))
    mem.consolidate()
    e2 = say(mem, "bike_count", {"count": 4}, when=at(60), action="supersede")
    report = mem.consolidate()

    assert (report.superseded, report.reinforced, report.conflicts) == (1, 0, 0)
    rows = every_fact(mem)
    assert len(rows) == 2
    three = by_value(rows, count=3)
    four = by_value(rows, count=4)
    assert three.status is FactStatus.SUPERSEDED
    assert three.valid_to == e2.occurred_at
    assert three.retired_at is not None
    assert three.superseded_by == four.id
    assert four.status is FactStatus.ACTIVE
    assert four.supersedes_id == three.id
    assert four.valid_from == e2.occurred_at
    assert four.valid_to is None
    assert mem.conflicts(subject=SUBJECT) == []
    assert [f.id for f in mem.facts(subject=SUBJECT)] == [four.id]


# -- A5 ----------------------------------------------------------------------------------------
# (canonical predicate, alias predicate): the scenario's pair, and a pair without a numbered
# token so that the alias mechanism itself stays pinned whatever happens to the first.
PAIRS = [
    pytest.param("personal_best_5k", "goal_personal_best_time", id="pb-5k"),
    pytest.param("marathon_best_time", "fastest_marathon_time", id="marathon"),
]


def learn_alias(mem: Memory, canonical: str, alias: str) -> tuple[Report, Event]:
    """`canonical` 27:12, then a supersede under `alias` 25:50."""
    say(mem, canonical, {"time": "27:12"}, when=at(0))
    mem.consolidate()
    e2 = say(mem, alias, {"time": "25:50"}, when=at(days=30), action="supersede")
    return mem.consolidate(), e2


def close_pair(canonical: str, alias: str, *values: str) -> dict[str, list[float]]:
    """Overrides placing `alias` (with each time value) within the threshold of `canonical`."""
    pinned: dict[str, list[float]] = {}
    for value in values:
        pinned.update(pinned_pair((canonical, {"time": "27:12"}), (alias, {"time": value}), CLOSE))
    return pinned


@pytest.mark.parametrize(("canonical", "alias"), PAIRS)
def test_semantic_predicate_match_supersedes_and_learns_an_alias(
    make_memory: MemoryFactory, canonical: str, alias: str
) -> None:
    """SCENARIOS A5: goal_personal_best_time within the threshold of personal_best_5k
    supersedes it and is learned as its alias."""
    mem = make_memory(overrides=close_pair(canonical, alias, "25:50"))
    report, e2 = learn_alias(mem, canonical, alias)

    assert (report.superseded, report.created, report.conflicts) == (1, 0, 0)
    rows = every_fact(mem)
    assert len(rows) == 2
    old = by_value(rows, time="27:12")
    new = by_value(rows, time="25:50")
    assert old.status is FactStatus.SUPERSEDED
    assert old.valid_to == e2.occurred_at
    assert old.superseded_by == new.id
    assert new.status is FactStatus.ACTIVE
    assert new.supersedes_id == old.id
    # One identity: the new version is filed under the canonical predicate.
    assert new.identity_key == old.identity_key
    assert new.predicate == canonical
    aliases = learned_aliases(report)
    assert [(a["alias"], a["canonical"]) for a in aliases] == [(alias, canonical)]
    assert aliases[0]["distance"] == pytest.approx(CLOSE, abs=1e-6)


@pytest.mark.parametrize(("canonical", "alias"), PAIRS)
def test_alias_resolves_later_events_whatever_their_distance(
    make_memory: MemoryFactory, canonical: str, alias: str
) -> None:
    """SCENARIOS A5: once learned, the alias decides identity; distance no longer matters."""
    first = make_memory(overrides=close_pair(canonical, alias, "25:50"))
    _, e2 = learn_alias(first, canonical, alias)
    current = only(first.facts(subject=SUBJECT))
    assert current.source_event_ids == (e2.id,)  # the alias was learned
    first.close()

    # A fresh Memory on the same file, without overrides. Its embedder has another model id,
    # so neither the cached override vectors nor the stored fact vectors can be used; and
    # even as plain hashing vectors the two names are outside the threshold.
    plain = HashingEmbedder(128)
    third = (alias, {"time": "25:00"})
    for a in identity_texts(canonical, {"time": "25:50"}):
        for b in identity_texts(*third):
            va, vb = plain.embed_batch([a, b])
            assert 1.0 - float(np.dot(va, vb)) > THRESHOLD
    later = make_memory(embedder=plain)
    e3 = say(later, *third, when=at(days=60), action="supersede")
    report = later.consolidate()

    assert (report.superseded, report.created, report.conflicts) == (1, 0, 0)
    assert learned_aliases(report) == []
    active = only(later.facts(subject=SUBJECT))
    assert active.value == {"time": "25:00"}
    assert active.predicate == canonical
    assert active.source_event_ids == (e3.id,)
    assert active.supersedes_id == current.id
    assert len(every_fact(later)) == 3
    assert later.fact(current.id).superseded_by == active.id


@pytest.mark.parametrize(("canonical", "alias"), PAIRS)
def test_alias_repeat_of_the_same_value_reinforces(
    make_memory: MemoryFactory, canonical: str, alias: str
) -> None:
    """SCENARIOS A5: the alias predicate with the current value is the same fact."""
    mem = make_memory(overrides=close_pair(canonical, alias, "27:12"))
    say(mem, canonical, {"time": "27:12"}, when=at(0))
    say(mem, alias, {"time": "27:12"}, when=at(days=1))
    say(mem, alias, {"time": "27:12"}, when=at(days=2))
    report = mem.consolidate()

    assert (report.created, report.reinforced) == (1, 2)
    fact = only(every_fact(mem))
    assert fact.predicate == canonical
    assert fact.reinforcement_count == 2
    assert len(learned_aliases(report)) == 1


# -- A6 ----------------------------------------------------------------------------------------
PACE_OLD = ("running_pace", {"min_per_km": 5.5})
PACE_NEW = ("jogging_pace", {"min_per_km": 5.0})


@pytest.mark.parametrize("threshold", [THRESHOLD, 0.27])
def test_predicates_exactly_at_the_threshold_are_one_identity(
    make_memory: MemoryFactory, threshold: float
) -> None:
    """SCENARIOS A6: at exactly the threshold two predicate names match."""
    mem = make_memory(overrides=pinned_pair(PACE_OLD, PACE_NEW, threshold), max_distance=threshold)
    say(mem, *PACE_OLD, when=at(0))
    mem.consolidate()
    say(mem, *PACE_NEW, when=at(60))
    report = mem.consolidate()

    aliases = learned_aliases(report)
    assert [(a["alias"], a["canonical"]) for a in aliases] == [("jogging_pace", "running_pace")]
    # A different value for the same identity (action create): a conflict.
    assert (report.conflicts, report.created) == (1, 0)
    rows = every_fact(mem)
    assert len({f.identity_key for f in rows}) == 1
    assert only(mem.facts(subject=SUBJECT)).value == PACE_OLD[1]
    assert len(mem.conflicts(subject=SUBJECT)) == 1


@pytest.mark.parametrize("threshold", [THRESHOLD, 0.27])
def test_predicates_just_above_the_threshold_are_separate(
    make_memory: MemoryFactory, threshold: float
) -> None:
    """SCENARIOS A6: just above the threshold → a separate identity, no alias, no conflict."""
    mem = make_memory(
        overrides=pinned_pair(PACE_OLD, PACE_NEW, threshold + 0.001), max_distance=threshold
    )
    say(mem, *PACE_OLD, when=at(0))
    mem.consolidate()
    say(mem, *PACE_NEW, when=at(60))
    report = mem.consolidate()

    assert learned_aliases(report) == []
    assert (report.created, report.conflicts) == (1, 0)
    active = mem.facts(subject=SUBJECT)
    assert sorted(f.predicate or "" for f in active) == ["jogging_pace", "running_pace"]
    assert len({f.identity_key for f in active}) == 2
    assert mem.conflicts(subject=SUBJECT) == []


# -- A7 ----------------------------------------------------------------------------------------
def test_different_attributes_stay_two_facts(mem: Memory) -> None:
    """SCENARIOS A7: bike_count and car_count are two facts, no conflict, no alias."""
    say(mem, "bike_count", {"count": 3}, when=at(0))
    first = mem.consolidate()
    say(mem, "car_count", {"count": 2}, when=at(60))
    second = mem.consolidate()

    assert learned_aliases(first, second) == []
    assert second.created == 1
    active = mem.facts(subject=SUBJECT)
    assert {(f.predicate, f.value["count"] if f.value else None) for f in active} == {
        ("bike_count", 3),
        ("car_count", 2),
    }
    assert len(every_fact(mem)) == 2
    assert mem.conflicts(subject=SUBJECT) == []


# -- A8 ----------------------------------------------------------------------------------------
def test_close_synonym_with_the_same_value_reinforces_once(make_memory: MemoryFactory) -> None:
    """SCENARIOS A8: favorite_color then preferred_color, both blue → one row, reinforced."""
    favorite = ("favorite_color", {"color": "blue"})
    preferred = ("preferred_color", {"color": "blue"})
    mem = make_memory(overrides=pinned_pair(favorite, preferred, CLOSE))
    e1 = say(mem, *favorite, when=at(0))
    mem.consolidate()
    e2 = say(mem, *preferred, when=at(60))
    report = mem.consolidate()

    assert (report.reinforced, report.created, report.conflicts) == (1, 0, 0)
    fact = only(every_fact(mem))
    assert fact.predicate == "favorite_color"
    assert fact.reinforcement_count == 1
    assert set(fact.source_event_ids) == {e1.id, e2.id}
    assert fact.last_reinforced_at == e2.occurred_at
    assert [(a["alias"], a["canonical"]) for a in learned_aliases(report)] == [
        ("preferred_color", "favorite_color")
    ]


# -- A9 ----------------------------------------------------------------------------------------
def test_qualifiers_are_part_of_identity(mem: Memory) -> None:
    """SCENARIOS A9: wake_up_time for weekday and for weekend are two facts."""
    say(mem, "wake_up_time", {"time": "08:00"}, when=at(0), qualifiers={"day": "weekday"})
    mem.consolidate()
    say(mem, "wake_up_time", {"time": "08:00"}, when=at(60), qualifiers={"day": "weekend"})
    report = mem.consolidate()

    assert (report.created, report.reinforced, report.conflicts) == (1, 0, 0)
    active = mem.facts(subject=SUBJECT)
    assert len(active) == 2
    assert {f.qualifiers["day"] for f in active} == {"weekday", "weekend"}
    assert len({f.identity_key for f in active}) == 2
    assert all(f.reinforcement_count == 0 for f in active)
    assert mem.conflicts(subject=SUBJECT) == []


def test_qualified_identities_change_independently(mem: Memory) -> None:
    """SCENARIOS A9: a new weekend value does not touch the weekday fact."""
    say(mem, "wake_up_time", {"time": "07:00"}, when=at(0), qualifiers={"day": "weekday"})
    say(mem, "wake_up_time", {"time": "09:00"}, when=at(1), qualifiers={"day": "weekend"})
    mem.consolidate()
    say(
        mem,
        "wake_up_time",
        {"time": "10:00"},
        when=at(60),
        qualifiers={"day": "weekend"},
        action="supersede",
    )
    mem.consolidate()

    active = {f.qualifiers["day"]: f.value for f in mem.facts(subject=SUBJECT)}
    assert active == {"weekday": {"time": "07:00"}, "weekend": {"time": "10:00"}}


def test_attribution_is_not_identity(mem: Memory) -> None:
    """SCENARIOS A9: who said it (speaker) does not make another identity."""
    e1 = say(mem, "wake_up_time", {"time": "08:00"}, when=at(0), qualifiers={"speaker": "bob"})
    mem.consolidate()
    e2 = say(mem, "wake_up_time", {"time": "08:00"}, when=at(60), qualifiers={"speaker": "alice"})
    report = mem.consolidate()

    assert (report.reinforced, report.created) == (1, 0)
    fact = only(every_fact(mem))
    assert fact.reinforcement_count == 1
    assert set(fact.source_event_ids) == {e1.id, e2.id}
    assert "speaker" not in fact.qualifiers
    assert fact.attribution == "bob"


def test_attributed_different_value_is_a_conflict_not_a_second_fact(mem: Memory) -> None:
    """SCENARIOS A9: a different value said by someone else is the same identity."""
    say(mem, "wake_up_time", {"time": "08:00"}, when=at(0), qualifiers={"speaker": "bob"})
    mem.consolidate()
    say(mem, "wake_up_time", {"time": "09:00"}, when=at(60), qualifiers={"speaker": "alice"})
    report = mem.consolidate()

    assert report.conflicts == 1
    active = only(mem.facts(subject=SUBJECT))
    assert active.value == {"time": "08:00"}
    held = by_value(every_fact(mem), time="09:00")
    assert held.status is FactStatus.CANDIDATE
    assert held.attribution == "alice"
    assert held.identity_key == active.identity_key


# -- A10 ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("qualified_first", [False, True], ids=["plain-first", "qualified-first"])
def test_unqualified_and_qualified_different_values_conflict(
    mem: Memory, qualified_first: bool
) -> None:
    """SCENARIOS A10: an unqualified value and a qualified different value → open conflict."""
    plain: dict[str, Any] = {"value": {"time": "08:00"}}
    qualified: dict[str, Any] = {"value": {"time": "10:00"}, "qualifiers": {"day": "weekend"}}
    first, second = (qualified, plain) if qualified_first else (plain, qualified)
    say(mem, "wake_up_time", first.pop("value"), when=at(0), **first)
    mem.consolidate()
    say(mem, "wake_up_time", second.pop("value"), when=at(60), **second)
    report = mem.consolidate()

    assert report.conflicts == 1
    conflict = only(mem.conflicts(subject=SUBJECT))
    rows = every_fact(mem)
    assert len(rows) == 2
    earlier = by_value(rows, time="10:00" if qualified_first else "08:00")
    later = by_value(rows, time="08:00" if qualified_first else "10:00")
    assert set(conflict.member_ids) == {earlier.id, later.id}
    assert earlier.status is FactStatus.ACTIVE
    assert later.status is FactStatus.CANDIDATE
    assert [f.id for f in mem.facts(subject=SUBJECT)] == [earlier.id]


@pytest.mark.parametrize("qualified_first", [False, True], ids=["plain-first", "qualified-first"])
def test_unqualified_and_qualified_equal_values_do_not_conflict(
    mem: Memory, qualified_first: bool
) -> None:
    """SCENARIOS A10: equal values under and without a qualifier → no conflict."""
    qualifier_sets: list[dict[str, Any]] = [{}, {"day": "weekend"}]
    if qualified_first:
        qualifier_sets.reverse()
    for minute, qualifiers in enumerate(qualifier_sets):
        say(mem, "wake_up_time", {"time": "08:00"}, when=at(minute), qualifiers=qualifiers)
        mem.consolidate()

    assert mem.conflicts(subject=SUBJECT) == []
    active = mem.facts(subject=SUBJECT)
    assert len(active) == 2
    assert all(f.kind is FactKind.STATE and f.status is FactStatus.ACTIVE for f in active)
    assert {f.value["time"] for f in active if f.value} == {"08:00"}
