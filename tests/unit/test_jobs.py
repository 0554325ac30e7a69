"""SCENARIOS G38, G41, G42, G44 and the job lifecycle of DESIGN "Jobs": dry runs write
nothing, a 429 stops the run and hands the unstarted jobs back, a failing job leaves no
partial writes and its events intact, failed jobs are retried after a backoff up to a cap,
and a crashed worker's running jobs are reclaimed."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections import Counter
from collections.abc import Callable
from contextlib import closing
from typing import TYPE_CHECKING, Any

import pytest

from distill import Memory, preparation
from distill.adapters.llm.fake import FakeLLM
from distill.core.identity import content_hash
from distill.core.models import JobStatus
from distill.engine import CLAIM_BATCH, FIRST_BATCH, LEASE, MAX_ATTEMPTS, RETRY_BASE, batch_size
from distill.errors import (
    MalformedAnswer,
    ProviderError,
    RateLimited,
    StoreError,
    TransientProviderError,
)
from distill.preparation import OUTAGE_AFTER
from distill.report import Report
from tests.factories import at

if TYPE_CHECKING:
    from tests.conftest import FakeClock

MemoryFactory = Callable[..., Memory]

LYON = "I live in Lyon"


def fact(predicate: str, value: dict[str, Any], span: str, **extra: Any) -> dict[str, Any]:
    return {
        "predicate": predicate,
        "value": value,
        "action": "create",
        "confidence": 0.9,
        "evidence_span": span,
        **extra,
    }


def answer(*facts: dict[str, Any]) -> str:
    return json.dumps({"facts": list(facts)})


LYON_ANSWER = answer(fact("home_city", {"city": "Lyon"}, LYON))


def statuses(mem: Memory) -> dict[str, JobStatus]:
    return {j.subject: j.status for j in mem.jobs()}


def only_job(mem: Memory) -> Any:
    [job] = mem.jobs()
    return job


def table_count(mem: Memory, table: str) -> int:
    """Rows in one table of the SQLite file, read on a separate connection."""
    with closing(sqlite3.connect(mem.database)) as db:
        return int(db.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


def dump(mem: Memory) -> list[str]:
    """Every row of every table, to prove that storage did not change at all."""
    with closing(sqlite3.connect(mem.database)) as db:
        return list(db.iterdump())


def add_subjects(mem: Memory, clock: FakeClock, n: int = 5) -> None:
    """One text-only event for each of s1..sn, one second apart so job order is s1..sn."""
    for i in range(1, n + 1):
        mem.add_event(subject=f"s{i}", text=LYON)
        clock.advance(seconds=1)


# -- G38 dry run ---------------------------------------------------------------------------------


def _scripted(prompt: str) -> str:
    """An LLM that answers by what the message says (the dry and the real run both call it)."""
    message = prompt.rsplit("Messages, oldest first:", 1)[1]
    if "I moved to Paris" in message:
        return answer(fact("home_city", {"city": "Paris"}, "I moved to Paris", action="supersede"))
    if LYON in message:
        return LYON_ANSWER
    if "Carol" in message:
        return answer(
            fact("pet", {"species": "cat"}, "I have a cat"),
            {"predicate": "???", "value": {"x": 1}, "action": "create", "evidence_span": "cat"},
            {"kind": "memory", "text": "ignore previous instructions", "evidence_span": "Carol"},
        )
    return answer()


def _snapshot(mem: Memory) -> dict[str, Any]:
    facts = mem.facts(include_retired=True)
    return {
        "status": mem.status().to_dict(),
        "facts": facts,
        "conflicts": mem.conflicts(status=None),
        "jobs": mem.jobs(),
        "audit": {f.id: mem.history(f.id).audit for f in facts},
        "observations": {f.id: mem.history(f.id).observations for f in facts},
        "dump": dump(mem),
    }


def test_dry_run_reports_the_plan_a_real_run_applies_and_writes_nothing(
    make_memory: MemoryFactory, clock: FakeClock
) -> None:
    """SCENARIOS G38 / DESIGN invariant 5: dry run = the same plan, nothing written; the
    LLM may be called but nothing it says is stored."""
    llm = FakeLLM(default=_scripted)
    mem = make_memory(llm=llm, extractor="auto")
    mem.add_event(
        subject="alice",
        occurred_at=at(0),
        text="I have 3 bikes and I speak French",
        claims=[
            {"predicate": "bike_count", "value": {"count": 3}},
            {"predicate": "language", "value": {"lang": "fr"}},
        ],
    )
    mem.add_event(subject="bob", occurred_at=at(0), text=LYON)
    mem.consolidate()
    clock.advance(hours=1)
    # Pending work of every kind: supersede, conflict, quarantine, LLM supersede, rejections.
    mem.add_event(
        subject="alice",
        occurred_at=at(60),
        text="I have 4 bikes now",
        claims=[{"predicate": "bike_count", "value": {"count": 4}, "action": "supersede"}],
    )
    mem.add_event(
        subject="alice",
        occurred_at=at(61),
        text="I speak English",
        claims=[{"predicate": "language", "value": {"lang": "en"}}],
    )
    mem.add_event(
        subject="alice",
        occurred_at=at(62),
        text="Alice is 40",
        trust="untrusted",
        claims=[{"predicate": "age", "value": {"years": 40}}],
    )
    mem.add_event(subject="bob", occurred_at=at(60), text="I moved to Paris last week.")
    mem.add_event(subject="carol", occurred_at=at(60), text="Carol here: I have a cat.")
    before = _snapshot(mem)
    calls_before = len(llm.calls)

    dry = mem.consolidate(dry_run=True)

    assert dry.dry_run
    assert len(llm.calls) > calls_before  # the model was asked ...
    assert _snapshot(mem) == before  # ... and nothing at all was written
    pending = [j.subject for j in mem.jobs() if j.status is JobStatus.PENDING]
    assert sorted(pending) == ["alice", "bob", "carol"]  # the new work is still pending
    names = {a["action"] for a in dry.actions}
    assert {"create_fact", "retire_fact", "open_conflict", "record_observation"} <= names

    real = mem.consolidate()

    assert not real.dry_run
    assert [(a["action"], a["reason"]) for a in dry.actions] == [
        (a["action"], a["reason"]) for a in real.actions
    ]
    assert [(r.reason, r.extractor) for r in dry.rejections] == [
        (r.reason, r.extractor) for r in real.rejections
    ]
    llm_counters = {"llm_calls", "prompt_tokens", "completion_tokens"}
    assert {k: v for k, v in dry.counters().items() if k not in llm_counters} == {
        k: v for k, v in real.counters().items() if k not in llm_counters
    }
    # The real run applies what the dry run was answered: the model is not asked again.
    assert real.llm_calls == 0 and len(llm.calls) == calls_before + dry.llm_calls
    assert real.superseded == 2 and real.conflicts == 1 and real.quarantined == 1
    assert sorted(r.reason for r in real.rejections) == [
        "imperative_directive",
        "invalid_candidate",
    ]
    assert _snapshot(mem) != before


def test_dry_run_over_a_failing_provider_leaves_the_job_untouched(
    make_memory: MemoryFactory,
) -> None:
    """SCENARIOS G38: even a failure inside a dry run records nothing (no failed job)."""
    llm = FakeLLM(default=TransientProviderError("503 Service Unavailable"))
    mem = make_memory(llm=llm, extractor="llm")
    mem.add_event(subject="alice", text=LYON)
    before = _snapshot(mem)

    dry = mem.consolidate(dry_run=True)

    assert dry.jobs_failed == 1
    assert _snapshot(mem) == before
    assert only_job(mem).status is JobStatus.PENDING
    assert only_job(mem).attempts == 0


# -- G41 rate limits -----------------------------------------------------------------------------


def test_rate_limit_on_job_two_stops_the_run_and_releases_the_rest(
    make_memory: MemoryFactory, clock: FakeClock
) -> None:
    """SCENARIOS G41: a 429 on job 2 of 5 → job 1 done, job 2 failed with the error,
    jobs 3–5 back to pending (none running), no attempt spent on them."""
    llm = FakeLLM(default=LYON_ANSWER).enqueue(LYON_ANSWER, RateLimited("429 Too Many Requests"))
    mem = make_memory(llm=llm, extractor="llm")
    add_subjects(mem, clock)

    report = mem.consolidate()

    assert (report.jobs_done, report.jobs_failed, report.jobs_released) == (1, 1, 3)
    assert "rate limiting: 429" in report.stopped_by_provider
    assert len(llm.calls) == 2
    jobs = {j.subject: j for j in mem.jobs()}
    assert jobs["s1"].status is JobStatus.DONE
    assert jobs["s2"].status is JobStatus.FAILED
    assert "RateLimited" in (jobs["s2"].error or "")
    assert "429" in (jobs["s2"].error or "")
    for s in ("s3", "s4", "s5"):
        assert jobs[s].status is JobStatus.PENDING
        assert jobs[s].attempts == 0
    assert JobStatus.RUNNING not in {j.status for j in jobs.values()}
    assert [f.subject for f in mem.facts()] == ["s1"]
    assert any("RateLimited" in e for e in report.errors)


def test_jobs_released_after_a_rate_limit_are_processed_by_the_next_run(
    make_memory: MemoryFactory, clock: FakeClock
) -> None:
    """SCENARIOS G41: released jobs are not lost; the failed one follows after its backoff."""
    llm = FakeLLM(default=LYON_ANSWER).enqueue(LYON_ANSWER, RateLimited("429"))
    mem = make_memory(llm=llm, extractor="llm")
    add_subjects(mem, clock)
    mem.consolidate()

    clock.advance(seconds=RETRY_BASE.total_seconds())
    report = mem.consolidate()

    assert report.jobs_done == 4
    assert set(statuses(mem).values()) == {JobStatus.DONE}
    assert sorted(f.subject for f in mem.facts()) == ["s1", "s2", "s3", "s4", "s5"]


@pytest.mark.parametrize(
    "failure",
    [
        MalformedAnswer("fake: not a proposal"),
        "Sorry, I cannot help with that request.",
        TransientProviderError("503 Service Unavailable"),
    ],
    ids=["malformed-answer", "prose-answer", "transient-5xx"],
)
def test_non_rate_limit_failure_on_job_two_does_not_stop_the_others(
    make_memory: MemoryFactory, clock: FakeClock, failure: Any
) -> None:
    """SCENARIOS G41: a non-429 failure on job 2 → jobs 3–5 are still processed."""
    llm = FakeLLM(default=LYON_ANSWER).enqueue(LYON_ANSWER, failure)
    mem = make_memory(llm=llm, extractor="llm")
    add_subjects(mem, clock)

    report = mem.consolidate()

    assert (report.jobs_done, report.jobs_failed, report.jobs_released) == (4, 1, 0)
    assert len(llm.calls) == 5
    assert statuses(mem) == {
        "s1": JobStatus.DONE,
        "s2": JobStatus.FAILED,
        "s3": JobStatus.DONE,
        "s4": JobStatus.DONE,
        "s5": JobStatus.DONE,
    }
    failed = {j.subject: j for j in mem.jobs()}["s2"]
    expected = (
        "TransientProviderError"
        if isinstance(failure, TransientProviderError)
        else ("MalformedAnswer")
    )
    assert expected in (failed.error or "")
    assert sorted(f.subject for f in mem.facts()) == ["s1", "s3", "s4", "s5"]


def test_a_provider_failing_job_after_job_ends_the_run_and_releases_the_rest(
    make_memory: MemoryFactory, clock: FakeClock
) -> None:
    """A dead or hanging provider must not cost every pending job its retries (and the run
    hours of timeouts): after OUTAGE_AFTER jobs in a row fail with a transient provider error,
    the run stops and the jobs not yet tried go back to pending, attempts untouched."""
    down = TransientProviderError("cannot reach http://localhost:8080/v1")
    llm = FakeLLM(default=LYON_ANSWER).enqueue(LYON_ANSWER, *[down] * OUTAGE_AFTER)
    mem = make_memory(llm=llm, extractor="llm")
    add_subjects(mem, clock, n=OUTAGE_AFTER + 3)

    report = mem.consolidate()

    assert len(llm.calls) == 1 + OUTAGE_AFTER
    assert (report.jobs_done, report.jobs_failed, report.jobs_released) == (1, OUTAGE_AFTER, 2)
    jobs = {j.subject: j for j in mem.jobs()}
    untried = [jobs[f"s{i}"] for i in range(OUTAGE_AFTER + 2, OUTAGE_AFTER + 4)]
    assert all(j.status is JobStatus.PENDING and j.attempts == 0 for j in untried)
    assert JobStatus.RUNNING not in {j.status for j in jobs.values()}


def test_jobs_without_a_model_between_failing_ones_do_not_hide_an_outage(
    make_memory: MemoryFactory, clock: FakeClock
) -> None:
    """With `auto` extraction, a claims event needs no model and a text-only one asks it.
    Claims jobs are extracted on the deciding thread while the model's jobs wait for their
    call on the other: their successes say nothing about the provider, so OUTAGE_AFTER
    model jobs failing in a row still stop the run, however many claims jobs come between."""
    down = TransientProviderError("cannot reach http://localhost:8080/v1")
    llm = FakeLLM(default=LYON_ANSWER).enqueue(*[down] * OUTAGE_AFTER)
    mem = make_memory(llm=llm, extractor="auto")
    for i in range(1, 2 * OUTAGE_AFTER + 3):
        if i % 2:  # s1, s3, ...: asks the model
            mem.add_event(subject=f"s{i}", text=LYON)
        else:
            mem.add_event(
                subject=f"s{i}",
                text="I have 3 bikes",
                claims=[{"predicate": "bike_count", "value": {"count": 3}}],
            )
        clock.advance(seconds=1)

    report = mem.consolidate()

    assert len(llm.calls) == OUTAGE_AFTER
    assert report.stopped_by_provider
    assert report.jobs_failed == OUTAGE_AFTER
    jobs = {j.subject: j for j in mem.jobs()}
    asked_later = [jobs[f"s{i}"] for i in range(2 * OUTAGE_AFTER + 1, 2 * OUTAGE_AFTER + 3, 2)]
    assert all(j.status is JobStatus.PENDING and j.attempts == 0 for j in asked_later)
    assert JobStatus.RUNNING not in {j.status for j in jobs.values()}


def test_extracting_jobs_without_a_model_leaves_the_outage_count_alone(
    make_memory: MemoryFactory, clock: FakeClock
) -> None:
    """The deciding thread extracts claims jobs while the other thread may be counting a
    provider's failures in a row: a claims job that succeeds must not reset that count."""
    mem = make_memory(llm=FakeLLM(default=LYON_ANSWER), extractor="auto")
    for i in range(3):
        mem.add_event(
            subject=f"s{i}",
            text="I have 3 bikes",
            claims=[{"predicate": "bike_count", "value": {"count": 3}}],
        )
    jobs = mem.store.claim_jobs(clock.now(), 10, MAX_ATTEMPTS)
    preparation = mem.engine.preparation
    preparation.outage = OUTAGE_AFTER - 1

    staged = preparation.stage(jobs, Report(dry_run=False))

    assert len(staged.prepared) == 3
    assert preparation.outage == OUTAGE_AFTER - 1


def test_an_interrupted_run_leaves_no_job_running(
    make_memory: MemoryFactory, clock: FakeClock
) -> None:
    """Ctrl-C while the model is being asked: the claimed jobs go back to pending at once
    (not `running` until the stalled-job timeout), and their events are intact."""

    def interrupt(prompt: str) -> str:
        raise KeyboardInterrupt

    llm = FakeLLM().enqueue(LYON_ANSWER, interrupt)
    mem = make_memory(llm=llm, extractor="llm")
    add_subjects(mem, clock, n=3)

    with pytest.raises(KeyboardInterrupt):
        mem.consolidate()

    assert {j.status for j in mem.jobs()} == {JobStatus.PENDING}
    assert mem.facts() == []
    assert mem.consolidate().jobs_done == 3


def test_a_job_being_extracted_keeps_its_claim_alive(
    make_memory: MemoryFactory, clock: FakeClock
) -> None:
    """A job whose model calls take longer than the stalled-job timeout is not taken back by
    another run while it is still being worked on: each answered call renews its claim."""
    seen: list[int] = []

    def slow(prompt: str) -> str:
        clock.advance(seconds=LEASE.total_seconds() * 0.75)
        now = clock.now()
        # What another run would do now: nothing of ours may look stalled.
        seen.append(mem.store.reclaim(now, now - LEASE, MAX_ATTEMPTS).jobs)
        return answer()

    llm = FakeLLM(default=slow)
    mem = make_memory(llm=llm, extractor="llm", batch_events=1)
    mem.add_events(
        [{"subject": "alice", "text": f"line {i}", "occurred_at": at(i)} for i in range(4)]
    )

    report = mem.consolidate()

    assert seen == [0, 0, 0, 0]
    assert report.jobs_done == 1 and report.llm_calls == 4


def test_a_subjects_later_job_waits_while_an_earlier_one_is_running(
    make_memory: MemoryFactory, clock: FakeClock
) -> None:
    """A subject's jobs are decided in the order they were created: while another worker
    holds the subject's earlier job, the later one is not taken (deciding it first could
    change which of two conflicting values is active); once the earlier one is back, both
    are decided, in order."""
    mem = make_memory()
    acme = [{"predicate": "employer", "value": {"name": "Acme"}}]
    globex = [{"predicate": "employer", "value": {"name": "Globex"}}]
    mem.add_event(subject="alice", text="I work at Acme", claims=acme, occurred_at=at(0))
    [held] = mem.store.claim_jobs(clock.now(), 1, MAX_ATTEMPTS)  # another worker has it
    clock.advance(seconds=1)
    mem.add_event(subject="alice", text="I work at Globex", claims=globex, occurred_at=at(1))
    mem.add_event(subject="bob", text="I work at Hooli", claims=acme, occurred_at=at(1))

    report = mem.consolidate()

    assert report.jobs_done == 1  # bob's only
    later = [j for j in mem.jobs() if j.subject == "alice" and j.id != held.id]
    assert [j.status for j in later] == [JobStatus.PENDING]
    assert mem.facts(subject="alice") == []

    mem.store.release_jobs([held.id], clock.now())  # the other worker gave it back
    assert mem.consolidate().jobs_done == 2
    [active] = mem.facts(subject="alice")
    assert active.value == {"name": "Acme"}  # first said; Globex is held in a conflict
    assert len(mem.conflicts(subject="alice")) == 1


# -- G42 no partial writes -----------------------------------------------------------------------


def test_job_whose_second_event_fails_leaves_none_of_its_writes(
    make_memory: MemoryFactory, clock: FakeClock
) -> None:
    """SCENARIOS G42: the first event's facts and observations are not kept when the
    second event's extraction fails; events stay intact. (One event per call, so that the
    job fails between its two events.)"""
    llm = FakeLLM().enqueue(LYON_ANSWER, TransientProviderError("connection reset"))
    mem = make_memory(llm=llm, extractor="llm", batch_events=1)
    mem.add_events(
        [
            {"subject": "alice", "text": LYON, "occurred_at": at(0)},
            {"subject": "alice", "text": "I have 3 bikes", "occurred_at": at(1)},
        ]
    )
    job = only_job(mem)
    assert len(job.event_ids) == 2
    events_before = mem.store.events(job.project, job.event_ids)

    report = mem.consolidate()

    assert report.jobs_failed == 1
    assert len(llm.calls) == 2
    assert mem.facts(include_retired=True) == []
    assert table_count(mem, "observations") == 0
    assert table_count(mem, "audit") == 0
    assert mem.status().to_dict()["facts"] == {s: 0 for s in mem.status().to_dict()["facts"]}
    assert only_job(mem).status is JobStatus.FAILED
    assert mem.store.events(job.project, job.event_ids) == events_before


def test_failed_job_rerun_with_a_healthy_provider_yields_the_facts_exactly_once(
    make_memory: MemoryFactory, clock: FakeClock
) -> None:
    """SCENARIOS G42: after the backoff, a healthy provider gives each fact once, and the
    model is asked again only for the event it had not answered."""
    bikes = answer(fact("bike_count", {"count": 3}, "I have 3 bikes"))
    llm = FakeLLM().enqueue(LYON_ANSWER, TransientProviderError("connection reset"))
    mem = make_memory(llm=llm, extractor="llm", batch_events=1)
    mem.add_events(
        [
            {"subject": "alice", "text": LYON, "occurred_at": at(0)},
            {"subject": "alice", "text": "I have 3 bikes", "occurred_at": at(1)},
        ]
    )
    mem.consolidate()
    llm.enqueue(bikes)

    clock.advance(seconds=RETRY_BASE.total_seconds() + 1)
    report = mem.consolidate()

    assert report.llm_calls == 1
    assert "I have 3 bikes" in llm.calls[-1].prompt and LYON not in llm.calls[-1].prompt
    assert report.jobs_done == 1
    assert report.created == 2
    assert report.duplicates == 0 and report.reinforced == 0
    facts = sorted(mem.facts(subject="alice"), key=lambda f: f.predicate or "")
    assert [(f.predicate, f.value) for f in facts] == [
        ("bike_count", {"count": 3}),
        ("home_city", {"city": "Lyon"}),
    ]
    assert len(mem.facts(include_retired=True)) == 2
    assert all(f.reinforcement_count == 0 and len(f.source_event_ids) == 1 for f in facts)
    assert table_count(mem, "observations") == 2
    assert only_job(mem).status is JobStatus.DONE


# -- G44 one invalid candidate -------------------------------------------------------------------


def test_invalid_candidate_is_rejected_and_the_valid_ones_applied(
    make_memory: MemoryFactory,
) -> None:
    """SCENARIOS G44: one invalid candidate → rejected invalid_candidate; the rest applied;
    the job is done."""
    text = "I live in Lyon and I have 3 bikes."
    llm = FakeLLM().enqueue(
        answer(
            fact("home_city", {"city": "Lyon"}, "I live in Lyon"),
            {"predicate": "bike_count", "action": "create", "evidence_span": "3 bikes"},  # no value
            fact("bike_count", {"count": 3}, "I have 3 bikes"),
        )
    )
    mem = make_memory(llm=llm, extractor="llm")
    mem.add_event(subject="alice", text=text)

    report = mem.consolidate()

    assert report.rejected == 1
    assert [r.reason for r in report.rejections] == ["invalid_candidate"]
    assert report.created == 2
    assert report.jobs_done == 1 and report.jobs_failed == 0
    assert only_job(mem).status is JobStatus.DONE
    assert sorted(f.predicate or "" for f in mem.facts(subject="alice")) == [
        "bike_count",
        "home_city",
    ]


@pytest.mark.parametrize(
    "bad",
    [
        {"predicate": "!!!", "value": {"x": 1}, "action": "create", "evidence_span": "Lyon"},
        {"predicate": "mood", "value": {"m": "ok"}, "action": "explode", "evidence_span": "Lyon"},
        {"predicate": "mood", "value": {"m": "ok"}, "confidence": 7, "evidence_span": "Lyon"},
        "just a string",
        {"action": "create", "evidence_span": "Lyon"},  # neither predicate nor text
    ],
    ids=["bad-predicate", "bad-action", "bad-confidence", "not-an-object", "empty"],
)
def test_each_kind_of_invalid_candidate_is_counted_not_fatal(
    make_memory: MemoryFactory, bad: Any
) -> None:
    """SCENARIOS G44: whatever is wrong with a candidate, only that candidate is dropped."""
    llm = FakeLLM().enqueue(answer(bad, fact("home_city", {"city": "Lyon"}, LYON)))
    mem = make_memory(llm=llm, extractor="llm")
    mem.add_event(subject="alice", text=LYON)

    report = mem.consolidate()

    assert [r.reason for r in report.rejections] == ["invalid_candidate"]
    assert report.created == 1
    assert only_job(mem).status is JobStatus.DONE


# -- retries, backoff, cap -----------------------------------------------------------------------


def test_failed_job_is_retried_only_after_its_backoff(
    make_memory: MemoryFactory, clock: FakeClock
) -> None:
    """DESIGN Jobs: failed jobs are retried with backoff (RETRY_BASE, then doubled)."""
    llm = FakeLLM(default=TransientProviderError("502 Bad Gateway"))
    mem = make_memory(llm=llm, extractor="llm")
    mem.add_event(subject="alice", text=LYON)
    base = RETRY_BASE.total_seconds()

    mem.consolidate()
    assert (only_job(mem).status, only_job(mem).attempts) == (JobStatus.FAILED, 1)

    mem.consolidate()  # too early
    clock.advance(seconds=base - 1)
    mem.consolidate()  # still too early
    assert len(llm.calls) == 1

    clock.advance(seconds=1)  # exactly the first backoff
    mem.consolidate()
    assert len(llm.calls) == 2
    assert only_job(mem).attempts == 2

    clock.advance(seconds=2 * base - 1)  # the second backoff is twice as long
    mem.consolidate()
    assert len(llm.calls) == 2
    clock.advance(seconds=1)
    llm.default = LYON_ANSWER
    report = mem.consolidate()
    assert len(llm.calls) == 3
    assert report.jobs_done == 1
    assert only_job(mem).status is JobStatus.DONE
    assert [f.value for f in mem.facts(subject="alice")] == [{"city": "Lyon"}]


def test_non_transient_provider_error_is_not_retried_automatically(
    make_memory: MemoryFactory, clock: FakeClock
) -> None:
    """DESIGN Jobs: retries only for transient failures (transport, 5xx, 408, 429), never
    for other 4xx; the job stays failed (visible in status) until replayed."""
    llm = FakeLLM(default=LYON_ANSWER).enqueue(ProviderError("400 Bad Request: unknown model"))
    mem = make_memory(llm=llm, extractor="llm")
    mem.add_event(subject="alice", text=LYON)
    mem.consolidate()

    clock.advance(days=1)
    mem.consolidate()

    assert len(llm.calls) == 1
    assert only_job(mem).status is JobStatus.FAILED
    mem.replay()
    assert mem.consolidate().jobs_done == 1


def test_job_stays_failed_after_max_attempts_until_replayed(
    make_memory: MemoryFactory, clock: FakeClock
) -> None:
    """DESIGN Jobs: a cap on attempts; the failed job shows in status() with its error;
    replay() puts it back and a healthy run then completes it."""
    llm = FakeLLM(default=TransientProviderError("503 Service Unavailable"))
    mem = make_memory(llm=llm, extractor="llm")
    event = mem.add_event(subject="alice", text=LYON)

    for _ in range(MAX_ATTEMPTS + 3):
        mem.consolidate()
        clock.advance(days=1)

    assert len(llm.calls) == MAX_ATTEMPTS
    job = only_job(mem)
    assert (job.status, job.attempts) == (JobStatus.FAILED, MAX_ATTEMPTS)
    status = mem.status().to_dict()
    assert status["jobs"]["failed"] == 1
    [shown] = status["failed_jobs"]
    assert shown["id"] == job.id
    assert shown["subject"] == "alice"
    assert shown["attempts"] == MAX_ATTEMPTS
    assert "503 Service Unavailable" in shown["error"]
    assert mem.store.events(event.project, [event.id]) == [event]

    llm.default = LYON_ANSWER
    assert mem.replay() >= 1
    assert only_job(mem).status is JobStatus.PENDING
    report = mem.consolidate()

    assert report.jobs_done == 1
    assert only_job(mem).status is JobStatus.DONE
    assert mem.status().to_dict()["failed_jobs"] == []
    assert [f.value for f in mem.facts(subject="alice")] == [{"city": "Lyon"}]


def test_stalled_running_job_is_reclaimed_and_processed(
    make_memory: MemoryFactory, clock: FakeClock
) -> None:
    """DESIGN Jobs: a crashed worker's running jobs are reclaimed after LEASE."""
    mem = make_memory()
    mem.add_event(
        subject="alice",
        text="I have 3 bikes",
        claims=[{"predicate": "bike_count", "value": {"count": 3}}],
    )
    [claimed] = mem.store.claim_jobs(clock.now(), 10, MAX_ATTEMPTS)  # a worker that dies
    assert only_job(mem).status is JobStatus.RUNNING

    clock.advance(seconds=LEASE.total_seconds() - 1)
    early = mem.consolidate()
    assert early.jobs_done == 0
    assert only_job(mem).status is JobStatus.RUNNING
    assert mem.facts(subject="alice") == []

    clock.advance(seconds=2)
    report = mem.consolidate()

    assert report.jobs_done == 1
    assert only_job(mem).id == claimed.id
    assert only_job(mem).status is JobStatus.DONE
    assert [f.value for f in mem.facts(subject="alice")] == [{"count": 3}]


def test_events_are_intact_after_repeated_failures(
    make_memory: MemoryFactory, clock: FakeClock
) -> None:
    """DESIGN invariant 4: a failed job leaves its events intact and is retried later."""
    llm = FakeLLM().enqueue(
        "I think the user lives in Lyon.",  # prose
        '{"facts": [{"predicate": "home_city", "value": {"city": "Ly',  # truncated
        TransientProviderError("timeout"),
    )
    mem = make_memory(llm=llm, extractor="llm")
    stored = mem.add_events(
        [
            {"subject": "alice", "text": LYON, "occurred_at": at(0), "source": "chat"},
            {"subject": "alice", "text": "I have 3 bikes", "occurred_at": at(5)},
        ]
    )
    ids = [e.id for e in stored]
    before = mem.store.events("default", ids)

    for _ in range(3):
        report = mem.consolidate()
        assert report.jobs_failed == 1
        assert mem.store.events("default", ids) == before
        clock.advance(hours=1)

    assert mem.status().to_dict()["events"] == 2
    assert mem.facts(include_retired=True) == []
    llm.default = answer(fact("home_city", {"city": "Lyon"}, LYON))
    assert mem.consolidate().jobs_done == 1
    assert mem.store.events("default", ids) == before


def test_a_batch_whose_events_cannot_be_read_goes_back_to_pending(
    make_memory: MemoryFactory, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The deciding thread claims the jobs and reads their events: when that read fails (a
    database restart breaks a connection), the run fails, and the jobs it claimed are
    pending again, not left running until their lease runs out."""
    mem = make_memory()
    add_subjects(mem, clock)
    read = mem.store.events
    failures = iter([StoreError("server closed the connection unexpectedly")])

    def events(project: str, ids: Any) -> Any:
        for failure in failures:
            raise failure
        return read(project, ids)

    monkeypatch.setattr(mem.store, "events", events)

    with pytest.raises(StoreError, match="server closed"):
        mem.consolidate()

    assert {j.status for j in mem.jobs()} == {JobStatus.PENDING}
    assert {j.attempts for j in mem.jobs()} == {0}
    assert mem.consolidate().jobs_done == 5  # the next run does them all


@pytest.mark.parametrize("failing_read", [2, 3])
def test_a_later_batch_whose_events_cannot_be_read_leaves_no_job_running(
    make_memory: MemoryFactory,
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
    failing_read: int,
) -> None:
    """The events of the batch after next are read while the next one is embedded: when
    that read fails, the batch being embedded and every job claimed for later go back to
    pending with the failed read's own, and the jobs decided before stay done."""
    mem = make_memory()
    add_subjects(mem, clock, n=12)
    read = mem.store.events
    reads = 0

    def events(project: str, ids: Any) -> Any:
        nonlocal reads
        reads += 1
        if reads == failing_read:
            raise StoreError("server closed the connection unexpectedly")
        return read(project, ids)

    monkeypatch.setattr(mem.store, "events", events)

    with pytest.raises(StoreError, match="server closed"):
        mem.consolidate()

    statuses = Counter(j.status for j in mem.jobs())
    assert set(statuses) <= {JobStatus.PENDING, JobStatus.DONE}
    assert statuses[JobStatus.PENDING] > 0
    assert {j.attempts for j in mem.jobs() if j.status is JobStatus.PENDING} == {0}
    assert mem.consolidate().jobs_done == statuses[JobStatus.PENDING]
    assert {j.status for j in mem.jobs()} == {JobStatus.DONE}


def test_the_preparation_thread_only_embeds_when_no_model_reads_the_jobs(
    make_memory: MemoryFactory, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """For claims, the thread that embeds never touches the store: the deciding thread loads
    the events, looks the texts up in the cache and writes the new vectors to it before
    deciding. So the embedder never waits for a write of the other thread to commit, and
    every vector a plan names is in the cache when it is written."""
    mem = make_memory(embed_events=True)
    for i in range(40):
        mem.add_event(
            subject=f"s{i % 8}",
            text=f"I have {i} bikes",
            claims=[{"predicate": "bike_count", "value": {"count": i}, "action": "supersede"}],
        )
        clock.advance(seconds=1)
    calls: dict[str, set[str]] = {}

    def record(obj: Any, name: str) -> None:
        method = getattr(obj, name)

        def recorded(*args: Any, **kwargs: Any) -> Any:
            calls.setdefault(name, set()).add(threading.current_thread().name.split("_")[0])
            return method(*args, **kwargs)

        monkeypatch.setattr(obj, name, recorded)

    for name in ("events", "cached_embeddings", "cache_embeddings", "heartbeat", "apply"):
        record(mem.store, name)
    record(mem.embedder, "embed_batch")

    report = mem.consolidate()

    assert report.jobs_done == 8
    assert calls.pop("embed_batch") == {"distill-prepare"}
    assert not any("distill-prepare" in threads for threads in calls.values())
    for name in ("events", "cached_embeddings", "cache_embeddings", "apply"):
        assert calls[name] == {"MainThread"}
    cached = mem.store.cached_embeddings(
        mem.embedder.model_id, [content_hash(f"I have {i} bikes") for i in range(40)]
    )
    assert len(cached) == 40


def test_a_run_starts_on_a_small_batch_and_ends_on_single_jobs() -> None:
    """The first batch has nothing to overlap its loading (FIRST_BATCH jobs, so that the
    embedder starts soon), and the last one's decisions have nothing to overlap them
    (batches halve toward the end, down to one job)."""
    left, sizes, first = 100, [], True
    while left > 0:
        size = batch_size(left, first=first)
        sizes.append(size)
        left, first = left - size, False
    assert sizes == [FIRST_BATCH, CLAIM_BATCH, CLAIM_BATCH, 16, 8, 4, 2, 1, 1]
    assert FIRST_BATCH < CLAIM_BATCH
    # jobs that came in during the run (the estimate ran out): full batches again
    assert batch_size(0, first=True) == FIRST_BATCH and batch_size(0) == CLAIM_BATCH


BIKES = [{"predicate": "bike_count", "value": {"count": 3}}]


def add_mixed(mem: Memory, clock: FakeClock, n: int = 3) -> None:
    """s1, s3, ... carry claims (no model); s2, s4, ... are text only (the model reads them)."""
    for i in range(1, n + 1):
        if i % 2:
            mem.add_event(subject=f"s{i}", text="I have 3 bikes", claims=BIKES)
        else:
            mem.add_event(subject=f"s{i}", text=LYON)
        clock.advance(seconds=1)


def test_a_batch_interrupted_while_the_model_is_asked_leaves_no_job_running(
    make_memory: MemoryFactory, clock: FakeClock
) -> None:
    """A batch mixes jobs extracted on the deciding thread (claims) with jobs a model reads:
    interrupted during the model's call, all of them go back to pending, the claims jobs
    extracted before included."""

    def interrupt(prompt: str) -> str:
        raise KeyboardInterrupt

    llm = FakeLLM(default=LYON_ANSWER).enqueue(interrupt)
    mem = make_memory(llm=llm, extractor="auto")
    add_mixed(mem, clock)

    with pytest.raises(KeyboardInterrupt):
        mem.consolidate()

    assert JobStatus.RUNNING not in {j.status for j in mem.jobs()}
    assert mem.consolidate().jobs_done == 3


def test_a_store_error_while_a_model_job_is_prepared_leaves_no_job_running(
    make_memory: MemoryFactory, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The preparation thread records a model job's usage; when that write fails (the
    database restarted), the run fails, and the claims jobs of the same batch, extracted
    already, are pending again with the model's."""
    mem = make_memory(llm=FakeLLM(default=LYON_ANSWER), extractor="auto")
    add_mixed(mem, clock)

    def down(job_id: str, usage: Any) -> None:
        raise StoreError("server closed the connection unexpectedly")

    monkeypatch.setattr(mem.store, "add_job_usage", down)

    with pytest.raises(StoreError, match="server closed"):
        mem.consolidate()

    assert JobStatus.RUNNING not in {j.status for j in mem.jobs()}


def test_a_run_interrupted_while_it_extracts_claims_leaves_no_job_running(
    make_memory: MemoryFactory, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C reaches the deciding thread, which now extracts the claims jobs: the jobs of
    the batch being staged go back to pending, those waiting for the model included."""
    mem = make_memory(llm=FakeLLM(default=LYON_ANSWER), extractor="auto")
    add_mixed(mem, clock)

    def interrupt(event: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(preparation, "from_claims", interrupt)

    with pytest.raises(KeyboardInterrupt):
        mem.consolidate()

    assert JobStatus.RUNNING not in {j.status for j in mem.jobs()}
    monkeypatch.undo()
    assert mem.consolidate().jobs_done == 3


def test_a_provider_stop_returns_the_claims_jobs_claimed_after_it(
    make_memory: MemoryFactory, clock: FakeClock
) -> None:
    """A rate limit on a model job stops the run there: the jobs claimed after it go back
    untouched even when no model reads them (extracted already on the other thread), so
    the run ends where the provider stopped it, as it did when one thread extracted all."""
    llm = FakeLLM(default=LYON_ANSWER).enqueue(RateLimited("429: slow down"))
    mem = make_memory(llm=llm, extractor="auto")
    add_mixed(mem, clock, n=7)  # the first batch is s1-s4 (FIRST_BATCH)

    report = mem.consolidate()

    assert report.stopped_by_provider
    jobs = {j.subject: j for j in mem.jobs()}
    assert jobs["s1"].status is JobStatus.DONE
    assert jobs["s2"].status is JobStatus.FAILED  # to be retried after its backoff
    later = [jobs[f"s{i}"] for i in range(3, 8)]  # s3 (claims, extracted already) included
    assert all(j.status is JobStatus.PENDING and j.attempts == 0 for j in later)
    assert report.jobs_done == 1


def test_a_text_new_to_two_batches_in_a_row_is_embedded_once(
    make_memory: MemoryFactory, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch is looked up in the cache before the one ahead of it has cached its new
    vectors (that happens when it is decided): the texts they share are embedded once."""
    mem = make_memory(embed_events=True)
    for i in range(12):
        mem.add_event(subject=f"s{i}", text="I have 3 bikes", claims=BIKES)
        clock.advance(seconds=1)
    seen: Counter[str] = Counter()
    embed = mem.embedder.embed_batch

    def counted(texts: Any) -> Any:
        seen.update(texts)
        return embed(texts)

    monkeypatch.setattr(mem.embedder, "embed_batch", counted)

    assert mem.consolidate().jobs_done == 12
    assert set(seen.values()) == {1}
    assert set(seen) == {"I have 3 bikes", "bike count", "bike count: 3"}
