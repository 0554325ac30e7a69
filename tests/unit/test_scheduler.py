"""The worker's schedule with a fake clock: due on first sight, catch-up once after downtime,
a checkpoint only after a clean run, retries after a pause, health, isolation between
scopes, the cortex gate, hot-changed settings, and the worker's priorities (jobs before the
schedule). Runners here are scripted registry entries, so each rule is tested on its own;
`test_scheduled_hygiene` runs the real passes."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, cast

import pytest
from pydantic import ValidationError

from distill import Memory
from distill.core.schedule import FAILING_AFTER, Finish, Outcome, ScheduleRow, Trigger
from distill.scheduled_passes import PASSES, PassSettings, ScheduledPass
from distill.scheduler import Scheduler, ScheduleSettings
from distill.service.worker import Worker

if TYPE_CHECKING:
    from distill.ports import ScheduleStore
    from tests.conftest import FakeClock

MemoryFactory = Callable[..., Memory]


class Script:
    """A scripted pass: records each run (project), answers with the next scripted outcome
    (or raises it), clean once the script is spent."""

    def __init__(self, *answers: Outcome | Exception) -> None:
        self.answers = list(answers)
        self.runs: list[str] = []

    def __call__(self, memory: Memory, project: str, settings: PassSettings) -> Outcome:
        self.runs.append(project)
        answer = self.answers.pop(0) if self.answers else Outcome({"pass": "x", "done": 1})
        if isinstance(answer, Exception):
            raise answer
        return answer


def scheduler(mem: Memory, settings: ScheduleSettings | None = None, **passes: Script) -> Scheduler:
    registry = {name: ScheduledPass(name, run) for name, run in passes.items()}
    return Scheduler(mem, settings or ScheduleSettings(), "test-worker", registry=registry)


def row(mem: Memory, name: str, project: str = "default") -> ScheduleRow:
    return next(r for r in schedule_of(mem).schedule(project) if r.pass_name == name)


def schedule_of(mem: Memory) -> ScheduleStore:
    return cast("ScheduleStore", mem.store)


def drain(s: Scheduler) -> int:
    """Call the scheduler until nothing is due; how many runs it made."""
    runs = 0
    while s.run_next() is not None:
        runs += 1
        assert runs < 100, "the scheduler runs without end"
    return runs


def test_a_project_s_passes_are_due_when_first_seen_then_every_interval(
    mem: Memory, clock: FakeClock
) -> None:
    mem.add_event(subject="u", text="I live in Lyon.")
    tidy = Script()
    s = scheduler(mem, tidy=tidy)

    assert drain(s) == 1 and tidy.runs == ["default"]
    clock.advance(hours=23, minutes=59)
    assert drain(s) == 0
    clock.advance(minutes=1)
    assert drain(s) == 1 and tidy.runs == ["default", "default"]


def test_nothing_is_scheduled_for_a_database_without_projects(mem: Memory) -> None:
    tidy = Script()
    assert drain(scheduler(mem, tidy=tidy)) == 0 and tidy.runs == []


def test_catch_up_after_downtime_runs_a_missed_pass_once_not_once_per_interval(
    make_memory: MemoryFactory, clock: FakeClock
) -> None:
    """Five days without a worker: the next worker runs the daily pass once, then a day
    after that run (not at the old cadence's next tick)."""
    first = make_memory()
    first.add_event(subject="u", text="I live in Lyon.")
    assert drain(scheduler(first, tidy=Script())) == 1
    first.close()

    clock.advance(days=5, hours=7)
    again = make_memory()
    tidy = Script()
    s = scheduler(again, tidy=tidy)
    assert drain(s) == 1
    clock.advance(hours=17)  # the old cadence's next tick: not a run
    assert drain(s) == 0
    clock.advance(hours=7)
    assert drain(s) == 1 and len(tidy.runs) == 2


def test_an_error_keeps_the_pass_due_and_it_is_retried_after_a_pause(
    mem: Memory, clock: FakeClock
) -> None:
    """SCENARIOS 40: a run with an error keeps "due" true; no checkpoint is taken."""
    mem.add_event(subject="u", text="I live in Lyon.")
    tidy = Script(RuntimeError("disk on fire"))
    s = scheduler(mem, ScheduleSettings(retry_minutes=10), tidy=tidy)

    assert drain(s) == 1
    failed = row(mem, "tidy")
    assert failed.last_clean_at is None and failed.health == "degraded"
    assert "disk on fire" in failed.last_error
    assert [r.pass_name for r in s.due(clock.now() + timedelta(minutes=10))] == ["tidy"]
    clock.advance(minutes=9)
    assert drain(s) == 0  # the retry pause
    clock.advance(minutes=1)
    assert drain(s) == 1
    done = row(mem, "tidy")
    assert done.last_clean_at == clock.now() and done.health == "ok"
    assert done.last_error is None and done.failures == 0


def test_errors_in_a_row_make_a_pass_failing_with_growing_pauses(
    mem: Memory, clock: FakeClock
) -> None:
    mem.add_event(subject="u", text="I live in Lyon.")
    tidy = Script(*[RuntimeError(f"boom {n}") for n in range(FAILING_AFTER)])
    s = scheduler(mem, ScheduleSettings(retry_minutes=10), tidy=tidy)

    pauses = []
    for n in range(FAILING_AFTER):
        assert s.run_next() is not None
        r = row(mem, "tidy")
        pauses.append(r.retry_at - clock.now())
        assert r.health == ("failing" if n + 1 >= FAILING_AFTER else "degraded")
        clock.current = r.retry_at
    assert pauses == [timedelta(minutes=10 * 2**n) for n in range(FAILING_AFTER)]
    assert row(mem, "tidy").last_error == f"RuntimeError: boom {FAILING_AFTER - 1}"


@pytest.mark.parametrize("stop", ["cap", "budget"])
def test_a_cap_or_budget_stop_keeps_the_pass_due_until_a_clean_run(
    mem: Memory, clock: FakeClock, stop: str
) -> None:
    mem.add_event(subject="u", text="I live in Lyon.")
    short = Outcome({"pass": "tidy", "retired": 200}, stop=stop, detail="50 left")
    tidy = Script(short)
    s = scheduler(mem, ScheduleSettings(retry_minutes=15), tidy=tidy)

    assert drain(s) == 1
    r = row(mem, "tidy")
    assert r.last_clean_at is None and r.health == "degraded" and r.last_error == "50 left"
    assert r.failures == 0  # more work, not a failure
    assert r.last_report["stopped"] == {"why": stop, "detail": "50 left"}
    clock.advance(minutes=15)
    assert drain(s) == 1  # the rest, then the checkpoint
    assert row(mem, "tidy").last_clean_at == clock.now()


def test_a_fail_soft_tier_is_named_and_does_not_block_the_checkpoint(
    mem: Memory, clock: FakeClock
) -> None:
    """SCENARIOS 40's other half: a model that is down is named in the report; the
    deterministic work is checkpointed (the pass is next due an interval later)."""
    mem.add_event(subject="u", text="I live in Lyon.")
    soft = Outcome({"pass": "tidy", "merged": 2}, soft=("model: ProviderUnavailable: 503",))
    s = scheduler(mem, tidy=Script(soft))

    assert drain(s) == 1
    r = row(mem, "tidy")
    assert r.last_clean_at == clock.now() and r.health == "degraded"
    assert r.last_report == {
        "pass": "tidy",
        "merged": 2,
        "soft": ["model: ProviderUnavailable: 503"],
    }
    assert s.due(clock.now() + timedelta(hours=23)) == []


def test_one_project_s_failure_never_stops_another_s_or_another_pass(
    mem: Memory, clock: FakeClock
) -> None:
    for project in ("alpha", "beta"):
        mem.add_event(subject="u", text="I live in Lyon.", project=project)
    broken = Script(RuntimeError("alpha only"))  # the first run (alpha's) raises
    other = Script()
    s = scheduler(mem, broken=broken, other=other)

    assert drain(s) == 4
    assert sorted(broken.runs) == ["alpha", "beta"] and sorted(other.runs) == ["alpha", "beta"]
    health = {(r.project, r.pass_name): r.health for r in schedule_of(mem).schedule()}
    assert health == {
        ("alpha", "broken"): "degraded",
        ("alpha", "other"): "ok",
        ("beta", "broken"): "ok",
        ("beta", "other"): "ok",
    }


def test_the_cortex_gate_looks_at_a_slow_pass_every_nth_cycle_only(
    mem: Memory, clock: FakeClock
) -> None:
    mem.add_event(subject="u", text="I live in Lyon.")
    slow = Script()
    # model_construct: these scripted passes are not in the registry the validator knows.
    settings = ScheduleSettings.model_construct(passes={"slow": PassSettings(every_cycles=3)})
    s = scheduler(mem, settings, slow=slow)

    assert [s.run_next() is not None for _ in range(3)] == [False, False, True]


def test_settings_read_at_each_cycle_take_effect_at_once(mem: Memory, clock: FakeClock) -> None:
    """A reload: a shorter interval counts from the last clean run; a disabled pass and a
    project left out of the allowlist stop running."""
    mem.add_event(subject="u", text="I live in Lyon.")
    mem.add_event(subject="u", text="I live in Paris.", project="other")
    tidy = Script()
    current = {"settings": ScheduleSettings()}
    registry = {"tidy": ScheduledPass("tidy", tidy)}
    s = Scheduler(mem, lambda: current["settings"], "w", registry=registry)
    assert drain(s) == 2

    clock.advance(hours=2)
    assert drain(s) == 0
    current["settings"] = ScheduleSettings.model_construct(
        passes={"tidy": PassSettings(interval_hours=1, projects=("other",))}
    )
    assert drain(s) == 1 and tidy.runs[-1] == "other"
    current["settings"] = ScheduleSettings.model_construct(
        passes={"tidy": PassSettings(enabled=False)}
    )
    clock.advance(hours=30)
    assert drain(s) == 0


def test_a_pass_held_by_another_worker_is_left_alone_until_its_lease_runs_out(
    make_memory: MemoryFactory, clock: FakeClock
) -> None:
    first, second = make_memory(), make_memory()
    first.add_event(subject="u", text="I live in Lyon.")
    a, b = Script(), Script()
    one = scheduler(first, ScheduleSettings(lease_minutes=30), tidy=a)
    other = scheduler(second, ScheduleSettings(lease_minutes=30), tidy=b)
    one.owner, other.owner = "one", "two"
    one._add_rows(one.enabled(one.settings), clock.now())
    held = row(first, "tidy")
    assert schedule_of(first).take_lease(
        held, "one", clock.now(), clock.now() + timedelta(minutes=30)
    )

    assert drain(other) == 0  # one holds it (and died holding it)
    clock.advance(minutes=30)
    assert drain(other) == 1 and b.runs == ["default"]
    # The dead holder's late end is not written over the run that replaced it.
    assert not schedule_of(first).finish_run(held, "one", clock.now(), one_finish(), {})
    assert row(first, "tidy").runs == 1


def one_finish() -> Finish:
    at = datetime(2030, 1, 1, tzinfo=UTC)
    return Finish(clean_at=at, due_at=at, retry_at=None, health="ok", error=None, failures=0)


def test_unknown_settings_are_refused_by_name() -> None:
    with pytest.raises(ValidationError, match="interval_hour"):
        PassSettings(interval_hour=3)
    with pytest.raises(ValidationError, match="unknown pass\\(es\\) dedupes"):
        ScheduleSettings(passes={"dedupes": PassSettings()})
    with pytest.raises(ValidationError):
        PassSettings(interval_hours=0)


# -- the worker: priorities ------------------------------------------------------------------------
def test_the_worker_does_its_jobs_before_the_schedule_and_keeps_going_on_failures(
    make_memory: MemoryFactory, clock: FakeClock
) -> None:
    """Jobs first: every job is done before the first scheduled pass runs; a scheduled pass
    that raises is recorded and the worker carries on (and ends cleanly)."""
    mem = make_memory(extractor="text")
    for n in range(3):
        mem.add_event(subject=f"s{n}", text=f"Person {n} lives in Lyon.")
    order: list[str] = []

    def tidy(memory: Memory, project: str, settings: PassSettings) -> Outcome:
        pending = [j for j in memory.store.jobs() if j.status.value == "pending"]
        order.append(f"tidy with {len(pending)} pending")
        raise RuntimeError("tidy breaks")

    settings = ScheduleSettings()
    worker = Worker(lambda: make_memory(extractor="text"), schedule=settings)
    from distill import scheduled_passes

    original = dict(scheduled_passes.PASSES)
    scheduled_passes.PASSES.clear()
    scheduled_passes.PASSES["tidy"] = ScheduledPass("tidy", tidy)
    try:
        totals = worker.run(once=True)
    finally:
        scheduled_passes.PASSES.clear()
        scheduled_passes.PASSES.update(original)
    assert totals.jobs_done == 3 and totals.scheduled_runs == 1
    assert order == ["tidy with 0 pending"]
    assert row(mem, "tidy").health == "degraded"


def test_a_stop_request_comes_before_a_due_pass(mem: Memory) -> None:
    mem.add_event(subject="u", text="I live in Lyon.")
    tidy = Script()
    stop = threading.Event()
    stop.set()
    assert scheduler(mem, tidy=tidy).run_next(stop) is None and tidy.runs == []
    assert row(mem, "tidy").lease_owner is None


def test_the_worker_s_trigger_leaves_a_quiet_subject_for_its_timer(
    make_memory: MemoryFactory, clock: FakeClock
) -> None:
    """`[worker] min_events = 3`: a subject with 3 new events is extracted, one with 1 waits
    for the timer (15 min), then is extracted by the next cycle."""
    mem = make_memory(extractor="text")
    for n in range(3):
        mem.add_event(subject="busy", text=f"Busy fact number {n}.")
    mem.add_event(subject="quiet", text="Quiet lives in Lyon.")
    trigger = Trigger(min_events=3, max_wait=timedelta(minutes=15))

    def worker() -> Worker:
        return Worker(lambda: make_memory(extractor="text"), trigger=trigger)

    assert worker().run(once=True).jobs_done == 1
    clock.advance(minutes=15)
    assert worker().run(once=True).jobs_done == 1
    assert sorted({f.subject for f in mem.facts()}) == ["busy", "quiet"]


def test_a_project_the_worker_just_saw_is_scheduled_without_waiting_for_the_listing(
    mem: Memory, clock: FakeClock
) -> None:
    tidy = Script()
    s = scheduler(mem, tidy=tidy)
    assert drain(s) == 0  # no project yet; the next listing is a minute away
    mem.add_event(subject="u", text="I live in Lyon.", project="fresh")
    assert drain(s) == 0  # not listed again yet
    s.saw({"fresh"})
    assert drain(s) == 1 and tidy.runs == ["fresh"]


def test_derive_procedures_and_topics_are_scheduled_passes_that_do_their_work(
    make_memory: MemoryFactory, clock: FakeClock
) -> None:
    """The registry's own entries (no scripts): a due project gets its votes elected, its
    actions counted into a procedure and its co-mentioned names into a topic, each pass
    checkpointed clean; a day later they run once more and find nothing new."""
    mem = make_memory(policies={"uses": "vote"})
    mem.add_events(
        [
            {
                "subject": "alex",
                "text": f"alex uses {value}",
                "source": f"site-{i}",
                "trust": "third_party",
                "claims": [{"predicate": "uses", "value": {"language": value}}],
            }
            for i, value in enumerate(["rust", "rust", "go"])
        ]
    )
    mem.add_events(
        [
            {
                "subject": "agent",
                "text": f"{kind} in {session}",
                "action": {"type": kind, "outcome": "success", "session": session, "seq": seq},
            }
            for session in ("s1", "s2", "s3")
            for seq, kind in enumerate(("build", "test"))
        ]
    )
    mem.add_events([{"subject": "u", "text": "Ada met Bob in Lyon."}])
    mem.consolidate()
    only = ("derive", "procedures", "topics")
    s = Scheduler(mem, ScheduleSettings(), "test-worker", registry={n: PASSES[n] for n in only})

    assert drain(s) == 3
    assert [f.value for f in mem.facts("alex") if f.predicate == "uses"] == [{"language": "rust"}]
    [procedure] = mem.procedures("agent")
    assert (procedure.name, procedure.status.value) == ("build → test", "active")
    assert [set(t.names) for t in mem.topics("u")] == [{"Ada", "Bob", "Lyon"}]
    for name in only:
        done = row(mem, name)
        assert (done.health, done.last_error, done.runs) == ("ok", None, 1), name
        assert done.last_clean_at == clock.now(), name

    clock.advance(hours=24)
    assert drain(s) == 3
    assert [row(mem, name).runs for name in only] == [2, 2, 2]
    assert len(mem.procedures("agent")) == 1 and len(mem.topics("u")) == 1
