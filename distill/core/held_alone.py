"""Values held alone: an untrusted claim that met nothing known, and what meets it later.

An untrusted source never makes a value current (SCENARIOS C18): its claim is held in
quarantine against the version in force at its date (`Adjudicator._state`), and when
nothing is in force it is held alone, in a set of its own. In world order it met whatever
was in force then, so what becomes known after it must meet it as it would have in order,
whichever of them arrived first (DESIGN invariant 8):

- a version of its value made by a claim dated before it, and covering its date, is that
  row (the held row becomes the version, with both statements): `_create_version`, which
  every path that makes a version from a claim calls, in order or late; so too a held row
  that a more trusted value is displacing the version it was held against
  (`_held_by_no_version`);
- a claim held before the first version, its source yielding to that version's, is one
  row with an untrusted statement of its value held alone since (`_held_alone_restating`),
  and an untrusted claim arriving late before the first version restates a value that
  version displaced, when that value was in force on its date (`_repeats_displaced`);
- a version of another value that covers its date holds it, checked after every claim
  (`_held_alone_meet_versions`: versions filed late or found to begin earlier; at the
  instant a change ends the version, a value whose words sort first is inside it);
- a repeat of its instant reinforces it (`_repeated_alone`); one of another instant does
  not, since a version arriving later may fall between the two.

A held row dated before the first version of its value stays a row of its own: an untrusted
statement does not date a served value. So when a claim dated before both arrives last, the
held row and that version are already two rows where world order has one, and a row is
never deleted (invariant 1): most of what `scripts/order_search.py --untrusted` still
finds. Sessions 62 and 63.
"""

from __future__ import annotations

from typing import Any

from distill.core import timeline
from distill.core.identity import values_equal
from distill.core.models import ConflictKind, ConflictSet, ConflictStatus, Fact, FactStatus, Trust
from distill.core.passes import Decision
from distill.core.splits import Splits
from distill.core.working import Candidate

# Why a row held from an untrusted source became a version (`HeldAlone._create_version`).
HELD_ROW = "an untrusted statement of this value, held alone since, restated it"
# What a version takes from the claim that made it when a held row becomes that version.
_AS_VERSION = (
    "value", "text", "stated", "status", "valid_from", "valid_to", "retired_at",
    "supersedes_id", "superseded_by", "confidence", "unpaired_change",
)  # fmt: skip


class HeldAlone(Splits):
    """What becomes known meets a value held alone as in world order (module doc)."""

    def _held_alone_after(
        self,
        key: str,
        at: timeline.At,
        value: dict[str, Any] | None,
        among: list[tuple[Fact, ConflictSet]] | None = None,
    ) -> list[tuple[Fact, ConflictSet]]:
        """The untrusted claims of this identity held alone (nothing was known when they
        came; or `among` these) with `value`, dated after `at`, a claim's position, or at
        its instant: in world order each restated the claim's version, if it was in force
        then (`_inside`). (Those of other values join the version after the claim:
        `_held_alone_meet_versions`.)"""
        return [
            (held, cs)
            for held, cs in (self._held_alone(key) if among is None else among)
            # At the claim's instant with words that sort after: in order it came after too.
            if not timeline.position(held) < at
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

    def _held_by_no_version(self, key: str) -> list[tuple[Fact, ConflictSet]]:
        """The untrusted candidates of this identity held in quarantine against values that
        are no longer versions (a more trusted value the claim brings has just displaced
        them, and takes over what they held: `_hand_over_held`), with their sets."""
        found: list[tuple[Fact, ConflictSet]] = []
        for cs in self.s.conflicts.values():
            if (
                cs.status is not ConflictStatus.OPEN
                or cs.kind is not ConflictKind.QUARANTINE
                or cs.identity_key != key
                or len(cs.member_ids) < 2
            ):
                continue
            members = [self.s.facts[m] for m in cs.member_ids]
            if all(m.status is FactStatus.CANDIDATE for m in members):
                found += [(m, cs) for m in members if m.trust is Trust.UNTRUSTED and not m.pinned]
        return sorted(found, key=lambda pair: (timeline.position(pair[0]), pair[0].id))

    def _held_alone_meet_versions(self, key: str) -> None:
        """Untrusted values held alone (nothing was known when they came) that a version
        known now covers (filed late, or found to begin earlier; its interval holds the
        value's date, `_inside`: at the instant the next version begins, a value whose words
        sort first falls inside, as it came first in order too): in order each met it, and
        is held against it in quarantine, whatever came after it. Run after every claim.
        One of the version's value is not: the version and it are one row in order
        (`_create_version`), and a row of its own cannot join it. Nor one dated after the
        version's end, which is left as it is (hygiene seed 1319028: so held against a
        version of a period, it let a less trusted value displace the one a person kept)."""
        alone = self._held_alone(key)
        if not alone:
            return
        versions = timeline.chain(self._facts_of(key), key)
        for held, cs in alone:
            where = timeline.place(versions, timeline.position(held))
            base = where.version
            if base is None or base.pinned or values_equal(base.value, held.value):
                continue
            if self._inside(held, base, where.following):
                reason = "held against the version its date falls in, known since"
                self._revise_conflict(cs, reason, member_ids=(base.id, held.id))

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

    @staticmethod
    def _inside(held: Fact, version: Fact, following: Fact | None) -> bool:
        """Whether `held`'s date falls inside `version`, which `following` follows: before
        the end `version` states, and before `following` by position (at its instant, with
        words that sort first: in order it came first too)."""
        if following is not None and not timeline.position(held) < timeline.position(following):
            return False
        end = version.valid_to
        return (
            end is None
            or held.valid_from < end
            or (following is not None and end == following.valid_from)
        )

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
            found = self._held_alone_after(key, at, fact.value) or self._held_alone_after(
                key, at, fact.value, among=self._held_by_no_version(key)
            )
            # The version after it is read only when a held value might be inside it: most
            # versions meet none, and the chain is the identity's every version.
            following = (
                timeline.place(timeline.chain(self._facts_of(key), key), at).following
                if found
                else None
            )
            for held, cs in [(h, cs) for h, cs in found if self._inside(h, fact, following)][:1]:
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
