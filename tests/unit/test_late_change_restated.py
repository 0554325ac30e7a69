"""A late change filed into history that a value held since restated.

A change dated inside an older version, before the next one, arrived after a statement of
its own value dated after it that was held against that version. In world order the change
replaced the version first and the statement restated the change, reinforcing it, so no set
is left open: the held value is the filed version, from the change's date
(`LateArrivals._held_after`). Hygiene seed 1505468: the change was filed beside the held
value, which stayed in a set open against a value the change had turned down. Hygiene seed
1742363 ended the same way by another path: a change left its value held when another
value was held against the same version, and a version filed later took the held value.
"""

from __future__ import annotations

import pytest

from distill.core.models import ConflictStatus, FactStatus
from tests.unit.test_late_edges import at, in_one_run, kept_alone, told_gp
from tests.unit.test_properties import fresh_memory


@pytest.mark.parametrize("held_first", [True, False])
def test_a_held_value_restating_a_late_change_joins_it(held_first: bool) -> None:
    """A semi-trusted `c` for days 14-17 (said on day 6) and an untrusted `a` of day 12,
    which a person keeps. Then a third party's `b` of day 13 and a semi-trusted change to
    `b` on day 12, in either order: the change replaces `a` at once (a turned-down value),
    the third party restates it, and `b` holds until `c` begins, with both statements."""
    held = told_gp(2, 13, "b", "third_party", "create")
    change = told_gp(3, 12, "b", "semi_trusted", "supersede")
    with fresh_memory() as mem:
        in_one_run(mem, told_gp(0, 6, "c", "semi_trusted", "supersede", period=(14, 17)))
        kept_alone(mem, told_gp(1, 12, "a", "untrusted", "create"))
        for claim in (held, change) if held_first else (change, held):
            facts = in_one_run(mem, claim)
        sets = mem.conflicts(subject="alice", status=None)

    got = sorted((f.valid_from, f.valid_to, f.value["v"], f.status) for f in facts)
    assert got == [
        (at(12), at(12), "a", FactStatus.SUPERSEDED),
        (at(12), at(14), "b", FactStatus.SUPERSEDED),
        (at(14), at(17), "c", FactStatus.ACTIVE),
    ]
    by_value = {f.value["v"]: f for f in facts}
    assert by_value["b"].reinforcement_count == 1  # the change and the third party's
    assert by_value["b"].superseded_by == by_value["c"].id
    assert all(cs.status is not ConflictStatus.OPEN for cs in sets), sets


@pytest.mark.parametrize("with_held_value", [True, False])
def test_a_change_adopts_its_value_held_beside_another(with_held_value: bool) -> None:
    """A third party's change to `4` on day 4, with an untrusted `3` of day 11 held against
    it or not; an untrusted `5` for days 30-32, said on day 15 and held against `4` too;
    a semi-trusted change to `5` on day 24; then a third party's change to `3` on day 24,
    one claim a run. The change to `5` adopts the held `5` (it said what the held value
    says, for days it holds) whether or not another value is held against `4`, and `3` is
    filed between `4` and `5`, emptied by `5` at its own instant: no set is left open.
    Hygiene seed 1742363: beside the held `3`, the held `5` was not adopted, stayed held
    against `4`, and was moved into a set against the filed `3`, a value nobody holds."""
    claims = [told_gp(0, 4, "4", "third_party", "supersede")]
    if with_held_value:
        claims.append(told_gp(1, 11, "3", "untrusted", "create"))
    claims += [
        told_gp(2, 15, "5", "untrusted", "supersede", period=(30, 32)),
        told_gp(3, 24, "5", "semi_trusted", "supersede"),
        told_gp(4, 24, "3", "third_party", "supersede"),
    ]
    with fresh_memory() as mem:
        for claim in claims:
            facts = in_one_run(mem, claim)
        assert sorted((f.value["v"], f.status, f.valid_from, f.valid_to) for f in facts) == [
            ("3", FactStatus.SUPERSEDED, at(24), at(24)),
            ("4", FactStatus.SUPERSEDED, at(4), at(24)),
            ("5", FactStatus.ACTIVE, at(24), None),
        ]
        assert mem.conflicts(subject="alice") == []


@pytest.mark.parametrize("three_first", [True, False])
def test_a_late_change_joins_its_value_held_beside_another(three_first: bool) -> None:
    """The person's `4` from day 4, an untrusted `3` of day 11 and a third party's `5` of
    day 30 held against it (in either order), the person's `6` from day 40; then the
    person's change to `5` on day 20 arrives. In world order the change replaced `4` and
    the third party restated it: `5` holds from day 20 to day 40 with both statements, and
    only `3` is still held. Until session 61 the change was filed beside the held `5` when
    the set of `3` came first (only the first set holding `4` was looked in)."""
    held = [
        told_gp(1, 11, "3", "untrusted", "create"),
        told_gp(2, 30, "5", "third_party", "create"),
    ]
    with fresh_memory() as mem:
        in_one_run(mem, told_gp(0, 4, "4", "trusted", "supersede"))
        for claim in held if three_first else held[::-1]:
            in_one_run(mem, claim)
        in_one_run(mem, told_gp(4, 40, "6", "trusted", "supersede"))
        facts = in_one_run(mem, told_gp(3, 20, "5", "trusted", "supersede"))
        by_id = {f.id: f for f in facts}
        got = sorted((f.value["v"], f.status, f.valid_from, f.valid_to) for f in facts)
        assert got == [
            ("3", FactStatus.CANDIDATE, at(11), None),
            ("4", FactStatus.SUPERSEDED, at(4), at(20)),
            ("5", FactStatus.SUPERSEDED, at(20), at(40)),
            ("6", FactStatus.ACTIVE, at(40), None),
        ]
        (five,) = [f for f in facts if f.value["v"] == "5"]
        assert five.reinforcement_count == 1
        (left,) = mem.conflicts(subject="alice")
        assert sorted(by_id[m].value["v"] for m in left.member_ids) == ["3", "4"]
