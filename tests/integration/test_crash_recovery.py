"""Crash recovery, and runs that share a database: what a user relies on when a `distill
consolidate` or a `distill worker` dies, is cut off from PostgreSQL, or meets another run.

Every run is a real `distill` process (tests/processes.py) on a real database, a SQLite
file or the test PostgreSQL (the `backend` parameter), with the hashing embedder and an
OpenAI-compatible scripted model on 127.0.0.1 (`DISTILL_LLM=openai`): events that carry
claims are consolidated from their claims, and the one in ten that only says something in
words goes to the model, which makes it a memory (tests/llm_server.py `Model`).

A first `distill consolidate` over 2,000 events for 40 subjects (one job each) is killed with
SIGKILL at three points: while the model holds its first request (mid-extraction), inside a
job's transaction (after its writes, before its commit), and between jobs (once some are
done). A second `distill consolidate`, started at once, must finish every job without waiting
for any lease, say how many jobs it reclaimed, and end in the state one uncrashed run reaches
over the same events: compared through `canonical` (tests/workload.py), without ids or
wall-clock times; every event decided once, none lost.
"""

from __future__ import annotations

import itertools
import json
import re
import signal
import socket
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from distill import Memory
from distill.adapters.llm.openai import OpenAILLM
from distill.adapters.store.sqlite import SqliteStore
from distill.engine import LEASE
from tests.llm_server import Held, Model, ScriptedServer, memory_of
from tests.processes import Proc, Processes, stopping_distill, wait_until
from tests.workload import (
    Rows,
    assert_every_job_done_once,
    assert_never_two_active,
    canonical,
    event,
    execute,
    is_postgres,
    jobs_by_status,
    query,
    unfinished,
)

BACKENDS = ["sqlite", "postgres"]
SUBJECTS = 40  # one job each
EVENTS = 2_000  # 50 a subject
RERUN_BOUND_S = 30  # well under what waiting out a lease (LEASE) and a loaded machine take


# -- the events ------------------------------------------------------------------------------------
def noted_event(i: int, subjects: int = SUBJECTS) -> dict[str, Any]:
    """tests/workload.py's event i over `subjects` subjects, except that every tenth event of
    a subject carries no claim and says in words what the model makes a memory of."""
    found = event(i, subjects)
    s, k = i % subjects, i // subjects
    if k % 10 == 9:
        del found["claims"]
        found["text"] = f"s{s:02d} drinks green tea"
    return found


WORKLOAD = [noted_event(i) for i in range(EVENTS)]
BUSY_SUBJECTS = 6  # a small workload, for runs that meet a live or a dead one
BUSY_EVENTS = [noted_event(i, BUSY_SUBJECTS) for i in range(60)]


def seeded(db: str, events: list[dict[str, Any]]) -> str:
    with Memory(db, embedder="hashing") as agent:
        agent.add_events(events)
    return db


def uncrashed_run(db: str, events: list[dict[str, Any]]) -> tuple[Rows, Rows]:
    """The reference: one `Memory.consolidate()` over the same events, asking the same
    scripted model (a server of its own, answering at once)."""
    with ScriptedServer(default=Model(memory_of)) as server:
        llm = OpenAILLM("m", base_url=server.url + "/v1", api_key="sk-test")
        try:
            with Memory(db, embedder="hashing", llm=llm) as mem:
                mem.add_events(events)
                report = mem.consolidate()
        finally:
            llm.close()
    assert report.jobs_failed == 0 and not report.stopped_by_provider, report.errors
    return canonical(db)


# -- fixtures --------------------------------------------------------------------------------------
@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_database(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> Callable[[], str]:
    """Fresh databases of this test's backend: SQLite files, or PostgreSQL URLs."""
    if backend == "postgres":
        make: Callable[[], str] = request.getfixturevalue("make_postgres_database")
        return make
    names = itertools.count()
    return lambda: str(tmp_path / f"memory-{next(names)}.db")


_UNCRASHED: dict[str, tuple[Rows, Rows]] = {}  # by backend: the same for every test here


@pytest.fixture
def uncrashed(backend: str, make_database: Callable[[], str]) -> Callable[[], tuple[Rows, Rows]]:
    """The state one uncrashed run reaches over WORKLOAD (computed once per backend)."""

    def state() -> tuple[Rows, Rows]:
        if backend not in _UNCRASHED:
            _UNCRASHED[backend] = uncrashed_run(make_database(), WORKLOAD)
        return _UNCRASHED[backend]

    return state


@pytest.fixture
def server(processes: Processes) -> Iterator[ScriptedServer]:
    """The scripted model, and every `distill` process of the test configured to ask it."""
    with ScriptedServer(default=Model(memory_of)) as scripted:
        processes.env.update(
            DISTILL_LLM="openai",
            DISTILL_LLM_BASE_URL=scripted.url + "/v1",
            DISTILL_LLM_MODEL="m",
            DISTILL_LLM_API_KEY="sk-test",
        )
        yield scripted


@pytest.fixture
def held(server: ScriptedServer) -> Iterator[Held]:
    """The model holds the test's first request until released (at the latest at teardown)."""
    hold = Held(server.default)
    server.script(hold)
    yield hold
    hold.release()


# -- helpers ---------------------------------------------------------------------------------------
def other_sessions(db: str) -> int:
    sql = """SELECT count(*) FROM pg_stat_activity
             WHERE datname = current_database() AND pid <> pg_backend_pid()"""
    return int(query(db, sql)[0][0])


def listening(db: str) -> int:
    """Sessions waiting for new events: workers past their start-up, idle."""
    sql = """SELECT count(*) FROM pg_stat_activity
             WHERE datname = current_database() AND pid <> pg_backend_pid()
               AND starts_with(query, 'LISTEN ')"""
    return int(query(db, sql)[0][0])


def kill(processes: Processes, proc: Proc, db: str) -> None:
    """SIGKILL, as a crash or the OOM killer would; on PostgreSQL, until the server has ended
    the dead process's session (milliseconds: a server's doing, not a lease)."""
    proc.popen.send_signal(signal.SIGKILL)
    assert processes.finish(proc) == -signal.SIGKILL
    if is_postgres(db):
        wait_until(lambda: other_sessions(db) == 0, 30, "the killed run's session to end")


def rerun(processes: Processes, db: str) -> tuple[str, float]:
    """`distill consolidate` at once: its output (stdout and stderr) and how long it took."""
    started = time.monotonic()
    done = processes.run(db, "consolidate", timeout=120)
    took = time.monotonic() - started
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    return output, took


def assert_finished_at_once(
    db: str, output: str, took: float, left_running: int, uncrashed: tuple[Rows, Rows]
) -> None:
    """Everything the rerun must have done: every job, at once, said, and as if uncrashed."""
    assert jobs_by_status(db) == {"done": SUBJECTS}, output  # none left running or pending
    assert took < RERUN_BOUND_S, f"the rerun took {took:.1f} s"
    reclaimed = re.search(r"reclaimed (\d+) job", output)
    assert reclaimed is not None, output
    assert int(reclaimed[1]) == left_running, output
    assert_every_job_done_once(db, EVENTS)
    assert_never_two_active(db)
    assert canonical(db) == uncrashed


# -- 1. a run killed, then run again at once -------------------------------------------------------
@pytest.mark.http
def test_a_run_killed_while_the_model_holds_a_request_is_finished_at_once_by_the_next(
    make_database: Callable[[], str],
    processes: Processes,
    held: Held,
    uncrashed: Callable[[], tuple[Rows, Rows]],
) -> None:
    """Killed mid-extraction: the model holds the run's first request (the first job of the
    first batch it claimed) and the run is killed while it waits. Its claimed jobs are left
    running, none done; the next run reclaims every one of them at once, finishes all 40
    jobs and ends as an uncrashed run."""
    db = seeded(make_database(), WORKLOAD)
    crashed = processes.distill(db, "consolidate", name="crashed")
    wait_until(
        lambda: held.arrived.is_set() or crashed.popen.poll() is not None, 60, "a model request"
    )
    assert held.arrived.is_set(), crashed.text()
    kill(processes, crashed, db)
    counts = jobs_by_status(db)
    assert counts.get("running", 0) > 0 and "done" not in counts, counts

    output, took = rerun(processes, db)

    assert_finished_at_once(db, output, took, counts["running"], uncrashed())


@pytest.mark.http
def test_a_run_killed_inside_a_jobs_transaction_is_finished_at_once_by_the_next(
    make_database: Callable[[], str],
    processes: Processes,
    server: ScriptedServer,
    tmp_path: Path,
    uncrashed: Callable[[], tuple[Rows, Rows]],
) -> None:
    """Killed inside a job's transaction: the run stops right after writing the facts,
    observations and audit of s20's job (the 21st), before its commit (tests/processes.py
    STOPPING_DISTILL: the write happens inside `serialised`, BEGIN IMMEDIATE on SQLite, a
    transaction holding the subject's advisory lock on PostgreSQL; holding SQLite's write
    lock from another connection instead would stop the run before its transaction, not in
    it). None of that job's writes is visible, before or after the kill; the jobs finished
    before it stay done; the next run reclaims the rest at once and ends as uncrashed."""
    db = seeded(make_database(), WORKLOAD)
    victim = "s20"  # its values change: its job writes facts, retirements and audit
    marker = tmp_path / "inside-the-transaction"
    crashed = stopping_distill(processes, victim, marker, db, "consolidate")
    wait_until(lambda: marker.exists() or crashed.popen.poll() is not None, 60, "the marker")
    assert marker.exists(), crashed.text()
    _, writes = json.loads(marker.read_text())
    assert writes > 0  # the job had written when it was killed
    victims_facts = f"SELECT count(*) FROM facts WHERE subject = '{victim}'"
    assert query(db, victims_facts) == [(0,)]  # not visible while the transaction is open...
    kill(processes, crashed, db)
    assert query(db, victims_facts) == [(0,)]  # ...nor after the kill
    counts = jobs_by_status(db)
    assert counts.get("done", 0) > 0 and counts.get("running", 0) > 0, counts

    output, took = rerun(processes, db)

    assert_finished_at_once(db, output, took, counts["running"], uncrashed())


@pytest.mark.http
def test_a_run_killed_between_jobs_is_finished_at_once_by_the_next(
    make_database: Callable[[], str],
    processes: Processes,
    server: ScriptedServer,
    uncrashed: Callable[[], tuple[Rows, Rows]],
) -> None:
    """Killed between jobs: the model answers in 50 ms, so the run spends a couple of seconds
    extracting its first batch before it decides anything; the test polls the database
    (read-only) and kills the run as soon as a job is done. The finished jobs stay done;
    the next run reclaims the claimed ones at once and ends as uncrashed."""
    db = seeded(make_database(), WORKLOAD)
    server.default = Model(memory_of, delay=0.05)
    crashed = processes.distill(db, "consolidate", name="crashed")
    wait_until(
        lambda: jobs_by_status(db).get("done", 0) > 0 or crashed.popen.poll() is not None,
        60,
        "a first job done",
        every=0.01,
    )
    kill(processes, crashed, db)
    counts = jobs_by_status(db)
    assert counts.get("done", 0) > 0 and counts.get("running", 0) > 0, counts
    server.default = Model(memory_of)

    output, took = rerun(processes, db)

    assert_finished_at_once(db, output, took, counts["running"], uncrashed())


@pytest.mark.http
@pytest.mark.parametrize("backend", ["sqlite"])  # PostgreSQL: test_workers_postgres.py
def test_a_run_killed_inside_a_job_is_redone_after_its_lease_like_an_uncrashed_run(
    make_database: Callable[[], str],
    processes: Processes,
    server: ScriptedServer,
    tmp_path: Path,
    uncrashed: Callable[[], tuple[Rows, Rows]],
) -> None:
    """What holds today whatever the machine: once the dead run's lease has expired (the
    test moves the running jobs' heartbeats LEASE + 1 minute into the past instead
    of waiting), the next `distill consolidate` finishes every job, the killed one on its
    second attempt, and the state equals an uncrashed run's."""
    db = seeded(make_database(), WORKLOAD)
    marker = tmp_path / "inside-the-transaction"
    crashed = stopping_distill(processes, "s20", marker, db, "consolidate")
    wait_until(lambda: marker.exists() or crashed.popen.poll() is not None, 60, "the marker")
    assert marker.exists(), crashed.text()
    job_id, _ = json.loads(marker.read_text())
    kill(processes, crashed, db)
    long_ago = SqliteStore.codec.time(datetime.now(UTC) - LEASE - timedelta(minutes=1))
    execute(db, f"UPDATE jobs SET heartbeat_at = {long_ago} WHERE status = 'running'")

    rerun(processes, db)

    with Memory(db, embedder="hashing") as mem:
        job = mem.store.job(job_id)
    assert (job.status, job.attempts) == ("done", 2)
    assert_every_job_done_once(db, EVENTS)
    assert_never_two_active(db)
    assert canonical(db) == uncrashed()


@pytest.mark.http
def test_memory_consolidate_finishes_at_once_what_a_killed_run_left(
    make_database: Callable[[], str], processes: Processes, held: Held
) -> None:
    """The same through the Python API: a `distill consolidate` killed while the model holds
    its request, then `Memory.consolidate()` in the test's own process. One call finishes
    all six jobs (reclaimed at once) and the state equals an uncrashed run's."""
    db = seeded(make_database(), BUSY_EVENTS)
    crashed = processes.distill(db, "consolidate", name="crashed")
    wait_until(
        lambda: held.arrived.is_set() or crashed.popen.poll() is not None, 60, "a model request"
    )
    assert held.arrived.is_set(), crashed.text()
    kill(processes, crashed, db)
    assert jobs_by_status(db) == {"running": BUSY_SUBJECTS}

    with ScriptedServer(default=Model(memory_of)) as server:
        llm = OpenAILLM("m", base_url=server.url + "/v1", api_key="sk-test")
        try:
            with Memory(db, embedder="hashing", llm=llm) as mem:
                started = time.monotonic()
                report = mem.consolidate()
                took = time.monotonic() - started
        finally:
            llm.close()

    assert report.jobs_done == BUSY_SUBJECTS and report.jobs_failed == 0, report.errors
    assert took < RERUN_BOUND_S
    assert_every_job_done_once(db, len(BUSY_EVENTS))
    assert canonical(db) == uncrashed_run(make_database(), BUSY_EVENTS)


# -- 2. a PostgreSQL worker cut off from the server ------------------------------------------------
CUT_SUBJECTS = 10
CUT_EVENTS = [noted_event(i, CUT_SUBJECTS) for i in range(200)]
AFTERMATH_S = 3  # what the cut-off worker may do once answered: decide ten small jobs
# B may meet the cut in the middle of a run: it pauses ERROR_PAUSE (5 s), then polls again.
TAKEOVER_BOUND_S = 20


@pytest.mark.http
def test_a_worker_cut_off_from_postgresql_loses_its_jobs_to_another_at_once(
    make_postgres_database: Callable[[], str], processes: Processes, held: Held
) -> None:
    """Worker A claims all ten jobs and waits for the model (its first request is held);
    worker B runs beside it with nothing to do. The test then ends every session on the
    database server-side (pg_terminate_backend): B must take A's jobs over at once (well
    under LEASE) and finish them. When A's model finally answers, A, alive and
    reconnected, must not write those jobs again: both workers carry on until SIGTERM, each
    job is counted done by one of them only, every event is decided once, and the state
    equals one uncrashed run's."""
    db, reference = make_postgres_database(), make_postgres_database()
    seeded(db, CUT_EVENTS)
    first = processes.worker(db, "--interval", "0.2")
    wait_until(
        lambda: held.arrived.is_set() or first.popen.poll() is not None, 60, "A's model request"
    )
    assert held.arrived.is_set(), first.text()
    assert jobs_by_status(db) == {"running": CUT_SUBJECTS}
    second = processes.worker(db, "--interval", "0.2")
    # B waits for new events (LISTEN) only once it has opened its store and polled: a cut
    # made while it still opens its store would end it as a start-up failure, not test it.
    wait_until(lambda: listening(db) > 0, 30, "B waiting for events")

    cut_at = time.monotonic()
    query(
        db,
        """SELECT pg_terminate_backend(pid) FROM pg_stat_activity
           WHERE datname = current_database() AND pid <> pg_backend_pid()""",
    )
    try:
        wait_until(lambda: unfinished(db) == 0, TAKEOVER_BOUND_S, "every job done after the cut")
    except AssertionError as exc:  # what each worker met, to tell a slow machine from a bug
        held.release()
        raise AssertionError(
            f"{exc}; jobs {jobs_by_status(db)}\nA:\n{first.text()}\nB:\n{second.text()}"
        ) from None
    took = time.monotonic() - cut_at
    held.release()
    time.sleep(AFTERMATH_S)

    for worker in (first, second):
        assert worker.popen.poll() is None, worker.text()  # a failed poll does not end it
        worker.popen.send_signal(signal.SIGTERM)
        assert processes.finish(worker) == 0, worker.text()
    assert took < TAKEOVER_BOUND_S, f"B took {took:.1f} s to finish A's jobs"
    done_by = [re.search(r"stopped: (\d+) job\(s\) done", w.text()) for w in (first, second)]
    assert all(done_by), [w.text() for w in (first, second)]
    assert sum(int(found[1]) for found in done_by if found) == CUT_SUBJECTS  # each job once
    assert_every_job_done_once(db, len(CUT_EVENTS))
    assert_never_two_active(db)
    assert canonical(db) == uncrashed_run(reference, CUT_EVENTS)


# -- 3. a run beside a live one --------------------------------------------------------------------


@pytest.mark.http
def test_a_run_leaves_the_jobs_of_a_live_run_alone_and_says_so(
    make_database: Callable[[], str], processes: Processes, held: Held
) -> None:
    """Run A has claimed all six jobs and waits for the model. Run B on the same database
    takes none of them (all still running, each claimed once), exits 0, and prints exactly
    one line saying how many jobs another run is consolidating. `distill status` meanwhile
    shows the running jobs with their owner: A's pid and this host. Once the model answers,
    A finishes everything."""
    db = seeded(make_database(), BUSY_EVENTS)
    first = processes.distill(db, "consolidate", name="first")
    wait_until(
        lambda: held.arrived.is_set() or first.popen.poll() is not None, 60, "A's model request"
    )
    assert held.arrived.is_set(), first.text()

    second = processes.run(db, "consolidate")
    status = processes.run(db, "status")

    said = second.stdout + second.stderr
    assert second.returncode == 0, said
    assert jobs_by_status(db) == {"running": BUSY_SUBJECTS}  # nothing stolen
    assert query(db, "SELECT max(attempts) FROM jobs") == [(1,)]
    lines = [line for line in said.splitlines() if "another run" in line]
    assert len(lines) == 1, said
    assert re.search(rf"\b{BUSY_SUBJECTS}\b", lines[0]), lines[0]
    shown = status.stdout + status.stderr
    assert status.returncode == 0, shown
    assert "running" in shown
    assert re.search(rf"\b{first.pid}\b", shown), shown
    assert socket.gethostname() in shown, shown

    held.release()
    assert processes.finish(first) == 0, first.text()
    assert_every_job_done_once(db, len(BUSY_EVENTS))


# -- 4. nothing to do ------------------------------------------------------------------------------
def consolidated(db: str, state: str) -> str:
    """A store with nothing pending: `empty` (no event yet) or `done` (all consolidated)."""
    if state == "done":
        with Memory(db, embedder="hashing") as mem:
            mem.add_events([event(i) for i in range(40)])
            assert mem.consolidate().jobs_done == 20
    return db


@pytest.mark.parametrize("state", ["empty", "done"])
def test_nothing_to_consolidate_is_said_in_one_line(
    make_database: Callable[[], str], processes: Processes, state: str
) -> None:
    """A store with nothing pending: `distill consolidate` exits 0 and prints exactly one
    line, which says there is nothing to consolidate (no table)."""
    db = consolidated(make_database(), state)

    done = processes.run(db, "consolidate")

    assert done.returncode == 0, done.stderr
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert "nothing to consolidate" in lines[0]


def test_nothing_to_consolidate_is_still_json_with_json(
    make_database: Callable[[], str], processes: Processes
) -> None:
    """`distill consolidate --json` with nothing pending prints a JSON report (all counters
    zero) and exits 0."""
    db = consolidated(make_database(), "done")

    done = processes.run(db, "consolidate", "--json")

    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["counters"]["jobs_done"] == 0
    assert not any(report["counters"].values())
