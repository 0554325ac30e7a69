"""Decay and prune: a fact's weight from its staleness, and which tombstones may go for good.

**The weight is derived, never stored.** `weight(fact, now, half_life_days)` is
`0.5 ** (staleness / half_life)`, where staleness is the time in days since the fact was last
reinforced (`last_reinforced_at`, which a reinforcement moves forward). Nothing writes it, so
computing it twice gives the same number and running decay five times changes nothing: it is
idempotent by construction, not by care. A reinforcement refreshes it (staleness back to 0,
weight back to 1), and only a reinforcement does: decay and prune never write a timestamp,
so a tombstone's weight only falls (the one thing that moves it is new evidence filed under
that old version by a late event), and a tombstone whose weight reached zero is never raised.
A clock that reads earlier than the last reinforcement gives staleness 0, weight 1 (never
more than 1).

**The prune rule.** Prune is the second hard delete DESIGN allows (the first is erase). A
fact may be deleted only when every one of these holds, checked in this order (the first one
that fails is the reason it is kept, as the report says):

1. it is a tombstone: `superseded` or `retracted` (never a live fact: `active`, `candidate`);
2. it is not pinned;
3. its weight is below the floor, and it was retired at least `RECEIPT_MIN_AGE_DAYS` ago (a
   receipt outlives the cycle that wrote it: a summary's consumed memories are chosen for
   being stale, so their post-decay weight may already be under the floor when they retire,
   and the same cycle's prune must not take the receipt it just wrote);
4. it is not a member of an open conflict set (somebody may still keep it);
5. no fact that stays names it as its receipt (`superseded_by`: that receipt would point at
   nothing, which scenario 28 forbids), and no live fact names it as what it replaced
   (`supersedes_id`: the live fact's account of its past);
6. its evidence stays reachable: each of its `source_event_ids` is cited by a fact that stays,
   either the survivor its receipt points at (a merge made the survivor absorb them) or a live
   fact of the scope. Otherwise it is kept: "its evidence would become unreachable".

A survivor that is itself a tombstone is decided first, so a fact never leans on a survivor
the same run deletes. What prune deletes is the fact's row, its `fact_sources` rows and its
vector; never an event. What stays, on purpose: its audit entries (what happened to it, and
the prune entry itself, which holds ids and fields, never its text), the observations that
name it (the claims extracted from events are evidence; their `fact_id` becomes a historical
id), a retired fact's `supersedes_id` and a resolved conflict set's `member_ids` naming it
(historical ids too). `history` of a pruned fact is "not found"; the survivor's still works.

The defaults, and why:

- `HALF_LIFE_DAYS = 90`: a quarter. A memory nobody restated in three months is half as
  likely to matter as a fresh one, the rule of thumb GrayMatter's decay used; shorter would
  forget seasonal facts between two seasons, longer would keep retired noise for years.
- `RECEIPT_MIN_AGE_DAYS = 30`: a month in which a receipt stays listable, exportable and
  auditable whatever its weight, longer than any schedule a worker runs the passes on.
- `PRUNE_FLOOR = 0.05`: a weight below it means about 4.3 half-lives, 389 days (0.5 ** (t /
  90) < 0.05 ⇔ t > 90 · log2(20)) without a reinforcement: about thirteen months, more than a
  full year, so anything that recurs yearly (a birthday, an annual review) has had its chance
  to come back before its tombstone is deleted.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from distill.core.models import ConflictSet, Fact, FactStatus
from distill.core.plan import Plan, PruneFact
from distill.errors import InvalidInput

PASS_NAME = "prune"
# Days for a weight to halve; see the module docstring for why a quarter.
HALF_LIFE_DAYS = 90.0
# Weight (0..1) under which a tombstone may be pruned: ~13 months unreinforced at 90 days.
PRUNE_FLOOR = 0.05
# Tombstones one run deletes at most, across every scope; the rest wait for the next run.
MAX_PRUNES_PER_RUN = 500
RECEIPT_MIN_AGE_DAYS = 30.0  # a tombstone younger than this is kept whatever its weight
SECONDS_PER_DAY = 86_400.0
TOMBSTONES = frozenset({FactStatus.SUPERSEDED, FactStatus.RETRACTED})

# Why a tombstone was kept (report keys), in the order the rule checks them.
KEPT_PINNED = "pinned"
KEPT_WEIGHT = "weight_above_floor"
KEPT_RECENT = "retired_recently"
KEPT_CONFLICT = "open_conflict"
KEPT_RECEIPT = "receipt_needed"
KEPT_EVIDENCE = "evidence_unreachable"
KEPT_CAPPED = "capped"


def staleness_days(fact: Fact, now: datetime) -> float:
    """Days since the fact was last reinforced; 0 for a clock behind it."""
    return max(0.0, (now - fact.last_reinforced_at).total_seconds() / SECONDS_PER_DAY)


def weight(fact: Fact, now: datetime, half_life_days: float = HALF_LIFE_DAYS) -> float:
    """`0.5 ** (staleness_days / half_life_days)`, in (0, 1]: 1 when just reinforced, 0.5
    after one half-life, 0.25 after two. Derived from timestamps only (module docstring)."""
    _check_half_life(half_life_days)
    return float(0.5 ** (staleness_days(fact, now) / half_life_days))


def check_knobs(half_life_days: float, floor: float) -> None:
    """Refuse a half-life that is not a positive number of days, a floor outside [0, 1]."""
    _check_half_life(half_life_days)
    if not 0.0 <= floor <= 1.0:
        raise InvalidInput(f"floor: a weight between 0 and 1 (the default is {PRUNE_FLOOR})")


def _check_half_life(half_life_days: float) -> None:
    if not (half_life_days > 0 and math.isfinite(half_life_days)):
        raise InvalidInput(
            f"half_life_days: a positive number of days (the default is {HALF_LIFE_DAYS:g})"
        )


@dataclass(frozen=True)
class Kept:
    fact_id: str
    reason: str  # one of the KEPT_* codes
    weight: float


@dataclass
class PruneDecision:
    """What `decide_prune` returns: the plan (one `PruneFact` per deleted tombstone) and
    every tombstone kept, with the reason."""

    plan: Plan = field(default_factory=Plan)
    kept: list[Kept] = field(default_factory=list)

    @property
    def pruned(self) -> list[str]:
        return [a.fact.id for a in self.plan.actions if isinstance(a, PruneFact)]


def decide_prune(
    facts: Sequence[Fact],
    open_conflicts: Iterable[ConflictSet],
    now: datetime,
    *,
    half_life_days: float = HALF_LIFE_DAYS,
    floor: float = PRUNE_FLOOR,
    cap: int | None = None,
) -> PruneDecision:
    """Apply the prune rule (module docstring) to one scope's facts, every status, deleting
    at most `cap` (None: no cap). Pure."""
    check_knobs(half_life_days, floor)
    by_id = {f.id: f for f in facts}
    live = [f for f in facts if f.live]
    in_conflict = {m for c in open_conflicts for m in c.member_ids}
    live_events = {e for f in live for e in f.source_event_ids}
    replaced_by_live = {f.supersedes_id for f in live if f.supersedes_id}
    tombstones = sorted(
        (f for f in facts if f.status in TOMBSTONES), key=lambda f: (f.last_reinforced_at, f.id)
    )
    weights = {t.id: weight(t, now, half_life_days) for t in tombstones}
    kept: dict[str, str] = {}
    for t in tombstones:
        reason = _objection(t, weights[t.id], floor, in_conflict, replaced_by_live, now)
        if reason is None and not _evidence_stays(t, by_id, live_events):
            reason = KEPT_EVIDENCE
        if reason is not None:
            kept[t.id] = reason
    _keep_named_receipts(facts, by_id, kept)
    if cap is not None:
        prunable = [t.id for t in tombstones if t.id not in kept]
        kept.update((fact_id, KEPT_CAPPED) for fact_id in prunable[max(cap, 0) :])
        _keep_named_receipts(facts, by_id, kept)  # a capped receipt keeps what it names
    result = PruneDecision()
    for t in tombstones:
        w = weights[t.id]
        if t.id in kept:
            result.kept.append(Kept(t.id, kept[t.id], w))
            continue
        reason = f"weight {w:.4f} below the floor {floor:g} (half-life {half_life_days:g} days)"
        result.plan.add(PruneFact(t, reason, w))
    result.plan.outcomes.update({"pruned": len(result.pruned)})
    result.plan.outcomes.update(k.reason for k in result.kept)
    return result


def _objection(
    fact: Fact,
    w: float,
    floor: float,
    in_conflict: set[str],
    replaced_by_live: set[str],
    now: datetime,
) -> str | None:
    """Rules 2 to 5 (a live fact's `supersedes_id`) of the module docstring."""
    if fact.pinned:
        return KEPT_PINNED
    if w >= floor:
        return KEPT_WEIGHT
    retired = fact.retired_at or fact.recorded_at
    if (now - retired).total_seconds() < RECEIPT_MIN_AGE_DAYS * SECONDS_PER_DAY:
        return KEPT_RECENT
    if fact.id in in_conflict:
        return KEPT_CONFLICT
    if fact.id in replaced_by_live:
        return KEPT_RECEIPT
    return None


def _evidence_stays(fact: Fact, by_id: Mapping[str, Fact], live_events: set[str]) -> bool:
    """Rule 6: each source event is cited by a live fact or by the survivor the receipt
    names. The survivor may be a tombstone itself: it is then pruned only when its own events
    (these among them) stay reachable, so leaning on it is safe, unless the receipts loop."""
    missing = set(fact.source_event_ids) - live_events
    if not missing:
        return True
    survivor = by_id.get(fact.superseded_by) if fact.superseded_by else None
    if survivor is None or not missing <= set(survivor.source_event_ids):
        return False
    seen = {fact.id}
    while survivor is not None and not survivor.live:
        if survivor.id in seen:
            return False  # a loop of receipts leads to no live fact: keep, rather than guess
        seen.add(survivor.id)
        survivor = by_id.get(survivor.superseded_by) if survivor.superseded_by else None
    return True


def _keep_named_receipts(
    facts: Sequence[Fact], by_id: Mapping[str, Fact], kept: dict[str, str]
) -> None:
    """Rule 5 (receipts): a fact that stays and names a tombstone as its `superseded_by`
    keeps it, and so on along the chain, until nothing changes."""
    changed = True
    while changed:
        changed = False
        for f in facts:
            target = f.superseded_by
            stays = f.live or f.id in kept
            if (
                target
                and stays
                and target in by_id
                and target not in kept
                and by_id[target].status in TOMBSTONES
            ):
                kept[target] = KEPT_RECEIPT
                changed = True
