"""Procedures: which action reliably follows which, learned from the actions events record.

**What is counted.** A subject's action events (`core.event_action`) are grouped by session
and put in order (`seq`, else `occurred_at`, then id). Two events next to each other in a
session that both succeeded are one occurrence of the pair `a → b`; a failure between them
breaks the chain. Only one subject's events are ever read together: the actor is the
subject, so one agent's history never feeds another's procedures. `support` is the number of
occurrences, counted again from all the subject's action events on every run and written as
counted, never added to what was stored: a re-run over the same history changes nothing.

**The precondition** of a procedure is what the state of `a` held in every occurrence
(`key=value` pairs common to all of them), written `key=value,...` sorted; empty when they
share nothing, and an empty precondition matches any state (`matches`).

**Lifecycle, with hysteresis** (`settle`, the one rule; the validator holds every write to
it, `allowed`):

    candidate  → active      support ≥ PROMOTE_SUPPORT (3)
    active     → deprecated  effectiveness < DEMOTE_BELOW (0.4); exactly 0.4 stays active
    deprecated → active      effectiveness ≥ REPROMOTE_AT (0.6)

Effectiveness is successes ÷ uses, over the uses an agent reports (`record_use`); before the
first use there is none, and nothing is demoted for want of evidence. Between 0.4 and 0.6 a
procedure keeps the status it has: one that dipped is not flapped back and forth.

**candidate → deprecated ("stale") is rejected**, on purpose. The seed draws it and never
implements it. Deprecated means "offered, used, and found to fail": its only way back is
effectiveness ≥ 0.6, which takes uses. A candidate is not offered (`match_procedures` returns
active procedures only), so it has no uses; deprecating it for age would file it where
evidence of success is the only exit and no evidence can arrive, and a candidate whose pair
later reaches its support would stay buried. A candidate that stops recurring simply stays a
candidate, matched by nothing and costing one row; if it recurs, it is promoted as any other.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import pairwise

from distill.core.cortex_plan import WriteProcedure
from distill.core.event_action import ActionOutcome, Scalar
from distill.core.models import Event, normalise_predicate
from distill.core.passes import Decision, PassResult
from distill.core.patterns import (
    Procedure,
    ProcedureStatus,
    procedure_id,
    settle,
)
from distill.core.plan import Plan

# Outcomes of a run, by procedure.
CREATED = "created"
PROMOTED = "promoted"
RECOUNTED = "recounted"
UNCHANGED = "unchanged"


# -- counting --------------------------------------------------------------------------------------
@dataclass
class Occurrences:
    """The occurrences of one pair: how many, the events, and the state common to all."""

    count: int = 0
    event_ids: set[str] = field(default_factory=set)
    state: dict[str, str] | None = None  # None until the first occurrence


def state_text(value: Scalar) -> str:
    """A state value as a precondition writes it (`true`, not `True`)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _order(event: Event) -> tuple[bool, int, datetime, str]:
    action = event.action
    assert action is not None
    return (action.seq is None, action.seq or 0, event.occurred_at, event.id)


def occurrences(events: Iterable[Event]) -> dict[tuple[str, str], Occurrences]:
    """Every success → success pair of consecutive actions within a session."""
    sessions: dict[str, list[Event]] = defaultdict(list)
    for event in events:
        if event.action is not None:
            sessions[event.action.session].append(event)
    found: dict[tuple[str, str], Occurrences] = {}
    for session in sorted(sessions):
        steps = sorted(sessions[session], key=_order)
        for first, then in pairwise(steps):
            a, b = first.action, then.action
            assert a is not None and b is not None
            if a.outcome is not ActionOutcome.SUCCESS or b.outcome is not ActionOutcome.SUCCESS:
                continue
            seen = found.setdefault((a.type, b.type), Occurrences())
            seen.count += 1
            seen.event_ids.update((first.id, then.id))
            state = {k: state_text(v) for k, v in a.state.items()}
            if seen.state is None:
                seen.state = state
            else:
                seen.state = {k: v for k, v in seen.state.items() if state.get(k) == v}
    return found


def precondition_text(state: Mapping[str, str] | None) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted((state or {}).items()))


def parse_state(state: Mapping[str, Scalar] | str | None) -> dict[str, str]:
    """A state as `match_procedures` takes it: a mapping, or `key=value,key=value` text.
    Keys are normalised as an action's state keys are. Raises ValueError on a clause without
    `=`."""
    if state is None:
        return {}
    if isinstance(state, str):
        pairs: list[tuple[str, str]] = []
        for clause in state.split(","):
            if not clause.strip():
                continue
            key, sep, value = clause.partition("=")
            if not sep or not key.strip():
                raise ValueError(f"{clause.strip()!r} is not key=value")
            pairs.append((key, value.strip()))
        return {normalise_predicate(k): v for k, v in pairs}
    return {normalise_predicate(k): state_text(v) for k, v in state.items()}


def matches(procedure: Procedure, state: Mapping[str, str]) -> bool:
    """Every clause of the precondition holds in `state`; an empty precondition always does."""
    return all(state.get(k) == v for k, v in parse_state(procedure.precondition).items())


# -- the pass's decision ---------------------------------------------------------------------------
def decide_procedures(
    project: str,
    subject: str,
    events: Sequence[Event],
    stored: Sequence[Procedure],
    now: datetime,
) -> PassResult:
    """The plan that brings a subject's procedures to what its action events say: new pairs
    created, every pair's support and precondition recounted, candidates promoted."""
    plan = Plan()
    decisions: list[Decision] = []
    known = {p.id: p for p in stored}
    counted = occurrences(e for e in events if (e.project, e.subject) == (project, subject))
    seen: set[str] = set()
    for (a, b), occ in sorted(counted.items()):
        pid = procedure_id(project, subject, a, b)
        seen.add(pid)
        before = known.get(pid)
        counts = {
            "support": occ.count,
            "precondition": precondition_text(occ.state),
            "source_event_ids": tuple(sorted(occ.event_ids)),
        }
        if before is None:
            status = settle(ProcedureStatus.CANDIDATE, occ.count, None)
            after = Procedure(
                id=pid,
                project=project,
                subject=subject,
                action_a=a,
                action_b=b,
                status=status,
                created_at=now,
                updated_at=now,
                **counts,
            )
            reason = f"{after.name} succeeded back to back {occ.count} time(s)"
            plan.add(WriteProcedure(None, after, reason))
            decisions.append(Decision(CREATED, None, f"{reason}: {status}"))
            plan.outcomes[CREATED] += 1
            if status is ProcedureStatus.ACTIVE:
                plan.outcomes[PROMOTED] += 1
            continue
        decisions.append(_recount(plan, before, counts, now))
    for pid, before in sorted(known.items()):
        if pid not in seen and before.support:  # its events are gone: nothing supports it now
            counts = {"support": 0, "precondition": "", "source_event_ids": ()}
            decisions.append(_recount(plan, before, counts, now))
    return PassResult(plan, decisions)


def _recount(
    plan: Plan, before: Procedure, counts: Mapping[str, object], now: datetime
) -> Decision:
    updated = before.model_copy(update=dict(counts))
    status = settle(before.status, updated.support, updated.effectiveness)
    after = updated.model_copy(update={"status": status})
    if after == before:
        plan.outcomes[UNCHANGED] += 1
        return Decision(UNCHANGED, None, f"{before.name}: support {before.support}, as counted")
    after = after.model_copy(update={"updated_at": now})
    outcome = PROMOTED if status is not before.status else RECOUNTED
    reason = f"{after.name}: support {before.support} → {after.support} (counted again)"
    if outcome == PROMOTED:
        reason += f"; {before.status} → {status}"
    plan.add(WriteProcedure(before, after, reason))
    plan.outcomes[outcome] += 1
    return Decision(outcome, None, reason)


def record_use(procedure: Procedure, success: bool, now: datetime) -> WriteProcedure:
    """One real use of a procedure, reported by the agent: its counts, then its status."""
    update = {"successes": procedure.successes + 1} if success else {}
    if not success:
        update = {"failures": procedure.failures + 1}
    counted = procedure.model_copy(update=update)
    status = settle(procedure.status, counted.support, counted.effectiveness)
    after = counted.model_copy(update={"status": status, "updated_at": now})
    effect = after.effectiveness or 0.0
    reason = (
        f"a {'successful' if success else 'failed'} use: {after.successes}/{after.uses} "
        f"= {effect:.2f}"
    )
    if status is not procedure.status:
        reason += f"; {procedure.status} → {status}"
    return WriteProcedure(procedure, after, reason, pass_name="api")


def tally(results: Iterable[PassResult]) -> Counter[str]:
    total: Counter[str] = Counter()
    for result in results:
        total.update(result.plan.outcomes)
    return total
