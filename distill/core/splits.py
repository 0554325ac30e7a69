"""A late change inside a version: the version splits, and what it decided is re-read.

A change dated inside a version, before some of that version's restatements, arrived after
them. In world order the value changed then and was restated afterwards, so the version
splits in three: the part before the change, the change, and the restated part
(`_change_inside`, `_restate`). What the version decided on its way is then re-read:

* a value held in conflict against the version is held against the part its date falls in,
  and is a return when the change had its value before (`Rivals._move_later_rivals`,
  `Returns._now_a_return`);
* a value held against the version, or an event of its series, of the late change's own
  value and dated before the restatement, is what the change adopts, as it would have in
  order, or what restated the change (`_held_for_change`); the series' other values are
  then settled part by part (`Series._settle_series`).

A version that a change made of a held value (`Rivals._adopt`) is not split: a claim dated
between the held value and that change shows the change never adopted it, and the adoption
is undone before the claim is decided (`_adoption_undone`), also when the version the
change met has since been held against a late first value (`_held_since`): the set the
change resolved is reopened as one of that first value and the held value. Only a claim's:
a person's decision is never undone, and the one validator refuses a plan that reopens one.
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
from distill.core.returns import Returns
from distill.core.support import Support, held_until, own_end, said_order, supported_by
from distill.core.working import Candidate, Identity


class Splits(Returns):
    """A late change inside a version (module doc)."""

    def _change_inside(
        self,
        c: Candidate,
        version: Fact,
        later: list[Support],
        ident: Identity,
        value: dict[str, Any],
        following: Fact | None = None,
    ) -> Decision:
        """A change dated inside a version, before some of that version's restatements,
        arrived late: in world time the value changed at t and was restated afterwards. The
        version splits into the part before t and a restated part from the first later
        statement; the change sits between them, as it would had everything come in order.
        Less trusted restatements inside the change's stated period, when others come after
        it, are held against the change; the others restate the value after it ended."""
        t = self._time(c)
        inside = self._inside_the_change(c, later)
        later = [s for s in later if s not in inside]
        later_ids = {s.event_id for s in [*later, *inside]}
        early = [s for s in self.s.support[version.id] if s.event_id not in later_ids]
        restart = min(s.at for s in later)
        held = self._held_for_change(version, early, restart, value)
        if held is None and self._only_less_trusted(c, version, later, following):
            return self._change_over_less_trusted(c, version, early, later, ident, value)
        restated_id = self.new_id()
        reason = "a change that arrived late, between a value and its restatement"
        ended: dict[str, Any] = {
            "status": FactStatus.SUPERSEDED,
            "valid_to": timeline.end_of(c.claim.valid_to, restart),
            "retired_at": self.now,
            "supersedes_id": version.id,
            "superseded_by": restated_id,
        }
        if held is not None:  # from its first statement that could replace the version
            able = self._could_replace_from(held[0], version)
            ended["valid_from"] = t if able is None else min(able, t)
        change = (
            self._new_fact(c, FactKind.STATE, ident, value, **ended) if held is None else held[0]
        )
        # The restated part carries a mark the version had (`unpaired_change`).
        self._retire(
            version,
            reason,
            ended.get("valid_from", min(change.valid_from, t)),
            change.id,
            retired_at=version.retired_at or self.now,
            **supported_by(early, version),
        )
        self.s.support[version.id] = tuple(early)  # the later ones are the restated part's
        if held is None:
            self._create(change, reason)
        elif held[1] is None:  # an event of the version's series: in order, held and adopted
            start = ended.pop("valid_from")
            change = self._event_as_version(change, start, reason, **ended)
        else:  # in order the change adopted the value held against the version (`_adopt`)
            change = self._revise(change, "resolve", reason, **ended)
            self._settle(held[1], change.id, reason)
        self._restate(version, later, restated_id, change.id, "the value restated after the change")
        if held is not None:  # reinforced once the restated part bounds its stated end
            self._reinforce(self.s.facts[change.id], c, reason, valid_from=t)
        # What was held against the version after t was, in order, held against the change
        # or, from the restatement on, against the restated value.
        self._move_later_rivals(version, self.s.facts[restated_id])
        self._move_later_rivals(version, self.s.facts[change.id])
        tail = restated_id
        if self._restated_by_less_trusted(c, later):
            self._hold_restated(self.s.facts[change.id], self.s.facts[restated_id], c)
            tail = change.id
        if following is not None:
            self._revise(
                self.s.facts[following.id],
                "link",
                "an older version was split before it",
                supersedes_id=tail,
            )
        if inside:
            self._hold_inside(version, self.s.facts[change.id], inside)
        if held is not None and held[1] is None:  # the series' other values, part by part
            self._settle_parts(version.id, change.id, tail)
        self._now_a_return(self.s.facts[change.id], ident.key)  # after the link: it may retire
        return Decision(Outcome.HISTORICAL, change.id, reason)

    def _inside_the_change(self, c: Candidate, later: list[Support]) -> list[Support]:
        """The restatements of a split version dated inside the late change's stated
        period, when all could not displace it (`_restated_by_less_trusted`) and some that
        could be a version after its end come after it: in world order the first met the
        change in force and were held, the others followed its end. Else none."""
        end = c.claim.valid_to
        if end is None:
            return []
        inside = [s for s in later if s.at < end]
        beyond = [s for s in later if s.at >= end]
        if not inside or not any(s.trust is not Trust.UNTRUSTED for s in beyond):
            return []
        return inside if self._restated_by_less_trusted(c, inside) else []

    def _hold_inside(self, version: Fact, change: Fact, inside: list[Support]) -> None:
        """A candidate of `version`'s value, of its `inside` statements, held in quarantine
        against `change` (`_inside_the_change`)."""
        reason = "restated only by less trusted sources inside it: held against the change"
        held = self._new_part(
            version,
            inside,
            reason,
            version.id,
            status=FactStatus.CANDIDATE,
            valid_to=held_until(inside),
            retired_at=None,
            supersedes_id=None,
            superseded_by=None,
        )
        key = change.identity_key
        self._open_conflict(key, (change.id, held.id), ConflictKind.QUARANTINE, reason)

    def _new_part(
        self,
        version: Fact,
        said: list[Support],
        reason: str,
        vector_from: str | None,
        **update: Any,
    ) -> Fact:
        """A new fact for the part of `version` that `said`, some of its statements, stand
        for: from the first of them, with their provenance and `update`; created, with its
        statements on record."""
        part = version.model_copy(
            update={
                "id": self.new_id(),
                "valid_from": min(s.at for s in said),
                "recorded_at": self.now,
                "stated": None,
                "unpaired_change": False,
                **supported_by(said, version),
                **update,
            }
        )
        self._create(part, reason, vector_from=vector_from)
        self.s.support[part.id] = tuple(said)
        return part

    def _adoption_undone(self, version: Fact, at: timeline.At, later: list[Support]) -> bool:
        """Whether a claim at `at`, inside `version` and before its `later` statements, shows
        that a change never adopted the value held against the version before it, and if
        so, undoes the adoption (the caller decides the claim again, against the versions
        as they now stand).

        `version` began as a value held in conflict against the version before it: creates
        of another value, and a change to it that made it current (`Rivals._adopt`,
        resolving the set; or, arriving first, `LateArrivals._adopted_by_next`, where no
        set was opened). A claim dated after the creates and before the change came between
        them in world order: the change met a version restated or replaced since the value
        was held, did not adopt it (`Rivals._held_rival`), and began a version of its own.
        So it is now: the creates are a held candidate again, in their set (reopened, or
        opened as in order), and the change and what followed it are a new version after
        the one before. Never a set a person resolved: their decision stands."""
        before = self.s.facts.get(version.supersedes_id or "")
        if before is None or before.superseded_by != version.id or version.pinned:
            return False
        # The creates, all before the claim; the first statement after it is the change.
        stated = sorted(self.s.support.get(version.id, ()), key=said_order)
        held = [s for s in stated if s not in later]
        change = min(later, key=said_order)
        if (
            not held
            or not (change.supersede or change.dated)
            or any(s.supersede or s.dated for s in held)
            or any(at < timeline.At(s.at, timeline.position(version).stated) for s in held)
        ):
            return False
        # `before` ended where the adoption began, not by an end of its own (its statements
        # are loaded with the version's: `passes.adjudication._support`).
        said_before = self.s.support.get(before.id, ())
        if (
            not said_before
            or before.valid_to != version.valid_from
            or any(s.until is not None for s in said_before)
            or change.trust.yields_to(before.trust)  # it could not have replaced `before`
        ):
            return False
        resolved = [
            cs
            for cs in self.s.conflicts.values()
            if cs.status is ConflictStatus.RESOLVED and cs.kept_fact_id == version.id
        ]
        if resolved:  # a claim's resolution of the two of them, and nobody pinned either
            cs = resolved[0]
            if (
                len(resolved) > 1
                or cs.resolved_by is not Resolver.CLAIM
                or cs.kind is not ConflictKind.CONFLICT
                or not (before.id in cs.member_ids or self._held_since(before, cs, version))
                or any(self.s.facts[m].pinned for m in cs.member_ids if m in self.s.facts)
            ):
                return False
        elif (
            before.pinned
            or len({s.trust for s in (*said_before, *held)}) > 1
            or self._returned_to(version, before)
        ):
            return False  # with no set: only creates one source's trust held, not a return
        reason = "a claim between a held value and the change to it: the change adopted nothing"
        if resolved:  # of `before` and the version, whichever version the claim met
            self._revise_conflict(
                resolved[0],
                reason,
                status=ConflictStatus.OPEN,
                resolved_at=None,
                kept_fact_id=None,
                resolved_by=None,
                member_ids=(before.id, version.id),
            )
        else:
            self._open_conflict(
                before.identity_key, (before.id, version.id), ConflictKind.CONFLICT, reason
            )
        self._held_before_change(version, held, before, reason)
        self._settle_parts(before.id)  # held again: one of its series' values (`Series`)
        return True

    def _held_since(self, before: Fact, cs: ConflictSet, version: Fact) -> bool:
        """Whether the version that the change resolving `cs` met, its other member, has
        since been held in a value conflict against `before` (a late first value came ahead
        of it): the change met a version `before` now stands for."""
        others = [self.s.facts.get(m) for m in cs.member_ids if m != version.id]
        if len(others) != 1 or others[0] is None:
            return False
        met = others[0]
        return met.status is FactStatus.CANDIDATE and any(
            held.kind is ConflictKind.CONFLICT and before.id in held.member_ids
            for held in self._sets_holding(met.id)
        )

    def _returned_to(self, version: Fact, before: Fact) -> bool:
        """Whether a version earlier than `before` had `version`'s value: a create of it
        after `before` was a return (`Adjudicator._state`), not a value held against it."""
        key = before.identity_key or ""
        at = timeline.position(before)
        return any(
            timeline.position(v) < at and values_equal(v.value, version.value)
            for v in timeline.chain(self._facts_of(key), key)
        )

    def _return_inside(self, head: Fact, rival: Fact, open_set: ConflictSet | None) -> None:
        """`rival`, held against `head` (in `open_set`, or an event of its series: None) and
        now known to return to an older version's value (`Returns._now_a_return`), was
        restated by `head` after its date. In world order it replaced `head` from its own
        date, and each later statement of `head`'s value met it as the version in force and
        returned to `head`'s value in turn: `head` splits into the part before the return
        and the restated part after it. Not when a later statement could not displace the
        return (less trusted), nor one of its instant (ordered against it by words): those
        are left held."""
        support = self.s.support.get(head.id, ())
        later = [s for s in support if s.at > rival.valid_from]
        if (
            not later
            or any(s.at == rival.valid_from for s in support)
            or any(s.trust.yields_to(rival.trust) for s in later)
            or head.valid_to is not None
        ):
            return
        early = [s for s in support if s.at < rival.valid_from]
        reason = "an older version shows it returns to a value, before a restatement"
        restated_id = self.new_id()
        self._retire(head, reason, rival.valid_from, rival.id, **supported_by(early, head))
        self.s.support[head.id] = tuple(early)
        ended: dict[str, Any] = {
            "status": FactStatus.SUPERSEDED,
            "valid_to": min(s.at for s in later),
            "retired_at": self.now,
            "supersedes_id": head.id,
            "superseded_by": restated_id,
        }
        if open_set is None:
            self._event_as_version(rival, rival.valid_from, reason, **ended)
        else:
            self._revise(rival, "resolve", reason, **ended)
            self._settle(open_set, rival.id, reason)
        restated = self._restate(head, later, restated_id, rival.id, "the value restated after")
        self._move_later_rivals(head, restated)
        self._follow_identity_sets(head, restated)
        if open_set is None:  # the series' other values, part by part
            self._settle_parts(head.id, rival.id, restated_id)

    def _hold_restated(self, change: Fact, restated: Fact, c: Candidate) -> None:
        """The restated part of a split whose statements could not displace the change
        (`_restated_by_less_trusted`): in world order each met the change as the version in
        force and was held in quarantine against it. The change takes the part's place: its
        status, its successor, and an end that is its own stated one or that successor's
        start. A successor a person retracted since is not in the snapshot: the part ended
        where it began (a retraction revives nothing before it), or at the version's stated
        end if that came first, and the change ends there too, never after."""
        reason = "restated only by less trusted sources: held against the change"
        following = self.s.facts.get(restated.superseded_by or "")
        next_start: datetime | None = None
        if following is not None:
            next_start = following.valid_from
        elif restated.superseded_by:
            next_start = restated.valid_to
        self._revise(
            restated,
            "hold",
            reason,
            status=FactStatus.CANDIDATE,
            valid_to=held_until(self.s.support[restated.id]),
            supersedes_id=None,
            superseded_by=None,
            retired_at=None,
        )
        self._revise(
            change,
            "link",
            reason,
            status=restated.status,
            valid_to=timeline.end_of(c.claim.valid_to, next_start),
            superseded_by=restated.superseded_by,
            retired_at=restated.retired_at,
        )
        self._open_conflict(
            change.identity_key, (change.id, restated.id), ConflictKind.QUARANTINE, reason
        )

    def _restated_by_less_trusted(self, c: Candidate, later: list[Support]) -> bool:
        """Whether, in world order, every restatement after the change `c` met it as the
        value in force and could not displace it: all from sources less trusted than the
        change's (or untrusted), none a statement a person accepted (`_accepted`: they kept
        the value it stated). Not when all came from the change's stated end on, none
        untrusted: then the change had ended, they displaced nothing and follow it, as in
        order (`Adjudicator._state`; a mix is split first, `_inside_the_change`)."""
        if not all(s.trust.yields_to(c.event.trust) for s in later):
            return False
        end = c.claim.valid_to
        if end is not None and all(s.at >= end and s.trust is not Trust.UNTRUSTED for s in later):
            return False
        accepted = self._accepted()
        return not any(s.event_id in accepted for s in later)

    def _only_less_trusted(
        self, c: Candidate, version: Fact, later: list[Support], following: Fact | None
    ) -> bool:
        """Whether every restatement after the change is from a source less trusted than
        the change's (`_restated_by_less_trusted`), the version the current one and
        open-ended: in world order each restatement met the change as the version in force
        and could not displace it."""
        return (
            following is None
            and version.status is FactStatus.ACTIVE
            and version.valid_to is None
            and self._restated_by_less_trusted(c, later)
        )

    def _change_over_less_trusted(
        self,
        c: Candidate,
        version: Fact,
        early: list[Support],
        later: list[Support],
        ident: Identity,
        value: dict[str, Any],
    ) -> Decision:
        """The version ends at the change, which is current; what the less trusted sources
        restated after it is one candidate held in quarantine against the change, as each
        of them would have been in order (`Adjudicator._state`)."""
        how = "a change that arrived late, before less trusted restatements of the value"
        decision = self._supersede(c, version, ident, value, how, **supported_by(early, version))
        self.s.support[version.id] = tuple(early)
        change = self.s.facts[decision.fact_id or ""]
        source = supported_by(later, version)["trust"]
        why = f"{source} source may not displace a {c.event.trust} fact"
        update = {"status": FactStatus.CANDIDATE, "valid_to": held_until(later)}
        held = self._new_part(
            version, later, f"quarantined: {why}", None, supersedes_id=None, **update
        )
        self._open_conflict(ident.key, (change.id, held.id), ConflictKind.QUARANTINE, why)
        self._now_a_return(change, ident.key)
        return Decision(Outcome.HISTORICAL, change.id, how)

    def _held_for_change(
        self, version: Fact, early: list[Support], restart: datetime, value: dict[str, Any]
    ) -> tuple[Fact, ConflictSet | None] | None:
        """A candidate of the late change's `value`, held against `version` in an open value
        conflict set, dated inside the version after its every earlier statement and before
        the restatement at `restart`, as trusted as the version, no member pinned: in order
        the change met it and made it current (`Rivals._held_rival`), or it restated the
        change. Or, so dated, an event `version`'s series made of that value (no set): in
        order it was held until the change adopted it, and a later value was held instead
        (`Series`)."""

        def fits(m: Fact) -> bool:
            return (
                m.identity_key == version.identity_key
                and m.value is not None
                and values_equal(m.value, value)
                and version.valid_from <= m.valid_from < restart
                and not any(s.at > m.valid_from for s in early)
                and m.trust.rank >= version.trust.rank
            )

        cs = self._open_set(version.id)
        if cs is not None and cs.kind is ConflictKind.CONFLICT:
            members = [self.s.facts[m] for m in cs.member_ids]
            if cs.identity_key != version.identity_key or any(m.pinned for m in members):
                return None
            for m in members:
                if m.status is FactStatus.CANDIDATE and fits(m):
                    return m, cs
        event = self._event_of_value(version, value)
        return (event, None) if event is not None and fits(event) else None

    def _restate(
        self, version: Fact, later: list[Support], restated_id: str, after: str, reason: str
    ) -> Fact:
        """The part of `version` that its `later` statements restate, from the first of them:
        a new fact, `restated_id`, after fact `after`. A restatement at the instant the
        version ended keeps the empty interval [t, t); one after a stated end that came
        before it holds until the next version in world time, if the version had one (its
        receipt need not be that version: it may be one a person retracted since), else to
        the end its own statements gave it; the mark (`unpaired_change`) stays with it."""
        restart = min(s.at for s in later)
        ends = version.valid_to if version.valid_to and version.valid_to >= restart else None
        if ends is None and version.status is FactStatus.SUPERSEDED and version.identity_key:
            at = timeline.At(restart, timeline.position(version).stated)
            versions = timeline.chain(self._facts_of(version.identity_key), version.identity_key)
            following = next(
                (v for v in versions if v.id != version.id and at < timeline.position(v)), None
            )
            ends = following.valid_from if following is not None else None
        if ends is None:  # open: to the end its own statements gave it, if any
            ends = own_end(later)
        restated = version.model_copy(
            update={
                "id": restated_id,
                "valid_from": restart,
                "valid_to": ends,
                "recorded_at": self.now,
                "supersedes_id": after,
                "stated": None,
                **supported_by(later, version),
            }
        )
        active = version.status is FactStatus.ACTIVE
        self._create(restated, reason, vector_from=version.id if active else None)
        self.s.support[restated_id] = tuple(later)
        return restated
