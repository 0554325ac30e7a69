"""`distill worker`: consolidation that runs continuously.

Each of `concurrency` threads owns its own `Memory` (its own connections) and loops: run
every due job, then, when there was nothing to do, wait up to `interval` seconds. On
PostgreSQL new events wake the wait at once (LISTEN/NOTIFY), then the worker waits `settle`
seconds more so that a burst is extracted together; on SQLite it simply polls. Jobs are claimed
atomically by the store, so threads, and worker processes on the same database, never take
the same job. Waiting between runs is also what makes a steady stream cheap: the events that
arrive meanwhile are extracted together, in one model call per batch.

A stop request (SIGTERM, SIGINT, or `Worker.stop()`) lets each thread finish the job it is
deciding; the jobs it had claimed but not started go back to pending for the next worker.
A configuration error ends the worker at once (exit status 1); any other error is logged and
the thread carries on after a pause, so a database restart costs a few failed polls, not the
worker.

When a subject's new events are extracted is the `trigger`'s: once its pending job holds
`min_events` events, or once it waited `max_wait` (`distill consolidate` forces every
pending job). `distill worker` and `distill serve` take it from the configuration (20 events
or 15 minutes by default, see `WorkerSettings`); without one, every pending job is due.

Beside the jobs, each thread runs the scheduled passes (`distill.scheduler`: dedupe, judge
and whichever the configuration turns on, each on its own interval per project, under a
lease in the database). Priorities, in this order: a stop request (checked before anything
is started), then jobs (a thread that did a job polls for more at once), then the schedule
(one due pass per idle poll, then the jobs again). A scheduled pass that fails is recorded
on its schedule row and never stops the worker.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType

from distill.core.schedule import Trigger
from distill.errors import ConfigurationError, StoreError
from distill.memory import Memory
from distill.report import Report
from distill.scheduler import Ran, Scheduler, ScheduleSettings

log = logging.getLogger("distill.worker")

ERROR_PAUSE = 5.0  # seconds a thread waits after an unexpected error before polling again
BACKOFF_PAUSE = 30.0  # after a run the provider stopped (429, outage): give it time


# The name the metrics give extraction and adjudication (the jobs), beside the scheduled
# passes' own names.
EXTRACT = "extract"
# What a job run changed, among its report's counters, as the metrics count facts.
JOB_CHANGES = ("created", "superseded", "reinforced", "conflict")


@dataclass
class Totals:
    """What a worker has done since it started, all threads together; per pass (`extract`
    for the jobs, and each scheduled pass): cycles by result, seconds, facts changed, model
    calls and tokens, failures. `/metrics` reads them."""

    runs: int = 0
    jobs_done: int = 0
    jobs_failed: int = 0
    llm_calls: int = 0
    errors: int = 0
    scheduled_runs: int = 0  # scheduled passes run (clean or not)
    cycles: Counter[tuple[str, str]] = field(default_factory=Counter)  # (pass, result)
    seconds: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    facts: Counter[tuple[str, str]] = field(default_factory=Counter)  # (pass, change)
    model_calls: Counter[str] = field(default_factory=Counter)  # by pass
    model_tokens: Counter[str] = field(default_factory=Counter)  # by pass
    failures: Counter[str] = field(default_factory=Counter)  # by pass
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, report: Report, seconds: float = 0.0) -> None:
        with self.lock:
            self.runs += 1
            self.jobs_done += report.jobs_done
            self.jobs_failed += report.jobs_failed
            self.llm_calls += report.llm_calls
            if not (report.jobs_done or report.jobs_failed):
                return  # an idle poll is not a cycle
            self.cycles[(EXTRACT, "failed" if report.jobs_failed else "clean")] += 1
            self.seconds[EXTRACT] += seconds
            counters = report.counters()
            for change in JOB_CHANGES:
                self.facts[(EXTRACT, change)] += counters.get(change, 0)
            self.model_calls[EXTRACT] += report.llm_calls
            self.model_tokens[EXTRACT] += report.prompt_tokens + report.completion_tokens
            self.failures[EXTRACT] += report.jobs_failed

    def add_scheduled(self, ran: Ran) -> None:
        name, outcome = ran.row.pass_name, ran.outcome
        with self.lock:
            self.scheduled_runs += 1
            self.cycles[(name, outcome.stop or "clean")] += 1
            self.seconds[name] += ran.seconds
            for change, n in outcome.counts.items():
                if change == "llm_calls":
                    self.model_calls[name] += n
                elif change == "llm_tokens":
                    self.model_tokens[name] += n
                else:
                    self.facts[(name, change)] += n
            self.failures[name] += outcome.stop == "error"


class Worker:
    def __init__(
        self,
        open_memory: Callable[[], Memory],
        concurrency: int = 1,
        interval: float = 2.0,
        on_run: Callable[[Report], None] | None = None,
        settle: float = 0.5,
        schedule: ScheduleSettings | Callable[[], ScheduleSettings] | None = None,
        on_scheduled: Callable[[Ran], None] | None = None,
        trigger: Trigger | None = None,
    ) -> None:
        if concurrency < 1:
            raise ConfigurationError("concurrency must be at least 1")
        if interval <= 0:
            raise ConfigurationError("interval must be a positive number of seconds")
        self.open_memory = open_memory
        self.concurrency = concurrency
        self.interval = interval
        self.settle = min(settle, interval)
        self.on_run = on_run
        # None: no scheduled passes (jobs only, as `Memory.consolidate` in a loop).
        self.schedule = schedule
        self.on_scheduled = on_scheduled
        self.trigger = trigger  # None: every pending job at once
        self.totals = Totals()
        self._stop = threading.Event()
        self._fatal: BaseException | None = None

    def stop(self) -> None:
        self._stop.set()

    def run(self, once: bool = False) -> Totals:
        """Work until stopped (or, with `once`, until nothing is due). Raises the first
        configuration error any thread met."""
        threads = [
            threading.Thread(target=self._loop, args=(once,), name=f"distill-worker-{n}")
            for n in range(self.concurrency)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if self._fatal is not None:
            raise self._fatal
        return self.totals

    def _loop(self, once: bool) -> None:
        try:
            memory = self.open_memory()
        except BaseException as exc:  # a bad URL, a missing extra: nothing to retry
            self._fatal = exc
            self._stop.set()
            return
        scheduler = self._scheduler(memory)
        with memory:
            while not self._stop.is_set():
                started = time.monotonic()
                try:
                    report = memory.consolidate(stop=self._stop, trigger=self.trigger)
                except ConfigurationError as exc:
                    self._fatal = exc
                    self._stop.set()
                    return
                except Exception as exc:
                    _log_failure("consolidation failed", exc)
                    with self.totals.lock:
                        self.totals.errors += 1
                    self._stop.wait(ERROR_PAUSE)
                    continue
                self.totals.add(report, time.monotonic() - started)
                if scheduler is not None:
                    scheduler.saw(report.projects)
                if note := report.reclaim_note():  # not the held jobs: every poll would say so
                    log.warning("%s", note)
                if self.on_run is not None and (report.jobs_done or report.jobs_failed):
                    self.on_run(report)
                if report.stopped_by_provider and not self._stop.is_set():
                    # The provider ended the run (rate limit, outage): do not hammer it.
                    self._stop.wait(max(self.interval, BACKOFF_PAUSE))
                elif report.jobs_done or report.jobs_failed:
                    continue  # there may be more: poll again at once
                elif scheduler is not None and self._scheduled(scheduler):
                    continue  # a scheduled pass ran: the jobs first again, then the next
                elif once:
                    return
                else:
                    self._idle(memory)

    def _scheduler(self, memory: Memory) -> Scheduler | None:
        if self.schedule is None:
            return None
        # Who holds a lease, as a person reads it: the host, the process and its store.
        who = getattr(memory.store, "owner", None)
        owner = f"{who.host}:{who.pid}:{who.token[:12]}" if who else threading.current_thread().name
        return Scheduler(memory, self.schedule, owner, on_run=self._ran)

    def _scheduled(self, scheduler: Scheduler) -> bool:
        """Run one due scheduled pass; whether one ran. The schedule's own store calls may
        raise (a database away): logged, and the thread polls again after a pause."""
        try:
            return scheduler.run_next(self._stop) is not None
        except Exception as exc:
            _log_failure("the schedule cannot be read", exc)
            with self.totals.lock:
                self.totals.errors += 1
            self._stop.wait(ERROR_PAUSE)
            return False

    def _ran(self, ran: Ran) -> None:
        self.totals.add_scheduled(ran)
        if self.on_scheduled is not None:
            self.on_scheduled(ran)

    def _idle(self, memory: Memory) -> None:
        """Wait for new events (woken at once on PostgreSQL), at most `interval` seconds."""
        try:
            woken = memory.store.wait_for_events(self.interval, self._stop)
        except Exception as exc:  # the database is away: the next poll says more
            log.warning("cannot wait for new events; polling", exc_info=_trace(exc))
            self._stop.wait(self.interval)
            return
        if woken:  # let the rest of a burst arrive, so that it is extracted together
            self._stop.wait(self.settle)

    def stop_on_signals(self) -> None:
        """Stop gracefully on SIGTERM and SIGINT (a second SIGINT interrupts at once)."""

        def handle(signum: int, frame: FrameType | None) -> None:
            log.warning("%s: finishing the current job, then stopping", signal.Signals(signum).name)
            self.stop()
            signal.signal(signal.SIGINT, signal.default_int_handler)

        signal.signal(signal.SIGTERM, handle)
        signal.signal(signal.SIGINT, handle)


def _log_failure(what: str, exc: Exception) -> None:
    """One line for a database that is away (a `StoreError`: its message says what the
    driver said), a traceback for anything else, which is a bug; then the pause."""
    log.error("%s: %s; trying again in %.0f s", what, exc, ERROR_PAUSE, exc_info=_trace(exc))


def _trace(exc: Exception) -> Exception | None:
    """The exception to log with its traceback, or None for a `StoreError` (at DEBUG the
    traceback is logged too)."""
    if isinstance(exc, StoreError):
        log.debug("the traceback of: %s", exc, exc_info=exc)
        return None
    return exc
