"""The derive pass: each scope's new votes counted into facts (`core.derive`), one cycle per
scope, through the one applier.

Per scope holding votes (observations with outcome `vote`: claims of predicates whose
policy is `vote`, `core.votes`), within a project allowlist or for one subject:

1. **Read and embed, outside the lock.** The votes after the scope's `derive` cursor (at
   most `DERIVE_BATCH`), and the open facts of their identities; their surface forms and
   the identity texts of their values are embedded in one call (cached by text).
2. **Decide and apply, under the lock** (`run_pass`). The same votes are read again (only
   up to the last one embedded: a vote that arrived meanwhile waits for the next cycle),
   with the open facts and the subject's recent invalidations (drift); `core.derive.decide`
   makes the plan: facts created, reinforced, invalidated, the cursor's move past the votes
   read, and the cycle's record (`RecordCycle`, whose audit entry is written even when the
   cycle found nothing). A scope whose plan is refused is rolled back alone.

A vote is read by one cycle only (the cursor moves in the transaction that applies what it
decided); a scope is never given another scope's votes (the store reads by scope, the
validator refuses a plan that writes outside it). `dry_run` decides and reports the same
inside a transaction the store rolls back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from distill.core import drift, timeline
from distill.core.derive import (
    COUNTS,
    DERIVE_BATCH,
    PASS_NAME,
    DeriveResult,
    DeriveSnapshot,
    Group,
    decide,
    follow,
)
from distill.core.identity import identity_key, identity_text, split_qualifiers
from distill.core.models import Fact, FactKind, FactStatus, Observation
from distill.core.passes import Context, Scope
from distill.core.votes import Ballot, surface
from distill.errors import DistillError
from distill.passes import refused, run_pass
from distill.ports import Store, Vector

Embed = Callable[[Sequence[str]], dict[str, Vector]]


@dataclass
class DeriveReport:
    """What one derive run did, or would do (`dry_run`), summed over its scopes."""

    dry_run: bool = False
    scopes: int = 0
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTS, 0))
    capped: list[str] = field(default_factory=list)  # scopes with votes left for next time
    unstable: list[str] = field(default_factory=list)  # project/subject, as cycles left them
    facts: list[Fact] = field(default_factory=list)  # created, re-elected or elected
    errors: list[str] = field(default_factory=list)

    @property
    def processed(self) -> int:
        return self.counts["processed"]

    @property
    def created(self) -> int:
        return self.counts["created"]

    @property
    def reinforced(self) -> int:
        return self.counts["reinforced"]

    @property
    def invalidated(self) -> int:
        return self.counts["invalidated"]

    @property
    def drift_alerts(self) -> int:
        return self.counts["drift_alerts"]

    def to_dict(self) -> dict[str, Any]:
        return {
            "pass": PASS_NAME,
            "dry_run": self.dry_run,
            "scopes": self.scopes,
            **self.counts,
            "capped": self.capped,
            "unstable": self.unstable,
            "facts": [f.model_dump(mode="json") for f in self.facts],
            "errors": self.errors,
        }


@dataclass(frozen=True)
class DeriveWork:
    """What a cycle brings under the lock: its time, the last vote it embedded (None: it
    read none), the vectors, and how to embed a text it lacks."""

    now: datetime
    upto: str | None
    vectors: dict[str, Vector]
    embed: Embed


class DeriveCycle:
    """`distill.passes.Pass` for one derive cycle over one scope."""

    name = PASS_NAME

    def __init__(
        self, max_distance: float | None, vector_model: str | None, cap: int = DERIVE_BATCH
    ) -> None:
        self.max_distance = max_distance
        self.vector_model = vector_model
        self.cap: int | None = cap

    def load(self, store: Store, scope: Scope, work: DeriveWork) -> DeriveSnapshot:
        cursor = store.pass_cursor(scope.project, scope.subject, PASS_NAME)
        assert self.cap is not None
        read = store.votes(scope.project, scope.subject, cursor, self.cap + 1)
        capped = len(read) > self.cap
        read = read[: self.cap]
        if work.upto is not None:
            kept = [o for o in read if o.id <= work.upto]
            capped = capped or len(kept) < len(read)
            read = kept
        else:
            capped, read = capped or bool(read), []
        groups = _named(store, scope, votes_by_identity(read))
        open_facts = _open_facts(store, scope, groups)
        wanted = texts_of(groups, open_facts.values())
        vectors = {t: work.vectors[t] for t in wanted if t in work.vectors}
        missing = sorted(wanted - vectors.keys())
        if missing:  # an open fact changed since the first read: its form, embedded now
            vectors.update(work.embed(missing))
        since = work.now - drift.DRIFT_WINDOW
        closed = store.derive_invalidations(scope.project, scope.subject, since)
        return DeriveSnapshot(
            project=scope.project,
            subject=scope.subject,
            groups=groups,
            open_facts=open_facts,
            vectors=vectors,
            vector_model=self.vector_model,
            max_distance=self.max_distance,
            cursor_before=cursor,
            cursor_after=read[-1].id if read else cursor,
            processed=len(read),
            capped=capped,
            invalidations=[at for _, _, at in closed],
        )

    def decide(self, snapshot: DeriveSnapshot, context: Context) -> DeriveResult:
        return decide(snapshot, context.now, context.new_id)


def votes_by_identity(votes: Sequence[Observation]) -> list[Group]:
    """The votes grouped by identity (predicate and identity qualifiers; attribution is not
    identity), each group's ballots in world-time order."""
    found: dict[str, tuple[str, dict[str, Any], list[Ballot]]] = {}
    for o in votes:
        claim = o.claim
        if claim.predicate is None or claim.value is None:
            continue  # a vote is a structured claim; anything else was never one
        value = {k: v for k, v in claim.value.items() if v is not None}
        if not value:
            continue
        qualifiers, _ = split_qualifiers(claim.qualifiers)
        key = identity_key(claim.predicate, qualifiers)
        ballot = Ballot(
            o.id, o.event_id, value, surface(value), claim.valid_from or o.occurred_at, o.trust
        )
        found.setdefault(key, (claim.predicate, qualifiers, []))[2].append(ballot)
    return [
        Group(k, p, q, tuple(sorted(b, key=lambda x: (x.at, x.observation_id))))
        for k, (p, q, b) in sorted(found.items())
    ]


def _named(store: Store, scope: Scope, groups: list[Group]) -> list[Group]:
    """The groups under the names their votes are filed under, as the adjudicator files a
    claim (`Adjudicator._resolve_predicate`): a name with an active fact is its own; else a
    learned alias leads to the name it points to, when the subject has facts under it; and a
    name whose last version a fact of another name replaced (an identity set resolved into
    the other) follows it. Without this, a voted name learned as an alias of another was
    elected again under the old name, beside the other's current value (the hygiene
    search's class 8, seed 28179)."""
    keys = [g.key for g in groups]
    versions: dict[str, list[Fact]] = {}
    for f in store.facts_by_identity(scope.project, scope.subject, keys):
        if f.identity_key and f.kind is FactKind.STATE:
            versions.setdefault(f.identity_key, []).append(f)
    lost = [
        g for g in groups if not any(f.status is FactStatus.ACTIVE for f in versions.get(g.key, ()))
    ]
    if not lost:
        return groups
    aliases = store.aliases(scope.project, sorted({g.predicate for g in lost}))
    pointed = {
        g.key: identity_key(aliases[g.predicate].canonical, g.qualifiers)
        for g in lost
        if g.predicate in aliases
    }
    more = sorted(set(pointed.values()) - set(keys))
    for f in store.facts_by_identity(scope.project, scope.subject, more):
        if f.identity_key and f.kind is FactKind.STATE:
            versions.setdefault(f.identity_key, []).append(f)

    def read(fact_id: str) -> Fact | None:
        found = store.facts_by_ids(scope.project, [fact_id])
        return found[0] if found else None

    moves: dict[str, tuple[str, str]] = {}
    for g in lost:
        named = pointed.get(g.key)
        if named is None or not versions.get(named):
            named = g.key
        moved = timeline.renamed_to(versions.get(named, []), read)
        if moved is not None and moved.predicate and moved.identity_key:
            moves[g.key] = (moved.predicate, moved.identity_key)
        elif named != g.key:
            predicate = aliases[g.predicate].canonical
            moves[g.key] = (predicate, named)
    return follow(groups, moves)


def _open_facts(store: Store, scope: Scope, groups: Sequence[Group]) -> dict[str, Fact]:
    found = store.facts_by_identity(scope.project, scope.subject, [g.key for g in groups])
    return {
        f.identity_key: f
        for f in found
        if f.identity_key and f.kind is FactKind.STATE and f.status is FactStatus.ACTIVE
    }


def texts_of(groups: Sequence[Group], open_facts: Sequence[Fact] | Any) -> set[str]:
    """What a cycle embeds: every surface form voted and every open fact's, and the identity
    text of every value voted (a created fact's vector)."""
    texts = {b.surface for g in groups for b in g.ballots}
    texts |= {identity_text(g.predicate, b.value) for g in groups for b in g.ballots}
    texts |= {surface(f.value) for f in open_facts if f.value}
    return texts


def run_derive(
    store: Store,
    embed: Embed,
    vector_model: str,
    max_distance: float | None,
    now: Callable[[], datetime],
    new_id: Callable[[], str],
    *,
    projects: Sequence[str] = (),
    subject: str | None = None,
    dry_run: bool = False,
    batch: int = DERIVE_BATCH,
) -> DeriveReport:
    """One derive cycle over every scope holding votes in `projects` (empty: all), or over
    one `subject` (whose cycle is recorded even when it has no votes, if `projects` names
    its project)."""
    report = DeriveReport(dry_run=dry_run)

    def go() -> None:
        found = store.vote_scopes(list(projects))
        scopes = [Scope(p, s) for p, s in found if subject is None or s == subject]
        if subject is not None:
            known = {sc.project for sc in scopes}
            scopes += [Scope(p, subject) for p in projects if p not in known]
        for scope in sorted(scopes, key=lambda sc: (sc.project, sc.subject)):
            _cycle(store, scope, embed, vector_model, max_distance, now, new_id, batch, report)

    if dry_run:
        with store.dry_run():
            go()
    else:
        go()
    return report


def _cycle(
    store: Store,
    scope: Scope,
    embed: Embed,
    vector_model: str,
    max_distance: float | None,
    now: Callable[[], datetime],
    new_id: Callable[[], str],
    batch: int,
    report: DeriveReport,
) -> None:
    report.scopes += 1
    cursor = store.pass_cursor(scope.project, scope.subject, PASS_NAME)
    read = store.votes(scope.project, scope.subject, cursor, batch)
    groups = _named(store, scope, votes_by_identity(read))
    texts = texts_of(groups, _open_facts(store, scope, groups).values())
    vectors = embed(sorted(texts)) if texts else {}
    work = DeriveWork(now(), read[-1].id if read else None, vectors, embed)
    try:
        result = run_pass(
            store,
            DeriveCycle(max_distance, vector_model, batch),
            scope,
            work,
            now=work.now,
            new_id=new_id,
        )
    except DistillError as exc:
        report.errors.append(refused("derive", scope, exc))
        return
    assert isinstance(result, DeriveResult)
    for name, value in result.counts.items():
        report.counts[name] += value
    report.facts.extend(result.facts)
    where = f"{scope.project}/{scope.subject}"
    if result.capped:
        report.capped.append(where)
    if result.unstable:
        report.unstable.append(where)
