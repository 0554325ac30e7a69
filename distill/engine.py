"""Orchestration: claim jobs → extract → embed → run the adjudication pass on each job.

Slow work (LLM calls, embeddings) happens before the subject's write lock is taken, on a
second thread that prepares the next batch while this one is decided; every decision is
made under the lock, on state read under it (`passes.run_pass`: load, decide, apply). The
deciding thread claims the jobs (between its own transactions, so that a claim never waits
for one), and batches shrink toward the end of a run (`batch_size`), so that little
deciding is left once the last embedding is done. Each
job is its own transaction, which also marks the job done: a failure rolls back that job
only, records the error and leaves its events intact, and a job taken back by another run
meanwhile is not written at all. A thread beats the heartbeat of the jobs a run holds.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta

import numpy as np

from distill import ids
from distill.core.attribute_match import Bands
from distill.core.identity import (
    content_hash,
)
from distill.core.models import Event, Job
from distill.core.passes import PassResult, Scope
from distill.core.plan import Plan, Rejection, describe_action
from distill.core.schedule import Trigger
from distill.core.votes import Policies
from distill.core.working import Candidate
from distill.errors import (
    ClaimLost,
    DistillError,
    EmbeddingMismatch,
    MalformedAnswer,
    ProviderError,
    ProviderTimeout,
    RateLimited,
    TransientProviderError,
)
from distill.extractors import Extraction, from_claims, from_llm_answer, from_text
from distill.heartbeat import LEASE, Heartbeat
from distill.log_scope import scoped
from distill.model_answers import ModelAnswers
from distill.passes import run_pass
from distill.passes.adjudication import Adjudication, JobWork, identity_texts_of
from distill.passes.identity_judge import judge_identities
from distill.ports import LLM, Clock, Embedder, LLMUsage, Store, Vector
from distill.report import Report

log = logging.getLogger("distill.engine")

MAX_ATTEMPTS = 5  # a job that failed this many times stays failed until replayed by hand
RETRY_BASE = timedelta(seconds=30)  # backoff: 30 s, 60 s, 120 s, 240 s between attempts
CLAIM_BATCH = 32  # jobs claimed per round trip (16 measured no better: BENCHMARKS.md)
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


@dataclass(frozen=True)
class Prepared:
    """A claimed job after extraction: everything that can be done outside the lock."""

    job: Job
    events: list[Event]
    candidates: list[Candidate]
    rejections: list[Rejection]
    kind_fallbacks: int = 0
    unread: int = 0  # events the claims route read nothing from: text only, no claims

    def identity_texts(self) -> set[str]:
        return {t for c in self.candidates for t in identity_texts_of(c)}


@dataclass(frozen=True)
class Batch:
    """Claimed jobs, extracted and embedded, ready to be decided."""

    prepared: list[Prepared]
    vectors: dict[str, Vector]
    stopped: bool  # a rate limit ended the run: decide these, claim no more


@dataclass(frozen=True)
class _Upcoming:
    """The next batch of a pipelined run: its claimed jobs, being prepared by `future`
    (None: nothing was due, or the run is stopping)."""

    jobs: list[Job]
    future: Future[Batch] | None

    def result(self) -> Batch | None:
        return None if self.future is None else self.future.result()


class _Deferred(Exception):
    """Raised under a subject's lock when an earlier job of the subject is still open."""


class Engine:
    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        extraction: Extraction,
        clock: Clock,
        bands: Bands,
        new_id: Callable[[], str] | None = None,
        embed_events: bool = False,
        judge: LLM | None = None,
        policies: Policies | None = None,
    ) -> None:
        """`judge`: the model asked, after a run, about the identity sets of the projects
        the run touched (`passes.identity_judge`); None leaves them to a person."""
        self.judge = judge
        self.embed_events = embed_events
        self._stop = threading.Event()
        self._outage = 0  # jobs failed in a row by a provider in this run (OUTAGE_AFTER)
        self._pool: ThreadPoolExecutor | None = None
        self.store = store
        self.embedder = embedder
        self.extraction = extraction
        self.clock = clock
        self.adjudication = Adjudication(bands, policies)
        self._heartbeat = Heartbeat(store, clock)
        self.new_id = new_id or ids.new_id
        self.answers = ModelAnswers(store, extraction, self.embed, embedder.model_id, clock)
        self._trigger: Trigger | None = None  # the run's (`consolidate`)

    # -- runs ----------------------------------------------------------------------------------
    def consolidate(
        self,
        dry_run: bool = False,
        progress: Callable[[int, int], None] | None = None,
        stop: threading.Event | None = None,
        trigger: Trigger | None = None,
    ) -> Report:
        """Run every due job. When `stop` is set, the job being decided is finished, no
        other is started, and the claimed ones go back to pending (a graceful shutdown).
        With a `trigger`, a subject's pending job is due only once it holds enough events
        or has waited long enough (the worker's); without, every pending job is."""
        report = Report(dry_run=dry_run)
        self._stop = stop or threading.Event()
        self._trigger = trigger
        if not dry_run:
            with self._heartbeat.during_run():
                self._run(report, progress, pipelined=True)
            if self.judge is not None and not report.stopped_by_provider:
                self._judge(report)
            return report
        # A dry run is a real run inside one transaction that is always rolled back, so the
        # plan it reports is exactly the plan a real run would apply.
        with self.store.dry_run():
            self._run(report, progress, pipelined=False)  # one connection, one transaction
        return report

    def _judge(self, report: Report) -> None:
        """Put the open identity sets of the projects this run touched to the judge."""
        assert self.judge is not None
        for project in sorted(report.projects):
            judged = judge_identities(self.store, self.judge, project, self.clock.now, self.new_id)
            report.identities_same += judged.same
            report.identities_different += judged.different
            report.count_llm(judged.usage)
            if judged.stopped:
                report.judge_stopped = f"{project}: {judged.stopped}"
                return

    def _run(
        self, report: Report, progress: Callable[[int, int], None] | None, pipelined: bool
    ) -> None:
        now = self.clock.now()
        self._outage = 0
        report.claims(self.store.reclaim(now, now - LEASE, MAX_ATTEMPTS))
        for line in report.claim_notes():  # the CLI and the worker show them
            log.info("%s", line)
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
                    self._decide(p, batch.vectors, report)
                except BaseException:  # interrupted: what was not decided goes back to pending
                    self.store.release_jobs(rest, self.clock.now())
                    raise
                done += 1
                if progress:
                    progress(done, max(total, done))

        if not pipelined:
            while (batch := self._next_batch(report, CLAIM_BATCH)) is not None:
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
        queue: list[Job] = []  # claimed, not yet handed to the preparation thread
        handed = 0

        def prepare_next() -> _Upcoming:
            # Claimed here, between this thread's job transactions, not on the preparation
            # thread: there the claim (a write) waited for the job being decided to commit,
            # and the embedding of the next batch waited behind it.
            nonlocal handed
            if self._stop.is_set():
                return _Upcoming([], None)
            size = batch_size(total - handed)
            if len(queue) < size:
                queue.extend(self._claim(CLAIM_BATCH))
            jobs = queue[:size]
            del queue[:size]
            handed += len(jobs)
            if not jobs:
                return _Upcoming([], None)
            return _Upcoming(jobs, pool.submit(self._prepare_batch, jobs, report))

        upcoming = prepare_next()
        try:
            while (batch := upcoming.result()) is not None:
                if not batch.stopped:
                    upcoming = prepare_next()
                decide(batch)
                if batch.stopped:
                    return
                if self._stop.is_set():
                    self._abandon(upcoming, report)
                    return
        except BaseException:
            self._abandon(upcoming, report)
            raise
        finally:  # stopped or interrupted: what was claimed and never prepared goes back
            if queue:
                self._release([job.id for job in queue], report)

    def close(self) -> None:
        """Stop the preparation and heartbeat threads (before the store they use is closed)."""
        self._heartbeat.close()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def _abandon(self, upcoming: _Upcoming, report: Report) -> None:
        """Put the jobs of a batch prepared for nothing (the run was interrupted) back."""
        if upcoming.future is None:
            return
        if upcoming.future.cancel():  # claimed, never prepared
            self._release([job.id for job in upcoming.jobs], report)
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

    def _next_batch(self, report: Report, size: int) -> Batch | None:
        """Claim up to `size` due jobs and prepare them (None: nothing is due)."""
        if self._stop.is_set():
            return None
        jobs = self._claim(size)
        return self._prepare_batch(jobs, report) if jobs else None

    def _claim(self, size: int) -> list[Job]:
        """Claim up to `size` due jobs; with a trigger, only those of subjects with enough
        new events or whose oldest waited long enough."""
        now, trigger = self.clock.now(), self._trigger
        if trigger is None:
            return self.store.claim_jobs(now, size, MAX_ATTEMPTS)
        waited = now - trigger.max_wait
        return self.store.claim_jobs(now, size, MAX_ATTEMPTS, trigger.min_events, waited)

    def _prepare_batch(self, jobs: list[Job], report: Report) -> Batch:
        """Extract claimed jobs and embed what they need, a call per step. However it
        breaks, the jobs it was given are failed or released before it raises."""
        try:
            loaded = [
                (
                    job,
                    sorted(
                        self.store.events(job.project, job.event_ids),
                        key=lambda e: (e.occurred_at, e.id),
                    ),
                )
                for job in jobs
            ]
        except BaseException:
            # The jobs were claimed on another thread (a database restart, say, broke only
            # this thread's connection): left running, they would wait out the lease.
            try:
                self._release([job.id for job in jobs], report)
            except DistillError as exc:  # the lease frees them
                log.warning("could not release jobs after a failed read: %s", exc)
            raise
        # Event texts, when they are to be embedded, in one call for the whole batch. Their
        # vectors are kept where every vector is, in the embedding cache (sqlite_0018).
        texts = sorted(
            {e.text for _, events in loaded for e in events if e.text.strip()}
            if self.embed_events
            else set()
        )
        try:
            vectors = self.embed(texts)
        except TransientProviderError as exc:
            return self._embedder_down(exc, [job.id for job, _ in loaded], report)
        except Exception as exc:
            for job, _ in loaded:
                self._fail(job, exc, report)
            return Batch([], {}, False)
        prepared, stopped = self._prepare_all(loaded, vectors, report)
        # Then every identity text the candidates of the whole batch need, in one call.
        try:
            wanted = {t for p in prepared for t in p.identity_texts()} - vectors.keys()
            vectors.update(self.embed(sorted(wanted)))
        except TransientProviderError as exc:  # the model's answers are kept: nothing is lost
            return self._embedder_down(exc, [p.job.id for p in prepared], report)
        except Exception as exc:
            for p in prepared:
                self._fail(p.job, exc, report)
            return Batch([], {}, stopped)
        return Batch(prepared, vectors, stopped)

    def _embedder_down(
        self, exc: TransientProviderError, job_ids: list[str], report: Report
    ) -> Batch:
        """An embedding server that is down or rate limiting would fail every job the same
        way: the batch goes back to pending, untouched, and the run stops."""
        self._release(job_ids, report)
        report.stopped_by_provider = (
            f"stopped the run: the embedder failed: {exc}; every event is kept: the jobs are "
            "pending for the next run"
        )
        log.error("%s", report.stopped_by_provider)
        return Batch([], {}, True)

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
        try:
            for index, (job, events) in enumerate(loaded):
                rest = [j.id for j, _ in loaded[index:]]
                if self._stop.is_set():  # shutting down: ask the model nothing more
                    self._release(rest, report)
                    return prepared, True

                def beat() -> None:  # after each LLM call, besides the heartbeat thread
                    self.store.heartbeat(self.clock.now())

                usage = LLMUsage()
                stop: Exception | None = None
                try:
                    beat()
                    prepared.append(
                        self._prepare(job, events, vectors, usage, beat, report.dry_run)
                    )
                    self._outage = 0
                except TransientProviderError as exc:
                    self._fail(job, exc, report)
                    self._outage += 1  # in a row, across the run's batches
                    # A rate limit or a server that does not answer would do the same to
                    # every job: stop at once rather than wait each one's timeouts out.
                    if isinstance(exc, RateLimited | ProviderTimeout) or (
                        self._outage >= OUTAGE_AFTER
                    ):
                        stop = exc
                except Exception as exc:
                    self._fail(job, exc, report)
                finally:
                    if usage:
                        self.store.add_job_usage(job.id, usage)
                        report.count_llm(usage)
                if stop is not None:
                    self._release(rest[1:], report)
                    report.stopped_by_provider = _stopped(stop)
                    log.error("%s", report.stopped_by_provider)
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
        fallbacks = unread = 0
        for event in events:
            route = self.extraction.route(event)
            if route == "claims":
                extracted = from_claims(event)
                unread += not event.claims
            elif route == "llm":
                extracted = from_llm_answer(answers[event.id], event)
            else:
                extracted = from_text(event)
            candidates.extend(Candidate(event, claim, h, route) for claim, h in extracted.claims)
            rejections.extend(extracted.rejections)
            fallbacks += extracted.kind_fallbacks
        return Prepared(job, events, candidates, rejections, fallbacks, unread)

    def _decide(self, p: Prepared, vectors: dict[str, Vector], report: Report) -> None:
        with scoped(project=p.job.project, subject=p.job.subject, job=p.job.id):
            self._decide_scoped(p, vectors, report)

    def _decide_scoped(self, p: Prepared, vectors: dict[str, Vector], report: Report) -> None:
        try:
            plan = self._decide_and_apply(p, vectors)
        except _Deferred:  # an earlier job of the subject is still open elsewhere: after it
            log.info("job %s waits for an earlier job of %s", p.job.id, p.job.subject)
            self._release([p.job.id], report)
            return
        except ClaimLost as exc:  # taken back meanwhile: its writes were rolled back
            log.warning("%s", exc)
            with report.lock:
                report.jobs_lost += 1
            return
        except Exception as exc:  # rolled back: this job only
            self._fail(p.job, exc, report)
            return
        with report.lock:
            report.jobs_done += 1
            report.outcomes.update(plan.outcomes)
            report.rejections.extend(plan.rejections)
            report.kind_fallbacks += p.kind_fallbacks
            report.events_without_claims += p.unread
            report.projects.add(p.job.project)
            room = len(plan.actions) if report.dry_run else REPORT_ACTIONS_MAX - len(report.actions)
            report.actions.extend(describe_action(a) for a in plan.actions[: max(room, 0)])
            report.actions_total += len(plan.actions)

    def _decide_and_apply(self, p: Prepared, vectors: dict[str, Vector]) -> Plan:
        """Every decision is made under the subject's write lock, on state read under it."""
        job = p.job

        def in_order() -> None:
            # Another worker may hold the subject's earlier job: deciding this one first
            # would change the outcome (arrival order must not), so it waits.
            if self.store.earlier_open_job(job.id):
                raise _Deferred

        def finish(_: PassResult) -> None:
            # In the job's transaction: if the job was taken back from this run meanwhile,
            # finishing it fails and everything the job wrote is rolled back with it.
            self.store.finish_job(job.id, self.clock.now(), attempts=job.attempts)

        work = JobWork(p.events, p.candidates, p.rejections, vectors, self.embedder.model_id)
        result = run_pass(
            self.store,
            self.adjudication,
            Scope(job.project, job.subject),
            work,
            now=self.clock.now(),
            new_id=self.new_id,
            job_id=job.id,
            before=in_order,
            after=finish,
        )
        for r in p.rejections:
            log.info("rejected a candidate of event %s: %s (%s)", r.event_id, r.reason, r.detail)
        return result.plan

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
        try:
            self.store.fail_job(job.id, message, now, retry_at, attempts=job.attempts)
        except ClaimLost as lost:  # another run holds it now and will do it again
            log.warning("%s", lost)
            return
        with report.lock:
            report.jobs_failed += 1
            report.errors.append(f"job {job.id} ({job.project}/{job.subject}): {message}")


def batch_size(left: int) -> int:
    """How many claimed jobs to prepare as the next batch of a pipelined run, when about
    `left` jobs of the run have not been handed to preparation yet.

    The decisions of the last batch are the one part of a pipelined run that nothing
    overlaps: every embedding is done by then, and they run alone on one core. So a run
    prepares CLAIM_BATCH jobs at a time until it nears its end, then half of what is left,
    down to one job: each batch is still decided while the next (half as big) is embedded,
    since a job takes about a quarter as long to decide as to embed (BENCHMARKS.md), and
    what is left after the last embedding is one job's decisions instead of up to 32 jobs'.
    Jobs are still claimed CLAIM_BATCH at a time. An estimate that ran out (jobs came in
    during the run) prepares full batches again."""
    if left <= 0:
        return CLAIM_BATCH
    return max(1, min(CLAIM_BATCH, (left + 1) // 2))


def _stopped(exc: Exception) -> str:
    """Why the provider ended the run, in one line a person can act on."""
    if isinstance(exc, ProviderTimeout):
        why = f"the provider did not answer: {exc}"
    elif isinstance(exc, RateLimited):
        why = f"the provider is rate limiting: {exc}"
    else:
        why = f"the provider failed {OUTAGE_AFTER} jobs in a row: {exc}"
    return (
        f"stopped the run: {why}; every event is kept: the failed job is retried after a "
        "backoff, and the jobs not started are pending for the next run"
    )
