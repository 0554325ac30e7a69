"""A third distinct value: when an attribute's statements are a series, not one value.

An undated `create` of another value waits as a candidate in a value conflict against the
current version (`Rivals._conflict`). A further distinct value shows that the statements
were made at different times about something that is not one attribute: the held
candidates and the new value become dated event facts ("gp is b (stated 2024-05-02)"), the
current version stays, and the set is closed (`_reclassify`). In world order the values
that follow a version therefore go in pairs: the first is held, the second makes both
events, the third is held again, and so on. So at any moment

* a version is held in at most one value conflict, and
* that conflict holds the latest value of the series; every earlier one is an event.

Late news must end the same way (DESIGN invariant 8), and several paths hold a value against
a version (a late first value holds the version it now precedes, a late change's held
values follow it...). So both facts are kept where a value conflict opens
(`_open_conflict`), whichever path opens it, instead of in each path:

* a value conflict opened against a version already held in one, with another value, is a
  third distinct value: every held value becomes an event (`_third_value`);
* the version's series is then settled as world order leaves it (`_settle_series`): its
  values (the events it made and the value now held) sorted by date, the latest held when
  they are odd in number and every other one an event. So a value held against a version
  whose series has an event dated after it becomes an event, and the latest is held again;
  and with an even number every one is an event and the set closes.

And a change that arrives late, dated inside a series, splits it: the values before the
change were the old version's series and those after it the change's, each settled as
world order leaves it (`_split_series`, from `Rivals._move_later_rivals`).

A value the series made an event of is no new value when it is stated again. A later
statement of it restates the event (`_restates_event`): held as a new value, it would
make the state depend on whether it came before or after the values that made the event.
A change to it began when the series first stated it (`_event_as_version`, from
`Rivals._event_replaces`), as a change to a held value began when that was first said
(`Rivals._adopt`): the event is the new version, and the values before it are settled as
the old version's series. A late first value of it was restated by it
(`FirstValues._earlier_create`): the event is that first version; and a late older
version of it shows the event was a return (`Returns._now_a_return`). Each way the event
ends as it does when the statement it restates arrives first. Likewise, what a create held
in conflict, said after a late first value that the create turns out to follow, was that
value's series, or restated it (`_later_values`, `_restating_value`,
`LateArrivals._before_replaced_create`).

A value held and then made an event in one decision is recorded as reclassified, not as
held in conflict (`_as_it_ended`): its observation says what became of it.

Only the events a series made count (`reclassified`): an occurrence claimed as one (`kind:
event`) is no value of the series.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from distill.core.identity import canonical_json, values_equal
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
from distill.core.working import Candidate, Identity, WorkingSet

THIRD_VALUE = "a third distinct value: the statements are kept as dated events"
CHANGED_TO_EVENT = "a change to a value the series kept as an event began when it was stated"
RESTATES_EVENT = "restates a value the series keeps as a dated event"
RESTATED = "a later statement of this value was kept as an event of the series: it restated this"
SERIES_OF_EARLIER = "held against the earlier value that arrived late, whose series it is"
LATEST_HELD = "the latest value since the current version is the one held against it"


def stated_on(text: str, when: datetime) -> str:
    """An event fact made from a reclassified statement says when it was said."""
    return f"{text}{_suffix(when)}"


def reclassified(fact: Fact) -> bool:
    """Whether an event fact was a value of a series (`stated_on`), not an occurrence."""
    return fact.kind is FactKind.EVENT and fact.text.endswith(_suffix(fact.valid_from))


def _suffix(when: datetime) -> str:
    return f" (stated {when.date().isoformat()})"


def _plain(event: Fact) -> str:
    """An event's text without the date it was stated on."""
    return event.text.removesuffix(_suffix(event.valid_from))


def _same_value(a: Fact, b: Fact) -> bool:
    return a.value is not None and b.value is not None and values_equal(a.value, b.value)


class Series(WorkingSet):
    """Values of one attribute kept as dated events once a third distinct value shows they
    are a series (module doc)."""

    def _reclassify(
        self,
        c: Candidate,
        open_set: ConflictSet,
        ident: Identity,
        value: dict[str, Any],
    ) -> Decision:
        """The claim is a third distinct value: the held candidates become event facts, the
        claim's value is one too; the active fact stays."""
        for member_id in open_set.member_ids:
            member = self.s.facts[member_id]
            if member.status is FactStatus.CANDIDATE:
                self._as_event(member, THIRD_VALUE)
        fact = self._new_fact(c, FactKind.EVENT, ident, value)
        fact = fact.model_copy(update={"text": stated_on(fact.text, fact.valid_from)})
        self._create(fact, THIRD_VALUE)
        self._close_as_events(open_set, THIRD_VALUE)
        return Decision(Outcome.RECLASSIFIED, fact.id, THIRD_VALUE)

    def _as_event(self, member: Fact, reason: str) -> None:
        """A held statement kept as what it is once a third value shows the attribute is
        not one: an active event fact, "said X (stated D)"; an untrusted source's stays held
        (`_close_as_events` quarantines it), as its event claim would have been."""
        held = member.status is FactStatus.CANDIDATE and member.trust is Trust.UNTRUSTED
        self._revise(
            member,
            "reclassify",
            reason,
            kind=FactKind.EVENT,
            status=FactStatus.CANDIDATE if held else FactStatus.ACTIVE,
            text=stated_on(member.text, member.valid_from),
        )

    def _close_as_events(self, cs: ConflictSet, reason: str) -> None:
        """A set a third distinct value closed: its members are dated events now, an
        untrusted source's held in quarantine of its own (as `Adjudicator._occurrence` holds
        an untrusted event claim: no untrusted statement is served)."""
        closed = {"resolved_at": self.now, "resolved_by": Resolver.CLAIM}
        self._revise_conflict(cs, reason, status=ConflictStatus.RECLASSIFIED, **closed)
        for member_id in cs.member_ids:
            member = self.s.facts[member_id]
            if member.kind is FactKind.EVENT and member.status is FactStatus.CANDIDATE:
                key = member.identity_key
                self._open_conflict(key, (member.id,), ConflictKind.QUARANTINE, "untrusted source")

    def _as_it_ended(self, decision: Decision) -> Decision:
        """The claim's decision as its fact ended the claim's turn: a value held in conflict
        that its series then made an event (`_open_conflict`) was reclassified, and its
        observation says so."""
        fact = self.s.facts.get(decision.fact_id or "")
        if decision.outcome is Outcome.CONFLICT and fact is not None and reclassified(fact):
            return Decision(Outcome.RECLASSIFIED, fact.id, THIRD_VALUE)
        return decision

    def _open_conflict(
        self, key: str | None, members: tuple[str, ...], kind: ConflictKind, reason: str
    ) -> None:
        """Opens the set, unless the series makes it otherwise (module doc): a value
        conflict is never opened against a version held in one already, and the version's
        series is settled once it is."""
        pair = None
        if kind is ConflictKind.CONFLICT and key is not None:
            pair = self._version_and_held(members)
            if pair is not None and self._third_value(*pair):
                return
        super()._open_conflict(key, members, kind, reason)
        if pair is not None:
            version = self.s.facts[pair[0].id]
            self._settle_series(version, version.valid_to)

    def _split_series(self, old: Fact, new: Fact) -> None:
        """A change `new` came inside `old`'s series (a late change, before values that had
        made events): in world order the values before it were `old`'s series and those
        after it `new`'s, each settled on its own (`_settle_series`)."""
        if self._series_events(new, new.valid_to):
            self._settle_series(old, new.valid_from)
            self._settle_series(self.s.facts[new.id], new.valid_to)

    def _settle_series(self, version: Fact, until: datetime | None) -> None:
        """The values of `version`'s series (events it made, values held against it), dated
        before `until`, as world order leaves them: the latest held against it when they are
        odd in number, every other one an event. Left as it is when a member is pinned or
        kept by a person's decision (no rule holds it again: seed 1708775), of another trust
        level or a repeated value."""
        sets = [cs for cs in self._sets_holding(version.id) if cs.kind is ConflictKind.CONFLICT]
        held = [self.s.facts[m] for cs in sets for m in cs.member_ids if m != version.id]
        values = [*self._series_events(version, until), *held]
        if (
            not values
            or any(
                f.pinned or self._kept_by_decision(f.id) or f.trust is not version.trust
                for f in [version, *values]
            )
            or len({canonical_json(f.value) for f in values}) < len(values)
            or any(_same_value(f, version) for f in values)
        ):
            return
        values.sort(key=lambda f: (f.valid_from, f.recorded_at, f.id))
        latest = values[-1] if len(values) % 2 else None
        for f in values:
            if f is not latest and f.status is FactStatus.CANDIDATE:
                self._as_event(f, THIRD_VALUE)
            elif f is latest and f.kind is FactKind.EVENT:
                self._hold_again(f)
        for cs in sets:
            if latest is None:
                self._close_as_events(cs, THIRD_VALUE)
            elif latest.id not in cs.member_ids:
                self._revise_conflict(cs, LATEST_HELD, member_ids=(version.id, latest.id))
        if latest is not None and not sets:
            self._open_conflict(
                version.identity_key, (version.id, latest.id), ConflictKind.CONFLICT, LATEST_HELD
            )

    def _settle_parts(self, *ids: str) -> None:
        """`_settle_series` for each of these versions over its own interval: the parts a
        version was split into, or versions an event of a series became or stands between."""
        for fact_id in ids:
            part = self.s.facts[fact_id]
            self._settle_series(part, part.valid_to)

    def _series_events(self, version: Fact, until: datetime | None) -> list[Fact]:
        """The events a series made after `version` began, before `until`."""
        return [
            f
            for f in self._facts_of(version.identity_key or "")
            if f.valid_from > version.valid_from
            and (until is None or f.valid_from < until)
            and f.status is FactStatus.ACTIVE
            and reclassified(f)
        ]

    def _restates_event(
        self, c: Candidate, version: Fact, value: dict[str, Any]
    ) -> Decision | None:
        """A claim of a value `version`'s series already made an event of restates that
        event: it is no new value of the series. (Held as one, it would make the state
        depend on whether it arrived before or after the values that made the event.)"""
        event = self._event_of_value(version, value)
        if event is None:
            return None
        decision = self._reinforce(event, c, RESTATES_EVENT, valid_from=self._time(c))
        moved = self.s.facts[event.id]
        if moved.valid_from < event.valid_from:  # stated earlier than it knew
            text = stated_on(_plain(event), moved.valid_from)
            self._revise(moved, "reinforce", RESTATES_EVENT, text=text)
        return decision

    def _event_of_value(self, version: Fact, value: dict[str, Any]) -> Fact | None:
        """The event `version`'s series made of `value`, if any (none pinned)."""
        for event in self._series_events(version, version.valid_to):
            if not event.pinned and event.value is not None and values_equal(event.value, value):
                return event
        return None

    def _event_as_version(self, event: Fact, start: datetime, reason: str, **changes: Any) -> Fact:
        """An event of a series that a claim of its value shows to be a version: a state
        from `start`, its text without the date it was stated on."""
        return self._revise(
            event,
            "resolve",
            reason,
            kind=FactKind.STATE,
            text=_plain(event),
            valid_from=start,
            **changes,
        )

    def _later_values(self, version: Fact, t: datetime) -> list[ConflictSet] | None:
        """The value conflicts holding `version` when each holds only values said after
        `t`, of its trust, none pinned: with a statement at `t` before them (in world
        order), `version` and they were values of its series, or restated it
        (`_restating_value`). None when another set holds `version`."""
        sets = [cs for cs in self._sets_holding(version.id) if cs.kind is not ConflictKind.IDENTITY]
        for cs in sets:
            others = [self.s.facts[m] for m in cs.member_ids if m != version.id]
            if cs.kind is not ConflictKind.CONFLICT or any(
                o.pinned
                or o.status is not FactStatus.CANDIDATE
                or o.trust is not version.trust
                or o.valid_from <= t
                for o in others
            ):
                return None
        return sets

    def _restating_value(self, sets: list[ConflictSet], value: dict[str, Any]) -> Fact | None:
        """The value held in `sets` (`_later_values`) that is `value`: a restatement of the
        earlier statement of it, in world order."""
        for cs in sets:
            for m in cs.member_ids:
                held = self.s.facts[m]
                if held.status is FactStatus.CANDIDATE and values_equal(held.value or {}, value):
                    return held
        return None

    def _series_moves(self, sets: list[ConflictSet], old: Fact, new: Fact) -> None:
        """The value conflicts `sets` held against `old` are held against `new`, the
        version whose series they are (`_later_values`)."""
        for stale in sets:
            cs = self.s.conflicts[stale.id]
            members = tuple(new.id if m == old.id else m for m in cs.member_ids)
            self._revise_conflict(cs, SERIES_OF_EARLIER, member_ids=members)

    def _hold_again(self, event: Fact) -> None:
        """An event of a series held again as the series' latest value."""
        self._revise(
            event,
            "hold",
            LATEST_HELD,
            kind=FactKind.STATE,
            status=FactStatus.CANDIDATE,
            text=_plain(event),
        )

    def _version_and_held(self, members: tuple[str, ...]) -> tuple[Fact, Fact] | None:
        """The active version and the one value held against it, none pinned; else None."""
        facts = [self.s.facts[m] for m in members]
        active = [f for f in facts if f.status is FactStatus.ACTIVE]
        held = [f for f in facts if f.status is FactStatus.CANDIDATE]
        if len(active) != 1 or len(held) != 1 or any(f.pinned for f in facts):
            return None
        return active[0], held[0]

    def _third_value(self, version: Fact, held: Fact) -> bool:
        """`version` is held in a value conflict with another value already: `held` is a
        third distinct value, as if it had met that set (`Rivals._conflict`). Every held
        value becomes an event and the set closes."""
        for cs in self._sets_holding(version.id):
            others = [self.s.facts[m] for m in cs.member_ids if m != version.id]
            if (
                cs.kind is not ConflictKind.CONFLICT
                or not others
                or any(o.pinned or o.status is not FactStatus.CANDIDATE for o in others)
                or any(_same_value(o, held) for o in others)
            ):
                continue
            for fact in (held, *others):
                self._as_event(self.s.facts[fact.id], THIRD_VALUE)
            self._close_as_events(cs, THIRD_VALUE)
            return True
        return False
