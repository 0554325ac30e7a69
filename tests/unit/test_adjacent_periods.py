"""A stated period that ends on the day the next version begins: the two stay apart, late too.

"a from day 0 to day 10", then `a` again from day 10: in order the second statement comes
after the first one's stated end, so it begins a version of its own (`Adjudicator._state`:
the version had ended by then). Told late, the period was taken for an earlier start of the
version that follows it when the values were equal, and the two merged into one version of
days 0 to 20; a set holding that version then held the merged fact, the ended one, instead of
the one still current. `python scripts/order_search.py --periods --adjacent` (each period
ten days long, so it ends on the next claim's day) found 12 of its 95 histories ending
differently in some order; the late path now keeps such a claim apart as order does
(`LateArrivals._file_late`, `apart`), and the search finds none.
"""

from __future__ import annotations

import itertools

import pytest

from distill.core.models import FactStatus
from tests.unit.test_after_a_stated_end import said as stated
from tests.unit.test_one_name_order import assert_any_order_as_in_order
from tests.unit.test_properties import Claim, day, fresh_memory, ingest


def said(spec: str) -> list[Claim]:
    """The claims of `spec` (`test_after_a_stated_end.said`), each period ten days long."""
    return stated(spec, length=10)


def test_a_late_period_of_the_same_value_ends_where_the_next_version_begins() -> None:
    """`a` for days 0-10, `a` for days 10-20 and `a` from day 20: three versions in every
    order, as in world order (told last, the first period was merged into the second, one
    version of days 0 to 20 with both statements)."""
    claims = said("a:create/period a:create/period a:create@20")
    for order in itertools.permutations(range(3)):
        with fresh_memory() as mem:
            ingest(mem, claims, list(order))
            facts = mem.facts(subject="alice", include_retired=True)
            got = sorted(
                (f.valid_from, f.valid_to, f.status, len(f.source_event_ids)) for f in facts
            )
            assert got == [
                (day(0), day(10), FactStatus.SUPERSEDED, 1),
                (day(10), day(20), FactStatus.SUPERSEDED, 1),
                (day(20), None, FactStatus.ACTIVE, 1),
            ], order


def test_a_set_holds_the_version_in_force_after_a_late_adjacent_period() -> None:
    """`a` from day 10 and a `create` of `b` on day 20 are held in conflict; `a` for days 0-10
    told last leaves the set holding the current `a`, not the period's ended one."""
    claims = said("a:create/period a:create@10 b:create@20")
    for order in itertools.permutations(range(3)):
        with fresh_memory() as mem:
            ingest(mem, claims, list(order))
            (current,) = mem.facts(subject="alice")
            assert (current.value["v"], current.valid_from) == ("a", day(10)), order
            (conflict,) = mem.conflicts(subject="alice")
            assert current.id in conflict.member_ids, order


# The 12 histories `--periods --adjacent` found at 2481e0a, one per line of its `--show`.
FOUND = [
    "a:create/period a:create/period a:create@20",
    "a:create/period a:create/period a:supersede@20",
    "a:create/period a:create/period a:create/period",
    "a:create/period a:create@10 b:create@20",
    "a:create/period a:create@10 b:supersede@20",
    "a:create/period a:create@10 b:create/period",
    "a:create/period a:supersede@10 b:create@20",
    "a:create/period a:supersede@10 b:supersede@20",
    "a:create/period a:supersede@10 b:create/period",
    "a:create/period a:create/period b:create@20",
    "a:create/period a:create/period b:supersede@20",
    "a:create/period a:create/period b:create/period",
]


@pytest.mark.parametrize("spec", FOUND)
def test_every_order_ends_as_in_world_order(spec: str) -> None:
    assert_any_order_as_in_order(said(spec))


# With two trust levels (`--trust-periods --adjacent`: 150 of 570 at 2481e0a), one history
# for each rule changed. Equal ends are ambiguous: a change ends the version it replaces
# where it begins, too. So whether a version's end was its own (a statement stated it) is
# read from its statements (`TrustOrder._ended_of_itself`), which a job loads for a version
# that ended where a less trusted one began (`passes.adjudication._support`).
TWO_TRUST_LEVELS = [
    # the same value after a stated end begins a version of its own, late as in order
    "a:create/period a:create@10 b:create@20/third_party",
    "a:create/period/third_party a:create/period b:create/period",
    # what follows a stated end is a first value again, which a more trusted create holds
    # in quarantine, in order too (`_less_trusted_before`)
    "a:create/period b:create@10/third_party c:create@20",
    "a:create/period/third_party b:create@10/third_party c:create@20",
    "a:create/period/third_party a:create@10/third_party b:create@20",
    # a held value keeps the end it stated when a late value holds it (`_before_replaced_create`),
    # and a late value holds a less trusted one in quarantine, not in a value conflict, as
    # in order (`TrustOrder._held_as`; the search did not compare the kinds of sets then)
    "a:create@0 b:create/period/third_party c:supersede@20",
    # an end only a third party stated is void once the person restates the version: their
    # `create` on that end's day met it in force (`_end_voided`)
    "a:create@0 a:create/period/third_party b:create@20",
]


@pytest.mark.parametrize("spec", TWO_TRUST_LEVELS)
def test_every_order_ends_as_in_world_order_with_two_trust_levels(spec: str) -> None:
    assert_any_order_as_in_order(said(spec))
