"""SCENARIOS.md section B (11-16): supersede, conflicts, events.

Through the public `Memory` API with the deterministic hashing embedder; scenario 16 also
writes straight through the store, as any other path would.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from distill import Memory
from distill.core.models import (
    ConflictSet,
    ConflictStatus,
    Fact,
    FactKind,
    FactStatus,
)
from distill.core.plan import CreateFact, Plan, ReviseFact
from distill.core.working import CONFLICT_MAX_MEMBERS
from distill.errors import AlreadyResolved, IntegrityViolation, InvalidInput, NotFound
from tests.unit.scenario_support import (
    SUBJECT,
    at,
    by_value,
    every_fact,
    only,
    say,
)
from tests.unit.test_late_edges import in_one_run, told_gp
from tests.unit.test_properties import fresh_memory


def open_language_conflict(
    mem: Memory, subject: str = SUBJECT, project: str = "default"
) -> tuple[Fact, Fact, ConflictSet]:
    """language fr, then (create) en: fr active, en held, one open set [fr, en]."""
    say(mem, "language", {"lang": "fr"}, when=at(0), subject=subject, project=project)
    mem.consolidate()
    say(mem, "language", {"lang": "en"}, when=at(60), subject=subject, project=project)
    mem.consolidate()
    rows = every_fact(mem, subject, project)
    conflict: ConflictSet = only(mem.conflicts(subject=subject, project=project))
    return by_value(rows, lang="fr"), by_value(rows, lang="en"), conflict


# -- B11 ---------------------------------------------------------------------------------------
RESEARCH = {"target": "adoption agencies", "status": "researching"}


def test_supersede_carries_unstated_keys_forward(mem: Memory) -> None:
    """SCENARIOS B11: the new version keeps the keys the supersede did not mention."""
    say(mem, "adoption_agency_research", RESEARCH, when=at(0))
    mem.consolidate()
    old_before = only(mem.facts(subject=SUBJECT))
    e2 = say(
        mem, "adoption_agency_research", {"status": "completed"}, when=at(60), action="supersede"
    )
    report = mem.consolidate()

    assert report.superseded == 1
    active: Fact = only(mem.facts(subject=SUBJECT))
    assert active.value == {"target": "adoption agencies", "status": "completed"}
    assert active.supersedes_id == old_before.id
    assert active.source_event_ids == (e2.id,)
    old = mem.fact(old_before.id)
    assert old.value == RESEARCH  # the old row is unchanged, apart from being retired
    assert old.text == old_before.text
    assert old.status is FactStatus.SUPERSEDED
    assert old.superseded_by == active.id
    assert old.valid_from == old_before.valid_from
    assert old.valid_to == e2.occurred_at


def test_carry_forward_chains_over_several_supersedes(mem: Memory) -> None:
    """SCENARIOS B11: each version carries forward from the one before it."""
    say(mem, "adoption_agency_research", RESEARCH, when=at(0))
    say(mem, "adoption_agency_research", {"status": "shortlisted"}, when=at(1), action="supersede")
    say(mem, "adoption_agency_research", {"agency": "Hope"}, when=at(2), action="supersede")
    mem.consolidate()

    active: Fact = only(mem.facts(subject=SUBJECT))
    assert active.value == {
        "target": "adoption agencies",
        "status": "shortlisted",
        "agency": "Hope",
    }
    assert len(every_fact(mem)) == 3


# -- B12 ---------------------------------------------------------------------------------------
def test_explicit_null_in_a_supersede_removes_the_key(mem: Memory) -> None:
    """SCENARIOS B12: {"status": null} deletes status; other keys are carried forward."""
    say(mem, "adoption_agency_research", RESEARCH, when=at(0))
    mem.consolidate()
    say(mem, "adoption_agency_research", {"status": None}, when=at(60), action="supersede")
    report = mem.consolidate()

    assert report.superseded == 1
    active: Fact = only(mem.facts(subject=SUBJECT))
    assert active.value == {"target": "adoption agencies"}
    assert by_value(every_fact(mem), **RESEARCH).status is FactStatus.SUPERSEDED


def test_null_for_a_key_that_was_never_there_changes_nothing(mem: Memory) -> None:
    """SCENARIOS B12: deleting an absent key leaves the same value: a reinforcement."""
    say(mem, "adoption_agency_research", RESEARCH, when=at(0))
    mem.consolidate()
    say(mem, "adoption_agency_research", {"deadline": None}, when=at(60), action="supersede")
    report = mem.consolidate()

    assert (report.superseded, report.reinforced) == (0, 1)
    assert only(every_fact(mem)).value == RESEARCH


# -- B13 ---------------------------------------------------------------------------------------
def test_conflict_lifecycle_keep_the_new_value(mem: Memory) -> None:
    """SCENARIOS B13: fr then create en → open set [fr, en]; keeping en retires fr."""
    fr, en, conflict = open_language_conflict(mem)
    assert conflict.status is ConflictStatus.OPEN
    assert set(conflict.member_ids) == {fr.id, en.id}
    assert fr.status is FactStatus.ACTIVE
    assert en.status is FactStatus.CANDIDATE

    resolved = mem.resolve_conflict(conflict.id, keep=en.id)

    assert resolved.status is ConflictStatus.RESOLVED
    assert resolved.kept_fact_id == en.id
    assert resolved.resolved_at is not None
    en_now, fr_now = mem.fact(en.id), mem.fact(fr.id)
    assert en_now.status is FactStatus.ACTIVE
    assert en_now.supersedes_id == fr.id
    assert fr_now.status is FactStatus.SUPERSEDED
    assert fr_now.superseded_by == en.id
    assert fr_now.valid_to == en.valid_from
    assert [f.id for f in mem.facts(subject=SUBJECT)] == [en.id]
    assert mem.conflicts(subject=SUBJECT) == []
    assert only(mem.conflicts(subject=SUBJECT, status="resolved")).id == conflict.id


@pytest.mark.parametrize(
    ("later", "outcome"),
    [({"lang": "fr"}, "reinforced"), ({"lang": "de"}, "conflict")],
    ids=["the-kept-value-again", "a-third-value"],
)
def test_after_keeping_the_old_value_the_attribute_takes_new_claims(
    mem: Memory, later: dict[str, Any], outcome: str
) -> None:
    """Found by a property search: a person keeps the older value of a conflict (the newer
    one is set aside, dated after it). A later claim of the attribute must be decided against
    the kept value; it was refused every run as a second active fact, its job failed."""
    fr, _, conflict = open_language_conflict(mem)
    mem.resolve_conflict(conflict.id, keep=fr.id)
    say(mem, "language", later, when=at(90))

    report = mem.consolidate()

    assert (report.jobs_failed, report.errors) == (0, [])
    assert report.outcomes[outcome] == 1
    assert only(mem.facts(subject=SUBJECT)).id == fr.id


def test_a_third_value_beside_a_pinned_held_value_waits_for_the_person(mem: Memory) -> None:
    """Found by a property search: a person pinned the value held in a conflict; a third
    value used to reclassify the held values as events, which may not change a pinned fact,
    so the job failed on every run. Now the set grows by the new value and waits for the
    person; the pin is untouched."""
    _, en, conflict = open_language_conflict(mem)
    pinned = mem.pin(en.id)
    say(mem, "language", {"lang": "de"}, when=at(90))

    report = mem.consolidate()

    assert (report.jobs_failed, report.errors) == (0, [])
    (grown,) = mem.conflicts(subject=SUBJECT)
    assert grown.id == conflict.id and len(grown.member_ids) == 3
    assert mem.fact(en.id) == pinned


def test_resolving_twice_is_already_resolved(mem: Memory) -> None:
    """SCENARIOS B13: a resolved conflict cannot be resolved again, and nothing changes."""
    fr, en, conflict = open_language_conflict(mem)
    mem.resolve_conflict(conflict.id, keep=en.id)
    settled = every_fact(mem)

    with pytest.raises(AlreadyResolved):
        mem.resolve_conflict(conflict.id, keep=fr.id)
    with pytest.raises(AlreadyResolved):
        mem.resolve_conflict(conflict.id, keep=en.id)
    assert every_fact(mem) == settled
    still = only(mem.conflicts(subject=SUBJECT, status="resolved"))
    assert (still.id, still.kept_fact_id) == (conflict.id, en.id)


def test_keeping_a_fact_outside_the_set_is_invalid(mem: Memory) -> None:
    """SCENARIOS B13: `keep` must name a member of the set; nothing is written otherwise."""
    _, _, conflict = open_language_conflict(mem)
    say(mem, "bike_count", {"count": 3}, when=at(5))
    mem.consolidate()
    outsider = by_value(every_fact(mem), count=3)
    before = every_fact(mem)

    with pytest.raises(InvalidInput):
        mem.resolve_conflict(conflict.id, keep=outsider.id)
    with pytest.raises(InvalidInput):
        mem.resolve_conflict(conflict.id, keep="no-such-fact")
    assert every_fact(mem) == before
    assert only(mem.conflicts(subject=SUBJECT)).status is ConflictStatus.OPEN


def test_another_projects_conflict_is_not_found(mem: Memory) -> None:
    """SCENARIOS B13: a conflict of project "other" does not exist for project "default"."""
    _, en, conflict = open_language_conflict(mem, project="other")
    assert conflict.project == "other"

    with pytest.raises(NotFound):
        mem.resolve_conflict(conflict.id, keep=en.id, project="default")
    assert only(mem.conflicts(subject=SUBJECT, project="other")).status is ConflictStatus.OPEN
    assert mem.fact(en.id, project="other").status is FactStatus.CANDIDATE
    # In its own project it resolves normally.
    assert mem.resolve_conflict(conflict.id, keep=en.id, project="other").status is (
        ConflictStatus.RESOLVED
    )


def test_unknown_conflict_is_not_found(mem: Memory) -> None:
    """SCENARIOS B13: an id that names no conflict at all is NotFound too."""
    with pytest.raises(NotFound):
        mem.resolve_conflict("no-such-conflict", keep=None)


# -- B14 ---------------------------------------------------------------------------------------
def test_third_value_reclassifies_instead_of_growing_the_set(mem: Memory) -> None:
    """SCENARIOS B14, the rule implemented (`_reclassify`): a set holds at most
    CONFLICT_MAX_MEMBERS facts; a further distinct value closes it as `reclassified`, the held
    candidates and the new value become dated event facts, and the active fact stays."""
    fr, en, conflict = open_language_conflict(mem)
    assert len(conflict.member_ids) == CONFLICT_MAX_MEMBERS
    e3 = say(mem, "language", {"lang": "de"}, when=at(120))
    report = mem.consolidate()

    assert report.outcomes["reclassified"] == 1
    assert report.conflicts == 0
    closed = only(mem.conflicts(subject=SUBJECT, status=None))
    assert closed.id == conflict.id
    assert closed.status is ConflictStatus.RECLASSIFIED
    assert set(closed.member_ids) == {fr.id, en.id}  # did not grow
    assert mem.conflicts(subject=SUBJECT) == []

    # The active state fact stays exactly as it was.
    assert mem.fact(fr.id) == fr
    rows = every_fact(mem)
    assert len(rows) == 3
    en_now = mem.fact(en.id)
    assert (en_now.kind, en_now.status) == (FactKind.EVENT, FactStatus.ACTIVE)
    de = by_value(rows, lang="de")
    assert (de.kind, de.status) == (FactKind.EVENT, FactStatus.ACTIVE)
    assert de.source_event_ids == (e3.id,)
    assert de.valid_from == e3.occurred_at
    # Exactly one active *state* fact for the identity: still fr.
    states = [f for f in mem.facts(subject=SUBJECT) if f.kind is FactKind.STATE]
    assert [f.id for f in states] == [fr.id]


def test_repeating_a_held_value_does_not_grow_the_set(mem: Memory) -> None:
    """SCENARIOS B14: a value already in the set reinforces its member; the set is unchanged."""
    _, en, conflict = open_language_conflict(mem)
    say(mem, "language", {"lang": "en"}, when=at(120))
    report = mem.consolidate()

    assert (report.reinforced, report.conflicts, report.created) == (1, 0, 0)
    assert only(mem.conflicts(subject=SUBJECT)).member_ids == conflict.member_ids
    held = mem.fact(en.id)
    assert (held.status, held.reinforcement_count) == (FactStatus.CANDIDATE, 1)
    assert len(every_fact(mem)) == 2


@pytest.mark.parametrize("late", [False, True], ids=["in-order", "late"])
def test_a_value_held_for_its_source_is_repeated_beside_another_in_any_order(late: bool) -> None:
    """SCENARIOS B14 with two values held against one version: a third party's `4`, then
    an untrusted `3`, an untrusted `5` and the untrusted `5` again, in every order (`late`:
    after a third party's change to `6` on day 20, so that they arrive late). Each held
    value is a set of its own against `4`; the repeated `5` reinforces the held `5`
    whichever set came first. Until session 61 only the first set was looked in: when `3`
    came first, `5` was held a second time, in a third set."""
    later = [
        told_gp(1, 11, "3", "untrusted", "create"),
        told_gp(2, 15, "5", "untrusted", "create"),
        told_gp(3, 16, "5", "untrusted", "create"),
    ]
    for order in itertools.permutations(later):
        with fresh_memory() as mem:
            in_one_run(mem, told_gp(0, 4, "4", "third_party", "supersede"))
            if late:
                in_one_run(mem, told_gp(4, 20, "6", "third_party", "supersede"))
            for claim in order:
                facts = in_one_run(mem, claim)
            by_id = {f.id: f for f in facts}
            held = [f for f in facts if f.status is FactStatus.CANDIDATE]
            held = sorted((f.value["v"], f.reinforcement_count) for f in held)
            assert held == [("3", 0), ("5", 1)], order
            sets = [sorted(by_id[m].value["v"] for m in cs.member_ids) for cs in mem.conflicts()]
            assert sorted(sets) == [["3", "4"], ["4", "5"]], order


def test_sets_stay_bounded_over_many_competing_values(mem: Memory) -> None:
    """SCENARIOS B14: however many values compete, no set ever exceeds its bound and the
    identity never has two active state facts."""
    languages = ["fr", "en", "de", "es", "it", "pt", "nl"]
    for minute, lang in enumerate(languages):
        say(mem, "language", {"lang": lang}, when=at(minute * 60))
        mem.consolidate()

    every_set = mem.conflicts(subject=SUBJECT, status=None)
    assert every_set
    assert all(len(cs.member_ids) <= CONFLICT_MAX_MEMBERS for cs in every_set)
    assert len(mem.conflicts(subject=SUBJECT)) <= 1
    states = [f for f in mem.facts(subject=SUBJECT) if f.kind is FactKind.STATE]
    assert [f.value for f in states] == [{"lang": "fr"}]
    # Nothing was lost: every statement is still a row.
    assert {f.value["lang"] for f in every_fact(mem) if f.value} == set(languages)


# -- B15 ---------------------------------------------------------------------------------------
VOLUNTEERED = {"predicate": "volunteered", "value": {"at": "food bank"}, "kind": "event"}


@pytest.mark.parametrize("same_run", [False, True], ids=["separate-runs", "one-run"])
def test_identical_occurrences_never_fuse(mem: Memory, same_run: bool) -> None:
    """SCENARIOS B15: two identical volunteering events are two facts."""
    first = mem.add_event(
        subject=SUBJECT,
        text="Volunteered at the food bank",
        occurred_at=at(days=0),
        claims=[VOLUNTEERED],
    )
    if not same_run:
        mem.consolidate()
    second = mem.add_event(
        subject=SUBJECT,
        text="Volunteered at the food bank",
        occurred_at=at(days=7),
        claims=[VOLUNTEERED],
    )
    report = mem.consolidate()

    assert report.reinforced == 0
    assert report.conflicts == 0
    rows = every_fact(mem)
    assert len(rows) == 2
    assert all(f.kind is FactKind.EVENT and f.status is FactStatus.ACTIVE for f in rows)
    assert all(f.value == {"at": "food bank"} for f in rows)
    assert sorted(f.source_event_ids for f in rows) == sorted([(first.id,), (second.id,)])
    assert {f.valid_from for f in rows} == {first.occurred_at, second.occurred_at}
    assert mem.conflicts(subject=SUBJECT, status=None) == []


def test_replayed_occurrence_is_still_one_fact(mem: Memory) -> None:
    """SCENARIOS B15 with A1: replaying the job does not duplicate an occurrence."""
    mem.add_event(subject=SUBJECT, text="Volunteered", occurred_at=at(0), claims=[VOLUNTEERED])
    mem.consolidate()
    mem.replay()
    report = mem.consolidate()

    assert (report.created, report.duplicates) == (0, 1)
    assert len(every_fact(mem)) == 1


# -- B16 ---------------------------------------------------------------------------------------
def second_active(fact: Fact, **changes: Any) -> Fact:
    """Another active state fact with the identity of `fact` (another value, another id)."""
    return fact.model_copy(
        update={"id": f"{fact.id}-twin", "value": {"lang": "de"}, "text": "language: de", **changes}
    )


def test_store_refuses_a_second_active_fact_for_one_identity(mem: Memory) -> None:
    """SCENARIOS B16 / invariant 3: a direct write of a second active fact fails loudly."""
    say(mem, "language", {"lang": "fr"}, when=at(0))
    mem.consolidate()
    fact = only(mem.facts(subject=SUBJECT))
    before = every_fact(mem)

    twin = second_active(fact)
    assert (twin.identity_key, twin.status, twin.kind) == (
        fact.identity_key,
        FactStatus.ACTIVE,
        FactKind.STATE,
    )
    with pytest.raises(IntegrityViolation):
        mem.store.apply(Plan([CreateFact(twin, "a second writer")]), None, [])
    assert every_fact(mem) == before


def test_store_refuses_promoting_a_held_candidate_beside_the_active_fact(mem: Memory) -> None:
    """SCENARIOS B16: making a conflict's candidate active without retiring the other fails."""
    fr, en, _ = open_language_conflict(mem)
    promoted = en.model_copy(update={"status": FactStatus.ACTIVE})

    with pytest.raises(IntegrityViolation):
        mem.store.apply(Plan([ReviseFact(en, promoted, "resolve", "by hand", "api")]), None, [])
    assert mem.fact(en.id) == en
    assert [f.id for f in mem.facts(subject=SUBJECT)] == [fr.id]


def test_same_identity_for_another_subject_is_fine(mem: Memory) -> None:
    """SCENARIOS B16: the constraint is per subject; another subject may hold the identity."""
    say(mem, "language", {"lang": "fr"}, when=at(0))
    mem.consolidate()
    fact = only(mem.facts(subject=SUBJECT))

    other = second_active(fact, subject="u2")
    mem.store.apply(Plan([CreateFact(other, "another subject")]), None, [])

    assert only(mem.facts(subject="u2")).id == other.id
    assert only(mem.facts(subject=SUBJECT)).id == fact.id


def test_same_identity_in_another_project_is_fine(mem: Memory) -> None:
    """SCENARIOS B16: nothing crosses projects, the constraint included."""
    say(mem, "language", {"lang": "fr"}, when=at(0))
    mem.consolidate()
    fact = only(mem.facts(subject=SUBJECT))

    other = second_active(fact, project="other")
    mem.store.apply(Plan([CreateFact(other, "another project")]), None, [])

    assert only(mem.facts(subject=SUBJECT, project="other")).id == other.id
    assert only(mem.facts(subject=SUBJECT)).id == fact.id


def test_consolidation_never_leaves_two_active_facts(mem: Memory) -> None:
    """SCENARIOS B16 through the engine: many values in one job, one active state fact."""
    for minute, lang in enumerate(["fr", "en", "fr", "de", "en"]):
        say(mem, "language", {"lang": lang}, when=at(minute))
    mem.consolidate()

    states = [f for f in mem.facts(subject=SUBJECT) if f.kind is FactKind.STATE]
    assert len(states) == 1
