"""Which kind of set holds a less trusted value: the same in every arrival order.

A value held against the current one is held in a value conflict when their sources stand
level (nobody knows which is right: both are served contested) and in quarantine when its
source yields to the current value's (the current value is served as it is). Two
rules decide the kind the same way in every order now:

* a set opened by a late value is a quarantine when the value it holds is less trusted
  than that late value, as it is when the late value comes first
  (`TrustOrder._held_as`: a value dated before a less trusted current one, or before a
  less trusted version a change replaced);
* a value conflict becomes a quarantine once a restatement makes one member more trusted
  than all the others: in order, a value said after that restatement is quarantined, and
  one said before it no longer stands level (`TrustOrder._made_more_trusted`, also when
  the value arrives after the restatement but is dated before it).

Until session 56, `scripts/order_search.py` compared the sets by their members only; with
their kinds, `--trust` found 48 of its 840 histories ending differently at 2481e0a (12 of
the first rule, 36 of the second), and `--trust-periods` 62 of 570 where the members alone
gave 30.
"""

from __future__ import annotations

import pytest

from distill.core.models import ConflictKind, FactStatus
from tests.unit.test_after_a_stated_end import said
from tests.unit.test_one_name_order import assert_any_order_as_in_order
from tests.unit.test_properties import fresh_memory, ingest


def test_a_trusted_restatement_turns_a_value_conflict_into_a_quarantine() -> None:
    """A third party's `a`, then a third party's `b` (a value conflict: both are served
    contested), then the person's `a`: `b` could not displace `a` now, so it is held in
    quarantine and `a` is served as it is; the same in every order."""
    claims = said("a:create@0/third_party b:create@1/third_party a:create@2")
    for order in ([0, 1, 2], [2, 1, 0], [1, 2, 0]):
        with fresh_memory() as mem:
            ingest(mem, claims, order)
            (current,) = mem.facts(subject="alice")
            assert (current.value["v"], current.trust.value) == ("a", "trusted"), order
            facts = mem.facts(subject="alice", include_retired=True)
            (held,) = [f for f in facts if f.status is FactStatus.CANDIDATE]
            (cs,) = mem.conflicts(subject="alice")
            assert (cs.kind, set(cs.member_ids)) == (
                ConflictKind.QUARANTINE,
                {current.id, held.id},
            ), order


# `--trust --show` at 2481e0a, with the kinds of sets compared: every one of the 48.
FOUND = [
    "a:create@0 a:create@1/third_party b:create@1/third_party",
    "a:create@0/third_party a:create@1 b:create@1/third_party",
    "a:create@0 a:create@0/third_party b:create@1/third_party",
    "a:create@0/third_party a:create@0 b:create@1/third_party",
    "a:create@0 a:create@1/third_party b:create@2/third_party",
    "a:create@0/third_party a:create@1 b:create@2/third_party",
    "a:create@0 a:supersede@1/third_party b:create@1/third_party",
    "a:create@0/third_party a:supersede@1 b:create@1/third_party",
    "a:create@0 a:supersede@0/third_party b:create@1/third_party",
    "a:create@0/third_party a:supersede@0 b:create@1/third_party",
    "a:create@0 a:supersede@1/third_party b:create@2/third_party",
    "a:create@0/third_party a:supersede@1 b:create@2/third_party",
    "a:supersede@0 a:create@1/third_party b:create@1/third_party",
    "a:supersede@0/third_party a:create@1 b:create@1/third_party",
    "a:supersede@0 a:create@0/third_party b:create@1/third_party",
    "a:supersede@0/third_party a:create@0 b:create@1/third_party",
    "a:supersede@0 a:create@1/third_party b:create@2/third_party",
    "a:supersede@0/third_party a:create@1 b:create@2/third_party",
    "a:supersede@0 a:supersede@1/third_party b:create@1/third_party",
    "a:supersede@0/third_party a:supersede@1 b:create@1/third_party",
    "a:supersede@0 a:supersede@0/third_party b:create@1/third_party",
    "a:supersede@0/third_party a:supersede@0 b:create@1/third_party",
    "a:supersede@0 a:supersede@1/third_party b:create@2/third_party",
    "a:supersede@0/third_party a:supersede@1 b:create@2/third_party",
    "a:create@0 b:create@1/third_party a:create@1/third_party",
    "a:create@0/third_party b:create@1/third_party a:create@1",
    "a:create@0/third_party b:create@0/third_party a:create@1",
    "a:create@0/third_party b:create@1/third_party a:create@2",
    "a:create@0 b:create@1/third_party a:supersede@1/third_party",
    "a:create@0/third_party b:create@1/third_party a:supersede@1",
    "a:supersede@0 b:create@1/third_party a:create@1/third_party",
    "a:supersede@0/third_party b:create@1/third_party a:create@1",
    "a:supersede@0/third_party b:create@0/third_party a:create@1",
    "a:supersede@0/third_party b:create@1/third_party a:create@2",
    "a:supersede@0 b:create@1/third_party a:supersede@1/third_party",
    "a:supersede@0/third_party b:create@1/third_party a:supersede@1",
    "a:create@0 b:create@1/third_party c:supersede@1",
    "a:create@0 b:create@0/third_party c:supersede@1",
    "a:create@0 b:create@1/third_party c:supersede@2",
    "a:create@0 b:supersede@1/third_party c:supersede@1",
    "a:create@0 b:supersede@0/third_party c:supersede@1",
    "a:create@0 b:supersede@1/third_party c:supersede@2",
    "a:supersede@0 b:create@1/third_party c:supersede@1",
    "a:supersede@0 b:create@0/third_party c:supersede@1",
    "a:supersede@0 b:create@1/third_party c:supersede@2",
    "a:supersede@0 b:supersede@1/third_party c:supersede@1",
    "a:supersede@0 b:supersede@0/third_party c:supersede@1",
    "a:supersede@0 b:supersede@1/third_party c:supersede@2",
]


@pytest.mark.parametrize("spec", FOUND)
def test_every_order_ends_as_in_world_order(spec: str) -> None:
    assert_any_order_as_in_order(said(spec))
