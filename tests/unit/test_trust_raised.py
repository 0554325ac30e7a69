"""A late statement that makes a replaced version more trusted than the change after it.

In world order a less trusted change that meets a more trusted value is held in quarantine
against it. When the statement that made the value more trusted arrives after the change,
the change had already replaced the value, and perhaps been replaced in turn; the rules in
`core/trust_late.py` (`LateTrust._trust_raised` and the three after it) put the state where
world order would have: here, for a change replaced by a third value (hygiene seed 1347999),
and for a chain of less trusted versions up to the current one (1393942).
"""

from __future__ import annotations

import itertools

import pytest

from distill.core.models import ConflictKind, Fact, FactStatus
from tests.unit.test_late_edges import at, in_one_run, kept_alone, told_gp
from tests.unit.test_properties import Claim, fresh_memory

ACTIVE, SUPERSEDED, CANDIDATE = FactStatus.ACTIVE, FactStatus.SUPERSEDED, FactStatus.CANDIDATE


def three_claims() -> list[Claim]:
    """A semi-trusted `a` for days 19-27 (said on day 38), a third party's change to `b` on
    day 25, the person's `c` for days 30-39 (said on day 34)."""
    return [
        told_gp(1, 38, "a", "semi_trusted", "create", period=(19, 27)),
        told_gp(2, 25, "b", "third_party", "supersede"),
        told_gp(3, 34, "c", "trusted", "create", period=(30, 39)),
    ]


@pytest.mark.parametrize("first", ["third_party", "kept"])
def test_a_change_replaced_by_a_third_value_is_held_once_the_value_it_met_is_more_trusted(
    first: str,
) -> None:
    """`a` from day 2 (a third party's, or an untrusted one a person kept), then the three
    claims of `three_claims` in every order, one run or one run each. In world order `b`
    met `a` stated by a semi-trusted source and was held in quarantine against it; `a`
    held to its stated end, day 27, and `c` followed it. Until session 51, when `b` came
    before the semi-trusted `a`, `b` stayed a version between `a` and `c`, a less trusted
    change displacing a more trusted value."""
    claims = three_claims()
    for order in itertools.permutations(range(3)):
        for together in (True, False):
            with fresh_memory() as mem:
                if first == "kept":
                    kept_alone(mem, told_gp(0, 2, "a", "untrusted", "supersede"))
                else:
                    in_one_run(mem, told_gp(0, 2, "a", "third_party", "supersede"))
                arriving = [claims[i] for i in order]
                for run in [arriving] if together else [[claim] for claim in arriving]:
                    facts = in_one_run(mem, *run)

                case = (order, together)
                got = sorted((f.value["v"], f.status, f.valid_from, f.valid_to) for f in facts)
                assert got == [
                    ("a", FactStatus.SUPERSEDED, at(2), at(27)),
                    ("b", FactStatus.CANDIDATE, at(25), None),
                    ("c", FactStatus.ACTIVE, at(30), at(39)),
                ], case
                by_value = {f.value["v"]: f for f in facts}
                assert by_value["a"].superseded_by == by_value["c"].id, case
                assert by_value["c"].supersedes_id == by_value["a"].id, case
                (quarantine,) = mem.conflicts(subject="alice")
                assert quarantine.kind is ConflictKind.QUARANTINE, case
                assert set(quarantine.member_ids) == {by_value["a"].id, by_value["b"].id}, case


def test_a_version_made_more_trusted_holds_the_less_trusted_versions_inside_it() -> None:
    """A third party's `a` of day 12; then a third party's change to `c` on day 24, the
    person's `a` for days 6-16 (said on day 25) and a third party's change to `b` on day 15.
    The person's statement makes `a` trusted from day 6: in world order `b` met it and was
    held; `c`, stated after `a`'s end, displaced nothing and followed it (until session 53
    it was held too, `a` being taken for the version in force after its end). So `b` is
    held against `a`, and `c` is current, in one run or in said order (hygiene seed
    1393942, where `b` stayed a version displacing the trusted `a`)."""
    first = told_gp(0, 12, "a", "third_party", "create")
    rest = [
        told_gp(1, 24, "c", "third_party", "supersede"),
        told_gp(2, 25, "a", "trusted", "create", period=(6, 16)),
        told_gp(3, 15, "b", "third_party", "supersede"),
    ]
    said = sorted([first, *rest], key=lambda c: c.when)
    for runs in ([[first], rest], [[claim] for claim in said]):
        with fresh_memory() as mem:
            for run in runs:
                facts = in_one_run(mem, *run)

            got = sorted((f.value["v"], f.status, f.valid_from, f.valid_to) for f in facts)
            assert got == [
                ("a", FactStatus.SUPERSEDED, at(6), at(16)),
                ("b", FactStatus.CANDIDATE, at(15), None),
                ("c", FactStatus.ACTIVE, at(24), None),
            ], runs
            by_value = {f.value["v"]: f for f in facts}
            assert by_value["a"].superseded_by == by_value["c"].id, runs
            (held,) = mem.conflicts(subject="alice")
            assert held.kind is ConflictKind.QUARANTINE, runs
            assert set(held.member_ids) == {by_value["a"].id, by_value["b"].id}, runs


def test_a_version_a_trusted_create_holds_behind_is_not_left_replaced_by_a_held_value() -> None:
    """Hygiene seed 1680764, with one name: a semi-trusted `b` (day 19) replaced by a
    semi-trusted change to `a` (day 37); then, in one run, the person's `a` for days 5-14
    (said on day 27), a semi-trusted change to `b` (day 17), a semi-trusted `a` (day 9) and
    the person's `a` (day 22). The person's `a` of day 22 holds the semi-trusted change to
    `b` in quarantine, as the first value after semi-trusted versions, and the `a` that `b`
    replaced with it; until session 58 that `a` stayed replaced by `b`, and once the person's
    period made it trusted, a held value replaced a trusted version."""
    with fresh_memory() as mem:
        in_one_run(
            mem,
            told_gp(0, 37, "a", "semi_trusted", "supersede"),
            told_gp(1, 19, "b", "semi_trusted", "create"),
        )
        facts = in_one_run(
            mem,
            told_gp(2, 27, "a", "trusted", "create", period=(5, 14)),
            told_gp(3, 17, "b", "semi_trusted", "supersede"),
            told_gp(4, 9, "a", "semi_trusted", "create"),
            told_gp(5, 22, "a", "trusted", "create"),
        )
        by_id = {f.id: f for f in facts}
        for fact in facts:
            successor = by_id.get(fact.superseded_by or "")
            assert successor is None or successor.status is not FactStatus.CANDIDATE, fact
        active = [f for f in facts if f.status is FactStatus.ACTIVE]
        assert [(f.value["v"], f.trust.value) for f in active] == [("a", "trusted")]


def test_a_trusted_period_taken_in_late_holds_the_less_trusted_change_that_split_it() -> None:
    """Hygiene seed 1687772, with one name: an untrusted change to `a` (day 38) a person
    kept, and a third party's change to `a` (day 1), which restated it from day 1; then, in
    one run, the person's `b` (day 0), a third party's change to `b` (day 7) and the
    person's `a` for days 0-8 (said on day 28). The change to `b` split `a` between its
    statements of days 1 and 38, and the person's period made the part before it trusted
    until day 8: in world order the third party's `b` met a trusted `a` and was held. Until
    session 59 the path that took the period in (a late value restated by the version after
    the one it holds, `LateArrivals`) did not ask what the raised trust undoes, and the
    third party's `b` replaced the trusted `a`."""
    with fresh_memory() as mem:
        kept_alone(mem, told_gp(0, 38, "a", "untrusted", "supersede"))
        in_one_run(mem, told_gp(1, 1, "a", "third_party", "supersede"))
        facts = in_one_run(
            mem,
            told_gp(2, 0, "b", "trusted", "create"),
            told_gp(3, 7, "b", "third_party", "supersede"),
            told_gp(4, 28, "a", "trusted", "create", period=(0, 8)),
        )
        followed_as_trusted(facts)
        (trusted_a,) = [f for f in facts if f.value["v"] == "a" and f.trust.value == "trusted"]
        assert (trusted_a.valid_from, trusted_a.valid_to) == (at(0), at(8))
        (change,) = [f for f in facts if f.value["v"] == "b" and f.trust.value == "third_party"]
        assert change.status is FactStatus.CANDIDATE
        (held,) = [c for c in mem.conflicts(subject="alice") if change.id in c.member_ids]
        assert held.kind is ConflictKind.QUARANTINE
        assert set(held.member_ids) == {trusted_a.id, change.id}


def test_a_held_value_a_late_change_adopts_holds_the_less_trusted_version_after_it() -> None:
    """Hygiene seed 1700228, with one name: a third party's change to
    `a` (day 2) and the person's `a` (day 60); then, in one run, a semi-trusted change to
    `a` (day 8), a third party's `b` for days 24-32 (said on day 1) and a semi-trusted `c`
    (day 5). `b` split `a` as a third party's version; `c`, more trusted, held the third
    party's `a` and became current; the semi-trusted change to `a` adopted that held `a`,
    now semi-trusted, still followed by the third party's `b`. In world order `b` met a
    semi-trusted `a` and was held. Until session 59 the late path that adopts a held value
    did not ask what the raised trust undoes."""
    with fresh_memory() as mem:
        in_one_run(
            mem,
            told_gp(0, 60, "a", "trusted", "create"),
            told_gp(1, 2, "a", "third_party", "supersede"),
        )
        facts = in_one_run(
            mem,
            told_gp(2, 8, "a", "semi_trusted", "supersede"),
            told_gp(3, 1, "b", "third_party", "create", period=(24, 32)),
            told_gp(4, 5, "c", "semi_trusted", "create"),
        )
        followed_as_trusted(facts)
        (b,) = [f for f in facts if f.value["v"] == "b"]
        assert b.status is FactStatus.CANDIDATE
        (held,) = [c for c in mem.conflicts(subject="alice") if b.id in c.member_ids]
        assert held.kind is ConflictKind.QUARANTINE
        (active,) = [f for f in facts if f.status is FactStatus.ACTIVE]
        assert (active.value["v"], active.trust.value) == ("a", "trusted")


def test_a_less_trusted_period_before_a_value_its_held_restatement_replaces_is_held() -> None:
    """Hygiene seed 1540638, with one name: a semi-trusted `a` (day 36), pinned; the
    person's `b` (day 5), held in conflict against the pin; then, in one run after the pin
    is lifted, a third party's `a` for days 27-36 (said on day 15), filed as the version
    before the semi-trusted `a`, and the person's `b` again (day 60), which makes the held
    `b` current from day 5 and holds the semi-trusted `a`. The third party's period lies
    inside the days of that `b`: in world order it met the person's `b` and was held. Until
    session 60 it stayed a version (it ended where the semi-trusted `a` began, taken for a
    value before a gap), two values over days 27-36."""
    with fresh_memory() as mem:
        (pinned,) = in_one_run(mem, told_gp(0, 36, "a", "semi_trusted", "create"))
        mem.pin(pinned.id)
        in_one_run(mem, told_gp(1, 5, "b", "trusted", "create"))
        mem.unpin(pinned.id)
        facts = in_one_run(
            mem,
            told_gp(2, 15, "a", "third_party", "supersede", period=(27, 36)),
            told_gp(3, 60, "b", "trusted", "create"),
        )
        followed_as_trusted(facts)
        (active,) = [f for f in facts if f.status is FactStatus.ACTIVE]
        assert (active.value["v"], active.trust.value, active.valid_from) == ("b", "trusted", at(5))
        (period,) = [f for f in facts if f.trust.value == "third_party"]
        assert period.status is FactStatus.CANDIDATE
        (held,) = [c for c in mem.conflicts(subject="alice") if period.id in c.member_ids]
        assert held.kind is ConflictKind.QUARANTINE
        assert set(held.member_ids) == {active.id, period.id}


def test_a_held_restatement_made_current_follows_the_gap_the_held_value_followed() -> None:
    """The person's `a` for days 0-5, a semi-trusted `b` from day 10, pinned, and the
    person's `c` (day 20) held in conflict against the pin; the pin lifted, the person's `c`
    again (day 30) makes the held `c` current and holds `b`. `a` ended with a gap before `b`
    and was linked to it as its successor: it is linked to `c` now, as it is when the claim
    makes a version of its own. Until session 60 `a` stayed replaced by a held value."""
    with fresh_memory() as mem:
        (a,) = in_one_run(mem, told_gp(0, 1, "a", "trusted", "create", period=(0, 5)))
        (b,) = [
            f
            for f in in_one_run(mem, told_gp(1, 10, "b", "semi_trusted", "create"))
            if f.id != a.id
        ]
        mem.pin(b.id)
        in_one_run(mem, told_gp(2, 20, "c", "trusted", "create"))
        mem.unpin(b.id)
        facts = in_one_run(mem, told_gp(3, 30, "c", "trusted", "create"))
        by_value = {f.value["v"]: f for f in facts}
        assert [by_value[v].status for v in "abc"] == [SUPERSEDED, CANDIDATE, ACTIVE]
        assert by_value["a"].superseded_by == by_value["c"].id
        assert by_value["c"].supersedes_id == by_value["a"].id


def test_a_version_made_more_trusted_holds_the_less_trusted_versions_after_a_gap_too() -> None:
    """Hygiene seed 1729830, with one name: a third party's `r` (day 33) and change to `g`
    (day 9); a semi-trusted `b` for days 20-30 (said on day 0); the person's change to `g`
    (day 10). In world order `b` met a trusted `g` and was held, and `r`, a third party's
    `create` after `b`'s end, met `g` too and was held. Told late, the person's `g` made the
    replaced `g` trusted, and the versions after it were taken back only up to a gap: `r`
    follows `b` after `b`'s stated end, so until session 60 nothing was, and `b` kept
    replacing the trusted `g`. Each of the 24 orders, one claim a run, and the seed's two
    runs end as world order."""
    claims = [
        told_gp(0, 33, "r", "third_party", "create"),
        told_gp(1, 9, "g", "third_party", "supersede"),
        told_gp(2, 0, "b", "semi_trusted", "create", period=(20, 30)),
        told_gp(3, 10, "g", "trusted", "supersede"),
    ]
    runs = [[[claims[i]] for i in order] for order in itertools.permutations(range(4))]
    for arriving in [[claims[:2], claims[2:]], *runs]:
        with fresh_memory() as mem:
            for run in arriving:
                facts = in_one_run(mem, *run)
            followed_as_trusted(facts)
            got = sorted((f.value["v"], f.status, f.trust.value) for f in facts)
            assert got == [
                ("b", CANDIDATE, "semi_trusted"),
                ("g", ACTIVE, "trusted"),
                ("r", CANDIDATE, "third_party"),
            ], arriving


def followed_as_trusted(facts: list[Fact]) -> None:
    """A version followed without a gap is followed by one at least as trusted (hygiene's
    "less trusted displaces nothing")."""
    by_id = {f.id: f for f in facts}
    for fact in facts:
        successor = by_id.get(fact.superseded_by or "")
        if successor is not None and successor.valid_from == fact.valid_to:
            assert successor.trust.rank >= fact.trust.rank, fact
