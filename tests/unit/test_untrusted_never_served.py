"""An untrusted source's statement is never served: no automatic step makes it an active fact.

DESIGN's write gate holds an untrusted claim in quarantine; only a person may accept it.
The rule was kept on the plain paths and broken on others, found in session 43 by the
checks `scripts/hygiene_checks.py` gained then ("untrusted never served", "less trusted
displaces nothing"; seeds 700000, 700085, 700114, 701386, 710117, 742257 and 781422): a
third value reclassifying a quarantine set made its untrusted member an active event fact
(since session 45 a quarantine set is never reclassified);
an untrusted restatement's stated period ended a more trusted version; a late change split
a version whose only later statements were untrusted, and made them a version of their
own (also when the version had a stated end, or the change adopted a held value); derive
elected a value from untrusted votes alone; and a change adopting an untrusted value held
against the current one made it current from the untrusted statement's date. Each test is
one of those histories cut to its claims.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from distill import Memory
from distill.core.models import ConflictKind, ConflictStatus, FactKind, FactStatus, Trust
from tests.factories import T0
from tests.unit.scenario_support import MemoryFactory


def claim(
    mem: Memory, trust: str, day: int, predicate: str, value: dict[str, Any], **more: Any
) -> None:
    given = {k: T0 + timedelta(days=v) for k, v in more.items() if k in ("valid_from", "valid_to")}
    action = more.get("action", "create")
    mem.add_event(
        subject="alice",
        text=f"{predicate} is {value}",
        occurred_at=T0 + timedelta(days=day),
        trust=trust,
        claims=[{"predicate": predicate, "value": value, "action": action, **given}],
    )


def of(mem: Memory, predicate: str, include_retired: bool = False) -> list[Any]:
    found = mem.facts(subject="alice", include_retired=include_retired)
    return [f for f in found if f.predicate == predicate]


def served_untrusted(mem: Memory) -> list[str]:
    return [f.text for f in mem.facts(subject="alice") if f.trust is Trust.UNTRUSTED]


def test_an_untrusted_value_held_apart_never_makes_a_trusted_attribute_events(
    make_memory: MemoryFactory,
) -> None:
    """Until session 45 an untrusted value quarantined against Paris counted as a second
    value of Paris's set, and a trusted third value made all three dated event facts (the
    untrusted one held as an event). A statement held for its source now stays in a set
    of its own: the trusted values are in conflict, the untrusted one held, nothing an
    event, as when Oslo came before Rome. So an untrusted source can no longer turn a trusted
    attribute into dated events by adding values to it."""
    mem = make_memory()
    claim(mem, "trusted", 0, "home_city", {"city": "Paris"})
    claim(mem, "untrusted", 1, "home_city", {"city": "Rome"})  # quarantined against Paris
    claim(mem, "trusted", 2, "home_city", {"city": "Oslo"})  # held in conflict with Paris
    mem.consolidate()

    assert served_untrusted(mem) == []
    facts = mem.facts(subject="alice", include_retired=True)
    assert {f.kind for f in facts} == {FactKind.STATE}
    (rome,) = [f for f in facts if "Rome" in f.text]
    (oslo,) = [f for f in facts if "Oslo" in f.text]
    (paris,) = mem.facts(subject="alice")
    assert "Paris" in paris.text
    sets = {c.kind: c for c in mem.conflicts(subject="alice", status="open")}
    assert set(sets[ConflictKind.QUARANTINE].member_ids) == {paris.id, rome.id}
    assert set(sets[ConflictKind.CONFLICT].member_ids) == {paris.id, oslo.id}
    # The set a person decides about: accepting it serves the statement, as it would any.
    mem.resolve_conflict(sets[ConflictKind.QUARANTINE].id, keep=rome.id)
    assert [f.id for f in mem.facts(subject="alice") if f.trust is Trust.UNTRUSTED] == [rome.id]


def test_an_untrusted_restatement_ends_nothing(make_memory: MemoryFactory) -> None:
    mem = make_memory()
    claim(mem, "semi_trusted", 1, "employer", {"v": "red"})
    claim(mem, "untrusted", 10, "employer", {"v": "red"}, valid_from=30, valid_to=34)
    mem.consolidate()
    (red,) = of(mem, "employer")
    assert red.valid_to is None  # the untrusted period closed it at day 34 before
    assert red.source_event_ids and len(red.source_event_ids) == 2  # still its evidence

    claim(mem, "trusted", 24, "employer", {"v": "blue"}, action="supersede")
    mem.consolidate()

    assert served_untrusted(mem) == []
    (current,) = of(mem, "employer")
    assert (current.value, current.valid_to) == ({"v": "blue"}, None)


def test_a_late_change_does_not_make_untrusted_restatements_a_version(
    make_memory: MemoryFactory,
) -> None:
    mem = make_memory()
    claim(mem, "trusted", 8, "bike_count", {"count": 5})
    claim(mem, "untrusted", 26, "bike_count", {"count": 5})  # supports the value it repeats
    mem.consolidate()
    claim(
        mem,
        "trusted",
        39,
        "bike_count",
        {"count": 3},
        action="supersede",
        valid_from=21,
        valid_to=31,
    )
    mem.consolidate()

    assert served_untrusted(mem) == []
    versions = of(mem, "bike_count", include_retired=True)
    held = [f for f in versions if f.status is FactStatus.CANDIDATE]
    assert [(f.value, f.trust) for f in held] == [({"count": 5}, Trust.UNTRUSTED)]
    (quarantine,) = mem.conflicts(subject="alice", status="open")
    assert quarantine.kind is ConflictKind.QUARANTINE and held[0].id in quarantine.member_ids
    true = {f.value["count"] for f in versions if f.status is not FactStatus.CANDIDATE}
    assert true == {5, 3}  # the trusted value until day 21, then the change


def test_untrusted_votes_alone_elect_nothing(make_memory: MemoryFactory) -> None:
    mem = make_memory(policies={"employer": "vote"})
    claim(mem, "untrusted", 1, "employer", {"v": "green"})
    claim(mem, "untrusted", 2, "employer", {"v": "green"})
    mem.consolidate()

    report = mem.derive()

    assert mem.facts(subject="alice") == []
    assert (report.processed, report.counts["untrusted"], report.created) == (2, 2, 0)
    claim(mem, "third_party", 3, "employer", {"v": "red"})
    mem.consolidate()
    report = mem.derive()
    (elected,) = mem.facts(subject="alice")  # one counted vote against none
    assert (elected.value, elected.trust, report.counts["untrusted"]) == (
        {"v": "red"},
        Trust.THIRD_PARTY,
        0,
    )
    assert ConflictStatus.OPEN not in {
        c.status for c in mem.conflicts(subject="alice", status=None)
    }


def test_a_late_change_inside_an_ended_version_holds_its_untrusted_restatements(
    make_memory: MemoryFactory,
) -> None:
    # Seed 710117's shape: the version has a stated end, so the change does not simply
    # become current over less trusted restatements; the split's restated part is held.
    mem = make_memory()
    claim(mem, "trusted", 31, "bike_count", {"count": 4}, valid_from=17, valid_to=27)
    claim(mem, "untrusted", 24, "bike_count", {"count": 4}, valid_from=21, valid_to=25)
    mem.consolidate()
    claim(mem, "trusted", 19, "bike_count", {"count": 5}, action="supersede")
    mem.consolidate()

    assert served_untrusted(mem) == []
    (current,) = of(mem, "bike_count")
    assert (current.value, current.valid_from, current.valid_to) == (
        {"count": 5},
        T0 + timedelta(days=19),
        None,
    )
    versions = of(mem, "bike_count", include_retired=True)
    (early,) = [f for f in versions if f.status is FactStatus.SUPERSEDED]
    assert (early.value, early.valid_to, early.superseded_by) == (
        {"count": 4},
        T0 + timedelta(days=19),
        current.id,
    )
    (held,) = [f for f in versions if f.status is FactStatus.CANDIDATE]
    assert held.trust is Trust.UNTRUSTED
    (quarantine,) = mem.conflicts(subject="alice", status="open")
    assert set(quarantine.member_ids) == {current.id, held.id}


def test_a_change_adopting_a_quarantined_value_begins_on_its_own_date(
    make_memory: MemoryFactory,
) -> None:
    # Seed 742257's shape: the untrusted value held against the current one is the value a
    # more trusted change later moves to. The change makes it current from the change's
    # date; the untrusted date would have displaced the current value earlier.
    mem = make_memory()
    claim(mem, "semi_trusted", 5, "bike_count", {"count": 5})
    claim(mem, "untrusted", 6, "bike_count", {"count": 4})
    mem.consolidate()
    claim(mem, "semi_trusted", 20, "bike_count", {"count": 4}, action="supersede")
    mem.consolidate()

    versions = sorted(of(mem, "bike_count", include_retired=True), key=lambda f: f.valid_from)
    assert [(f.value["count"], f.valid_from, f.valid_to) for f in versions] == [
        (5, T0 + timedelta(days=5), T0 + timedelta(days=20)),
        (4, T0 + timedelta(days=20), None),
    ]
    assert versions[1].status is FactStatus.ACTIVE and versions[1].trust is Trust.SEMI_TRUSTED


def test_a_late_change_adopting_a_held_value_holds_untrusted_restatements_too(
    make_memory: MemoryFactory,
) -> None:
    # Seed 781422's shape: the split's change is the value held against the version (it is
    # adopted), and the version's only later statement is untrusted.
    mem = make_memory()
    claim(mem, "third_party", 30, "bike_count", {"count": 3})
    claim(mem, "untrusted", 38, "bike_count", {"count": 4})
    mem.consolidate()
    claim(mem, "third_party", 1, "bike_count", {"count": 4}, action="supersede")
    claim(mem, "trusted", 32, "bike_count", {"count": 3}, action="supersede")
    mem.consolidate()

    assert served_untrusted(mem) == []
    versions = of(mem, "bike_count", include_retired=True)
    true = [f for f in versions if f.status is not FactStatus.CANDIDATE]
    assert all(f.trust is not Trust.UNTRUSTED for f in true)
    (current,) = of(mem, "bike_count")
    assert (current.value, current.valid_to) == ({"count": 3}, None)
