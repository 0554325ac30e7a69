"""Preparing claimed jobs for their decisions: events loaded, claims extracted, texts embedded.

Everything here happens before a subject's write lock is taken (`engine`), in two steps:

* `stage`, on the deciding thread, between its job transactions: the jobs' events are
  loaded, the jobs no model reads (claims and text routes: pure, and quick) are extracted,
  and the texts to embed (event texts when they are embedded, the candidates' identity
  texts) are looked up in the embedding cache;
* `finish`, on the preparation thread: the texts the cache lacks are embedded in one call,
  the jobs a model reads are extracted (their prompts show facts found with their events'
  vectors) and their candidates' identity texts are embedded.

`finish` writes nothing to the store for a batch no model reads: its new vectors go back
with the batch, and the deciding thread caches them before deciding it. So for such batches
the embedder goes from one to the next without waiting for the store, and no write waits
for the other thread's transaction. (The jobs a model reads still store their answers,
usage and heartbeats from the preparation thread.) Measured on 10,000 claim events, 2 cores
(BENCHMARKS.md, "The embedder never waits for the store"): the model stood idle 0.75 s of a
14 s consolidation when loading, extraction and cache writes were on its thread, 0.12 s
after.

However a step breaks, the jobs it was given are failed, released or handed on: none is
left running until its lease runs out. When a provider stops the run at a job, every job
claimed after it goes back untouched, whether a model reads it or not.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from distill.cached_embedding import CachedEmbedding, Lookup
from distill.core.models import Event, Job
from distill.core.plan import Rejection
from distill.core.working import Candidate
from distill.errors import DistillError, ProviderTimeout, RateLimited, TransientProviderError
from distill.extractors import Extraction, from_claims, from_llm_answer, from_text
from distill.model_answers import ModelAnswers
from distill.passes.adjudication import identity_texts_of
from distill.ports import Clock, LLMUsage, Store, Vector
from distill.report import Report

log = logging.getLogger("distill.engine")

OUTAGE_AFTER = 3  # jobs failed in a row by a provider, after its own retries, that end a run


@dataclass(frozen=True)
class Prepared:
    """A claimed job after extraction: everything that can be done outside the lock."""

    job: Job
    events: list[Event]
    candidates: list[Candidate]
    rejections: list[Rejection]
    kind_fallbacks: int = 0
    unread: int = 0  # events the claims route read nothing from: text only, no claims
    wordless: int = 0  # events the text route found no sentence in ("Hi", "OK": too short)

    def identity_texts(self) -> set[str]:
        return {t for c in self.candidates for t in identity_texts_of(c)}


@dataclass(frozen=True)
class Batch:
    """Claimed jobs, extracted and embedded, ready to be decided."""

    prepared: list[Prepared]
    vectors: dict[str, Vector]
    stopped: bool  # a rate limit ended the run: decide these, claim no more
    fresh: dict[str, Vector] = field(default_factory=dict)  # computed, not cached yet, by hash


@dataclass(frozen=True)
class Staged:
    """Claimed jobs with their events loaded, and extracted where no model reads them."""

    job_ids: list[str]  # in the order they were claimed, which is the order they are decided
    prepared: list[Prepared]  # extracted already
    asking: list[tuple[Job, list[Event]]]  # extracted once their event texts are embedded
    stopped: bool  # the run is stopping: nothing more is asked of a model
    lookup: Lookup  # the event texts to embed, and the identity texts of `prepared`

    def held(self) -> list[str]:
        """The jobs this batch still holds (not failed, nor released)."""
        return [p.job.id for p in self.prepared] + [job.id for job, _ in self.asking]


class Preparation:
    """The two steps of preparing a batch (see the module docstring). `fail` and `release`
    are the engine's: a failed job is recorded with its backoff, a released one is pending
    again."""

    def __init__(
        self,
        store: Store,
        extraction: Extraction,
        answers: ModelAnswers,
        cached: CachedEmbedding,
        clock: Clock,
        embed_events: bool,
        stopping: Callable[[], bool],
        fail: Callable[[Job, Exception, Report], None],
        release: Callable[[list[str], Report], None],
    ) -> None:
        self.store = store
        self.extraction = extraction
        self.answers = answers
        self.cached = cached
        self.clock = clock
        self.embed_events = embed_events
        self.stopping = stopping
        self.fail = fail
        self.release = release
        self.outage = 0  # jobs failed in a row by a provider in this run (OUTAGE_AFTER)
        self._recent: dict[str, Vector] = {}  # the last batch's new vectors, by hash

    def start_run(self) -> None:
        """Forget the last run's outage count and vectors."""
        self.outage = 0
        self._recent = {}

    def stage(self, jobs: list[Job], report: Report) -> Staged:
        """Load claimed jobs' events, extract the jobs no model reads (claims, text), and
        look the texts to embed up in the cache. However it breaks, the jobs it was given
        are failed or released before it raises."""
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
            # A database restart, say, broke this read: left running, the jobs would wait
            # out the lease.
            try:
                self.release([job.id for job in jobs], report)
            except DistillError as exc:  # the lease frees them
                log.warning("could not release jobs after a failed read: %s", exc)
            raise
        try:
            return self._stage(loaded, report)
        except BaseException:  # interrupted: whatever is still running goes back
            self._give_back([job.id for job in jobs])
            raise

    def _stage(self, loaded: list[tuple[Job, list[Event]]], report: Report) -> Staged:
        route = self.extraction.route
        asking = [(j, es) for j, es in loaded if any(route(e) == "llm" for e in es)]
        prepared, stop_at = self.prepare_all(
            [(j, es) for j, es in loaded if not any(route(e) == "llm" for e in es)],
            {},
            report,
            asks=False,
        )
        if stop_at is not None:  # shutting down: the jobs left for a model are not asked either
            self.release([j.id for j, _ in asking], report)
            asking = []
        # Event texts, when they are to be embedded, with the identity texts known so far.
        # Their vectors are kept where every vector is, in the embedding cache (sqlite_0018).
        texts = {t for p in prepared for t in p.identity_texts()}
        if self.embed_events:
            texts |= {e.text for _, events in loaded for e in events if e.text.strip()}
        lookup = self.cached.lookup(sorted(texts))
        job_ids = [j.id for j, _ in loaded]
        return Staged(job_ids, prepared, asking, stop_at is not None, lookup)

    def finish(self, staged: Staged, report: Report) -> Batch:
        """Embed what a staged batch needs and extract its jobs that a model reads, a call
        per step: the event texts (when they are embedded) and the identity texts of the
        jobs extracted already in one call, then the model's jobs, then their identity
        texts. However it breaks, the jobs it holds are failed or released."""
        try:
            return self._finish(staged, report)
        except BaseException:  # what was not failed or released where it broke goes back
            self._give_back(staged.job_ids)
            raise

    def _finish(self, staged: Staged, report: Report) -> Batch:
        # The previous batch's new vectors are cached only when it is decided, after this
        # batch was looked up: its texts that come again here are not embedded again.
        lookup = staged.lookup.with_found(self._recent)
        try:
            fresh = self.cached.compute(lookup)
            vectors = self.cached.by_text(lookup, fresh)
        except TransientProviderError as exc:
            return self._embedder_down(exc, staged.held(), report)
        except Exception as exc:
            for p in staged.prepared:
                self.fail(p.job, exc, report)
            for job, _ in staged.asking:
                self.fail(job, exc, report)
            return Batch([], {}, False)
        self._recent = fresh
        asked, stop_at = self.prepare_all(staged.asking, vectors, report, asks=True)
        prepared = staged.prepared
        if stop_at is not None:
            # A provider stopped the run (or it is shutting down) at this job: the jobs
            # claimed after it go back untouched, whether a model reads them or not.
            later = set(staged.job_ids[staged.job_ids.index(stop_at) + 1 :])
            self.release([p.job.id for p in prepared if p.job.id in later], report)
            prepared = [p for p in prepared if p.job.id not in later]
        stopped = stop_at is not None or staged.stopped
        # Then every identity text the model's candidates need, in one call.
        try:
            wanted = {t for p in asked for t in p.identity_texts()} - vectors.keys()
            vectors.update(self.cached.embed(sorted(wanted)))
        except TransientProviderError as exc:  # the model's answers are kept: nothing is lost
            held = [p.job.id for p in (*prepared, *asked)]
            return self._embedder_down(exc, held, report, fresh)
        except Exception as exc:
            for p in (*prepared, *asked):
                self.fail(p.job, exc, report)
            return Batch([], {}, stopped, fresh)  # cached all the same: the next batch uses them
        by_job = {p.job.id: p for p in (*prepared, *asked)}
        ordered = [by_job[job_id] for job_id in staged.job_ids if job_id in by_job]
        return Batch(ordered, vectors, stopped, fresh)

    def _give_back(self, job_ids: list[str]) -> None:
        """Release whichever of `job_ids` this run still holds (a failed, released or done
        job is left as it is), on the way out of an interruption: not counted, the run
        raises."""
        try:
            self.store.release_jobs(job_ids, self.clock.now())
        except DistillError as exc:  # the lease frees them
            log.warning("could not release jobs after an interruption: %s", exc)

    def _embedder_down(
        self,
        exc: TransientProviderError,
        job_ids: list[str],
        report: Report,
        fresh: dict[str, Vector] | None = None,
    ) -> Batch:
        """An embedding server that is down or rate limiting would fail every job the same
        way: the batch goes back to pending, untouched, and the run stops."""
        self.release(job_ids, report)
        report.stopped_by_provider = (
            f"stopped the run: the embedder failed: {exc}; every event is kept: the jobs are "
            "pending for the next run"
        )
        log.error("%s", report.stopped_by_provider)
        return Batch([], {}, True, fresh or {})

    def prepare_all(
        self,
        loaded: Sequence[tuple[Job, list[Event]]],
        vectors: dict[str, Vector],
        report: Report,
        asks: bool,
    ) -> tuple[list[Prepared], str | None]:
        """Extract every claimed job. One failing job never stops the others, but a provider
        that is rate limiting, or that failed OUTAGE_AFTER jobs in a row even after its own
        retries, stops the run: the jobs after it go back to pending untouched (a run against
        a dead server must end, not spend every job's retries); the ones already extracted
        are still applied. `asks`: the jobs go to a model. Only those beat the heartbeat
        before each call and count toward an outage: jobs extracted without a model (on
        the other thread, meanwhile) say nothing about the provider. Returns the jobs
        extracted and, when the run stops here, the job it stopped at (failed or released,
        and every job after it released); None when it goes on."""
        prepared: list[Prepared] = []
        try:
            for index, (job, events) in enumerate(loaded):
                rest = [j.id for j, _ in loaded[index:]]
                if self.stopping():  # shutting down: ask the model nothing more
                    self.release(rest, report)
                    return prepared, job.id

                def beat() -> None:  # after each LLM call, besides the heartbeat thread
                    self.store.heartbeat(self.clock.now())

                usage = LLMUsage()
                stop: Exception | None = None
                try:
                    if asks:
                        beat()
                    prepared.append(
                        self._prepare(job, events, vectors, usage, beat, report.dry_run)
                    )
                    if asks:
                        self.outage = 0
                except TransientProviderError as exc:
                    self.fail(job, exc, report)
                    self.outage += 1  # in a row, across the run's batches
                    # A rate limit or a server that does not answer would do the same to
                    # every job: stop at once rather than wait each one's timeouts out.
                    if isinstance(exc, RateLimited | ProviderTimeout) or (
                        self.outage >= OUTAGE_AFTER
                    ):
                        stop = exc
                except Exception as exc:
                    self.fail(job, exc, report)
                finally:
                    if usage:
                        self.store.add_job_usage(job.id, usage)
                        report.count_llm(usage)
                if stop is not None:
                    self.release(rest[1:], report)
                    report.stopped_by_provider = stopped_line(stop)
                    log.error("%s", report.stopped_by_provider)
                    return prepared, job.id
        except BaseException:  # interrupted (Ctrl-C): nothing of this batch will be decided
            self.store.release_jobs([j.id for j, _ in loaded], self.clock.now())
            raise
        return prepared, None

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
        fallbacks = unread = wordless = 0
        for event in events:
            route = self.extraction.route(event)
            if route == "claims":
                extracted = from_claims(event)
                unread += not event.claims
            elif route == "llm":
                extracted = from_llm_answer(answers[event.id], event)
            else:
                extracted = from_text(event)
                wordless += not extracted.claims and not extracted.rejections
            candidates.extend(Candidate(event, claim, h, route) for claim, h in extracted.claims)
            rejections.extend(extracted.rejections)
            fallbacks += extracted.kind_fallbacks
        return Prepared(job, events, candidates, rejections, fallbacks, unread, wordless)


def stopped_line(exc: Exception) -> str:
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
