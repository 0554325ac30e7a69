"""Issue 11: the band sent to a model. After a run, the open identity sets of the projects it
touched are put to the configured model in batches (one call for many pairs); the model
proposes, code applies through the one applier, the way a person's resolution would.

The model is scripted (`FakeLLM`); the pairs are made contested by their words alone
(`bike_count` / `bike_class_count`: an extension), as in tests/unit/test_drift_identity.py.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from distill import Memory
from distill.adapters.llm.fake import FakeLLM
from distill.core import identity_judge
from distill.core.identity_judge import JUDGE_BATCH
from distill.core.models import ConflictKind, ConflictStatus, FactStatus
from distill.errors import TransientProviderError
from tests.unit.scenario_support import MemoryFactory, at, say
from tests.unit.test_drift_identity import EXTENDED, OLD, far_apart


def verdicts(same: bool, numbers: range | list[int] | None = None) -> Any:
    """A scripted judge answering `same` for every numbered pair of its prompt (or only for
    `numbers`)."""

    def answer(prompt: str) -> str:
        asked = [n for n, _ in identity_judge.asked(prompt)]
        return json.dumps(
            {
                "pairs": [
                    {"pair": n, "same": same, "reason": "scripted"}
                    for n in asked
                    if numbers is None or n in numbers
                ]
            }
        )

    return answer


def contested(mem: Memory, subjects: list[str]) -> None:
    for subject in subjects:
        say(mem, *OLD, when=at(0), subject=subject)
    mem.consolidate()
    for subject in subjects:
        say(mem, *EXTENDED, when=at(days=30), subject=subject)


def judged_memory(make_memory: MemoryFactory, llm: FakeLLM) -> Memory:
    return make_memory(overrides=far_apart(OLD, EXTENDED), extractor="claims", llm=llm)


def identity_sets(mem: Memory, subject: str | None = None) -> list[Any]:
    return [
        c for c in mem.conflicts(subject=subject, status=None) if c.kind is ConflictKind.IDENTITY
    ]


def test_a_same_verdict_keeps_the_newer_fact_and_learns_the_alias(
    make_memory: MemoryFactory,
) -> None:
    """The model says one attribute: the newer statement is kept, the older superseded by it,
    the old name learned as an alias; the audit names the judge's pass and the model."""
    llm = FakeLLM(default=verdicts(True), model_id="judge-model")
    mem = judged_memory(make_memory, llm)
    contested(mem, ["u1"])
    report = mem.consolidate()

    assert (report.contested, report.identities_same, report.identities_different) == (1, 1, 0)
    (cs,) = identity_sets(mem, "u1")
    assert cs.status is ConflictStatus.RESOLVED
    (current,) = mem.facts(subject="u1")
    assert (current.predicate, current.value) == EXTENDED
    old = next(f for f in mem.facts(subject="u1", include_retired=True) if f.predicate == OLD[0])
    assert old.status is FactStatus.SUPERSEDED and old.superseded_by == current.id
    assert mem.store.aliases("default", [OLD[0]])[OLD[0]].canonical == EXTENDED[0]
    entries = [e for e in mem.audit(subject="u1") if e.action == "revise_conflict"]
    assert [e.pass_name for e in entries] == ["judge_identity"]
    assert "judge-model" in entries[0].reason
    assert report.llm_calls == 1


def test_a_different_verdict_closes_the_set_and_keeps_both(make_memory: MemoryFactory) -> None:
    mem = judged_memory(make_memory, FakeLLM(default=verdicts(False)))
    contested(mem, ["u1"])
    report = mem.consolidate()

    assert (report.identities_same, report.identities_different) == (0, 1)
    (cs,) = identity_sets(mem, "u1")
    assert cs.status is ConflictStatus.RESOLVED and cs.kept_fact_id is None
    assert sorted(f.predicate or "" for f in mem.facts(subject="u1")) == sorted(
        [OLD[0], EXTENDED[0]]
    )
    assert mem.store.aliases("default", [OLD[0]]) == {}


def test_many_pairs_of_many_subjects_cost_one_call_per_batch(make_memory: MemoryFactory) -> None:
    """Pairs of every subject of a project share a call, up to JUDGE_BATCH of them."""
    llm = FakeLLM(default=verdicts(True))
    mem = judged_memory(make_memory, llm)
    subjects = [f"s{i}" for i in range(JUDGE_BATCH + 3)]
    contested(mem, subjects)
    report = mem.consolidate()

    assert report.identities_same == len(subjects)
    assert report.llm_calls == 2
    assert all(c.status is ConflictStatus.RESOLVED for c in identity_sets(mem))


def test_only_the_pairs_asked_about_are_decided(make_memory: MemoryFactory) -> None:
    """An answer for a number that was not asked, or without a boolean, decides nothing: that
    set stays open for the next run; the others are applied."""

    def answer(prompt: str) -> str:
        return json.dumps(
            {
                "pairs": [
                    {"pair": 1, "same": True},
                    {"pair": 2, "same": "yes"},
                    {"pair": 99, "same": True},
                ]
            }
        )

    mem = judged_memory(make_memory, FakeLLM(default=answer))
    contested(mem, ["a", "b"])
    report = mem.consolidate()

    assert report.identities_same == 1
    statuses = sorted(c.status.value for c in identity_sets(mem))
    assert statuses == ["open", "resolved"]


@pytest.mark.parametrize(
    "failure",
    [TransientProviderError("the judge is down"), "I think they are the same."],
    ids=["provider-down", "prose"],
)
def test_a_failing_judge_leaves_the_sets_open_and_says_so(
    make_memory: MemoryFactory, failure: Any
) -> None:
    """Fail-soft: the run's facts are written, the sets stay open (asked again next run), the
    report says why the judge stopped, and no job fails."""
    llm = FakeLLM(default=verdicts(True)).enqueue(failure)
    mem = judged_memory(make_memory, llm)
    contested(mem, ["u1"])
    report = mem.consolidate()

    assert report.jobs_failed == 0 and report.contested == 1
    assert report.judge_stopped
    (cs,) = identity_sets(mem, "u1")
    assert cs.status is ConflictStatus.OPEN

    say(mem, "unrelated_thing", {"v": 1}, when=at(days=40))
    again = mem.consolidate()
    assert again.identities_same == 1
    (cs,) = identity_sets(mem, "u1")
    assert cs.status is ConflictStatus.RESOLVED


def test_a_set_resolved_by_a_person_meanwhile_is_left_alone(make_memory: MemoryFactory) -> None:
    """The verdict is applied to the set as it is under the subject's lock: a person who
    resolved it first wins."""
    mem_holder: list[Memory] = []

    def answer(prompt: str) -> str:
        mem = mem_holder[0]
        (cs,) = identity_sets(mem, "u1")
        mem.resolve_conflict(cs.id, keep=None)  # a person decides while the model thinks
        return verdicts(True)(prompt)

    mem = judged_memory(make_memory, FakeLLM(default=answer))
    mem_holder.append(mem)
    contested(mem, ["u1"])
    report = mem.consolidate()

    assert report.identities_same == 0
    (cs,) = identity_sets(mem, "u1")
    assert cs.kept_fact_id is None
    assert len(mem.facts(subject="u1")) == 2
