"""The invariants scripts/hygiene_search.py checks after every step of a history, and what
the search found.

After every step (`check_step`), the first violation ending the history:

- nothing is lost: a fact disappears only when prune reports it deleted, never a live or
  pinned one; a decision a person is refused changes nothing;
- receipts: a superseded fact names a successor that exists, a retracted one has its audit
  entry with a reason, both have `retired_at`;
- one active state fact per identity and subject;
- one value at a time (DESIGN invariant 8, as `one_value_at_a_time` in
  tests/unit/test_properties.py): the versions ever true never overlap in world time;
- an automatic step (consolidation, a pass) leaves a pinned fact as it was; makes no fact
  active that only untrusted statements back, unless a person accepted them (the write
  gate); and retires no current fact for a successor less trusted than it (derive excepted:
  votes count alike; summarise too: a summary consumes, it contradicts nothing); and holds
  no value a person kept as a candidate again (a value or quarantine set's decision: an
  identity set's decides a name);
- a fact's value never changes in place (DESIGN invariant 7: a changed value is a new
  version, never a reinforcement);
- a dry run writes nothing (facts, sets, audit trail, jobs);
- every history ends by replaying every job (`Memory.replay`, then a consolidation), which
  changes no fact and no set (DESIGN invariant 4);
- no job fails, no consolidation, dedupe or prune reports an error, no step raises;
- events are never changed;
- an open identity set and an open set of memories hold only live facts (a value or
  quarantine set may hold the version a late claim was held against, by design), and no
  open set holds a value turned down (retracted, a candidate a decision did not keep, or a
  version a person's decision emptied).

What the search found, run by run, and what each finding changed: scripts/hygiene_record.md
(tests/unit/test_hygiene_histories.py replays every seed named there).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from datetime import datetime
from typing import Any

from distill import Memory
from distill.core.models import ConflictKind, Fact, FactKind, FactStatus, Resolver

AUTOMATIC = {"consolidate", "replay", "dedupe", "prune", "summarise", "judge", "judge_identities"}
AUTOMATIC |= {"derive"}


class Violation(Exception):
    def __init__(self, invariant: str, message: str) -> None:
        super().__init__(message)
        self.invariant = invariant


def every_fact(mem: Memory) -> list[Fact]:
    return sorted(mem.facts(include_retired=True), key=lambda f: f.id)


def check_state(mem: Memory, facts: dict[str, Fact]) -> None:
    """Receipts, one active state fact per identity, one value at a time, live open sets."""
    active: dict[tuple[str, str], str] = {}
    for f in facts.values():
        if f.status is FactStatus.SUPERSEDED and (f.superseded_by not in facts or not f.retired_at):
            raise Violation("receipts", f"{f.id} superseded by {f.superseded_by}, no receipt")
        if f.status is FactStatus.RETRACTED and not (
            f.retired_at
            and any(
                (e.after or {}).get("status") == FactStatus.RETRACTED.value and e.reason
                for e in mem.store.audit_for(f.project, f.id)
            )
        ):
            raise Violation("receipts", f"{f.id} retracted without its audit entry")
        if f.status is FactStatus.ACTIVE and f.kind is FactKind.STATE:
            other = active.setdefault((f.subject, f.identity_key or ""), f.id)
            if other != f.id:
                raise Violation("one active fact", f"{other} and {f.id}: {f.identity_key}")
    one_value_at_a_time(facts.values())
    for cs in mem.conflicts(status="open"):
        for m in cs.member_ids:  # a value turned down, or retracted, is no question
            if m in facts and turned_down(mem, facts[m]):
                raise Violation("live open sets", f"open {cs.kind} set holds {m}, turned down")
        # A value set may hold the version a late claim was held against (history a person
        # decides about); an identity set asks about current versions, memories have none.
        if cs.kind is ConflictKind.IDENTITY or cs.identity_key is None:
            for m in cs.member_ids:
                if m not in facts or not facts[m].live:
                    status = facts[m].status.value if m in facts else "missing"
                    raise Violation("live open sets", f"open {cs.kind} set holds {m}, {status}")
                held = facts[m].status is FactStatus.CANDIDATE and cs.kind is ConflictKind.IDENTITY
                current = active.get((facts[m].subject, facts[m].identity_key or ""))
                if held and current is not None and current not in cs.member_ids:
                    raise Violation(
                        "live open sets", f"open identity set holds {m}, held back for {current}"
                    )


def turned_down(mem: Memory, fact: Fact) -> bool:
    """Retracted, or retired never true by a decision: a candidate not kept, or a version a
    person's decision emptied (a kept value began before it): a value nobody holds. A
    version of one instant, or one filed into history with an empty interval, is never
    true too, and a set may still weigh a late claim against it, also when it was a
    candidate a person kept into history that a later claim of its instant emptied (seed
    1419327: the earlier of two versions of one instant, until session 52 counted here)."""
    if fact.status is FactStatus.RETRACTED:
        return True
    if fact.status is not FactStatus.SUPERSEDED or not fact.never_true:
        return False
    held, retired = FactStatus.CANDIDATE.value, FactStatus.SUPERSEDED.value
    for e in mem.store.audit_for(fact.project, fact.id):
        before, after = e.before or {}, e.after or {}
        emptied = after.get("valid_to") is not None and (
            datetime.fromisoformat(str(after["valid_to"])) <= fact.valid_from
        )
        not_kept = before.get("status") == held and after.get("status") == retired
        if emptied and (not_kept or e.pass_name == "api"):
            return True
    return False


def one_value_at_a_time(facts: Any) -> None:
    """DESIGN invariant 8: the versions of one identity ever true (active, or superseded
    with a non-empty interval) never overlap in world time."""
    spans: dict[tuple[str, str], list[Fact]] = defaultdict(list)
    for f in facts:
        never = f.valid_to is not None and f.valid_to <= f.valid_from
        true = f.status in (FactStatus.ACTIVE, FactStatus.SUPERSEDED)
        if f.kind is FactKind.STATE and f.identity_key and true and not never:
            spans[(f.subject, f.identity_key)].append(f)
    for versions in spans.values():
        versions.sort(key=lambda f: f.valid_from)
        for a, b in itertools.pairwise(versions):
            if a.valid_to is None or a.valid_to > b.valid_from:
                overlap = f"{a.identity_key}: {line(a)} overlaps {line(b)}"
                raise Violation("one value at a time", overlap)


def stated_ends(f: Fact, events: dict[str, Any]) -> set[datetime]:
    """The ends the claims of `f`'s events stated."""
    claims = [c for e in f.source_event_ids for c in events[e]["claims"]]
    return {c["valid_to"] for c in claims if c.get("valid_to") is not None}


def merged_into(mem: Memory, f: Fact, by: Fact) -> bool:
    """`f`, an empty receipt, taken into its restatement `by` (one version, not a
    displacement: `RaisedTrust._rejoined`), whatever `by` became later."""
    return f.valid_to == f.valid_from and any(
        e.action == "merge_fact" and (e.after or {}).get("superseded_by") == by.id
        for e in mem.store.audit_for(f.project, f.id)
    )


def line(f: Fact) -> str:
    """A fact in a line: id, value, status, interval (month-day), successor, trust."""
    end = f.valid_to and f"{f.valid_to:%m-%d}"
    return (
        f"{f.id} {f.predicate or f.kind.value} {f.value or repr(f.text)} {f.status.value} "
        f"[{f.valid_from:%m-%d}, {end}) by={f.superseded_by} {f.trust.value}" + " pinned" * f.pinned
    )


def written(mem: Memory) -> list[list[dict[str, Any]]]:
    """Everything a dry run must leave as it was."""
    rows: list[Any] = [
        mem.facts(include_retired=True),
        mem.conflicts(status=None),
        mem.audit(limit=10**6),
        mem.jobs(),
    ]
    return [[x.model_dump() for x in part] for part in rows]


def check_step(
    mem: Memory,
    kind: str,
    p: dict[str, Any],
    before: dict[str, Fact],
    deleted: set[str],
    dry_before: Any,
    events: dict[str, Any],
    accepted: set[str],
) -> dict[str, Fact]:
    """The checks after one step: nothing lost, pinned facts, dry runs, jobs, events, and
    `check_state`. The facts as they are now. `accepted` gathers the events behind facts a
    person made active (their statements may be served, however trusted)."""
    facts = {f.id: f for f in mem.facts(include_retired=True)}
    if kind not in AUTOMATIC:
        for i, f in facts.items():
            if f.status is FactStatus.ACTIVE and not (
                i in before and before[i].status is FactStatus.ACTIVE
            ):
                accepted.update(f.source_event_ids)
    gone = set(before) - set(facts)
    if gone != deleted:
        raise Violation(
            "nothing lost", f"{kind} deleted {sorted(gone)}, reported {sorted(deleted)}"
        )
    if lost := [g for g in gone if before[g].live or before[g].pinned]:
        raise Violation("nothing lost", f"prune deleted live or pinned {lost}")
    if kind in AUTOMATIC:
        for i, f in before.items():
            if f.pinned and (i not in facts or facts[i] != f):
                raise Violation("pinned unchanged", f"{kind} changed pinned {i}")
        for i, f in facts.items():
            was = before.get(i)
            # Served on a statement an untrusted source made and no person accepted alone.
            backing = [
                e for e in f.source_event_ids if events[e]["trust"] != "untrusted" or e in accepted
            ]
            if (
                f.status is FactStatus.ACTIVE
                and not backing
                and not (was is not None and was.status is FactStatus.ACTIVE)
            ):
                raise Violation("untrusted never served", f"{kind} made {line(f)} active")
        # Votes count alike whatever their source (README, "Votes and drift"); a summary
        # consumes what it sums up (with the least trust of it), it contradicts nothing.
        for i, f in facts.items() if kind not in ("derive", "summarise") else ():
            was = before.get(i)
            by = facts.get(f.superseded_by or "")
            if (
                was is not None
                and was.status is FactStatus.ACTIVE
                and f.status is FactStatus.SUPERSEDED
                and by is not None
                and not by.pinned  # a person's choice
                and by.trust.rank < f.trust.rank
                # one that follows a gap, or the end the fact's own statements gave it,
                # replaces nothing
                and not (f.valid_to is not None and f.valid_to < by.valid_from)
                and not (f.valid_to is not None and f.valid_to in stated_ends(f, events))
                and not merged_into(mem, f, by)
            ):
                raise Violation("less trusted displaces nothing", f"{line(f)} by {line(by)}")
        # A value a person kept is never held again by a rule (an identity set's decision
        # is about a name: its kept fact may be held against a value said since).
        for cs in mem.conflicts(status="resolved"):
            kept = facts.get(cs.kept_fact_id or "")
            was = before.get(cs.kept_fact_id or "")
            if (
                cs.resolved_by is not Resolver.CLAIM
                and cs.kind is not ConflictKind.IDENTITY
                and kept is not None
                and kept.status is FactStatus.CANDIDATE
                and was is not None
                and was.status is not FactStatus.CANDIDATE
            ):
                raise Violation("decisions stand", f"{kind} held {line(kept)}, kept in {cs.id}")
    for i, f in facts.items():
        if i in before and before[i].value != f.value:
            raise Violation("a value never changes", f"{kind}: {line(before[i])} → {line(f)}")
    if dry_before is not None and written(mem) != dry_before:
        raise Violation("dry runs write nothing", f"a dry {kind} wrote")
    failed = [j.error for j in mem.jobs() if j.status.value == "failed"]
    if failed or mem.status().counts.failed_jobs:
        raise Violation("no failed job", f"after {kind}: {failed}")
    if {e.id: e.model_dump() for e in mem.events(list(events))} != events:
        raise Violation("events unchanged", f"events changed after {kind}")
    check_state(mem, facts)
    return facts
