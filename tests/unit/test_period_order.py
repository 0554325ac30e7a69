"""DESIGN invariant 8 with stated periods: values said to hold from one date to another.

A claim may state when its value held (`valid_from` and `valid_to`, told later: "I lived in
Paris from 2015 to 2019"). Such a version ends at its stated end, and what comes after it
was never true at the same time: a different value dated after the end follows it without
a conflict, and the same value stated after the end begins a version of its own (a return
after a gap). These histories of three claims about one attribute (a value told on the day
it held, the same as a change, or a period of five days told later) end the same in every
arrival order; each used to end elsewhere in some order.

`python scripts/order_search.py --periods` plays every such history (95: values a, b, c up
to renaming, at least one period) and counts those that still differ (README, "Known
limits").
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.unit.test_one_name_order import assert_any_order_as_in_order
from tests.unit.test_properties import Claim, day

TOLD_LATER = 40  # the day periods are told on: after every period and every other claim


def claims(spec: str) -> list[Claim]:
    """`a:point b:period ...`: the i-th claim is about day 10·i (a period: days 10·i to
    10·i + 5, told on day 40)."""
    out = []
    for i, item in enumerate(spec.split()):
        value, shape = item.split(":")
        start = day(10 * i)
        common = {"predicate": "home", "value": value, "action": "create"}
        if shape == "period":
            told = day(TOLD_LATER) + timedelta(minutes=i)
            period = (start, start + timedelta(days=5))
            out.append(Claim(f"e{i}", "alice", told, period=period, **common))
        else:
            action = "supersede" if shape == "change" else "create"
            out.append(Claim(f"e{i}", "alice", start, **common | {"action": action}))
    return out


@pytest.mark.parametrize(
    "spec",
    [
        # One value: periods with gaps between them stay apart; a value said inside a period
        # joins it, one said after its end begins a version of its own.
        "a:period a:period a:period",
        "a:point a:period a:point",
        "a:point a:period a:period",
        "a:period a:point a:point",
        # A different value after a period's end follows it: held in conflict with the open
        # value when it came first, it is taken out of the conflict by the stated end.
        "a:point a:period b:point",
        "a:point a:period b:change",
        # A value told in the gap after a period is the first since it ended.
        "a:period a:point b:point",
        "a:period b:point c:point",
        # A return to a value after its period ended is a return, in any order.
        "a:period b:point a:point",
        "a:period b:change a:point",
        "a:period b:period a:period",
        # A change stated as a period, arriving after a value dated after its end was held
        # against the value before: that value follows the period, it is not adopted by it.
        "a:point b:period b:point",
        "a:change b:period c:point",
    ],
)
def test_a_history_with_stated_periods_ends_the_same_in_every_order(spec: str) -> None:
    assert_any_order_as_in_order(claims(spec))
