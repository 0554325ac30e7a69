"""The one validator every plan goes through before the store writes it.

A pass can be wrong; this is where the invariants are enforced for all of them: scope, pinned
facts, one active fact per identity, receipts for everything that leaves the live set, and
rules that are one line, stated once, and promoted only from memories the pass offered;
prunes of tombstones only (never a live or a pinned fact).
The store's partial unique index is the second line of defence, not the first.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from distill.core.audit_trail import stored
from distill.core.cortex_plan import CORTEX_ACTIONS
from distill.core.models import (
    AuditEntry,
    ConflictStatus,
    Fact,
    FactKind,
    FactStatus,
    Resolver,
    RuleOrigin,
)
from distill.core.passes import Scope
from distill.core.plan import (
    Action,
    AddRule,
    CreateFact,
    EraseScope,
    MarkFacts,
    Plan,
    PruneFact,
    RecordObservation,
    ReviseConflict,
    ReviseFact,
    subject_of,
)
from distill.core.rules import fingerprint, text_problem
from distill.errors import IntegrityViolation, PinnedFact

# Passes that act for a person through the API; everything else is automatic.
USER_PASSES = frozenset({"api"})
# The only field a person may change on a pinned fact: the pin itself.
_PIN_FIELDS = frozenset({"pinned"})
# What keeping a held, pinned candidate in a conflict changes: it becomes the active fact.
_KEEP_FIELDS = frozenset({"pinned", "status", "supersedes_id"})


def validate(plan: Plan, project: str, subject: str | None) -> None:
    """Raise if applying `plan` would break an invariant. Pure: looks only at the plan.
    `subject` None allows any subject of the project."""
    final: dict[str, Fact] = {}
    fingerprints: set[tuple[str, str, str]] = set()
    for action in plan.actions:
        p, s = subject_of(action)
        if p != project or (subject is not None and s and s != subject):
            raise IntegrityViolation(
                f"{action.name} writes to {p}/{s}, outside the scope {project}/{subject}"
            )
        if isinstance(action, EraseScope) and action.subject is None and subject:
            raise IntegrityViolation(f"erasing project {p} needs the whole project's scope")
        if isinstance(action, CreateFact):
            final[action.fact.id] = action.fact
        elif isinstance(action, ReviseFact):
            _check_revision(action)
            final[action.after.id] = action.after
        elif isinstance(action, ReviseConflict):
            _check_closing(action)
        elif isinstance(action, PruneFact):
            _check_prune(action)
            final.pop(action.fact.id, None)
        elif isinstance(action, CORTEX_ACTIONS):
            action.check()
        elif isinstance(action, MarkFacts):
            marked = [m.fact_id for m in action.marks]
            if len(set(marked)) != len(marked):
                raise IntegrityViolation(f"plan marks a fact twice for {action.mark_pass}")
        elif isinstance(action, AddRule):
            _check_rule(action)
            rule = action.rule
            key = (rule.project, rule.subject, rule.fingerprint)
            if key in fingerprints:
                raise IntegrityViolation(f"plan adds rule {rule.text!r} twice")
            fingerprints.add(key)
    active: dict[str, str] = {}
    for fact in final.values():
        if fact.kind is FactKind.STATE and fact.status is FactStatus.ACTIVE and fact.identity_key:
            other = active.setdefault(fact.identity_key, fact.id)
            if other != fact.id:
                raise IntegrityViolation(
                    f"plan leaves two active facts for identity {fact.identity_key!r}: "
                    f"{other} and {fact.id}"
                )
        if fact.status is FactStatus.SUPERSEDED and not fact.superseded_by:
            raise IntegrityViolation(f"fact {fact.id} is superseded without a receipt")


def _check_closing(action: ReviseConflict) -> None:
    """An open set names nobody as its closer; a set a plan closes names who did, and only a
    person's pass names a person, so a person's decision is never mistaken for a claim's.
    Only a claim's resolution is reopened by what a later claim shows
    (`Splits._adoption_undone`): a person's or the judge's stands."""
    before, after = action.before, action.after
    if after.status is ConflictStatus.OPEN:
        if after.resolved_by is not None:
            raise IntegrityViolation(f"conflict {after.id} is open and names a closer")
        if before.status is not ConflictStatus.OPEN and before.resolved_by is not Resolver.CLAIM:
            raise IntegrityViolation(
                f"conflict {after.id} was closed by a {before.resolved_by or 'pass'}: the "
                f"{action.pass_name} pass may not reopen it"
            )
        return
    if before.status is not ConflictStatus.OPEN:
        return
    if after.resolved_by is None:
        raise IntegrityViolation(f"conflict {after.id} is closed without naming who closed it")
    if (after.resolved_by is Resolver.PERSON) != (action.pass_name in USER_PASSES):
        raise IntegrityViolation(
            f"conflict {after.id}: the {action.pass_name} pass may not close it as "
            f"{after.resolved_by.value}"
        )


def _check_revision(action: ReviseFact) -> None:
    before, after = action.before, action.after
    if before.id != after.id or (before.project, before.subject) != (after.project, after.subject):
        raise IntegrityViolation(f"a revision may not move fact {before.id} to another scope")
    if before.pinned and action.pass_name not in USER_PASSES:
        raise PinnedFact(
            f"fact {before.id} is pinned; the {action.pass_name} pass may not change it"
        )
    if before.pinned and action.pass_name in USER_PASSES:
        changed = {k for k in type(before).model_fields if getattr(before, k) != getattr(after, k)}
        allowed = _PIN_FIELDS
        if action.op == "resolve" and after.status is FactStatus.ACTIVE:
            allowed = _KEEP_FIELDS  # a person kept this pinned fact in a conflict
        if changed - allowed:
            raise PinnedFact(f"fact {before.id} is pinned; unpin it before changing it")


def _check_prune(action: PruneFact) -> None:
    """A prune deletes a tombstone, never a live or a pinned fact, and never for a person:
    a person's delete is an erase. Whether its weight is below the floor is the pass's
    decision (`core.decay`), not an invariant."""
    fact = action.fact
    if fact.live or fact.status not in (FactStatus.SUPERSEDED, FactStatus.RETRACTED):
        raise IntegrityViolation(f"fact {fact.id} is {fact.status}: only a tombstone is pruned")
    if fact.pinned:
        raise PinnedFact(f"fact {fact.id} is pinned; the {action.pass_name} pass may not prune it")
    if action.pass_name in USER_PASSES:
        raise IntegrityViolation(f"fact {fact.id}: a person forgets by erasing, not pruning")


def _check_rule(action: AddRule) -> None:
    rule = action.rule
    problem = text_problem(rule.text)
    if problem is not None or rule.text != rule.text.strip():
        detail = problem[1] if problem else "it has spaces around it"
        raise IntegrityViolation(f"rule {rule.id} is not a rule's text: {detail}")
    if rule.fingerprint != fingerprint(rule.text):
        raise IntegrityViolation(f"rule {rule.id}'s fingerprint is not its text's")
    by_person = action.pass_name in USER_PASSES
    if rule.origin is RuleOrigin.WRITTEN:
        if not by_person or rule.source_fact_ids:
            raise IntegrityViolation(
                f"rule {rule.id}: only a person writes a rule, and it cites no memory"
            )
        return
    if by_person:
        raise IntegrityViolation(f"rule {rule.id}: a person's rule is a written one")
    unoffered = set(rule.source_fact_ids) - set(action.offered)
    if not rule.source_fact_ids or unoffered:
        raise IntegrityViolation(
            f"rule {rule.id} must be promoted from memories the {action.pass_name} pass "
            f"offered (not offered: {sorted(unoffered) or 'none cited'})"
        )


def _fact_of(action: Action) -> str | None:
    """The fact an action's audit entry is about, if it is about one fact."""
    if isinstance(action, CreateFact | PruneFact):
        return action.fact.id
    if isinstance(action, ReviseFact):
        return action.after.id
    if isinstance(action, RecordObservation):
        return action.observation.fact_id
    return None  # conflicts, aliases, erasures, cursors, marks, rules, cycles, cortex


def audit_entries(
    plan: Plan, scope: Scope, job_id: str | None, now: datetime, new_id: Callable[[], str]
) -> list[AuditEntry]:
    """One entry per action: who (pass, job), what (before/after), why (reason); then one per
    rejected candidate, so that what was refused is as traceable as what was written. Before
    and after keep what changed, not copies of rows (see `audit_trail`)."""
    entries = []
    for action in plan.actions:
        before, after = stored(action)
        project, subject = subject_of(action)
        fact_id = _fact_of(action)
        entries.append(
            # Validated, though its parts already were: pydantic's validator (in Rust) builds
            # this model in about half the time `model_construct` (Python) takes.
            AuditEntry(
                id=new_id(),
                project=project,
                subject=subject,
                job_id=job_id,
                pass_name=action.pass_name,
                action=action.name,
                reason=action.reason,
                fact_id=fact_id,
                before=before,
                after=after,
                at=now,
            )
        )
    for r in plan.rejections:
        entries.append(
            AuditEntry(
                id=new_id(),
                project=scope.project,
                subject=scope.subject,
                job_id=job_id,
                pass_name="extract",
                action="reject_candidate",
                reason=f"{r.reason}: {r.detail}",
                fact_id=None,
                before=None,
                after={"event_id": r.event_id, "extractor": r.extractor, "candidate": r.candidate},
                at=now,
            )
        )
    return entries
