"""Sources of unequal trust, late: a claim that arrives after less trusted versions took
its place must end where arrival in world order would have put it (`trust_order` holds the
rules it would have met then), so these decisions read trust as the claim would have met it:

* the first version's first statement at least as trusted as a late, earlier claim: a
  create from a more trusted source held it, a change replaced it (`_held_by_a_create`);
* a less trusted current value, or chain of versions (the current one may be a `create` as
  trusted, held in a value conflict), that an earlier, more trusted one arrives before
  (`_earlier_trusted`) or inside a version before them
  (`_inside_over_less_trusted`), or a less trusted change that the earlier value's
  own restatement replaced (`_restated_over`); a first version whose first statements yield
  to the late claim begins with the change that adopted them (`_began_when_adopted`);
* a less trusted statement held against a version, of the value of the change that
  replaced it: that change adopted it (`_adopted_by_next`);
* a value that a less trusted one holds in quarantine and a trusted statement restates
  (`_held_behind`); a less trusted first value that a later create holds and a late
  trusted change (or dated value) replaces (`_held_first_value`);
* a change held against a trusted create of a late value's value, dated between them (or
  any value dated after the late value's stated end): it replaced the late value, or
  followed its end, and the create is a return (`_held_change_after`);
* a replaced version a late statement makes more trusted than what replaced it: in
  `trust_raised`, the class this one extends.
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
    Fact,
    FactKind,
    FactStatus,
    Outcome,
    Trust,
)
from distill.core.passes import Decision
from distill.core.support import held_until, own_end, said_order, supported_by
from distill.core.trust_raised import RaisedTrust
from distill.core.working import Candidate, Identity


class LateTrust(RaisedTrust):
    """The late decisions that trust decides (module doc)."""

    def _displaced_by_less_trusted(
        self, c: Candidate, following: Fact, value: dict[str, Any]
    ) -> list[tuple[Fact, dict[str, Any]]]:
        """In order, this claim came before `following` (the first version, or the one after
        a less trusted first value the claim held: `_held_first_inside`), and none of the
        versions from it to the current one could have displaced it: each from a less
        trusted source, each replacing the one before where it ended or after a gap (the
        claim was in force there), none begun after the claim's own stated end (that one
        displaced nothing), none pinned or kept by
        a person (`_kept_by_decision`), each holding only what yields to the claim
        (`_held_only_behind`). Each would have been
        quarantined against it, with the value it would have had then (a change carries the
        claim's unstated keys forward): those values, none the claim's (a repeat of it would
        have reinforced it). Two versions of one value are held each in its own set: in
        order the later statement reinforced the earlier held one, a history that cannot be
        rebuilt once both are facts, and what is served (the claim's value, the other held)
        is the same. The current version may be as
        trusted as the claim when it began as a `create` after less trusted ones: in order it
        met the claim in force and was held in conflict against it (`_earlier_trusted`).
        Empty when not so."""
        chain: list[Fact] = []
        version: Fact | None = following
        while version is not None:  # across a gap too: the claim was in force there
            chain.append(version)
            version = self._next_of(version, after_a_gap=True)
        trust = c.event.trust
        end = c.claim.valid_to
        if end is not None and any(v.valid_from >= end for v in chain):
            return []
        last = chain[-1]
        contested = (
            len(chain) > 1
            and last.trust is trust
            and not self._began_as_change(last, self._time(c))
        )
        if last.status is not FactStatus.ACTIVE or any(
            v.pinned
            or self._kept_by_decision(v.id)  # a person's choice, as a pin is
            or (v.trust.rank >= trust.rank and not (v is last and contested))
            or not self._held_only_behind(v, trust, value)
            for v in chain
        ):
            return []
        held = [(v, self._held_value(c, v, value)) for v in chain]
        if any(values_equal(value, h) for _, h in held):
            return []
        return held

    def _inside_over_less_trusted(
        self,
        c: Candidate,
        base: Fact,
        held: list[tuple[Fact, dict[str, Any]]],
        ident: Identity,
        value: dict[str, Any],
    ) -> Decision:
        """A late claim inside `base` (or after its stated end), before versions none of
        which could have displaced it (`_displaced_by_less_trusted`): it replaces `base` from
        its date and is current, the versions after it held against it (`_earlier_trusted`)."""
        decision = self._earlier_trusted(c, held, ident, value)
        fact = self.s.facts[decision.fact_id or ""]
        reason = "a later-arriving version began inside it"
        t = self._time(c)
        base = self.s.facts[base.id]  # ended at t, or at its own stated end before it (a gap)
        end = timeline.end_of(base.valid_to, t)
        self._revise(base, "link", reason, valid_to=end, superseded_by=fact.id)
        self._revise(fact, "link", reason, supersedes_id=base.id, unpaired_change=False)
        return Decision(Outcome.SUPERSEDED, fact.id, reason)

    def _held_change_after(self, c: Candidate, following: Fact) -> Fact | None:
        """A change to another value, held in quarantine against `following` (the first
        version, of this claim's value, from a more trusted create), dated after this claim
        and from a source at least as trusted as the claim's: in world order it replaced the
        claim's value, and `following` returned to it. So does any value but an untrusted
        one dated from the claim's stated end on: in order it followed the claim's end,
        displacing nothing, and `following` returned to the claim's value."""
        held = self._held_by_first(following)
        t = self._time(c)
        if (
            held is None
            or held.valid_to is not None
            or not timeline.At(t, c.claim.value) < timeline.position(held)
            or not held.valid_from < following.valid_from
        ):
            return None
        end = c.claim.valid_to
        if end is not None and end <= held.valid_from:
            return held if held.trust is not Trust.UNTRUSTED else None
        if held.trust.yields_to(c.event.trust) or not self._began_as_change(held, t):
            return None
        return held

    def _before_a_return(
        self, c: Candidate, ident: Identity, value: dict[str, Any], change: Fact, following: Fact
    ) -> Decision:
        """The claim's value until `change` (`_held_change_after`) replaced it (or until its
        own stated end before it), and `following` a return to the value after the change:
        three versions, as in order."""
        reason = "an earlier value, replaced by the change held against its return"
        until = timeline.end_of(c.claim.valid_to, change.valid_from)
        assert until is not None
        fact = self._create_replaced(c, ident, value, until, change.id, reason)
        self._revise(
            change,
            "resolve",
            reason,
            status=FactStatus.SUPERSEDED,
            valid_to=following.valid_from,
            retired_at=self.now,
            supersedes_id=fact.id,
            superseded_by=following.id,
            unpaired_change=False,
        )
        self._revise(following, "link", reason, supersedes_id=change.id)
        cs = self._open_set(following.id)
        assert cs is not None
        self._settle(cs, following.id, reason)
        return Decision(Outcome.HISTORICAL, fact.id, reason)

    def _held_value(self, c: Candidate, version: Fact, value: dict[str, Any]) -> dict[str, Any]:
        """`version`'s value held against the claim's `value` (`_displaced_by_less_trusted`)."""
        assert version.value is not None
        if not version.stated:
            return version.value
        return carried_forward(value, version.stated, c.claim.predicate == version.predicate)

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
            or self._kept_by_decision(following.id)
            or restated.pinned
            or self._open_set(following.id) is not None
        ):
            return None
        return restated

    def _held_by_a_create(self, following: Fact, t: datetime, trust: Trust) -> bool:
        """Whether, had a claim of `trust` and time `t` come first, the first version's
        statements in world order would have held it in quarantine: a create from a more
        trusted source comes before any change (or value dated by its own date after `t`)
        from a source at least as trusted as the claim, which would have replaced it. A
        statement that yields to the claim would have been held against it; a create as
        trusted only held in conflict with it (`_held_restating` then). By `following`'s own
        record when its statements were not loaded."""
        supports = self.s.support.get(following.id)
        if not supports:
            return following.trust.rank > trust.rank and following.stated is None
        for s in sorted((s for s in supports if not s.trust.yields_to(trust)), key=said_order):
            if s.supersede or (s.dated and s.at > t):
                return False
            if s.trust.rank > trust.rank:
                return True
        return False

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
        displace this claim's value, or no such change followed before it ended (a version
        a person replaced with a value they kept, before that change's date, is left as it
        is: it cannot begin after its end)."""
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
        if following.valid_to is not None and change.at >= following.valid_to:
            return None
        return change.at

    def _held_by_first(self, following: Fact) -> Fact | None:
        """The one candidate `following`, the first version, holds in a quarantine set of
        two, neither pinned: what a more trusted create held when it met it."""
        cs = self._open_set(following.id)
        if (
            cs is None
            or cs.kind is not ConflictKind.QUARANTINE
            or len(cs.member_ids) != 2
            or following.supersedes_id is not None
            or following.pinned
        ):
            return None
        (held,) = (self.s.facts[m] for m in cs.member_ids if m != following.id)
        return held if held.status is FactStatus.CANDIDATE and not held.pinned else None

    def _held_first_value(self, c: Candidate, following: Fact) -> Fact | None:
        """The less trusted first value that `following`, the first version, holds in
        quarantine (a more trusted create met it: `_over_less_trusted`), dated before this
        claim, a change that could displace it (of `following`'s value, or any value that
        ended before `following` began): in order that value was current until this change
        replaced it. A claim that states when its value began is a change, as in order."""
        held = self._held_by_first(following)
        t = self._time(c)
        if (
            (c.claim.action is not ClaimAction.SUPERSEDE and c.claim.valid_from is None)
            or held is None
            or held.supersedes_id is not None
            or not timeline.position(held) < timeline.At(t, c.claim.value)
            or c.event.trust.yields_to(held.trust)
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
        self._revise(following, "link", reason, supersedes_id=held.id, unpaired_change=False)
        cs = self._open_set(following.id)
        assert cs is not None
        self._settle(cs, following.id, reason)

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

    def _earlier_trusted(
        self,
        c: Candidate,
        held: list[tuple[Fact, dict[str, Any]]],
        ident: Identity,
        value: dict[str, Any],
    ) -> Decision:
        """The earlier, more trusted value is the active one; each of the versions after it
        (`_displaced_by_less_trusted`) is held in quarantine against it, with its value then
        (one as trusted as the claim in a value conflict), and what each held is held
        against the claim's value."""
        fact = self._new_fact(c, FactKind.STATE, ident, value)
        if c.claim.action is ClaimAction.SUPERSEDE:
            fact = fact.model_copy(update={"unpaired_change": True})  # as `_earlier_create`
        kinds = {v.id: self._held_as(v, c.event.trust) for v, _ in held}
        for version, held_value in held:
            update: dict[str, Any] = {"status": FactStatus.CANDIDATE, "unpaired_change": False}
            if version.status is FactStatus.SUPERSEDED:  # a replaced version: its own end
                support = self.s.support.get(version.id, ())
                update |= {"supersedes_id": None, "superseded_by": None, "retired_at": None}
                update |= {"valid_to": held_until(support)}
            elif version.supersedes_id is not None:
                update |= {"supersedes_id": None}
            if not values_equal(held_value, version.value):
                assert version.predicate is not None
                update |= {
                    "value": held_value,
                    "text": fact_text(version.predicate, held_value, version.qualifiers),
                }
            kind, why = kinds[version.id]
            held_how = "quarantined" if kind is ConflictKind.QUARANTINE else "in conflict"
            self._revise(
                version, "hold", f"an earlier value arrived late: {held_how}: {why}", **update
            )
        fact = self._create_version(c, fact, "an earlier, more trusted value", self._query_text(c))
        for version, _ in held:
            self._hand_over_held(version, fact)
            self._open_conflict(ident.key, (fact.id, version.id), *kinds[version.id])
        self._follow_identity_sets(held[-1][0], fact)
        if c.claim.valid_to is not None:
            self._beyond_the_end(self.s.facts[fact.id], self.s.facts[held[-1][0].id])
        return Decision(Outcome.CREATED, fact.id, kinds[held[0][0].id][1])

    @staticmethod
    def _held_as(version: Fact, trust: Trust) -> tuple[ConflictKind, str]:
        """How a version is held against a late, earlier value of `trust`: in quarantine
        when less trusted, in a value conflict when as trusted (it met that value)."""
        if version.trust is trust:
            return ConflictKind.CONFLICT, "different value"
        return ConflictKind.QUARANTINE, f"{version.trust} source may not displace a {trust} fact"

    def _beyond_the_end(self, fact: Fact, held: Fact) -> None:
        """`held`, the last version a late claim with a stated end holds, restated from
        that end on: in world order those statements came after the claim's value had
        ended, displaced nothing, and began a version after it (an untrusted one is held
        still). The version follows `fact` from the first of them; `held` keeps the rest."""
        end, support = fact.valid_to, self.s.support.get(held.id, ())
        beyond = [s for s in support if end is not None and s.at >= end]
        inside = [s for s in support if s not in beyond]
        if not beyond or not inside or all(s.trust is Trust.UNTRUSTED for s in beyond):
            return
        reason = "restated after the end of the value that held it"
        self.s.support[held.id] = tuple(inside)
        until = held_until(inside)
        self._revise(held, "retime", reason, valid_to=until, **supported_by(inside, held))
        follower_id, status = self.new_id(), fact.status
        self._retire(fact, reason, min(s.at for s in beyond), follower_id)
        update = {"id": follower_id, "status": status, "supersedes_id": fact.id}
        self._new_part(held, beyond, reason, held.id, valid_to=own_end(beyond), **update)

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
