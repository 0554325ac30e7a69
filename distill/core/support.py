"""Who said a value, when, and how far it is believed: the statements behind a version.

A fact keeps its sources' event ids; the adjudicator also needs, for each, the date it
speaks of, the trust of its source and how the claim was put (a change, a dated statement,
a stated end), because in world order those decide what a statement did when it arrived: a
change or a later dated value replaces the version before it, an undated `create` of
another value is held against it, and a less trusted source displaces nothing. `Support`
is one such statement; the helpers order them in world time and rebuild a version's
provenance from the ones it keeps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from distill.core.models import Claim, ClaimAction, Fact, Trust


@dataclass(frozen=True)
class Support:
    """One event that supports a fact, when and how far it is believed, and how its claim
    was stated: as a change (`supersede`), and dated by its own `valid_from` (`at` is then
    that date). In world order either makes a different value replace the one before it
    (dated: when it is later), where an undated `create` is held against it."""

    event_id: str
    at: datetime
    trust: Trust
    supersede: bool = False
    dated: bool = False
    until: datetime | None = None  # the end its claim stated (`valid_to`), if any


def support_of(event_id: str, at: datetime, trust: Trust, claim: Claim) -> Support:
    supersede = claim.action is ClaimAction.SUPERSEDE
    return Support(event_id, at, trust, supersede, claim.valid_from is not None, claim.valid_to)


def supported_by(support: list[Support], fact: Fact) -> dict[str, Any]:
    """The provenance fields of a version backed by exactly these supporting events."""
    if not support:
        return {}
    trust = max((s.trust for s in support), key=lambda r: r.rank)
    freshest = max((s.trust.rank, s.at) for s in support)[1]
    ordered = [e for e in fact.source_event_ids if e in {s.event_id for s in support}]
    return {
        "source_event_ids": tuple(ordered),
        "reinforcement_count": len(ordered) - 1,
        "last_reinforced_at": freshest,
        "trust": trust,
    }


def said_order(support: Support) -> tuple[datetime, bool, int]:
    """Statements in world time; of one instant, a change first, then the most trusted: of
    statements made together, a change is what replaced the value before
    (`Adjudicator._state`), and the most trusted is what the value met the attribute with."""
    return support.at, not support.supersede, -support.trust.rank


def first_said(supports: Sequence[Support]) -> Support:
    """The earliest of `supports` (`said_order`)."""
    return min(supports, key=said_order)


def held_until(held: Sequence[Support]) -> datetime | None:
    """The end of a candidate held for its sources (in quarantine): the latest end they
    stated (one that states none says nothing of it), as restating it there leaves it."""
    return max((s.until for s in held if s.until is not None), default=None)


def own_end(said: Sequence[Support]) -> datetime | None:
    """The end `said` give a version of their own: the latest stated by one as trusted as
    the most trusted of them (a less trusted statement ends nothing: `WorkingSet._reinforce`)."""
    top = max((s.trust.rank for s in said), default=0)
    return held_until([s for s in said if s.trust.rank >= top])
