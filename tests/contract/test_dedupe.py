"""`Memory.dedupe`: stored memories that say the same thing merge, with receipts, on every
backend (SCENARIOS 21-24, 38, 39).

Arrival already files a memory whose normalised text is known under the fact that has it,
so the duplicates here are planted as a store written by an earlier version (or filled by
`distill copy`) would hold them: memory facts created through the applier directly, each
citing an event of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import pytest

from distill import Memory
from distill.applier import apply_plan
from distill.core.models import Fact, FactStatus
from distill.core.passes import Scope
from distill.core.plan import CreateFact, Plan
from tests.factories import T0, make_event, make_memory, new_id

SUBJECT = "u1"


def plant(
    memory: Memory,
    text: str,
    *,
    count: int = 0,
    minutes: int = 0,
    subject: str = SUBJECT,
    project: str = "default",
    pinned: bool = False,
) -> Fact:
    """A stored memory with its own event, `count` reinforcements, recorded `minutes` after T0."""
    event = make_event(subject=subject, project=project, text=text, id=new_id())
    memory.store.append_events([event], T0)
    fact = make_memory(
        text,
        subject=subject,
        project=project,
        reinforcement_count=count,
        recorded_at=T0 + timedelta(minutes=minutes),
        valid_from=T0 + timedelta(minutes=minutes),
        source_event_ids=(event.id,),
        pinned=pinned,
    )
    plan = Plan([CreateFact(fact, "planted by the test", "api")])
    apply_plan(memory.store, plan, Scope(project, subject), job_id=None, now=T0, new_id=new_id)
    return fact


def live_texts(memory: Memory, subject: str = SUBJECT, project: str = "default") -> list[str]:
    return sorted(f.text for f in memory.facts(subject=subject, project=project))


@pytest.mark.parametrize("order", ["corroborated_first", "corroborated_last"])
def test_the_more_corroborated_survives_and_absorbs_the_duplicate(
    memory: Memory, order: str
) -> None:
    # SCENARIOS 24, in both input orders.
    texts = [("User publishes on Tuesday mornings.", 2), ("user publishes on tuesday mornings", 0)]
    if order == "corroborated_last":
        texts.reverse()
    planted = [plant(memory, t, count=c, minutes=i) for i, (t, c) in enumerate(texts)]
    strong = next(f for f in planted if f.reinforcement_count == 2)
    weak = next(f for f in planted if f.reinforcement_count == 0)

    report = memory.dedupe()

    assert report.retired == 1 and report.merged_groups == 1
    [group] = [g.group for g in report.groups]
    assert group.survivor == strong.id and group.retired == (weak.id,)
    [live] = memory.facts(subject=SUBJECT)
    assert live.id == strong.id
    assert live.reinforcement_count == 3  # its corroboration +1
    assert set(live.source_event_ids) == set(strong.source_event_ids + weak.source_event_ids)
    retired = memory.fact(weak.id)
    assert retired.status is FactStatus.SUPERSEDED and retired.superseded_by == strong.id
    # Still listable, with its history and the receipt's reason.
    history = memory.history(weak.id)
    assert any(e.action == "merge_fact" and e.pass_name == "dedupe" for e in history.audit)
    assert weak.id in {f.id for f in memory.facts(subject=SUBJECT, include_retired=True)}


def test_one_differing_word_never_merges_and_word_order_is_report_only(memory: Memory) -> None:
    # SCENARIOS 22 and 23.
    for i, text in enumerate(
        [
            "User always publishes on Tuesdays",
            "User never publishes on Tuesdays",
            "Alice manages Bob",
            "Bob manages Alice",
        ]
    ):
        plant(memory, text, minutes=i)
    before = live_texts(memory)

    report = memory.dedupe()

    assert report.retired == 0 and report.merged_groups == 0
    assert report.report_only == 1
    [group] = [g.group for g in report.groups]
    assert group.merged == "report_only" and len(group.members) == 2
    assert live_texts(memory) == before


def test_a_pinned_duplicate_survives_and_is_never_changed(memory: Memory) -> None:
    # SCENARIOS 21: a pinned duplicate always survives its group, byte-identical.
    pinned = plant(memory, "Prefers tea", pinned=True, minutes=5)
    other_pinned = plant(memory, "prefers tea!", pinned=True, minutes=6)
    loser = plant(memory, "PREFERS TEA", count=7, minutes=0)

    report = memory.dedupe()

    [group] = [g.group for g in report.groups]
    assert group.survivor == pinned.id
    assert group.retired == (loser.id,) and group.pinned_skipped == (other_pinned.id,)
    assert memory.fact(pinned.id) == pinned
    assert memory.fact(other_pinned.id) == other_pinned
    assert memory.fact(loser.id).superseded_by == pinned.id


def test_a_dry_run_reports_every_group_and_writes_nothing(memory: Memory) -> None:
    # SCENARIOS 38.
    plant(memory, "Likes jazz", minutes=0)
    plant(memory, "likes jazz.", minutes=1)
    plant(memory, "Lives in Lyon", subject="u2")
    plant(memory, "lives in lyon", subject="u2", minutes=1)
    audit_before = memory.audit(limit=1000)

    report = memory.dedupe(dry_run=True)

    assert report.dry_run and report.retired == 2 and report.merged_groups == 2
    assert {g.subject for g in report.groups} == {"u1", "u2"}
    assert len(memory.facts(subject="u1")) == 2 and len(memory.facts(subject="u2")) == 2
    assert memory.audit(limit=1000) == audit_before


def test_the_cap_retires_that_many_and_the_next_run_finishes(memory: Memory) -> None:
    # SCENARIOS 39, scaled: 25 duplicate losers with a cap of 20.
    plant(memory, "Drinks oat milk", count=3, minutes=0)
    for i in range(25):
        plant(memory, "drinks oat milk" + "." * (i % 3), minutes=i + 1)

    first = memory.dedupe(max_supersedes=20)
    assert first.retired == 20 and first.capped == 5
    assert len(memory.facts(subject=SUBJECT)) == 6

    second = memory.dedupe(max_supersedes=20)
    assert second.retired == 5 and second.capped == 0
    [survivor] = memory.facts(subject=SUBJECT)
    assert survivor.reinforcement_count == 3 + 25


def test_the_cap_spans_every_scope_of_a_run(memory: Memory) -> None:
    for subject in ("a", "b", "c"):
        for i in range(3):
            plant(memory, "owns a car" + "!" * i, subject=subject, minutes=i)
    report = memory.dedupe(max_supersedes=3)
    assert report.retired == 3 and report.capped == 3


def test_projects_outside_the_allowlist_are_left_alone(memory: Memory) -> None:
    for project in ("blog", "shop"):
        plant(memory, "Ships on Mondays", project=project)
        plant(memory, "ships on mondays", project=project, minutes=1)

    report = memory.dedupe(projects=["blog"])

    assert report.retired == 1 and {g.project for g in report.groups} == {"blog"}
    assert len(memory.facts(subject=SUBJECT, project="shop")) == 2
    assert len(memory.facts(subject=SUBJECT, project="blog")) == 1


def test_speakers_are_never_merged(memory: Memory) -> None:
    planted: Sequence[Fact] = [
        make_memory("Went to the beach", attribution="Caroline", subject=SUBJECT),
        make_memory("went to the beach", attribution="Melanie", subject=SUBJECT),
    ]
    plan = Plan([CreateFact(f, "planted", "api") for f in planted])
    apply_plan(memory.store, plan, Scope("default", SUBJECT), job_id=None, now=T0, new_id=new_id)

    report = memory.dedupe()

    assert report.retired == 0
    assert len(memory.facts(subject=SUBJECT)) == 2


def test_a_second_run_changes_nothing(memory: Memory) -> None:
    plant(memory, "Walks to work")
    plant(memory, "walks to work", minutes=1)
    memory.dedupe()
    audit = memory.audit(limit=1000)

    again = memory.dedupe()

    assert again.retired == 0 and again.groups == []
    assert memory.audit(limit=1000) == audit
