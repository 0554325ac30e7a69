"""Sources of unequal trust in world order, and the pieces late arrivals share.

In world order a less trusted source never displaces a more trusted value: its claim is
held in quarantine against it (`Adjudicator._state`), and a more trusted create is not held
behind less trusted values: it holds the current one instead (`_held_back_by_less_trusted`,
`_over_less_trusted`, also when the create arrives late inside that value), with every
less trusted version before it (`_less_trusted_before`) and what they held, rather than
counting as a third value of their conflict (`_held_for_less_trust`). A change to the held
value from a source as trusted as the create adopts it, from the change's date
(`_adopting_change`). An untrusted claim that found nothing is held alone, and what
becomes known meets it as in order: a version of its value made by a claim dated before it,
in order or late, is that row (`_held_alone_after`, `_create_version`), a version of another
value that covers its date holds it
(`_held_alone_meet_versions`), and a repeat of its instant reinforces it
(`_repeated_alone`).

A claim read against a version reads the version's trust as the claim met it: at the
claim's date (`_trust_then`). What a displaced value held against it, the value before it
holds (`_held_only_behind`, `_hand_over_held`). The rules for claims that arrive late and
find less trusted versions in their place are in `trust_late`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from distill.core import timeline
from distill.core.identity import values_equal
from distill.core.models import (
    ConflictKind,
    ConflictSet,
    Fact,
    FactKind,
    FactStatus,
    Outcome,
    Trust,
)
from distill.core.passes import Decision
from distill.core.splits import Splits
from distill.core.support import Support, held_until, said_order
from distill.core.working import Candidate, Identity

# Why a row held from an untrusted source became a version (`TrustOrder._create_version`).
HELD_ROW = "an untrusted statement of this value, held alone since, restated it"
# What a version takes from the claim that made it when a held row becomes that version.
_AS_VERSION = (
    "value", "text", "stated", "status", "valid_from", "valid_to", "retired_at",
    "supersedes_id", "superseded_by", "confidence", "unpaired_change",
)  # fmt: skip


class TrustOrder(Splits):
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
        `new`, in quarantine, as it would have been in world order."""
        for cs in self._sets_holding(old.id):
            if cs.kind is not ConflictKind.IDENTITY:
                members = tuple(new.id if m == old.id else m for m in cs.member_ids)
                why = "held against the more trusted value before it"
                self._revise_conflict(cs, why, member_ids=members, kind=ConflictKind.QUARANTINE)

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
                self._revise(ended, "link", "the value after its gap", superseded_by=fact.id)
            fact = self._create_version(c, fact, "a more trusted value", self._query_text(c))
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

    def _held_alone_after(
        self, key: str, at: timeline.At, value: dict[str, Any] | None, end: datetime | None = None
    ) -> list[tuple[Fact, ConflictSet]]:
        """The untrusted claims of this identity held alone (nothing was known when they
        came) with `value`, dated after `at`, a claim's position, or at its instant, and
        before `end` (the version the claim begins ends there), in world order: in order
        each restated the claim's version. (Those of other values join the version after
        the claim: `_held_alone_meet_versions`.)"""
        return [
            (held, cs)
            for held, cs in self._held_alone(key)
            # At the claim's instant with words that sort after: in order it came after too.
            if not timeline.position(held) < at
            and (end is None or held.valid_from < end)
            and held.value is not None
            and value is not None
            and values_equal(held.value, value)
        ]

    def _repeated_alone(self, c: Candidate, key: str, value: dict[str, Any]) -> Decision | None:
        """An untrusted claim that meets nothing known repeats a value held alone already,
        of its instant: it reinforces it (`Rivals._repeat_held`), as a repeat of a value
        held against a version does, rather than being held a second time in a set of its
        own, which a value arriving later would then meet apart from the first. Not one of
        another instant: a version that arrives later may fall between the two, and in
        order the later statement met that version (`--untrusted` finds 32 histories more
        that differ when every repeat is taken)."""
        t = self._time(c)
        for held, cs in self._held_alone(key):
            if held.valid_from != t:
                continue
            if (repeated := self._repeat_held(c, cs, value)) is not None:
                return repeated
        return None

    def _held_alone(self, key: str) -> list[tuple[Fact, ConflictSet]]:
        """The unpinned candidates of this identity held alone in quarantine, with their
        sets."""
        found: list[tuple[Fact, ConflictSet]] = []
        for cs in self._open_alone():
            if cs.kind is ConflictKind.QUARANTINE and cs.identity_key == key:
                held = self.s.facts.get(cs.member_ids[0])
                if held is not None and held.status is FactStatus.CANDIDATE and not held.pinned:
                    found.append((held, cs))
        return sorted(found, key=lambda pair: (timeline.position(pair[0]), pair[0].id))

    def _held_alone_meet_versions(self, key: str) -> None:
        """Untrusted values held alone (nothing was known when they came) that a version
        known now covers (filed late, or found to begin earlier; its interval holds the
        value's date): in order each met it, and is held against it in quarantine, whatever
        came after it. Run after every claim. One of the version's value is not: the
        version and it are one row in order (`_create_version`), and a row of its own
        cannot join it. Nor one dated after the version's end, which is left as it is
        (hygiene seed 1319028: so held against a version of a period, it let a less trusted
        value displace the one a person kept)."""
        alone = self._held_alone(key)
        if not alone:
            return
        versions = timeline.chain(self._facts_of(key), key)
        for held, cs in alone:
            base = timeline.place(versions, timeline.position(held)).version
            if base is None or base.pinned or values_equal(base.value, held.value):
                continue
            if base.valid_to is None or held.valid_from < base.valid_to:
                reason = "held against the version its date falls in, known since"
                self._revise_conflict(cs, reason, member_ids=(base.id, held.id))

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

    def _held_alone_restating(
        self, c: Candidate, at: timeline.At, key: str, value: dict[str, Any], first: Fact
    ) -> Decision | None:
        """A claim that arrives late before `first`, the first version (or the first after a
        gap), and is held against it, its source yielding to that version's: in world order
        it was the version until `first` came, an untrusted value held alone since with its
        value (dated after it, before `first`) restated it, and `first` held that one row
        with both statements. The held row is the claim's, from its date, held against
        `first` (`_create_version` is the same for a version that nothing held)."""
        for held, cs in self._held_alone_after(key, at, value):
            if timeline.position(held) < timeline.position(first):
                reason = f"{c.event.trust} source may not displace a {first.trust} fact"
                self._revise_conflict(cs, reason, member_ids=(first.id, held.id))
                return self._reinforce(held, c, f"{reason}; {HELD_ROW}", valid_from=self._time(c))
        return None

    def _repeats_displaced(
        self, c: Candidate, at: timeline.At, value: dict[str, Any], first: Fact
    ) -> Decision | None:
        """A claim held for its source that arrives late before `first`, the first version,
        with the value of one `first`'s more trusted create displaced (held in quarantine
        against it; not from an untrusted source, so a version until then; dated no later
        than the claim and not ended by then): in world order that value was the version
        the claim met, and the claim restated it (`_repeat_held`)."""
        t = self._time(c)
        for cs in self._value_sets(first.id):
            if cs.kind is not ConflictKind.QUARANTINE:
                continue
            for member_id in cs.member_ids:
                shown = self.s.facts[member_id]
                if (
                    shown.status is FactStatus.CANDIDATE
                    and shown.trust is not Trust.UNTRUSTED
                    and not at < timeline.position(shown)
                    and (shown.valid_to is None or shown.valid_to > t)
                    and shown.value is not None
                    and values_equal(shown.value, value)
                ):
                    return self._repeat_held(c, cs, value)
        return None

    def _create_version(
        self, c: Candidate, fact: Fact, reason: str, vector_text: str | None = None
    ) -> Fact:
        """`fact`, a version made from claim `c`, created; or, when an untrusted value held
        alone (nothing was known when it came) has its value and a date inside its interval,
        that row made the version, from `c`'s statement and reinforced by it: in world order
        the held claim came after `c`'s and restated its version, one row with both
        statements. Every path that makes a version from a claim creates it here, in order
        or late, so which of the two arrived first leaves no row more."""
        key = fact.identity_key
        if key is not None and fact.status in (FactStatus.ACTIVE, FactStatus.SUPERSEDED):
            at = timeline.position(fact)
            following = timeline.place(timeline.chain(self._facts_of(key), key), at).following
            end = timeline.end_of(fact.valid_to, following.valid_from if following else None)
            for held, cs in self._held_alone_after(key, at, fact.value, end)[:1]:
                row = self._revise(
                    held,
                    "resolve",
                    f"{reason}; {HELD_ROW}",
                    **{n: getattr(fact, n) for n in _AS_VERSION},
                )
                self._settle(cs, row.id, HELD_ROW)
                self._reinforce(row, c, HELD_ROW)
                return self.s.facts[row.id]
        self._create(fact, reason, vector_text)
        return fact
