"""The Store contract: what every backend must do, run against each one (see conftest.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone

import numpy as np
import pytest

from distill.adapters.store.queries import load_migrations
from distill.adapters.store.sqlite import SqliteStore
from distill.core.models import (
    ConflictKind,
    ConflictStatus,
    Event,
    Fact,
    FactKind,
    FactStatus,
    JobStatus,
    Resolver,
)
from distill.core.plan import (
    Action,
    CreateFact,
    LearnAlias,
    OpenConflict,
    Plan,
    RecordObservation,
    ReviseConflict,
    ReviseFact,
)
from distill.errors import IntegrityViolation, InvalidInput, NotFound, StoreError
from distill.ports import LLMUsage, Neighbour, Store
from tests.factories import (
    PROJECT,
    SUBJECT,
    T0,
    at,
    make_alias,
    make_audit,
    make_claim,
    make_conflict,
    make_event,
    make_fact,
    make_memory,
    make_observation,
    new_id,
    unit_vector,
)

MODEL = "test-model"


# -- helpers ---------------------------------------------------------------------------------------
def plan_of(*actions: Action) -> Plan:
    return Plan(actions=list(actions))


def append(store: Store, *events: Event, now: datetime = T0) -> list[Event]:
    """Store events, asserting they are new, and return them."""
    result = store.append_events(events, now)
    assert [new for _, new in result] == [True] * len(events)
    return [event for event, _ in result]


def create(store: Store, *facts: Fact) -> None:
    store.apply(plan_of(*(CreateFact(f, "test") for f in facts)), None, [])


def revise(before: Fact, op: str = "reinforce", **changes: object) -> ReviseFact:
    return ReviseFact(before, before.model_copy(update=changes), op, "test")


def fact_ids(facts: list[Fact]) -> list[str]:
    return [f.id for f in facts]


# -- the protocol ----------------------------------------------------------------------------------
def test_the_store_has_every_method_of_the_protocol(store: Store) -> None:
    wanted = {name for name in vars(Store) if not name.startswith("_")}
    assert wanted <= {name for name in dir(store) if callable(getattr(store, name))}


# -- events ----------------------------------------------------------------------------------------
def test_append_events_is_idempotent_on_project_and_key(store: Store) -> None:
    first = make_event(idempotency_key="k1")
    [(stored, new)] = store.append_events([first], T0)
    assert new and stored == first

    replay = make_event("a different text", idempotency_key="k1")
    [(existing, new)] = store.append_events([replay], at(5))
    assert not new
    assert existing == first  # the stored event, not the replayed one
    assert store.counts(PROJECT).events == 1
    [job] = store.jobs(PROJECT)
    assert job.event_ids == (first.id,)


def test_the_same_key_in_another_project_is_another_event(store: Store) -> None:
    a = make_event(idempotency_key="k1")
    b = make_event(idempotency_key="k1", project="other")
    assert [new for _, new in store.append_events([a, b], T0)] == [True, True]
    assert store.counts(None).events == 2


def test_a_key_repeated_within_one_batch_is_stored_once(store: Store) -> None:
    a = make_event(idempotency_key="k")
    b = make_event("again", idempotency_key="k")
    result = store.append_events([a, b], T0)
    assert result == [(a, True), (a, False)]
    [job] = store.jobs()
    assert job.event_ids == (a.id,)


def test_new_events_join_the_pending_job_of_their_subject(store: Store) -> None:
    late = make_event("second", occurred_at=at(10))
    early = make_event("first", occurred_at=at(1))
    bob = make_event("bob's", subject="bob")
    append(store, late, bob, now=T0)
    append(store, early, now=at(1))

    jobs = {job.subject: job for job in store.jobs(PROJECT)}
    assert set(jobs) == {SUBJECT, "bob"}
    alice = jobs[SUBJECT]
    assert alice.status is JobStatus.PENDING and alice.attempts == 0
    assert alice.event_ids == (early.id, late.id)  # by occurred_at, not by arrival
    assert alice.created_at == T0 and alice.updated_at == at(1)
    assert jobs["bob"].event_ids == (bob.id,)


def test_an_event_for_a_subject_whose_job_is_running_starts_a_new_job(store: Store) -> None:
    first = make_event("one")
    append(store, first)
    [claimed] = store.claim_jobs(at(1), 10, 3)
    second = make_event("two", occurred_at=at(2))
    append(store, second, now=at(2))

    jobs = store.jobs(PROJECT)
    assert [(j.status, j.event_ids) for j in jobs] == [
        (JobStatus.RUNNING, (first.id,)),
        (JobStatus.PENDING, (second.id,)),
    ]
    assert jobs[0].id == claimed.id


def test_events_returns_stored_events_in_time_order_and_skips_unknown_ids(store: Store) -> None:
    b = make_event("b", occurred_at=at(2))
    a = make_event("a", occurred_at=at(1))
    append(store, b, a)
    assert store.events(PROJECT, [b.id, "nope", a.id]) == [a, b]
    assert store.events(PROJECT, []) == []


def test_event_claims_round_trip(store: Store) -> None:
    claim = make_claim(
        "home_city", {"city": "Lyon"}, qualifiers={"since": 2020}, valid_from=at(-60)
    )
    event = make_event(claims=[claim])
    append(store, event)
    [stored] = store.events(PROJECT, [event.id])
    assert stored == event
    assert stored.claims[0].valid_from == at(-60)


def test_iter_events_pages_through_everything_in_time_order(store: Store) -> None:
    events = [
        make_event(f"e{i}", occurred_at=at(i % 7), project="p" if i % 3 else "q")
        for i in range(1203)
    ]
    store.append_events(events, T0)
    expected = sorted(events, key=lambda e: (e.occurred_at, e.id))
    assert list(store.iter_events(None)) == expected
    assert list(store.iter_events("q")) == [e for e in expected if e.project == "q"]
    assert list(store.iter_events("none")) == []


# -- jobs ------------------------------------------------------------------------------------------
def test_claim_takes_the_oldest_pending_jobs_and_marks_them_running(store: Store) -> None:
    for minute, subject in enumerate(["a", "b", "c"]):
        append(store, make_event(subject=subject), now=at(minute))

    claimed = store.claim_jobs(at(10), 2, 3)
    assert [j.subject for j in claimed] == ["a", "b"]
    for job in claimed:
        assert job.status is JobStatus.RUNNING
        assert job.attempts == 1
        assert job.updated_at == at(10)
        assert len(job.event_ids) == 1
    assert [j.subject for j in store.claim_jobs(at(10), 10, 3)] == ["c"]
    assert store.claim_jobs(at(10), 10, 3) == []  # running jobs are not claimed again
    assert store.claim_jobs(at(10), 0, 3) == []


def test_a_failed_job_is_retried_after_its_backoff(store: Store) -> None:
    append(store, make_event())
    [job] = store.claim_jobs(T0, 1, 3)
    store.fail_job(job.id, "timeout", at(1), retry_at=at(10))
    failed = store.job(job.id)
    assert failed.status is JobStatus.FAILED
    assert failed.error == "timeout"
    assert failed.not_before == at(10)
    assert failed.attempts == 1

    assert store.claim_jobs(at(9), 10, 3) == []
    [again] = store.claim_jobs(at(10), 10, 3)
    assert again.id == job.id
    assert again.attempts == 2 and again.status is JobStatus.RUNNING

    store.finish_job(job.id, at(11))
    done = store.job(job.id)
    assert done.status is JobStatus.DONE and done.error is None
    assert done.updated_at == at(11)


def test_a_failed_job_without_retry_time_is_not_retried_automatically(store: Store) -> None:
    append(store, make_event())
    [job] = store.claim_jobs(T0, 1, 3)
    store.fail_job(job.id, "bad request", at(1), retry_at=None)
    assert store.claim_jobs(at(1, days=365), 10, 3) == []
    assert store.job(job.id).status is JobStatus.FAILED


def test_a_job_that_used_up_its_attempts_is_not_claimed(store: Store) -> None:
    append(store, make_event())
    for attempt in range(1, 4):
        [job] = store.claim_jobs(at(attempt * 10), 1, 3)
        assert job.attempts == attempt
        store.fail_job(
            job.id, f"failure {attempt}", at(attempt * 10), retry_at=at(attempt * 10 + 1)
        )
    assert store.claim_jobs(at(1, days=1), 10, 3) == []
    assert store.claim_jobs(at(1, days=1), 10, 4) != []  # a higher cap lets it run again


def test_release_puts_unstarted_jobs_back_without_counting_the_attempt(store: Store) -> None:
    append(store, make_event(subject="a"), make_event(subject="b"))
    claimed = store.claim_jobs(T0, 10, 3)
    store.release_jobs([j.id for j in claimed], at(1))
    for job in store.jobs(PROJECT):
        assert job.status is JobStatus.PENDING
        assert job.attempts == 0
    store.release_jobs([claimed[0].id], at(2))  # not running: nothing happens
    assert store.job(claimed[0].id).attempts == 0
    assert len(store.claim_jobs(at(3), 10, 3)) == 2
    store.release_jobs([], at(4))


def reclaim_stalled(
    store: Store, now: datetime, stalled_before: datetime, max_attempts: int
) -> int:
    """How many running jobs `reclaim` took back for their stale heartbeat."""
    found = store.reclaim(now, stalled_before=stalled_before, max_attempts=max_attempts)
    assert found.from_gone == 0  # every claimer in these tests is alive: only the lease acts
    return found.stalled


def test_reclaim_takes_back_jobs_whose_heartbeat_is_old(store: Store) -> None:
    append(store, make_event(subject="a"))
    append(store, make_event(subject="b"), now=at(1))
    [old] = store.claim_jobs(T0, 1, 3)
    [fresh] = store.claim_jobs(at(5), 1, 3)

    assert reclaim_stalled(store, at(30), stalled_before=T0, max_attempts=3) == 0  # not older
    assert reclaim_stalled(store, at(30), stalled_before=at(1), max_attempts=3) == 1
    reclaimed = store.job(old.id)
    assert reclaimed.status is JobStatus.PENDING
    assert reclaimed.attempts == 1  # it did start: the attempt counts
    assert store.job(fresh.id).status is JobStatus.RUNNING


def test_a_job_that_keeps_killing_its_worker_ends_failed(store: Store) -> None:
    append(store, make_event(subject="a"))
    for minute in range(3):
        [job] = store.claim_jobs(at(minute * 60), 1, 3)
        reclaim_stalled(
            store, at(minute * 60 + 30), stalled_before=at(minute * 60 + 1), max_attempts=3
        )
    final = store.job(job.id)
    assert final.status is JobStatus.FAILED
    assert final.attempts == 3
    assert final.error is not None and "worker stopped" in final.error
    assert store.claim_jobs(at(1000), 1, 3) == []  # the cap holds: not claimed again


def test_heartbeat_keeps_a_running_job_from_being_reclaimed(store: Store) -> None:
    append(store, make_event(subject="a"))
    [job] = store.claim_jobs(T0, 1, 3)
    store.heartbeat(at(20))
    assert reclaim_stalled(store, at(30), stalled_before=at(10), max_attempts=3) == 0
    assert store.job(job.id).status is JobStatus.RUNNING
    assert reclaim_stalled(store, at(40), stalled_before=at(25), max_attempts=3) == 1


def test_requeue_puts_done_and_failed_jobs_back_to_pending(store: Store) -> None:
    append(store, make_event(subject="done", project="other"))
    [other] = store.claim_jobs(T0, 1, 3)
    store.finish_job(other.id, T0)
    for minute, subject in enumerate(("done", "failed", "running", "pending"), start=1):
        append(store, make_event(subject=subject), now=at(minute))
    done, failed, _running = store.claim_jobs(at(10), 3, 3)
    store.finish_job(done.id, at(11))
    store.fail_job(failed.id, "boom", at(11), retry_at=at(20))

    assert store.requeue_jobs(PROJECT, at(12)) == 2
    by_subject = {j.subject: j for j in store.jobs(PROJECT)}
    for subject in ("done", "failed"):
        job = by_subject[subject]
        assert job.status is JobStatus.PENDING
        assert (job.attempts, job.error, job.not_before) == (0, None, None)
        assert job.updated_at == at(12)
    assert by_subject["running"].status is JobStatus.RUNNING
    assert by_subject["running"].attempts == 1
    assert by_subject["pending"].status is JobStatus.PENDING
    assert store.job(other.id).status is JobStatus.DONE
    assert store.requeue_jobs(None, at(13)) == 1
    assert store.job(other.id).status is JobStatus.PENDING
    assert store.requeue_jobs(None, at(14)) == 0


def test_unknown_jobs_are_not_found(store: Store) -> None:
    with pytest.raises(NotFound):
        store.job("nope")
    with pytest.raises(NotFound):
        store.finish_job("nope", T0)
    with pytest.raises(NotFound):
        store.fail_job("nope", "x", T0, None)


def test_jobs_lists_by_project(store: Store) -> None:
    append(store, make_event())
    append(store, make_event(project="other"), now=at(1))
    assert [j.project for j in store.jobs()] == [PROJECT, "other"]  # oldest first
    assert [j.project for j in store.jobs("other")] == ["other"]


# -- model usage and kept answers -----------------------------------------------------------------
def test_job_usage_adds_up_and_shows_in_counts(store: Store) -> None:
    append(store, make_event())
    append(store, make_event(project="other"), now=at(1))
    mine, theirs = store.claim_jobs(at(2), 2, 3)
    store.add_job_usage(mine.id, LLMUsage(1, 900, 40))
    store.add_job_usage(mine.id, LLMUsage(2, 1100, 60))
    store.add_job_usage(theirs.id, LLMUsage(1, 5, 5))

    job = store.job(mine.id)
    assert (job.llm_calls, job.prompt_tokens, job.completion_tokens) == (3, 2000, 100)
    assert store.counts(PROJECT).llm_usage == LLMUsage(3, 2000, 100)
    assert store.counts(None).llm_usage == LLMUsage(4, 2005, 105)
    store.requeue_jobs(None, at(3))  # what a job cost is not forgotten by a replay
    assert store.counts(PROJECT).llm_usage == LLMUsage(3, 2000, 100)
    with pytest.raises(NotFound):
        store.add_job_usage("nope", LLMUsage(1, 1, 1))


def test_kept_answers_are_per_extractor_and_event_and_can_be_forgotten(store: Store) -> None:
    first, second = append(store, make_event("a"), make_event("b"))
    (elsewhere,) = append(store, make_event("c", project="other"))
    answer = [{"predicate": "pet", "value": {"kind": "cat"}, "evidence_span": "a"}]
    store.cache_extractions("v2/m1", {first.id: answer, second.id: []}, T0)
    store.cache_extractions("v2/m1", {elsewhere.id: [{"text": "x"}]}, T0)
    store.cache_extractions("v2/m2", {first.id: [{"text": "other model"}]}, T0)

    ids = [first.id, second.id, elsewhere.id, "nope"]
    assert store.cached_extractions("v2/m1", ids) == {
        first.id: answer,
        second.id: [],  # "nothing durable" is an answer too
        elsewhere.id: [{"text": "x"}],
    }
    assert store.cached_extractions("v2/m2", ids) == {first.id: [{"text": "other model"}]}
    assert store.cached_extractions("v2/m1", []) == {}
    store.cache_extractions("v2/m1", {first.id: []}, at(1))  # asked again: the new answer
    assert store.cached_extractions("v2/m1", [first.id]) == {first.id: []}

    assert store.forget_extractions(PROJECT) == 3
    assert store.cached_extractions("v2/m1", ids) == {elsewhere.id: [{"text": "x"}]}
    assert store.forget_extractions(None) == 1
    assert store.cached_extractions("v2/m1", ids) == {}


# -- apply: facts ----------------------------------------------------------------------------------
def test_created_facts_round_trip(store: Store) -> None:
    [event] = append(store, make_event())
    fact = make_fact(
        value={"count": 3, "nested": {"a": [1, 2.5, None], "b": True}},
        qualifiers={"kind": "road", "n": 2, "x": 1.5, "flag": False},
        source_event_ids=[event.id],
        valid_to=at(60),
        retired_at=at(61),
        supersedes_id="older",
        superseded_by="newer",
        status=FactStatus.SUPERSEDED,
        reinforcement_count=4,
        confidence=0.75,
        pinned=True,
        attribution="bob",
    )
    create(store, fact)
    assert store.fact(fact.project, fact.id) == fact
    with pytest.raises(NotFound):
        store.fact(PROJECT, "nope")


def test_a_second_active_state_fact_for_one_identity_is_refused(store: Store) -> None:
    [event] = append(store, make_event())
    current = make_fact(source_event_ids=[event.id])
    create(store, current)

    unrelated = make_fact("home_city", {"city": "Lyon"}, source_event_ids=[event.id])
    duplicate = make_fact(value={"count": 4}, source_event_ids=[event.id])
    plan = plan_of(CreateFact(unrelated, "ok"), CreateFact(duplicate, "second active"))
    with pytest.raises(IntegrityViolation, match="second active state fact") as caught:
        store.apply(plan, None, [make_audit(unrelated.id), make_audit(duplicate.id)])
    assert "bike_count|{}" in str(caught.value)

    # Nothing of that plan was written.
    assert fact_ids(store.facts(PROJECT, SUBJECT, True, None)) == [current.id]
    assert store.audit_for(unrelated.project, unrelated.id) == []


def test_the_unique_index_also_guards_revisions(store: Store) -> None:
    active = make_fact()
    held = make_fact(value={"count": 4}, status=FactStatus.CANDIDATE)
    create(store, active, held)
    with pytest.raises(IntegrityViolation, match="second active"):
        store.apply(plan_of(revise(held, "resolve", status=FactStatus.ACTIVE)), None, [])
    assert store.fact(held.project, held.id) == held


def test_a_plan_that_holds_a_new_fact_while_another_stands_and_then_restores_it_applies(
    store: Store,
) -> None:
    # One job: a new value made current, held when a late change made another current,
    # then current again. Each step keeps one active fact; the store writes it so.
    [event] = append(store, make_event())
    first = make_fact(value={"count": 4}, source_event_ids=[event.id])
    other = make_fact(value={"count": 3}, status=FactStatus.CANDIDATE, source_event_ids=[event.id])
    create(store, other)
    held = revise(first, "hold", status=FactStatus.CANDIDATE)
    other_up = revise(other, "resolve", status=FactStatus.ACTIVE)
    other_down = revise(other_up.after, "retire", status=FactStatus.SUPERSEDED)
    restored = revise(held.after, "resolve", status=FactStatus.ACTIVE)
    plan = plan_of(CreateFact(first, "new"), held, other_up, other_down, restored)
    store.apply(plan, None, [])
    found = {f.id: f.status for f in store.facts(PROJECT, SUBJECT, True, None)}
    assert found == {first.id: FactStatus.ACTIVE, other.id: FactStatus.SUPERSEDED}


def test_identities_that_may_coexist(store: Store) -> None:
    key = "bike_count|{}"
    facts = [
        make_fact(),
        make_fact(subject="bob"),  # same identity, another subject
        make_fact(project="other"),  # another project
        make_fact(value={"count": 4}, status=FactStatus.CANDIDATE),  # held, not active
        make_fact(value={"count": 2}, status=FactStatus.SUPERSEDED),
        make_fact(kind=FactKind.EVENT),  # occurrences never fuse
        make_fact(kind=FactKind.EVENT),
        make_fact(qualifiers={"kind": "road"}),  # another identity
    ]
    create(store, *facts)
    stored = store.facts_by_identity(PROJECT, SUBJECT, [key])
    assert set(fact_ids(stored)) == {facts[i].id for i in (0, 3, 4, 5, 6)}


def test_supersede_in_one_plan_retires_then_creates(store: Store) -> None:
    old = make_fact()
    create(store, old)
    new = make_fact(value={"count": 4}, valid_from=at(10), supersedes_id=old.id)
    retire = revise(
        old,
        "retire",
        status=FactStatus.SUPERSEDED,
        valid_to=at(10),
        retired_at=at(10),
        superseded_by=new.id,
    )
    store.apply(plan_of(retire, CreateFact(new, "new value")), "job-1", [])
    assert store.fact(old.project, old.id) == retire.after
    assert fact_ids(store.facts(PROJECT, SUBJECT, False, None)) == [new.id]


def test_a_candidate_created_and_made_current_in_one_plan_comes_after_the_retirement(
    store: Store,
) -> None:
    """A plan creates a held candidate, retires the current fact, then makes the candidate
    current (a change adopting the value held against it). Written in that order, one fact
    is active at every step; the candidate inserted as it ends up, where it was created,
    stood beside the current fact and the unique index refused the whole plan."""
    old = make_fact()
    create(store, old)
    held = make_fact(value={"count": 4}, valid_from=at(10), status=FactStatus.CANDIDATE)
    retire = revise(
        old, "retire", status=FactStatus.SUPERSEDED, valid_to=at(10), superseded_by=held.id
    )
    adopt = revise(held, "resolve", status=FactStatus.ACTIVE, supersedes_id=old.id)
    store.apply(plan_of(CreateFact(held, "held"), retire, adopt), "job-1", [])
    assert fact_ids(store.facts(PROJECT, SUBJECT, False, None)) == [held.id]
    assert store.fact(held.project, held.id) == adopt.after


def test_an_event_created_and_made_current_in_one_plan_comes_after_the_retirement(
    store: Store,
) -> None:
    """The same with an active event made the current state (a change to a value a series
    kept as an event, `Rivals._event_replaces`): active at every step, but counted by the
    unique index (an active state) only from the last, so it is inserted where it was
    created as what it was then."""
    old = make_fact()
    create(store, old)
    event = make_fact(value={"count": 4}, valid_from=at(10), kind=FactKind.EVENT)
    retire = revise(
        old, "retire", status=FactStatus.SUPERSEDED, valid_to=at(10), superseded_by=event.id
    )
    version = revise(event, "resolve", kind=FactKind.STATE, supersedes_id=old.id)
    store.apply(plan_of(CreateFact(event, "an event"), retire, version), "job-1", [])
    assert fact_ids(store.facts(PROJECT, SUBJECT, False, None)) == [event.id]
    assert store.fact(event.project, event.id) == version.after


def test_a_revision_of_a_fact_that_changed_since_it_was_read_is_refused(store: Store) -> None:
    fact = make_fact()
    create(store, fact)
    first = revise(fact, reinforcement_count=1)
    store.apply(plan_of(first), None, [])

    stale = revise(fact, reinforcement_count=7)  # built from the old version
    with pytest.raises(IntegrityViolation, match=f"fact {fact.id} changed since it was read"):
        store.apply(plan_of(stale), None, [])
    assert store.fact(fact.project, fact.id) == first.after

    missing = make_fact()
    with pytest.raises(IntegrityViolation, match="changed since it was read"):
        store.apply(plan_of(revise(missing, reinforcement_count=1)), None, [])


def test_one_plan_may_revise_a_fact_twice_and_revise_what_it_created(store: Store) -> None:
    fact = make_fact()
    one = revise(fact, reinforcement_count=1)
    two = revise(one.after, reinforcement_count=2, confidence=0.5)
    store.apply(plan_of(CreateFact(fact, "new"), one, two), None, [])
    assert store.fact(fact.project, fact.id) == two.after


def test_a_revision_may_not_move_a_fact(store: Store) -> None:
    fact = make_fact()
    create(store, fact)
    with pytest.raises(IntegrityViolation):
        store.apply(plan_of(revise(fact, subject="bob")), None, [])


def test_sources_follow_revisions(store: Store) -> None:
    a, b, c = append(store, make_event("a"), make_event("b"), make_event("c"))
    fact = make_fact(source_event_ids=[a.id])
    create(store, fact)
    assert fact_ids(store.facts_with_sources(PROJECT, SUBJECT, [a.id])) == [fact.id]
    assert store.facts_with_sources(PROJECT, SUBJECT, [b.id]) == []

    store.apply(plan_of(revise(fact, source_event_ids=(a.id, b.id))), None, [])
    assert fact_ids(store.facts_with_sources(PROJECT, SUBJECT, [b.id, c.id])) == [fact.id]
    assert store.facts_with_sources("other", SUBJECT, [b.id]) == []
    assert store.facts_with_sources(PROJECT, SUBJECT, []) == []


def test_a_fact_citing_an_unknown_event_is_refused(store: Store) -> None:
    with pytest.raises(IntegrityViolation):
        create(store, make_fact(source_event_ids=["no-such-event"]))
    assert store.facts(PROJECT, None, True, None) == []


def test_facts_by_identity_excludes_retracted_facts(store: Store) -> None:
    live = make_fact()
    gone = make_fact(value={"count": 9}, status=FactStatus.RETRACTED)
    old = make_fact(value={"count": 1}, status=FactStatus.SUPERSEDED, valid_from=at(-10))
    other = make_fact("home_city", {"city": "Lyon"})
    create(store, live, gone, old, other)
    key = "bike_count|{}"
    assert fact_ids(store.facts_by_identity(PROJECT, SUBJECT, [key])) == [old.id, live.id]
    assert store.facts_by_identity(PROJECT, "bob", [key]) == []
    assert store.facts_by_identity(PROJECT, SUBJECT, []) == []


def test_memories_by_norm_returns_live_memories(store: Store) -> None:
    active = make_memory("Likes tea")
    held = make_memory("likes tea!", status=FactStatus.CANDIDATE)
    retired = make_memory("likes TEA", status=FactStatus.SUPERSEDED)
    other = make_memory("likes coffee")
    for fact, norm in ((active, "h-tea"), (held, "h-tea"), (retired, "h-tea"), (other, "h-coffee")):
        store.apply(plan_of(CreateFact(fact, "new", norm_hash=norm)), None, [])
    assert set(fact_ids(store.memories_by_norm(PROJECT, SUBJECT, ["h-tea"]))) == {
        active.id,
        held.id,
    }
    assert fact_ids(store.memories_by_norm(PROJECT, SUBJECT, ["h-coffee", "h-x"])) == [other.id]
    assert store.memories_by_norm(PROJECT, "bob", ["h-tea"]) == []


def test_active_facts_are_state_facts_newest_reinforced_first(store: Store) -> None:
    facts = [
        make_fact(f"p{i}", {"v": i}, last_reinforced_at=at(i), valid_from=T0) for i in range(5)
    ]
    create(
        store,
        *facts,
        make_fact("gone", status=FactStatus.SUPERSEDED, last_reinforced_at=at(99)),
        make_fact("trip", {"to": "Rome"}, kind=FactKind.EVENT, last_reinforced_at=at(98)),
    )
    assert fact_ids(store.active_facts(PROJECT, SUBJECT, 3)) == [f.id for f in facts[::-1][:3]]


# -- apply: conflicts, observations, aliases, audit ------------------------------------------------
def test_conflicts_open_revise_and_list(store: Store) -> None:
    a = make_fact()
    b = make_fact(value={"count": 4}, status=FactStatus.CANDIDATE)
    cs = make_conflict([a.id, b.id])
    other = make_conflict([a.id], identity_key="home_city|{}", subject="bob", created_at=at(1))
    store.apply(plan_of(CreateFact(a, "x"), CreateFact(b, "y"), OpenConflict(cs, "z")), None, [])
    store.apply(plan_of(OpenConflict(other, "z")), None, [])
    assert store.conflict(cs.project, cs.id) == cs
    assert store.conflicts_for(PROJECT, SUBJECT, ["bike_count|{}"]) == [cs]
    assert store.conflicts_for(PROJECT, SUBJECT, ["home_city|{}"]) == []

    resolved = cs.model_copy(
        update={"status": ConflictStatus.RESOLVED, "resolved_at": at(5), "kept_fact_id": a.id}
    )
    store.apply(plan_of(ReviseConflict(cs, resolved, "kept a")), None, [])
    assert store.conflict(cs.project, cs.id) == resolved
    assert store.conflicts_for(PROJECT, SUBJECT, ["bike_count|{}"]) == [resolved]

    stale = cs.model_copy(update={"member_ids": (a.id, b.id, "c")})
    with pytest.raises(IntegrityViolation, match=f"conflict set {cs.id} changed since it was read"):
        store.apply(plan_of(ReviseConflict(cs, stale, "late")), None, [])

    assert store.conflicts(PROJECT, None, None) == [resolved, other]
    assert store.conflicts(PROJECT, SUBJECT, None) == [resolved]
    assert store.conflicts(PROJECT, None, ConflictStatus.OPEN) == [other]
    assert store.conflicts("other", None, None) == []
    with pytest.raises(NotFound):
        store.conflict(PROJECT, "nope")


def test_the_resolved_sets_are_read_with_the_open_ones(store: Store) -> None:
    """A later claim re-reads what resolved a set (`Splits._adoption_undone`), and the
    statements the person accepted (`Splits._restated_by_less_trusted`): `conflicts_for`
    returns the resolved sets beside the open ones, oldest first, and never one a third
    value turned into events."""
    a = make_fact()
    b = make_fact(value={"count": 4}, status=FactStatus.CANDIDATE)
    sets = {
        who: make_conflict(
            [a.id, b.id],
            created_at=at(i),
            status=ConflictStatus.OPEN if who is None else ConflictStatus.RESOLVED,
            resolved_at=None if who is None else at(9),
            kept_fact_id=None if who is None else b.id,
            resolved_by=who,
            accepted_event_ids=(new_id(), new_id()) if who is Resolver.PERSON else (),
        )
        for i, who in enumerate([Resolver.PERSON, Resolver.CLAIM, None, Resolver.MODEL])
    }
    events = make_conflict(
        [a.id, b.id],
        status=ConflictStatus.RECLASSIFIED,
        resolved_at=at(9),
        resolved_by=Resolver.CLAIM,
    )
    opened = [OpenConflict(cs, "z") for cs in (*sets.values(), events)]
    store.apply(plan_of(CreateFact(a, "x"), CreateFact(b, "y"), *opened), None, [])
    found = store.conflicts_for(PROJECT, SUBJECT, ["bike_count|{}"])
    assert found == list(sets.values())


def test_identity_sets_hold_two_active_facts_of_two_identities(store: Store) -> None:
    """Issue 11: an identity conflict set (two predicates that may be one attribute) holds
    two active facts and names no one identity; both backends store the kind (schema 6 on
    SQLite, 4 on PostgreSQL) and list it with the subject's open sets."""
    a = make_fact("bike_count", {"count": 3})
    b = make_fact("bikes_in_garage", {"count": 4}, valid_from=at(30))
    cs = make_conflict([a.id, b.id], identity_key=None, kind=ConflictKind.IDENTITY)
    store.apply(plan_of(CreateFact(a, "x"), CreateFact(b, "y"), OpenConflict(cs, "z")), None, [])

    assert store.conflict(cs.project, cs.id) == cs
    assert store.conflicts(PROJECT, SUBJECT, ConflictStatus.OPEN) == [cs]
    assert {f.id for f in store.facts(PROJECT, SUBJECT, False, None)} == {a.id, b.id}


def test_observations_and_seen_claims(store: Store) -> None:
    e1, e2 = append(store, make_event("one"), make_event("two", occurred_at=at(1)))
    fact = make_fact(source_event_ids=[e1.id])
    o1 = make_observation(e1, fact.id, claim_hash="h1")
    o2 = make_observation(e2, fact.id, claim_hash="h2")
    o3 = make_observation(e1, None, claim_hash="h3")
    store.apply(
        plan_of(
            CreateFact(fact, "new"),
            RecordObservation(o2),
            RecordObservation(o1),
            RecordObservation(o3),
        ),
        None,
        [],
    )
    assert store.observations_for(fact.project, fact.id) == [o1, o2]  # by occurred_at
    assert store.seen_claims([e1.id]) == {(e1.id, "h1"), (e1.id, "h3")}
    assert store.seen_claims([e1.id, e2.id, "x"]) == {(e1.id, "h1"), (e1.id, "h3"), (e2.id, "h2")}
    assert store.seen_claims([]) == set()

    with pytest.raises(IntegrityViolation):
        store.apply(plan_of(RecordObservation(make_observation(e1, claim_hash="h1"))), None, [])


def test_observations_for_events(store: Store) -> None:
    e1, e2, e3 = append(
        store, make_event("one"), make_event("two", occurred_at=at(1)), make_event("three")
    )
    fact = make_fact(source_event_ids=[e1.id])
    o1 = make_observation(e1, fact.id, claim_hash="h1")
    o2 = make_observation(e2, fact.id, claim_hash="h2")
    store.apply(
        plan_of(CreateFact(fact, "new"), RecordObservation(o2), RecordObservation(o1)), None, []
    )
    assert store.observations_for_events(PROJECT, [e2.id, e1.id, e3.id, "unknown"]) == [o1, o2]
    assert store.observations_for_events(PROJECT, [e3.id]) == []
    assert store.observations_for_events(PROJECT, []) == []


def test_active_facts_by_predicate_ignores_qualifiers_and_retired_facts(store: Store) -> None:
    plain = make_fact("wake_up_time", {"time": "08:00"})
    weekend = make_fact("wake_up_time", {"time": "10:00"}, qualifiers={"day": "weekend"})
    old = make_fact(
        "wake_up_time",
        {"time": "07:00"},
        qualifiers={"day": "monday"},
        status=FactStatus.SUPERSEDED,
        superseded_by=plain.id,
    )
    other = make_fact("bed_time", {"time": "23:00"})
    elsewhere = make_fact("wake_up_time", {"time": "06:00"}, subject="bob")
    create(store, plain, weekend, old, other, elsewhere)
    found = store.active_facts_by_predicate(PROJECT, SUBJECT, ["wake_up_time"])
    assert sorted(fact_ids(found)) == sorted([plain.id, weekend.id])
    assert store.active_facts_by_predicate(PROJECT, SUBJECT, []) == []


def test_a_created_fact_can_reuse_another_facts_identity_vector(store: Store) -> None:
    vector = np.eye(4, dtype=np.float32)[0]
    first = make_fact("bike_count", {"count": 3})
    store.apply(plan_of(CreateFact(first, "new", vector=vector, vector_model="m")), None, [])
    retired = first.model_copy(update={"status": FactStatus.SUPERSEDED, "superseded_by": "x"})
    second = make_fact("bike_count", {"count": 3})
    store.apply(
        plan_of(
            ReviseFact(first, retired, "retire", "test"),
            CreateFact(second, "restated", vector_from=first.id),
        ),
        None,
        [],
    )
    [[hit]] = store.nearest_facts(PROJECT, SUBJECT, vector[None, :], 1, "m")
    assert hit.fact_id == second.id
    assert hit.distance == pytest.approx(0.0, abs=1e-6)


def test_audit_lists_the_latest_entries_of_a_project_or_subject_oldest_first(
    store: Store,
) -> None:
    entries = [make_audit(reason=f"step {i}", at=at(i)) for i in range(5)]
    bob = make_audit(reason="bob's", subject="bob", at=at(2.5))
    elsewhere = make_audit(reason="other project", project="other", at=at(3))
    store.apply(plan_of(), None, [*entries, bob, elsewhere])

    assert [e.reason for e in store.audit(PROJECT, SUBJECT, 3)] == ["step 2", "step 3", "step 4"]
    assert [e.reason for e in store.audit(PROJECT, None, 3)] == ["bob's", "step 3", "step 4"]
    assert [e.reason for e in store.audit("other", None, 10)] == ["other project"]
    assert store.audit("nobody", None, 10) == []


def test_aliases_are_learned_once_per_project(store: Store) -> None:
    alias = make_alias("bicycle_count", "bike_count")
    store.apply(plan_of(LearnAlias(alias, "close")), None, [])
    # The same mapping again is a no-op; the first learned_at stays.
    store.apply(plan_of(LearnAlias(make_alias(learned_at=at(5)), "again")), None, [])
    assert store.aliases(PROJECT, ["bicycle_count", "bike_count"]) == {"bicycle_count": alias}
    assert store.aliases("other", ["bicycle_count"]) == {}
    assert store.aliases(PROJECT, []) == {}

    with pytest.raises(IntegrityViolation, match="already means"):
        store.apply(plan_of(LearnAlias(make_alias(canonical="car_count"), "no")), None, [])
    other_project = make_alias(canonical="car_count", project="other")
    store.apply(plan_of(LearnAlias(other_project, "fine")), None, [])
    assert store.aliases("other", ["bicycle_count"]) == {"bicycle_count": other_project}


def test_audit_entries_in_time_then_id_order(store: Store) -> None:
    fact = make_fact()
    entries = [
        make_audit(fact.id, id="b", at=at(1)),
        make_audit(fact.id, id="c", at=T0, before={"x": [1, {"y": None}]}),
        make_audit(fact.id, id="a", at=at(1), job_id="job-1", pass_name="dedupe"),
        make_audit(None, id="d", at=T0),
    ]
    store.apply(plan_of(CreateFact(fact, "new")), "job-1", entries)
    assert [e.id for e in store.audit_for(fact.project, fact.id)] == ["c", "a", "b"]
    assert store.audit_for(fact.project, fact.id)[0] == entries[1]
    assert store.audit_for(PROJECT, "nope") == []


# -- serialised ------------------------------------------------------------------------------------
def test_serialised_rolls_back_everything_on_an_exception(store: Store) -> None:
    fact = make_fact()
    with pytest.raises(RuntimeError), store.serialised(PROJECT, SUBJECT):
        store.append_events([make_event()], T0)
        store.apply(plan_of(CreateFact(fact, "new")), None, [make_audit(fact.id)])
        assert store.fact(fact.project, fact.id) == fact  # visible inside the block
        raise RuntimeError("the pass crashed")
    assert store.counts(PROJECT).events == 0
    assert store.jobs() == []
    with pytest.raises(NotFound):
        store.fact(fact.project, fact.id)
    assert store.audit_for(fact.project, fact.id) == []


def test_serialised_commits_on_success(store: Store, open_store: Callable[[], Store]) -> None:
    fact = make_fact()
    with store.serialised(PROJECT, SUBJECT):
        store.apply(plan_of(CreateFact(fact, "new")), None, [])
    assert open_store().fact(fact.project, fact.id) == fact  # visible to another connection


def test_an_integrity_violation_rolls_back_the_whole_serialised_block(store: Store) -> None:
    first = make_fact()
    clash = make_fact(value={"count": 5})
    with pytest.raises(IntegrityViolation), store.serialised(PROJECT, SUBJECT):
        store.apply(plan_of(CreateFact(first, "ok")), None, [])
        store.apply(plan_of(CreateFact(clash, "second active")), None, [])
    assert store.facts(PROJECT, None, True, None) == []


def test_a_nested_serialised_block_rolls_back_alone(store: Store) -> None:
    kept = make_fact("kept")
    lost = make_fact("lost")
    also_kept = make_fact("also_kept")
    with store.serialised(PROJECT, SUBJECT):
        store.apply(plan_of(CreateFact(kept, "outer")), None, [])
        with pytest.raises(RuntimeError), store.serialised(PROJECT, SUBJECT):
            store.apply(plan_of(CreateFact(lost, "inner")), None, [])
            raise RuntimeError("this job failed")
        with store.serialised(PROJECT, "bob"):
            store.apply(plan_of(CreateFact(also_kept, "inner")), None, [])
    assert set(fact_ids(store.facts(PROJECT, None, True, None))) == {kept.id, also_kept.id}


def test_a_failed_apply_inside_a_block_leaves_the_block_usable(store: Store) -> None:
    first = make_fact()
    after = make_fact("home_city", {"city": "Lyon"})
    with store.serialised(PROJECT, SUBJECT):
        store.apply(plan_of(CreateFact(first, "ok")), None, [])
        with pytest.raises(IntegrityViolation):
            store.apply(plan_of(CreateFact(make_fact(value={"count": 5}), "clash")), None, [])
        store.apply(plan_of(CreateFact(after, "ok")), None, [])
    assert set(fact_ids(store.facts(PROJECT, None, False, None))) == {first.id, after.id}


# -- queries ---------------------------------------------------------------------------------------
def test_facts_filters_by_status_and_time(store: Store) -> None:
    v1 = make_fact(value={"count": 1}, status=FactStatus.SUPERSEDED, valid_from=T0, valid_to=at(10))
    v2 = make_fact(value={"count": 2}, valid_from=at(10))
    held = make_fact(value={"count": 9}, status=FactStatus.CANDIDATE, valid_from=at(5))
    gone = make_fact("mood", {"v": "x"}, status=FactStatus.RETRACTED, valid_from=T0)
    bob = make_fact(subject="bob", valid_from=at(3))
    bounded = make_fact("trip", {"to": "Rome"}, valid_from=at(2), valid_to=at(4))
    create(store, v1, v2, held, gone, bob, bounded)

    assert fact_ids(store.facts(PROJECT, SUBJECT, False, None)) == [bounded.id, v2.id]
    # Every subject: ordered by subject, then valid_from.
    assert fact_ids(store.facts(PROJECT, None, False, None)) == [bounded.id, v2.id, bob.id]
    every = store.facts(PROJECT, SUBJECT, True, None)
    by_time = sorted([v1, gone, bounded, held, v2], key=lambda f: (f.valid_from, f.id))
    assert fact_ids(every) == fact_ids(by_time)

    assert fact_ids(store.facts(PROJECT, SUBJECT, False, at(3))) == [v1.id, bounded.id]
    assert fact_ids(store.facts(PROJECT, SUBJECT, True, at(3))) == [v1.id, bounded.id]
    assert fact_ids(store.facts(PROJECT, SUBJECT, False, at(10))) == [v2.id]  # valid_to is open
    assert fact_ids(store.facts(PROJECT, SUBJECT, False, at(-1))) == []
    assert fact_ids(store.facts(PROJECT, None, False, at(3))) == [v1.id, bounded.id, bob.id]
    assert store.facts("other", None, True, None) == []


def test_counts(store: Store) -> None:
    append(store, make_event(subject="a"), make_event(subject="b"))
    append(store, make_event(project="other"), now=at(1))
    [job, _] = store.claim_jobs(at(1), 2, 3)  # the two jobs of PROJECT: they are older
    store.fail_job(job.id, "boom", at(1), None)
    a = make_fact()
    create(store, a, make_fact(status=FactStatus.CANDIDATE), make_fact("x", project="other"))
    store.apply(plan_of(OpenConflict(make_conflict([a.id]), "x")), None, [])
    held = make_conflict([a.id], identity_key="home_city|{}", kind=ConflictKind.QUARANTINE)
    store.apply(plan_of(OpenConflict(held, "x")), None, [])

    counts = store.counts(PROJECT)
    assert counts.events == 2
    assert counts.facts_by_status == {"candidate": 1, "active": 1, "superseded": 0, "retracted": 0}
    assert counts.jobs_by_status == {"pending": 0, "running": 1, "done": 0, "failed": 1}
    assert counts.open_conflicts == 2
    assert counts.open_conflicts_by_kind == {"conflict": 1, "quarantine": 1, "identity": 0}
    assert [j.id for j in counts.failed_jobs] == [job.id]
    assert counts.failed_jobs[0].error == "boom"
    everything = store.counts(None)
    assert everything.events == 3
    assert everything.facts_by_status["active"] == 2
    assert everything.jobs_by_status["pending"] == 1


# -- vectors ---------------------------------------------------------------------------------------
def test_nearest_facts_orders_by_cosine_distance(store: Store) -> None:
    near = make_fact("a")
    mid = make_fact("b")
    far = make_fact("c")
    vectors = {near.id: unit_vector(1, 0.1), mid.id: unit_vector(1, 1), far.id: unit_vector(0, 1)}
    for fact in (far, near, mid):
        store.apply(
            plan_of(CreateFact(fact, "new", vector=vectors[fact.id], vector_model=MODEL)), None, []
        )
    query = np.stack([unit_vector(1), unit_vector(0, 1)])
    first, second = store.nearest_facts(PROJECT, SUBJECT, query, 2, MODEL)
    assert [n.fact_id for n in first] == [near.id, mid.id]
    assert first[0].distance == pytest.approx(1 - float(unit_vector(1, 0.1)[0]), abs=1e-6)
    assert [n.fact_id for n in second] == [far.id, mid.id]
    assert second[0].distance == pytest.approx(0.0, abs=1e-6)
    assert all(isinstance(n, Neighbour) for n in first)
    assert len(store.nearest_facts(PROJECT, SUBJECT, query, 10, MODEL)[0]) == 3


def test_nearest_facts_breaks_ties_by_fact_id(store: Store) -> None:
    facts = [make_fact(f"p{i}", id=fid) for i, fid in enumerate(["c", "a", "b"])]
    for fact in facts:
        store.apply(
            plan_of(CreateFact(fact, "new", vector=unit_vector(1), vector_model=MODEL)), None, []
        )
    [hits] = store.nearest_facts(PROJECT, SUBJECT, unit_vector(1)[None, :], 3, MODEL)
    assert [n.fact_id for n in hits] == ["a", "b", "c"]


def test_nearest_facts_searches_only_active_state_facts_of_the_subject_and_model(
    store: Store,
) -> None:
    wanted = make_fact("wanted")
    excluded = [
        make_fact("old", status=FactStatus.SUPERSEDED),
        make_fact("held", status=FactStatus.CANDIDATE),
        make_fact("occurrence", kind=FactKind.EVENT),
        make_fact("bobs", subject="bob"),
        make_fact("elsewhere", project="other"),
    ]
    v = unit_vector(1)
    plan = plan_of(
        CreateFact(wanted, "x", vector=v, vector_model=MODEL),
        *(CreateFact(f, "x", vector=v, vector_model=MODEL) for f in excluded),
        CreateFact(make_fact("other_model"), "x", vector=v, vector_model="another-model"),
        CreateFact(make_fact("no_vector"), "x"),
    )
    store.apply(plan, None, [])
    [hits] = store.nearest_facts(PROJECT, SUBJECT, v[None, :], 10, MODEL)
    assert [n.fact_id for n in hits] == [wanted.id]
    [hits] = store.nearest_facts(PROJECT, SUBJECT, v[None, :], 10, "another-model")
    assert len(hits) == 1
    assert store.nearest_facts(PROJECT, SUBJECT, v[None, :], 10, "unknown") == [[]]
    assert store.nearest_facts(PROJECT, SUBJECT, v[None, :], 0, MODEL) == [[]]

    # Retiring the fact takes it out of the search.
    store.apply(plan_of(revise(wanted, "retire", status=FactStatus.SUPERSEDED)), None, [])
    assert store.nearest_facts(PROJECT, SUBJECT, v[None, :], 10, MODEL) == [[]]


# -- embedding cache -------------------------------------------------------------------------------
def test_embedding_cache_round_trip(store: Store) -> None:
    first = {"h1": unit_vector(1, 2, 3), "h2": unit_vector(0, 1)}
    store.cache_embeddings(MODEL, first)
    store.cache_embeddings(MODEL, {"h1": unit_vector(9, 9), "h3": unit_vector(1)})  # h1 kept
    store.cache_embeddings(MODEL, {})
    cached = store.cached_embeddings(MODEL, ["h1", "h2", "h3", "missing"])
    assert set(cached) == {"h1", "h2", "h3"}
    np.testing.assert_array_equal(cached["h1"], first["h1"])
    assert cached["h1"].dtype == np.float32
    assert store.cached_embeddings("another-model", ["h1"]) == {}
    assert store.cached_embeddings(MODEL, []) == {}


# -- time ------------------------------------------------------------------------------------------
def test_datetimes_round_trip_timezone_aware_in_utc(store: Store) -> None:
    paris = timezone(timedelta(hours=2))
    when = datetime(2024, 5, 1, 14, 30, 15, 123456, tzinfo=paris)
    event = make_event(occurred_at=when, recorded_at=when)
    append(store, event, now=when)
    [stored] = store.events(PROJECT, [event.id])
    assert stored.occurred_at == when
    assert stored.occurred_at.utcoffset() == timedelta(0)
    assert stored.occurred_at.microsecond == 123456
    [job] = store.jobs()
    assert job.created_at == when and job.created_at.tzinfo is not None

    fact = make_fact(valid_from=when, last_reinforced_at=when)
    create(store, fact)
    assert store.fact(fact.project, fact.id).valid_from == when
    assert store.fact(fact.project, fact.id).valid_from.tzinfo == UTC
    # Stored order is time order even across offsets: 12:30 UTC is before 13:00 UTC.
    assert fact_ids(store.facts(PROJECT, SUBJECT, False, datetime(2024, 5, 1, 13, tzinfo=UTC))) == [
        fact.id
    ]
    assert store.facts(PROJECT, SUBJECT, False, datetime(2024, 5, 1, 12, 30, tzinfo=UTC)) == []


def test_a_naive_datetime_is_refused_and_nothing_is_written(store: Store) -> None:
    naive = make_event(occurred_at=datetime(2024, 5, 1, 12))
    with pytest.raises(InvalidInput, match="timezone"):
        store.append_events([make_event(), naive], T0)
    assert store.counts(None).events == 0


# -- migrations ------------------------------------------------------------------------------------
def test_migrations_are_idempotent(
    store: Store, open_store: Callable[[], Store], backend: str
) -> None:
    event = make_event()
    append(store, event)
    latest = load_migrations(backend)[-1].version
    assert store.schema_version() == latest  # opening a store brings it up to date
    store.migrate()
    again = open_store()
    again.migrate()
    assert again.events(event.project, [event.id]) == [event]
    assert again.schema_version() == latest


def test_a_database_newer_than_the_code_is_refused(
    store: Store,
    open_store: Callable[[], Store],
    stamp_schema_version: Callable[[int], None],
) -> None:
    stamp_schema_version(9999)
    with pytest.raises(StoreError, match="upgrade distill"):
        open_store()


# -- concurrency -----------------------------------------------------------------------------------
def test_concurrent_appends_for_one_subject_lose_nothing(open_store: Callable[[], Store]) -> None:
    stores = [open_store(), open_store()]
    per_thread = 40
    errors: list[BaseException] = []
    start = threading.Barrier(len(stores))

    def writer(store: Store, name: str) -> None:
        try:
            start.wait()
            for i in range(per_thread):
                event = make_event(f"{name} {i}", occurred_at=at(i), idempotency_key=f"{name}-{i}")
                store.append_events([event], at(i))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(s, f"w{n}")) for n, s in enumerate(stores)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []

    reader = stores[0]
    assert reader.counts(PROJECT).events == 2 * per_thread
    [job] = reader.jobs(PROJECT)
    assert len(job.event_ids) == 2 * per_thread
    assert set(job.event_ids) == {e.id for e in reader.iter_events(PROJECT)}


def test_stores_opened_at_once_on_a_fresh_database_all_work(
    open_store: Callable[[], Store],
) -> None:
    opened: list[Store] = []
    errors: list[BaseException] = []
    start = threading.Barrier(4)
    lock = threading.Lock()

    def boot() -> None:
        try:
            start.wait()
            store = open_store()
            with lock:
                opened.append(store)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=boot) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    append(opened[0], make_event())
    assert all(s.counts(None).events == 1 for s in opened)


def test_concurrent_writers_cannot_both_activate_one_identity(
    open_store: Callable[[], Store],
) -> None:
    stores = [open_store(), open_store()]
    outcomes: list[str] = []
    start = threading.Barrier(len(stores))

    def writer(store: Store, count: int) -> None:
        start.wait()
        try:
            with store.serialised(PROJECT, SUBJECT):
                store.apply(plan_of(CreateFact(make_fact(value={"count": count}), "x")), None, [])
            outcomes.append("ok")
        except IntegrityViolation:
            outcomes.append("refused")

    threads = [threading.Thread(target=writer, args=(s, n)) for n, s in enumerate(stores)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["ok", "refused"]
    assert len(stores[0].facts(PROJECT, SUBJECT, False, None)) == 1


# -- SQLite specifics ------------------------------------------------------------------------------
def test_sqlite_in_memory_store_works_across_threads() -> None:
    with SqliteStore(":memory:") as store:
        event = make_event()
        append(store, event)
        seen: list[list[Event]] = []
        thread = threading.Thread(target=lambda: seen.append(store.events(PROJECT, [event.id])))
        thread.start()
        thread.join()
        assert seen == [[event]]
        with store.serialised(PROJECT, SUBJECT):
            create(store, make_fact())
        assert len(store.facts(PROJECT, SUBJECT, False, None)) == 1


def test_sqlite_file_settings(tmp_path: object) -> None:
    import sqlite3
    from pathlib import Path

    path = Path(str(tmp_path)) / "x.db"
    with SqliteStore(path) as store:
        conn = store._db.raw()
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 30_000
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    raw = sqlite3.connect(path)
    try:
        versions = [r[0] for r in raw.execute("SELECT version FROM schema_migrations")]
    finally:
        raw.close()
    assert versions == [m.version for m in load_migrations("sqlite")]


def test_a_closed_sqlite_store_refuses_work(tmp_path: object) -> None:
    from pathlib import Path

    store = SqliteStore(Path(str(tmp_path)) / "x.db")
    store.close()
    store.close()  # idempotent
    with pytest.raises(StoreError, match="closed"):
        store.jobs()
