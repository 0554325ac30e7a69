"""Events in, memories out: `POST /v1/events`, the `/v1/memories` resource (search, list, one
fact, its history, its evidence, pin, unpin, retract) and `POST /v1/context`.

Every handler is a plain function: FastAPI runs it on a thread of its pool, where `Memory`
(one connection per thread) does the work. Each names its project through `Project`, from
the key; an id or a subject of another project is `NotFound`, as one that does not exist.
"""

from __future__ import annotations

import base64
import binascii
from typing import Annotated

from fastapi import APIRouter, Depends, Request

from distill.core.models import Fact, normalise_subject
from distill.errors import BacklogFull, InvalidInput, NotFound
from distill.service.http.auth import Project
from distill.service.http.schemas import (
    Accepted,
    ContextBody,
    ContextOut,
    EventBatch,
    EventBody,
    Evidence,
    FactPage,
    HistoryOut,
    Hits,
    ListBody,
    RetractBody,
    SearchBody,
)
from distill.service.http.state import Service, service

router = APIRouter(prefix="/v1")
Svc = Annotated[Service, Depends(service)]


def known_subject(svc: Service, project: str, subject: str | None) -> str | None:
    """The subject as stored, or `NotFound` when the project holds nothing of it: a subject
    of another project reads as one that never existed (an empty answer would say no more,
    but the same 404 everywhere is simpler to check)."""
    if subject is None:
        return None
    stored = normalise_subject(subject)
    if not stored:
        raise InvalidInput("subject: is blank; leave it out for every subject")
    if not svc.keys.subject_known(project, stored):
        raise NotFound(f"no subject {stored!r} in project {project!r}")
    return stored


@router.post("/events", status_code=202, tags=["events"])
def add_events(
    body: EventBody | EventBatch, project: Project, svc: Svc, request: Request
) -> Accepted:
    """Add one event, or a batch as `{"events": [...]}` (validated whole: all or none are
    stored). Answers at once with the ids; consolidation runs in the background, once the
    subject has 20 new events or its oldest waited 15 minutes (`[worker]` in the
    configuration); meanwhile `/v1/context` shows them as not consolidated yet. When the
    project's backlog is full, 429 with `Retry-After`: nothing of the request was stored."""
    items = body.events if isinstance(body, EventBatch) else [body]
    try:
        added = svc.memory.append(
            [
                {**e.model_dump(exclude_unset=True, exclude_none=True), "project": project}
                for e in items
            ]
        )
    except BacklogFull:  # 429 with Retry-After (`errors`); counted here, where it is known
        request.app.state.metrics.refused.inc(len(items))
        raise
    before = [e.id for e, old in zip(added.events, added.already_stored, strict=True) if old]
    counter = request.app.state.metrics.events
    counter.labels("new").inc(len(added.events) - len(before))
    counter.labels("already").inc(len(before))
    return Accepted(ids=[e.id for e in added.events], already_stored=before)


@router.post("/memories/search", tags=["memories"])
def search(body: SearchBody, project: Project, svc: Svc) -> Hits:
    """Facts served now (or true `as_of`, or believed `known_at`) that answer `query`, best
    first, each with its score, its dates, its evidence and whether it is contested."""
    subject = known_subject(svc, project, body.subject)
    hits = svc.memory.search(
        body.query,
        subject=subject,
        project=project,
        as_of=body.as_of,
        known_at=body.known_at,
        limit=body.limit,
        kinds=[k.value for k in body.kinds] if body.kinds is not None else None,
        include=body.include,
    )
    return Hits.model_validate({"results": [h.to_dict() for h in hits]})


@router.post("/memories/list", tags=["memories"])
def list_memories(body: ListBody, project: Project, svc: Svc) -> FactPage:
    """Facts by filters, a page at a time in id order: pass `next_cursor` back as `cursor`."""
    subject = known_subject(svc, project, body.subject)
    found = svc.memory.facts(
        subject,
        project,
        include_retired=body.include_retired,
        as_of=body.as_of,
        known_at=body.known_at,
    )
    if body.kinds is not None:
        found = [f for f in found if f.kind in body.kinds]
    found.sort(key=lambda f: f.id)
    if body.cursor is not None:
        after = _read_cursor(body.cursor)
        found = [f for f in found if f.id > after]
    page = found[: body.limit]
    more = len(found) > body.limit
    return FactPage(results=page, next_cursor=_cursor(page[-1].id) if more else None)


def _cursor(fact_id: str) -> str:
    return base64.urlsafe_b64encode(fact_id.encode()).decode().rstrip("=")


def _read_cursor(cursor: str) -> str:
    padded = cursor + "=" * (-len(cursor) % 4)
    try:
        after = base64.b64decode(padded, altchars=b"-_", validate=True).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        after = ""
    if not after:
        raise InvalidInput("cursor: not one this API gave; pass next_cursor as it came")
    return after


@router.get("/memories/{fact_id}", tags=["memories"])
def get_memory(fact_id: str, project: Project, svc: Svc) -> Fact:
    """One fact, by its id or a unique prefix of it (4 characters or more)."""
    return svc.memory.fact(fact_id, project)


@router.get("/memories/{fact_id}/history", tags=["memories"])
def history(fact_id: str, project: Project, svc: Svc) -> HistoryOut:
    """A fact's life: every version of its identity, what was observed, every audit entry."""
    found = svc.memory.history(fact_id, project)
    return HistoryOut(
        fact=found.fact,
        versions=found.versions,
        observations=found.observations,
        audit=found.audit,
    )


@router.get("/memories/{fact_id}/evidence", tags=["memories"])
def evidence(fact_id: str, project: Project, svc: Svc) -> Evidence:
    """The events a fact came from."""
    fact = svc.memory.fact(fact_id, project)
    return Evidence(events=svc.memory.events(fact.source_event_ids, project))


@router.post("/memories/{fact_id}/pin", tags=["memories"])
def pin(fact_id: str, project: Project, svc: Svc) -> Fact:
    """Pin a fact: automatic consolidation never changes it."""
    return svc.memory.pin(fact_id, project=project)


@router.delete("/memories/{fact_id}/pin", tags=["memories"])
def unpin(fact_id: str, project: Project, svc: Svc) -> Fact:
    return svc.memory.unpin(fact_id, project=project)


@router.post("/memories/{fact_id}/retract", tags=["memories"])
def retract(fact_id: str, body: RetractBody, project: Project, svc: Svc) -> Fact:
    """Retire a wrong fact: never served again, the reason kept in the audit, nothing
    deleted (erase deletes)."""
    return svc.memory.retract(fact_id, body.reason, project=project)


@router.post("/context", tags=["memories"])
def context(body: ContextBody, project: Project, svc: Svc) -> ContextOut:
    """The block an agent puts in its prompt about a subject, within `budget_tokens`: as
    `text`, and the same facts as data; a contested fact is shown with its rivals."""
    subject = known_subject(svc, project, body.subject)
    assert subject is not None
    block = svc.memory.context(
        subject,
        query=body.query,
        project=project,
        as_of=body.as_of,
        known_at=body.known_at,
        budget_tokens=body.budget_tokens,
    )
    return ContextOut.model_validate(block.to_dict())
