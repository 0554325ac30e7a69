"""A version made more trusted late takes in what restated it while it was replaced.

When a late statement makes a replaced version more trusted than the less trusted versions
that replaced it, those are held and the version is current again
(`RaisedTrust._trust_raised`). A statement of the version's own value, dated inside it,
that was held against one of them for its source restated the version in world order: the
version takes it in (`RaisedTrust._take_in_restatements`). Hygiene seed 1411524: such a
statement kept the whole rule from applying, and a semi-trusted value stayed current over
the trusted one it could not have displaced.
"""

from __future__ import annotations

import itertools

from distill.core.models import ConflictKind, ConflictStatus, FactStatus, Trust
from tests.unit.test_late_edges import at, in_one_run, told_gp
from tests.unit.test_properties import Claim, fresh_memory


def four_claims() -> list[Claim]:
    """A third party's `a` for days 30-36 (said on day 23) and its change to `a` on day 9;
    a semi-trusted `b` for days 27-35 (said on day 0) and the person's change to `a` on
    day 19."""
    return [
        told_gp(0, 23, "a", "third_party", "supersede", period=(30, 36)),
        told_gp(1, 9, "a", "third_party", "supersede"),
        told_gp(2, 0, "b", "semi_trusted", "create", period=(27, 35)),
        told_gp(3, 19, "a", "trusted", "supersede"),
    ]


def test_a_held_restatement_is_taken_in_when_the_version_is_current_again() -> None:
    """The third party's two claims in one run, then the other two in one run (the seed's
    arrival). In world order `b` met the person's `a` and was held; the third party's `a`
    of days 30-36 restated `a`, and its end, from a less trusted source, ends nothing."""
    claims = four_claims()
    with fresh_memory() as mem:
        in_one_run(mem, *claims[:2])
        facts = in_one_run(mem, *claims[2:])
        sets = mem.conflicts(subject="alice", status=None)

    live = [f for f in facts if f.status is not FactStatus.SUPERSEDED]
    got = sorted((f.value["v"], f.status, f.trust, f.valid_from, f.valid_to) for f in live)
    assert got == [
        ("a", FactStatus.ACTIVE, Trust.TRUSTED, at(9), None),
        ("b", FactStatus.CANDIDATE, Trust.SEMI_TRUSTED, at(27), at(35)),
    ]
    (a,) = [f for f in live if f.value["v"] == "a"]
    assert a.reinforcement_count == 2  # all three statements of `a`
    (held,) = [cs for cs in sets if cs.status is ConflictStatus.OPEN]
    assert held.kind is ConflictKind.QUARANTINE
    assert set(held.member_ids) == {f.id for f in live}
    taken = [f for f in facts if f.status is FactStatus.SUPERSEDED]
    assert all(f.valid_from == f.valid_to and f.superseded_by == a.id for f in taken)


def test_the_semi_trusted_value_displaces_the_persons_in_no_order() -> None:
    """Every arrival order, one run a claim or two claims a run: `a` is current and
    trusted from day 9, with no end, and `b` is held against it. In 6 of the 24 orders of
    one run a claim the third party's end of day 36 is accepted before the person's
    statement makes `a` trusted; that end then ends nothing (`WorkingSet._end_kept`; until
    session 53 `a` kept it)."""
    claims = four_claims()
    for order in itertools.permutations(range(4)):
        for together in (True, False):
            arriving = [claims[i] for i in order]
            with fresh_memory() as mem:
                for run in [arriving[:2], arriving[2:]] if together else [[c] for c in arriving]:
                    facts = in_one_run(mem, *run)
                (open_set,) = mem.conflicts(subject="alice")

            live = [f for f in facts if f.status is not FactStatus.SUPERSEDED]
            got = sorted((f.value["v"], f.status, f.trust, f.valid_from) for f in live)
            assert got == [
                ("a", FactStatus.ACTIVE, Trust.TRUSTED, at(9)),
                ("b", FactStatus.CANDIDATE, Trust.SEMI_TRUSTED, at(27)),
            ], (order, together)
            assert [f.valid_to for f in live if f.value["v"] == "a"] == [None], order
            assert open_set.kind is ConflictKind.QUARANTINE, (order, together)
