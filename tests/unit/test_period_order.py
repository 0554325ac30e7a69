"""DESIGN invariant 8 with stated periods: values said to hold from one date to another.

A claim may state when its value held (`valid_from` and `valid_to`, told later: "I lived in
Paris from 2015 to 2019"). Such a version ends at its stated end, and what comes after it
was never true at the same time: a different value dated after the end follows it without
a conflict, and the same value stated after the end begins a version of its own (a return
after a gap). Every history of three claims about one attribute (a value told on the day
it held, the same as a change, or a period of five days told later; values a, b, c up to
renaming; at least one period: 95) ends the same in every arrival order.
`python scripts/order_search.py --periods` plays the same histories and counts those that
differ.
"""

from __future__ import annotations

import itertools
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


# Three values up to renaming, each told on its day (a point, or a change) or as a period
# told later: the 95 histories with at least one period.
SPECS = [
    " ".join(f"{v}:{shape}" for v, shape in zip(values, shapes, strict=True))
    for values in ("aaa", "aab", "aba", "abb", "abc")
    for shapes in itertools.product(("point", "change", "period"), repeat=3)
    if "period" in shapes
]


@pytest.mark.parametrize("spec", SPECS)
def test_a_history_with_stated_periods_ends_the_same_in_every_order(spec: str) -> None:
    """Every one of the 95 in its six orders (77 ended elsewhere in some order at 48c9434).
    The rules they needed, by example:
    - one value: periods with gaps between them stay apart; a value said inside a period
      joins it, one said after its end begins a version of its own
      (`a:point a:period a:point`);
    - a different value after a period's end follows it: held in conflict with the open
      value when it came first, the stated end takes it out of the conflict
      (`a:point a:period b:point`);
    - a value told in the gap after a period is the first since it ended
      (`a:period b:point c:point`);
    - a return to a value after its period ended is a return (`a:period b:change a:point`);
    - a change stated as a period, arriving after a value dated after its end was held
      against the value before: that value follows the period, it is not adopted by it
      (`a:change b:period c:point`)."""
    assert_any_order_as_in_order(claims(spec))
