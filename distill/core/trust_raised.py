"""A replaced version that a late statement makes more trusted than what replaced it.

In world order a less trusted change that meets a more trusted value is held in quarantine
against it (`Adjudicator._state`); one dated from that value's stated end on displaces
nothing and follows it. When the statement that makes the value more trusted arrives after
the change, the change has replaced the value, and may have been replaced in turn; these
rules put the state where world order would have (`_trust_raised`):

* the less trusted versions after it, up to the current one or to the first that began
  after its stated end (past gaps between them: a version after another's stated end met
  this one in force), are held, and it is current again or followed by that one
  (`_yielding_to`), taking in the statements of its value held against them
  (`_take_in_restatements`); an end only a less trusted statement gave it ends nothing
  (`_end_stated`);
* a change followed by a restatement of the version's value is held, and the restatement
  takes the version in (`_rejoined`);
* a change whose value a later version restates after a gap: the version ends where that
  one begins, which takes the change in (`_adopted_after`);
* a change followed by a more trusted third value: the change is held, and the version
  ends where that value begins (`_held_before_next`).

None of them moves a pinned fact or a value a person kept (`WorkingSet._kept_by_decision`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from distill.core import timeline
from distill.core.identity import values_equal
from distill.core.models import ConflictKind, Fact, FactStatus
from distill.core.passes import Decision
from distill.core.support import held_until
from distill.core.trust_order import TrustOrder


class RaisedTrust(TrustOrder):
    """A replaced version made more trusted late (module doc)."""

    def _trust_raised(self, was: Fact, decision: Decision) -> Decision:
        """`decision`, after a late statement dated inside `was`, a replaced version, made it
        more trusted (or gave it a later end): the less trusted versions that replaced it
        (before that end), up to the current one, could not have in world order
        (`Adjudicator._state`). Each is held in quarantine against the version, which is
        current again and holds what they held; or, when a later one began after the
        version's stated end, that one follows the version (it displaced nothing, in order
        as now). Not when a person's pin or choice, or a value that could displace the
        version, is involved; a change followed by a restatement of either value or by a
        more trusted third one goes to the rules after it."""
        version = self.s.facts[was.id]
        successor = self.s.facts.get(version.superseded_by or "")
        if successor is not None and successor.status is FactStatus.SUPERSEDED:
            decision = self._rejoined(was, decision)
            if self.s.facts[was.id] == version:  # not a restatement after the change
                self._adopted_after(was)
            if self.s.facts[was.id] == version:
                self._held_before_next(was)
            if self.s.facts[was.id] != version:
                return decision
        end = self._end_stated(version)
        found = self._yielding_to(version, was, end)
        if found is None:
            if version.trust.rank > was.trust.rank:
                self._end_voided(version, end)
            return decision
        chain, after = found
        for held in chain:  # all held before the version is current again (one active)
            why = f"{held.trust} source may not displace a {version.trust} fact"
            how = f"an earlier, more trusted statement arrived late: quarantined: {why}"
            if held.status is FactStatus.ACTIVE:
                self._revise(
                    held,
                    "hold",
                    how,
                    status=FactStatus.CANDIDATE,
                    supersedes_id=None,
                    unpaired_change=False,
                )
            else:
                self._hold_displaced(held, how)
        reason = f"{chain[-1].trust} source may not displace a {version.trust} fact"
        if after:  # it ended before them: the first follows it, and it is not current
            current = self._revise(
                version,
                "link",
                f"more trusted than the value that replaced it ({reason})",
                valid_to=end,
                superseded_by=after.id,
            )
            self._revise(after, "link", "the version it follows", supersedes_id=version.id)
        else:
            current = self._revise(
                version,
                "hold",
                f"more trusted than the value that replaced it: current again ({reason})",
                status=FactStatus.ACTIVE,
                valid_to=end,
                retired_at=None,
                superseded_by=None,
                unpaired_change=chain[-1].unpaired_change,
            )
        key = version.identity_key
        for held in chain:
            why = f"{held.trust} source may not displace a {version.trust} fact"
            self._take_in_restatements(held, current, end)
            self._hand_over_held(held, current)
            self._open_conflict(key, (current.id, held.id), ConflictKind.QUARANTINE, why)
        self._follow_identity_sets(chain[-1], current)
        return decision

    def _take_in_restatements(self, held: Fact, current: Fact, end: datetime | None) -> None:
        """Candidates of `current`'s value held against `held`, a version now held against
        `current`, dated inside `current` (before `end`, its stated end, if any): in world
        order `current` was the version in force when they were said, and they restated
        it. `current` takes each in (`_take_in`), which leaves it an empty receipt, and
        each set it was in holds the others, or is settled for `current` when none is
        left."""
        reason = "a restatement of the value in force then, held against a less trusted value"
        for cs in self._sets_holding(held.id):
            if cs.kind is ConflictKind.IDENTITY:
                continue
            restating = [
                self.s.facts[m]
                for m in cs.member_ids
                if m != held.id
                and values_equal(self.s.facts[m].value, current.value)
                and self._restating(self.s.facts[m], current.valid_from, end)
            ]
            if not restating:
                continue
            for m in restating:
                self._take_in(self.s.facts[current.id], m, reason)
                self._revise(
                    m,
                    "merge",
                    reason,
                    status=FactStatus.SUPERSEDED,
                    valid_to=m.valid_from,
                    superseded_by=current.id,
                    retired_at=self.now,
                )
                self.s.support[m.id] = ()
            taken = tuple(f.id for f in restating)
            left = tuple(m for m in cs.member_ids if m not in taken)
            if left == (held.id,):  # nothing else held: answered, for `current`
                self._revise_conflict(cs, reason, member_ids=(current.id, *taken))
                self._settle(self.s.conflicts[cs.id], current.id, reason)
            else:
                self._revise_conflict(cs, reason, member_ids=left)

    def _yielding_to(
        self, version: Fact, was: Fact, end: datetime | None
    ) -> tuple[list[Fact], Fact | None] | None:
        """The versions after `version`, each replacing the one before where it ended, to
        the current one, when a late statement made `version` more trusted than `was` (or
        gave it a stated end later than where `was` ended): those
        that began before `end`, its stated end, each from a source that yields to it, of
        another value, not pinned or kept by a person, holding only what yields to it
        (`_held_only_behind`); and the first that began from `end` on, if any (it follows
        `version`, displacing nothing). None when not so."""
        later_end = end is not None and was.valid_to is not None and end > was.valid_to
        if (
            (version.trust.rank <= was.trust.rank and not later_end)
            or version.status is not FactStatus.SUPERSEDED
            or version.pinned
        ):
            return None
        chain: list[Fact] = []
        # Its old end may be void now; and a version after a gap in the chain met `version`
        # in force, once what it followed is held (seed 1729830).
        following = self._next_of(version, after_a_gap=True)
        while following is not None:
            chain.append(following)
            if following.status is FactStatus.ACTIVE:
                break
            following = self._next_of(following, after_a_gap=True)
        after = next((v for v in chain if end is not None and v.valid_from >= end), None)
        if after is not None:
            chain = chain[: chain.index(after)]
        if (
            not chain
            or (after is None and chain[-1].status is not FactStatus.ACTIVE)
            or any(
                v.pinned
                or self._kept_by_decision(v.id)
                or not v.trust.yields_to(version.trust)
                or (v.value is not None and values_equal(v.value, version.value or {}))
                or not self._held_only_behind(
                    v, version.trust, version.value, end, restating_from=version.valid_from
                )
                for v in chain
            )
        ):
            return None
        return chain, after

    def _end_voided(self, version: Fact, end: datetime | None) -> None:
        """`version`, whose stated end a late statement made void (`_end_stated`: a less
        trusted source gave it), followed after that old end by a version as trusted: in
        world order that one met `version` in force. A change (or a value dated by its own
        date, or the same value again) replaced it where it began; a `create` of another
        value was held in conflict against it, which is current again. Not across a pin, a
        person's choice or a set the follower holds."""
        follower = self._next_of(version, after_a_gap=True)
        old = version.valid_to
        if (
            follower is None
            or old is None
            or not self._ended_of_itself(version, follower)  # or a change ended it there
            or (end is not None and end <= follower.valid_from)
            or follower.trust is not version.trust
            or any(f.pinned or self._kept_by_decision(f.id) for f in (version, follower))
            or self._sets_holding(follower.id)
        ):
            return
        reason = "in force until the next version: a less trusted source stated its end"
        if (
            follower.status is not FactStatus.ACTIVE
            or values_equal(follower.value or {}, version.value or {})
            or self._began_as_change(follower, version.valid_from)
        ):
            self._revise(version, "retime", reason, valid_to=follower.valid_from)
            return
        why = "a different value, said while the version was in force"
        self._revise(follower, "hold", why, status=FactStatus.CANDIDATE, supersedes_id=None)
        current = self._revise(
            version,
            "hold",
            reason,
            status=FactStatus.ACTIVE,
            valid_to=end,
            retired_at=None,
            superseded_by=None,
        )
        key = version.identity_key
        self._open_conflict(key, (current.id, follower.id), ConflictKind.CONFLICT, why)

    def _adopted_after(self, was: Fact) -> None:
        """After a late statement dated inside `was` made it more trusted than the less
        trusted change that replaced it, a change that ended on its own (a stated end) and
        whose value a later version took up after a gap, neither a restatement of the
        version (`_rejoined`). In world order the change met the more trusted value and was
        held in quarantine; the value held to its own stated end (or that later version),
        and the later version adopted the held change (`Rivals._adopt`: from its own date,
        the change being less trusted). So the version ends there, the later version
        replaces it and takes the change's statements in, and the change is its receipt,
        empty (`timeline.overruled`). Not when a pin, an open set of the change's or a value
        the version holds in conflict is involved."""
        found = self._after_the_change(was)
        if found is None:
            return
        version, change, later = found
        if not values_equal(change.value, later.value) or later.trust.yields_to(version.trust):
            return
        reason = f"{change.trust} source may not displace a {version.trust} fact"
        self._replaced_after_held(version, later, reason)
        self._revise(
            change,
            "merge",
            f"held against the more trusted value, then taken in by a later version ({reason})",
            valid_to=change.valid_from,
            superseded_by=later.id,
        )
        why = f"the value it restates, held against a more trusted one before ({reason})"
        self._take_in(later, change, why, supersedes_id=version.id)
        self.s.support[change.id] = ()

    def _replaced_after_held(self, version: Fact, later: Fact, reason: str) -> None:
        """`version` ends where `later` begins (or at its own stated end, before), and
        `later` replaced it: the change between them was held (`_adopted_after`,
        `_held_before_next`)."""
        self._revise(
            version,
            "link",
            f"an earlier, more trusted statement arrived late: the change was held ({reason})",
            valid_to=timeline.end_of(self._end_stated(version), later.valid_from),
            superseded_by=later.id,
        )

    def _held_before_next(self, was: Fact) -> None:
        """After a late statement dated inside `was` made it more trusted than the less
        trusted change that replaced it, a change replaced in turn by a third value, from a
        source that does not yield to the version's. In world order the change met the more
        trusted value and was held in quarantine against it; the value held until that
        third value replaced it (or to its own stated end, before). So the change is held,
        and the version ends there and is what the third value replaced. Not when a pin, a
        change a person kept or an open set of the change's is involved
        (`_after_the_change`)."""
        found = self._after_the_change(was)
        if found is None:
            return
        version, change, later = found
        if (
            later.value is None
            or any(values_equal(later.value, f.value) for f in (version, change) if f.value)
            or later.trust.yields_to(version.trust)
        ):
            return
        reason = f"{change.trust} source may not displace a {version.trust} fact"
        self._hold_displaced(
            change, f"an earlier, more trusted statement arrived late: quarantined: {reason}"
        )
        self._replaced_after_held(version, later, reason)
        why = f"the version before the held change ({reason})"
        self._revise(later, "link", why, supersedes_id=version.id)
        key = version.identity_key
        self._open_conflict(key, (version.id, change.id), ConflictKind.QUARANTINE, reason)

    def _after_the_change(self, was: Fact) -> tuple[Fact, Fact, Fact] | None:
        """`was` as it is now, the less trusted change that replaced it and the version
        after that change (after a gap too), when a late statement made `was` more trusted
        than the change and no pin, change a person kept, open set of the change's or value
        `was` holds in conflict stands in the way (`_rejoined`, `_adopted_after`), and the
        change did not begin at the end `was`'s statements gave it (it followed that end)."""
        version = self.s.facts[was.id]
        change = self._next_of(version)
        after = self._next_of(change, after_a_gap=True) if change is not None else None
        if (
            change is None
            or after is None
            or version.trust.rank <= was.trust.rank
            or any(f.pinned for f in (version, change, after))
            or self._kept_by_decision(change.id)  # a person's choice, as a pin is
            or not change.trust.yields_to(version.trust)
            or self._open_set(change.id) is not None
            or not self._held_only_behind(version, version.trust)
            or self._followed_its_end(version, change)
        ):
            return None
        return version, change, after

    def _followed_its_end(self, version: Fact, change: Fact) -> bool:
        """Whether `change` began at or after the end that `version`'s statements as
        trusted as it now is gave it: in world order it followed that end and displaced
        nothing, whatever its trust."""
        end = self._end_stated(version)
        return end is not None and end <= change.valid_from

    def _take_in(self, into: Fact, taken: Fact, reason: str, **changes: Any) -> None:
        """`into` takes the statements of `taken` in (their sources, freshness, trust and
        support), with `changes`."""
        sources = (*taken.source_event_ids, *into.source_event_ids)
        _, freshest = timeline.freshest(
            (taken.trust.rank, taken.last_reinforced_at),
            (into.trust.rank, into.last_reinforced_at),
        )
        self._revise(
            into,
            "merge",
            reason,
            source_event_ids=sources,
            reinforcement_count=len(sources) - 1,
            last_reinforced_at=freshest,
            trust=max(taken.trust, into.trust, key=lambda t: t.rank),
            **changes,
        )
        support = (*self.s.support.get(taken.id, ()), *self.s.support.get(into.id, ()))
        if support:
            self.s.support[into.id] = support

    def _end_stated(self, version: Fact) -> datetime | None:
        """The end `version`'s statements gave it (`held_until`), when none was made from
        then on: what it holds to once nothing replaces it (as `_stated_end` ends it in
        order). Only a statement as trusted as the version now is ends it: one made while it
        was less trusted ends nothing once a late statement raised it."""
        support = self.s.support.get(version.id, ())
        end = held_until([s for s in support if not s.trust.yields_to(version.trust)])
        return None if end is None or any(s.at >= end for s in support) else end

    def _rejoined(self, was: Fact, decision: Decision) -> Decision:
        """`decision`, after a late statement dated inside `was` made it more trusted than
        the less trusted version that replaced it, itself replaced by a restatement of
        `was`'s value (a split: `Splits._change_inside`; after the change's stated end, or
        where it ended). In world order that change met the
        more trusted value and was held in quarantine; the value went on, restated. So the
        change is held, and the restatement takes the version in: it begins where the
        version began and carries its evidence, and the version is its receipt, empty
        (`timeline.overruled` leaves it out of the chain), and what the version held for
        its sources the restatement holds. Not when a person's pin, an open set of the
        change's or a value the version holds in conflict is involved."""
        found = self._after_the_change(was)
        if found is None or not values_equal(found[0].value, found[2].value):
            return decision
        version, change, restated = found
        reason = f"{change.trust} source may not displace a {version.trust} fact"
        self._hold_displaced(
            change, f"an earlier, more trusted statement arrived late: quarantined: {reason}"
        )
        self._revise(
            version,
            "merge",
            "one version with its restatement: the change between them was held",
            valid_to=version.valid_from,
            superseded_by=restated.id,
        )
        self._take_in(
            restated,
            version,
            f"the version it restates, once the change between them was held ({reason})",
            valid_from=version.valid_from,
            supersedes_id=version.id,
            unpaired_change=version.unpaired_change,
        )
        key = version.identity_key
        self._hand_over_held(version, self.s.facts[restated.id])
        self._open_conflict(key, (restated.id, change.id), ConflictKind.QUARANTINE, reason)
        self._follow_identity_sets(version, self.s.facts[restated.id])
        return decision
