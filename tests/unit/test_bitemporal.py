"""DESIGN invariant 8, bitemporal truth: `valid_from`/`valid_to` say when a fact was true in
the world (the event's `occurred_at` or the claim's own time), `facts(as_of=...)` answers
"what was true then", and out-of-order arrival gives the same final state as in-order."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest

from distill import Memory
from distill.core.models import Fact, FactStatus
from distill.errors import InvalidInput, PinnedFact
from tests.factories import at

if TYPE_CHECKING:
    pass

MemoryFactory = Callable[..., Memory]

T1, T2, T3 = at(0), at(days=10), at(days=20)


def said(
    mem: Memory,
    when: datetime,
    value: dict[str, Any],
    action: str = "supersede",
    trust: str = "trusted",
    **claim: Any,
) -> None:
    mem.add_event(
        subject="alice",
        text=f"home: {value}",
        occurred_at=when,
        trust=trust,
        claims=[{"predicate": "home", "value": value, "action": action, **claim}],
    )


def values_as_of(mem: Memory, when: datetime | str) -> list[dict[str, Any] | None]:
    return [f.value for f in mem.facts(subject="alice", as_of=when)]


def versions(mem: Memory) -> list[tuple[Any, ...]]:
    """Every version as (value, status, valid_from, valid_to, supersedes, superseded_by), with
    the links shown as the linked version's value so that ids do not matter."""
    facts = mem.facts(subject="alice", include_retired=True)
    by_id = {f.id: f for f in facts}

    def value_of(fact_id: str | None) -> str | None:
        return str(by_id[fact_id].value) if fact_id else None

    return sorted(
        (
            str(f.value),
            f.status.value,
            f.valid_from,
            f.valid_to,
            value_of(f.supersedes_id),
            value_of(f.superseded_by),
        )
        for f in facts
    )


def one(facts: Sequence[Fact], value: dict[str, Any]) -> Fact:
    [found] = [f for f in facts if f.value == value]
    return found


# -- as_of ---------------------------------------------------------------------------------------


def test_as_of_answers_what_was_true_at_that_time(mem: Memory) -> None:
    """DESIGN invariant 8: before, inside and after each validity interval; intervals are
    half-open [valid_from, valid_to)."""
    said(mem, T1, {"city": "Paris"}, action="create")
    said(mem, T2, {"city": "Lyon"})
    mem.consolidate()

    assert values_as_of(mem, T1 - timedelta(seconds=1)) == []
    assert values_as_of(mem, T1) == [{"city": "Paris"}]
    assert values_as_of(mem, T1 + timedelta(days=5)) == [{"city": "Paris"}]
    assert values_as_of(mem, T2 - timedelta(seconds=1)) == [{"city": "Paris"}]
    assert values_as_of(mem, T2) == [{"city": "Lyon"}]
    assert values_as_of(mem, T2 + timedelta(days=365)) == [{"city": "Lyon"}]
    assert [f.value for f in mem.facts(subject="alice")] == [{"city": "Lyon"}]


def test_as_of_accepts_iso_strings_and_refuses_naive_times(mem: Memory) -> None:
    """DESIGN invariant 8: `as_of` may be an ISO-8601 string with a zone; naive is an error."""
    said(mem, T1, {"city": "Paris"}, action="create")
    said(mem, T2, {"city": "Lyon"})
    mem.consolidate()

    assert values_as_of(mem, "2024-05-05T00:00:00Z") == [{"city": "Paris"}]
    assert values_as_of(mem, "2024-05-20T00:00:00+02:00") == [{"city": "Lyon"}]
    with pytest.raises(InvalidInput):
        mem.facts(subject="alice", as_of="2024-05-05T00:00:00")


def test_as_of_never_serves_a_held_candidate(mem: Memory) -> None:
    """DESIGN invariant 8 with conflicts: a value held in an open conflict was never
    established, so no point in time serves it."""
    said(mem, T1, {"city": "Paris"}, action="create")
    said(mem, T2, {"city": "Lyon"}, action="create")  # different value, not a supersede
    report = mem.consolidate()
    assert report.conflicts == 1

    assert values_as_of(mem, T2 + timedelta(days=1)) == [{"city": "Paris"}]
    assert values_as_of(mem, T1 - timedelta(days=1)) == []


# -- out-of-order arrival ------------------------------------------------------------------------

CHAIN = [(T1, {"city": "Paris"}), (T2, {"city": "Lyon"}), (T3, {"city": "Berlin"})]


def _deliver(mem: Memory, order: Sequence[int], chain: Sequence[Any] = CHAIN) -> None:
    """Add the chain's events in `order`, consolidating after each one."""
    for index in order:
        when, value = chain[index]
        said(mem, when, value)
        mem.consolidate()


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))), ids=str)
def test_chain_of_supersedes_in_any_arrival_order_ends_in_the_same_state(
    make_memory: MemoryFactory, order: tuple[int, ...]
) -> None:
    """DESIGN invariant 8: three supersedes t1<t2<t3 delivered in any order, consolidated
    after each, end as delivered in order: same values, statuses, intervals and receipts."""
    in_order = make_memory("in_order.db")
    _deliver(in_order, (0, 1, 2))
    shuffled = make_memory("shuffled.db")

    _deliver(shuffled, order)

    assert versions(shuffled) == versions(in_order)
    expected = [
        ("{'city': 'Berlin'}", "active", T3, None, "{'city': 'Lyon'}", None),
        ("{'city': 'Lyon'}", "superseded", T2, T3, "{'city': 'Paris'}", "{'city': 'Berlin'}"),
        ("{'city': 'Paris'}", "superseded", T1, T2, None, "{'city': 'Lyon'}"),
    ]
    assert versions(in_order) == expected
    for when in (T1, T2 + timedelta(days=1), T3 + timedelta(days=1)):
        assert values_as_of(shuffled, when) == values_as_of(in_order, when)


def test_late_versions_are_filed_as_history_not_made_active(mem: Memory) -> None:
    """DESIGN invariant 8: the order t3, t1, t2 keeps t3 active throughout."""
    _deliver(mem, (2,))
    _deliver(mem, (0,))
    assert [f.value for f in mem.facts(subject="alice")] == [{"city": "Berlin"}]
    _deliver(mem, (1,))
    assert [f.value for f in mem.facts(subject="alice")] == [{"city": "Berlin"}]
    assert values_as_of(mem, T2 + timedelta(days=1)) == [{"city": "Lyon"}]


# Supersede carries unstated keys forward: the state depends on the versions before it.
CARRY = [
    (T1, {"city": "Paris", "country": "FR"}),
    (T2, {"city": "Lyon"}),
    (T3, {"city": "Berlin", "country": "DE"}),
]


@pytest.mark.parametrize(
    "order",
    list(itertools.permutations(range(3))),
    ids=str,
)
def test_carried_forward_keys_do_not_depend_on_arrival_order(
    make_memory: MemoryFactory, order: tuple[int, ...]
) -> None:
    """DESIGN invariant 8 with SCENARIOS B11: {city, country} then supersede {city} keeps the
    country, whichever of the two events arrives first."""
    in_order = make_memory("in_order.db")
    _deliver(in_order, (0, 1, 2), CARRY)
    shuffled = make_memory("shuffled.db")

    _deliver(shuffled, order, CARRY)

    lyon = one(
        in_order.facts(subject="alice", include_retired=True), {"city": "Lyon", "country": "FR"}
    )
    assert lyon.status is FactStatus.SUPERSEDED
    assert versions(shuffled) == versions(in_order)


# -- the claim's own time ------------------------------------------------------------------------


@pytest.mark.parametrize("first", ["acme", "globex"])
def test_explicit_validity_wins_over_arrival_order(mem: Memory, first: str) -> None:
    """DESIGN invariant 8: claims with their own valid_from/valid_to are placed by those
    times, not by when their events occurred or arrived."""
    acme = {
        "subject": "alice",
        "text": "I worked at Acme from 2021 to the end of 2022",
        "occurred_at": at(days=40),  # said late ...
        "claims": [
            {
                "predicate": "employer",
                "value": {"name": "Acme"},
                "valid_from": "2021-01-01T00:00:00Z",  # ... about the past
                "valid_to": "2023-01-01T00:00:00Z",
            }
        ],
    }
    globex = {
        "subject": "alice",
        "text": "I have worked at Globex since January 2023",
        "occurred_at": at(days=1),
        "claims": [
            {
                "predicate": "employer",
                "value": {"name": "Globex"},
                "valid_from": "2023-01-01T00:00:00Z",
            }
        ],
    }
    for event in (acme, globex) if first == "acme" else (globex, acme):
        mem.add_event(**event)
        mem.consolidate()

    assert [f.value for f in mem.facts(subject="alice")] == [{"name": "Globex"}]
    assert mem.conflicts(subject="alice") == []
    facts = mem.facts(subject="alice", include_retired=True)
    old, new = one(facts, {"name": "Acme"}), one(facts, {"name": "Globex"})
    assert old.status is FactStatus.SUPERSEDED
    assert old.superseded_by == new.id
    assert (old.valid_from, old.valid_to) == (
        datetime.fromisoformat("2021-01-01T00:00:00+00:00"),
        datetime.fromisoformat("2023-01-01T00:00:00+00:00"),
    )
    assert new.valid_from == datetime.fromisoformat("2023-01-01T00:00:00+00:00")
    assert new.valid_to is None
    assert values_as_of(mem, "2022-06-01T00:00:00Z") == [{"name": "Acme"}]
    assert values_as_of(mem, "2023-06-01T00:00:00Z") == [{"name": "Globex"}]
    assert values_as_of(mem, "2020-06-01T00:00:00Z") == []


def test_claim_valid_from_sets_validity_instead_of_event_time(mem: Memory) -> None:
    """DESIGN invariant 8: valid_from comes from the claim's own time when it has one."""
    mem.add_event(
        subject="alice",
        text="I have lived in Lyon since 2019",
        occurred_at=at(days=3),
        claims=[
            {"predicate": "home", "value": {"city": "Lyon"}, "valid_from": "2019-03-01T00:00Z"}
        ],
    )
    mem.consolidate()

    [fact] = mem.facts(subject="alice")
    assert fact.valid_from == datetime.fromisoformat("2019-03-01T00:00:00+00:00")
    assert values_as_of(mem, "2020-01-01T00:00:00Z") == [{"city": "Lyon"}]


# -- late reinforcement --------------------------------------------------------------------------


def test_late_reinforcement_moves_valid_from_back_and_closes_the_previous_version(
    mem: Memory,
) -> None:
    """DESIGN invariant 8: Paris (t1), supersede Lyon (t3); a late event says Lyon at t2 →
    Lyon began at t2, Paris ended at t2, Lyon reinforced once."""
    said(mem, T1, {"city": "Paris"}, action="create")
    said(mem, T3, {"city": "Lyon"})
    mem.consolidate()

    said(mem, T2, {"city": "Lyon"}, action="create")
    report = mem.consolidate()

    assert report.reinforced == 1
    assert report.created == 0 and report.conflicts == 0
    facts = mem.facts(subject="alice", include_retired=True)
    assert len(facts) == 2
    paris, lyon = one(facts, {"city": "Paris"}), one(facts, {"city": "Lyon"})
    assert (lyon.status, lyon.valid_from, lyon.valid_to) == (FactStatus.ACTIVE, T2, None)
    assert lyon.reinforcement_count == 1
    assert lyon.last_reinforced_at == T3  # an older event never moves freshness back
    assert (paris.status, paris.valid_from, paris.valid_to) == (FactStatus.SUPERSEDED, T1, T2)
    assert paris.superseded_by == lyon.id
    assert values_as_of(mem, T2 + timedelta(days=1)) == [{"city": "Lyon"}]


def test_late_reinforcement_of_a_first_version_extends_it_back(mem: Memory) -> None:
    """DESIGN invariant 8: Lyon known from t3; a late event says Lyon at t1 → valid from t1."""
    said(mem, T3, {"city": "Lyon"}, action="create")
    mem.consolidate()
    assert values_as_of(mem, T2) == []

    said(mem, T1, {"city": "Lyon"}, action="create")
    mem.consolidate()

    [lyon] = mem.facts(subject="alice", include_retired=True)
    assert (lyon.valid_from, lyon.valid_to, lyon.reinforcement_count) == (T1, None, 1)
    assert values_as_of(mem, T2) == [{"city": "Lyon"}]


def test_late_reinforcement_matches_in_order_delivery(make_memory: MemoryFactory) -> None:
    """DESIGN invariant 8: the late reinforcement gives the same validity as in-order
    delivery of the same three events."""
    in_order = make_memory("in_order.db")
    said(in_order, T1, {"city": "Paris"}, action="create")
    said(in_order, T2, {"city": "Lyon"})
    said(in_order, T3, {"city": "Lyon"})
    in_order.consolidate()
    late = make_memory("late.db")
    said(late, T1, {"city": "Paris"}, action="create")
    said(late, T3, {"city": "Lyon"})
    late.consolidate()
    said(late, T2, {"city": "Lyon"})

    late.consolidate()

    def shape(m: Memory) -> list[tuple[Any, ...]]:
        return sorted(
            (str(f.value), f.status.value, f.valid_from, f.valid_to, f.reinforcement_count)
            for f in m.facts(subject="alice", include_retired=True)
        )

    assert shape(late) == shape(in_order)


def test_a_fact_whose_stated_end_has_passed_is_not_served_as_current(mem: Memory) -> None:
    """No stale facts served: "played for Reading until 2010" stays the latest version of its
    identity, but `facts()` (what is true now) leaves it out once the end has passed, while
    `as_of` inside the interval and `include_retired` still show it."""
    mem.add_event(
        subject="bob",
        text="Bob played for Reading from 2008 to 2010",
        claims=[
            {
                "predicate": "plays_for",
                "value": {"club": "Reading"},
                "valid_from": "2008-01-01T00:00:00Z",
                "valid_to": "2010-01-01T00:00:00Z",
            },
            {
                "predicate": "shirt_number",
                "value": {"number": 9},
                "valid_from": "2008-01-01T00:00:00Z",
                "valid_to": "2999-01-01T00:00:00Z",
            },
        ],
    )
    mem.consolidate()

    assert [f.predicate for f in mem.facts(subject="bob")] == ["shirt_number"]
    assert {f.predicate for f in mem.facts(subject="bob", as_of="2009-06-01T00:00:00Z")} == {
        "plays_for",
        "shirt_number",
    }
    ended = one(mem.facts(subject="bob", include_retired=True), {"club": "Reading"})
    assert ended.status is FactStatus.ACTIVE
    assert mem.facts(subject="bob", as_of="2010-01-01T00:00:00Z")[0].predicate == "shirt_number"


PARIS_ENDED = (
    {"city": "Paris"},
    {"valid_from": "2015-01-01T00:00:00Z", "valid_to": "2019-01-01T00:00:00Z"},
)


@pytest.mark.parametrize("order", ["ended first", "new value first"])
def test_a_value_told_after_the_current_one_ended_follows_it(
    make_memory: MemoryFactory, order: str
) -> None:
    """ "I lived in Paris from 2015 to 2019", then (2024) "I live in Lyon": the two were never
    true at once, so Lyon is a plain `create` that follows Paris, not a contradiction. It was
    held in conflict with Paris (and nothing was current) when the ended value came first;
    the other order filed Paris as history. Both orders now end the same: Lyon current,
    Paris superseded by it with its own stated end kept."""
    mem = make_memory()
    value, period = PARIS_ENDED
    claims = [(T1, value, period), (T3, {"city": "Lyon"}, {})]
    for when, said_value, extra in claims if order == "ended first" else claims[::-1]:
        said(mem, when, said_value, action="create", **extra)
        mem.consolidate()

    assert values_as_of(mem, "2017-01-01T00:00:00Z") == [{"city": "Paris"}]
    assert values_as_of(mem, "2020-01-01T00:00:00Z") == []  # between the two: nothing held
    assert [f.value for f in mem.facts(subject="alice")] == [{"city": "Lyon"}]
    assert mem.conflicts(subject="alice") == []
    paris = one(mem.facts(subject="alice", include_retired=True), value)
    assert paris.status is FactStatus.SUPERSEDED
    assert paris.valid_to == datetime.fromisoformat("2019-01-01T00:00:00+00:00")


# -- a person's decision and world time ------------------------------------------------------------
def berlin_held_against_lyon(mem: Memory) -> None:
    """Lyon from T1, Paris from T3 (trusted); then Berlin dated T2 from a less trusted
    source, late: it is held against Lyon, the version in force on its date."""
    said(mem, T1, {"city": "Lyon"}, action="create")
    said(mem, T3, {"city": "Paris"})
    mem.consolidate()
    mem.add_event(
        subject="alice",
        text="home: Berlin",
        occurred_at=T2,
        trust="semi_trusted",
        claims=[{"predicate": "home", "value": {"city": "Berlin"}, "action": "supersede"}],
    )
    mem.consolidate()


def test_keeping_a_held_claim_dated_inside_an_older_version_files_it_there(
    mem: Memory,
) -> None:
    """A less trusted claim dated inside a trusted version that was replaced since is held
    against that version. Kept by a person, it goes where arrival in world order would have
    put it: the older version ends at its date, it holds until the later version began, and
    the later version stays current. (Before, it became current and overlapped the older
    version: `as_of` served two values; then it emptied the later, trusted version.)"""
    berlin_held_against_lyon(mem)
    (held,) = mem.conflicts(subject="alice")
    berlin = one(mem.facts(subject="alice", include_retired=True), {"city": "Berlin"})
    mem.resolve_conflict(held.id, keep=berlin.id)

    assert values_as_of(mem, T2 - timedelta(days=1)) == [{"city": "Lyon"}]
    assert values_as_of(mem, T2 + timedelta(days=1)) == [{"city": "Berlin"}]
    assert values_as_of(mem, T3 + timedelta(days=1)) == [{"city": "Paris"}]
    assert [f.value for f in mem.facts(subject="alice")] == [{"city": "Paris"}]
    facts = mem.facts(subject="alice", include_retired=True)
    lyon, paris = one(facts, {"city": "Lyon"}), one(facts, {"city": "Paris"})
    berlin = one(facts, {"city": "Berlin"})
    assert (lyon.valid_from, lyon.valid_to) == (T1, T2)
    assert (berlin.valid_from, berlin.valid_to, berlin.superseded_by) == (T2, T3, paris.id)
    retimed = [e for e in mem.store.audit_for("default", lyon.id) if e.action == "retime_fact"]
    assert retimed and berlin.id in retimed[-1].reason


def test_keeping_the_older_version_a_claim_was_held_against_leaves_the_present_alone(
    mem: Memory,
) -> None:
    """The same held claim, judged wrong: the person keeps the older version it was held
    against. That version stays history as it was, the current one stays current, and the
    claim was never true (it used to supersede the current fact and leave the attribute with
    no active value)."""
    berlin_held_against_lyon(mem)
    before = versions(mem)
    (held,) = mem.conflicts(subject="alice")
    lyon = one(mem.facts(subject="alice", include_retired=True), {"city": "Lyon"})
    mem.resolve_conflict(held.id, keep=lyon.id)

    assert [f.value for f in mem.facts(subject="alice")] == [{"city": "Paris"}]
    assert values_as_of(mem, T2 + timedelta(days=1)) == [{"city": "Lyon"}]
    berlin = one(mem.facts(subject="alice", include_retired=True), {"city": "Berlin"})
    assert berlin.status is not FactStatus.CANDIDATE and berlin.valid_to == berlin.valid_from
    unchanged = [v for v in versions(mem) if "Berlin" not in v[0]]
    assert unchanged == [v for v in before if "Berlin" not in v[0]]


def test_a_pinned_version_the_kept_claim_would_end_is_left_to_its_person(mem: Memory) -> None:
    """Ending a pinned version is as refused as superseding a pinned member: nothing changes."""
    berlin_held_against_lyon(mem)
    lyon = one(mem.facts(subject="alice", include_retired=True), {"city": "Lyon"})
    mem.pin(lyon.id)
    (held,) = mem.conflicts(subject="alice")
    berlin = one(mem.facts(subject="alice", include_retired=True), {"city": "Berlin"})
    before = versions(mem)
    with pytest.raises(PinnedFact):
        mem.resolve_conflict(held.id, keep=berlin.id)
    assert versions(mem) == before


def test_keeping_a_held_claim_of_the_same_instant_as_its_version_ends_that_version(
    mem: Memory,
) -> None:
    """Blue from day 0 (semi-trusted); red, trusted, states days 0-6 and is held against it;
    green from day 18 replaces blue. A person keeps red: red ran days 0-6, and blue, which
    began at the same instant, was never true. (Blue used to keep days 0-18, and `as_of`
    served two values in the first week.)"""
    said(mem, T1, {"city": "blue"}, trust="semi_trusted")
    mem.consolidate()
    said(mem, T1, {"city": "red"}, "create", valid_from=T1, valid_to=at(days=6))
    mem.consolidate()
    said(mem, at(days=18), {"city": "green"}, "create", valid_from=at(days=18))
    mem.consolidate()
    (held,) = mem.conflicts(subject="alice")
    red = one(mem.facts(subject="alice", include_retired=True), {"city": "red"})
    mem.resolve_conflict(held.id, keep=red.id)

    assert values_as_of(mem, at(days=1)) == [{"city": "red"}]
    assert values_as_of(mem, at(days=10)) == []
    assert [f.value for f in mem.facts(subject="alice")] == [{"city": "green"}]
    blue = one(mem.facts(subject="alice", include_retired=True), {"city": "blue"})
    assert blue.valid_to == blue.valid_from == T1


def test_a_late_claim_never_relinks_a_pinned_version(mem: Memory) -> None:
    """Red on day 1, green from day 2, pinned by a person. Green stated on day 0 arrives:
    filing it would hold red against green and change the pinned green's link to what it
    replaced, which consolidation may not do (DESIGN invariant 6). It supports the pinned
    green instead; the job used to fail on every run, its event never consolidated."""
    said(mem, at(days=1), {"city": "red"}, "create")
    said(mem, at(days=2), {"city": "green"})
    mem.consolidate()
    green = one(mem.facts(subject="alice"), {"city": "green"})
    mem.pin(green.id)
    pinned, before = mem.fact(green.id), versions(mem)
    said(mem, T1, {"city": "green"}, "create")

    assert mem.consolidate().errors == []
    assert versions(mem) == before
    assert mem.fact(green.id) == pinned
    assert mem.consolidate().jobs_done == 0  # nothing left to retry


def test_a_restatement_a_person_overruled_does_not_split_its_version_again(mem: Memory) -> None:
    """Blue stated at days 1 and 10, red at day 6: a person keeps red over blue, so blue
    ends at day 6 and its day-10 statement is overruled. Red stated again at day 5 then
    starts red earlier; it does not split blue around a day-10 restatement (that left a
    superseded blue with no end beside the active red)."""
    for day, value in ((10, "blue"), (6, "red"), (1, "blue")):
        said(mem, at(days=day), {"colour": value}, action="create")
        mem.consolidate()
    (conflict,) = mem.conflicts(subject="alice")
    red = one(mem.facts(subject="alice", include_retired=True), {"colour": "red"})
    mem.resolve_conflict(conflict.id, keep=red.id)
    said(mem, at(days=5), {"colour": "red"}, action="create")
    mem.consolidate()

    facts = mem.facts(subject="alice", include_retired=True)
    assert sorted((str(f.value), f.status.value, f.valid_from, f.valid_to) for f in facts) == [
        ("{'colour': 'blue'}", "superseded", at(days=1), at(days=5)),
        ("{'colour': 'red'}", "active", at(days=5), None),
    ]


def test_a_late_claim_is_never_filed_against_a_value_a_person_turned_down(mem: Memory) -> None:
    """Green from day 2, red from day 5. A less trusted blue dated day 3 is held against
    green, and the person keeps green: blue was never true (an empty interval). Red stated
    again for day 4 then starts red at day 4 and ends green there; it used to be filed
    against blue, the last version begun by day 4, giving blue days 3-4 inside green."""
    said(mem, at(days=2), {"colour": "green"}, action="create")
    said(mem, at(days=5), {"colour": "red"})
    mem.consolidate()
    mem.add_event(
        subject="alice",
        text="colour: blue",
        occurred_at=at(days=3),
        trust="semi_trusted",
        claims=[{"predicate": "home", "value": {"colour": "blue"}, "action": "create"}],
    )
    mem.consolidate()
    (held,) = mem.conflicts(subject="alice")
    green = one(mem.facts(subject="alice", include_retired=True), {"colour": "green"})
    mem.resolve_conflict(held.id, keep=green.id)
    said(mem, at(days=4), {"colour": "red"}, action="create")
    mem.consolidate()

    spans = sorted(
        (f.valid_from, f.valid_to, f.value["colour"])
        for f in mem.facts(subject="alice", include_retired=True)
        if f.valid_to is None or f.valid_to > f.valid_from
    )
    assert spans == [(at(days=2), at(days=4), "green"), (at(days=4), None, "red")]


@pytest.mark.parametrize(
    ("late", "colour"), [(0, "blue"), (1, "blue"), (1, "white"), (2, "blue"), (5, "blue")]
)
def test_a_claim_after_the_current_value_was_retracted_is_filed_by_its_date(
    mem: Memory, late: int, colour: str
) -> None:
    """Red from day 1, green from day 3, and a person retracts green: no value is current.
    Blue then arrives dated day 0, 1, 2 or 5. Whatever its date it is never true at once with
    red (it used to be made current from its date with no end, across red's days). On red's
    own day the two are ordered by their words, as versions of one instant are: blue before
    red (blue never true), white after it (red never true)."""
    said(mem, at(days=1), {"colour": "red"}, action="create")
    said(mem, at(days=3), {"colour": "green"})
    mem.consolidate()
    (green,) = mem.facts(subject="alice")
    mem.retract(green.id, reason="wrong")
    said(mem, at(days=late), {"colour": colour})
    mem.consolidate()

    spans = sorted(
        (
            (f.valid_from, f.valid_to, f.value["colour"])
            for f in mem.facts(subject="alice", include_retired=True)
            if f.status is not FactStatus.RETRACTED
        ),
        key=lambda span: (span[0], span[1] is None, span[1] or span[0]),
    )
    expected = {
        (0, "blue"): [(at(days=0), at(days=1), "blue"), (at(days=1), at(days=3), "red")],
        (1, "blue"): [(at(days=1), at(days=1), "blue"), (at(days=1), at(days=3), "red")],
        (1, "white"): [(at(days=1), at(days=1), "red"), (at(days=1), None, "white")],
        (2, "blue"): [(at(days=1), at(days=2), "red"), (at(days=2), None, "blue")],
        (5, "blue"): [(at(days=1), at(days=3), "red"), (at(days=5), None, "blue")],
    }
    assert spans == expected[late, colour]


def test_a_version_ended_by_a_value_after_a_retraction_has_that_value_as_its_receipt(
    mem: Memory,
) -> None:
    """Green states days 2-10, red follows from day 11, and a person retracts red. Red then
    stated for days 7-20 ends green at day 7 and is its receipt (it used to stay the
    retracted red). So green stated again for days 6-16 supports green without running
    past day 7 (it reached day 16, beside red's days)."""
    said(mem, at(days=1), {"colour": "green"}, valid_from=at(days=2), valid_to=at(days=10))
    said(mem, at(days=11), {"colour": "red"})
    mem.consolidate()
    (red,) = mem.facts(subject="alice")
    mem.retract(red.id, reason="wrong")
    said(mem, at(days=7), {"colour": "red"}, "create", valid_from=at(days=7), valid_to=at(days=20))
    mem.consolidate()
    said(mem, at(days=16), {"colour": "green"}, valid_from=at(days=6), valid_to=at(days=16))
    mem.consolidate()

    facts = mem.facts(subject="alice", include_retired=True)
    green = one(facts, {"colour": "green"})
    (new_red,) = [f for f in facts if f.status is FactStatus.ACTIVE]
    assert (green.valid_from, green.valid_to) == (at(days=2), at(days=7))
    assert (green.superseded_by, new_red.supersedes_id) == (new_red.id, green.id)
    assert values_as_of(mem, at(days=12)) == [{"colour": "red"}]


def test_a_version_a_kept_claim_ends_has_it_as_its_receipt(mem: Memory) -> None:
    """Green from day 14, blue from day 19; an untrusted yellow dated day 17 is held
    against green and a person keeps it: green ends at day 17, superseded by the kept yellow
    (it used to name the day-19 blue). A red stated for days 8-18 that arrives next is filed
    before green and ends where the kept yellow begins, not at day 18 beside it. (An
    untrusted blue of day 17 is not held: in order the day-19 change adopted it.)"""
    said(mem, at(days=14), {"colour": "green"}, "create")
    said(mem, at(days=19), {"colour": "blue"})
    mem.consolidate()
    said(mem, at(days=17), {"colour": "yellow"}, trust="untrusted")
    mem.consolidate()
    (held,) = mem.conflicts(subject="alice")
    kept = next(m for m in held.member_ids if mem.fact(m).status is FactStatus.CANDIDATE)
    mem.resolve_conflict(held.id, keep=kept)
    green = one(mem.facts(subject="alice", include_retired=True), {"colour": "green"})
    assert (green.valid_to, green.superseded_by) == (at(days=17), kept)

    said(mem, at(days=11), {"colour": "red"}, "create", valid_from=at(days=8), valid_to=at(days=18))
    mem.consolidate()
    assert values_as_of(mem, at(days=17.5)) == [{"colour": "yellow"}]
    red = one(mem.facts(subject="alice", include_retired=True), {"colour": "red"})
    assert red.valid_to is not None and red.valid_to <= at(days=17)


def test_a_version_a_person_set_aside_at_its_own_instant_is_never_filed_against(
    mem: Memory,
) -> None:
    """Red from day 9, blue from day 18. An untrusted green stated for days 9-21 is held
    against red, and a person keeps it: green holds days 9-18, and red, of the same instant,
    was never true (superseded by green). A red stated on day 13 is then filed inside
    green, not after the empty red, which sorts after green by its words (it used to become
    a version of days 13-18 beside green)."""
    said(mem, at(days=9), {"colour": "red"}, "create")
    said(mem, at(days=18), {"colour": "blue"})
    mem.consolidate()
    period = {"valid_from": at(days=9), "valid_to": at(days=21)}
    said(mem, at(days=10), {"colour": "green"}, trust="untrusted", **period)
    mem.consolidate()
    (held,) = mem.conflicts(subject="alice")
    green = next(m for m in held.member_ids if mem.fact(m).status is FactStatus.CANDIDATE)
    mem.resolve_conflict(held.id, keep=green)
    said(mem, at(days=13), {"colour": "red"}, "create")
    mem.consolidate()

    for day in (9.5, 13.5, 17.5):
        assert len(values_as_of(mem, at(days=day))) == 1, day
    assert values_as_of(mem, at(days=9.5)) == [{"colour": "green"}]


def test_a_stated_end_stops_at_the_next_version_not_at_a_retracted_receipt(mem: Memory) -> None:
    """Blue from day 5, green from day 10, which a person retracts; red from day 12. Blue
    stated for days 4-18 moves blue's start to day 4 and ends it where red begins: its
    receipt, the retracted green, bounds nothing (blue used to run to day 18 beside red)."""
    said(mem, at(days=5), {"colour": "blue"})
    said(mem, at(days=10), {"colour": "green"})
    mem.consolidate()
    (green,) = mem.facts(subject="alice")
    mem.retract(green.id, reason="wrong")
    said(mem, at(days=12), {"colour": "red"}, "create")
    mem.consolidate()
    said(mem, at(days=4), {"colour": "blue"}, "create", valid_from=at(days=4), valid_to=at(days=18))
    mem.consolidate()

    assert values_as_of(mem, at(days=4.5)) == [{"colour": "blue"}]
    assert values_as_of(mem, at(days=14)) == [{"colour": "red"}]
    blue = one(mem.facts(subject="alice", include_retired=True), {"colour": "blue"})
    assert blue.valid_to is not None and blue.valid_to <= at(days=12)


def test_keeping_a_held_claim_that_ended_before_the_current_fact_leaves_it_current(
    mem: Memory,
) -> None:
    """Green from day 7. An untrusted red stated for days 3-6 is held against green (it is
    never served unless a person says so), and a person keeps red: red was true on days 3-6
    and green is still current, since the two never met (green used to get an empty
    interval, and red, ended, left nothing current)."""
    said(mem, at(days=7), {"colour": "green"}, "create")
    mem.consolidate()
    period = {"valid_from": at(days=3), "valid_to": at(days=6)}
    said(mem, at(days=3), {"colour": "red"}, "create", "untrusted", **period)
    mem.consolidate()
    (held,) = mem.conflicts(subject="alice")
    red = one(mem.facts(subject="alice", include_retired=True), {"colour": "red"})
    mem.resolve_conflict(held.id, keep=red.id)

    assert [f.value for f in mem.facts(subject="alice")] == [{"colour": "green"}]
    assert values_as_of(mem, at(days=4)) == [{"colour": "red"}]
    assert values_as_of(mem, at(days=8)) == [{"colour": "green"}]
    green = one(mem.facts(subject="alice", include_retired=True), {"colour": "green"})
    assert mem.fact(red.id).superseded_by == green.id


def test_a_less_trusted_value_that_ended_before_the_current_one_is_history(
    mem: Memory,
) -> None:
    """Green from day 7, then a semi-trusted red stated for days 3-6: in world order red
    came first and had ended when green began, so green displaced nothing and nothing was
    held. Late, red is filed into history before green, with no question for a person
    (until session 53 it was held against green)."""
    said(mem, at(days=7), {"colour": "green"}, "create")
    mem.consolidate()
    period = {"valid_from": at(days=3), "valid_to": at(days=6)}
    said(mem, at(days=3), {"colour": "red"}, "create", "semi_trusted", **period)
    mem.consolidate()

    assert mem.conflicts(subject="alice") == []
    assert [f.value for f in mem.facts(subject="alice")] == [{"colour": "green"}]
    assert values_as_of(mem, at(days=4)) == [{"colour": "red"}]
    assert values_as_of(mem, at(days=6)) == []


def test_a_restatement_earlier_in_the_job_is_split_by_a_change_dated_before_it(
    mem: Memory,
) -> None:
    """Green from day 13 (one statement, consolidated). One job then holds green again on
    day 37 and, told on day 40, blue for days 27-36: green is restated first (by the time
    it was told), blue falls inside green before that restatement, so green splits: days
    13-27, blue to 36, green again from 37. Until session 44 the restatement was not on
    record for the job (green had one statement when it was loaded) and blue simply ended
    green: nothing was current after day 36."""
    said(mem, at(days=13), {"colour": "green"}, "create")
    mem.consolidate()
    said(mem, at(days=37), {"colour": "green"})
    period = {"valid_from": at(days=27), "valid_to": at(days=36)}
    said(mem, at(days=40), {"colour": "blue"}, "create", **period)
    mem.consolidate()
    assert values_as_of(mem, at(days=20)) == [{"colour": "green"}]
    assert values_as_of(mem, at(days=30)) == [{"colour": "blue"}]
    assert values_as_of(mem, at(days=38)) == [{"colour": "green"}]


def test_a_split_leaves_the_restated_statements_with_the_restated_part(mem: Memory) -> None:
    """A semi-trusted green from day 18, restated by the person as a change on day 200. One
    job then holds a semi-trusted change to blue for days 27-31 (it splits green: days 18-27,
    blue, green again from day 200) and the person's change to red of day 12. Until session
    45 the first part of green kept the person's day-200 statement on record within the job,
    so red read it as the change that adopted green's first statements and moved that part's
    start to day 200, after its end: red and blue were then true at once."""
    said(mem, at(days=18), {"colour": "green"}, "create", trust="semi_trusted")
    said(mem, at(days=200), {"colour": "green"})
    mem.consolidate()
    period = {"valid_from": at(days=27), "valid_to": at(days=31)}
    said(mem, at(days=4), {"colour": "blue"}, trust="semi_trusted", **period)
    said(mem, at(days=12), {"colour": "red"})
    mem.consolidate()
    every = mem.facts(subject="alice", include_retired=True)
    assert all(f.valid_to is None or f.valid_from <= f.valid_to for f in every)
    for day in (15, 20, 29, 250):
        assert len(values_as_of(mem, at(days=day))) == 1, day
    assert values_as_of(mem, at(days=29)) == [{"colour": "blue"}]
    assert values_as_of(mem, at(days=100)) == []  # blue's stated end, before green again
    assert values_as_of(mem, at(days=250)) == [{"colour": "green"}]
