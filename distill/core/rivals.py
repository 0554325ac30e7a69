"""Values held in conflict, and what makes one current: the rules both arrival paths share.

A value may wait as a candidate in a conflict set against the current version (an undated
`create` of another value, a less trusted claim). In world order some later statement would
have settled it; these rules settle it whichever order the statements came in, so that the
in-order path (`Adjudicator`) and late news (`LateArrivals`) end alike (DESIGN invariant 8):

* a change to the value a candidate holds makes that candidate the next version
  (`_held_rival`, `_adopt`), and so does an older version that shows it returns to a value
  (`Returns`, core/returns.py);
* a change replaces the current version (`_supersede`), and the candidates held against the
  old version but dated after the change are held against the change instead
  (`_move_later_rivals`);
* a stated end ("from 2015 to 2019") closes a version: its statements dated after the end
  begin a version of their own, and a value held against it from that end on follows it
  (`_given_an_end`, `_held_after_end`), since the two were never true at once.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from distill.core import timeline
from distill.core.identity import values_equal
from distill.core.models import (
    ConflictKind,
    ConflictSet,
    ConflictStatus,
    Fact,
    FactKind,
    FactStatus,
    Outcome,
    Resolver,
    Trust,
)
from distill.core.passes import Decision
from distill.core.series import CHANGED_TO_EVENT, Series
from distill.core.support import Support, held_until, own_end, supported_by
from distill.core.working import (
    CONFLICT_MAX_MEMBERS,
    Candidate,
    Identity,
)


class Rivals(Series):
    """The rules for values held in conflict and for versions' ends (module doc), and a
    version's restatements (`_restated_after`), which the two paths share."""

    def _conflict(
        self,
        c: Candidate,
        existing: Fact,
        ident: Identity,
        value: dict[str, Any],
        reason: str,
    ) -> Decision:
        repeated = self._repeated(c, existing, value)
        if repeated is not None:
            return repeated
        held = self._value_sets(existing.id)
        restated = self._restates_event(c, existing, value)
        if restated is not None:
            return restated
        # Only a value conflict grows: a value quarantined for its source is held apart, as
        # it is when it arrives after the value conflict opened (in world order).
        open_set = next((cs for cs in held if cs.kind is ConflictKind.CONFLICT), None)
        if open_set is not None:
            # A member a person pinned is theirs to decide: the set grows by the new value
            # instead of turning it into an event fact (consolidation never changes a pin).
            pinned = any(self.s.facts[m].pinned for m in open_set.member_ids)
            if len(open_set.member_ids) >= CONFLICT_MAX_MEMBERS and not pinned:
                return self._reclassify(c, open_set, ident, value)
        fact = self._new_fact(
            c,
            FactKind.STATE,
            ident,
            value,
            status=FactStatus.CANDIDATE,
        )
        self._create(fact, f"held in conflict: {reason}")
        if open_set is not None:
            self._revise_conflict(
                open_set, f"another value: {reason}", member_ids=(*open_set.member_ids, fact.id)
            )
        else:
            self._open_conflict(ident.key, (existing.id, fact.id), ConflictKind.CONFLICT, reason)
        # A restatement dated after the claim may have made `existing` more trusted than the
        # claim's source: then the value is held in quarantine, as it is in order.
        self._made_more_trusted(self.s.facts[existing.id])
        return Decision(Outcome.CONFLICT, fact.id, reason)

    def _repeated(
        self, c: Candidate, against: Fact | None, value: dict[str, Any]
    ) -> Decision | None:
        """The claim repeats a value held already against `against`, in any of the sets
        holding it (a value held for its source is a set of its own): `_repeat_held`."""
        for open_set in self._value_sets(against.id) if against else ():
            if (repeated := self._repeat_held(c, open_set, value)) is not None:
                return repeated
        return None

    def _repeat_held(
        self, c: Candidate, open_set: ConflictSet, value: dict[str, Any]
    ) -> Decision | None:
        """A claim of a value a candidate of `open_set` already holds reinforces it, from
        whatever source: it says nothing new, and held a second time it would make the
        state depend on which statement came first. Stated earlier than the candidate
        knew, it held from then (as in order). A quarantined value that a source as trusted
        as every active member now states is no longer held for its source: the set is a
        value conflict."""
        for member_id in open_set.member_ids:
            member = self.s.facts[member_id]
            if member.status is FactStatus.CANDIDATE and values_equal(member.value, value):
                decision = self._reinforce(
                    member, c, "repeats a value already held", valid_from=self._time(c)
                )
                members = [self.s.facts[m] for m in open_set.member_ids]
                active = [m for m in members if m.status is FactStatus.ACTIVE]
                held = [m for m in members if m.status is FactStatus.CANDIDATE]
                if (
                    open_set.kind is ConflictKind.QUARANTINE
                    and active
                    and not any(h.trust.yields_to(a.trust) for h in held for a in active)
                ):
                    reason = "the held value is now stated by a source as trusted"
                    self._revise_conflict(open_set, reason, kind=ConflictKind.CONFLICT)
                if self.s.facts[member.id].valid_from < member.valid_from:
                    # Now the earliest of its series' values, perhaps: which of them is held
                    # and which are events is decided by their dates (`Series`).
                    self._settle_parts(*(version.id for version in active))
                return decision
        return None

    def _supersede(
        self,
        c: Candidate,
        head: Fact,
        ident: Identity,
        value: dict[str, Any],
        how: str,
        **retired: Any,
    ) -> Decision:
        """The claim's `value` replaces `head` from the claim's time (`how`: how the claim's
        predicate was matched to it; `retired`: more of `head`'s fields to revise)."""
        t = self._time(c)
        reason = f"new value replaces the old one ({how})"
        event = self._event_of_value(head, value)
        if event is not None:  # the series stated the value first: the change began then
            reason = f"{reason}; {CHANGED_TO_EVENT}"
            fact = self._event_replaces(head, event, min(t, event.valid_from), reason, **retired)
            self._reinforce(fact, c, reason)
            fact = self.s.facts[fact.id]
        else:
            # A change still waiting for the value it replaced (`unpaired_change`) waits as
            # the attribute's current version: the mark moves with it.
            fact = self._new_fact(
                c,
                FactKind.STATE,
                ident,
                value,
                supersedes_id=head.id,
                unpaired_change=head.unpaired_change,
            )
            self._retire(head, reason, t, fact.id, **retired)
            self._create(fact, reason, vector_text=self._query_text(c))
            self._follow_identity_sets(head, fact)
            self._move_later_rivals(head, fact)
        if fact.valid_to is not None:
            self._given_an_end(self.s.facts[fact.id], fact.valid_to, None)
        return Decision(Outcome.SUPERSEDED, fact.id, reason)

    def _event_replaces(
        self,
        head: Fact,
        event: Fact,
        start: datetime,
        reason: str,
        following: Fact | None = None,
        **retired: Any,
    ) -> Fact:
        """An event of `head`'s series made the version that replaces `head` from `start`
        (a change to its value, or a return to it): the values of the series before it are
        `head`'s, settled as world order leaves them, and those after it the new version's
        (`Series` module doc). With `following`, the version that replaced `head` since, it
        is a version between the two, ending where `head` ended."""
        end = head.valid_to
        self._retire(head, reason, start, event.id, **retired)
        links: dict[str, Any] = {"supersedes_id": head.id, "unpaired_change": head.unpaired_change}
        if following is not None:
            links |= {
                "status": FactStatus.SUPERSEDED,
                "valid_to": end,
                "retired_at": self.now,
                "superseded_by": following.id,
                "unpaired_change": False,
            }
        fact = self._event_as_version(event, start, reason, **links)
        if following is not None:
            self._revise(following, "link", reason, supersedes_id=fact.id)
        self._follow_identity_sets(head, fact)
        self._move_later_rivals(head, fact)
        self._settle_series(self.s.facts[head.id], start)
        return self.s.facts[fact.id]

    def _move_later_rivals(self, old: Fact, new: Fact) -> None:
        """Candidates held against `old` in an open value or quarantine set and dated after
        `new` began (a change that arrived after them): in world order they came after the
        change and were held against it, so they are held against `new` instead: in a value
        conflict, or in quarantine when less trusted than `new` (a quarantined one moves only
        so). Candidates dated before it stay held against `old`, the version in force when
        they were said; one restated after it splits, and its restatements are held against
        `new`."""
        for cs in self._sets_holding(old.id):
            if cs.kind not in (ConflictKind.CONFLICT, ConflictKind.QUARANTINE):
                continue
            members = [self.s.facts[m] for m in cs.member_ids]
            if any(m.pinned for m in members):
                continue
            start = timeline.position(new)
            held = [
                m
                for m in members
                if m.id != old.id
                and m.status is FactStatus.CANDIDATE
                and not (
                    m.value is not None
                    and values_equal(m.value, new.value or {})
                    and (new.valid_to is None or m.valid_from < new.valid_to)
                )
                and (cs.kind is ConflictKind.CONFLICT or m.trust.yields_to(new.trust))
            ]
            later = [m.id for m in held if start < timeline.position(m)]
            later += [p for m in held if (p := self._split_held(m, start)) is not None]
            if not later:
                continue
            quarantined = tuple(i for i in later if self.s.facts[i].trust.yields_to(new.trust))
            groups = [
                (kind, ids)
                for kind, ids in (
                    (ConflictKind.CONFLICT, tuple(i for i in later if i not in quarantined)),
                    (ConflictKind.QUARANTINE, quarantined),
                )
                if ids
            ]
            reason = "held against the change that came before it in world time"
            kept = tuple(m for m in cs.member_ids if m not in later)
            if kept == (old.id,):  # the set follows the change, with its first group
                kind, ids = groups.pop(0)
                self._revise_conflict(cs, reason, member_ids=(new.id, *ids), kind=kind)
            else:
                self._revise_conflict(cs, reason, member_ids=kept)
            for kind, ids in groups:
                self._open_conflict(cs.identity_key, (new.id, *ids), kind, cs.reason)
        self._split_series(old, self.s.facts[new.id])

    def _split_held(self, held: Fact, start: timeline.At) -> str | None:
        """The statements of candidate `held` (dated before `start`) that come after it, as a
        candidate of their own (its id), or None: in world order they were said after the
        change that begins at `start` and held against it, not joined to the older one."""
        if not start > timeline.position(held):
            return None
        after = self._restated_after(held, start)
        support = self.s.support.get(held.id, ())
        if not after or len(after) == len(support):
            return None
        before = [s for s in support if s not in after]
        reason = "restated after a change: held against the change"
        self._revise(held, "split", reason, **supported_by(before, held))
        part = held.model_copy(
            update={
                "id": self.new_id(),
                "valid_from": min(s.at for s in after),
                "recorded_at": self.now,
                **supported_by(after, held),
            }
        )
        self._create(part, reason, vector_from=held.id)
        self.s.support[held.id] = tuple(before)
        self.s.support[part.id] = tuple(after)
        return part.id

    def _restated_after(
        self, version: Fact, at: timeline.At, until: timeline.At | None = None
    ) -> list[Support]:
        """The supporting statements of `version` that come after position `at` in world time
        (a restatement at the same instant sorts by the version's words, as versions do), and
        not after position `until`."""
        stated = timeline.position(version).stated
        return [
            s
            for s in self.s.support.get(version.id, ())
            if at < timeline.At(s.at, stated)
            and (until is None or timeline.At(s.at, stated) < until)
        ]

    def _follow_identity_sets(self, old: Fact, new: Fact) -> None:
        """A contested fact replaced by its next version: the identity sets holding it hold
        the new version instead, so the contest goes on with the current value."""
        for cs in self._sets_holding(old.id):
            if cs.kind is ConflictKind.IDENTITY:
                members = tuple(new.id if m == old.id else m for m in cs.member_ids)
                self._revise_conflict(cs, "a member was superseded", member_ids=members)

    def _sets_follow_the_current(self) -> None:
        """An open identity set asks about two names' current versions. One still holding a
        version that a claim retired or held back by a path that does not carry sets along (a
        late claim splitting or retiming it, a more trusted value taking its place) holds the
        identity's current version instead."""
        for cs in self._open_identity_sets():
            for member in [self.s.facts[m] for m in cs.member_ids if m in self.s.facts]:
                if member.status is FactStatus.ACTIVE or member.identity_key is None:
                    continue
                versions = self._facts_of(member.identity_key)  # dated events share the key
                active = [
                    f
                    for f in versions
                    if f.kind is FactKind.STATE and f.status is FactStatus.ACTIVE
                ]
                if len(active) == 1 and active[0].id not in cs.member_ids:
                    self._follow_identity_sets(member, active[0])

    def _settle(self, cs: ConflictSet, kept: str, reason: str) -> None:
        """A set resolved by what a claim showed, keeping fact `kept`, as a person would."""
        self._revise_conflict(
            cs,
            reason,
            status=ConflictStatus.RESOLVED,
            resolved_at=self.now,
            kept_fact_id=kept,
            resolved_by=Resolver.CLAIM,
        )

    def _held_rival(
        self,
        head: Fact,
        value: dict[str, Any],
        by: Trust | None = None,
        restated: bool = False,
    ) -> tuple[Fact, ConflictSet] | None:
        """A candidate of `head`'s identity with `value`, held against `head` in an open value
        conflict set, that a change to `value` (from a source of trust `by`, when a claim
        makes it) would make current, as if it had restated that change: not dated before
        `head`, nor before a restatement of `head` (unless `restated`: for a claim before
        `head`, which every statement of `head`, creates only, met as a held value); no member
        pinned (a person's to decide). A quarantined candidate only for a change at least as
        trusted as `head` and as it: a less trusted source's value is never adopted by
        agreeing with itself. Every open set holding `head` is looked in, not only the
        first: two values held against one version are two sets (hygiene seed 1742363: a
        change adopted the held value when it was alone, and left it held beside another)."""
        for open_set in self._value_sets(head.id):
            found = self._held_rival_in(open_set, head, value, by, restated)
            if found is not None:
                return found, open_set
        return None

    def _held_rival_in(
        self,
        open_set: ConflictSet,
        head: Fact,
        value: dict[str, Any],
        by: Trust | None,
        restated: bool,
    ) -> Fact | None:
        """`_held_rival` in one of the open sets holding `head`."""
        if open_set.identity_key != head.identity_key:
            return None
        members = [self.s.facts[m] for m in open_set.member_ids]
        if any(m.pinned for m in members):
            return None
        for member in members:
            if (
                member.status is FactStatus.CANDIDATE
                and member.identity_key == head.identity_key
                and values_equal(member.value, value)
                # One held for its source before `head` began: `head`'s first value, held
                # by it (`_over_less_trusted`), is adopted from the change's date (`_adopt`).
                and (member.valid_from >= head.valid_from or member.trust.yields_to(head.trust))
                and (
                    open_set.kind is ConflictKind.CONFLICT
                    or (
                        by is not None
                        and by.rank >= head.trust.rank
                        and by.rank >= member.trust.rank
                    )
                )
                and (
                    restated
                    or not self._restated_after(
                        head,
                        max(timeline.At(member.valid_from, member.value), timeline.position(head)),
                    )
                )
            ):
                return member
        return None

    def _adopt(
        self, c: Candidate | None, head: Fact, rival: Fact, open_set: ConflictSet, reason: str
    ) -> Fact:
        """A change to the value a candidate already holds against `head` (the claim `c`), or
        a late version that makes the candidate a return to it (no claim): the candidate is
        the new version, from whichever statement is older, until the change's stated end,
        and the set is resolved in its favour. The change and the rival end as one version,
        as they do when the change comes first and the rival restates it. A candidate held
        for its source (less trusted than `head`) begins with the change: its own date could
        not have displaced `head` (the write gate), the change's can. So does one whose
        statements until the change are all less trusted than `head`; otherwise it begins
        with the first of its statements that could have displaced `head`."""
        start = rival.valid_from
        if c is not None:
            able, t = self._could_replace_from(rival, head), self._time(c)
            start = max(t, head.valid_from) if able is None else min(able, t)
        self._retire(head, reason, start, rival.id)
        adopted = self._revise(
            rival,
            "resolve",
            reason,
            status=FactStatus.ACTIVE,
            valid_from=start,
            valid_to=rival.valid_to if c is None else c.claim.valid_to,
            supersedes_id=head.id,
            unpaired_change=head.unpaired_change,
        )
        self._settle(open_set, rival.id, reason)
        if c is not None:
            self._reinforce(adopted, c, reason)
        self._follow_identity_sets(head, adopted)
        return self.s.facts[rival.id]

    def _held_before_change(
        self, version: Fact, held: list[Support], before: Fact, reason: str
    ) -> Fact:
        """`version`, a value held against `before` and then made current by a change, when
        `before` was restated or replaced between the two in world time: the change met
        that and adopted nothing (`_held_rival`). The `held` statements (the creates, and
        any restatement of them before the change) are a candidate again, its other
        statements a version of their own after `before`, from the change; a set that held
        `version` (not with `before`: that is their contest) holds that version instead,
        which in order a value said after the change met. Returns the new version."""
        after = [s for s in self.s.support.get(version.id, ()) if s not in held]
        following = self.s.facts.get(version.superseded_by or "")
        moved = [cs for cs in self._sets_holding(version.id) if before.id not in cs.member_ids]
        changed_id = self.new_id()
        changed_from = min(s.at for s in after)
        self._revise(
            before,
            "retire",
            reason,
            status=FactStatus.SUPERSEDED,
            valid_to=changed_from,
            retired_at=before.retired_at or self.now,
            superseded_by=changed_id,
            unpaired_change=False,
        )
        changed = version.model_copy(
            update={
                "id": changed_id,
                "valid_from": changed_from,
                "recorded_at": self.now,
                "supersedes_id": before.id,
                "stated": None,
                **supported_by(after, version),
            }
        )
        self.s.support[version.id] = tuple(held)
        start = min(s.at for s in held)
        self._hold_displaced(version, reason, valid_from=start, **supported_by(held, version))
        self._create(changed, reason, vector_from=version.id)
        self.s.support[changed_id] = tuple(after)
        if following is not None and following.supersedes_id == version.id:
            self._revise(following, "link", reason, supersedes_id=changed_id)
        for cs in moved:
            members = tuple(changed_id if m == version.id else m for m in cs.member_ids)
            self._revise_conflict(cs, "held against the change", member_ids=members)
        return changed

    def _hold_displaced(self, version: Fact, reason: str, **changes: Any) -> None:
        """A version that, in world order, could not have displaced the value before it: a
        candidate, with the end its sources stated (`changes`: more of its fields, such as
        the statements it keeps)."""
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
            **changes,
        )

    def _given_an_end(self, version: Fact, end: datetime, until: datetime | None) -> None:
        """The current version, which held until `until`, given an earlier stated `end`: its
        statements dated from that end on restated the value after a gap, so they are a
        version of their own, to `until` or the end they stated (as in order, where a value
        stated after the end of the one in force is a return to it, whatever its source's
        trust), unless all are untrusted (then they are held in quarantine against it, as in
        order); else a value held against it from that end on follows it
        (`_held_after_end`)."""
        if version.status is not FactStatus.ACTIVE:
            return
        support = self.s.support.get(version.id, ())
        later = [s for s in support if s.at >= end]
        if not later:  # it holds to its own end: another statement's period may run past `end`
            self._held_after_end(version, version.valid_to or end)
            return
        early = [s for s in support if s.at < end]
        self.s.support[version.id] = tuple(early)  # the later ones are the restated part's
        restated_id = self.new_id()
        # Restated only by an untrusted source, which could not have made it current: held
        # in quarantine against it, as in order; any other follows the gap.
        held = all(s.trust is Trust.UNTRUSTED for s in later)
        if held:
            reason = "untrusted source"
            self._revise(version, "retime", reason, **supported_by(early, version))
        else:
            reason = "the value was stated again after its stated end"
            self._retire(version, reason, end, restated_id, **supported_by(early, version))
        restated = version.model_copy(
            update={
                "id": restated_id,
                "status": FactStatus.CANDIDATE if held else version.status,
                "valid_from": min(s.at for s in later),
                "valid_to": until if held or until else own_end(later),
                "recorded_at": self.now,
                "supersedes_id": None if held else version.id,
                "unpaired_change": False,
                **supported_by(later, version),
            }
        )
        self._create(restated, f"quarantined: {reason}" if held else reason, vector_from=version.id)
        self.s.support[restated_id] = tuple(later)
        if held:
            members = (version.id, restated_id)
            self._open_conflict(version.identity_key, members, ConflictKind.QUARANTINE, reason)
        else:
            self._follow_identity_sets(version, restated)

    def _held_after_end(self, head: Fact, end: datetime) -> None:
        """A different value held against `head` in a set of the two (a value conflict, or
        a quarantine for its source), dated from `head`'s new stated end on: never true at
        once, in order it would have followed `head`, displacing nothing; it does now, the
        set resolved for it. Not an untrusted one (held in a value conflict only for a pin,
        since lifted): in order it is held whatever it meets (`Adjudicator._state`)."""
        open_set = self._open_set(head.id)
        if (
            open_set is None
            or open_set.kind not in (ConflictKind.CONFLICT, ConflictKind.QUARANTINE)
            or open_set.identity_key != head.identity_key
            or len(open_set.member_ids) != 2
        ):
            return
        [rival] = [self.s.facts[m] for m in open_set.member_ids if m != head.id]
        free = rival.status is FactStatus.CANDIDATE and not rival.pinned
        if free and rival.valid_from >= end and rival.trust is not Trust.UNTRUSTED:
            self._adopt(None, head, rival, open_set, "it began after the value held ended")

    def _could_replace_from(self, rival: Fact, head: Fact) -> datetime | None:
        """When the first of `rival`'s statements from a source that does not yield to
        `head`'s was made: what, in world order, could have replaced `head` with its value
        (the write gate holds the others). None when no statement of it could (by its trust
        now, when the snapshot loaded none of its statements)."""
        support = self.s.support.get(rival.id, ())
        if not support:
            return None if rival.trust.yields_to(head.trust) else rival.valid_from
        able = [s.at for s in support if not s.trust.yields_to(head.trust)]
        return min(able) if able else None
