"""A value held against a version only because the version was pinned.

A claim of another value that meets a pinned version is held in a value conflict against
it, whatever its source's trust: the pin, not trust, stops it (DESIGN invariant 6). When
the version is unpinned and later given a stated end, a value held against it from that
end on follows it (`Rivals._held_after_end`), as it does in order: after a stated end the
version displaces nothing, and a value from any source but an untrusted one follows it
(until session 53 a less trusted one was held too). An untrusted value is held, as it is
in order. Hygiene seed 1420998: an untrusted value held against a pinned version became
current when the version was unpinned and a trusted restatement ended it ("untrusted
never served").
"""

from __future__ import annotations

import pytest

from distill.core.models import ConflictStatus, FactStatus
from tests.unit.test_late_edges import at, in_one_run, told_gp
from tests.unit.test_properties import fresh_memory


@pytest.mark.parametrize(
    ("trust", "follows"), [("untrusted", False), ("third_party", True), ("trusted", True)]
)
def test_a_value_held_against_a_pin_follows_the_version_unless_untrusted(
    trust: str, follows: bool
) -> None:
    """The person's `a` of day 2, pinned; `b` of day 40 from `trust`, held against the pin;
    the person's `a` for days 27-36 (said on day 36), consolidated after the unpin. `a`
    ends on day 36; `b` follows it unless its source is untrusted."""
    with fresh_memory() as mem:
        (a,) = in_one_run(mem, told_gp(0, 2, "a", "trusted", "create"))
        mem.pin(a.id)
        in_one_run(mem, told_gp(1, 40, "b", trust, "create"))
        (held,) = mem.conflicts(subject="alice")
        mem.add_event(**told_gp(2, 36, "a", "trusted", "create", period=(27, 36)).event())
        mem.pin(a.id, pinned=False)
        assert mem.consolidate().errors == []

        facts = {f.value["v"]: f for f in mem.facts("alice", include_retired=True)}
        (after,) = [cs for cs in mem.conflicts(subject="alice", status=None) if cs.id == held.id]

    assert (facts["a"].valid_from, facts["a"].valid_to) == (at(2), at(36))
    if follows:
        assert facts["b"].status is FactStatus.ACTIVE
        assert facts["a"].superseded_by == facts["b"].id
        assert after.status is ConflictStatus.RESOLVED
    else:
        assert facts["b"].status is FactStatus.CANDIDATE
        assert facts["a"].status is FactStatus.ACTIVE
        assert after.status is ConflictStatus.OPEN
