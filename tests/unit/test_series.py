"""A third distinct value, in any order: the held values of a series become dated events.

In world order the values that follow a version go in pairs (`distill.core.series`): the
first is held against the version, the second makes both dated events, the third is held
again. Late news reached that state only on the in-order path until session 57: a late
first value or a late value between two events opened a second value conflict, or held a
value that world order had made an event, and a late change inside a series left the
values after it as events of the old version's series. So `python
scripts/order_search.py --four 240` found 48 of 240 histories of four claims that end
differently in some order (42 at the end of session 57). The first eleven tests fail on the
code before (6975a06), but the occurrence's.

Session 58 took the rest of the series in: a statement of a value the series made an
event of restates that event, a change to it makes it the version, and a late first value
of it is that version; and, around it, four rules for a late first value or change that
meet returns and held values (`core/returns.py`, `LateArrivals`). `--four 240` finds 2 now.
Every test added then fails on the code before it (7f82373)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from distill import Memory
from distill.adapters.embed.hashing import HashingEmbedder
from distill.core.models import ConflictKind, ConflictStatus, FactKind, FactStatus, Outcome
from tests.unit.test_late_edges import in_one_run, told_gp
from tests.unit.test_one_name_order import assert_any_order_as_in_order, ending, history
from tests.unit.test_properties import TickingClock, day, fresh_memory


def series(values: str, actions: str = "") -> Any:
    """One trusted claim a day about `gp`; `actions` spells each claim's action (c or s)."""
    spelled = actions or "c" * len(values)
    chosen = tuple("create" if a == "c" else "supersede" for a in spelled)
    return history(values, chosen, ("trusted",) * len(values))


def served(order: list[int], values: str, actions: str = "") -> dict[str, Any]:
    """What a reader sees at the end: each value's kind and status, and the open sets."""
    claims = series(values, actions)
    with Memory(
        ":memory:", embedder=HashingEmbedder(256), clock=TickingClock(), max_distance=0.0
    ) as mem:
        for index in order:
            mem.add_event(**claims[index].event())
            mem.consolidate()
        facts = {f.id: f for f in mem.facts(subject="alice", include_retired=True)}
        return {
            "facts": sorted(
                (f.value["v"], f.kind.value, f.status.value) for f in facts.values() if f.value
            ),
            "sets": sorted(
                (c.kind.value, tuple(sorted(facts[m].value["v"] for m in c.member_ids)))
                for c in mem.conflicts(subject="alice", status=ConflictStatus.OPEN)
            ),
        }


# `a` the current value, `b` and `c` two values of its series kept as dated events.
A_AND_TWO_EVENTS = {
    "facts": [
        ("a", FactKind.STATE, FactStatus.ACTIVE),
        ("b", FactKind.EVENT, FactStatus.ACTIVE),
        ("c", FactKind.EVENT, FactStatus.ACTIVE),
    ],
    "sets": [],
}


def test_a_late_value_between_two_events_is_an_event_and_the_latest_is_held() -> None:
    """`b`, `c`, `d` after `a`: in order `b` is held, `c` makes both events, `d` is held.
    Here `c` arrives last, after `d` made `b` and `d` events: `c` is an event, `d` is held
    again (it was held against `a` as a new conflict of its own)."""
    assert served([0, 1, 3, 2], "abcd") == {
        "facts": [
            ("a", FactKind.STATE, FactStatus.ACTIVE),
            ("b", FactKind.EVENT, FactStatus.ACTIVE),
            ("c", FactKind.EVENT, FactStatus.ACTIVE),
            ("d", FactKind.STATE, FactStatus.CANDIDATE),
        ],
        "sets": [(ConflictKind.CONFLICT, ("a", "d"))],
    }


def test_an_observation_says_its_value_was_made_an_event() -> None:
    """The late `c` of the test above is held and then made an event in one decision: its
    observation says `reclassified`, not `conflict` (it said `conflict` until session 58)."""
    claims = series("abcd")
    with Memory(
        ":memory:", embedder=HashingEmbedder(256), clock=TickingClock(), max_distance=0.0
    ) as mem:
        for index in (0, 1, 3, 2):
            mem.add_event(**claims[index].event())
            report = mem.consolidate()
        (fact,) = [f for f in mem.facts(subject="alice") if f.value == {"v": "c"}]
        (seen,) = [o for o in mem.history(fact.id).observations if o.fact_id == fact.id]
    assert (report.counters()["reclassified"], report.counters()["conflict"]) == (1, 0)
    assert seen.outcome is Outcome.RECLASSIFIED


def test_a_late_first_value_that_holds_a_second_value_makes_a_series() -> None:
    """`b` came first and was replaced by `a` on day 2, and `c` was held against `a`. The
    first statement of `a` (day 0) arrives last: `b` was a value held against `a`, not a
    version, and with `c` held too that is a third distinct value, as in order: `b` and `c`
    are events, and no value conflict is open."""
    assert served([1, 2, 3, 0], "abac", "ccsc") == A_AND_TWO_EVENTS


def test_a_late_change_inside_a_series_splits_it() -> None:
    """`b` was held against `a` and `d` made both events; then the change to `c` of day 2
    arrives. In order `b` was held against `a` and `d` against `c`: each version's series
    is its own, one value each, so each is held, not an event."""
    assert served([0, 1, 3, 2], "abcd", "ccsc") == {
        "facts": [
            ("a", FactKind.STATE, FactStatus.SUPERSEDED),
            ("b", FactKind.STATE, FactStatus.CANDIDATE),
            ("c", FactKind.STATE, FactStatus.ACTIVE),
            ("d", FactKind.STATE, FactStatus.CANDIDATE),
        ],
        "sets": [(ConflictKind.CONFLICT, ("a", "b")), (ConflictKind.CONFLICT, ("c", "d"))],
    }


def test_an_occurrence_is_no_value_of_a_series() -> None:
    """An event claimed as one (`kind: event`) is not a value of the series: a late value
    dated before it is held against the version, as in order."""

    def play(order: list[int]) -> Any:
        events: list[dict[str, Any]] = [
            {"value": "a", "day": 0},
            {"value": "b", "day": 2, "kind": "event"},
            {"value": "c", "day": 1},
        ]
        with Memory(
            ":memory:", embedder=HashingEmbedder(256), clock=TickingClock(), max_distance=0.0
        ) as mem:
            for index in order:
                said = events[index]
                claim = {"predicate": "gp", "value": {"v": said["value"]}, "action": "create"}
                if "kind" in said:
                    claim["kind"] = said["kind"]
                mem.add_event(
                    subject="alice",
                    text=f"gp is {said['value']}",
                    occurred_at=day(said["day"]),
                    idempotency_key=f"e{index}",
                    claims=[claim],
                )
                mem.consolidate()
            held = [
                sorted(mem.fact(m).value["v"] for m in c.member_ids)
                for c in mem.conflicts(subject="alice", status=ConflictStatus.OPEN)
            ]
            kinds = sorted((f.value["v"], f.kind.value) for f in mem.facts(subject="alice"))
            return held, kinds

    expected = ([["a", "c"]], [("a", "state"), ("b", "event")])
    assert play([0, 1, 2]) == expected
    assert play([0, 2, 1]) == expected


def test_a_value_the_series_made_an_event_of_is_restated_not_held_again() -> None:
    """`b` and `c` became events after `a`; a later `b` restates the event `b` (as it does
    when it arrives before the values that made it one), not a fourth value held against
    `a`; so does a later `c`."""
    assert served([0, 1, 2, 3], "abcb") == A_AND_TWO_EVENTS
    assert served([0, 1, 2, 3], "abcc") == A_AND_TWO_EVENTS


def test_an_event_restated_late_is_dated_from_its_first_statement() -> None:
    """`c` of day 3 arrives before `c` of day 2 and becomes the event; `c` of day 2 then
    restates it, and the event says it was stated on day 2, as in order."""
    claims = series("abcc")
    with Memory(
        ":memory:", embedder=HashingEmbedder(256), clock=TickingClock(), max_distance=0.0
    ) as mem:
        for index in (0, 1, 3, 2):
            mem.add_event(**claims[index].event())
            mem.consolidate()
        (event,) = [f for f in mem.facts(subject="alice") if f.value == {"v": "c"}]
    assert (event.kind, event.valid_from, event.reinforcement_count) == (FactKind.EVENT, day(2), 1)
    assert event.text.endswith(f"(stated {day(2).date().isoformat()})")


def test_a_change_to_a_value_the_series_made_an_event_of_began_when_it_was_stated() -> None:
    """`b` and `c` became events after `a`; then a change to `c` (day 3). The change began
    when `c` was first stated (day 2), as it does when it arrives first and `c` restates it:
    `c` is the version from day 2, and `b`, the one value of `a`'s series before it, is held
    against `a`."""
    assert served([0, 1, 2, 3], "abcc", "cccs") == {
        "facts": [
            ("a", FactKind.STATE, FactStatus.SUPERSEDED),
            ("b", FactKind.STATE, FactStatus.CANDIDATE),
            ("c", FactKind.STATE, FactStatus.ACTIVE),
        ],
        "sets": [(ConflictKind.CONFLICT, ("a", "b"))],
    }
    # A change back to `b`: `b` is the version from day 1, and `c` is held against it.
    assert served([0, 1, 2, 3], "abcb", "cccs") == {
        "facts": [
            ("a", FactKind.STATE, FactStatus.SUPERSEDED),
            ("b", FactKind.STATE, FactStatus.ACTIVE),
            ("c", FactKind.STATE, FactStatus.CANDIDATE),
        ],
        "sets": [(ConflictKind.CONFLICT, ("b", "c"))],
    }


def test_a_late_first_value_is_restated_by_an_event_of_its_value() -> None:
    """`b`, `a` (day 2) and `c` arrive first: `b` is the version, and `a` and `c`, a second
    and a third value, are events. Then `a` of day 0: in order it came first and `a` of day
    2 restated it, so that event is the version `a` from day 0, and `b` and `c` are the two
    values of its series, both events, as in order."""
    assert served([1, 2, 3, 0], "abac") == A_AND_TWO_EVENTS
    assert served([0, 1, 2, 3], "abac") == A_AND_TWO_EVENTS


def test_an_event_a_late_first_value_shows_to_be_a_return_is_the_version() -> None:
    """`b` (a change), `a` (day 2) and `c` arrive first: `b` is the version, and `a` and `c`
    are events of its series. Then `a` of day 0, which `b` replaced: `a` of day 2 was a
    return to it, as in order, so it is the version from day 2 and `c` is held against
    it."""
    expected = {
        "facts": [
            ("a", FactKind.STATE, FactStatus.ACTIVE),
            ("a", FactKind.STATE, FactStatus.SUPERSEDED),
            ("b", FactKind.STATE, FactStatus.SUPERSEDED),
            ("c", FactKind.STATE, FactStatus.CANDIDATE),
        ],
        "sets": [(ConflictKind.CONFLICT, ("a", "c"))],
    }
    assert served([1, 2, 3, 0], "abac", "cscc") == expected
    assert served([0, 1, 2, 3], "abac", "cscc") == expected


def test_a_late_first_value_before_a_replaced_create_takes_its_series() -> None:
    """`b`, `c` and the change to `d` (day 3) arrive first: `b` is replaced by `d`, and `c`
    is held against `b`. Then `a` of day 0: in order `b` was held against it and `c` was a
    third value, so both are events and `a` is what `d` replaced."""
    assert served([1, 2, 3, 0], "abcd", "cccs") == {
        "facts": [
            ("a", FactKind.STATE, FactStatus.SUPERSEDED),
            ("b", FactKind.EVENT, FactStatus.ACTIVE),
            ("c", FactKind.EVENT, FactStatus.ACTIVE),
            ("d", FactKind.STATE, FactStatus.ACTIVE),
        ],
        "sets": [],
    }


def test_a_late_change_to_a_held_value_adopts_it_inside_an_older_version() -> None:
    """`b` held against `a`, then the change to `c` (day 3); the change to `b` of day 2
    arrives last. In order it adopted the held `b` (a version from day 1, as
    `Rivals._adopt` makes it), which `c` then replaced: no `b` is left held."""
    assert served([0, 1, 3, 2], "abbc", "ccss") == {
        "facts": [
            ("a", FactKind.STATE, FactStatus.SUPERSEDED),
            ("b", FactKind.STATE, FactStatus.SUPERSEDED),
            ("c", FactKind.STATE, FactStatus.ACTIVE),
        ],
        "sets": [],
    }


def test_a_return_to_a_value_that_was_only_held_is_undone() -> None:
    """`b` (day 1), the change to `c` and `b` again (day 3) arrive first: the second `b`
    returns to the first. Then `a` of day 0: the first `b` was only held against it, so
    the second `b` had nothing to return to and is held against `c`, as in order."""
    assert served([1, 2, 3, 0], "abcb", "ccsc") == {
        "facts": [
            ("a", FactKind.STATE, FactStatus.SUPERSEDED),
            ("b", FactKind.STATE, FactStatus.CANDIDATE),
            ("b", FactKind.STATE, FactStatus.CANDIDATE),
            ("c", FactKind.STATE, FactStatus.ACTIVE),
        ],
        "sets": [(ConflictKind.CONFLICT, ("a", "b")), (ConflictKind.CONFLICT, ("b", "c"))],
    }


def test_a_late_first_value_is_the_value_held_since_that_restated_it() -> None:
    """`b`, `a` (day 2) and the change to `c` arrive first: `b` is the version that `c`
    replaced, `a` is held against it. Then `a` of day 0: in order `b` was held against it
    and `a` of day 2 restated it, so that is the version from day 0, `b` is held against
    it, and nothing returned to `a` on day 2."""
    assert served([1, 2, 3, 0], "abac", "cccs") == {
        "facts": [
            ("a", FactKind.STATE, FactStatus.SUPERSEDED),
            ("b", FactKind.STATE, FactStatus.CANDIDATE),
            ("c", FactKind.STATE, FactStatus.ACTIVE),
        ],
        "sets": [(ConflictKind.CONFLICT, ("a", "b"))],
    }


# The histories of `--four 240` that ended differently in some order at 6975a06 and end as
# in order now (values a day apart; c = create, s = supersede).
FOUR = [
    ("abac", "ccsc"),
    ("abac", "scsc"),
    ("abcd", "cccc"),
    ("abcd", "sccc"),
    ("abcd", "ccsc"),
    ("abcd", "scsc"),
]
# And those that end as in order since session 58, one for each of its rules.
FOUR += [
    ("abcb", "cccc"),  # a restatement of an event's value
    ("abcc", "cccs"),  # a change to an event's value
    ("abac", "cccc"),  # a late first value that an event restated
    ("abac", "cscc"),  # an event that a late first value shows to be a return
    ("abcd", "cccs"),  # a late first value before a replaced create and its series
    ("abbc", "ccss"),  # a late change to a held value inside an older version
    ("abcb", "ccsc"),  # a return to a value that was only held
    ("abcd", "cscs"),  # a late change's later rivals, inside an older version
    ("abac", "cscs"),  # a return held against a version replaced since
    ("abac", "cccs"),  # a late first value before a replaced create, restated since
]


@pytest.mark.parametrize(("values", "actions"), FOUR, ids=lambda p: p)
def test_every_order_of_these_four_claims_ends_as_in_order(values: str, actions: str) -> None:
    assert_any_order_as_in_order(series(values, actions))


def test_a_series_settled_late_leaves_a_value_a_person_kept() -> None:
    """Hygiene seed 1708775, with one name: the person's `c` (day 28), a semi-trusted `e`
    (day 29) held against it, and a person keeps `c`; the person's `d` (day 60) is held in
    conflict against `c`; then, in one run, the person's change to `e` (day 11) and `d` for
    days 14-16 (said on day 11). The late values make a series of `c`'s, and settling it
    (`Series._settle_series`) held `c` again as its latest value until session 60: a rule
    undid a person's decision. A series holding a kept value is left as it is, as one
    holding a pinned value is."""
    with fresh_memory() as mem:
        in_one_run(
            mem,
            told_gp(0, 28, "c", "trusted", "create"),
            told_gp(1, 29, "e", "semi_trusted", "create"),
        )
        (held,) = mem.conflicts(subject="alice")
        (kept,) = [m for m in held.member_ids if mem.fact(m).value == {"v": "c"}]
        mem.resolve_conflict(held.id, keep=kept)
        in_one_run(mem, told_gp(2, 60, "d", "trusted", "create"))
        in_one_run(
            mem,
            told_gp(3, 11, "e", "trusted", "supersede"),
            told_gp(4, 11, "d", "trusted", "create", period=(14, 16)),
        )
        assert mem.fact(kept).status is not FactStatus.CANDIDATE


def test_a_long_series_ends_as_in_order() -> None:
    """Six values, a day apart, all creates: `b c`, `d e` are pairs of events and `f` is
    held. 600 of its 720 orders ended otherwise at 6975a06; 40 of them, and world order."""
    claims = series("abcdef")
    expected = ending(claims, list(range(6)))
    orders = [list(range(6))]
    for _ in range(40):
        order = list(range(6))
        random.Random(len(orders)).shuffle(order)
        orders.append(order)
    for order in orders:
        assert ending(claims, order) == expected, order
