"""Values held alone: an untrusted claim that meets nothing known, in any arrival order.

An untrusted source never makes a value current (SCENARIOS B14, DESIGN invariant 8). Its
claim is held in quarantine against the value in force at its date, and when nothing is
known it is held alone, until a better source speaks. In world order it always met what
was in force; arriving before it, it waits alone, and the value that arrives later must
meet it as it would have in order: held against that value when it differs (every such
value, also when a version filed into history or found to begin earlier covers its date:
`HeldAlone._held_alone_meet_versions`), one row with it when it is the same and the
version is made by a claim dated before it, by whichever path makes it (the held row is the
version: `HeldAlone._create_version`), and a repeat of it from its instant reinforces it
(`_repeated_alone`). Sessions 62 to 64, from hygiene seed 1742363's history and `python
scripts/order_search.py --untrusted`.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from distill.core.models import ConflictKind, Fact, FactStatus
from tests.unit.test_late_edges import at as on_day
from tests.unit.test_late_edges import in_one_run, told_gp
from tests.unit.test_properties import Claim, fresh_memory

HELD, ACTIVE, SUPERSEDED = FactStatus.CANDIDATE, FactStatus.ACTIVE, FactStatus.SUPERSEDED


def ending(
    claims: list[Claim], order: tuple[int, ...], kind: ConflictKind = ConflictKind.QUARANTINE
) -> tuple[list[Any], list[list[str]]]:
    """Every fact of alice's after `claims` arrive in `order`, one claim a run (value,
    status, interval, reinforcements), and the open sets by their members' values (each of
    `kind`)."""
    with fresh_memory() as mem:
        for index in order:
            facts = in_one_run(mem, claims[index])
        by_id: dict[str, Fact] = {f.id: f for f in facts}
        sets = mem.conflicts(subject="alice")
    assert all(cs.kind is kind for cs in sets), sets
    got = sorted(
        (f.value["v"], f.status, f.valid_from, f.valid_to, f.reinforcement_count) for f in facts
    )
    return got, sorted(sorted(by_id[m].value["v"] for m in cs.member_ids) for cs in sets)


@pytest.mark.parametrize("third", ["held", "change"])
def test_values_held_alone_meet_the_version_that_arrives_after_them_in_any_order(
    third: str,
) -> None:
    """An untrusted `3` of day 11, held alone when nothing is known, and a third party's
    change to `4` on day 4 that arrives after it; the third claim is an untrusted `5` for
    days 30-32 (said on day 15: `held`) or a semi-trusted change to `5` on day 24
    (`change`). In world order `4` came first and `3` was held against it (and `5`, when
    untrusted, in a set of its own), whatever the arrival order. Until session 62 only the
    first value held alone met `4` when it was new, and none did when `4` was filed into
    history before the change to `5`: `3` stayed held alone (hygiene seed 1742363's
    history, 52 of its 120 orders)."""
    third_claim = {
        "held": told_gp(2, 15, "5", "untrusted", "supersede", period=(30, 32)),
        "change": told_gp(2, 24, "5", "semi_trusted", "supersede"),
    }[third]
    claims = [told_gp(0, 4, "4", "third_party", "supersede"),
              told_gp(1, 11, "3", "untrusted", "create"), third_claim]  # fmt: skip
    expected = {
        "held": (
            [("3", HELD, on_day(11), None, 0), ("4", ACTIVE, on_day(4), None, 0),
             ("5", HELD, on_day(30), on_day(32), 0)],
            [["3", "4"], ["4", "5"]],
        ),
        "change": (
            [("3", HELD, on_day(11), None, 0), ("4", SUPERSEDED, on_day(4), on_day(24), 0),
             ("5", ACTIVE, on_day(24), None, 0)],
            [["3", "4"]],
        ),
    }[third]  # fmt: skip
    for order in itertools.permutations(range(3)):
        assert ending(claims, order) == expected, order


def test_a_value_held_alone_is_repeated_whatever_arrives_after_it() -> None:
    """The person's `a` of day 0 and an untrusted `a` of day 1 said twice, in every order:
    one version with three statements. Until session 62 the second untrusted `a`, arriving
    while the first waited alone, was held alone too, and the person's `a` then met only
    the first."""
    claims = [told_gp(0, 0, "a", "trusted", "create"),
              told_gp(1, 1, "a", "untrusted", "create"),
              told_gp(2, 1, "a", "untrusted", "create")]  # fmt: skip
    for order in itertools.permutations(range(3)):
        assert ending(claims, order) == ([("a", ACTIVE, on_day(0), None, 2)], []), order


def test_a_value_held_alone_meets_a_version_found_to_begin_before_it() -> None:
    """The person's `a` of day 0 and of day 2, and an untrusted `b` of day 1, in every
    order: `a` from day 0, and `b` held against it. Until session 62, when `b` and the
    later `a` came first, `b` stayed held alone after the earlier `a` moved the version's
    start back past it."""
    claims = [told_gp(0, 0, "a", "trusted", "create"),
              told_gp(1, 1, "b", "untrusted", "create"),
              told_gp(2, 2, "a", "trusted", "create")]  # fmt: skip
    expected = ([("a", ACTIVE, on_day(0), None, 1), ("b", HELD, on_day(1), None, 0)], [["a", "b"]])
    for order in itertools.permutations(range(3)):
        assert ending(claims, order) == expected, order


def test_a_value_held_alone_is_the_version_filed_into_history_around_it() -> None:
    """The person's `a` of day 0, an untrusted `a` of day 1 and the person's change to `b`
    on day 2, in every order: `a` from day 0 to day 2 with both statements, then `b`. When
    the untrusted `a` and `b` came first, `a` arrives late before `b`, the first version, and
    the held row is the version filed into history (`LateArrivals._historical`). Until
    session 62 it stayed held alone beside it."""
    claims = [told_gp(0, 0, "a", "trusted", "create"),
              told_gp(1, 1, "a", "untrusted", "create"),
              told_gp(2, 2, "b", "trusted", "supersede")]  # fmt: skip
    expected = (
        [("a", SUPERSEDED, on_day(0), on_day(2), 1), ("b", ACTIVE, on_day(2), None, 0)],
        [],
    )
    for order in itertools.permutations(range(3)):
        assert ending(claims, order) == expected, order


@pytest.mark.parametrize(
    ("claims", "expected", "kind"),
    [
        pytest.param(
            [told_gp(0, 0, "a", "trusted", "create"),
             told_gp(1, 1, "a", "untrusted", "create"),
             told_gp(2, 2, "b", "third_party", "supersede")],
            ([("a", ACTIVE, on_day(0), None, 1), ("b", HELD, on_day(2), None, 0)], [["a", "b"]]),
            ConflictKind.QUARANTINE,
            id="the-earlier-value-arrives-late-and-takes-the-current-one-over",
        ),
        pytest.param(
            [told_gp(0, 0, "a", "third_party", "create"),
             told_gp(1, 1, "a", "untrusted", "create"),
             told_gp(2, 2, "b", "third_party", "create")],
            ([("a", ACTIVE, on_day(0), None, 1), ("b", HELD, on_day(2), None, 0)], [["a", "b"]]),
            ConflictKind.CONFLICT,
            id="the-earlier-of-two-competing-values-arrives-late",
        ),
        pytest.param(
            [told_gp(0, 0, "a", "trusted", "supersede"),
             told_gp(1, 1, "b", "trusted", "create"),
             told_gp(2, 1, "a", "untrusted", "supersede")],
            ([("a", ACTIVE, on_day(0), None, 1), ("b", HELD, on_day(1), None, 0)], [["a", "b"]]),
            ConflictKind.CONFLICT,
            id="a-trusted-value-of-the-untrusted-ones-day-competes-with-it",
        ),
        pytest.param(
            [told_gp(0, 0, "a", "third_party", "create"),
             told_gp(1, 1, "a", "untrusted", "create"),
             told_gp(2, 1, "b", "trusted", "supersede")],
            ([("a", SUPERSEDED, on_day(0), on_day(1), 1), ("b", ACTIVE, on_day(1), None, 0)], []),
            ConflictKind.QUARANTINE,
            id="filed-before-a-change-of-the-held-values-instant",
        ),
    ],
)  # fmt: skip
def test_a_value_held_alone_is_the_version_a_late_claim_makes_around_it(
    claims: list[Claim], expected: tuple[list[Any], list[list[str]]], kind: ConflictKind
) -> None:
    """An untrusted `a` of day 1, held alone when it arrives first, and a late claim of `a`
    dated before it that becomes a version by a path of its own (a more trusted value
    taking over from a less trusted one, the earlier of two competing values): in every
    order one row of `a` with both statements, as in world order, where the untrusted `a`
    restated it. Until session 63 only a new identity and a version filed into history
    made the held row the version, and the other paths made a row of their own beside it
    (`scripts/order_search.py --untrusted`: 48 of its 212 histories)."""
    for order in itertools.permutations(range(3)):
        got, sets = ending(claims, order, kind)
        assert got == expected[0], order
        assert sets == expected[1], order


def test_a_value_displaced_by_a_more_trusted_one_is_one_row_with_its_restatement() -> None:
    """A third party's `a` of day 0, an untrusted `a` of day 1 and the person's `b` of day 1,
    in every order. In world order `a` was the version, the untrusted `a` restated it, and
    the person's `b` took over from day 1, holding that one row of `a` in quarantine. When
    the third party's `a` arrives last it is held against `b`, and the untrusted `a` held
    alone since is that row (`HeldAlone._held_alone_restating`); when the untrusted `a`
    arrives last it meets the displaced `a` as the version it was on its date
    (`_repeats_displaced`). Until session 63 each made a row of its own: two held `a`s."""
    claims = [told_gp(0, 0, "a", "third_party", "create"),
              told_gp(1, 1, "a", "untrusted", "create"),
              told_gp(2, 1, "b", "trusted", "create")]  # fmt: skip
    expected = ([("a", HELD, on_day(0), None, 1), ("b", ACTIVE, on_day(1), None, 0)], [["a", "b"]])
    for order in itertools.permutations(range(3)):
        assert ending(claims, order) == expected, order


def test_an_untrusted_value_held_against_a_displaced_one_is_the_version_displacing_it() -> None:
    """A third party's `a` of day 0, the person's `b` of day 1 and an untrusted `b` of day 2,
    in every order: in world order `b` took over from day 1, holding `a` in quarantine, and
    the untrusted `b` restated it: one row with both statements. When the person's `b`
    arrives last, the untrusted `b` is held against `a`; the person's `b` displaces `a`
    and takes that held row as its own (`HeldAlone._held_by_no_version`). Until session 63
    the held `b` was handed over to the person's `b` and held against a value of its own."""
    claims = [told_gp(0, 0, "a", "third_party", "create"),
              told_gp(1, 1, "b", "trusted", "create"),
              told_gp(2, 2, "b", "untrusted", "create")]  # fmt: skip
    expected = ([("a", HELD, on_day(0), None, 0), ("b", ACTIVE, on_day(1), None, 1)], [["a", "b"]])
    for order in itertools.permutations(range(3)):
        assert ending(claims, order) == expected, order


def test_a_value_held_before_the_version_of_its_value_is_held_alone() -> None:
    """A third party's `a` of day 0, an untrusted `b` of day 1 and the person's `b` of day 2,
    in every order: the person's `b` takes over from day 2 and holds `a` in quarantine; the
    untrusted `b`, dated before it, is held alone, as when it arrives after the person's
    `b` (nothing was in force on its date). Until session 63, in world order, the person's
    `b` took over what `a` held, and held the untrusted `b` against a value of its own."""
    claims = [told_gp(0, 0, "a", "third_party", "create"),
              told_gp(1, 1, "b", "untrusted", "create"),
              told_gp(2, 2, "b", "trusted", "create")]  # fmt: skip
    expected = (
        [("a", HELD, on_day(0), None, 0), ("b", ACTIVE, on_day(2), None, 0),
         ("b", HELD, on_day(1), None, 0)],
        [["a", "b"], ["b"]],
    )  # fmt: skip
    for order in itertools.permutations(range(3)):
        assert ending(claims, order) == expected, order


@pytest.mark.parametrize("action", ["create", "supersede"])
def test_a_value_held_against_a_displaced_one_and_dated_before_its_successor_is_alone(
    action: str,
) -> None:
    """A third party's `a` of day 0 (current until a better source speaks), an untrusted
    `b` of day 1, and the person's `c` of day 2, in every order: `c` displaces `a` (held
    against `c`), and `b`, dated before `c` began, when nothing the person said was in
    force, is held alone, as when it arrives after `c`. Until session 64, in world order,
    `c` took over what `a` held and held `b` against itself (`_hand_over_held`)."""
    claims = [told_gp(0, 0, "a", "third_party", action),
              told_gp(1, 1, "b", "untrusted", action),
              told_gp(2, 2, "c", "trusted", "create")]  # fmt: skip
    expected = (
        [("a", HELD, on_day(0), None, 0), ("b", HELD, on_day(1), None, 0),
         ("c", ACTIVE, on_day(2), None, 0)],
        [["a", "c"], ["b"]],
    )  # fmt: skip
    for order in itertools.permutations(range(3)):
        assert ending(claims, order) == expected, order


@pytest.mark.parametrize(
    ("first", "change", "sets"),
    [
        ("trusted", "supersede", [["a", "b"]]),
        ("third_party", "supersede", [["a", "b"]]),
        ("third_party", "create", [["a", "c"], ["b"]]),
    ],
)
def test_a_value_held_at_a_changes_instant_whose_words_sort_first_met_the_version_before(
    first: str, change: str, sets: list[list[str]]
) -> None:
    """An `a` of day 0 (the person's or a third party's), an untrusted `b` of day 1 and the
    person's `c` from day 1, in every order: `b` sorts before `c` at their instant, so in
    world order it came first and met `a`, in force then, and was held against it; when
    `c` displaces a third party's `a` (a `create` of a more trusted source), `b` came
    before `c` and is held alone. Until session 64, arriving first, `b` was held alone and
    `a`, filed late, did not take it (its interval ends at day 1), and in world order `c`
    took `b` over from the displaced `a` as if `b` came after `c`."""
    claims = [told_gp(0, 0, "a", first, "create"),
              told_gp(1, 1, "b", "untrusted", "create"),
              told_gp(2, 1, "c", "trusted", change)]  # fmt: skip
    expected = ending(claims, (0, 1, 2))
    assert expected[1] == sets
    for order in itertools.permutations(range(3)):
        assert ending(claims, order) == expected, order
