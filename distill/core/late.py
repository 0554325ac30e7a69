"""Late news: claims about a time before the current version of their identity began.

Events arrive in any order; these decisions file an older claim into the timeline so that
the final state is the one arrival in order would have given (DESIGN invariant 8).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from distill.core import timeline
from distill.core.first_values import FirstValues
from distill.core.identity import (
    carried_forward,
    fact_text,
    values_equal,
    without_nulls,
)
from distill.core.models import (
    ClaimAction,
    ConflictKind,
    ConflictSet,
    Fact,
    FactKind,
    FactStatus,
    Outcome,
    Trust,
)
from distill.core.passes import Decision
from distill.core.plan import ReviseFact
from distill.core.working import Candidate, Identity, Mark


class LateArrivals(FirstValues):
    """A late claim's decisions: where it falls among the versions, and what it becomes."""

    def _late(
        self,
        c: Candidate,
        versions: list[Fact],
        at: timeline.At,
        ident: Identity,
    ) -> Decision:
        """A claim about a time before the current version began (or at the same instant,
        with words that sort first): file it into history (`_unless_a_pin_changed`)."""
        where = timeline.place(versions, at)
        base = where.version
        value = self._next_value(base, c.claim) if base else without_nulls(c.claim.value or {})
        mark = self._mark()
        decision = self._file_late(c, versions, at, ident, where, value)
        return self._unless_a_pin_changed(mark, decision, c, ident, value)

    def _unless_a_pin_changed(
        self,
        mark: Mark,
        decision: Decision,
        c: Candidate,
        ident: Identity,
        value: dict[str, Any] | None = None,
    ) -> Decision:
        """`decision`, unless an action since `mark` changed a version a person pinned, which
        no automatic path does (DESIGN invariant 6; a link to a new neighbour is a change
        too; the plan would be refused, and the job fail on every run). Then those actions
        are taken back and the claim is decided as beside that version: it supports it when
        it states its value (`value`, or the claim's value carried onto that version's),
        else it is held in conflict against it."""
        changed = self.plan.actions[mark.actions :]
        pinned = next(
            (a.before for a in changed if isinstance(a, ReviseFact) and a.before.pinned), None
        )
        if pinned is None:
            return decision
        self._undo(mark)
        if value is None:
            value = self._next_value(pinned, c.claim)
        if values_equal(value, pinned.value):
            return self._reinforce(pinned, c, "same value as a pinned fact")
        return self._conflict(c, pinned, ident, value, "pinned fact")

    def _file_late(
        self,
        c: Candidate,
        versions: list[Fact],
        at: timeline.At,
        ident: Identity,
        where: timeline.Placement,
        value: dict[str, Any],
    ) -> Decision:
        """`_late`'s filing (`where` the claim falls, `value` what it says there), before
        the check for pinned versions."""
        t = at.time
        following = where.following
        assert following is not None  # at < position(head)
        base = where.version
        # A version that had ended by t (its stated end) before the next one began is not in
        # force then: the claim begins a version of its own in the gap, as it would in order.
        gap = (
            base is not None
            and base.valid_to is not None
            and base.valid_to <= t
            and base.valid_to < following.valid_from
        )
        if base is not None and not gap and values_equal(value, base.value):
            decision = self._reinforce(base, c, "same value as the version in force then")
            return self._trust_raised(base, decision)
        around = [f for f in (base, following) if f is not None]
        trust = c.event.trust
        # In order, the version in force at t (`base`) is what this claim would have met: a
        # less trusted claim is held against it, unless `base` had ended by then (a gap: it
        # displaced nothing). Before the first version there is none: the claim came first
        # (untrusted: held alone), and that version's first create from a more trusted
        # source held it in quarantine (`_over_less_trusted`, also when an earlier statement
        # of it was held in conflict with the claim: `_held_restating`; a change would have
        # replaced it), unless the claim had ended by then.
        held_against = base
        # After a gap, `following` may return to a value held before the claim: in order it
        # was a change (`Adjudicator._state`) and replaced the claim; it held nothing.
        returns = gap and any(
            values_equal(v.value, following.value) for v in versions if timeline.position(v) < at
        )
        if (
            (base is None or (gap and not returns))  # the first value, or the first since
            and trust is not Trust.UNTRUSTED  # `base` ended, unless `following` returns
            and not (c.claim.valid_to is not None and c.claim.valid_to <= following.valid_from)
            and self._held_by_a_create(following, t, trust)
            and not values_equal(value, following.value)
        ):
            held_against = following
        # What `base` was when the claim's instant came: a later statement that raised its
        # trust had not been made yet.
        met = self._trust_then(base, at) if held_against is base and base else None
        if held_against is base and gap and trust is not Trust.UNTRUSTED:
            held_against = None
        if trust is Trust.UNTRUSTED or (
            held_against is not None and trust.yields_to(met or held_against.trust)
        ):
            if (repeated := self._repeated(c, held_against, value)) is not None:
                return repeated  # a value already held against it: as in order
            if held_against is None and (again := self._repeated_alone(c, ident.key, value)):
                return again  # a value already held alone
            if base is None and (again := self._repeats_displaced(c, at, value, following)):
                return again  # in order it met that value as the version
            if held_against is base and not gap and self._adopted_by_next(c, at, base, value):
                reason = "held against the version in force, then adopted by the change after it"
                return self._reinforce(following, c, reason)
            # Held against the first version, which began after it: from its first statement.
            first = timeline.position(following)
            if held_against is following and self._adopted_by_next(c, first, following, value):
                reason = "held against the first version, then adopted by the change after it"
                return self._reinforce(self.s.facts[following.superseded_by or ""], c, reason)
            if held_against is following and (
                held_since := self._held_alone_restating(c, at, ident.key, value, following)
            ):
                return held_since  # in order a version, which the value held restated
            fact = self._new_fact(c, FactKind.STATE, ident, value)
            reason = "untrusted source"
            if trust is not Trust.UNTRUSTED:
                assert held_against is not None
                reason = f"{trust} source may not displace a {met or held_against.trust} fact"
            return self._quarantine(c, fact, held_against, reason)
        if following.pinned and values_equal(value, following.value):
            return self._reinforce(following, c, "same value as a pinned fact")
        if any(f.pinned for f in around):
            return self._conflict(c, following, ident, value, "pinned fact")
        # A restatement of `base` placed after the next version began was overruled (a person
        # kept that version over it): it does not split `base` again.
        later = self._restated_after(base, at, until=timeline.position(following)) if base else []
        # An undated create of another value inside a version: in order it met that version
        # and was held against it (`Adjudicator._state`), unless it returns to an older value
        # (or the next version changed to it with no restatement of `base` between them:
        # then, in order, that change adopted it).
        if (
            base is not None
            and not gap
            and (later or not values_equal(value, following.value))
            and self._held_in_order(c, versions, base, value)
        ):
            # Unless `base` was the less trusted first value: in order this claim held it.
            if (
                not later
                and self._next_of(base) is following
                and not any(f.pinned for f in around)
                and self._held_back_by_less_trusted(c, base, at)
            ):
                return self._held_first_inside(c, versions, at, ident, base, following, value)
            return self._conflict(c, base, ident, value, "different value")
        if base is not None and later:
            if self._adoption_undone(base, at, later):
                key = ident.key
                return self._late(c, timeline.chain(self._facts_of(key), key), at, ident)
            return self._change_inside(c, base, later, ident, value, following)
        stated_end = c.claim.valid_to
        # A claim that ended where `following` began (or before) never met it: in order,
        # `following` came after its end and began a version of its own, same value or not.
        apart = stated_end is not None and stated_end <= following.valid_from
        if (
            values_equal(value, following.value)
            and not apart
            and base is not None
            and not gap
            and c.claim.action is ClaimAction.CREATE
            and c.claim.valid_from is None
            and self._next_of(base) is following
            and not any(f.pinned for f in around)
            and self._held_back_by_less_trusted(c, base, at)
        ):  # in order it held `base`, the attribute's first, and `following` restated it
            decision = self._over_less_trusted(c, base, ident, value, at, following)
            return self._trust_raised(following, decision)  # what replaced it may not now
        if (
            values_equal(value, following.value)
            and base is None
            and (change := self._held_change_after(c, following)) is not None
        ):
            return self._before_a_return(c, ident, value, change, following)
        if values_equal(value, following.value) and not apart:
            # The next version was already true at t: it starts earlier than we knew.
            if base is not None and not gap:
                self._revise(base, "retime", "the next version started earlier", valid_to=t)
            if base is None and (held := self._held_first_value(c, following)) is not None:
                self._replaced_first_value(held, following, t)
                following = self.s.facts[following.id]
            decision = self._reinforce(following, c, "same value, stated earlier", valid_from=t)
            if base is not None and not gap:  # held against `base` after t: in order, this
                self._move_later_rivals(base, self.s.facts[following.id])
            return self._trust_raised(following, decision)
        if apart and base is None and (held := self._held_first_value(c, following)):
            # In order the claim replaced the less trusted first value `following` held, and
            # ended before `following` began: it is the version between the two (a
            # restatement of that value gives it the claim's end instead).
            if values_equal(value, held.value):
                assert stated_end is not None  # `apart`
                self._replaced_first_value(held, following, stated_end)
                reason = "a restatement of the first value, with its end"
                return self._trust_raised(held, self._reinforce(self.s.facts[held.id], c, reason))
            self._replaced_first_value(held, following, t)
            held, following = self.s.facts[held.id], self.s.facts[following.id]
            return self._historical(c, versions, at, ident, held, following, value)
        # From here the values differ (or the claim ended first).
        at_first = base is None and following.supersedes_id is None
        if at_first and (displaced := self._displaced_by_less_trusted(c, following, value)):
            return self._earlier_trusted(c, displaced, ident, value)
        if at_first and (until := self._held_until_accepted(c, versions, following, value)):
            return self._earlier_until_accepted(c, *until, ident, value)
        if base is None and not apart and (restated := self._restated_over(c, following, value)):
            return self._earlier_trusted_restated(c, following, restated)
        if base is None and not apart and (began := self._began_when_adopted(c, following)):
            why = "its first statements were held against an earlier, more trusted value"
            self._revise(following, "retime", why, valid_from=began)
            return self._historical(c, versions, at, ident, base, self.s.facts[following.id], value)
        # A claim that ended before `following` began never met it: nothing it restates was
        # held against it.
        rival = None if apart else self._restated_rival(c, base, following, value)
        if rival is not None:
            return self._earlier_than_rival(c, following, rival)
        # After a gap the claim is the first value since the one that ended, unless
        # `following` returns to a value held before it (`returns`: it replaced the claim).
        if not returns and self._first_of_competing_creates(
            c, None if gap else base, following, value
        ):
            return self._earlier_create(c, following, ident, value, base if gap else None)
        if apart:  # in order `following` came after this claim's end: it follows it
            return self._historical(c, versions, at, ident, base, following, value)
        contested = self._contested_first(c, base, following, value)
        if contested is not None:
            return self._earlier_than_contested(c, following, contested, ident, value)
        if self._replaced_create(c, base, following, value):
            return self._before_replaced_create(c, versions, at, following, ident, value)
        after = [] if base is None else self._displaced_by_less_trusted(c, following, value)
        if base is not None and after:
            return self._inside_over_less_trusted(c, base, after, ident, value)
        return self._historical(c, versions, at, ident, base, following, value)

    def _held_first_inside(
        self,
        c: Candidate,
        versions: list[Fact],
        at: timeline.At,
        ident: Identity,
        base: Fact,
        following: Fact,
        value: dict[str, Any],
    ) -> Decision:
        """A create dated inside `base`, the attribute's less trusted first value, before
        `following` replaced it: in order the create held `base` in quarantine
        (`_over_less_trusted`) and `following` replaced the create, unless it was less
        trusted too (then it and what followed were held: `_earlier_trusted`). The claim is
        a version of its own until `following`, and `base` is held against it with what it
        held."""
        if displaced := self._displaced_by_less_trusted(c, following, value):
            decision = self._earlier_trusted(c, displaced, ident, value)
            fact = self.s.facts[decision.fact_id or ""]
        else:
            decision = self._historical(c, versions, at, ident, base, following, value)
            fact = self._revise(
                self.s.facts[decision.fact_id or ""],
                "link",
                "the first value it held",
                supersedes_id=None,
            )
        reason = f"{self._trust_then(base, at)} source may not displace a {c.event.trust} fact"
        why = f"a more trusted value arrived late: quarantined: {reason}"
        self._hold_displaced(self.s.facts[base.id], why)
        self._hand_over_held(base, fact)
        self._open_conflict(ident.key, (fact.id, base.id), ConflictKind.QUARANTINE, reason)
        return decision

    def _historical(
        self,
        c: Candidate,
        versions: list[Fact],
        at: timeline.At,
        ident: Identity,
        base: Fact | None,
        following: Fact,
        value: dict[str, Any],
    ) -> Decision:
        """File the claim as a version of its own between `base` and `following`: one that
        a value held against `base` since restated (`_held_after`), or an event of `base`'s
        series, is that value's."""
        t, stated_end = at.time, c.claim.valid_to
        version: dict[str, Any] = {
            "status": FactStatus.SUPERSEDED,
            "valid_to": timeline.end_of(stated_end, following.valid_from),
            "retired_at": self.now,
            "supersedes_id": base.id if base else None,
            "superseded_by": following.id,
        }
        held = self._held_after(base, at, version["valid_to"], value) if base else None
        start, reason = t, "an older state that arrived late, restated by a value held since"
        if held is None and base is not None and c.claim.action is ClaimAction.SUPERSEDE:
            # A change to a value held against `base` since before it adopted that value in
            # order (`Rivals._adopt`), from when it could have replaced `base`.
            held = self._held_rival(base, value, c.event.trust)
            if held is not None and timeline.position(held[0]) < at:
                able = self._could_replace_from(held[0], base)
                start = max(t, base.valid_from) if able is None else min(able, t)
                reason = "a late change to the value held in conflict"
            else:
                held = None
        kept: Fact | None = None  # an event of `base`'s series that restated the claim
        if held is None and base is not None:
            kept = self._event_of_value(base, value)
            if kept is None or not (
                at < timeline.position(kept)
                and (version["valid_to"] is None or kept.valid_from < version["valid_to"])
            ):
                kept = None
        if kept is not None:  # in order the claim replaced `base` and the event restated it
            reason = "an older state that arrived late, restated by a value its series kept"
            fact = self._event_as_version(kept, start, reason, **version)
            self._reinforce(fact, c, reason)
        elif held is None:  # or the row of a value held alone since (`_create_version`)
            fact = self._new_fact(c, FactKind.STATE, ident, value, **version)
            fact = self._create_version(c, fact, "an older state that arrived late")
        else:  # in order the claim replaced `base`, and the held value restated it
            fact = self._revise(held[0], "resolve", reason, valid_from=start, **version)
            self._settle(held[1], fact.id, reason)
            self._reinforce(fact, c, reason)
        if base is not None:
            self._revise(
                base,
                "link",
                "a later-arriving version began inside it",
                valid_to=timeline.end_of(
                    base.valid_to if base.valid_to != following.valid_from else None, start
                ),
                superseded_by=fact.id,
            )
        self._revise(
            following, "link", "an older version was filed before it", supersedes_id=fact.id
        )
        renamed = c.claim.predicate != ident.predicate
        self._carry_forward_from(fact, [v for v in versions if at < timeline.position(v)], renamed)
        if base is not None:  # what was said against `base` after the claim met the claim
            self._move_later_rivals(self.s.facts[base.id], self.s.facts[fact.id])
        if kept is not None and base is not None:  # the series' other values, part by part
            self._settle_parts(base.id, fact.id)
        self._now_a_return(fact, ident.key)
        decision = Decision(Outcome.HISTORICAL, fact.id, "older state filed into history")
        if held is not None:  # the held value, now of the claim's trust: what followed it may not
            return self._trust_raised(fact, decision)
        return decision

    def _held_after(
        self, base: Fact, at: timeline.At, end: datetime | None, value: dict[str, Any]
    ) -> tuple[Fact, ConflictSet] | None:
        """A candidate of a late change's `value`, held alone against `base` (a value
        conflict or quarantine of the two, neither pinned, open-ended), every statement of
        it after the change's position `at` and before `end`, where the change's version
        ends: in world order the change replaced `base` first and the candidate's
        statements restated it, as any source's statement of the value in force does. Each
        set of two holding `base` is looked in: one held value is a set of its own."""
        if base.pinned:
            return None
        for cs in self._value_sets(base.id):
            if cs.identity_key != base.identity_key or len(cs.member_ids) != 2:
                continue
            [held] = [self.s.facts[m] for m in cs.member_ids if m != base.id]
            said = self.s.support.get(held.id, ())
            if (
                held.status is FactStatus.CANDIDATE
                and not held.pinned
                and held.valid_to is None
                and values_equal(held.value, value)
                and at < timeline.position(held)
                and said
                and not any(end is not None and s.at >= end for s in said)
            ):
                return held, cs
        return None

    def _carry_forward_from(self, inserted: Fact, later: list[Fact], renamed: bool) -> None:
        """Versions that carried keys forward are recomputed from the version filed before
        them, so late arrival ends in the same values as arrival in order. `renamed`: the
        inserted version was claimed under another name than its attribute's, so its keys
        are carried only into a value of its shape (`carried_forward`)."""
        previous = inserted
        for version in later:
            current = self.s.facts[version.id]
            if current.stated is not None and previous.value is not None:
                same_name = previous.predicate == current.predicate and not renamed
                value = carried_forward(previous.value, current.stated, same_name)
                if not values_equal(value, current.value):
                    assert current.predicate is not None
                    current = self._revise(
                        current,
                        "recompute",
                        "an older version arrived late; carried-forward keys recomputed",
                        value=value,
                        text=fact_text(current.predicate, value, current.qualifiers),
                    )
            previous, renamed = current, False  # only the inserted version was renamed

    def _held_in_order(
        self, c: Candidate, versions: list[Fact], base: Fact, value: dict[str, Any]
    ) -> bool:
        """Whether a late claim dated inside `base` would have been held against it in world
        order: an undated create (not a change) of another value that returns to no value
        held before `base` (`Adjudicator._state`: `supersedes`)."""
        if c.claim.action is ClaimAction.SUPERSEDE or c.claim.valid_from is not None:
            return False
        before = [v for v in versions if timeline.position(v) < timeline.position(base)]
        returns = any(values_equal(v.value, value) for v in before)
        return not returns and not values_equal(value, base.value)

    def _replaced_create(
        self, c: Candidate, base: Fact | None, following: Fact, value: dict[str, Any]
    ) -> bool:
        """`following`, the first version, is an undated create that a later change replaced
        (not a person's decision: a kept candidate is no change): in world order it came
        after this claim and was held against it, and the change met this claim instead.
        What `following` holds in conflict was then values of the claim's series too
        (`_later_values`)."""
        return (
            base is None
            and following.status is FactStatus.SUPERSEDED
            and following.supersedes_id is None
            and following.superseded_by in self.s.facts
            and self._began_as_change(
                self.s.facts[following.superseded_by], following.valid_from, restated=True
            )
            and not following.pinned
            and not self._kept_by_decision(following.id)
            and not self._began_as_change(following, self._time(c), restated=True, by=c.event.trust)
            and self._series_taken(following, self._time(c), value)
            and following.trust.rank <= c.event.trust.rank
        )

    def _series_taken(self, following: Fact, t: datetime, value: dict[str, Any]) -> bool:
        """Whether what `following` holds in conflict was values of a claim at `t` too
        (`_later_values`); one of the claim's `value` restated it, unless the change after
        `following` restated it as well (then two facts would hold one statement's place)."""
        sets = self._later_values(following, t)
        if sets is None:
            return False
        successor = self.s.facts[following.superseded_by or ""]
        return self._restating_value(sets, value) is None or (
            successor.value is not None and not values_equal(successor.value, value)
        )

    def _before_replaced_create(
        self,
        c: Candidate,
        versions: list[Fact],
        at: timeline.At,
        following: Fact,
        ident: Identity,
        value: dict[str, Any],
    ) -> Decision:
        successor = self.s.facts[following.superseded_by or ""]
        reason = "an earlier, different value arrived late: held in conflict as if it came second"
        series = self._later_values(following, self._time(c)) or []
        restating = self._restating_value(series, value)
        ends = following.valid_to if self._ended_of_itself(following, successor) else None
        held = self._revise(
            following,
            "hold",
            reason,
            status=FactStatus.CANDIDATE,
            valid_to=ends,
            retired_at=None,
            superseded_by=None,
        )
        renamed = c.claim.predicate != ident.predicate
        same_name = successor.predicate == ident.predicate and not renamed
        successor_value = (
            carried_forward(value, successor.stated, same_name)
            if successor.stated is not None
            else successor.value
        )
        if successor_value is not None and values_equal(successor_value, value):
            # The change restated this claim's value: in order it reinforced it.
            first = self._revise(successor, "link", reason, supersedes_id=None)
            decision = self._reinforce(
                first, c, "same value, stated earlier", valid_from=self._time(c)
            )
            trust = self.s.facts[first.id].trust  # the change's, if more than the claim's
            self._series_moves(series, held, first)
            self._open_conflict(ident.key, (first.id, held.id), *self._held_as(held, trust))
            self._return_undone(held, self.s.facts[first.id])
            # Made more trusted, or given a later end: what replaced it may not now.
            return self._trust_raised(first, decision)
        # Until the next version: one a person kept may stand between `following` and `successor`.
        later = [v for v in versions if v.id != following.id and at < timeline.position(v)]
        after = later[0] if later else successor
        fact = self._filed_before(
            c, ident, value, after, "an older state that arrived late", restating
        )
        before = [v for v in later if timeline.position(v) < timeline.position(successor)]
        if before and successor.supersedes_id == following.id:
            why = "the version before it was held"
            self._revise(successor, "link", why, supersedes_id=before[-1].id)
        self._carry_forward_from(fact, later, renamed)
        own = [cs for cs in series if fact.id in cs.member_ids]  # the restating value's set
        self._series_moves([cs for cs in series if cs not in own], held, fact)
        kind, why = self._held_as(held, c.event.trust)
        if own:  # it held `following` against the restatement: now against the claim
            cs = self.s.conflicts[own[0].id]
            self._revise_conflict(cs, why, kind=kind, member_ids=(fact.id, held.id))
        else:
            self._open_conflict(ident.key, (fact.id, held.id), kind, why)
        if len(series) > len(own):  # the claim's series: `held` and what it held
            self._settle_series(self.s.facts[fact.id], self.s.facts[fact.id].valid_to)
        self._return_undone(held, self.s.facts[successor.id])
        self._now_a_return(self.s.facts[fact.id], ident.key)
        return Decision(Outcome.HISTORICAL, fact.id, "older state filed into history")
