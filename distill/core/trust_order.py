"""Sources of unequal trust: what a claim's trust changes, in order and late.

In world order a less trusted source never displaces a more trusted value: its claim is
held in quarantine against it (`Adjudicator._state`), and a more trusted create is not held
behind a less trusted first value, which it holds instead (`_held_back_by_less_trusted`,
`_over_less_trusted`). A claim that arrives late must end where those rules would have put
it, so these decisions read trust as the claim would have met it:

* the version's trust at the claim's date (`_trust_then`);
* a less trusted current value that an earlier, more trusted one arrives before
  (`_earlier_trusted`), or a less trusted change that the earlier value's own restatement
  replaced (`_restated_over`); a first version whose first statements yield to the late
  claim begins with the change that adopted them (`_began_when_adopted`);
* a less trusted statement held against a version, of the value of the change that
  replaced it: that change adopted it (`_adopted_by_next`);
* a value that a less trusted one holds in quarantine and a trusted statement restates
  (`_held_behind`), an untrusted value held alone that the first known value meets
  (`_held_alone_after`);
* a replaced version a late statement makes more trusted than what replaced it
  (`_trust_raised`), or than a change between it and its own restatement (`_rejoined`).

What a displaced value held against it, the value before it holds (`_hand_over_held`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from distill.core import timeline
from distill.core.identity import carried_forward, fact_text, values_equal
from distill.core.models import (
    ClaimAction,
    ConflictKind,
    ConflictSet,
    ConflictStatus,
    Fact,
    FactKind,
    FactStatus,
    Outcome,
    Trust,
)
from distill.core.passes import Decision
from distill.core.splits import Splits
from distill.core.working import Candidate, Identity, held_until


class TrustOrder(Splits):
    """The late decisions that trust decides (module doc)."""

    def _trust_then(self, version: Fact, at: timeline.At) -> Trust:
        """`version`'s trust from its statements made no later than position `at` (those
        the snapshot loaded; its trust now when it has none of them)."""
        stated = timeline.position(version).stated
        then = [
            s.trust
            for s in self.s.support.get(version.id, ())
            if not at < timeline.At(s.at, stated)
        ]
        return max(then, key=lambda t: t.rank) if then else version.trust

    def _trust_raised(self, was: Fact, decision: Decision) -> Decision:
        """`decision`, after a late statement dated inside `was`, a replaced version, made it
        more trusted: the current version that replaced it, from a less trusted source,
        could not have in world order. It is held in quarantine against the version, which
        is current again, and holds what was held against it. Not when the version ended on
        its own (a stated end), nor when a person's pin or a value that could displace the
        version is involved."""
        version = self.s.facts[was.id]
        successor = self.s.facts.get(version.superseded_by or "")
        if successor is not None and successor.status is FactStatus.SUPERSEDED:
            return self._rejoined(was, decision)
        if (
            version.trust.rank <= was.trust.rank
            or version.status is not FactStatus.SUPERSEDED
            or successor is None
            or successor.status is not FactStatus.ACTIVE
            or successor.pinned
            or version.pinned
            or successor.supersedes_id != version.id
            or version.valid_to != successor.valid_from
            or not successor.trust.yields_to(version.trust)
            or not self._held_only_behind(successor, version.trust, version.value)
        ):
            return decision
        reason = f"{successor.trust} source may not displace a {version.trust} fact"
        self._revise(
            successor,
            "hold",
            f"an earlier, more trusted statement arrived late: quarantined: {reason}",
            status=FactStatus.CANDIDATE,
            supersedes_id=None,
            unpaired_change=False,
        )
        current = self._revise(
            version,
            "hold",
            f"more trusted than the value that replaced it: current again ({reason})",
            status=FactStatus.ACTIVE,
            valid_to=None,
            retired_at=None,
            superseded_by=None,
            unpaired_change=successor.unpaired_change,
        )
        key = version.identity_key
        self._hand_over_held(successor, current)
        self._open_conflict(key, (current.id, successor.id), ConflictKind.QUARANTINE, reason)
        self._follow_identity_sets(successor, current)
        return decision

    def _held_only_behind(
        self, fact: Fact, trust: Trust, value: dict[str, Any] | None = None
    ) -> bool:
        """Whether every value held against `fact` (in an open value or quarantine set) is
        from a source that yields to `trust`, none pinned and none of `value` (a
        restatement of the claim: `_restated_rival`): in world order each would have been
        held against a value of that trust instead."""
        for cs in self._sets_holding(fact.id):
            if cs.kind is ConflictKind.IDENTITY:
                continue
            held = [self.s.facts[m] for m in cs.member_ids if m != fact.id]
            if any(
                m.pinned
                or not m.trust.yields_to(trust)
                or (value is not None and m.value is not None and values_equal(m.value, value))
                for m in held
            ):
                return False
        return True

    def _hand_over_held(self, old: Fact, new: Fact) -> None:
        """What was held against `old` (`_held_only_behind` `new`'s trust) is held against
        `new`, in quarantine, as it would have been in world order."""
        for cs in self._sets_holding(old.id):
            if cs.kind is not ConflictKind.IDENTITY:
                members = tuple(new.id if m == old.id else m for m in cs.member_ids)
                why = "held against the more trusted value before it"
                self._revise_conflict(cs, why, member_ids=members, kind=ConflictKind.QUARANTINE)

    def _rejoined(self, was: Fact, decision: Decision) -> Decision:
        """`decision`, after a late statement dated inside `was` made it more trusted than
        the less trusted version that replaced it, itself replaced by a restatement of
        `was`'s value (a split: `Splits._change_inside`; after the change's stated end, or
        where it ended). In world order that change met the
        more trusted value and was held in quarantine; the value went on, restated. So the
        change is held, and the restatement takes the version in: it begins where the
        version began and carries its evidence, and the version is its receipt, empty
        (`timeline.overruled` leaves it out of the chain). Not when a person's pin or an open
        set is involved."""
        version = self.s.facts[was.id]
        change = self._next_of(version)
        restated = self._next_of(change, after_a_gap=True) if change is not None else None
        if (
            change is None
            or restated is None
            or version.trust.rank <= was.trust.rank
            or any(f.pinned for f in (version, change, restated))
            or not values_equal(version.value, restated.value)
            or not change.trust.yields_to(version.trust)
            or any(self._open_set(f.id) is not None for f in (version, change))
        ):
            return decision
        reason = f"{change.trust} source may not displace a {version.trust} fact"
        self._hold_displaced(
            change, f"an earlier, more trusted statement arrived late: quarantined: {reason}"
        )
        sources = (*version.source_event_ids, *restated.source_event_ids)
        _, freshest = timeline.freshest(
            (version.trust.rank, version.last_reinforced_at),
            (restated.trust.rank, restated.last_reinforced_at),
        )
        self._revise(
            version,
            "merge",
            "one version with its restatement: the change between them was held",
            valid_to=version.valid_from,
            superseded_by=restated.id,
        )
        self._revise(
            restated,
            "merge",
            f"the version it restates, once the change between them was held ({reason})",
            valid_from=version.valid_from,
            supersedes_id=version.id,
            unpaired_change=version.unpaired_change,
            source_event_ids=sources,
            reinforcement_count=len(sources) - 1,
            last_reinforced_at=freshest,
            trust=max(version.trust, restated.trust, key=lambda t: t.rank),
        )
        support = (*self.s.support.get(version.id, ()), *self.s.support.get(restated.id, ()))
        if support:
            self.s.support[restated.id] = support
        key = version.identity_key
        self._open_conflict(key, (restated.id, change.id), ConflictKind.QUARANTINE, reason)
        self._follow_identity_sets(version, self.s.facts[restated.id])
        return decision

    def _displaced_by_less_trusted(
        self, c: Candidate, base: Fact | None, following: Fact, value: dict[str, Any]
    ) -> bool:
        """In order, this claim would have come first, and `following`, from a less trusted
        source, could not have displaced it: it would have been quarantined against it."""
        return (
            base is None
            and following.status is FactStatus.ACTIVE
            and following.supersedes_id is None
            and following.trust.rank < c.event.trust.rank
            and self._held_only_behind(following, c.event.trust, value)
        )

    def _restated_over(self, c: Candidate, following: Fact, value: dict[str, Any]) -> Fact | None:
        """The version that restated this claim's `value` right after `following`, the
        first version, less trusted than the claim: in order this claim came first,
        `following` could not displace it, and the restatement only restated it."""
        restated = self._next_of(following, after_a_gap=True)
        if (
            restated is None
            or following.supersedes_id is not None
            or not following.trust.yields_to(c.event.trust)
            or not values_equal(restated.value, value)
            or following.pinned
            or restated.pinned
            or self._open_set(following.id) is not None
        ):
            return None
        return restated

    def _adopted_by_next(
        self, c: Candidate, at: timeline.At, base: Fact | None, value: dict[str, Any]
    ) -> bool:
        """Whether this claim, held against `base` for its source, has the value of the
        change that replaced `base`: in order that change met it held, no restatement of
        `base` between them, and adopted it (`Rivals._adopt`: from the change's own date,
        since a less trusted statement could not displace `base`), the change being from a
        source at least as trusted as `base` was and as this claim."""
        following = self._next_of(base) if base is not None else None
        if (
            base is None
            or following is None
            or not values_equal(value, following.value)
            or following.pinned
            or not self._began_as_change(following, self._time(c))
            or self._restated_after(base, at)
        ):
            return False
        by = self._first_said(following).trust
        then = self._trust_then(base, timeline.position(following))
        return by.rank >= then.rank and by.rank >= c.event.trust.rank

    def _began_when_adopted(self, c: Candidate, following: Fact) -> datetime | None:
        """When `following`, the first version, would have begun had this claim, before it,
        come first: its earliest statements, from sources that yield to this claim's, were
        held against it, and the first change from a source that does not adopted them
        (`Rivals._adopt`: from the change's date). None when its first statement could
        displace this claim's value, or no such change followed."""
        supports = sorted(self.s.support.get(following.id, ()), key=lambda s: s.at)
        if (
            not supports
            or not supports[0].trust.yields_to(c.event.trust)
            or following.supersedes_id is not None
            or following.pinned
            or self._open_set(following.id) is not None
        ):
            return None
        t = self._time(c)
        change = next((s for s in supports if not s.trust.yields_to(c.event.trust)), None)
        if change is None or not (change.supersede or (change.dated and change.at > t)):
            return None
        return change.at

    def _held_back_by_less_trusted(self, c: Candidate, head: Fact, at: timeline.At) -> bool:
        """A create of another value from a more trusted source than the current value's
        (as it was at the claim's position `at`: a restatement dated after the claim had not
        raised it yet), which was the attribute's first and is contested by nothing (or only
        by a later statement of the claim's value, `_held_restating`): it is not held in
        conflict behind that value. Arriving first, it would have held the less trusted
        value in quarantine (`_quarantine`, or `_earlier_trusted` when that value came
        late), so the two end alike in any order (DESIGN invariant 8)."""
        rank = c.event.trust.rank
        return (
            head.supersedes_id is None
            and (self._open_set(head.id) is None or self._held_restating(c, head) is not None)
            and (rank > head.trust.rank or rank > self._trust_then(head, at).rank)
        )

    def _held_restating(self, c: Candidate, head: Fact) -> Fact | None:
        """The one candidate held in conflict against `head`, of the claim's value and dated
        after it, no member pinned: in order it came after the claim and restated it."""
        cs = self._open_set(head.id)
        if cs is None or cs.kind is not ConflictKind.CONFLICT or len(cs.member_ids) != 2:
            return None
        members = [self.s.facts[m] for m in cs.member_ids]
        others = [m for m in members if m.id != head.id]
        held = others[0] if len(others) == 1 else None
        if (
            held is None
            or any(m.pinned for m in members)
            or held.status is not FactStatus.CANDIDATE
            or held.value is None
            or not values_equal(held.value, self._next_value(head, c.claim))
            or not timeline.At(self._time(c), c.claim.value) < timeline.position(held)
        ):
            return None
        return held

    def _over_less_trusted(
        self,
        c: Candidate,
        head: Fact,
        ident: Identity,
        value: dict[str, Any],
        at: timeline.At,
        following: Fact | None = None,
    ) -> Decision:
        """The claim is the active value; `head`, less trusted then, is held in quarantine
        against it, as it would have been had it come second. A restatement of `head` dated
        after the claim (it arrived first) from a source as trusted as the claim's would then
        have made the set a value conflict (`_repeat_held`): it is one. Late, inside `head`
        and before `following`, the change to the claim's value that replaced `head`: that
        change only restated the claim, which holds from its own date."""
        restated = any(not s.trust.yields_to(c.event.trust) for s in self._restated_after(head, at))
        reason = (
            "the held value is stated again by a source as trusted"
            if restated
            else f"{self._trust_then(head, at)} source may not displace a {c.event.trust} fact"
        )
        kind = ConflictKind.CONFLICT if restated else ConflictKind.QUARANTINE
        restating = self._held_restating(c, head) if following is None else None
        if following is None:
            self._revise(
                head,
                "hold",
                f"a more trusted value arrived: quarantined: {reason}",
                status=FactStatus.CANDIDATE,
                unpaired_change=False,
            )
        else:
            self._hold_displaced(head, f"a more trusted value arrived late: quarantined: {reason}")
        if restating is not None:  # in order it restated the claim: the claim's version
            cs = self._open_set(head.id)
            assert cs is not None
            self._revise_conflict(cs, reason, kind=kind)
            fact = self._revise(
                restating, "resolve", reason, status=FactStatus.ACTIVE, valid_from=at.time
            )
            return self._reinforce(fact, c, "a more trusted value", valid_from=at.time)
        if following is None:
            fact = self._new_fact(c, FactKind.STATE, ident, value)
            self._create(fact, "a more trusted value", self._query_text(c))
            decision = Decision(Outcome.CREATED, fact.id, reason)
        else:  # the change that replaced `head` only restated the claim
            fact = self._revise(
                following, "link", reason, supersedes_id=None, unpaired_change=False
            )
            decision = self._reinforce(fact, c, "a more trusted value", valid_from=at.time)
        self._open_conflict(ident.key, (fact.id, head.id), kind, reason)
        self._follow_identity_sets(head, self.s.facts[fact.id])
        return decision

    def _held_first_value(self, c: Candidate, following: Fact) -> Fact | None:
        """The less trusted first value that `following`, the first version, holds in
        quarantine (a more trusted create met it: `_over_less_trusted`), dated before this
        claim, a change of `following`'s value that could displace it: in order that value
        was current until this change replaced it."""
        cs = self._open_set(following.id)
        if (
            c.claim.action is not ClaimAction.SUPERSEDE
            or following.supersedes_id is not None
            or cs is None
            or cs.kind is not ConflictKind.QUARANTINE
            or len(cs.member_ids) != 2
        ):
            return None
        (held,) = (self.s.facts[m] for m in cs.member_ids if m != following.id)
        t = self._time(c)
        if (
            held.status is not FactStatus.CANDIDATE
            or held.pinned
            or following.pinned
            or held.supersedes_id is not None
            or not held.valid_from < t
            or not held.trust.yields_to(c.event.trust)
            or (held.valid_to is not None and held.valid_to <= t)
        ):
            return None
        return held

    def _replaced_first_value(self, held: Fact, following: Fact, t: datetime) -> None:
        """`held` (`_held_first_value`) is the version before `following`, replaced at
        `t`; the set that held it is resolved by the claim."""
        reason = "a change dated before the value that held it replaced it"
        self._revise(
            held,
            "resolve",
            reason,
            status=FactStatus.SUPERSEDED,
            valid_to=t,
            superseded_by=following.id,
            retired_at=self.now,
        )
        self._revise(following, "link", reason, supersedes_id=held.id)
        cs = self._open_set(following.id)
        assert cs is not None
        self._settle(cs, following.id, reason)

    def _next_of(self, version: Fact, *, after_a_gap: bool = False) -> Fact | None:
        """The version that replaced `version` where it ended (or, `after_a_gap`, after its
        stated end), linked both ways."""
        following = self.s.facts.get(version.superseded_by or "")
        if (
            version.status is not FactStatus.SUPERSEDED
            or following is None
            or following.status not in (FactStatus.ACTIVE, FactStatus.SUPERSEDED)
            or following.supersedes_id != version.id
            or version.valid_to is None
            or version.valid_to > following.valid_from
            or (version.valid_to < following.valid_from and not after_a_gap)
        ):
            return None
        return following

    def _earlier_trusted_restated(self, c: Candidate, following: Fact, restated: Fact) -> Decision:
        """`following` is held in quarantine against the claim's value, and the version that
        restated it begins with the claim (`_restated_over`)."""
        reason = f"{following.trust} source may not displace a {c.event.trust} fact"
        self._hold_displaced(following, f"an earlier value arrived late: quarantined: {reason}")
        self._revise(
            restated,
            "link",
            reason,
            supersedes_id=None,
            unpaired_change=c.claim.action is ClaimAction.SUPERSEDE,
        )
        decision = self._reinforce(
            self.s.facts[restated.id], c, "an earlier, more trusted value", valid_from=self._time(c)
        )
        key = restated.identity_key
        self._open_conflict(key, (restated.id, following.id), ConflictKind.QUARANTINE, reason)
        self._follow_identity_sets(following, self.s.facts[restated.id])
        return decision

    def _hold_displaced(self, version: Fact, reason: str) -> None:
        """A version that, in world order, could not have displaced the value before it: a
        candidate, with the end its sources stated."""
        self._revise(
            version,
            "hold",
            reason,
            status=FactStatus.CANDIDATE,
            valid_to=held_until(self.s.support.get(version.id, ())),
            supersedes_id=None,
            superseded_by=None,
            retired_at=None,
            unpaired_change=False,
        )

    def _earlier_trusted(
        self, c: Candidate, following: Fact, ident: Identity, value: dict[str, Any]
    ) -> Decision:
        """The earlier, more trusted value is the active one; `following` is held in
        quarantine against it, with the value it would have had then (a change carries the
        earlier value's unstated keys forward)."""
        reason = f"{following.trust} source may not displace a {c.event.trust} fact"
        held_value = (
            carried_forward(value, following.stated, c.claim.predicate == following.predicate)
            if following.stated
            else None
        )
        update: dict[str, Any] = {"status": FactStatus.CANDIDATE, "unpaired_change": False}
        if held_value is not None and not values_equal(held_value, following.value):
            assert following.predicate is not None
            update |= {
                "value": held_value,
                "text": fact_text(following.predicate, held_value, following.qualifiers),
            }
        self._revise(
            following, "hold", f"an earlier value arrived late: quarantined: {reason}", **update
        )
        fact = self._new_fact(c, FactKind.STATE, ident, value)
        if c.claim.action is ClaimAction.SUPERSEDE:
            fact = fact.model_copy(update={"unpaired_change": True})  # as `_earlier_create`
        self._create(fact, "an earlier, more trusted value", self._query_text(c))
        self._hand_over_held(following, fact)
        self._open_conflict(ident.key, (fact.id, following.id), ConflictKind.QUARANTINE, reason)
        self._follow_identity_sets(following, fact)
        return Decision(Outcome.CREATED, fact.id, reason)

    def _held_alone_after(self, key: str, fact: Fact) -> tuple[Fact, ConflictSet] | None:
        """An untrusted claim of this identity held alone (nothing was known when it came)
        and dated after `fact`, this claim's new fact, or with its value at its instant: in
        order it would have met `fact`."""
        at = timeline.position(fact)
        for cs in self.s.conflicts.values():
            if (
                cs.status is ConflictStatus.OPEN
                and cs.kind is ConflictKind.QUARANTINE
                and cs.identity_key == key
                and len(cs.member_ids) == 1
            ):
                held = self.s.facts.get(cs.member_ids[0])
                if (
                    held is not None
                    and held.status is FactStatus.CANDIDATE
                    and not held.pinned
                    # The same value at the same instant: in order it met `fact` too.
                    and not timeline.position(held) < at
                ):
                    return held, cs
        return None

    def _before_held(
        self, c: Candidate, fact: Fact, held: Fact, cs: ConflictSet, how: str
    ) -> Decision:
        """The value an untrusted claim held alone (`_held_alone_after`) would have met: the
        same value is reinforced by it, as in order (the held row becomes the fact, from this
        claim's date); another is what it is held against."""
        if (
            held.value is not None
            and fact.value is not None
            and values_equal(held.value, fact.value)
        ):
            reason = "an earlier statement of a value held from an untrusted source"
            first = self._revise(
                held, "hold", reason, status=FactStatus.ACTIVE, valid_from=fact.valid_from
            )
            self._settle(cs, held.id, reason)
            return self._reinforce(first, c, reason)
        self._create(fact, f"new identity ({how})", vector_text=self._query_text(c))
        reason = "held against an earlier value that arrived late"
        self._revise_conflict(cs, reason, member_ids=(fact.id, *cs.member_ids))
        return Decision(Outcome.CREATED, fact.id, "new identity")

    def _held_behind(
        self, following: Fact, value: dict[str, Any]
    ) -> tuple[Fact, ConflictSet] | None:
        """A less trusted value dated before `following` and held in quarantine against it
        (a more trusted create met it, `_over_less_trusted`, or it came late): a claim as
        trusted as `following` that says the same thing and is dated before it came first
        in world order, and the value it reinforces held `following` in conflict."""
        open_set = self._open_set(following.id)
        if open_set is None or open_set.kind is not ConflictKind.QUARANTINE:
            return None
        for member_id in open_set.member_ids:
            member = self.s.facts[member_id]
            if (
                member.status is FactStatus.CANDIDATE
                and not member.pinned
                and member.identity_key == following.identity_key
                # Before it in world time (at its instant, by the words: `timeline.position`).
                and timeline.position(member) < timeline.position(following)
                and values_equal(member.value, value)
            ):
                return member, open_set
        return None
