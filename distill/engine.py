"""Orchestration: claim jobs → extract → embed → run the adjudication pass on each job.

Slow work (LLM calls, embeddings) happens before the subject's write lock is taken, on a
second thread that embeds the next batch while this one is decided; every decision is made
under the lock, on state read under it (`passes.run_pass`: load, decide, apply). For the
batch after the one being embedded, the deciding thread claims the jobs, loads their
events, extracts the ones no model reads (claims and text routes: pure, and quick) and
looks their texts up in the embedding cache (`preparation.Preparation.stage`); it writes a
batch's new vectors to the cache before deciding it (`cached_embedding`). So for jobs no
model reads, the embedder goes from one batch to the next without waiting, and never for a
write of the other thread (the jobs a model reads still write their answers, usage and
heartbeats from the preparation thread, between calls that take far longer). Batches start
small (`FIRST_BATCH`: the embedder starts sooner) and shrink toward the end of a run
(`batch_size`), so that little deciding is left once the last embedding is done. Each
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

from distill import ids
from distill.cached_embedding import CachedEmbedding
from distill.core.attribute_match import Bands
from distill.core.models import Job
from distill.core.passes import PassResult, Scope
from distill.core.plan import Plan, describe_action
from distill.core.schedule import Trigger
from distill.core.votes import Policies
from distill.errors import (
    ClaimLost,
    DistillError,
    MalformedAnswer,
    ProviderError,
    RateLimited,
    TransientProviderError,
)
from distill.extractors import Extraction
from distill.gc_threshold import fewer_collections
from distill.heartbeat import LEASE, Heartbeat
from distill.log_scope import scoped
from distill.model_answers import ModelAnswers
from distill.passes import run_pass
from distill.passes.adjudication import Adjudication, JobWork
from distill.passes.identity_judge import judge_projects
from distill.ports import LLM, Clock, Embedder, Store, Vector
from distill.preparation import Batch, Preparation, Prepared, Staged
from distill.report import Report

log = logging.getLogger("distill.engine")

MAX_ATTEMPTS = 5  # a job that failed this many times stays failed until replayed by hand
RETRY_BASE = timedelta(seconds=30)  # backoff: 30 s, 60 s, 120 s, 240 s between attempts
CLAIM_BATCH = 32  # jobs claimed per round trip (16 measured no better: BENCHMARKS.md)
# Jobs in a pipelined run's first batch (`batch_size`): at 10,000 claim events the embedder
# then started 0.025 s into the run instead of 0.13 s (BENCHMARKS.md).
FIRST_BATCH = 4
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
class _Upcoming:
    """The next batch of a pipelined run, being embedded by `future` (None: nothing was due,
    or the run is stopping)."""

    staged: Staged | None
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
        self._stop = threading.Event()
        self._pool: ThreadPoolExecutor | None = None
        self.store = store
        self.embedder = embedder
        self.extraction = extraction
        self.clock = clock
        self.adjudication = Adjudication(bands, policies)
        self._heartbeat = Heartbeat(store, clock)
        self.new_id = new_id or ids.new_id
        self.cached = CachedEmbedding(store, embedder)
        self.answers = ModelAnswers(store, extraction, self.embed, embedder.model_id, clock)
        self.preparation = Preparation(
            store,
            extraction,
            self.answers,
            self.cached,
            clock,
            embed_events,
            lambda: self._stop.is_set(),
            self._fail,
            self._release,
        )
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
            with self._heartbeat.during_run(), fewer_collections():
                self._run(report, progress, pipelined=True)
            if self.judge is not None and not report.stopped_by_provider:
                self._judge(report)
            return report
        # A dry run is a real run inside one transaction that is always rolled back, so the
        # plan it reports is exactly the plan a real run would apply.
        with self.store.dry_run(), fewer_collections():
            self._run(report, progress, pipelined=False)  # one connection, one transaction
        return report

    def _judge(self, report: Report) -> None:
        """Put the open identity sets of the projects this run touched to the judge (the
        others' wait for the worker's `judge_identity` pass: `Memory.judge_identities`)."""
        assert self.judge is not None
        projects = sorted(report.projects)
        judged = judge_projects(self.store, self.judge, projects, self.clock.now, self.new_id)
        report.identities_same += judged.same
        report.identities_different += judged.different
        report.count_llm(judged.usage)
        report.judge_stopped = judged.stopped

    def _run(
        self, report: Report, progress: Callable[[int, int], None] | None, pipelined: bool
    ) -> None:
        now = self.clock.now()
        self.preparation.start_run()
        report.claims(self.store.reclaim(now, now - LEASE, MAX_ATTEMPTS))
        for line in report.claim_notes():  # the CLI and the worker show them
            log.info("%s", line)
        counts = self.store.counts(None).jobs_by_status
        total = counts.get("pending", 0) + counts.get("failed", 0)
        done = 0

        def decide(batch: Batch) -> None:
            nonlocal done
            try:  # the vectors the batch's plans name are in the cache before any is decided
                self.cached.keep(batch.fresh)
            except BaseException:
                self._release([p.job.id for p in batch.prepared], report)
                raise
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
        # Embedding (and model extraction) of the next batch overlaps with the decisions and
        # writes of this one, on the preparation thread; the jobs after it are claimed,
        # loaded and, when no model reads them, extracted on this thread meanwhile, so that
        # the embedder goes from one batch to the next without waiting for any of that. Each
        # job is still decided under its lock, on state read under it, and its own events
        # are never split across batches.
        # One preparation thread for the engine's life, not one per run: a store holds a
        # connection per thread, and a worker runs thousands of times.
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="distill-prepare")
        pool = self._pool
        queue: list[Job] = []  # claimed, not yet staged
        handed = 0

        def stage_next() -> Staged | None:
            # Claimed here, between this thread's job transactions: a claim (a write) never
            # waits for a job being decided to commit.
            nonlocal handed
            if self._stop.is_set():
                return None
            size = batch_size(total - handed, first=not handed)
            if len(queue) < size:
                queue.extend(self._claim(CLAIM_BATCH))
            jobs = queue[:size]
            del queue[:size]
            handed += len(jobs)
            return self.preparation.stage(jobs, report) if jobs else None

        def submit(staged: Staged | None) -> _Upcoming:
            if staged is None:
                return _Upcoming(None, None)
            return _Upcoming(staged, pool.submit(self.preparation.finish, staged, report))

        staged: Staged | None = None
        upcoming = _Upcoming(None, None)
        try:
            upcoming = submit(stage_next())
            staged = stage_next() if upcoming.future is not None else None
            while (batch := upcoming.result()) is not None:
                upcoming = _Upcoming(None, None)
                if not batch.stopped:
                    upcoming, staged = submit(staged), None
                decide(batch)
                if batch.stopped or self._stop.is_set():
                    self._abandon(upcoming, report)
                    return
                if staged is None and upcoming.future is not None:
                    staged = stage_next()
        except BaseException:
            self._abandon(upcoming, report)
            raise
        finally:  # stopped or interrupted: what was claimed and never prepared goes back
            held = [job.id for job in queue] + (staged.held() if staged is not None else [])
            if held:
                self._release(held, report)

    def close(self) -> None:
        """Stop the preparation and heartbeat threads (before the store they use is closed)."""
        self._heartbeat.close()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def _abandon(self, upcoming: _Upcoming, report: Report) -> None:
        """Put the jobs of a batch prepared for nothing (the run was interrupted) back."""
        if upcoming.future is None or upcoming.staged is None:
            return
        if upcoming.future.cancel():  # staged, never embedded
            self._release(upcoming.staged.held(), report)
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
        return (
            self.preparation.finish(self.preparation.stage(jobs, report), report) if jobs else None
        )

    def _claim(self, size: int) -> list[Job]:
        """Claim up to `size` due jobs; with a trigger, only those of subjects with enough
        new events or whose oldest waited long enough."""
        now, trigger = self.clock.now(), self._trigger
        if trigger is None:
            return self.store.claim_jobs(now, size, MAX_ATTEMPTS)
        waited = now - trigger.max_wait
        return self.store.claim_jobs(now, size, MAX_ATTEMPTS, trigger.min_events, waited)

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
            report.events_without_sentences += p.wordless
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
        return self.cached.embed(texts)

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


def batch_size(left: int, first: bool = False) -> int:
    """How many claimed jobs to prepare as the next batch of a pipelined run, when about
    `left` jobs of the run have not been handed to preparation yet.

    The decisions of the last batch are the one part of a pipelined run that nothing
    overlaps: every embedding is done by then, and they run alone on one core. So a run
    prepares CLAIM_BATCH jobs at a time until it nears its end, then half of what is left,
    down to one job: each batch is still decided while the next (half as big) is embedded,
    since a job takes about a quarter as long to decide as to embed (BENCHMARKS.md), and
    what is left after the last embedding is one job's decisions instead of up to 32 jobs'.
    The `first` batch has nothing to overlap its loading and extraction either: it is
    FIRST_BATCH jobs, so that the embedder starts after 4 jobs' instead of 32 jobs'.
    Jobs are still claimed CLAIM_BATCH at a time. An estimate that ran out (jobs came in
    during the run) prepares full batches again."""
    if left <= 0:
        return FIRST_BATCH if first else CLAIM_BATCH
    return max(1, min(FIRST_BATCH if first else CLAIM_BATCH, (left + 1) // 2))
