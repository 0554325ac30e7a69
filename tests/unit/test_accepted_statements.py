"""The statements a person accepted by keeping a value stay accepted after a split.

Keeping a value held for its untrusted source accepts the statements behind it: they are
served. A late change can split that fact, and the part after the change is a new fact
whose statements are either ones the person saw (served again after the change) or ones
consolidated since, which nobody accepted (held for their source, as any untrusted
statement is). The resolved set records which were which (`ConflictSet.accepted_event_ids`,
schema 23); hygiene class 34 (seed 1319028) and seed 1330743 are the two sides.
"""

from __future__ import annotations

from distill.core.models import ConflictKind, ConflictStatus, FactStatus, Trust
from tests.unit.test_late_edges import at, in_one_run, kept_alone, told_gp
from tests.unit.test_properties import fresh_memory


def test_resolving_a_set_records_the_statements_of_the_fact_kept() -> None:
    """Keeping a member records its source events then; keeping none records nothing."""
    with fresh_memory() as mem:
        in_one_run(mem, told_gp(0, 29, "a", "untrusted", "create"))
        (held,) = mem.conflicts(subject="alice")
        (a,) = held.member_ids
        sources = mem.fact(a).source_event_ids
        assert len(sources) == 1
        mem.resolve_conflict(held.id, keep=a)
        (resolved,) = mem.conflicts(subject="alice", status=ConflictStatus.RESOLVED)
        assert resolved.accepted_event_ids == sources

        in_one_run(mem, told_gp(2, 31, "b", "untrusted", "supersede"))
        (held,) = mem.conflicts(subject="alice")
        mem.resolve_conflict(held.id, keep=None)
        after = mem.conflicts(subject="alice", status=ConflictStatus.RESOLVED)
        assert [cs.accepted_event_ids for cs in after if cs.id == held.id] == [()]


def test_a_late_change_leaves_a_value_a_person_kept_served_after_it() -> None:
    """An untrusted `a` of day 29, held, kept by a person; then, late, a semi-trusted
    create of `a` on day 3 and a semi-trusted change to `b` for days 8-9. The change splits
    `a`; the part after it is the value the person accepted, served again after `b` ended,
    not held in quarantine for its source. A trusted `a` of day 7 then arriving holds `b`
    instead, as in world order (hygiene class 34, seed 1319028, where `b` stayed current
    over the trusted `a`)."""
    with fresh_memory() as mem:
        kept_alone(mem, told_gp(0, 29, "a", "untrusted", "create"))

        facts = in_one_run(
            mem, told_gp(1, 3, "a", "semi_trusted", "create"),
            told_gp(2, 6, "b", "semi_trusted", "supersede", period=(8, 9)),
        )  # fmt: skip

        assert mem.conflicts(subject="alice") == []
        served = [(f.value, f.valid_from, f.valid_to) for f in facts if f.live]
        assert served == [({"v": "a"}, at(29), None)]

        facts = in_one_run(mem, told_gp(3, 7, "a", "trusted", "create"))

        (current,) = [f for f in facts if f.status is FactStatus.ACTIVE]
        assert (current.value, current.valid_from, current.trust) == (
            {"v": "a"},
            at(3),
            Trust.TRUSTED,
        )
        (quarantine,) = mem.conflicts(subject="alice")
        assert quarantine.kind is ConflictKind.QUARANTINE
        assert [mem.fact(m).value for m in quarantine.member_ids if m != current.id] == [{"v": "b"}]


def test_a_statement_consolidated_after_a_decision_is_not_accepted() -> None:
    """An untrusted `a` of day 29, held, kept by a person; an untrusted restatement of `a`
    on day 40, consolidated after the decision; then, late, a semi-trusted change to `b`
    for days 35-36. The part of `a` after the change holds only the restatement, which
    nobody accepted: it is held in quarantine against `b` for its source, not served
    (seed 1330743, which a fix that took every part of a kept value for accepted broke)."""
    with fresh_memory() as mem:
        a = kept_alone(mem, told_gp(0, 29, "a", "untrusted", "create"))
        in_one_run(mem, told_gp(1, 40, "a", "untrusted", "supersede"))

        facts = in_one_run(mem, told_gp(2, 30, "b", "semi_trusted", "supersede", period=(35, 36)))

        assert (mem.fact(a).status, mem.fact(a).valid_to) == (FactStatus.SUPERSEDED, at(35))
        (after,) = [f for f in facts if f.value == {"v": "a"} and f.id != a]
        assert (after.status, after.valid_from, after.trust) == (
            FactStatus.CANDIDATE, at(40), Trust.UNTRUSTED,
        )  # fmt: skip
        (quarantine,) = mem.conflicts(subject="alice")
        assert quarantine.kind is ConflictKind.QUARANTINE
        assert after.id in quarantine.member_ids


def test_keeping_the_current_value_accepts_none_of_its_statements() -> None:
    """A trusted 4 of day 3, a trusted create of 3 on day 13 (held in conflict with it) and
    an untrusted restatement of 4 for days 19-29; a person keeps the 4, which was current
    already: they chose a value, and accepted no statement held for its source. A trusted
    change to 5 on day 14 then splits the 4: the part after it, which only the untrusted
    restatement backs, is held against the 5, not served (seed 1380931, where the first
    version of the record counted the current value's statements as accepted)."""
    with fresh_memory() as mem:
        in_one_run(
            mem, told_gp(0, 3, "4", "trusted", "create"),
            told_gp(1, 13, "3", "trusted", "create"),
            told_gp(2, 40, "4", "untrusted", "supersede", period=(19, 29)),
        )  # fmt: skip
        (held,) = mem.conflicts(subject="alice")
        (four,) = [m for m in held.member_ids if mem.fact(m).value == {"v": "4"}]
        assert mem.fact(four).status is FactStatus.ACTIVE
        mem.resolve_conflict(held.id, keep=four)
        (resolved,) = mem.conflicts(subject="alice", status=ConflictStatus.RESOLVED)
        assert resolved.accepted_event_ids == ()

        facts = in_one_run(mem, told_gp(3, 14, "5", "trusted", "supersede"))

        (current,) = [f for f in facts if f.status is FactStatus.ACTIVE]
        assert (current.value, current.valid_from) == ({"v": "5"}, at(14))
        untrusted = [f for f in facts if f.trust is Trust.UNTRUSTED]
        assert [(f.status, f.valid_from) for f in untrusted] == [(FactStatus.CANDIDATE, at(19))]
