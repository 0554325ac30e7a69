"""Returns: a value held in conflict that an older version, arriving late, shows to be one.

In world order a create of a value the attribute had before is a return to it, not a
contradiction (`Adjudicator._state`): it becomes current again. When the older version
arrives after that create, the create was held in conflict against the version then in
force, or kept as an event of its series; once the older version is filed, it is a
return after all, as in order (`_now_a_return`):

* held against the current version, it replaces it from its own date (`Rivals._adopt`);
  restated by the current version after its date, the version splits around it
  (`_return_inside`, `Splits`);
* kept as an event of the current version's series, the event is the version from its
  date (`Rivals._event_replaces`), or splits it the same way when restated after;
* held against a version that a later one has replaced since, or kept as an event of its
  series, it is a version between the two (`_return_between`, `_event_between`). Any
  version after the older one, not only the next: a return is to any value held before,
  however many versions came between.

And the other way: a create that returned to a value the late older version shows was only
held against it had nothing to return to, and is held against the version it met
(`_return_undone`), however many versions replaced the one it had returned from.
"""

from __future__ import annotations

from typing import Any

from distill.core.identity import values_equal
from distill.core.models import ConflictKind, ConflictSet, Fact, FactKind, FactStatus, Trust
from distill.core.rivals import Rivals

RETURN = "an older version shows it returns to a value"


class Returns(Rivals):
    """What a late older version shows to be a return (module doc)."""

    def _now_a_return(self, older: Fact, key: str) -> None:
        """A value held in conflict against the current version that this older version
        also had: in order it would have been a return to it (`Adjudicator._state`), so it
        replaces the current version, from its own date; so does an event of the current
        version's series with that value (`_event_replaces`), and one held against a
        version after `older` (or an event of its series), replaced since, is a version
        between (`_return_between`). Not when the statements that give it that date are
        less trusted than the current version (`_first_trust`): in order they could not
        have replaced it."""
        if older.value is None:
            return
        after, seen = self.s.facts.get(older.superseded_by or ""), {older.id}
        while after is not None and after.status is FactStatus.SUPERSEDED and after.id not in seen:
            seen.add(after.id)
            following = after.superseded_by
            self._return_between(after, older.value)
            after = self.s.facts.get(following or "")
        active = [
            f
            for f in self._facts_of(key)
            if f.status is FactStatus.ACTIVE and f.kind is FactKind.STATE
        ]
        if len(active) != 1 or active[0].pinned:
            return
        head = active[0]
        held = self._held_rival(head, older.value)
        restated = held is None  # held, but `head` was restated after it (`_return_inside`)
        if restated:
            held = self._held_rival(head, older.value, restated=True)
        if held is None:
            # Or a return the series kept as an event (a third value came after it).
            event = self._event_of_value(head, older.value)
            if event is None or event.trust.yields_to(head.trust):
                return
            if any(s.at > event.valid_from for s in self.s.support.get(head.id, ())):
                self._return_inside(head, event, None)  # restated after it: `head` splits
            else:
                self._event_replaces(head, event, event.valid_from, RETURN)
            return
        if held[0].stated is not None or self._first_trust(held[0]).rank < head.trust.rank:
            return
        if restated:
            self._return_inside(head, *held)
            return
        self._adopt(None, head, *held, RETURN)

    def _first_trust(self, fact: Fact) -> Trust:
        """The trust of `fact`'s statements dated at its start, which it begins from (its
        trust now when the snapshot loaded none of them)."""
        first = [s.trust for s in self.s.support.get(fact.id, ()) if s.at <= fact.valid_from]
        return max(first, key=lambda t: t.rank) if first else fact.trust

    def _return_inside(self, head: Fact, rival: Fact, open_set: ConflictSet | None) -> None:
        """A return (`_now_a_return`) held against `head`, or an event of its series, that
        `head` restated after (`Splits`, which splits versions)."""

    def _return_between(self, head: Fact, value: dict[str, Any]) -> None:
        """A value held against `head`, a version a later one has replaced, that is a return
        to `value` (a late older version's): it is a version from its own date until
        `head`'s successor, as in order, where it replaced `head` and was replaced."""
        held = self._held_rival(head, value)
        following = self.s.facts.get(head.superseded_by or "")
        if following is None or head.valid_to is None or following.valid_from != head.valid_to:
            return
        if held is None:
            self._event_between(head, value, following)
            return
        rival, cs = held
        if (
            len(cs.member_ids) != 2
            or rival.stated is not None
            or rival.valid_to is not None
            or self._first_trust(rival).rank < head.trust.rank
            or not rival.valid_from < head.valid_to
        ):
            return
        end, start = head.valid_to, rival.valid_from
        self._revise(
            rival,
            "resolve",
            RETURN,
            status=FactStatus.SUPERSEDED,
            valid_to=end,
            retired_at=self.now,
            supersedes_id=head.id,
            superseded_by=following.id,
        )
        self._settle(cs, rival.id, RETURN)
        self._revise(head, "link", RETURN, valid_to=start, superseded_by=rival.id)
        self._revise(following, "link", RETURN, supersedes_id=rival.id)

    def _event_between(self, head: Fact, value: dict[str, Any], following: Fact) -> None:
        """A return to `value` that `head`'s series kept as an event (a third value came
        after it), `head` replaced since by `following`: the event is a version from its
        own date until `following`, as in order, and the values said after it are its
        series (`_event_replaces`)."""
        event = self._event_of_value(head, value)
        if event is None or event.trust.yields_to(head.trust):
            return
        fact = self._event_replaces(head, event, event.valid_from, RETURN, following)
        self._settle_parts(fact.id)

    def _return_undone(self, held: Fact, successor: Fact) -> None:
        """`held` was a version until a late first value showed it was a value held against
        that one, and a create of its value after `successor` (which replaced it), or after
        versions that replaced `successor`, had returned to it. In order that create met the
        version before it (`met`) with no version of its value before it, and was held
        against it: `met` is current again."""
        if held.value is None:
            return
        met, after = successor, self.s.facts.get(successor.superseded_by or "")
        while (
            after is not None
            and after.status is FactStatus.SUPERSEDED
            and after.value is not None
            and not values_equal(after.value, held.value)
        ):
            met, after = after, self.s.facts.get(after.superseded_by or "")
        if (
            after is None
            or after.status is not FactStatus.ACTIVE
            or after.pinned
            or self._kept_by_decision(after.id)
            or after.value is None
            or not values_equal(after.value, held.value)
            or after.trust is not met.trust
            or met.valid_to != after.valid_from  # ended by the return, not by itself
            or self._began_as_change(after, met.valid_from, restated=True)
            or self._open_set(after.id) is not None
        ):
            return
        reason = "a return to a value that was only held: held against the version before it"
        self._hold_displaced(after, reason)
        self._revise(
            met,
            "hold",
            reason,
            status=FactStatus.ACTIVE,
            valid_to=None,
            retired_at=None,
            superseded_by=None,
        )
        self._open_conflict(met.identity_key, (met.id, after.id), ConflictKind.CONFLICT, reason)
