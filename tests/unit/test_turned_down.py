"""A current value a person replaces with one that began no later is turned down.

Keeping a held value that began at the instant the current one began (or before) leaves the
current one an empty interval: it was never true, a value turned down, as a candidate not
kept is. The earlier of two versions of one instant also has an empty interval, and the
rules tell the two apart by whether the next version names it (`timeline.overruled`); so
the kept value follows the version before the one it turned down, never that one, whether it
becomes current or is filed into history (hygiene seeds 1375924 and 1470967, where a late
claim took the turned-down value for a version and was held in quarantine against it).
A version after the kept value's start is turned down too, and what it held from then on
is held against the kept value (seed 1538916).
"""

from __future__ import annotations

from distill.core.models import ConflictKind, Fact, FactStatus, Trust
from tests.unit.test_late_edges import at, in_one_run, told_gp
from tests.unit.test_properties import fresh_memory


def test_a_value_kept_at_the_current_ones_instant_turns_it_down_for_good() -> None:
    """An untrusted 4 for days 13-17, a third party's 5 of day 3 and a semi-trusted 3 of
    day 13: the 3 is current and holds the other two for their sources. A person keeps the
    3 over the 5, then the 4 over the 3 (the 3 is turned down). A late trusted 4 of day 1
    then restates the kept 4 from day 1; the 3 stays turned down, in no set."""
    with fresh_memory() as mem:
        in_one_run(
            mem,
            told_gp(0, 1, "4", "untrusted", "supersede", period=(13, 17)),
            told_gp(1, 3, "5", "third_party", "supersede"),
            told_gp(2, 13, "3", "semi_trusted", "create"),
        )

        def value(fact_id: str) -> str:
            return str((mem.fact(fact_id).value or {})["v"])

        sets = mem.conflicts(subject="alice")
        over_5 = next(cs for cs in sets if "5" in map(value, cs.member_ids))
        over_4 = next(cs for cs in sets if "4" in map(value, cs.member_ids))
        three = next(m for m in over_5.member_ids if value(m) == "3")
        four = next(m for m in over_4.member_ids if value(m) == "4")
        mem.resolve_conflict(over_5.id, keep=three)
        mem.resolve_conflict(over_4.id, keep=four)

        turned = mem.fact(three)
        assert (turned.status, turned.valid_from, turned.valid_to) == (
            FactStatus.SUPERSEDED, at(13), at(13),
        )  # fmt: skip
        assert mem.fact(four).supersedes_id != three  # no version names it

        facts = in_one_run(mem, told_gp(3, 1, "4", "trusted", "create"))

        assert mem.fact(three) == turned
        assert mem.conflicts(subject="alice") == []
        (current,) = [f for f in facts if f.live]
        assert (current.id, current.valid_from, current.valid_to, current.trust) == (
            four, at(1), at(17), Trust.TRUSTED,
        )  # fmt: skip


def test_the_kept_value_follows_the_version_before_the_one_it_turned_down() -> None:
    """A trusted `a` of day 0, a trusted change to `b` on day 5 and an untrusted `c` of day
    5, held against `b`. Keeping `c` turns `b` down (they began together): `a` ends where
    `c` begins and `c` follows it, both ways."""
    with fresh_memory() as mem:
        in_one_run(mem, told_gp(0, 0, "a", "trusted", "create"))
        in_one_run(mem, told_gp(1, 5, "b", "trusted", "supersede"))
        in_one_run(mem, told_gp(2, 5, "c", "untrusted", "supersede"))
        (held,) = mem.conflicts(subject="alice")
        (c,) = [m for m in held.member_ids if mem.fact(m).value == {"v": "c"}]

        mem.resolve_conflict(held.id, keep=c)

        facts = {str((f.value or {})["v"]): f for f in mem.facts("alice", include_retired=True)}
        a, b, kept = facts["a"], facts["b"], facts["c"]
        assert (b.valid_from, b.valid_to, b.superseded_by) == (at(5), at(5), kept.id)
        assert (a.valid_to, a.superseded_by) == (at(5), kept.id)
        assert (kept.status, kept.supersedes_id) == (FactStatus.ACTIVE, a.id)


def test_what_a_version_turned_down_held_is_held_against_the_kept_value() -> None:
    """The person's `a` of day 40 holds a semi-trusted `r` of day 13 and `g` of day 14. A
    late semi-trusted `a` of day 5 makes `g` a version before the person's `a`, and a third
    party's `a` for days 21-28 is held against `g`. A person then keeps `r`, current from
    day 13: `g`, which began after it, is turned down, and the third party's `a`, said
    while `r` held, is held against `r` (hygiene seed 1538916: it stayed held against `g`,
    a set open over a value no longer a version)."""
    with fresh_memory() as mem:
        in_one_run(
            mem,
            told_gp(0, 40, "a", "trusted", "create"),
            told_gp(1, 13, "r", "semi_trusted", "supersede"),
            told_gp(2, 14, "g", "semi_trusted", "supersede"),
        )
        in_one_run(
            mem,
            told_gp(3, 5, "a", "semi_trusted", "create"),
            told_gp(4, 41, "a", "third_party", "supersede", period=(21, 28)),
        )

        def named(value: str) -> Fact:
            (fact,) = [
                f for f in mem.facts("alice", include_retired=True) if f.value == {"v": value}
            ]
            return fact

        over_r = next(cs for cs in mem.conflicts(subject="alice") if named("r").id in cs.member_ids)
        mem.resolve_conflict(over_r.id, keep=named("r").id)

        g = named("g")
        assert (g.valid_from, g.valid_to) == (at(14), at(14))  # turned down
        (held,) = mem.conflicts(subject="alice")
        assert held.kind is ConflictKind.QUARANTINE
        (third_party,) = [m for m in held.member_ids if m != named("r").id]
        assert set(held.member_ids) == {named("r").id, third_party}
        assert mem.fact(third_party).valid_from == at(21)


def test_what_the_replaced_version_held_after_the_kept_value_began_is_held_against_it() -> None:
    """The person's `c` of day 10 holds an untrusted `k` of day 12 and a third party's `r`
    of day 15 in two sets. A person keeps `k`, current from day 12: `r`, said while `k`
    held, is held against `k` now, in a value conflict (a third party's source does not
    yield to an untrusted one; the person decides), not against `c` (hygiene seed 1538916,
    whose `c` the decision turned down)."""
    with fresh_memory() as mem:
        (c,) = in_one_run(mem, told_gp(0, 10, "c", "trusted", "create"))
        in_one_run(mem, told_gp(1, 12, "k", "untrusted", "supersede"))
        in_one_run(mem, told_gp(2, 15, "r", "third_party", "supersede"))
        sets = mem.conflicts(subject="alice")
        (over_k,) = [
            cs for cs in sets if any(mem.fact(m).value == {"v": "k"} for m in cs.member_ids)
        ]
        (k,) = [m for m in over_k.member_ids if m != c.id]

        mem.resolve_conflict(over_k.id, keep=k)

        (held,) = mem.conflicts(subject="alice")
        assert held.kind is ConflictKind.CONFLICT
        assert k in held.member_ids and c.id not in held.member_ids
        assert (mem.fact(c.id).valid_to, mem.fact(k).status) == (at(12), FactStatus.ACTIVE)


def test_a_version_a_decision_turned_down_passes_what_it_held_to_the_kept_value() -> None:
    """A semi-trusted `a` of day 40 holds a third party's `c` of day 17 and its change to
    `b` on day 2. A person keeps `c`: `a`, which began after it, is turned down, and `b`,
    dated before `c`, was held against `a` alone. A value nobody holds holds nothing: `b`
    is held against the kept `c`, in a value conflict (a third party's source against a
    third party's), for the person to decide (hygiene seed 1560854)."""
    with fresh_memory() as mem:
        (a,) = in_one_run(mem, told_gp(0, 40, "a", "semi_trusted", "create"))
        in_one_run(
            mem,
            told_gp(1, 17, "c", "third_party", "create"),
            told_gp(2, 2, "b", "third_party", "supersede"),
        )
        sets = mem.conflicts(subject="alice")
        (over_c,) = [
            cs for cs in sets if any(mem.fact(m).value == {"v": "c"} for m in cs.member_ids)
        ]
        (c,) = [m for m in over_c.member_ids if m != a.id]

        mem.resolve_conflict(over_c.id, keep=c)

        assert (mem.fact(a.id).valid_from, mem.fact(a.id).valid_to) == (at(40), at(40))
        (held,) = mem.conflicts(subject="alice")
        (b,) = [m for m in held.member_ids if m != c]
        assert (held.kind, set(held.member_ids)) == (ConflictKind.CONFLICT, {c, b})
        assert mem.fact(b).value == {"v": "b"}


def test_a_version_a_value_kept_into_history_overlaps_passes_on_what_was_said_inside_it() -> None:
    """The person's `a` of day 4, restated on day 12, holds a semi-trusted `b` of day 4 and
    an untrusted `c` of day 23; the person's change to `b` on day 32 replaces `a`. A
    person then keeps the held `b`, which is filed into history from day 4 to day 32 and
    turns `a` down; `c`, said inside that interval, is held against the kept `b` in
    quarantine (hygiene seed 1425121, where it stayed held against the turned-down `a`)."""
    with fresh_memory() as mem:
        in_one_run(
            mem,
            told_gp(0, 4, "a", "trusted", "create"),
            told_gp(4, 12, "a", "trusted", "create"),
            told_gp(1, 4, "b", "semi_trusted", "create"),
            told_gp(2, 32, "b", "trusted", "supersede"),
            told_gp(3, 23, "c", "untrusted", "supersede"),
        )
        sets = mem.conflicts(subject="alice")
        facts = mem.facts("alice", include_retired=True)
        (held_b,) = [f.id for f in facts if f.value == {"v": "b"} and f.status.value == "candidate"]
        (over_b,) = [cs for cs in sets if held_b in cs.member_ids]

        mem.resolve_conflict(over_b.id, keep=held_b)

        kept = mem.fact(held_b)
        assert (kept.status, kept.valid_from, kept.valid_to) == (
            FactStatus.SUPERSEDED, at(4), at(32),
        )  # fmt: skip
        (held,) = mem.conflicts(subject="alice")
        assert held.kind is ConflictKind.QUARANTINE
        (c,) = [m for m in held.member_ids if m != held_b]
        assert set(held.member_ids) == {held_b, c} and mem.fact(c).value == {"v": "c"}


def test_a_value_of_the_instant_a_kept_value_ends_is_held_against_it() -> None:
    """An untrusted `g` of day 5, held alone, and the person's `g` for days 22-30; then
    the person's change to `r` on day 5 and a semi-trusted change to `b` on day 22, which
    meets `r` (its words sort before the person's `g` of that instant) and is held. A
    person keeps the untrusted `g`: it is filed into history from day 5 to day 22 and turns
    `r` down, and `b` is held against the kept `g` in a value conflict (seed 1561424)."""
    with fresh_memory() as mem:
        in_one_run(
            mem,
            told_gp(0, 5, "g", "untrusted", "supersede"),
            told_gp(1, 23, "g", "trusted", "create", period=(22, 30)),
        )
        in_one_run(
            mem,
            told_gp(2, 5, "r", "trusted", "supersede"),
            told_gp(3, 22, "b", "semi_trusted", "supersede"),
        )
        sets = mem.conflicts(subject="alice")
        (alone,) = [cs for cs in sets if len(cs.member_ids) == 1]
        (g,) = alone.member_ids

        mem.resolve_conflict(alone.id, keep=g)

        (r,) = [f for f in mem.facts("alice", include_retired=True) if f.value == {"v": "r"}]
        assert (r.valid_from, r.valid_to) == (at(5), at(5))
        assert (mem.fact(g).valid_from, mem.fact(g).valid_to) == (at(5), at(22))
        (held,) = mem.conflicts(subject="alice")
        (b,) = [m for m in held.member_ids if m != g]
        assert (held.kind, set(held.member_ids)) == (ConflictKind.CONFLICT, {g, b})
        assert mem.fact(b).value == {"v": "b"}


def test_a_value_kept_into_history_at_a_versions_instant_names_the_version_before_it() -> None:
    """The person's `green` of day 28; then an untrusted `red` for days 13-16, held alone,
    and the person's `blue` of day 13, filed into history before `green`, which takes `red`
    into quarantine against it (in world order `red` met `blue`). A person keeps
    `red`: it is filed into history from day 13 to day 16 and turns `blue` down (they began
    together), so `red` follows what `blue` followed (nothing), never `blue`. A third
    party's `green` for days 11-19, told late, then meets `red`, the value the person kept
    there: it was the first value until `red` began, and no set weighs it against the
    turned-down `blue` (hygiene seed 1470967, where `red` named `blue`, which therefore
    read as the earlier of two versions of one instant and held that `green`)."""
    with fresh_memory() as mem:
        in_one_run(mem, told_gp(0, 28, "green", "trusted", "supersede"))
        in_one_run(
            mem,
            told_gp(1, 5, "red", "untrusted", "create", period=(13, 16)),
            told_gp(2, 13, "blue", "trusted", "create"),
        )
        (held,) = mem.conflicts(subject="alice")
        (red,) = [m for m in held.member_ids if mem.fact(m).value == {"v": "red"}]
        (blue_id,) = [m for m in held.member_ids if m != red]
        assert (held.kind, mem.fact(blue_id).value) == (ConflictKind.QUARANTINE, {"v": "blue"})

        mem.resolve_conflict(held.id, keep=red)

        facts = {str((f.value or {})["v"]): f for f in mem.facts("alice", include_retired=True)}
        blue = facts["blue"]
        assert (blue.valid_from, blue.valid_to, blue.superseded_by) == (at(13), at(13), red)
        assert (mem.fact(red).valid_from, mem.fact(red).supersedes_id) == (at(13), None)

        in_one_run(mem, told_gp(3, 14, "green", "third_party", "create", period=(11, 19)))

        assert mem.conflicts(subject="alice") == []
        (late,) = [
            f
            for f in mem.facts("alice", include_retired=True)
            if f.value == {"v": "green"} and f.trust is Trust.THIRD_PARTY
        ]
        assert (late.status, late.valid_from, late.valid_to) == (
            FactStatus.SUPERSEDED, at(11), at(13),
        )  # fmt: skip
        assert (late.superseded_by, mem.fact(red).supersedes_id) == (red, late.id)
        assert mem.fact(blue.id) == blue
