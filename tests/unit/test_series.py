"""A third distinct value, in any order: the held values of a series become dated events.

In world order the values that follow a version go in pairs (`distill.core.series`): the
first is held against the version, the second makes both dated events, the third is held
again. Late news reached that state only on the in-order path until session 57: a late
first value or a late value between two events opened a second value conflict, or held a
value that world order had made an event, and a late change inside a series left the
values after it as events of the old version's series. So `python
scripts/order_search.py --four 240` found 48 of 240 histories of four claims that end
differently in some order (42 now). Every test here but the occurrence's fails on the code
before (6975a06)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from distill import Memory
from distill.adapters.embed.hashing import HashingEmbedder
from distill.core.models import ConflictKind, ConflictStatus, FactKind, FactStatus
from tests.unit.test_one_name_order import assert_any_order_as_in_order, ending, history
from tests.unit.test_properties import TickingClock, day


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


def test_a_late_first_value_that_holds_a_second_value_makes_a_series() -> None:
    """`b` came first and was replaced by `a` on day 2, and `c` was held against `a`. The
    first statement of `a` (day 0) arrives last: `b` was a value held against `a`, not a
    version, and with `c` held too that is a third distinct value, as in order: `b` and `c`
    are events, and no value conflict is open."""
    assert served([1, 2, 3, 0], "abac", "ccsc") == {
        "facts": [
            ("a", FactKind.STATE, FactStatus.ACTIVE),
            ("b", FactKind.EVENT, FactStatus.ACTIVE),
            ("c", FactKind.EVENT, FactStatus.ACTIVE),
        ],
        "sets": [],
    }


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


@pytest.mark.parametrize(("values", "actions"), FOUR, ids=lambda p: p)
def test_every_order_of_these_four_claims_ends_as_in_order(values: str, actions: str) -> None:
    assert_any_order_as_in_order(series(values, actions))


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
