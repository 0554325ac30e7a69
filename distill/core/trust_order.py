"""Sources of unequal trust in world order, and the pieces late arrivals share.

In world order a less trusted source never displaces a more trusted value: its claim is
held in quarantine against it (`Adjudicator._state`), and a more trusted create is not held
behind less trusted values: it holds the current one instead (`_held_back_by_less_trusted`,
`_over_less_trusted`, also when the create arrives late inside that value), with every
less trusted version before it (`_less_trusted_before`) and what they held, rather than
counting as a third value of their conflict (`_held_for_less_trust`). A change to the held
value from a source as trusted as the create adopts it, from the change's date
(`_adopting_change`). An untrusted claim that found nothing is held alone, and what
becomes known meets it as in order (`held_alone`).

A claim read against a version reads the version's trust as the claim met it: at the
claim's date (`_trust_then`). What a displaced value held against it, the value before it
holds (`_held_only_behind`, `_hand_over_held`). The rules for claims that arrive late and
find less trusted versions in their place are in `trust_late`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from distill.core import timeline
from distill.core.held_alone import HeldAlone
from distill.core.identity import values_equal
from distill.core.models import (
    ConflictKind,
    Fact,
    FactKind,
    FactStatus,
    Outcome,
    Trust,
)
from distill.core.passes import Decision
from distill.core.support import Support, held_until, said_order
from distill.core.working import Candidate, Identity


class TrustOrder(HeldAlone):
    """The decisions that trust makes in world order, and their shared reads (module doc)."""

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

    def _held_only_behind(
        self,
        fact: Fact,
        trust: Trust,
        value: dict[str, Any] | None = None,
        ended: datetime | None = None,
        restating_from: datetime | None = None,
    ) -> bool:
        """Whether every value held against `fact` (in an open value or quarantine set) is
        from a source that yields to `trust`, none pinned and none of `value` (a
        restatement of the claim: `_restated_rival`) unless held for its source from
        `ended` on (after the stated end of the value of that trust: not a restatement of
        it), or dated from `restating_from` to `ended` (it restated a version of that value
        in force then, which takes it in: `RaisedTrust._take_in_restatements`): in world
        order each would have been held against a value of that trust instead."""
        for cs in self._sets_holding(fact.id):
            if cs.kind is ConflictKind.IDENTITY:
                continue
            held = [self.s.facts[m] for m in cs.member_ids if m != fact.id]
            if any(
                m.pinned
                or not m.trust.yields_to(trust)
                or (
                    value is not None
                    and m.value is not None
                    and values_equal(m.value, value)
                    and not (
                        ended is not None
                        and cs.kind is ConflictKind.QUARANTINE
                        and m.valid_from >= ended
                    )
                    and not self._restating(m, restating_from, ended)
                )
                for m in held
            ):
                return False
        return True

    @staticmethod
    def _restating(held: Fact, start: datetime | None, end: datetime | None) -> bool:
        """Whether `held` is dated from `start` (none: never) to `end` (none: open)."""
        return (
            start is not None
            and start <= held.valid_from
            and (end is None or held.valid_from < end)
        )

    def _hand_over_held(self, old: Fact, new: Fact) -> None:
        """What was held against `old` (`_held_only_behind` `new`'s trust) is held against
        `new`, in quarantine, as it would have been in world order; a value of `new`'s own,
        or an untrusted one stated before `new` began, is held alone (`_held_before`), as
        it is when it arrives after `new`."""
        for cs in self._sets_holding(old.id):
            if cs.kind is not ConflictKind.IDENTITY:
                members = tuple(new.id if m == old.id else m for m in cs.member_ids)
                why = "held against the more trusted value before it"
                if len(members) == 2 and self._held_before(
                    self.s.facts[members[0] if members[1] == new.id else members[1]], new
                ):  # stated before `new` began: held alone, as in order
                    members, why = tuple(m for m in members if m != new.id), "held alone"
                self._revise_conflict(cs, why, member_ids=members, kind=ConflictKind.QUARANTINE)

    @staticmethod
    def _held_before(held: Fact, new: Fact) -> bool:
        """A held value that nothing was in force against once `new` took over: `new`'s own
        value, or an untrusted one stated before `new` began (by position: at `new`'s
        instant, one whose words sort first), which is held alone before the first version
        in any order. (A less trusted value that is not untrusted, dated before the first
        version, is held against it: `LateTrust._file_late`.)"""
        if values_equal(held.value, new.value):
            return True
        return held.trust is Trust.UNTRUSTED and timeline.position(held) < timeline.position(new)

    def _held_back_by_less_trusted(self, c: Candidate, head: Fact, at: timeline.At) -> bool:
        """A create of another value from a more trusted source than the current value's
        (as it was at the claim's position `at`: a restatement dated after the claim had not
        raised it yet), which was the attribute's first and is contested by nothing (or only
        by a later statement of the claim's value, `_held_restating`): it is not held in
        conflict behind that value. Arriving first, it would have held the less trusted
        value in quarantine (`_quarantine`, or `_earlier_trusted` when that value came
        late), so the two end alike in any order (DESIGN invariant 8)."""
        rank = c.event.trust.rank
        return (  # the trust comparison first: it ends nearly every in-order create here
            (rank > head.trust.rank or rank > self._trust_then(head, at).rank)
            and (
                head.supersedes_id is None
                or self._less_trusted_before(c, head, self._restated_since(c, head, at)) is not None
            )
            and (
                self._open_set(head.id) is None
                or self._held_restating(c, head) is not None
                or self._held_for_less_trust(c, head)
            )
            and not self._kept_by_decision(head.id)  # a person's choice is held by nothing
        )

    def _restated_since(self, c: Candidate, head: Fact, at: timeline.At) -> datetime | None:
        """Where the claim's version begins when a held restatement of it older than
        `head` becomes that version (`_held_restating`, `_over_less_trusted`); None when
        the claim makes a version of its own."""
        restating = self._held_restating(c, head)
        return None if restating is None else min(restating.valid_from, at.time)

    def _less_trusted_before(
        self, c: Candidate, head: Fact, since: datetime | None = None
    ) -> list[Fact] | None:
        """The versions before `head`, back to the attribute's first (or to the first since
        a version ended with a gap after it: what follows a gap is a first value again),
        when each is from a source less trusted than the claim's, replaced where it ended,
        not pinned nor kept by a person, and holding only what yields to the claim: in world
        order the claim would have held each of them as it holds a less trusted first value
        (`_over_less_trusted`). None when not so, or when one was not loaded. With `since`,
        where the claim's version will begin (a held restatement of it, older than `head`:
        `_restated_since`), a version that ended after it is no end of the walk: it would
        stand beside the claim's version over the same days (seed 1540638)."""
        before: list[Fact] = []
        version = head
        while version.supersedes_id is not None:
            previous = self.s.facts.get(version.supersedes_id)
            if (
                previous is not None
                and self._ended_of_itself(previous, version)
                and self._next_of(previous, after_a_gap=True) is version
                and not previous.pinned  # its receipt changes: a pin keeps it as it is
                and (
                    since is None or (previous.valid_to is not None and previous.valid_to <= since)
                )
            ):
                return before  # `version` is the first value since `previous` ended
            if (
                previous is None
                or self._next_of(previous) is not version
                or previous.pinned
                or self._kept_by_decision(previous.id)  # a person's choice, as a pin is
                or previous.trust.rank >= c.event.trust.rank
                or not self._held_only_behind(previous, c.event.trust)
            ):
                return None
            before.append(previous)
            version = previous
        return before

    def _held_for_less_trust(self, c: Candidate, head: Fact) -> bool:
        """Whether every value `head` holds is a candidate from a source that yields to the
        claim's (`_held_only_behind`): the claim holds them all, as it holds `head`
        (`_hand_over_held`), rather than counting as a third value of a conflict its
        sources could not have decided."""
        held = [
            self.s.facts[m]
            for cs in self._sets_holding(head.id)
            if cs.kind is not ConflictKind.IDENTITY
            for m in cs.member_ids
            if m != head.id
        ]
        return all(m.status is FactStatus.CANDIDATE for m in held) and self._held_only_behind(
            head, c.event.trust
        )

    def _held_restating(self, c: Candidate, head: Fact) -> Fact | None:
        """The one candidate held in conflict against `head`, of the claim's value and dated
        no earlier than it (at its instant too), no member pinned: in order it came after
        the claim, or with it, and restated it."""
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
        change only restated the claim, which holds from its own date. Either way each less
        trusted version before `head` (`_less_trusted_before`) is held as `head` is: left
        replaced by `head`, late, it would be replaced by a held value (seed 1680764)."""
        if following is None and (change := self._adopting_change(c, head, at)) is not None:
            return self._held_until_adopted(c, head, ident, value, change)
        restated = any(not s.trust.yields_to(c.event.trust) for s in self._restated_after(head, at))
        reason = (
            "the held value is stated again by a source as trusted"
            if restated
            else f"{self._trust_then(head, at)} source may not displace a {c.event.trust} fact"
        )
        kind = ConflictKind.CONFLICT if restated else ConflictKind.QUARANTINE
        restating = self._held_restating(c, head) if following is None else None
        since = self._restated_since(c, head, at) if following is None else None
        before = self._less_trusted_before(c, head, since) or []
        # The version that ended before the first of them, with a gap (`_less_trusted_before`).
        first = before[-1] if before else head
        ended = self.s.facts.get(first.supersedes_id or "")
        if ended is None or ended.valid_to is None or ended.valid_to >= first.valid_from:
            ended = None
        if following is None:
            self._revise(
                head,
                "hold",
                f"a more trusted value arrived: quarantined: {reason}",
                status=FactStatus.CANDIDATE,
                unpaired_change=False,
                supersedes_id=None,
            )
        else:
            self._hold_displaced(head, f"a more trusted value arrived late: quarantined: {reason}")
        if restating is not None:  # in order it restated the claim: the claim's version
            cs = self._open_set(head.id)
            assert cs is not None
            self._revise_conflict(cs, reason, kind=kind)
            fact = self._revise(
                restating,
                "resolve",
                reason,
                status=FactStatus.ACTIVE,
                valid_from=min(restating.valid_from, at.time),
                supersedes_id=ended.id if ended is not None else restating.supersedes_id,
            )
            if ended is not None:  # what follows its gap now
                self._revise(ended, "link", "the value after its gap", superseded_by=fact.id)
            self._hold_less_trusted(c, ident, before, fact)
            return self._reinforce(fact, c, "a more trusted value", valid_from=at.time)
        if following is None:
            fact = self._new_fact(c, FactKind.STATE, ident, value)
            if ended is not None:  # what follows its gap now
                fact = fact.model_copy(update={"supersedes_id": ended.id})
            # Linked once made: a value held alone may be the row (`_create_version`).
            fact = self._create_version(c, fact, "a more trusted value", self._query_text(c))
            if ended is not None:
                self._revise(ended, "link", "the value after its gap", superseded_by=fact.id)
            decision = Decision(Outcome.CREATED, fact.id, reason)
        else:  # the change that replaced `head` only restated the claim
            fact = self._revise(
                following, "link", reason, supersedes_id=None, unpaired_change=False
            )
            decision = self._reinforce(fact, c, "a more trusted value", valid_from=at.time)
        self._hand_over_held(head, self.s.facts[fact.id])  # `_held_for_less_trust`
        self._open_conflict(ident.key, (fact.id, head.id), kind, reason)
        self._hold_less_trusted(c, ident, before, self.s.facts[fact.id])
        self._follow_identity_sets(head, self.s.facts[fact.id])
        return decision

    def _hold_less_trusted(
        self, c: Candidate, ident: Identity, before: list[Fact], fact: Fact
    ) -> None:
        """Each version of `_less_trusted_before` held in quarantine against `fact`, the
        claim's version, as `head` is: left a version, it would stand beside the claim's
        value over the same days (seeds 1680764 and, when the claim's version is a held
        restatement of it, 1540638)."""
        for version in before:
            why = f"{version.trust} source may not displace a {c.event.trust} fact"
            self._hold_displaced(self.s.facts[version.id], f"a more trusted value arrived: {why}")
            self._hand_over_held(version, fact)
            self._open_conflict(ident.key, (fact.id, version.id), ConflictKind.QUARANTINE, why)

    def _adopting_change(self, c: Candidate, head: Fact, at: timeline.At) -> Support | None:
        """The first restatement of `head` after the claim, when it is a change (or dated
        by its own start: later than the claim, in order it replaced it) from a source that
        does not yield to the claim's: in world order the claim held `head` in quarantine,
        and that change adopted it (`Rivals._adopt`). None when `head` holds a set."""
        later = sorted(self._restated_after(head, at), key=said_order)
        if (
            not later
            or not (later[0].supersede or later[0].dated)
            or later[0].trust.yields_to(c.event.trust)
            or self._open_set(head.id) is not None
        ):
            return None
        return later[0]

    def _held_until_adopted(
        self, c: Candidate, head: Fact, ident: Identity, value: dict[str, Any], change: Support
    ) -> Decision:
        """The claim's value is the version until `change`, which adopted `head`, held
        against it meanwhile: `head` begins with the change and keeps its statements."""
        reason = "a more trusted value, until a change adopted the value it held"
        fact = self._create_replaced(c, ident, value, change.at, head.id, reason)
        self._revise(
            head,
            "retime",
            reason,
            valid_from=change.at,
            supersedes_id=fact.id,
            unpaired_change=False,
        )
        return Decision(Outcome.HISTORICAL, fact.id, reason)

    def _next_of(self, version: Fact, *, after_a_gap: bool = False) -> Fact | None:
        """The version that replaced `version` where it ended (or, `after_a_gap`, after its
        stated end, no other version in the gap: one a person kept there is linked to
        neither), linked both ways."""
        following = self.s.facts.get(version.superseded_by or "")
        if (
            version.status is not FactStatus.SUPERSEDED
            or following is None
            or following.status not in (FactStatus.ACTIVE, FactStatus.SUPERSEDED)
            or following.supersedes_id != version.id
            or version.valid_to is None
            or version.valid_to > following.valid_from
        ):
            return None
        if version.valid_to < following.valid_from:
            gap = (version.valid_to, following.valid_from)
            if not after_a_gap or any(
                f.status in (FactStatus.ACTIVE, FactStatus.SUPERSEDED)
                and gap[0] <= f.valid_from < gap[1]
                for f in self._facts_of(version.identity_key or "")
            ):
                return None
        return following

    def _made_more_trusted(self, version: Fact) -> None:
        """A value held against `version` in a value conflict, from a source that yields to
        the trust a restatement gave it, could not displace it now: the set holds it in
        quarantine, as it would hold a value said after that restatement
        (`Adjudicator._state`), whatever the order the statements came in."""
        for cs in self._sets_holding(version.id):
            others = [self.s.facts[m] for m in cs.member_ids if m != version.id]
            if (
                cs.kind is ConflictKind.CONFLICT
                and others
                and all(o.trust.yields_to(version.trust) for o in others)
            ):
                kind, why = self._held_as(others[0], version.trust)  # a quarantine
                self._revise_conflict(cs, why, kind=kind)

    def _held_as(self, held: Fact, over: Trust) -> tuple[ConflictKind, str]:
        """How `held`, arriving after a value from a source of trust `over` in world order,
        was held against it: in quarantine when its source yields to that one, else in a
        value conflict."""
        if held.trust.yields_to(over):
            return ConflictKind.QUARANTINE, f"{held.trust} source may not displace a {over} fact"
        return ConflictKind.CONFLICT, "different value"

    def _ended_of_itself(self, version: Fact, following: Fact) -> bool:
        """Whether `version` had ended by the time `following` began: before it, or where it
        began by an end its statements stated (a change also ends a version where it
        begins). Then `following` followed that end and replaced nothing."""
        end = version.valid_to
        if end is None or end > following.valid_from:
            return False
        if end < following.valid_from:
            return True
        stated = held_until(self.s.support.get(version.id) or (self._first_support(version),))
        return stated is not None and stated <= following.valid_from

    def _create_replaced(
        self,
        c: Candidate,
        ident: Identity,
        value: dict[str, Any],
        until: datetime,
        by: str,
        reason: str,
    ) -> Fact:
        """The claim's `value` as a version already replaced: from the claim's time until
        `until`, by fact `by` (a late claim filed before the versions that followed it)."""
        fact = self._new_fact(
            c,
            FactKind.STATE,
            ident,
            value,
            status=FactStatus.SUPERSEDED,
            valid_to=until,
            retired_at=self.now,
            superseded_by=by,
        )
        return self._create_version(c, fact, reason, self._query_text(c))
