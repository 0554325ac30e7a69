"""What a person reviews and decides: conflicts (list, resolve), the audit trail, status,
erase; and `POST /v1/consolidate`, which runs every project's due jobs (admin keys only).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query

from distill.core.models import AuditEntry, ConflictSet
from distill.errors import InvalidInput
from distill.service.http.auth import Admin, Project
from distill.service.http.routes_memories import known_subject
from distill.service.http.schemas import (
    AUDIT_LIMIT,
    MAX_AUDIT_LIMIT,
    ConsolidateBody,
    EraseBody,
    Erased,
    ResolveBody,
)
from distill.service.http.state import Service, service

router = APIRouter(prefix="/v1")
Svc = Annotated[Service, Depends(service)]


@router.get("/conflicts", tags=["conflicts"])
def conflicts(
    project: Project,
    svc: Svc,
    subject: str | None = None,
    status: Literal["open", "resolved", "reclassified", "all"] = "open",
) -> list[ConflictSet]:
    """Conflict sets (two values for one attribute), quarantined claims and identity
    questions, open ones by default."""
    stored = known_subject(svc, project, subject)
    return svc.memory.conflicts(stored, project, status=None if status == "all" else status)


@router.post("/conflicts/{conflict_id}/resolve", tags=["conflicts"])
def resolve(conflict_id: str, body: ResolveBody, project: Project, svc: Svc) -> ConflictSet:
    """Keep one member (`keep`); the others are superseded by it. Without `keep`, every
    held candidate is rejected."""
    return svc.memory.resolve_conflict(conflict_id, keep=body.keep, project=project)


@router.get("/audit", tags=["audit"])
def audit(
    project: Project,
    svc: Svc,
    subject: str | None = None,
    limit: Annotated[int, Query(ge=1, le=MAX_AUDIT_LIMIT)] = AUDIT_LIMIT,
) -> list[AuditEntry]:
    """The latest audit entries, oldest first: what was done, by which pass, and why."""
    stored = known_subject(svc, project, subject)
    return svc.memory.audit(subject=stored, project=project, limit=limit)


@router.get("/status", tags=["admin"])
def status(project: Project, svc: Svc) -> dict[str, Any]:
    """Counts of the project's events, facts, jobs and open conflicts; failed jobs."""
    found = svc.memory.status(project).to_dict()
    found.pop("database")  # where the server keeps its data is not a client's business
    return {"project": project, **found}


@router.post("/erase", tags=["admin"])
def erase(body: EraseBody, project: Project, svc: Svc) -> Erased:
    """Forget a subject (or, with `all_subjects`, the whole project) for good: events,
    facts, vectors, observations, conflicts, jobs and audit entries are deleted; one audit
    entry with the counts remains. Cannot be undone."""
    if (body.subject is None) == (not body.all_subjects):
        raise InvalidInput('give "subject", or "all_subjects": true for the whole project')
    subject = known_subject(svc, project, body.subject)
    counts = svc.memory.erase(project, subject)
    return Erased(project=project, subject=subject, erased=counts)


@router.post("/consolidate", tags=["admin"])
def consolidate(body: ConsolidateBody, who: Admin, svc: Svc) -> dict[str, Any]:
    """Run every pending job of every project now, whatever the worker's trigger would wait
    for (the background worker does it in time anyway); with `dry_run`, the plan without
    writing. Admin keys only."""
    return svc.memory.consolidate(dry_run=body.dry_run).to_dict()
