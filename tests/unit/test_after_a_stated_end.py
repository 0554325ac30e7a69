"""A value dated after a version's stated end displaces nothing, whatever its source's trust.

"Paris from 2015 to 2019" ends the version: a value dated after 2019 follows it. Until
session 53 that held only for a value as trusted as the version; a less trusted one was held
in quarantine against it, the ended version taken for the one still in force, and the
late-arrival rules did not all agree with that. `python scripts/order_search.py
--trust-periods` (three claims about one name from a trusted source and a third party, at
least one stating its period) found 281 of its 570 histories ending differently in some
arrival order. Now, in order and late alike:

* a less trusted value dated from a version's stated end on follows it (an untrusted one is
  held, whatever it meets), and so does one held against the version when a late statement
  gives it an end before that value;
* a late, more trusted value holds in quarantine only the less trusted versions that began
  before its own stated end, across the gaps between them; what they said from that end on
  follows it;
* a late statement that makes a version more trusted voids an end that only a less trusted
  statement gave it, unless a person kept the version; a version as trusted that followed
  that end met it in force (a change replaced it, a `create` of another value is held in
  conflict against it);
* what follows a gap is a first value again: a more trusted `create` holds it in
  quarantine, as it holds the attribute's first value.

30 of the 570 still end differently in some order (README, "Known limits").
"""

from __future__ import annotations

import itertools
from datetime import timedelta
from typing import Any

import pytest

from distill.core.models import ConflictKind, FactStatus, Trust
from tests.unit.test_one_name_order import assert_any_order_as_in_order, ending
from tests.unit.test_properties import Claim, day, fresh_memory, ingest


def said(spec: str, length: int = 5) -> list[Claim]:
    """Claims about `gp` from a spec such as `a:create@0 b:create/period/third_party`: the
    i-th a value told on its day, or a period of days 10·i to 10·i + `length` told on day
    40; from a trusted source unless marked `third_party`."""
    claims = []
    for i, item in enumerate(spec.split()):
        value, rest = item.split(":")
        parts = rest.split("/")
        action, _, told = parts[0].partition("@")
        trust = "third_party" if "third_party" in parts else "trusted"
        period = (day(10 * i), day(10 * i + length)) if "period" in parts else None
        when = day(40) + timedelta(minutes=i) if period else day(int(told))
        claims.append(Claim(f"e{i}", "alice", when, "gp", value, action, trust, period=period))
    return claims


def assert_versions(spec: str, expected: list[tuple[Any, ...]], *, events: bool = False) -> None:
    """Every arrival order of the claims of `spec` ends with these versions (value, status,
    interval and, with `events`, how many events support each) and no open set."""
    for order in itertools.permutations(range(3)):
        with fresh_memory() as mem:
            ingest(mem, said(spec), list(order))
            got = sorted(
                (f.value["v"], f.status, f.valid_from, f.valid_to)
                + ((len(f.source_event_ids),) if events else ())
                for f in mem.facts(subject="alice", include_retired=True)
            )
            assert got == expected, order
            assert mem.conflicts(subject="alice") == [], order


def test_a_less_trusted_value_after_a_trusted_end_is_current() -> None:
    """The person's `a` for days 0-5, then a third party's `b` of day 10: `a` had ended, so
    `b` is current, in both orders, and nothing is held (until session 53 `b` was held in
    quarantine against the ended `a`, and nothing was current)."""
    claims = said("a:create/period/trusted b:create@10/third_party")
    for order in ([0, 1], [1, 0]):
        with fresh_memory() as mem:
            ingest(mem, claims, order)
            facts = mem.facts(subject="alice", include_retired=True)
            got = sorted((f.value["v"], f.status, f.valid_from, f.valid_to) for f in facts)
            assert got == [
                ("a", FactStatus.SUPERSEDED, day(0), day(5)),
                ("b", FactStatus.ACTIVE, day(10), None),
            ], order
            assert mem.conflicts(subject="alice") == [], order


def test_an_untrusted_value_after_a_trusted_end_is_still_held() -> None:
    """The same with an untrusted `b`: never served unless a person says so."""
    claims = said("a:create/period/trusted b:create@10")
    claims[1] = Claim("e1", "alice", day(10), "gp", "b", "create", "untrusted")
    for order in ([0, 1], [1, 0]):
        with fresh_memory() as mem:
            ingest(mem, claims, order)
            b = next(
                f for f in mem.facts(subject="alice", include_retired=True) if f.value["v"] == "b"
            )
            assert b.status is FactStatus.CANDIDATE, order
            (held,) = mem.conflicts(subject="alice")
            assert held.kind is ConflictKind.QUARANTINE, order


def test_a_late_trusted_period_holds_only_what_was_said_inside_it() -> None:
    """A third party's `b` on days 12 and 20 (one version), then, told on day 25, the
    person's `a` for days 8-16: in world order the `b` of day 12 met `a` in force and was
    held; the `b` of day 20 came after `a` ended and is current. Arriving after both, `a`
    holds the version's first statement and the second follows it
    (`LateTrust._beyond_the_end`)."""
    b12 = Claim("e0", "alice", day(12), "gp", "b", "create", "third_party")
    b20 = Claim("e1", "alice", day(20), "gp", "b", "create", "third_party")
    a = Claim("e2", "alice", day(25), "gp", "a", "create", period=(day(8), day(16)))
    with fresh_memory() as mem:
        ingest(mem, [b12, b20, a], [0, 1, 2])
        facts = mem.facts(subject="alice", include_retired=True)
        got = sorted((f.value["v"], f.status, f.valid_from, f.valid_to) for f in facts)
        (held,) = mem.conflicts(subject="alice")
    assert got == [
        ("a", FactStatus.SUPERSEDED, day(8), day(16)),
        ("b", FactStatus.ACTIVE, day(20), None),
        ("b", FactStatus.CANDIDATE, day(12), None),
    ]
    assert held.kind is ConflictKind.QUARANTINE
    assert ending([b12, b20, a], [0, 1, 2]) == ending([b12, b20, a], [2, 0, 1])


def test_a_less_trusted_end_ends_nothing_once_the_version_is_trusted() -> None:
    """A third party's `a` for days 10-15, then the person's `a` of day 0 arriving late:
    the version is the person's from day 0, and the third party's end, which could not end
    a trusted version, ends nothing (until session 53 it kept it, in this order only)."""
    claims = said("a:create@0 a:create/period/third_party")
    for order in ([0, 1], [1, 0]):
        with fresh_memory() as mem:
            ingest(mem, claims, order)
            (a,) = mem.facts(subject="alice", include_retired=True)
            assert (a.status, a.trust, a.valid_from, a.valid_to) == (
                FactStatus.ACTIVE, Trust.TRUSTED, day(0), None,
            ), order  # fmt: skip


def test_a_trusted_create_holds_the_less_trusted_first_value_after_a_gap() -> None:
    """The person's `a` for days 0-5, a third party's `b` of day 10, the person's `c` of day
    20 (a `create`): `b` is the first value since `a` ended, and the person's `c` holds it
    in quarantine as it would hold the attribute's first value, and follows `a` (until
    session 53 `c` was held in conflict behind the third party's `b`, in this order only)."""
    claims = said("a:create/period b:create@10/third_party c:create@20")
    for order in itertools.permutations(range(3)):
        with fresh_memory() as mem:
            ingest(mem, claims, list(order))
            facts = {f.value["v"]: f for f in mem.facts(subject="alice", include_retired=True)}
            (held,) = mem.conflicts(subject="alice")
        assert facts["c"].status is FactStatus.ACTIVE, order
        assert facts["b"].status is FactStatus.CANDIDATE, order
        assert (facts["a"].status, facts["a"].valid_to) == (FactStatus.SUPERSEDED, day(5))
        assert facts["a"].superseded_by == facts["c"].id, order  # its receipt
        assert held.kind is ConflictKind.QUARANTINE, order
        assert set(held.member_ids) == {facts["b"].id, facts["c"].id}, order


def test_a_trusted_return_after_a_gap_replaces_the_value_since() -> None:
    """The person's `a` for days 0-5, a third party's `b` of day 10, the person's `a` again
    on day 20 (a `create`): `b` followed `a`'s end, and the person's `a` returns to a value
    held before, which in order is a change (issue 11's return rule): it replaces `b` at
    day 20 and holds nothing. Until session 54, with `a` of days 0-5 arriving after the
    person's later `a`, the later `a` held `b` in quarantine as the first value since a gap
    (`b` never current), and so it did when `b` arrived last."""
    assert_versions(
        "a:create/period b:create@10/third_party a:create@20",
        [
            ("a", FactStatus.ACTIVE, day(20), None),
            ("a", FactStatus.SUPERSEDED, day(0), day(5)),
            ("b", FactStatus.SUPERSEDED, day(10), day(20)),
        ],
    )


def test_a_late_trusted_period_replaces_the_first_value_a_later_create_held() -> None:
    """A third party's `a` of day 0, the person's `b` for days 10-15 (told on day 40), the
    person's `c` of day 20 (a `create`). In order `b`, dated, replaced `a` on day 10 and
    `c` followed `b`'s end: three versions. Arriving before `b`, `c` held `a` in
    quarantine (a more trusted create over a less trusted first value); until session 54
    the late `b` was filed before `c` and `a` stayed held."""
    assert_versions(
        "a:create@0/third_party b:create/period c:create@20",
        [
            ("a", FactStatus.SUPERSEDED, day(0), day(10)),
            ("b", FactStatus.SUPERSEDED, day(10), day(15)),
            ("c", FactStatus.ACTIVE, day(20), None),
        ],
    )


def test_a_dated_trusted_restatement_makes_the_held_first_value_current() -> None:
    """A third party's `a` of day 0, the person's `b` of day 10 (a `create`), the person's
    `a` for days 20-25. In order `b` held the third party's `a` in quarantine, and the
    person's dated `a` replaced `b` on day 20 (a value that states its start is a change)
    and took in the held statement. Until session 54, with `b` arriving last inside the
    one version of `a`, `b` was current and `a` held in conflict against it."""
    assert_versions(
        "a:create@0/third_party b:create@10 a:create/period",
        [
            ("a", FactStatus.ACTIVE, day(20), day(25)),
            ("b", FactStatus.SUPERSEDED, day(10), day(20)),
        ],
    )


def test_a_late_trusted_first_value_meets_a_trusted_create_after_less_trusted_ones() -> None:
    """The person's `a` of day 0, a third party's `b` for days 10-15, the person's `c` of
    day 20 (a `create`). In order the third party's `b` is held in quarantine against
    `a`, and the person's `c` met `a` in force: held in a value conflict. Until session
    54, with `a` arriving last, `c` was current and `a` history, as if the third party's
    `b` had displaced the person's `a`."""
    claims = said("a:create@0 b:create/period/third_party c:create@20")
    for order in itertools.permutations(range(3)):
        with fresh_memory() as mem:
            ingest(mem, claims, list(order))
            facts = {f.value["v"]: f for f in mem.facts(subject="alice", include_retired=True)}
            sets = {frozenset(cs.member_ids): cs.kind for cs in mem.conflicts(subject="alice")}
        assert facts["a"].status is FactStatus.ACTIVE, order
        assert facts["b"].status is facts["c"].status is FactStatus.CANDIDATE, order
        assert sets == {
            frozenset((facts["a"].id, facts["b"].id)): ConflictKind.QUARANTINE,
            frozenset((facts["a"].id, facts["c"].id)): ConflictKind.CONFLICT,
        }, order


def test_a_late_restatement_of_the_held_first_value_gives_it_its_end() -> None:
    """A third party's `a` of day 0, the person's `a` for days 10-15 (told on day 40), the
    person's `b` of day 20 (a `create`). In order the person's `a` restated the first
    value and ended it on day 15, and `b` followed: two versions. With `b` before the
    person's `a`, `b` held the third party's `a` in quarantine; the late `a` now ends that
    value where it said (a session-54 rule first made it a third version, from day 10)."""
    assert_versions(
        "a:create@0/third_party a:create/period b:create@20",
        [
            ("a", FactStatus.SUPERSEDED, day(0), day(15), 2),
            ("b", FactStatus.ACTIVE, day(20), None, 1),
        ],
        events=True,
    )


def test_an_end_inside_another_statements_period_ends_nothing() -> None:
    """The person's `green` for days 18-26, a third party's `blue` of day 22 (held in
    quarantine: `green` is in force then), then the person's `green` for days 10-20. The
    version runs to day 26, which the first statement still says, so `blue` stays held.
    Until session 54 the second statement's end at day 20, though it did not move the
    version's end, let `blue` follow it and displace the person's `green` (hygiene seed
    1466342); and when `blue` followed the end at day 20 first, the late period to day 26
    did not hold it (now it does: `RaisedTrust._yielding_to`, for a later end as for more
    trust)."""
    first, second = (day(18), day(26)), (day(10), day(20))
    claims = [
        Claim("e0", "alice", day(40), "gp", "green", "create", "trusted", period=first),
        Claim("e1", "alice", day(22), "gp", "blue", "create", "third_party"),
        Claim("e2", "alice", day(41), "gp", "green", "create", "trusted", period=second),
    ]
    for order in itertools.permutations(range(3)):
        with fresh_memory() as mem:
            ingest(mem, claims, list(order))
            facts = {f.value["v"]: f for f in mem.facts(subject="alice", include_retired=True)}
            (held,) = mem.conflicts(subject="alice")
        assert (facts["green"].status, facts["green"].valid_from) == (FactStatus.ACTIVE, day(10))
        assert facts["green"].valid_to == day(26), order
        assert facts["blue"].status is FactStatus.CANDIDATE, order
        assert held.kind is ConflictKind.QUARANTINE, order


def test_a_late_end_decided_in_the_job_of_the_change_after_it() -> None:
    """A third party's `blue` of day 16, consolidated; then, in one job, the person's `blue`
    for days 18-19 (told on day 30) and the third party's `red` of day 24. The person's
    statement ends `blue` on day 19, so `red` follows that end and replaces nothing, as when
    each claim is consolidated in turn. Until session 55 the job, which had not loaded
    `blue`'s one statement, took the day `red` began for an end that statement had stated,
    and the third party's `red` displaced the person's `blue` (hygiene seed 1471067)."""
    claims = [
        Claim("e0", "alice", day(16), "gp", "blue", "create", "third_party"),
        Claim("e1", "alice", day(30), "gp", "blue", "create", "trusted", period=(day(18), day(19))),
        Claim("e2", "alice", day(24), "gp", "red", "supersede", "third_party"),
    ]
    expected = [
        ("blue", FactStatus.SUPERSEDED, Trust.TRUSTED, day(16), day(19)),
        ("red", FactStatus.ACTIVE, Trust.THIRD_PARTY, day(24), None),
    ]

    def versions(mem: Any) -> list[tuple[Any, ...]]:
        facts = mem.facts(subject="alice", include_retired=True)
        return sorted((f.value["v"], f.status, f.trust, f.valid_from, f.valid_to) for f in facts)

    with fresh_memory() as mem:
        ingest(mem, claims, [0])
        for c in claims[1:]:
            mem.add_event(**c.event())
        assert mem.consolidate().jobs_failed == 0
        assert versions(mem) == expected
        assert mem.conflicts(subject="alice") == []
    for order in itertools.permutations(range(3)):
        with fresh_memory() as mem:
            ingest(mem, claims, list(order))
            assert versions(mem) == expected, order


def test_a_value_that_began_at_a_late_statements_end_followed_it() -> None:
    """The person's `5` for days 24-30 (told on day 19), a third party's change to `4` on
    day 21, then, told late, the person's `5` for days 16-21, and (in the longer history)
    a third party's `5` of day 2 before them all. The late statement ends `5` on day 21,
    where `4` began: `4` followed that end and displaced nothing, as it does when that
    statement comes before it. So `4` is the version between the two periods, in every
    order. Until session 55 the late statement held `4` in quarantine when it arrived
    after it: as a first value that came second (`LateArrivals._file_late` took a claim
    that ended where the next version began for one that met it), or, with the third
    party's `5` of day 2, by rejoining the two parts of `5` that `4` had split
    (`RaisedTrust._rejoined`, seed 1637445 of the hygiene search)."""
    early = Claim("e0", "alice", day(2), "gp", "5", "supersede", "third_party")
    later = Claim("e1", "alice", day(19), "gp", "5", "create", period=(day(24), day(30)))
    change = Claim("e2", "alice", day(21), "gp", "4", "supersede", "third_party")
    late = Claim("e3", "alice", day(38), "gp", "5", "supersede", period=(day(16), day(21)))
    assert_any_order_as_in_order([later, change, late])
    assert_any_order_as_in_order([early, later, change, late])
    with fresh_memory() as mem:
        ingest(mem, [early, later, change, late], [0, 1, 2, 3])
        got = sorted(
            (f.valid_from, f.value["v"], f.status, f.trust)
            for f in mem.facts(subject="alice", include_retired=True)
        )
        assert mem.conflicts(subject="alice") == []
    assert got == [  # the late statement dated inside the first `5` made it trusted
        (day(2), "5", FactStatus.SUPERSEDED, Trust.TRUSTED),
        (day(21), "4", FactStatus.SUPERSEDED, Trust.THIRD_PARTY),
        (day(24), "5", FactStatus.ACTIVE, Trust.TRUSTED),
    ]


# The person's `a`, then a third party's `b` for days 10-15 and `b` again on day 20 (by a
# change of the person's or a third party's, or any third party's statement): in world order
# both `b` are one candidate held against `a`. Arriving last, `a` found two versions of one
# value and held neither, and `b` was served, until session 55; now each is held in its own
# set (`LateTrust._displaced_by_less_trusted`). The histories still differ (one candidate
# against two), so the search counts them, but what is served and held is the same.
TWO_OF_ONE_VALUE = [
    f"a:{first}@0 b:create/period/third_party {then}"
    for first in ("create", "supersede")
    for then in (
        "b:create@20",
        "b:create@20/third_party",
        "b:supersede@20/third_party",
        "b:create/period/third_party",
    )
]


@pytest.mark.parametrize("spec", TWO_OF_ONE_VALUE)
def test_a_late_trusted_first_value_holds_two_versions_of_one_less_trusted_value(
    spec: str,
) -> None:
    def served(order: tuple[int, ...]) -> tuple[Any, ...]:
        with fresh_memory() as mem:
            ingest(mem, said(spec), list(order))
            facts = mem.facts(subject="alice", include_retired=True)
            (current,) = [f for f in facts if f.status is FactStatus.ACTIVE]
            held = {f.value["v"] for f in facts if f.status is FactStatus.CANDIDATE}
            sets = mem.conflicts(subject="alice")
            assert sets and all(current.id in cs.member_ids for cs in sets), order
            return current.value["v"], current.valid_from, current.valid_to, held

    in_order = served((0, 1, 2))
    assert in_order == ("a", day(0), None, {"b"})
    for order in itertools.permutations(range(3)):
        assert served(order) == in_order, order


# Session 56: a value conflict becomes a quarantine once the person restates one side, also
# when a late value is held against that restatement's version.
RESTATED_SIDE = [
    "a:create@0/third_party b:create@10/third_party a:create/period",
    "a:supersede@0/third_party b:create@10/third_party a:create/period",
]

# Histories of the search's kind, one or two for each rule session 53 changed: 11 ended
# differently in some order at its start, the other 3 with a first version of its rules
# (`--trust-periods --show` lists the classes left).
HISTORIES = [
    # a third party's value after a trusted version's end, in order
    "a:create/period/third_party b:create/period c:create/period/third_party",
    # the same, arriving in the gap late
    "a:create/period b:create@10/third_party c:create@20/third_party",
    # a late trusted value in a gap, before a less trusted version
    "a:create/period b:create@10 a:create@20/third_party",
    # a late less trusted first value that ended before a trusted create
    "a:create/period/third_party b:create@10 c:create@20",
    # a late trusted first value over less trusted versions on both sides of a gap
    "a:create@0 b:create/period/third_party c:create@20/third_party",
    # a value held for its source follows once a late statement ends the version
    "a:create@0 a:create/period b:create@20/third_party",
    # a restatement after a stated end keeps the end it stated (a split, a given end)
    "a:create@0 b:create/period a:create/period/third_party",
    "a:create@0 a:create/period a:create/period/third_party",
    # a version made trusted late loses a less trusted end (current, held, replaced)
    "a:create@0 a:create@10 a:create/period/third_party",
    "a:create@0 b:create@10 b:create/period/third_party",
    "a:create@0 a:create/period/third_party b:create@20/third_party",
    # a trusted create after an end made void: held in conflict, as in order
    "a:create@0 a:create/period/third_party b:create@20",
    # a trusted create after a gap holds the less trusted first value since it
    "a:create/period b:create@10/third_party c:create@20",
    "a:create/period a:create@10/third_party b:create@20",
    # session 54: a trusted return after a gap replaces the less trusted value since it
    "a:create/period b:supersede@10/third_party a:create@20",
    "a:create/period/third_party b:create@10/third_party a:create@20",
    # session 54: a late dated value replaces the less trusted first value a create held
    "a:supersede@0/third_party b:create/period b:create@20",
    "a:create@0/third_party b:create/period/third_party c:create@20",
    # session 54: a dated trusted restatement adopts the held value, late as in order
    "a:supersede@0/third_party b:create@10 a:create/period",
    # session 54: a late trusted first value before a trusted create after less trusted ones
    "a:supersede@0 b:create/period/third_party c:create@20",
    # session 54: a late restatement of the first value a create held ends it
    "a:supersede@0/third_party a:create/period/third_party b:create@20",
    *RESTATED_SIDE,
]


@pytest.mark.parametrize("spec", HISTORIES)
def test_every_order_ends_as_in_world_order(spec: str) -> None:
    assert_any_order_as_in_order(said(spec))


def test_the_histories_are_three_claims_with_a_period_and_two_trust_levels() -> None:
    """The cases above are of the search's kind (so its counts speak of them)."""
    for spec in HISTORIES:
        claims = said(spec)
        assert len(claims) == 3 and any(c.period for c in claims), spec
        assert {c.trust for c in claims} == {"trusted", "third_party"}, spec
    assert len(set(HISTORIES)) == len(HISTORIES)


@pytest.mark.parametrize("spec", RESTATED_SIDE)
def test_a_person_restating_one_side_of_a_value_conflict_quarantines_the_other(spec: str) -> None:
    """The third party's `a` and `b` stand level (a value conflict) until the person states
    `a` for days 20-25: `b` could not displace `a` then, so it is held in quarantine, in
    every order (a value conflict in all of them until session 56)."""
    for order in itertools.permutations(range(3)):
        with fresh_memory() as mem:
            ingest(mem, said(spec), list(order))
            kinds = [cs.kind for cs in mem.conflicts(subject="alice")]
            assert kinds == [ConflictKind.QUARANTINE], order
