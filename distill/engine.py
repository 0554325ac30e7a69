"""Orchestration: claim jobs → extract → embed → (lock) load → adjudicate → validate → apply.

Slow work (LLM calls, embeddings) happens before the subject's write lock is taken; every
decision is made under it, on state read under it. Each job is its own transaction: a
failure rolls back that job only, records the error and leaves its events intact.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np

from distill import ids
from distill.core.adjudicate import NEIGHBOURS, Adjudicator
from distill.core.apply import audit_entries, validate
from distill.core.identity import (
    content_hash,
    identity_key,
    identity_text,
    normalise_text,
    split_qualifiers,
)
from distill.core.models import AuditEntry, Event, Fact, FactKind, FactStatus, Job
from distill.core.plan import Plan, Rejection, describe_action
from distill.core.working import Candidate, Neighbourhood, Snapshot, Support
from distill.errors import (
    DistillError,
    EmbeddingMismatch,
    MalformedAnswer,
    ProviderError,
    RateLimited,
    TransientProviderError,
)
from distill.extractors import Extraction, from_claims, from_llm_answer, from_text
from distill.model_answers import ModelAnswers
from distill.ports import Clock, Embedder, LLMUsage, Store, Vector
from distill.report import Report

log = logging.getLogger("distill.engine")

MAX_ATTEMPTS = 5  # a job that failed this many times stays failed until replayed by hand
RETRY_BASE = timedelta(seconds=30)  # backoff: 30 s, 60 s, 120 s, 240 s between attempts
STALLED_AFTER = timedelta(minutes=10)  # a running job with no heartbeat for this long is reclaimed
CLAIM_BATCH = 32  # jobs claimed per round trip
OUTAGE_AFTER = 3  # jobs failed in a row by a provider, after its own retries, that end a run
# Actions described in the report of a real run; the audit log has all of them. A dry run's
# report lists every action: the plan is its whole point.
REPORT_ACTIONS_MAX = 1000


def retryable(exc: Exception) -> bool:
    """A provider's deterministic refusal (a 4xx other than 408/429) would fail the same way
    again: such a job stays failed until replayed by hand. Everything else is retried with
    backoff, including a malformed answer (models are not deterministic)."""
    if isinstance(exc, ProviderError):
        return isinstance(exc, TransientProviderError | MalformedAnswer)
    return True


def identity_text_of(c: Candidate) -> str | None:
    """The text embedded to match a state candidate by meaning, if it is one."""
    if c.claim.predicate and c.claim.resolved_kind is FactKind.STATE:
        return identity_text(c.claim.predicate, c.claim.value)
    return None


@dataclass(frozen=True)
class Prepared:
    """A claimed job after extraction: everything that can be done outside the lock."""

    job: Job
    events: list[Event]
    candidates: list[Candidate]
    rejections: list[Rejection]

    def identity_texts(self) -> set[str]:
        return {t for t in map(identity_text_of, self.candidates) if t is not None}


@dataclass(frozen=True)
class Batch:
    """Claimed jobs, extracted and embedded, ready to be decided."""

    prepared: list[Prepared]
    vectors: dict[str, Vector]
    stopped: bool  # a rate limit ended the run: decide these, claim no more


class _DryRun(Exception):
    """Raised at the end of a dry run so that the store rolls everything back."""


class _Deferred(Exception):
    """Raised under a subject's lock when an earlier job of the subject is still open."""


class Engine:
    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        extraction: Extraction,
        clock: Clock,
        max_distance: float | None,
        new_id: Callable[[], str] | None = None,
        embed_events: bool = False,
    ) -> None:
        self.embed_events = embed_events
        self._stop = threading.Event()
        self._pool: ThreadPoolExecutor | None = None
        self.store = store
        self.embedder = embedder
        self.extraction = extraction
        self.clock = clock
        self.max_distance = max_distance
        self.new_id = new_id or ids.new_id
        self.answers = ModelAnswers(store, extraction, self.embed, embedder.model_id, clock)

    # -- runs ----------------------------------------------------------------------------------
    def consolidate(
        self,
        dry_run: bool = False,
        progress: Callable[[int, int], None] | None = None,
        stop: threading.Event | None = None,
    ) -> Report:
        """Run every due job. When `stop` is set, the job being decided is finished, no
        other is started, and the claimed ones go back to pending (a graceful shutdown)."""
        report = Report(dry_run=dry_run)
        self._stop = stop or threading.Event()
        if not dry_run:
            self._run(report, progress, pipelined=True)
            return report
        # A dry run is a real run inside one transaction that is always rolled back, so the
        # plan it reports is exactly the plan a real run would apply.
        try:
            with self.store.serialised("", ""):
                self._run(report, progress, pipelined=False)  # one connection, one transaction
                raise _DryRun
        except _DryRun:
            pass
        return report

    def _run(
        self, report: Report, progress: Callable[[int, int], None] | None, pipelined: bool
    ) -> None:
        now = self.clock.now()
        reclaimed = self.store.reclaim_stalled(now, now - STALLED_AFTER, MAX_ATTEMPTS)
        if reclaimed:
            log.warning("reclaimed %d stalled job(s)", reclaimed)
        counts = self.store.counts(None).jobs_by_status
        total = counts.get("pending", 0) + counts.get("failed", 0)
        done = 0

        def decide(batch: Batch) -> None:
            nonlocal done
            for index, p in enumerate(batch.prepared):
                rest = [q.job.id for q in batch.prepared[index:]]
                if self._stop.is_set():  # shutting down: the rest waits for another run
                    self._release(rest, report)
                    return
                try:
                    self.store.heartbeat(rest, self.clock.now())
                    self._decide(p, batch.vectors, report)
                except BaseException:  # interrupted: what was not decided goes back to pending
                    self.store.release_jobs(rest, self.clock.now())
                    raise
                done += 1
                if progress:
                    progress(done, max(total, done))

        if not pipelined:
            while (batch := self._next_batch(report)) is not None:
                decide(batch)
                if batch.stopped or self._stop.is_set():
                    return
            return
        # Extraction and embedding of the next batch (model inference, LLM calls) overlap with
        # the decisions and writes of this one: each job is still decided under its lock, on
        # state read under it, and its own events are never split across batches.
        # One preparation thread for the engine's life, not one per run: a store holds a
        # connection per thread, and a worker runs thousands of times.
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="distill-prepare")
        pool = self._pool
        upcoming = pool.submit(self._next_batch, report)
        try:
            while (batch := upcoming.result()) is not None:
                if not batch.stopped:
                    upcoming = pool.submit(self._next_batch, report)
                decide(batch)
                if batch.stopped:
                    return
                if self._stop.is_set():
                    self._abandon(upcoming, report)
                    return
        except BaseException:
            self._abandon(upcoming, report)
            raise

    def close(self) -> None:
        """Stop the preparation thread (before the store it uses is closed)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def _abandon(self, upcoming: Future[Batch | None], report: Report) -> None:
        """Put the jobs of a batch prepared for nothing (the run was interrupted) back."""
        if upcoming.cancel():
            return
        try:
            batch = upcoming.result()
        except Exception:  # its jobs were failed or released where it broke
            return
        if batch is not None:
            self._release([p.job.id for p in batch.prepared], report)

    def _release(self, job_ids: list[str], report: Report) -> None:
        self.store.release_jobs(job_ids, self.clock.now())
        with report.lock:
            report.jobs_released += len(job_ids)

    def _next_batch(self, report: Report) -> Batch | None:
        """Claim due jobs, extract them, and embed what they need, a call per step."""
        if self._stop.is_set():
            return None
        jobs = self.store.claim_jobs(self.clock.now(), CLAIM_BATCH, MAX_ATTEMPTS)
        if not jobs:
            return None
        loaded = [
            (job, sorted(self.store.events(job.event_ids), key=lambda e: (e.occurred_at, e.id)))
            for job in jobs
        ]
        # Event texts, when they are to be stored, in one call for the whole batch.
        texts = sorted(
            {e.text for _, events in loaded for e in events if e.text.strip()}
            if self.embed_events
            else set()
        )
        try:
            vectors = self.embed(texts)
        except Exception as exc:
            for job, _ in loaded:
                self._fail(job, exc, report)
            return Batch([], {}, False)
        prepared, stopped = self._prepare_all(loaded, vectors, report)
        # Then every identity text the candidates of the whole batch need, in one call.
        try:
            wanted = {t for p in prepared for t in p.identity_texts()} - vectors.keys()
            vectors.update(self.embed(sorted(wanted)))
        except Exception as exc:
            for p in prepared:
                self._fail(p.job, exc, report)
            return Batch([], {}, stopped)
        return Batch(prepared, vectors, stopped)

    def _prepare_all(
        self,
        loaded: Sequence[tuple[Job, list[Event]]],
        vectors: dict[str, Vector],
        report: Report,
    ) -> tuple[list[Prepared], bool]:
        """Extract every claimed job. One failing job never stops the others, but a provider
        that is rate limiting, or that failed OUTAGE_AFTER jobs in a row even after its own
        retries, stops the run: the jobs after it go back to pending untouched (a run against
        a dead server must end, not spend every job's retries); the ones already extracted
        are still applied."""
        prepared: list[Prepared] = []
        outage = 0
        try:
            for index, (job, events) in enumerate(loaded):
                rest = [j.id for j, _ in loaded[index:]]
                if self._stop.is_set():  # shutting down: ask the model nothing more
                    self._release(rest, report)
                    return prepared, True

                def beat(rest: list[str] = rest) -> None:  # long LLM calls: keep the claim alive
                    self.store.heartbeat(rest, self.clock.now())

                usage = LLMUsage()
                stop: Exception | None = None
                try:
                    beat()
                    prepared.append(
                        self._prepare(job, events, vectors, usage, beat, report.dry_run)
                    )
                    outage = 0
                except TransientProviderError as exc:
                    self._fail(job, exc, report)
                    outage += 1
                    if isinstance(exc, RateLimited) or outage >= OUTAGE_AFTER:
                        stop = exc
                except Exception as exc:
                    self._fail(job, exc, report)
                finally:
                    if usage:
                        self.store.add_job_usage(job.id, usage)
                        report.count_llm(usage)
                if stop is not None:
                    log.error("stopping the run: %s", stop)
                    report.stopped_by_provider = f"{type(stop).__name__}: {stop}"
                    self._release(rest[1:], report)
                    return prepared, True
        except BaseException:  # interrupted (Ctrl-C): nothing of this batch will be decided
            self.store.release_jobs([j.id for j, _ in loaded], self.clock.now())
            raise
        return prepared, False

    def _prepare(
        self,
        job: Job,
        events: list[Event],
        vectors: dict[str, Vector],
        usage: LLMUsage,
        beat: Callable[[], None],
        dry_run: bool,
    ) -> Prepared:
        answers = self.answers.for_job(job, events, vectors, usage, beat, dry_run)
        candidates: list[Candidate] = []
        rejections: list[Rejection] = []
        for event in events:
            route = self.extraction.route(event)
            if route == "claims":
                extracted = from_claims(event)
            elif route == "llm":
                extracted = from_llm_answer(answers[event.id], event)
            else:
                extracted = from_text(event)
            candidates.extend(Candidate(event, claim, h, route) for claim, h in extracted.claims)
            rejections.extend(extracted.rejections)
        return Prepared(job, events, candidates, rejections)

    def _decide(self, p: Prepared, vectors: dict[str, Vector], report: Report) -> None:
        try:
            plan = self._decide_and_apply(p, vectors)
        except _Deferred:  # an earlier job of the subject is still open elsewhere: after it
            log.info("job %s waits for an earlier job of %s", p.job.id, p.job.subject)
            self._release([p.job.id], report)
            return
        except Exception as exc:  # rolled back: this job only
            self._fail(p.job, exc, report)
            return
        self.store.finish_job(p.job.id, self.clock.now())
        with report.lock:
            report.jobs_done += 1
            report.outcomes.update(plan.outcomes)
            report.rejections.extend(plan.rejections)
            room = len(plan.actions) if report.dry_run else REPORT_ACTIONS_MAX - len(report.actions)
            report.actions.extend(describe_action(a) for a in plan.actions[: max(room, 0)])
            report.actions_total += len(plan.actions)

    def _decide_and_apply(self, p: Prepared, vectors: dict[str, Vector]) -> Plan:
        """Every decision is made under the subject's write lock, on state read under it."""
        job = p.job
        identity = {
            t: vectors[t] for t in (identity_text_of(c) for c in p.candidates) if t is not None
        }
        with self.store.serialised(job.project, job.subject):
            # Another worker may hold the subject's earlier job: deciding this one first
            # would change the outcome (arrival order must not), so it waits.
            if self.store.earlier_open_job(job.id):
                raise _Deferred
            snapshot = self._snapshot(job, p.events, p.candidates, identity)
            now = self.clock.now()
            plan = Adjudicator(snapshot, now, self.new_id, self.max_distance).run(p.candidates)
            plan.rejections.extend(p.rejections)
            validate(plan, job.project, job.subject)
            audit = audit_entries(plan, job.id, now, self.new_id)
            audit.extend(self._rejection_audit(job, p.rejections, now))
            self.store.apply(plan, job.id, audit)
            if self.embed_events:
                self.store.set_event_embeddings(
                    self.embedder.model_id,
                    {e.id: vectors[e.text] for e in p.events if e.text.strip()},
                )
        for r in p.rejections:
            log.info("rejected a candidate of event %s: %s (%s)", r.event_id, r.reason, r.detail)
        return plan

    # -- steps ---------------------------------------------------------------------------------
    def embed(self, texts: Sequence[str]) -> dict[str, Vector]:
        """Embeddings by text, through the (model, text hash) cache."""
        if not texts:
            return {}
        model = self.embedder.model_id
        hashes = {t: content_hash(t) for t in texts}
        cached = self.store.cached_embeddings(model, list(hashes.values()))
        missing = [t for t in texts if hashes[t] not in cached]
        fresh: dict[str, Vector] = {}
        for start in range(0, len(missing), self.embedder.max_batch):
            chunk = missing[start : start + self.embedder.max_batch]
            rows = self.embedder.embed_batch(chunk)
            if rows.shape != (len(chunk), self.embedder.dimension):
                raise EmbeddingMismatch(
                    f"the embedder {model} returned vectors of shape {rows.shape} for "
                    f"{len(chunk)} texts, but says its vectors have {self.embedder.dimension} "
                    "values"
                )
            fresh.update({hashes[t]: rows[i] for i, t in enumerate(chunk)})
        if fresh:
            self.store.cache_embeddings(model, fresh)
        cached.update(fresh)
        found = {t: np.asarray(cached[hashes[t]], dtype=np.float32) for t in texts}
        sizes = {len(v) for v in found.values()}
        if len(sizes) > 1:
            # The cache holds another model's vectors under this id (a server that now serves
            # another model under the same name): any distance between them would be wrong.
            raise EmbeddingMismatch(
                f"vectors of {sorted(sizes)} values are stored under the one embedder id "
                f"{model!r}: two models have used this id. Give the new model its own id "
                "(model_id=...) or go back to the model the store was filled with"
            )
        return found

    def _snapshot(
        self,
        job: Job,
        events: Sequence[Event],
        candidates: Sequence[Candidate],
        vectors: dict[str, Vector],
    ) -> Snapshot:
        project, subject = job.project, job.subject
        store = self.store
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
        neighbours: dict[str, Neighbourhood] = {}
        facts = {}
        # Without a threshold nothing is matched by meaning: the neighbours would go unused.
        if vectors and self.max_distance is not None:
            texts = sorted(vectors)
            matrix = np.stack([vectors[t] for t in texts])
            found = store.nearest_facts(
                project, subject, matrix, NEIGHBOURS, self.embedder.model_id
            )
            for text, hood in zip(texts, found, strict=True):
                neighbours[text] = Neighbourhood(
                    tuple(n.fact_id for n in hood), tuple(n.distance for n in hood)
                )
                for n in hood:
                    if n.fact_id not in facts:
                        fact = store.fact(n.fact_id)
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
        event_ids = [e.id for e in events]
        for fact in store.facts_with_sources(project, subject, event_ids):
            facts[fact.id] = fact
        support = self._support(facts)
        conflicts = {c.id: c for c in store.open_conflicts_for(project, subject, sorted(keys))}
        for conflict in conflicts.values():
            for member_id in conflict.member_ids:
                if member_id not in facts:
                    facts[member_id] = store.fact(member_id)
        return Snapshot(
            project=project,
            subject=subject,
            facts=facts,
            aliases=dict(aliases),
            conflicts=conflicts,
            seen=store.seen_claims(event_ids),
            vectors=vectors,
            neighbours=neighbours,
            vector_model=self.embedder.model_id,
            support=support,
        )

    def _support(self, facts: dict[str, Fact]) -> dict[str, tuple[Support, ...]]:
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
        for o in self.store.observations_for_events(events):
            if o.fact_id in versions and o.event_id not in found:
                found[o.event_id] = Support(
                    o.event_id, o.claim.valid_from or o.occurred_at, o.trust
                )
        return {f.id: tuple(found[e] for e in f.source_event_ids if e in found) for f in reinforced}

    # -- failures ------------------------------------------------------------------------------
    def _fail(self, job: Job, exc: Exception, report: Report) -> None:
        if not isinstance(exc, DistillError):
            log.error("job %s raised an unexpected error", job.id, exc_info=exc)
        now = self.clock.now()
        message = f"{type(exc).__name__}: {exc}"
        retry_at = None
        if job.attempts < MAX_ATTEMPTS and retryable(exc):
            retry_at = now + RETRY_BASE * (2 ** max(job.attempts - 1, 0))
        if isinstance(exc, TransientProviderError) and not isinstance(exc, RateLimited):
            log.warning("job %s failed (transient): %s", job.id, message)
        else:
            log.error("job %s failed: %s", job.id, message)
        self.store.fail_job(job.id, message, now, retry_at)
        with report.lock:
            report.jobs_failed += 1
            report.errors.append(f"job {job.id} ({job.project}/{job.subject}): {message}")

    def _rejection_audit(
        self, job: Job, rejections: Sequence[Rejection], now: datetime
    ) -> list[AuditEntry]:
        return [
            AuditEntry(
                id=self.new_id(),
                project=job.project,
                subject=job.subject,
                job_id=job.id,
                pass_name="extract",
                action="reject_candidate",
                reason=f"{r.reason}: {r.detail}",
                fact_id=None,
                before=None,
                after={"event_id": r.event_id, "extractor": r.extractor, "candidate": r.candidate},
                at=now,
            )
            for r in rejections
        ]
