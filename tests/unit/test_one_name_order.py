"""DESIGN invariant 8 within one name: creates, changes and trust levels in any order.

The property tests cover changes alone (`supersede`) and values of one instant; these cover
what they leave out, with arrival in world-time order as the reference: a claim that arrives
late must end where it would have ended had it come in order. Every history of two claims
(equal or different values, each a `create` or a `supersede`, each from a source of any
trust level) is played in both orders; then the histories of three claims whose
late arrival used to end elsewhere, one test each.

`python scripts/order_search.py --one-name` measures the histories of three claims from a
trusted source that still end differently (README, "Known limits").
"""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

import pytest

from distill import Memory
from distill.core.models import ConflictStatus, FactStatus
from tests.unit.test_properties import Claim, day, final_state, fresh_memory, ingest

ACTIONS = ("create", "supersede")
TRUSTS = ("trusted", "semi_trusted", "third_party", "untrusted")


def history(values: str, actions: tuple[str, ...], trusts: tuple[str, ...]) -> list[Claim]:
    """One claim a day about one person's `gp`, in world order."""
    return [
        Claim(f"e{i}", "alice", day(i), predicate="gp", value=v, action=a, trust=t)
        for i, (v, a, t) in enumerate(zip(values, actions, trusts, strict=True))
    ]


def open_sets(mem: Memory) -> Counter[tuple[str, tuple[str, ...]]]:
    """The open sets as content: their kind and members by value and status."""
    return Counter(
        (
            c.kind.value,
            tuple(sorted(f"{mem.fact(m).value}:{mem.fact(m).status.value}" for m in c.member_ids)),
        )
        for c in mem.conflicts(status=ConflictStatus.OPEN)
    )


def ending(claims: list[Claim], order: list[int]) -> tuple[Any, ...]:
    with fresh_memory(max_distance=0.0) as mem:
        keys = ingest(mem, claims, order)
        return final_state(mem, keys), open_sets(mem)


def assert_any_order_as_in_order(claims: list[Claim]) -> None:
    expected = ending(claims, list(range(len(claims))))
    for order in itertools.permutations(range(len(claims))):
        assert ending(claims, list(order)) == expected, order


@pytest.mark.parametrize(
    ("values", "actions", "trusts"),
    list(
        itertools.product(
            ["aa", "ab"], itertools.product(ACTIONS, repeat=2), itertools.product(TRUSTS, repeat=2)
        )
    ),
    ids=lambda p: "-".join(p) if isinstance(p, tuple) else p,
)
def test_every_history_of_two_claims_ends_as_in_order(
    values: str, actions: tuple[str, ...], trusts: tuple[str, ...]
) -> None:
    assert_any_order_as_in_order(history(values, actions, trusts))


def test_a_later_create_is_held_against_an_earlier_change_in_either_order() -> None:
    """In order the change is filed (nothing known), and the later `create` of another value
    is held in conflict against it: the earlier value stays active, whichever came first."""
    claims = history("ab", ("supersede", "create"), ("trusted", "trusted"))
    for order in ([0, 1], [1, 0]):
        with fresh_memory(max_distance=0.0) as mem:
            ingest(mem, claims, order)
            (current,) = mem.facts(subject="alice")
            assert current.value == {"v": "a"}
            (held,) = mem.conflicts(subject="alice")
            assert {mem.fact(m).status for m in held.member_ids} == {
                FactStatus.ACTIVE,
                FactStatus.CANDIDATE,
            }


def test_a_less_trusted_change_is_held_against_a_trusted_value_that_arrives_late() -> None:
    """Trusted `a` on day 0, a third party's change to `b` on day 1: in order the change may
    not displace the trusted value and is quarantined. Arriving second, the trusted value
    now quarantines the change instead of becoming its history."""
    claims = history("ab", ("create", "supersede"), ("trusted", "third_party"))
    with fresh_memory(max_distance=0.0) as mem:
        ingest(mem, claims, [1, 0])
        (current,) = mem.facts(subject="alice")
        assert current.value == {"v": "a"}
        (held,) = mem.conflicts(subject="alice")
        assert held.kind.value == "quarantine"
    assert_any_order_as_in_order(claims)


def test_a_less_trusted_value_before_the_first_version_is_its_history() -> None:
    """A third party's `a` on day 0 reaches the store after a trusted change to `b` on day 1:
    in order `a` came first and the trusted change replaced it. It is history, not a
    quarantined claim against a fact it never met."""
    claims = history("ab", ("create", "supersede"), ("third_party", "trusted"))
    with fresh_memory(max_distance=0.0) as mem:
        ingest(mem, claims, [1, 0])
        (current,) = mem.facts(subject="alice")
        assert current.value == {"v": "b"}
        assert mem.conflicts(subject="alice", status=None) == []
        old = [f for f in mem.facts(subject="alice", include_retired=True) if f.id != current.id]
        assert [(f.value, f.status) for f in old] == [({"v": "a"}, FactStatus.SUPERSEDED)]
    assert_any_order_as_in_order(claims)


@pytest.mark.parametrize("order", [[0, 1, 2], [0, 2, 1]], ids=["in-order", "restated-first"])
def test_a_value_held_in_conflict_dates_from_its_first_statement(order: list[int]) -> None:
    """`a`, then `b` on days 1 and 2 (creates): `b` is held in conflict from day 1, whichever
    of its statements arrived first."""
    claims = history("abb", ("create",) * 3, ("trusted",) * 3)
    with fresh_memory(max_distance=0.0) as mem:
        ingest(mem, claims, order)
        everything = mem.facts(subject="alice", include_retired=True)
        (held,) = [f for f in everything if f.status is FactStatus.CANDIDATE]
        assert held.valid_from == day(1)
        assert held.reinforcement_count == 1


@pytest.mark.parametrize(
    "actions", [("create", "create", "supersede"), ("create", "supersede", "create")]
)
def test_a_change_to_the_value_held_in_conflict_makes_it_current(
    actions: tuple[str, ...],
) -> None:
    """`a` on day 0, `b` on days 1 and 2, one of them a create held in conflict and the other
    a change: `b` is current from day 1, one version, and the set is resolved by the change.
    In order, and with the day-2 claim first."""
    claims = history("abb", actions, ("trusted",) * 3)
    for order in ([0, 1, 2], [0, 2, 1]):
        with fresh_memory(max_distance=0.0) as mem:
            ingest(mem, claims, order)
            (current,) = mem.facts(subject="alice")
            assert (current.value, current.valid_from) == ({"v": "b"}, day(1))
            assert current.reinforcement_count == 1
            assert mem.conflicts(subject="alice") == []  # open ones
            everything = mem.facts(subject="alice", include_retired=True)
            assert sorted(f.status.value for f in everything) == ["active", "superseded"]


@pytest.mark.parametrize(
    ("values", "actions"),
    [
        ("aba", ("create", "create", "create")),  # the late `a` is restated by the held `a`
        ("aba", ("create", "supersede", "create")),  # the held `a` is a return once `a` is known
        ("abb", ("create", "supersede", "create")),  # `b` began as a change
        ("abb", ("supersede", "supersede", "create")),
    ],
    ids=["restated-rival", "return", "began-as-a-change", "began-as-a-change-2"],
)
def test_three_claims_end_as_in_order_whatever_arrives_last(
    values: str, actions: tuple[str, ...]
) -> None:
    """Histories of three claims whose earliest claim arriving last used to end elsewhere."""
    assert_any_order_as_in_order(history(values, actions, ("trusted",) * 3))


@pytest.mark.parametrize("values", ["aa", "ab"], ids=["same-value", "another-value"])
def test_an_untrusted_claim_held_alone_meets_the_earlier_value_that_arrives_late(
    values: str,
) -> None:
    """An untrusted claim that came first is held alone (nothing was known). A trusted
    value dated before it then arrives: in order the untrusted claim would have met it, so
    the same value is reinforced by it (one fact, no set left open) and another value is
    held against it (one quarantine set of both)."""
    claims = history(values, ("create", "create"), ("trusted", "untrusted"))
    with fresh_memory(max_distance=0.0) as mem:
        ingest(mem, claims, [1, 0])
        (current,) = mem.facts(subject="alice")
        assert current.value == {"v": "a"}
        held = mem.conflicts(subject="alice")
        if values == "aa":
            assert held == []
            assert current.reinforcement_count == 1
        else:
            (quarantine,) = held
            assert current.id in quarantine.member_ids and len(quarantine.member_ids) == 2
    assert_any_order_as_in_order(claims)


@pytest.mark.parametrize("late_action", ACTIONS)
@pytest.mark.parametrize("order", [[0, 1], [1, 0]], ids=["in-order", "reversed"])
def test_a_create_dated_by_its_own_valid_from_replaces_the_value_before_it(
    late_action: str, order: list[int]
) -> None:
    """A `create` that carries its own `valid_from`, after the known value, replaces it in
    world order (`Adjudicator._state`); arriving first, it is not mistaken for an undated
    create when the earlier value comes: the earlier value is history, not the active
    side of a conflict (its record: `Support.change`, read from its observation)."""
    claims: list[dict[str, Any]] = [
        {"occurred_at": day(0), "value": "a", "action": late_action},
        {"occurred_at": day(1), "value": "b", "action": "create", "valid_from": day(1)},
    ]
    with fresh_memory(max_distance=0.0) as mem:
        for index in order:
            claim = claims[index]
            mem.add_event(
                subject="alice",
                text=f"gp is {claim['value']}",
                occurred_at=claim["occurred_at"],
                claims=[
                    {"predicate": "gp", "value": {"v": claim["value"]}}
                    | {k: v for k, v in claim.items() if k in ("action", "valid_from")}
                ],
            )
            assert mem.consolidate().jobs_failed == 0
        (current,) = mem.facts(subject="alice")
        assert current.value == {"v": "b"}
        assert mem.conflicts(subject="alice", status=None) == []
        (old,) = [f for f in mem.facts(subject="alice", include_retired=True) if f != current]
        assert (old.value, old.status, old.valid_to) == ({"v": "a"}, FactStatus.SUPERSEDED, day(1))
