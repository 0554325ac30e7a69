"""A late claim dated before the first version of its identity: in world order it came first.

When the earliest statement arrives last, what the others did to each other was decided
without it. In order, an undated `create` of another value met this claim and was held
against it, so the two swap places (`_first_of_competing_creates`, `_earlier_create`); a
candidate that restates this claim's value was only repeating it and becomes current with
it (`_restated_rival`); and two creates held in conflict after it were, with it, three
distinct values, which makes them dated events (`_contested_first`). A first version that
began as a change would have replaced the claim in order too: the claim is history before
it (`LateArrivals._historical`), as it is before a create that a later change replaced
(`LateArrivals._before_replaced_create`, where that change met the claim instead; what that
create held in conflict, said after the claim, was then values of the claim's series, or a
restatement of the claim: `Series._later_values`, `Series._restating_value`).
"""

from __future__ import annotations

from typing import Any

from distill.core import timeline
from distill.core.identity import values_equal
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
from distill.core.series import RESTATED, THIRD_VALUE
from distill.core.support import said_order
from distill.core.trust_late import LateTrust
from distill.core.working import Candidate, Identity


class FirstValues(LateTrust):
    """The decisions for a late claim dated before every version (module doc)."""

    def _restated_rival(
        self, c: Candidate, base: Fact | None, following: Fact, value: dict[str, Any]
    ) -> Fact | None:
        """A candidate held against `following` (a create) that says what this claim says: in
        order this claim came first, `following` was held against it, and the candidate only
        restated it, whatever `following`'s restatements after it when none was a change
        (they restated a held value). A `following` less trusted than the claim was held
        against it even as a change (in quarantine)."""
        less_trusted = following.trust.rank < c.event.trust.rank
        if (
            base is not None
            or following.status is not FactStatus.ACTIVE
            or self._kept_by_decision(following.id)
            or following.supersedes_id is not None
            or (not less_trusted and self._began_as_change(following, self._time(c)))
        ):
            return None
        held = self._held_rival(following, value, c.event.trust) or self._held_behind(
            following, value
        )
        if held is None:  # restated after the candidate, by creates until a change to it
            held = self._held_rival(following, value, c.event.trust, restated=True)
            if held is not None and self._began_as_change(
                following, self._time(c), restated=True, until=timeline.position(held[0])
            ):
                return None
        if held is None or self._changed_to_before(following, held[0], c.event.trust):
            return None
        return held[0]

    def _changed_to_before(self, following: Fact, rival: Fact, trust: Trust) -> bool:
        """Whether a change to `following`'s value, from a source that does not yield to
        the late claim's `trust`, was stated no later than `rival` was (a change goes first
        at one instant: `said_order`): in world order, with the late claim first, that
        change made `following` current (it adopted the first statement held against the
        claim: `_adopt`), and `rival` met `following`, not the claim. It returned to the
        claim's value after `following`, a version of its own (`_now_a_return`, when the
        claim is filed as history), and restated nothing."""
        return any(
            s.supersede and s.at <= rival.valid_from and not s.trust.yields_to(trust)
            for s in self.s.support.get(following.id, ())
        )

    def _earlier_than_rival(self, c: Candidate, following: Fact, rival: Fact) -> Decision:
        reason = "an earlier statement of the value held in conflict: it came first"
        open_set = self._open_set(following.id)
        trust = max(rival.trust, c.event.trust, key=lambda t: t.rank)
        if open_set is not None:
            # `following` is held for its source when it is less trusted than the value it
            # is now held against (as in order), else the two are values in conflict.
            held_for_trust = following.trust.yields_to(trust)
            kind = ConflictKind.QUARANTINE if held_for_trust else ConflictKind.CONFLICT
            if open_set.kind is not kind:
                self._revise_conflict(open_set, reason, kind=kind)
        # A change to `following`'s value said after the candidate, from a source that could
        # replace the value made current, adopted nothing in order (the candidate had
        # restated that value since): from it, `following`'s statements are a version of
        # their own after the claim's.
        stated = self.s.support.get(following.id, ())
        after = timeline.position(rival)
        words = timeline.position(following).stated
        change = min(
            (
                s
                for s in stated
                if (s.supersede or s.dated)
                and after < timeline.At(s.at, words)
                and not s.trust.yields_to(trust)
            ),
            key=said_order,
            default=None,
        )
        held = [s for s in stated if change and said_order(s) < said_order(change)]
        start = min(rival.valid_from, self._time(c))
        if change is None or not held:
            self._revise(following, "hold", reason, status=FactStatus.CANDIDATE)
            first = current = self._revise(
                rival, "hold", reason, status=FactStatus.ACTIVE, valid_from=start
            )
        else:
            current = self._held_before_change(following, held, rival, reason)
            first = self._revise(self.s.facts[rival.id], "retime", reason, valid_from=start)
        self._follow_identity_sets(following, current)
        return self._reinforce(first, c, reason)

    def _first_of_competing_creates(
        self, c: Candidate, base: Fact | None, following: Fact, value: dict[str, Any]
    ) -> bool:
        """An undated create with a different value is held against the value before it, which
        stays the active one: in order, `following` (an undated create: `_began_as_change`)
        would have been held against this claim, whatever this claim's own action (a change
        of nothing known is filed as new, then contested the same way). So when the earlier
        claim arrives second, the facts swap places instead of becoming history. Two claims
        dated to the same instant are ordered by their words and treated alike."""
        return (
            (c.claim.valid_from is None or self._time(c) == following.valid_from)
            and base is None
            and following.status is FactStatus.ACTIVE
            and not self._kept_by_decision(following.id)
            and (following.supersedes_id is None or self._ended_before(following))
            and not self._began_as_change(following, self._time(c), restated=True, by=c.event.trust)
            and self._held_only_for_source(following, c.event.trust, value)
        )

    def _held_only_for_source(self, following: Fact, trust: Trust, value: dict[str, Any]) -> bool:
        """Whether `following` holds nothing in a value conflict, and what it holds in
        quarantine is from sources that yield to `trust`, none of `value`
        (`_held_only_behind`): in world order it was held against the value of that trust
        before `following` (`_hand_over_held`)."""
        held = [
            cs for cs in self._sets_holding(following.id) if cs.kind is not ConflictKind.IDENTITY
        ]
        return all(cs.kind is ConflictKind.QUARANTINE for cs in held) and (
            not held or self._held_only_behind(following, trust, value)
        )

    def _ended_before(self, fact: Fact) -> bool:
        """Whether the version `fact` replaced had ended (its stated end) before `fact` began:
        then `fact` followed it without replacing anything, as a first value does."""
        before = self.s.facts.get(fact.supersedes_id or "")
        return before is not None and self._ended_of_itself(before, fact)

    def _earlier_create(
        self,
        c: Candidate,
        following: Fact,
        ident: Identity,
        value: dict[str, Any],
        ended: Fact | None = None,
    ) -> Decision:
        """The claim is the value `following` is held against. When a version `ended`
        before the claim's date, the claim follows it in its place."""
        reason = "different value"
        # A less trusted first value that `following` held, dated before this change: in
        # order the change replaced it (`_held_first_value`).
        first = None if ended is not None else self._held_first_value(c, following)
        self._revise(
            following,
            "hold",
            "an earlier, different value arrived late: held in conflict as if it came second",
            status=FactStatus.CANDIDATE,
            supersedes_id=None,
        )
        links: dict[str, Any] = {} if ended is None else {"supersedes_id": ended.id}
        if c.claim.action is ClaimAction.SUPERSEDE:
            # In order it came first and changed nothing known: marked as such
            # (`_state_without_head`), so that the value it replaced is judged against it.
            links["unpaired_change"] = True
        why = f"the earlier of two competing values ({reason})"
        # An event `following`'s series made of this value only restated it, in order.
        event = self._event_of_value(following, value) if ended is None else None
        if event is not None:
            fact = self._event_as_version(event, self._time(c), f"{why}; {RESTATED}", **links)
            self._reinforce(fact, c, RESTATED)
            fact = self.s.facts[fact.id]
        else:
            fact = self._new_fact(c, FactKind.STATE, ident, value, **links)
            fact = self._create_version(c, fact, why, self._query_text(c))
        self._hand_over_held(following, fact)
        if first is not None:
            self._replaced_first_value(first, fact, self._time(c))
        if ended is not None:
            self._revise(
                ended, "link", "a later-arriving version follows it", superseded_by=fact.id
            )
        kind, why = self._held_as(following, c.event.trust)
        self._open_conflict(ident.key, (fact.id, following.id), kind, why)
        self._follow_identity_sets(following, fact)
        return Decision(Outcome.CONFLICT, fact.id, reason)

    def _contested_first(
        self, c: Candidate, base: Fact | None, following: Fact, value: dict[str, Any]
    ) -> ConflictSet | None:
        """`following`, the first version, is an undated create held in a value conflict with
        one candidate of a third value, both dated after this claim (`following` may share
        its instant, placed after it by its words): in world order this claim came first,
        `following` was held against it and the candidate, a third distinct value,
        reclassified them (`Series._reclassify`)."""
        if (
            base is not None
            or following.status is not FactStatus.ACTIVE
            or following.supersedes_id is not None
            or self._began_as_change(following, self._time(c), restated=True)
        ):
            return None
        cs = self._open_set(following.id)
        if cs is None or cs.kind is not ConflictKind.CONFLICT or len(cs.member_ids) != 2:
            return None
        members = [self.s.facts[m] for m in cs.member_ids]
        t = self._time(c)
        if any(
            m.pinned
            or m.valid_from < t
            or (m.valid_from == t and m.id != following.id)
            or (m.value is not None and values_equal(m.value, value))
            or (m.id != following.id and m.status is not FactStatus.CANDIDATE)
            for m in members
        ):
            return None
        return cs

    def _earlier_than_contested(
        self,
        c: Candidate,
        following: Fact,
        cs: ConflictSet,
        ident: Identity,
        value: dict[str, Any],
    ) -> Decision:
        reason = THIRD_VALUE
        fact = self._new_fact(c, FactKind.STATE, ident, value)
        if c.claim.action is ClaimAction.SUPERSEDE:
            fact = fact.model_copy(update={"unpaired_change": True})  # as `_earlier_create`
        for member_id in cs.member_ids:
            self._as_event(self.s.facts[member_id], reason)
        self._close_as_events(cs, reason)
        fact = self._create_version(
            c, fact, "the earliest of three competing values", self._query_text(c)
        )
        self._follow_identity_sets(following, fact)
        return Decision(Outcome.CREATED, fact.id, reason)

    def _held_until_accepted(
        self, c: Candidate, versions: list[Fact], following: Fact, value: dict[str, Any]
    ) -> tuple[list[Fact], Fact] | None:
        """The versions from `following`, the first, to a version a person accepted from an
        untrusted source (the write gate makes no such version itself), each less trusted
        than this claim, none pinned or kept by a person, none of its value, holding only
        what yields to it:
        in world order this claim came first and each was held against it, until the value
        the person accepted. With that value; None when not so."""
        trust, held = c.event.trust, list[Fact]()
        for version in versions:
            if timeline.position(version) < timeline.position(following):
                continue
            if version.trust is Trust.UNTRUSTED and held:
                return held, version
            if (
                version.pinned
                or self._kept_by_decision(version.id)  # a person's choice, as a pin is
                or version.trust is Trust.UNTRUSTED
                or not version.trust.yields_to(trust)
                or (version.stated is not None and not values_equal(version.stated, version.value))
                or (version.value is not None and values_equal(version.value, value))
                or not self._held_only_behind(version, trust, value)
            ):
                return None
            held.append(version)
        return None

    def _earlier_until_accepted(
        self,
        c: Candidate,
        held: list[Fact],
        accepted: Fact,
        ident: Identity,
        value: dict[str, Any],
    ) -> Decision:
        """The claim is a version until the value a person accepted, and the versions
        before that (`_held_until_accepted`) are held in quarantine against it; what
        followed one of them follows the accepted value."""
        trust = max((v.trust for v in held), key=lambda t: t.rank)
        reason = f"{trust} source may not displace a {c.event.trust} fact"
        why = "an earlier, more trusted value, until a value a person accepted"
        fact = self._filed_before(c, ident, value, accepted, why)
        ids = {v.id for v in held}
        for version in held:
            self._hold_displaced(version, f"an earlier value arrived late: quarantined: {reason}")
            self._hand_over_held(version, fact)
            why = f"{version.trust} source may not displace a {c.event.trust} fact"
            self._open_conflict(ident.key, (fact.id, version.id), ConflictKind.QUARANTINE, why)
        for other in self._facts_of(ident.key):
            if other.supersedes_id in ids and other.id != accepted.id:
                after = accepted.id if accepted.superseded_by == other.id else None
                self._revise(other, "link", "the version before it was held", supersedes_id=after)
        return Decision(Outcome.HISTORICAL, fact.id, reason)

    def _filed_before(
        self,
        c: Candidate,
        ident: Identity,
        value: dict[str, Any],
        after: Fact,
        reason: str,
        restating: Fact | None = None,
    ) -> Fact:
        """The claim as a version of its own that `after` replaced: until `after` began (or
        the end the claim stated, if earlier), linked both ways. A value held since that
        `restating` it (`Series._restating_value`) is that version, from the claim's date."""
        version: dict[str, Any] = {
            "status": FactStatus.SUPERSEDED,
            "valid_to": timeline.end_of(c.claim.valid_to, after.valid_from),
            "retired_at": self.now,
            "superseded_by": after.id,
        }
        if restating is not None:
            fact = self._revise(restating, "resolve", reason, valid_from=self._time(c), **version)
            self._reinforce(fact, c, reason)
            fact = self.s.facts[fact.id]
        else:
            fact = self._new_fact(c, FactKind.STATE, ident, value, **version)
            fact = self._create_version(c, fact, reason)
        self._revise(after, "link", "an older version was filed before it", supersedes_id=fact.id)
        return fact
