"""`Memory.prune` on every backend: a stale tombstone whose evidence a survivor holds is
deleted (its row, sources and vector; never an event), with an audit entry; a dry run writes
nothing; what the rule keeps stays; the survivor's history and an erase still work after.

The merged tombstones come from a real dedupe run over memories planted as an earlier
version would have left them (`test_dedupe.plant`); the ones with vectors are planted whole.
"""

from __future__ import annotations

import sqlite3
from datetime import timedelta

import pytest

from distill import Memory
from distill.applier import apply_plan
from distill.core.decay import HALF_LIFE_DAYS, KEPT_EVIDENCE, KEPT_PINNED, KEPT_WEIGHT
from distill.core.models import Fact, FactStatus
from distill.core.passes import Scope
from distill.core.plan import CreateFact, Plan, PruneFact
from distill.errors import IntegrityViolation, InvalidInput, NotFound
from tests.conftest import FakeClock
from tests.contract.test_dedupe import SUBJECT, plant
from tests.factories import T0, make_event, make_memory, new_id, unit_vector

# Long enough for a tombstone planted at T0 to fall below the default floor (~389 days).
STALE = timedelta(days=HALF_LIFE_DAYS * 5)


def merged(memory: Memory) -> tuple[Fact, Fact]:
    """Two duplicate memories merged by dedupe: (survivor, tombstone)."""
    strong = plant(memory, "Publishes on Tuesday mornings.", count=2)
    weak = plant(memory, "publishes on tuesday mornings", minutes=1)
    assert memory.dedupe().retired == 1
    return memory.fact(strong.id), memory.fact(weak.id)


def every_fact(memory: Memory) -> list[Fact]:
    return memory.facts(subject=SUBJECT, include_retired=True)


def vector_rows(backend: str, database: str) -> int:
    query = "SELECT count(*) FROM fact_vectors"
    if backend == "sqlite":
        with sqlite3.connect(database) as conn:
            return int(conn.execute(query).fetchone()[0])
    import psycopg

    with psycopg.connect(database) as conn:
        row = conn.execute(query).fetchone()
        assert row is not None
        return int(row[0])


def test_a_dry_run_reports_the_prune_and_writes_nothing(memory: Memory, clock: FakeClock) -> None:
    _, dead = merged(memory)
    clock.advance(days=STALE.days)
    before, audit = every_fact(memory), memory.audit(SUBJECT)

    report = memory.prune(dry_run=True)

    assert report.dry_run and [p.fact_id for p in report.pruned] == [dead.id]
    assert every_fact(memory) == before and memory.audit(SUBJECT) == audit


def test_a_stale_merged_tombstone_is_deleted_with_an_audit_entry_and_nothing_else(
    memory: Memory, clock: FakeClock
) -> None:
    survivor, dead = merged(memory)
    events = memory.store.counts("default").events
    assert memory.prune().pruned == []  # fresh yet: kept for its weight
    clock.advance(days=STALE.days)
    stale = memory.weight(dead.id[:8])  # an id prefix does
    assert stale == memory.weight(dead.id) < 0.05  # derived: asking again changes nothing

    report = memory.prune()

    assert [p.fact_id for p in report.pruned] == [dead.id] and report.kept == {}
    with pytest.raises(NotFound):
        memory.fact(dead.id)
    assert [f.id for f in every_fact(memory)] == [survivor.id]
    assert memory.store.counts("default").events == events  # events are never deleted
    [entry] = [e for e in memory.store.audit_for("default", dead.id) if e.pass_name == "prune"]
    assert entry.action == "prune_tombstone" and entry.after is not None
    assert entry.before is not None and entry.before["superseded_by"] == survivor.id
    assert "text" not in entry.before and entry.after["weight"] < 0.05
    # The survivor's history still reads, and still holds the merge's evidence.
    history = memory.history(survivor.id)
    assert history.fact.id == survivor.id
    assert set(dead.source_event_ids) <= set(history.fact.source_event_ids)
    # The audit reads whole around the deleted row (its entries are returned as stored).
    actions = [e.action for e in memory.audit(SUBJECT) if e.fact_id == dead.id]
    assert actions[-1] == "prune_tombstone" and len(actions) >= 2
    # Idempotent: a second run finds nothing left to delete.
    again = memory.prune()
    assert again.pruned == [] and again.scopes == 0


def test_the_row_its_sources_and_its_vector_go_and_the_survivors_stay(
    memory: Memory, clock: FakeClock, backend: str, database: str
) -> None:
    events = [make_event(subject=SUBJECT, text=t, id=new_id()) for t in ("a", "b")]
    memory.store.append_events(events, T0)
    survivor = make_memory(
        "likes tea", subject=SUBJECT, source_event_ids=(events[0].id, events[1].id)
    )
    dead = make_memory(
        "likes green tea",
        subject=SUBJECT,
        status=FactStatus.SUPERSEDED,
        superseded_by=survivor.id,
        retired_at=T0,
        source_event_ids=(events[1].id,),
    )
    plan = Plan(
        [
            CreateFact(f, "planted", "api", vector=unit_vector(float(i + 1)), vector_model="m")
            for i, f in enumerate([survivor, dead])
        ]
    )
    apply_plan(memory.store, plan, Scope("default", SUBJECT), job_id=None, now=T0, new_id=new_id)
    assert vector_rows(backend, database) == 2
    clock.advance(days=STALE.days)

    assert [p.fact_id for p in memory.prune().pruned] == [dead.id]

    assert vector_rows(backend, database) == 1
    kept = memory.fact(survivor.id)
    assert kept == survivor
    found = memory.store.facts_with_sources("default", SUBJECT, [events[1].id])
    assert [f.id for f in found] == [survivor.id]  # the sources of the survivor stay


def test_what_the_rule_keeps_stays_and_the_report_says_why(
    memory: Memory, clock: FakeClock
) -> None:
    _, pinned = merged(memory)
    memory.pin(pinned.id)
    lonely = plant(memory, "Owns a red kayak", minutes=5)
    memory.retract(lonely.id, "wrong person")  # nothing else cites its event
    before = every_fact(memory)

    assert memory.prune().kept == {KEPT_PINNED: 1, KEPT_WEIGHT: 1}
    clock.advance(days=STALE.days)
    report = memory.prune()

    assert report.pruned == [] and report.kept == {KEPT_PINNED: 1, KEPT_EVIDENCE: 1}
    assert every_fact(memory) == before


def test_the_project_and_subject_filters_and_the_cap_bound_a_run(
    memory: Memory, clock: FakeClock
) -> None:
    merged(memory)
    plant(memory, "Runs on Sundays", subject="u2", count=1)
    plant(memory, "runs on sundays", subject="u2", minutes=1)
    assert memory.dedupe().retired == 1
    clock.advance(days=STALE.days)

    assert memory.prune(projects=["nobody"]).pruned == []
    with pytest.raises(InvalidInput, match="floor"):
        memory.prune(floor=2)
    assert memory.prune(subject="u9").scopes == 0
    capped = memory.prune(max_prunes=1, dry_run=True)
    assert len(capped.pruned) == 1 and capped.capped == 1
    only = memory.prune(subject="u2")
    assert [p.subject for p in only.pruned] == ["u2"]
    assert [p.subject for p in memory.prune().pruned] == [SUBJECT]


def test_an_erase_still_works_after_a_prune(memory: Memory, clock: FakeClock) -> None:
    merged(memory)
    clock.advance(days=STALE.days)
    assert len(memory.prune().pruned) == 1

    counts = memory.erase("default", SUBJECT)

    assert counts["facts"] == 1 and counts["events"] == 2
    assert every_fact(memory) == []


def test_a_tombstone_changed_since_the_read_is_not_deleted(
    memory: Memory, clock: FakeClock
) -> None:
    survivor, dead = merged(memory)
    clock.advance(days=STALE.days)
    memory.pin(dead.id)  # after prune read it: the plan holds the unpinned row
    plan = Plan([PruneFact(dead, "stale", 0.001)])

    with pytest.raises(IntegrityViolation, match="changed since prune read it"):
        apply_plan(
            memory.store, plan, Scope("default", SUBJECT), job_id=None, now=T0, new_id=new_id
        )

    assert memory.fact(dead.id).pinned
    found = memory.store.facts_with_sources("default", SUBJECT, list(dead.source_event_ids))
    assert {f.id for f in found} == {survivor.id, dead.id}  # its sources were not deleted
