"""Claims on jobs, on every backend: who holds a running job, when it is taken back, and why a
claimer whose job was taken back can no longer finish it.

A claimer "in another process" is a real process: a short Python program opens a store on
the test's database, claims, and exits (or stays alive until told to stop), so that the
process checks look at a real pid and start time.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from distill.core.models import JobStatus
from distill.errors import ClaimLost
from distill.ports import Store
from tests.factories import T0, at, make_event

LEASE_START = at(1)  # `stalled_before` a fresh claim made at T0 is older than


def append(store: Store, subject: str) -> str:
    [(event, _)] = store.append_events([make_event(subject=subject)], T0)
    [job] = [j for j in store.jobs() if event.id in j.event_ids]
    return job.id


CLAIMER = textwrap.dedent(
    """
    import sys
    from datetime import datetime, timezone
    from distill.adapters.store import open_store

    store, _ = open_store(sys.argv[1])
    claimed = store.claim_jobs(datetime(2024, 5, 1, 12, tzinfo=timezone.utc), 100, 5)
    print(len(claimed), flush=True)
    if sys.argv[2] == "stay":
        sys.stdin.readline()  # alive until the test closes our stdin
    """
)


@contextmanager
def claimer(database: str, stay: bool) -> Iterator[subprocess.Popen[str]]:
    """A process that claims every due job, then exits at once (a crash, as far as its
    claims can tell: nothing is released) or stays alive until the block ends."""
    with subprocess.Popen(
        [sys.executable, "-c", CLAIMER, database, "stay" if stay else "exit"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            assert proc.stdout is not None
            assert int(proc.stdout.readline()) > 0, "the claimer claimed nothing"
            if not stay:
                proc.wait(timeout=30)
            yield proc
        finally:
            if proc.poll() is None:
                proc.communicate("\n", timeout=30)


def test_a_claim_records_who_holds_the_job(store: Store) -> None:
    job_id = append(store, "a")
    store.claim_jobs(T0, 10, 3)
    [running] = store.counts(None).running_jobs
    assert running.id == job_id
    assert running.owner is not None and running.owner.startswith("pid ")
    assert running.claimed_at == T0


def test_the_jobs_of_a_claimer_whose_process_died_are_taken_back_at_once(
    store: Store, database: str
) -> None:
    job_id = append(store, "a")
    with claimer(database, stay=False):
        pass
    assert store.job(job_id).status is JobStatus.RUNNING

    # Long before the lease would expire: the dead process is seen at once.
    found = store.reclaim(T0, stalled_before=T0 - (LEASE_START - T0), max_attempts=5)

    assert (found.from_gone, found.stalled, found.held) == (1, 0, ())
    assert len(found.gone) == 1 and found.gone[0].owner.pid != 0
    assert store.job(job_id).status is JobStatus.PENDING
    assert [j.id for j in store.claim_jobs(at(1), 10, 5)] == [job_id]


def test_the_jobs_of_a_live_claimer_are_left_to_it_and_reported(
    store: Store, database: str
) -> None:
    job_id = append(store, "a")
    with claimer(database, stay=True) as proc:
        found = store.reclaim(T0, stalled_before=T0, max_attempts=5)
        assert found.jobs == 0
        [held] = found.held
        assert (held.owner.pid, held.jobs) == (proc.pid, 1)
        assert store.job(job_id).status is JobStatus.RUNNING


def test_a_claimer_whose_job_was_taken_back_cannot_finish_or_fail_it(
    open_store: Callable[[], Store],
) -> None:
    first, second = open_store(), open_store()
    job_id = append(first, "a")
    [job] = first.claim_jobs(T0, 10, 5)
    # The first claimer looks stalled (no heartbeat for a lease): the second takes it.
    assert second.reclaim(at(5), stalled_before=at(2), max_attempts=5).stalled == 1
    assert [j.id for j in second.claim_jobs(at(5), 10, 5)] == [job_id]

    with pytest.raises(ClaimLost):
        first.finish_job(job.id, at(6))
    with pytest.raises(ClaimLost):
        first.fail_job(job.id, "late", at(6), None)
    first.release_jobs([job.id], at(6))  # not its claim: nothing happens
    first.heartbeat(at(7))  # beats only its own claims
    assert second.job(job_id).status is JobStatus.RUNNING

    second.finish_job(job_id, at(8))
    assert second.job(job_id).status is JobStatus.DONE


def test_a_claimers_heartbeat_renews_only_its_own_claims(
    open_store: Callable[[], Store],
) -> None:
    first, second = open_store(), open_store()
    mine, theirs = append(first, "a"), append(first, "b")
    first.claim_jobs(T0, 1, 5)
    second.claim_jobs(T0, 1, 5)
    first.heartbeat(at(10))
    found = second.reclaim(at(11), stalled_before=at(5), max_attempts=5)
    assert found.stalled == 1
    assert first.job(mine).status is JobStatus.RUNNING
    assert first.job(theirs).status is JobStatus.PENDING


def test_a_job_taken_back_and_claimed_again_by_the_same_store_is_a_new_claim(
    store: Store,
) -> None:
    """A decision made under the first claim cannot finish the job once it was taken back
    and claimed again, even by the same store: the attempt names the claim."""
    job_id = append(store, "a")
    [first] = store.claim_jobs(T0, 10, 5)
    assert store.reclaim(at(5), stalled_before=at(2), max_attempts=5).stalled == 1
    [again] = store.claim_jobs(at(5), 10, 5)
    assert again.attempts == first.attempts + 1

    with pytest.raises(ClaimLost):
        store.finish_job(job_id, at(6), attempts=first.attempts)
    with pytest.raises(ClaimLost):
        store.fail_job(job_id, "late", at(6), None, attempts=first.attempts)
    store.finish_job(job_id, at(7), attempts=again.attempts)
    assert store.job(job_id).status is JobStatus.DONE
