"""World-time ordering of the versions of one identity.

The versions of a state identity (its active fact and the superseded ones before it) form a
chain ordered by `valid_from`. Events may arrive in any order; these functions say where a
claim about time `t` falls in that chain, so that late news is filed into history instead
of overwriting the present.

Two versions may start at the same instant (two spells dated to one year, two statements of
one day): they are ordered by their stated content, so that the one whose words sort last is
the later version, whichever arrived first (DESIGN invariant 8). The earlier of the two keeps
an empty interval [t, t) in history; it is never served for any instant.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from distill.core.identity import canonical_json
from distill.core.models import Fact, FactKind, FactStatus


@dataclass(frozen=True)
class Placement:
    """Where time `t` falls in a chain: inside `version` (None before the first one)."""

    version: Fact | None
    following: Fact | None


def chain(facts: Iterable[Fact], key: str) -> list[Fact]:
    """The versions of identity `key`, oldest first (active and superseded state facts),
    without the overruled ones (`overruled`)."""
    facts = list(facts)
    versions = [
        f
        for f in facts
        if f.identity_key == key
        and f.kind is FactKind.STATE
        and f.status in (FactStatus.ACTIVE, FactStatus.SUPERSEDED)
    ]
    if any(f.never_true for f in versions):  # rare: only then look further
        by_id = {f.id: f for f in facts}
        versions = [f for f in versions if not overruled(f, by_id)]
    if len({f.valid_from for f in versions}) == len(versions):
        # No two begin at one instant (nearly always): their words never decide the order,
        # and a sort by plain values skips building and comparing a position per version
        # (5% of the adjudicator's time on a 100-claim job).
        return sorted(versions, key=lambda f: (f.valid_from, f.recorded_at, f.id))
    return sorted(versions, key=lambda f: (position(f), f.recorded_at, f.id))


def overruled(fact: Fact, known: dict[str, Fact]) -> bool:
    """A version that was never true because a person kept another value over it (a held
    candidate not kept, a current fact replaced by an earlier kept one): superseded with an
    empty interval by a version that began at another instant. It is history of a decision,
    not of the world: a late claim is never filed against it. (The earlier of two versions
    of one instant is empty too, but its successor begins at that instant, sorts after it
    and names it as the version it followed: it stays. One that does not sort before its
    successor, or that its successor does not name, was set aside by a person, even at the
    same instant.) A successor not `known` was retracted since (no snapshot loads a
    retracted fact): the version stays set aside, for a retraction revives nothing before
    it."""
    if fact.status is not FactStatus.SUPERSEDED or not fact.never_true:
        return False
    successor = known.get(fact.superseded_by or "")
    return (
        successor is None
        or successor.valid_from != fact.valid_from
        or not position(fact) < position(successor)
        or successor.supersedes_id != fact.id
    )


@functools.total_ordering
@dataclass(frozen=True, eq=False)
class At:
    """A place in world time: an instant, then (only to break a tie at that instant) the
    stated words of what holds from it. The words are spelled out only when two instants
    are equal, which is rare: ordering costs a comparison of times, not a JSON encoding."""

    time: datetime
    stated: dict[str, Any] | None

    @functools.cached_property
    def words(self) -> str:
        return canonical_json(self.stated or {})

    def __eq__(self, other: object) -> bool:
        return isinstance(other, At) and self.time == other.time and self.words == other.words

    def __lt__(self, other: At) -> bool:
        if self.time != other.time:
            return self.time < other.time
        return self.words < other.words

    def __hash__(self) -> int:
        return hash(self.time)


def position(version: Fact) -> At:
    """Where a version sits in world time: its start, then its own words (`stated` for a
    supersede that carried keys forward, which depend on arrival order; its value otherwise)."""
    return At(version.valid_from, version.stated if version.stated is not None else version.value)


def place(versions: list[Fact], at: At) -> Placement:
    """Find the version whose interval holds position `at` (a claim's time and stated words):
    the last version at or before it, and the first one after it."""
    before = [v for v in versions if not at < position(v)]
    after = [v for v in versions if at < position(v)]
    return Placement(before[-1] if before else None, after[0] if after else None)


def end_of(version_valid_to: datetime | None, next_start: datetime | None) -> datetime | None:
    """A version ends at its own stated end or when the next one starts, whichever is first."""
    if version_valid_to is None:
        return next_start
    if next_start is None:
        return version_valid_to
    return min(version_valid_to, next_start)


def freshest(current: tuple[int, datetime], seen: tuple[int, datetime]) -> tuple[int, datetime]:
    """Freshness is the latest time among the most trusted supporters: a lower-trust
    repetition never refreshes a fact, and an older event never moves it back. Taking the
    maximum of (trust rank, time) pairs gives the same answer in any arrival order."""
    return max(current, seen)


def renamed_to(versions: list[Fact], fact_of: Callable[[str], Fact | None]) -> Fact | None:
    """The active state fact of another identity that the last of `versions` (one name's,
    none of them active) was superseded by, following the receipts (`fact_of` reads a fact
    by id): an identity set resolved into the other name, by a person or the judge. The
    subject's own record of a rename, whatever the project's aliases say; None without one."""
    if not versions or any(f.status is FactStatus.ACTIVE for f in versions):
        return None
    fact = max(versions, key=position)
    seen: set[str] = set()
    while fact.superseded_by and fact.superseded_by not in seen:
        seen.add(fact.superseded_by)
        following = fact_of(fact.superseded_by)
        if following is None:
            return None
        fact = following
    moved = fact.status is FactStatus.ACTIVE and fact.identity_key != versions[0].identity_key
    return fact if moved and fact.kind is FactKind.STATE else None
