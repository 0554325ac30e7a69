"""A late change inside a version: the version splits, or what it decided is undone.

A change dated inside a version, before some of that version's restatements, arrived after
them. In world order the value changed then and was restated afterwards, so the version
splits in three: the part before the change, the change, and the restated part
(`_change_inside`, `_restate`). What the version decided on its way is then re-read:

* a value held in conflict against the version is held against the part its date falls in,
  and is a return when the change had its value before (`Rivals._move_later_rivals`,
  `Rivals._now_a_return`);
* a version that was current only because a later change adopted a held value (`Rivals.
  _adopt`) is undone when the late change falls between the two: in order the late change
  met the version before, and the held value stayed held against that (`_adopted_later`,
  `_undo_adoption`);
* a value held against the version, of the late change's own value and dated before it, is
  what the change adopts, as it would have in order (`_held_for_change`).
"""

from __future__ import annotations

from datetime import datetime
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
)
from distill.core.passes import Decision
from distill.core.rivals import Rivals
from distill.core.working import Candidate, Identity, Support, supported_by


class Splits(Rivals):
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
        statement; the change sits between them, as it would had everything come in order."""
        t = self._time(c)
        later_ids = {s.event_id for s in later}
        early = [s for s in self.s.support[version.id] if s.event_id not in later_ids]
        before = self._adopted_later(c, version, early, later)
        if before is not None:
            return self._undo_adoption(c, version, before, early, later, ident, value, following)
        restart = min(s.at for s in later)
        restated_id = self.new_id()
        reason = "a change that arrived late, between a value and its restatement"
        ended: dict[str, Any] = {
            "status": FactStatus.SUPERSEDED,
            "valid_to": timeline.end_of(c.claim.valid_to, restart),
            "retired_at": self.now,
            "supersedes_id": version.id,
            "superseded_by": restated_id,
        }
        held = self._held_for_change(version, early, t, value)
        change = (
            self._new_fact(c, FactKind.STATE, ident, value, **ended) if held is None else held[0]
        )
        # The restated part carries a mark the version had (`unpaired_change`).
        self._retire(
            version,
            reason,
            change.valid_from,
            change.id,
            retired_at=version.retired_at or self.now,
            **supported_by(early, version),
        )
        if held is None:
            self._create(change, reason)
        else:  # in order the change adopted the value held against the version (`_adopt`)
            change = self._revise(change, "resolve", reason, **ended)
            self._settle(held[1], change.id, reason)
            self._reinforce(change, c, reason)
        self._restate(version, later, restated_id, change.id, "the value restated after the change")
        # What was held against the version after t was, in order, held against the change
        # or, from the restatement on, against the restated value.
        self._move_later_rivals(version, self.s.facts[restated_id])
        self._move_later_rivals(version, self.s.facts[change.id])
        self._now_a_return(self.s.facts[change.id], ident.key)
        if following is not None:
            self._revise(
                following, "link", "an older version was split before it", supersedes_id=restated_id
            )
        return Decision(Outcome.HISTORICAL, change.id, reason)

    def _adopted_later(
        self, c: Candidate, version: Fact, early: list[Support], later: list[Support]
    ) -> Fact | None:
        """The version before `version`, when `version` is current only because a change
        restated its value after the late claim `c`: its statements before `c` (`early`)
        are undated creates of another value, which in world order were held against that
        version before; `c` (a change, or a restatement of that version) then met that
        version, and the change after it (the first of `later`) met `c`. None when a person
        pinned either, when trust would have decided otherwise, or when the held value
        returns to an older one (then it was a change)."""
        if (
            version.pinned
            or version.supersedes_id is None
            or not early
            or any(s.supersede or s.dated for s in early)
            or not min(later, key=lambda s: s.at).supersede
        ):
            return None
        before = self.s.facts.get(version.supersedes_id)
        if (
            before is None
            or before.pinned
            or before.status is not FactStatus.SUPERSEDED
            or before.superseded_by != version.id
            or before.valid_to != version.valid_from
            or before.identity_key != version.identity_key
            or any(s.trust.rank < before.trust.rank for s in early)
            or c.event.trust.rank < before.trust.rank
            # A change met `before` in order; so did a create of its value (restating it).
            or not (
                c.claim.action is ClaimAction.SUPERSEDE
                or values_equal(c.claim.value or {}, before.value or {})
            )
        ):
            return None
        returns = any(
            values_equal(f.value, version.value)
            for f in self._facts_of(before.identity_key or "")
            if f.kind is FactKind.STATE
            and f.status is FactStatus.SUPERSEDED
            and timeline.position(f) < timeline.position(before)
        )
        return None if returns else before

    def _undo_adoption(
        self,
        c: Candidate,
        version: Fact,
        before: Fact,
        early: list[Support],
        later: list[Support],
        ident: Identity,
        value: dict[str, Any],
        following: Fact | None,
    ) -> Decision:
        """`version`'s early part is held again against `before` (it keeps its id and first
        statements); `c` replaces `before` at its time, or restates it; the restated part
        of `version` begins at the first later statement, a new fact, which the version
        after it (`following`) now follows."""
        t, restart = self._time(c), min(s.at for s in later)
        restated_id = self.new_id()
        reason = "a change arrived late, before the change that made a held value current"
        self._revise(
            version,
            "hold",
            reason,
            status=FactStatus.CANDIDATE,
            valid_to=None,
            retired_at=None,
            supersedes_id=None,
            superseded_by=None,
            **supported_by(early, version),
        )
        self.s.support[version.id] = tuple(early)
        if values_equal(value, before.value or {}):
            decision = self._reinforce(before, c, reason)
            previous = self._revise(
                self.s.facts[before.id],
                "retime",
                reason,
                valid_to=restart,
                superseded_by=restated_id,
            )
        else:
            previous = self._new_fact(
                c,
                FactKind.STATE,
                ident,
                value,
                status=FactStatus.SUPERSEDED,
                valid_to=timeline.end_of(c.claim.valid_to, restart),
                retired_at=self.now,
                supersedes_id=before.id,
                superseded_by=restated_id,
            )
            self._revise(before, "retime", reason, valid_to=t, superseded_by=previous.id)
            self._create(previous, reason)
            decision = Decision(Outcome.HISTORICAL, previous.id, reason)
        restated = self._restate(version, later, restated_id, previous.id, reason)
        if version.status is FactStatus.ACTIVE:
            self._follow_identity_sets(version, restated)
        if following is not None:
            self._revise(following, "link", reason, supersedes_id=restated_id)
        self._open_conflict(
            ident.key, (before.id, version.id), ConflictKind.CONFLICT, "different value"
        )
        return decision

    def _held_for_change(
        self, version: Fact, early: list[Support], t: datetime, value: dict[str, Any]
    ) -> tuple[Fact, ConflictSet] | None:
        """A candidate of the late change's `value`, held against `version` in an open value
        conflict set, dated inside the version before the change `t` and after its every
        earlier statement, as trusted as the version, no member pinned: in order the change
        met it and made it current (`Rivals._held_rival`)."""
        cs = self._open_set(version.id)
        if cs is None or cs.kind is not ConflictKind.CONFLICT:
            return None
        members = [self.s.facts[m] for m in cs.member_ids]
        if cs.identity_key != version.identity_key or any(m.pinned for m in members):
            return None
        for m in members:
            if (
                m.status is FactStatus.CANDIDATE
                and m.identity_key == version.identity_key
                and m.value is not None
                and values_equal(m.value, value)
                and version.valid_from <= m.valid_from < t
                and not any(s.at > m.valid_from for s in early)
                and m.trust.rank >= version.trust.rank
            ):
                return m, cs
        return None

    def _restate(
        self, version: Fact, later: list[Support], restated_id: str, after: str, reason: str
    ) -> Fact:
        """The part of `version` that its `later` statements restate, from the first of them:
        a new fact, `restated_id`, after fact `after`. A restatement at the instant the
        version ended keeps the empty interval [t, t); the mark (`unpaired_change`) stays
        with it."""
        restart = min(s.at for s in later)
        ends = version.valid_to if version.valid_to and version.valid_to >= restart else None
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
