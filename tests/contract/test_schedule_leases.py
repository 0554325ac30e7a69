"""The schedule's rows and leases on every backend: of several workers sharing one database,
one at most runs a scheduled pass of a scope for one due time; the rows keep the run's end;
real passes run through the registry (dedupe's dry run writes nothing)."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, cast

from distill import Memory
from distill.adapters.embed.hashing import HashingEmbedder
from distill.core.schedule import Outcome, finish
from distill.scheduled_passes import PASSES, PassSettings, ScheduledPass
from distill.scheduler import Scheduler, ScheduleSettings
from distill.service.worker import Worker
from tests.contract.test_dedupe import SUBJECT, plant

if TYPE_CHECKING:
    from distill.ports import ScheduleStore, Store
    from tests.conftest import FakeClock


def schedule_of(store: object) -> ScheduleStore:
    return cast("ScheduleStore", store)


def test_a_lease_is_taken_once_for_a_generation_and_finishing_frees_it(
    open_store: Callable[[], Store], clock: FakeClock
) -> None:
    one, two = schedule_of(open_store()), schedule_of(open_store())
    now = clock.now()
    one.schedule_add("p", "", ["dedupe", "judge"], now)
    two.schedule_add("p", "", ["dedupe"], now)  # a second add changes nothing
    rows = two.schedule("p")
    assert [(r.pass_name, r.generation, r.due_at) for r in rows] == [
        ("dedupe", 0, now),
        ("judge", 0, now),
    ]
    row = rows[0]
    until = now + timedelta(minutes=5)

    assert one.take_lease(row, "one", now, until)
    assert not two.take_lease(row, "two", now, until)
    end = finish(row, Outcome({"n": 1}), now, timedelta(hours=24), timedelta(minutes=15))
    assert not two.finish_run(row, "two", now, end, {"n": 1})  # not its lease
    assert one.finish_run(row, "one", now, end, {"n": 1, "notes": ["é"]})
    assert not two.take_lease(row, "two", now, until)  # read before the run: stale

    after = two.schedule("p")[0]
    assert (after.generation, after.runs, after.lease_owner) == (1, 1, None)
    assert after.last_report == {"n": 1, "notes": ["é"]}
    assert after.last_clean_at == now and after.due_at == now + timedelta(hours=24)
    assert two.take_lease(after, "two", now, until)  # free, for the new generation

    assert one.force_due("p", "judge", now + timedelta(hours=1)) == 1
    assert one.force_due("other", None, now) == 0


def test_two_workers_sharing_a_database_run_a_scheduled_pass_once_per_due_time(
    database: str, clock: FakeClock
) -> None:
    """Two worker processes' worth of threads (two Workers, two threads each, each thread
    with its own Memory and connections) race over the same due passes of three projects:
    each runs once; after the interval, once more."""
    seed = Memory(database, embedder=HashingEmbedder(64), clock=clock, extractor="text")
    for project in ("a", "b", "c"):
        seed.add_event(subject="u", text="I live in Lyon.", project=project)
    seed.close()
    runs: Counter[tuple[str, str]] = Counter()
    lock = threading.Lock()
    gate = threading.Barrier(4)

    def counting(name: str) -> ScheduledPass:
        def run(memory: Memory, project: str, settings: PassSettings) -> Outcome:
            with lock:
                runs[(project, name)] += 1
            return Outcome({"pass": name})

        return ScheduledPass(name, run)

    def open_memory() -> Memory:
        mem = Memory(database, embedder=HashingEmbedder(64), clock=clock, extractor="text")
        gate.wait(timeout=60)  # every thread reaches the schedule at about the same time
        return mem

    original = dict(PASSES)
    PASSES.clear()
    PASSES.update({"tidy": counting("tidy"), "sweep": counting("sweep")})
    try:
        for round_ in (1, 2):
            gate.reset()
            workers = [
                Worker(open_memory, concurrency=2, schedule=ScheduleSettings()) for _ in "ab"
            ]
            threads = [threading.Thread(target=w.run, kwargs={"once": True}) for w in workers]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=120)
            expected = {(p, n): round_ for p in "abc" for n in ("tidy", "sweep")}
            assert dict(runs) == expected
            assert sum(w.totals.scheduled_runs for w in workers) == 6
            clock.advance(hours=24)
    finally:
        PASSES.clear()
        PASSES.update(original)


def test_a_scheduled_dry_run_of_dedupe_reports_every_group_and_writes_nothing(
    memory: Memory, clock: FakeClock
) -> None:
    """SCENARIOS 38 through the schedule: the report lists the group; nothing is retired;
    the run is checkpointed (a dry run is clean) with its report, counts only."""
    plant(memory, "The deploy runs on Fridays.", count=1)
    plant(memory, "the deploy runs on fridays", minutes=1)
    before = sorted((f.id, f.status) for f in memory.facts(subject=SUBJECT, include_retired=True))
    settings = ScheduleSettings(passes={"dedupe": PassSettings(dry_run=True)})
    scheduler = Scheduler(memory, settings, "w", registry={"dedupe": PASSES["dedupe"]})

    ran = scheduler.run_next()

    assert ran is not None and ran.outcome.clean
    assert ran.outcome.report["groups_merged"] == 1 and ran.outcome.report["dry_run"] is True
    after = sorted((f.id, f.status) for f in memory.facts(subject=SUBJECT, include_retired=True))
    assert after == before
    row = schedule_of(memory.store).schedule()[0]
    assert row.last_report is not None and row.last_report["groups"] == 1  # counted, not kept
    assert row.health == "ok" and row.last_clean_at == clock.now()


def test_erasing_a_project_erases_its_schedule_and_a_subject_s_leaves_it(
    memory: Memory, clock: FakeClock
) -> None:
    for project in ("gone", "kept"):
        memory.add_event(subject="u", text="I live in Lyon.", project=project)
    memory.consolidate()
    Scheduler(memory, ScheduleSettings(), "w", registry={"dedupe": PASSES["dedupe"]}).run_next()
    store = schedule_of(memory.store)
    store.schedule_add("kept", "", ["dedupe"], clock.now())
    assert {r.project for r in store.schedule()} == {"gone", "kept"}

    memory.erase("kept", subject="u")
    assert {r.project for r in store.schedule()} == {"gone", "kept"}
    memory.erase("gone")
    assert {r.project for r in store.schedule()} == {"kept"}
