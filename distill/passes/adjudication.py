"""The adjudication pass: a job's candidates against the subject's facts.

`load` gathers, under the subject's lock, everything `core.adjudicate.Adjudicator` may look
at: the facts of every identity a candidate could mean (its predicate, the predicates it is
a learned alias of, and the nearest active facts by meaning), the active facts a qualified
or unqualified claim could contradict, the live memories with the same normalised text, the
facts that already cite the job's events (a replay is a duplicate), the open conflicts of
those identities with all their members, what was already observed, and when each reinforced
version's supporting events were believed. Every kind of row is one store call, whatever the
number of candidates; the facts a first round of reads points at (nearest neighbours, conflict
members) are read in one more batched call each.

`decide` is the adjudicator itself, pure; its tests (tests/unit) run on snapshots they build.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from distill.core.adjudicate import NEIGHBOURS, Adjudicator
from distill.core.identity import (
    content_hash,
    identity_key,
    identity_text,
    normalise_text,
    split_qualifiers,
)
from distill.core.models import Event, Fact, FactKind, FactStatus
from distill.core.passes import Context, PassResult, Scope
from distill.core.plan import Rejection
from distill.core.working import Candidate, Neighbourhood, Snapshot, Support
from distill.ports import Store, Vector


def identity_text_of(c: Candidate) -> str | None:
    """The text embedded to match a state candidate by meaning, if it is one."""
    if c.claim.predicate and c.claim.resolved_kind is FactKind.STATE:
        return identity_text(c.claim.predicate, c.claim.value)
    return None


@dataclass(frozen=True)
class JobWork:
    """What a job brings to adjudication: its events, their accepted candidates, what the
    extractors rejected, and the identity vectors of the candidates (by identity text)."""

    events: Sequence[Event]
    candidates: Sequence[Candidate]
    rejections: Sequence[Rejection] = ()
    vectors: dict[str, Vector] = field(default_factory=dict)
    vector_model: str | None = None


@dataclass(frozen=True)
class AdjudicationSnapshot:
    state: Snapshot
    candidates: Sequence[Candidate]
    rejections: Sequence[Rejection]


class Adjudication:
    """`distill.passes.Pass` for adjudication (see the module docstring)."""

    name = "adjudicate"
    cap: int | None = None  # a job is decided whole, or not at all

    def __init__(self, max_distance: float | None = None) -> None:
        """`max_distance`: the embedder's calibrated semantic-match threshold; None (an
        uncalibrated embedder) matches by exact predicate and learned aliases only."""
        self.max_distance = max_distance

    def decide(self, snapshot: AdjudicationSnapshot, context: Context) -> PassResult:
        adjudicator = Adjudicator(snapshot.state, context.now, context.new_id, self.max_distance)
        plan = adjudicator.run(snapshot.candidates)
        plan.rejections.extend(snapshot.rejections)
        return PassResult(plan, adjudicator.decisions)

    def load(self, store: Store, scope: Scope, work: JobWork) -> AdjudicationSnapshot:
        project, subject = scope.project, scope.subject
        candidates = work.candidates
        identity = {t: work.vectors[t] for t in map(identity_text_of, candidates) if t is not None}
        predicates = {c.claim.predicate for c in candidates if c.claim.predicate}
        aliases = store.aliases(project, sorted(predicates))
        keys: set[str] = set()
        for c in candidates:
            if not c.claim.predicate:
                continue
            qualifiers, _ = split_qualifiers(c.claim.qualifiers)
            for predicate in (
                c.claim.predicate,
                *(a.canonical for a in aliases.values() if a.alias == c.claim.predicate),
            ):
                keys.add(identity_key(predicate, qualifiers))
                keys.add(identity_key(predicate, {}))

        facts: dict[str, Fact] = {}
        neighbours: dict[str, Neighbourhood] = {}
        # Without a threshold nothing is matched by meaning: the neighbours would go unused.
        if identity and work.vector_model is not None and self.max_distance is not None:
            texts = sorted(identity)
            matrix = np.stack([identity[t] for t in texts])
            found = store.nearest_facts(project, subject, matrix, NEIGHBOURS, work.vector_model)
            for text, hood in zip(texts, found, strict=True):
                neighbours[text] = Neighbourhood(
                    tuple(n.fact_id for n in hood), tuple(n.distance for n in hood)
                )
            near = sorted({n.fact_id for hood in found for n in hood})
            for fact in store.facts_by_ids(project, near):
                facts[fact.id] = fact
                if fact.identity_key:
                    keys.add(fact.identity_key)
        for fact in store.facts_by_identity(project, subject, sorted(keys)):
            facts[fact.id] = fact
        # An unqualified claim contradicts a qualified fact of the same predicate.
        unqualified = sorted(
            {
                c.claim.predicate
                for c in candidates
                if c.claim.predicate and not split_qualifiers(c.claim.qualifiers)[0]
            }
        )
        for fact in store.active_facts_by_predicate(project, subject, unqualified):
            facts[fact.id] = fact
        norms = sorted(
            {
                content_hash(normalise_text(c.claim.text or ""))
                for c in candidates
                if c.claim.resolved_kind is FactKind.MEMORY
            }
        )
        for fact in store.memories_by_norm(project, subject, norms):
            facts[fact.id] = fact
        event_ids = [e.id for e in work.events]
        for fact in store.facts_with_sources(project, subject, event_ids):
            facts[fact.id] = fact
        support = _support(store, facts)
        conflicts = {c.id: c for c in store.open_conflicts_for(project, subject, sorted(keys))}
        members = {m for c in conflicts.values() for m in c.member_ids} - facts.keys()
        for fact in store.facts_by_ids(project, sorted(members)):
            facts[fact.id] = fact
        state = Snapshot(
            project=project,
            subject=subject,
            facts=facts,
            aliases=dict(aliases),
            conflicts=conflicts,
            seen=store.seen_claims(event_ids),
            vectors=identity,
            neighbours=neighbours,
            vector_model=work.vector_model,
            support=support,
        )
        return AdjudicationSnapshot(state, candidates, work.rejections)


def _support(store: Store, facts: dict[str, Fact]) -> dict[str, tuple[Support, ...]]:
    """When and how far each reinforced version's supporting events were believed."""
    reinforced = [
        f
        for f in facts.values()
        if f.kind is FactKind.STATE
        and f.status in (FactStatus.ACTIVE, FactStatus.SUPERSEDED)
        and f.reinforcement_count
    ]
    if not reinforced:
        return {}
    chain = {f.identity_key for f in reinforced}
    versions = {f.id for f in facts.values() if f.identity_key in chain}
    events = sorted({e for f in reinforced for e in f.source_event_ids})
    found: dict[str, Support] = {}
    for o in store.observations_for_events(events):
        if o.fact_id in versions and o.event_id not in found:
            found[o.event_id] = Support(o.event_id, o.claim.valid_from or o.occurred_at, o.trust)
    return {f.id: tuple(found[e] for e in f.source_event_ids if e in found) for f in reinforced}
