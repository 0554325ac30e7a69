"""The adjudication pass: a job's candidates against the subject's facts.

`load` gathers, under the subject's lock, everything `core.adjudicate.Adjudicator` may look
at: the facts of every identity a candidate could mean (its predicate, the fact its extractor
says it updates, the predicates it is a learned alias of), the subject's active state facts
when a candidate's predicate is new (any of them may be that attribute under another name;
`core.attribute_match` judges each, with the cached embeddings of their names), the active
facts a qualified or unqualified claim could contradict, the live memories with the same
normalised text, the facts that already cite the job's events (a replay is a duplicate), the
open conflicts of those identities with all their members and the subject's open identity
sets, what was already observed, and when each reinforced version's supporting events were
believed. Every kind of row is one store call, whatever the number of candidates; the facts
a first round of reads points at (conflict members) are read in one more batched call.

`decide` is the adjudicator itself, pure; its tests (tests/unit) run on snapshots they build.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from distill.core.adjudicate import Adjudicator
from distill.core.attribute_match import Bands
from distill.core.identity import (
    content_hash,
    identity_key,
    identity_text,
    normalise_text,
    split_qualifiers,
)
from distill.core.models import ConflictKind, ConflictStatus, Event, Fact, FactKind, FactStatus
from distill.core.passes import Context, PassResult, Scope
from distill.core.plan import Rejection
from distill.core.support import Support, support_of
from distill.core.votes import Policies
from distill.core.working import Candidate, Snapshot
from distill.ports import Store, Vector

# A claim under a new predicate is judged against at most this many of the subject's active
# state facts (the most recently reinforced): name matching is a loop over them.
MATCH_FACTS_MAX = 2000


def identity_texts_of(c: Candidate) -> tuple[str, ...]:
    """The texts embedded for a candidate (`Candidate.identity_texts`)."""
    return c.identity_texts


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

    def __init__(self, bands: Bands | None = None, policies: Policies | None = None) -> None:
        """`bands`: the embedder's calibrated distances (`attribute_match.Bands`); empty for
        an uncalibrated embedder, which matches names by their words only. `policies`: the
        predicates whose claims are votes (`core.votes`), left to the derive pass."""
        self.bands = bands or Bands()
        self.policies = policies or Policies()

    def decide(self, snapshot: AdjudicationSnapshot, context: Context) -> PassResult:
        adjudicator = Adjudicator(
            snapshot.state, context.now, context.new_id, self.bands, self.policies
        )
        plan = adjudicator.run(snapshot.candidates)
        plan.rejections.extend(snapshot.rejections)
        return PassResult(plan, adjudicator.decisions)

    def load(self, store: Store, scope: Scope, work: JobWork) -> AdjudicationSnapshot:
        project, subject = scope.project, scope.subject
        candidates = work.candidates
        vectors = {
            t: work.vectors[t]
            for c in candidates
            for t in identity_texts_of(c)
            if t in work.vectors
        }
        predicates = {c.claim.predicate for c in candidates if c.claim.predicate}
        aliases = store.aliases(project, sorted(predicates))
        keys: set[str] = set()
        for c in candidates:
            if not c.claim.predicate:
                continue
            qualifiers, _ = split_qualifiers(c.claim.qualifiers)
            for predicate in (
                c.claim.predicate,
                *([c.claim.updates] if c.claim.updates else []),
                *(a.canonical for a in aliases.values() if a.alias == c.claim.predicate),
            ):
                keys.add(identity_key(predicate, qualifiers))
                keys.add(identity_key(predicate, {}))

        facts: dict[str, Fact] = {}
        for fact in store.facts_by_identity(project, subject, sorted(keys)):
            facts[fact.id] = fact
        # A name resolved into another one: the facts of the identity its last version was
        # superseded by.
        renamed = {f.superseded_by for f in facts.values() if f.superseded_by} - facts.keys()
        moved = {f.identity_key for f in store.facts_by_ids(project, sorted(renamed))}
        for fact in store.facts_by_identity(project, subject, sorted(k for k in moved if k)):
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
        earliest = min(
            (c.claim.valid_from or c.event.occurred_at for c in candidates), default=None
        )
        top = max((c.event.trust.rank for c in candidates), default=0)
        support = _support(store, project, facts, earliest, top)
        known = {f.predicate for f in facts.values() if f.kind is FactKind.STATE}
        # Open sets, and the resolved ones that kept a fact the claims may re-read: a claim
        # dated before a claim's resolution may show it never happened, and one before a
        # person's leaves it as it is (`Splits._adoption_undone`).
        conflicts = {
            c.id: c
            for c in store.conflicts_for(project, subject, sorted(keys))
            if c.status is ConflictStatus.OPEN or c.kept_fact_id in facts
        }
        if any(identity_texts_of(c) for c in candidates):
            # Identity sets name no one identity: the subject's open ones, whatever they hold.
            for cs in store.conflicts(project, subject, ConflictStatus.OPEN):
                if cs.kind is ConflictKind.IDENTITY:
                    conflicts[cs.id] = cs
        members = {m for c in conflicts.values() for m in c.member_ids} - facts.keys()
        for fact in store.facts_by_ids(project, sorted(members)):
            facts[fact.id] = fact
        if any(identity_texts_of(c) and c.claim.predicate not in known for c in candidates):
            for fact in store.active_facts(project, subject, MATCH_FACTS_MAX):
                facts.setdefault(fact.id, fact)
            # A claim dated no later than a fact's current version compares with when its
            # attribute began (`WorkingSet._began`): the earlier versions of those facts.
            assert earliest is not None
            began = {
                key
                for f in facts.values()
                if f.supersedes_id
                and f.status is FactStatus.ACTIVE
                and earliest <= f.valid_from
                and (key := f.identity_key)
            }
            for fact in store.facts_by_identity(project, subject, sorted(began)) if began else ():
                facts.setdefault(fact.id, fact)
            vectors.update(_name_vectors(store, facts.values(), work.vector_model, vectors))
        state = Snapshot(
            project=project,
            subject=subject,
            facts=facts,
            aliases=dict(aliases),
            conflicts=conflicts,
            seen=store.seen_claims(event_ids),
            vectors=vectors,
            vector_model=work.vector_model,
            support=support,
        )
        return AdjudicationSnapshot(state, candidates, work.rejections)


def _support(
    store: Store, project: str, facts: dict[str, Fact], earliest: datetime | None, top: int
) -> dict[str, tuple[Support, ...]]:
    """When, how far and how each reinforced version's (or held candidate's) supporting
    events were believed; and how each live version a claim of the job is dated no later
    than was first stated (a late claim is decided by it: `LateArrivals._began_as_change`);
    and what ended each version that ended after the job's earliest claim, or before a
    reinforced version restated after it (a stated end, or the next version:
    `WorkingSet._stated_end`), or where a version less trusted than it or than the job's
    most trusted claim (`top`, a rank) began. Read from their observations; a job whose
    claims all come after what is known reads no more."""
    # A version restated after the job's earliest claim may be a held value that a change
    # adopted, which that claim undoes (`Splits._adoption_undone`) if the version before
    # it ended where the adoption began, not by an end of its own.
    adopted_from = {
        f.supersedes_id
        for f in facts.values()
        if f.kind is FactKind.STATE
        and f.status is not FactStatus.RETRACTED
        and f.reinforcement_count
        and earliest is not None
        and earliest < f.last_reinforced_at
    }
    chosen = [
        f
        for f in facts.values()
        if f.kind is FactKind.STATE
        and (
            (f.status is not FactStatus.RETRACTED and f.reinforcement_count)
            or f.id in adopted_from
            or (f.live and earliest is not None and earliest <= f.valid_from)
            or (
                f.status is FactStatus.SUPERSEDED
                and earliest is not None
                and f.valid_to is not None
                and earliest < f.valid_to
            )
            or _ended_before_less_trusted(f, facts, top)
        )
    ]
    if not chosen:
        return {}
    chain = {f.identity_key for f in chosen}
    versions = {f.id for f in facts.values() if f.identity_key in chain}
    events = sorted({e for f in chosen for e in f.source_event_ids})
    found: dict[str, Support] = {}
    for o in store.observations_for_events(project, events):
        if o.fact_id in versions and o.event_id not in found:
            at = o.claim.valid_from or o.occurred_at
            found[o.event_id] = support_of(o.event_id, at, o.trust, o.claim)
    return {f.id: tuple(found[e] for e in f.source_event_ids if e in found) for f in chosen}


def _ended_before_less_trusted(fact: Fact, facts: dict[str, Fact], top: int) -> bool:
    """Whether `fact` ended where the version after it began, one less trusted than it or
    than `top` (a rank): whether `fact`'s statements stated that end (then that version
    followed it and replaced nothing, and what follows an end is a first value again) only
    its observations say (`TrustOrder._ended_of_itself`)."""
    following = facts.get(fact.superseded_by or "")
    return (
        fact.status is FactStatus.SUPERSEDED
        and following is not None
        and fact.valid_to == following.valid_from
        and following.trust.rank < max(fact.trust.rank, top)
    )


def _name_vectors(
    store: Store, facts: Iterable[Fact], model: str | None, have: dict[str, Vector]
) -> dict[str, Vector]:
    """The cached embeddings of the known facts' identity texts (read, never computed here:
    a fact's texts were embedded when its claim arrived; one the cache lacks, from a store
    older than name matching, is judged by its words alone)."""
    if model is None:
        return {}
    texts = {
        t
        for f in facts
        if f.predicate and f.status is FactStatus.ACTIVE
        for t in (identity_text(f.predicate), identity_text(f.predicate, f.value))
    } - have.keys()
    hashes = {content_hash(t): t for t in texts}
    cached = store.cached_embeddings(model, sorted(hashes))
    return {hashes[h]: np.asarray(v, dtype=np.float32) for h, v in cached.items()}
