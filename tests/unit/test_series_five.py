"""Five claims, any order: returns and series values that a late claim reaches through others.

`python scripts/order_search.py --five 40 --seed 1` found 9 of 40 five-claim histories that
end differently in some order at 7796e57 (session 59's start). In each, a late claim had to
reach a value through a version or two in between, where the four-claim rules (session 58,
`test_series.py`) looked one step away only: a return held against a version replaced since
by more than one other, a return the series kept as an event, a change adopting a value its
series had made an event of, the values of a series once one of them becomes a version.
Each named test below is one order of one of those histories, and fails on the code before
this session's change; the histories are then played in all 120 orders each.

One of the nine is left (`abcbc`, `sccsc`): an arrival order makes a second fact of a value
that world order files as a restatement of the first, and a fact once written is never
deleted (invariant 1), as with `--four 240`'s last two. 2 of `abcdc`'s 120 orders were left
at the end of session 59 and are ended as in order since session 60 (the last test).
"""

from __future__ import annotations

import pytest

from distill.core.models import ConflictKind, FactKind, FactStatus
from tests.unit.test_one_name_order import assert_any_order_as_in_order, ending
from tests.unit.test_series import series, served

STATE, EVENT = FactKind.STATE, FactKind.EVENT
ACTIVE, SUPERSEDED = FactStatus.ACTIVE, FactStatus.SUPERSEDED
CANDIDATE = FactStatus.CANDIDATE


def test_a_return_held_against_a_version_replaced_twice_since_is_a_version() -> None:
    """`b` (a change), `c` (a change), `a` and the change to `b` arrive first; `a` of day 3
    is held against `c`, which `b` replaced on day 4. Then `a` of day 0: in order `a` of day
    3 returned to it, and was a version until `b` replaced it."""
    expected = {
        "facts": [
            ("a", STATE, SUPERSEDED),
            ("a", STATE, SUPERSEDED),
            ("b", STATE, ACTIVE),
            ("b", STATE, SUPERSEDED),
            ("c", STATE, SUPERSEDED),
        ],
        "sets": [],
    }
    assert served([1, 2, 3, 4, 0], "abcab", "csscs") == expected
    assert served([0, 1, 2, 3, 4], "abcab", "csscs") == expected


def test_a_return_to_a_value_only_held_is_undone_past_versions_between() -> None:
    """`b`, the changes to `c` and `d`, and `b` again arrive first: the second `b` returns
    to the first. Then the change to `a` of day 0: the first `b` was only held against it,
    so the second had nothing to return to and is held against `d`, two versions on."""
    expected = {
        "facts": [
            ("a", STATE, SUPERSEDED),
            ("b", STATE, CANDIDATE),
            ("b", STATE, CANDIDATE),
            ("c", STATE, SUPERSEDED),
            ("d", STATE, ACTIVE),
        ],
        "sets": [(ConflictKind.CONFLICT, ("a", "b")), (ConflictKind.CONFLICT, ("b", "d"))],
    }
    assert served([1, 2, 3, 4, 0], "abcdb", "scssc") == expected
    assert served([0, 1, 2, 3, 4], "abcdb", "scssc") == expected


def test_a_return_kept_as_an_event_of_a_replaced_version_is_a_version() -> None:
    """The change to `b`, then `a` and `c` (events of `b`'s series), then the change to `d`.
    `a` of day 0 arrives last: `a` of day 2 returned to it, a version until `d`, and `c`,
    the one value said after it, is held against it."""
    expected = {
        "facts": [
            ("a", STATE, SUPERSEDED),
            ("a", STATE, SUPERSEDED),
            ("b", STATE, SUPERSEDED),
            ("c", STATE, CANDIDATE),
            ("d", STATE, ACTIVE),
        ],
        "sets": [(ConflictKind.CONFLICT, ("a", "c"))],
    }
    assert served([1, 2, 3, 4, 0], "abacd", "csccs") == expected
    assert served([0, 1, 2, 3, 4], "abacd", "csccs") == expected


def test_a_late_change_inside_a_split_version_adopts_an_event_of_its_value() -> None:
    """`a`, `b` held against it, `a` restated (day 3) and `c`: `b` and `c` are events of
    `a`'s series. The change to `b` of day 2 arrives last: in order it adopted the held `b`
    (a version from day 1), `a` of day 3 returned, and `c` is held against that `a`."""
    expected = {
        "facts": [
            ("a", STATE, ACTIVE),
            ("a", STATE, SUPERSEDED),
            ("b", STATE, SUPERSEDED),
            ("c", STATE, CANDIDATE),
        ],
        "sets": [(ConflictKind.CONFLICT, ("a", "c"))],
    }
    assert served([0, 1, 3, 4, 2], "abbac", "scssc") == expected
    assert served([0, 1, 2, 3, 4], "abbac", "scssc") == expected


def test_an_adoption_undone_leaves_the_values_as_events_of_the_series() -> None:
    """`a`, `b`, `c` (two events), then the change to `c` of day 4, which made the event `c`
    the version from day 2. The change to `d` of day 3 arrives last: that change adopted
    nothing, and `b` and `c` are events of `a`'s series again, not a value held."""
    expected = {
        "facts": [
            ("a", STATE, SUPERSEDED),
            ("b", EVENT, ACTIVE),
            ("c", EVENT, ACTIVE),
            ("c", STATE, ACTIVE),
            ("d", STATE, SUPERSEDED),
        ],
        "sets": [],
    }
    assert served([0, 1, 2, 4, 3], "abcdc", "cccss") == expected
    assert served([0, 1, 2, 3, 4], "abcdc", "cccss") == expected


def test_a_late_change_is_restated_by_an_event_its_version_kept() -> None:
    """`a`, `b`, `c` of day 3 (two events), then the change to `d`. The change to `c` of
    day 2 arrives last: in order it replaced `a`, `c` of day 3 restated it, and `b` is
    held against `a`."""
    expected = {
        "facts": [
            ("a", STATE, SUPERSEDED),
            ("b", STATE, CANDIDATE),
            ("c", STATE, SUPERSEDED),
            ("d", STATE, ACTIVE),
        ],
        "sets": [(ConflictKind.CONFLICT, ("a", "b"))],
    }
    assert served([0, 1, 3, 4, 2], "abccd", "ccscs") == expected
    assert served([0, 1, 2, 3, 4], "abccd", "ccscs") == expected


def test_a_late_first_value_restated_since_undoes_a_return() -> None:
    """`c`, the change to `a` (day 3) and `c` again (a return) arrive first, then the change
    to `a` of day 0 (restated by that of day 3) and the change to `b`. The first `c` was
    only held: the second is held against `a`, as in order."""
    expected = {
        "facts": [
            ("a", STATE, ACTIVE),
            ("a", STATE, SUPERSEDED),
            ("b", STATE, SUPERSEDED),
            ("c", STATE, CANDIDATE),
            ("c", STATE, CANDIDATE),
        ],
        "sets": [(ConflictKind.CONFLICT, ("a", "c")), (ConflictKind.CONFLICT, ("b", "c"))],
    }
    assert served([2, 3, 4, 0, 1], "abcac", "sscsc") == expected
    assert served([0, 1, 2, 3, 4], "abcac", "sscsc") == expected


def test_a_return_kept_as_an_event_and_restated_after_splits_the_version() -> None:
    """The change to `b`, `a`, the change to `b` again, and `c`: `a` and `c` are events of
    `b`'s series. `a` of day 0 arrives last: `a` of day 2 returned to it, `b` of day 3 to
    `b`, and `c` is held against that `b`."""
    expected = {
        "facts": [
            ("a", STATE, SUPERSEDED),
            ("a", STATE, SUPERSEDED),
            ("b", STATE, ACTIVE),
            ("b", STATE, SUPERSEDED),
            ("c", STATE, CANDIDATE),
        ],
        "sets": [(ConflictKind.CONFLICT, ("b", "c"))],
    }
    assert served([1, 2, 3, 4, 0], "ababc", "cscsc") == expected
    assert served([0, 1, 2, 3, 4], "ababc", "cscsc") == expected


def test_a_held_value_restated_earlier_is_settled_with_its_series() -> None:
    """The change to `a`, then `c` and `d` (two events) and `b` of day 4 (held). `b` of day
    1 arrives last and restates the held `b`, which now holds from day 1: in order `b` and
    `c` were events and `d` is held. (Found by `--five 40 --seed 3`, after the rules above.)"""
    expected = {
        "facts": [
            ("a", STATE, ACTIVE),
            ("b", EVENT, ACTIVE),
            ("c", EVENT, ACTIVE),
            ("d", STATE, CANDIDATE),
        ],
        "sets": [(ConflictKind.CONFLICT, ("a", "d"))],
    }
    assert served([0, 2, 3, 4, 1], "abcdb", "scccc") == expected
    assert served([0, 1, 2, 3, 4], "abcdb", "scccc") == expected


# The histories above whose every order ends as in order now (values a day apart).
FIVE = [
    ("abcab", "csscs"),
    ("abcdb", "scssc"),
    ("abacd", "csccs"),
    ("abbac", "scssc"),
    ("abccd", "ccscs"),
    ("abcac", "sscsc"),
    ("ababc", "cscsc"),
    ("abcdb", "scccc"),
]


@pytest.mark.parametrize(("values", "actions"), FIVE, ids=lambda p: p)
def test_every_order_of_these_five_claims_ends_as_in_order(values: str, actions: str) -> None:
    assert_any_order_as_in_order(series(values, actions))


def test_an_adoption_is_undone_when_the_version_it_met_is_held_since() -> None:
    """`b`, `c` and the change to `c` (day 4) arrive before `a` and the change to `d`: the
    change adopted the held `c` by resolving the set of `b` and `c`, and when `a` comes
    first `b` is held against `a` while that set stays resolved for `c`. The late change to
    `d` (day 3) shows that the change to `c` came after it and adopted nothing: until
    session 60 `Splits._adoption_undone` asked for a resolved set of `a` and `c`, found
    none, and `d` split `c` instead. The set is reopened as one of `a` and `c`, and, as in
    order, `b` and `c` are events of `a`'s series; every one of the 120 orders ends so."""
    claims = series("abcdc", "cccss")
    assert ending(claims, [1, 2, 4, 0, 3]) == ending(claims, [0, 1, 2, 3, 4])
    assert_any_order_as_in_order(claims)
