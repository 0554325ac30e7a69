"""`Memory.judge_identities` and the worker's `judge_identity` pass: identity sets of projects
no run touches are still put to the model.

`consolidate` judges the open identity sets of the projects its run touched. A set can be
left open with nothing new arriving in its project: its pair waited for a value conflict that
a person has since decided, or the model was down. These tests pin that such sets reach the
model without new events, through the method and through the scheduled pass.
"""

from __future__ import annotations

import pytest

from distill import Memory
from distill.adapters.llm.fake import FakeLLM
from distill.core.models import ConflictKind, ConflictStatus
from distill.errors import ConfigurationError, TransientProviderError
from distill.scheduled_passes import PASSES, PassSettings
from tests.unit.scenario_support import MemoryFactory, at, say
from tests.unit.test_drift_identity import far_apart
from tests.unit.test_identity_judge import (
    GP,
    PCP,
    contested,
    gp_with_a_rival,
    identity_sets,
    judged_memory,
    verdicts,
)


def waiting_pair(make_memory: MemoryFactory) -> Memory:
    """`gp` Patel, then Lee (a value conflict), then a change under
    `primary_care_physician`: the identity pair waits for the value conflict, which a person
    then decides. No run of the project follows."""
    mem = gp_with_a_rival(make_memory)
    say(mem, *PCP, when=at(days=30), action="supersede")
    assert mem.consolidate().llm_calls == 0
    (values,) = [c for c in mem.conflicts() if c.kind is ConflictKind.CONFLICT]
    lee = next(f for f in mem.facts(include_retired=True) if f.value == {"name": "Dr. Lee"})
    mem.resolve_conflict(values.id, keep=lee.id)
    return mem


def names(mem: Memory) -> list[tuple[str | None, dict[str, object] | None]]:
    return sorted((f.predicate, f.value) for f in mem.facts() if f.value and "name" in f.value)


def test_a_pair_freed_by_a_person_is_judged_without_new_events(
    make_memory: MemoryFactory,
) -> None:
    """A run with nothing to do asks nothing (it touched no project); `judge_identities`
    reaches the pair, and one doctor is left."""
    mem = waiting_pair(make_memory)
    assert mem.consolidate().llm_calls == 0

    judged = mem.judge_identities()

    assert (judged.asked, judged.same, judged.different, judged.usage.calls) == (1, 1, 0, 1)
    assert judged.projects == 1 and not judged.stopped
    assert names(mem) == [PCP]
    assert all(c.status is ConflictStatus.RESOLVED for c in identity_sets(mem))


def test_a_dry_run_asks_and_writes_nothing(make_memory: MemoryFactory) -> None:
    mem = waiting_pair(make_memory)
    before = names(mem)

    judged = mem.judge_identities(dry_run=True)

    assert (judged.same, judged.usage.calls, judged.dry_run) == (1, 1, True)
    assert names(mem) == before
    assert any(c.status is ConflictStatus.OPEN for c in identity_sets(mem))


def test_sets_a_down_model_left_open_are_judged_later(make_memory: MemoryFactory) -> None:
    """The model fails after the run (the sets stay open); later, with the model back and no
    new event, the scheduled pass decides them and counts what it did."""
    llm = FakeLLM(default=verdicts(True)).enqueue(TransientProviderError("the judge is down"))
    mem = judged_memory(make_memory, llm)
    contested(mem, ["u1", "u2"])
    assert mem.consolidate().judge_stopped

    outcome = PASSES["judge_identity"].run(mem, "default", PassSettings())

    assert outcome.clean and outcome.soft == ()
    assert (outcome.counts["superseded"], outcome.counts["llm_calls"]) == (2, 1)
    assert outcome.report["pass"] == "judge_identity"
    assert all(c.status is ConflictStatus.RESOLVED for c in identity_sets(mem))


def test_the_scheduled_pass_names_a_model_that_is_down(make_memory: MemoryFactory) -> None:
    """Fail-soft: the pass reports the provider's failure as a skipped tier, the sets stay."""
    llm = FakeLLM(default=verdicts(True))
    mem = judged_memory(make_memory, llm)
    contested(mem, ["u1"])
    llm.enqueue(TransientProviderError("the judge is down"))
    mem.consolidate()
    llm.enqueue(TransientProviderError("still down"))

    outcome = PASSES["judge_identity"].run(mem, "default", PassSettings())

    assert outcome.soft and "still down" in outcome.soft[0]
    assert outcome.counts["superseded"] == 0
    (cs,) = identity_sets(mem, "u1")
    assert cs.status is ConflictStatus.OPEN


def many_open_sets(make_memory: MemoryFactory, count: int) -> tuple[Memory, FakeLLM]:
    """`count` subjects with an open identity set each: the model failed after the run."""
    llm = FakeLLM(default=verdicts(True)).enqueue(TransientProviderError("down"))
    mem = judged_memory(make_memory, llm)
    contested(mem, [f"u{i}" for i in range(count)])
    assert mem.consolidate().judge_stopped
    return mem, llm


def open_count(mem: Memory) -> int:
    return sum(c.status is ConflictStatus.OPEN for c in identity_sets(mem))


def test_max_calls_bounds_a_scheduled_run_and_says_it_stopped_short(
    make_memory: MemoryFactory,
) -> None:
    """`max_calls` = 1 asks about one batch of pairs at most (20): the run says it was
    capped (so the schedule keeps it due) and names what it left."""
    mem, _ = many_open_sets(make_memory, 25)

    outcome = PASSES["judge_identity"].run(mem, "default", PassSettings(max_calls=1))

    assert (outcome.counts["superseded"], outcome.counts["llm_calls"]) == (20, 1)
    assert (outcome.stop, outcome.detail) == ("cap", "5 open pair(s) left by the per-run cap")
    assert open_count(mem) == 5
    again = PASSES["judge_identity"].run(mem, "default", PassSettings(max_calls=1))
    assert again.clean and open_count(mem) == 0


@pytest.mark.parametrize(
    ("settings", "stop"),
    [(PassSettings(max_tokens=0), "budget"), (PassSettings(max_changes=0), "cap")],
    ids=["no-tokens", "no-changes"],
)
def test_a_spent_budget_or_a_change_cap_of_zero_asks_nothing(
    make_memory: MemoryFactory, settings: PassSettings, stop: str
) -> None:
    """A pair's `same` retires a fact, so `max_changes` caps the pairs; `max_tokens` stops
    before a call once spent."""
    mem, llm = many_open_sets(make_memory, 2)
    calls = len(llm.calls)

    outcome = PASSES["judge_identity"].run(mem, "default", settings)

    assert (outcome.stop, len(llm.calls) - calls) == (stop, 0)
    assert open_count(mem) == 2


def test_max_pairs_counts_across_projects(make_memory: MemoryFactory) -> None:
    """Three projects of two open sets each and `max_pairs=3`: three pairs asked, the other
    three counted as left."""
    llm = FakeLLM(default=verdicts(True)).enqueue(TransientProviderError("down"))
    mem = judged_memory(make_memory, llm)
    for project in ("p1", "p2", "p3"):
        for subject in ("u1", "u2"):
            say(mem, "bike_count", {"count": 3}, when=at(0), subject=subject, project=project)
    mem.consolidate()
    for project in ("p1", "p2", "p3"):
        for subject in ("u1", "u2"):
            say(mem, "bike_class_count", {"count": 4}, when=at(days=30), subject=subject,
                project=project)  # fmt: skip
    assert mem.consolidate().judge_stopped

    judged = mem.judge_identities(max_pairs=3)

    assert (judged.asked, judged.same, judged.capped) == (3, 3, 3)


def test_without_a_model_the_method_says_how_to_give_one(make_memory: MemoryFactory) -> None:
    mem = make_memory(overrides=far_apart(GP, PCP), extractor="claims")
    with pytest.raises(ConfigurationError, match="needs a model"):
        mem.judge_identities()
    outcome = PASSES["judge_identity"].run(mem, "default", PassSettings())
    assert outcome.soft and "no model" in outcome.soft[0]
