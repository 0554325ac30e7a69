"""The LLM extractor with a scripted model (FakeLLM): what it is shown, which answers are
accepted, and how a bad answer degrades (DESIGN invariant 2: "the model proposes, code
applies"; an invalid answer degrades to "no change", never to a crash or a loss)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from distill import Memory
from distill.adapters.embed.hashing import vectors_at_distance
from distill.adapters.llm.fake import FakeLLM
from distill.core.extraction import estimate_tokens
from distill.core.models import FactStatus, JobStatus
from distill.engine import RETRY_BASE
from distill.ports import Completion
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
        "kind": "state",
        "confidence": 0.9,
        "evidence_span": span,
        **extra,
    }


def answer(*facts: dict[str, Any]) -> str:
    return json.dumps({"facts": list(facts)})


LYON_ANSWER = answer(fact("home_city", {"city": "Lyon"}, LYON))


def only_job(mem: Memory) -> Any:
    [job] = mem.jobs()
    return job


# -- malformed answers ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad",
    [
        "The user lives in Lyon.",
        '{"facts": [{"predicate": "home_city", "value": {"city": "Ly',
        '{"answer": "home_city = Lyon"}',
        "",
    ],
    ids=["prose", "truncated-json", "json-of-another-shape", "empty"],
)
def test_unparseable_answer_fails_the_job_keeps_events_and_is_retried(
    make_memory: MemoryFactory, clock: FakeClock, bad: str
) -> None:
    """DESIGN invariant 2 and 4: prose or truncated JSON → the job fails with
    MalformedAnswer, nothing is written, the events are intact, a later run retries it."""
    llm = FakeLLM().enqueue(bad, LYON_ANSWER)
    mem = make_memory(llm=llm, extractor="llm")
    event = mem.add_event(subject="alice", text=LYON)

    report = mem.consolidate()

    assert report.jobs_failed == 1 and report.jobs_done == 0
    job = only_job(mem)
    assert job.status is JobStatus.FAILED
    assert "MalformedAnswer" in (job.error or "")
    assert mem.facts(include_retired=True) == []
    assert mem.store.events(event.project, [event.id]) == [event]

    clock.advance(seconds=RETRY_BASE.total_seconds())
    retried = mem.consolidate()

    assert retried.jobs_done == 1
    assert only_job(mem).status is JobStatus.DONE
    assert [f.value for f in mem.facts(subject="alice")] == [{"city": "Lyon"}]


@pytest.mark.parametrize(
    "wrap",
    [
        lambda body: f"```json\n{body}\n```",
        lambda body: f"```JSON\n{body}\n```\n",
        lambda body: f"```\n{body}\n```",
        lambda body: f"Here are the facts:\n```json\n{body}\n```\nLet me know!",
        lambda body: f"Sure. {body}",
    ],
    ids=["json-fence", "upper-case-fence", "bare-fence", "fence-in-prose", "json-after-prose"],
)
def test_fenced_json_answer_is_accepted(
    make_memory: MemoryFactory, wrap: Callable[[str], str]
) -> None:
    """SCENARIOS D26 (extractor side): a fenced ```json answer is accepted."""
    llm = FakeLLM().enqueue(wrap(LYON_ANSWER))
    mem = make_memory(llm=llm, extractor="llm")
    mem.add_event(subject="alice", text=LYON)

    report = mem.consolidate()

    assert report.jobs_done == 1
    assert report.created == 1
    assert [f.value for f in mem.facts(subject="alice")] == [{"city": "Lyon"}]


def test_bare_list_answer_is_accepted(make_memory: MemoryFactory) -> None:
    """DESIGN extract: `{"facts": [...]}` or a bare list of candidates."""
    llm = FakeLLM().enqueue(json.dumps([fact("home_city", {"city": "Lyon"}, LYON)]))
    mem = make_memory(llm=llm, extractor="llm")
    mem.add_event(subject="alice", text=LYON)

    assert mem.consolidate().created == 1


def test_empty_fact_list_completes_the_job_with_no_change(make_memory: MemoryFactory) -> None:
    """DESIGN extract: "nothing durable" is a valid answer, not a failure."""
    llm = FakeLLM().enqueue('{"facts": []}')
    mem = make_memory(llm=llm, extractor="llm")
    mem.add_event(subject="alice", text="ok thanks")

    report = mem.consolidate()

    assert report.jobs_done == 1 and report.jobs_failed == 0
    assert mem.facts(include_retired=True) == []


# -- evidence ------------------------------------------------------------------------------------


def test_evidence_span_not_in_the_event_is_rejected(make_memory: MemoryFactory) -> None:
    """DESIGN extract / write gate: a span the event does not contain → evidence_not_in_event;
    the honest candidate next to it is kept."""
    llm = FakeLLM().enqueue(
        answer(
            fact("home_city", {"city": "Lyon"}, LYON),
            fact("employer", {"name": "Acme"}, "I work at Acme"),  # never said
        )
    )
    mem = make_memory(llm=llm, extractor="llm")
    mem.add_event(subject="alice", text=f"{LYON}, near the river.")

    report = mem.consolidate()

    assert [r.reason for r in report.rejections] == ["evidence_not_in_event"]
    assert report.rejections[0].extractor == "llm"
    assert [f.predicate for f in mem.facts(subject="alice")] == ["home_city"]
    assert only_job(mem).status is JobStatus.DONE


def test_llm_candidate_without_evidence_span_is_rejected(make_memory: MemoryFactory) -> None:
    """DESIGN extract: the LLM extractor requires evidence copied from the message."""
    candidate = fact("home_city", {"city": "Lyon"}, LYON)
    del candidate["evidence_span"]
    llm = FakeLLM().enqueue(answer(candidate))
    mem = make_memory(llm=llm, extractor="llm")
    mem.add_event(subject="alice", text=LYON)

    report = mem.consolidate()

    assert [r.reason for r in report.rejections] == ["evidence_not_in_event"]
    assert mem.facts(include_retired=True) == []


# -- identity through the model ------------------------------------------------------------------


def test_predicate_drift_that_resolves_semantically_reinforces_one_fact(
    make_memory: MemoryFactory, clock: FakeClock
) -> None:
    """SCENARIOS A8 through the LLM: the model says preferred_color after a stored
    favorite_color; at distance 0.1 → one fact, reinforced once."""
    a, b = vectors_at_distance(0.1, 256)
    overrides = {
        # the identity text may be the predicate alone or the predicate with its value
        "favorite color": a,
        "preferred color": b,
        "favorite color: blue": a,
        "preferred color: blue": b,
    }
    llm = FakeLLM().enqueue(
        answer(fact("favorite_color", {"color": "blue"}, "My favorite color is blue")),
        answer(fact("preferred_color", {"color": "blue"}, "I really prefer blue")),
    )
    mem = make_memory(llm=llm, extractor="llm", overrides=overrides)
    first = mem.add_event(subject="alice", text="My favorite color is blue", occurred_at=at(0))
    mem.consolidate()
    clock.advance(hours=1)
    second = mem.add_event(subject="alice", text="I really prefer blue", occurred_at=at(60))

    report = mem.consolidate()

    assert report.reinforced == 1
    assert report.created == 0 and report.conflicts == 0
    [only] = mem.facts(include_retired=True)
    assert only.predicate == "favorite_color"
    assert only.reinforcement_count == 1
    assert set(only.source_event_ids) == {first.id, second.id}


def test_model_supersede_of_a_known_fact_replaces_it(
    make_memory: MemoryFactory, clock: FakeClock
) -> None:
    """SCENARIOS A4 through the LLM: the model reuses the known predicate with supersede."""
    llm = FakeLLM().enqueue(
        LYON_ANSWER,
        answer(fact("home_city", {"city": "Paris"}, "I moved to Paris", action="supersede")),
    )
    mem = make_memory(llm=llm, extractor="llm")
    mem.add_event(subject="alice", text=LYON, occurred_at=at(0))
    mem.consolidate()
    clock.advance(hours=1)
    mem.add_event(subject="alice", text="I moved to Paris", occurred_at=at(60))

    report = mem.consolidate()

    assert report.superseded == 1
    assert [f.value for f in mem.facts(subject="alice")] == [{"city": "Paris"}]
    [old] = [f for f in mem.facts(include_retired=True) if f.status is FactStatus.SUPERSEDED]
    assert old.value == {"city": "Lyon"} and old.valid_to == at(60)


# -- what the model is shown ---------------------------------------------------------------------


def test_prompt_shows_the_subjects_active_facts_and_the_event_text(
    make_memory: MemoryFactory, clock: FakeClock
) -> None:
    """DESIGN extract: the extractor sees the subject's active facts so it can supersede."""
    llm = FakeLLM().enqueue(LYON_ANSWER)
    mem = make_memory(llm=llm, extractor="auto")
    mem.add_event(
        subject="alice",
        text="I have 3 bikes",
        claims=[{"predicate": "bike_count", "value": {"count": 3}}],
    )
    mem.add_event(
        subject="bob",
        text="Bob has 7 cars",
        claims=[{"predicate": "car_count", "value": {"count": 7}}],
    )
    mem.consolidate()
    assert llm.calls == []  # structured claims need no model
    clock.advance(hours=1)
    mem.add_event(subject="alice", text="I live in Lyon, by the way.")

    mem.consolidate()

    [call] = llm.calls
    assert "bike_count" in call.prompt
    assert '{"count":3}' in call.prompt
    assert "I live in Lyon, by the way." in call.prompt
    assert "alice" in call.prompt
    assert "car_count" not in call.prompt  # another subject's facts are not shown
    assert call.system.strip()
    assert call.schema is not None


def test_retired_facts_are_not_shown_as_known(make_memory: MemoryFactory, clock: FakeClock) -> None:
    """DESIGN extract: the extractor sees the *active* facts only."""
    llm = FakeLLM()
    mem = make_memory(llm=llm, extractor="auto")
    mem.add_event(
        subject="alice",
        text="I have 3 bikes",
        occurred_at=at(0),
        claims=[{"predicate": "bike_count", "value": {"count": 3}}],
    )
    mem.add_event(
        subject="alice",
        text="I have 4 bikes",
        occurred_at=at(5),
        claims=[{"predicate": "bike_count", "value": {"count": 4}, "action": "supersede"}],
    )
    mem.consolidate()
    clock.advance(hours=1)
    mem.add_event(subject="alice", text="Nice weather today.")

    mem.consolidate()

    [call] = llm.calls
    assert '{"count":4}' in call.prompt
    assert '{"count":3}' not in call.prompt


# -- counting calls ------------------------------------------------------------------------------


def test_no_llm_call_when_nothing_is_pending(make_memory: MemoryFactory) -> None:
    """DESIGN jobs: a run with no pending work never calls the model."""
    llm = FakeLLM().enqueue(LYON_ANSWER)
    mem = make_memory(llm=llm, extractor="llm")
    mem.add_event(subject="alice", text=LYON)
    assert mem.consolidate().llm_calls == 1

    again = mem.consolidate()

    assert again.llm_calls == 0
    assert again.prompt_tokens == 0
    assert len(llm.calls) == 1


def test_empty_store_makes_no_llm_call(make_memory: MemoryFactory) -> None:
    """DESIGN jobs: nothing to do → zero calls."""
    llm = FakeLLM()
    mem = make_memory(llm=llm, extractor="llm")

    report = mem.consolidate()

    assert report.llm_calls == 0
    assert llm.calls == []


def test_report_counts_llm_calls_and_tokens(make_memory: MemoryFactory, clock: FakeClock) -> None:
    """DESIGN runs: the report counts every model call and its tokens, failed ones too."""
    llm = FakeLLM(default=LYON_ANSWER).enqueue(LYON_ANSWER, "not json at all", LYON_ANSWER)
    mem = make_memory(llm=llm, extractor="llm")
    for subject in ("s1", "s2", "s3"):
        mem.add_event(subject=subject, text=LYON)
        clock.advance(seconds=1)

    report = mem.consolidate()

    assert report.llm_calls == 3 == len(llm.calls)
    assert report.jobs_failed == 1
    assert report.prompt_tokens == sum(estimate_tokens(c.system + c.prompt) for c in llm.calls)
    answers = [LYON_ANSWER, "not json at all", LYON_ANSWER]
    assert report.completion_tokens == sum(estimate_tokens(a) for a in answers)
    assert report.prompt_tokens > 0
    counters = report.counters()
    assert counters["llm_calls"] == 3
    assert counters["prompt_tokens"] == report.prompt_tokens


# -- answers cut at the output limit -------------------------------------------------------------


def test_an_answer_cut_at_the_output_limit_is_asked_again_in_halves(
    make_memory: MemoryFactory,
) -> None:
    """A batch whose facts do not fit in the model's answer is split and asked again, so no
    fact is lost to a cut answer; every call, the cut one included, is counted."""
    texts = [f"I have {n} cats" for n in range(1, 5)]
    cut = Completion('{"facts": [{"message": 1, "predicate": "cat_co', 900, 4000, truncated=True)

    def by_message(prompt: str) -> str:
        shown = [t for t in texts if t in prompt]
        return answer(
            *(
                fact("cat_count", {"count": int(t.split()[2])}, t, message=n, kind="event")
                for n, t in enumerate(shown, start=1)
            )
        )

    llm = FakeLLM(default=by_message).enqueue(cut)
    mem = make_memory(llm=llm, extractor="llm")
    mem.add_events(
        [{"subject": "alice", "text": t, "occurred_at": at(i)} for i, t in enumerate(texts)]
    )

    report = mem.consolidate()

    assert report.jobs_done == 1
    assert [len([t for t in texts if t in c.prompt]) for c in llm.calls] == [4, 2, 2]
    assert report.llm_calls == 3
    assert report.completion_tokens >= 4000
    assert sorted(f.value["count"] for f in mem.facts(subject="alice") if f.value) == [1, 2, 3, 4]


def test_a_single_event_answer_cut_at_the_output_limit_fails_the_job(
    make_memory: MemoryFactory,
) -> None:
    """When even one event's answer does not fit, the job fails with a message that says
    what to change, and is not retried automatically (it would be cut again); nothing of the
    cut answer is applied and the event stays."""
    llm = FakeLLM().enqueue(Completion('{"facts": [{"pred', 100, 64, truncated=True))
    mem = make_memory(llm=llm, extractor="llm")
    mem.add_event(subject="alice", text=LYON)

    report = mem.consolidate()

    assert report.jobs_failed == 1
    job = only_job(mem)
    assert "max_tokens" in (job.error or "")
    assert job.not_before is None  # no automatic retry
    assert mem.facts(include_retired=True) == []


def test_an_event_with_claims_and_no_text_costs_no_call_even_with_the_llm_extractor(
    make_memory: MemoryFactory,
) -> None:
    """There is nothing to ask a model about an event without text: its own claims are used
    and no call is made."""
    llm = FakeLLM()
    mem = make_memory(llm=llm, extractor="llm")
    mem.add_event(subject="alice", claims=[{"predicate": "bike_count", "value": {"count": 3}}])

    report = mem.consolidate()

    assert llm.calls == [] and report.llm_calls == 0
    assert [f.value for f in mem.facts(subject="alice")] == [{"count": 3}]


def test_replay_reuses_the_kept_answers_and_reextract_asks_again(
    make_memory: MemoryFactory, clock: FakeClock
) -> None:
    """A replay costs no call and changes nothing; `replay(reextract=True)` forgets the kept
    answers (after a prompt fix, say) so the model is asked again, and a claim it repeats
    exactly is recognised as already seen, not stored twice."""
    llm = FakeLLM(default=LYON_ANSWER)
    mem = make_memory(llm=llm, extractor="llm")
    mem.add_event(subject="alice", text=LYON)
    mem.consolidate()

    mem.replay()
    assert mem.consolidate().llm_calls == 0

    mem.replay(reextract=True)
    again = mem.consolidate()

    assert again.llm_calls == 1 and len(llm.calls) == 2
    assert again.created == 0
    assert [f.value for f in mem.facts(include_retired=True)] == [{"city": "Lyon"}]
