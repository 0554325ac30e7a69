"""`Memory.judge`: new memories put to a scripted model beside their nearest stored ones, its
verdicts checked in code and applied with receipts, on every backend.

The memories are made as a user's would be: events through the `text` extractor, one
memory per sentence. The scripted judge reads the prompt as a real model would (its
aliases, through `core.memory_judge.asked`) and answers JSON.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import partial

import pytest

from distill import Memory
from distill.adapters.embed.hashing import HashingEmbedder
from distill.adapters.llm.fake import FakeLLM
from distill.core.memory_judge import asked
from distill.core.models import FactStatus
from distill.errors import RateLimited
from distill.ports import Completion
from tests.conftest import FakeClock

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
Rule = Callable[[str, str], tuple[str, str] | None]


def scripted(rule: Rule) -> Callable[[str], str]:
    """A judge that answers every new memory by `rule(new text, candidate text)`: the first
    candidate it names an action for, else nothing."""

    def answer(prompt: str) -> str:
        verdicts = []
        for alias, text, candidates in asked(prompt):
            verdict = {"memory": alias, "action": "nothing", "target": None, "reason": "distinct"}
            for c_alias, c_text in candidates:
                found = rule(text, c_text)
                if found is not None:
                    verdict = {
                        "memory": alias,
                        "action": found[0],
                        "target": c_alias,
                        "reason": found[1],
                    }
                    break
            verdicts.append(verdict)
        return json.dumps({"verdicts": verdicts})

    return answer


@pytest.fixture
def judged(scripted_memory: Callable[..., Memory]) -> Callable[..., Memory]:
    return partial(scripted_memory, default='{"verdicts": []}')


def say(mem: Memory, *texts: str, subject: str = "u1", day: int = 0) -> None:
    for i, text in enumerate(texts):
        mem.add_event(subject=subject, text=text, occurred_at=T0 + timedelta(days=day + i))
    mem.consolidate()


def by_text(mem: Memory, subject: str = "u1") -> dict[str, object]:
    return {f.text: f for f in mem.facts(subject=subject, include_retired=True)}


def llm_of(mem: Memory) -> FakeLLM:
    assert isinstance(mem.llm, FakeLLM)
    return mem.llm


def test_a_changed_state_supersedes_the_one_stated_first(judged: Callable[..., Memory]) -> None:
    def rule(new: str, old: str) -> tuple[str, str] | None:
        return ("supersede", "the user moved") if "Lyon" in new + old else None

    mem = judged(default=scripted(rule))
    say(mem, "I live in Paris.")
    say(mem, "I moved to Lyon.", day=30)

    report = mem.judge()

    assert report.superseded == 1 and report.merged == 0
    facts = by_text(mem)
    paris, lyon = facts["I live in Paris."], facts["I moved to Lyon."]
    assert paris.status is FactStatus.SUPERSEDED and paris.superseded_by == lyon.id
    assert paris.valid_to == lyon.valid_from  # true until the move
    assert lyon.status is FactStatus.ACTIVE
    assert [f.text for f in mem.facts(subject="u1")] == ["I moved to Lyon."]
    assert any(e.pass_name == "judge" and "moved" in e.reason for e in mem.history(paris.id).audit)


def test_a_supersede_the_words_do_not_show_is_contested_until_a_person_keeps_one(
    judged: Callable[..., Memory],
) -> None:
    def rule(new: str, old: str) -> tuple[str, str] | None:
        return ("supersede", "the newer allergy replaces the older") if "allergic" in new else None

    mem = judged(default=scripted(rule))
    say(mem, "I'm allergic to peanuts.")
    say(mem, "I'm allergic to shellfish.", day=30)

    report = mem.judge()

    assert report.superseded == 0 and report.contested == 1
    live = {f.text: f for f in mem.facts(subject="u1")}
    assert set(live) == {"I'm allergic to peanuts.", "I'm allergic to shellfish."}  # both served
    [contest] = mem.conflicts(subject="u1")
    assert set(contest.member_ids) == {f.id for f in live.values()}
    assert "the words show no change" in contest.reason
    served = mem.context("u1")
    assert all(item.contested for item in served.items)
    # The next run does not contest the pair again, even when the model insists.
    say(mem, "I'm allergic to peanuts.", day=40)  # a reinforcement: judged again
    again = mem.judge()
    assert again.contested == 0 and len(mem.conflicts(subject="u1")) == 1
    # A person keeps one: the other is retired with its receipt, as the supersede would have.
    peanuts, shellfish = live["I'm allergic to peanuts."], live["I'm allergic to shellfish."]
    mem.resolve_conflict(contest.id, keep=shellfish.id)
    gone = mem.fact(peanuts.id)
    assert gone.status is FactStatus.SUPERSEDED and gone.superseded_by == shellfish.id


def test_a_paraphrase_merges_into_the_older_with_its_evidence(
    judged: Callable[..., Memory],
) -> None:
    def rule(new: str, old: str) -> tuple[str, str] | None:
        return ("merge", "the same preference")

    mem = judged(default=scripted(rule))
    say(mem, "I love hiking in the Alps.", "I really love hiking in the Alps.")

    report = mem.judge()

    assert report.merged == 1
    [live] = mem.facts(subject="u1")
    assert live.text == "I love hiking in the Alps."
    assert len(live.source_event_ids) == 2 and live.reinforcement_count == 1


def test_a_model_that_merges_everything_cannot_merge_what_differs(
    judged: Callable[..., Memory],
) -> None:
    def rule(new: str, old: str) -> tuple[str, str] | None:
        return ("merge", "looks the same")

    mem = judged(default=scripted(rule))
    say(mem, "I always publish on Tuesdays.", "I never publish on Tuesdays.")
    say(mem, "Alice manages Bob.", "Bob manages Alice.", subject="u2")
    say(mem, "I have 3 kids.", "I have 4 kids.", subject="u3")

    report = mem.judge()

    assert report.merged == 0 and report.superseded == 0
    codes = {r.code for r in report.refused}
    assert {"merge_negation", "merge_role_swap", "merge_number"} <= codes
    for subject in ("u1", "u2", "u3"):
        assert len(mem.facts(subject=subject)) == 2


def test_a_pinned_memory_is_never_retired(judged: Callable[..., Memory]) -> None:
    def rule(new: str, old: str) -> tuple[str, str] | None:
        return ("supersede", "newer")

    mem = judged(default=scripted(rule))
    say(mem, "I work at Acme.")
    say(mem, "I work at Globex.", day=10)
    acme = by_text(mem)["I work at Acme."]
    mem.pin(acme.id)

    report = mem.judge()

    assert report.superseded == 0 and {r.code for r in report.refused} == {"pinned"}
    assert mem.fact(acme.id).status is FactStatus.ACTIVE


def test_targets_not_shown_and_answers_without_reason_are_refused(
    judged: Callable[..., Memory],
) -> None:
    def answer(prompt: str) -> str:
        (first, _, _), (second, _, _) = asked(prompt)
        return json.dumps(
            {
                "verdicts": [
                    {"memory": first, "action": "merge", "target": "F99", "reason": "made up"},
                    {"memory": second, "action": "merge", "target": first, "reason": " "},
                ]
            }
        )

    mem = judged(answer)
    say(mem, "I drink oat milk.", "I drink oat milk daily.")

    report = mem.judge()

    assert report.merged == 0
    assert sorted(r.code for r in report.refused) == ["no_reason", "target_not_shown"]
    assert len(mem.facts(subject="u1")) == 2


def test_an_unreadable_answer_bisects_down_to_the_memory_that_fails(
    judged: Callable[..., Memory],
) -> None:
    def answer(prompt: str) -> str:
        news = asked(prompt)
        if any("walnuts" in text for _, text, _ in news):
            return "I think these are all fine."  # prose whenever walnuts are in the batch
        return scripted(lambda n, o: None)(prompt)

    mem = judged(default=answer)
    say(mem, "I am allergic to peanuts.", "I am allergic to walnuts.", "I am allergic to cats.")

    report = mem.judge()

    walnuts = by_text(mem)["I am allergic to walnuts."]
    assert report.failed == [walnuts.id]
    assert report.judged == 2 and report.kept == 2
    # 3 memories: the batch, its halves (1 | 2), the half of two split again.
    assert report.usage.calls == 5
    again = mem.judge()  # the failed memory was skipped: the cursor moved past it
    assert again.usage.calls == 0


def test_a_run_with_no_readable_answer_marks_nothing_and_the_next_run_judges_it(
    judged: Callable[..., Memory],
) -> None:
    mem = judged(default="I think these are all fine.")
    say(mem, "I live in Paris.")
    say(mem, "I moved to Lyon.", day=30)

    garbled = mem.judge()

    assert garbled.judged == 0 and garbled.failed
    llm_of(mem).default = scripted(lambda n, o: ("supersede", "moved") if "Lyon" in n else None)
    again = mem.judge()
    assert again.superseded == 1 and not again.failed
    assert [f.text for f in mem.facts(subject="u1")] == ["I moved to Lyon."]


def test_a_verdict_the_runs_cap_held_back_is_judged_by_the_next_run(
    judged: Callable[..., Memory],
) -> None:
    def rule(new: str, old: str) -> tuple[str, str] | None:
        return ("supersede", "the user moved") if "Lyon" in new else None

    mem = judged(default=scripted(rule))
    say(mem, "I live in Paris.")
    say(mem, "I moved to Lyon.", day=30)

    capped = mem.judge(max_changes=0)

    assert capped.superseded == 0 and [r.code for r in capped.refused] == ["capped"]
    assert len(mem.facts(subject="u1")) == 2
    again = mem.judge()
    assert again.superseded == 1
    assert [f.text for f in mem.facts(subject="u1")] == ["I moved to Lyon."]


def test_the_cap_is_said_only_of_a_verdict_nothing_else_refuses(
    judged: Callable[..., Memory],
) -> None:
    mem = judged(default=scripted(lambda n, o: ("merge", "same") if "3" in n + o else None))
    say(mem, "I have 3 bikes.")
    say(mem, "I have 4 bikes.", day=30)

    report = mem.judge(max_changes=0)

    assert {r.code for r in report.refused} == {"merge_number"}  # not "capped"


def test_a_provider_error_stops_the_tier_and_leaves_the_cursor(
    judged: Callable[..., Memory],
) -> None:
    mem = judged(RateLimited("429 Too Many Requests"), default=scripted(lambda n, o: None))
    say(mem, "I like tea.", "I like green tea.")

    stopped = mem.judge()

    assert stopped.stopped and "RateLimited" in stopped.stopped[0]
    assert stopped.judged == 0
    resumed = mem.judge()
    assert resumed.judged == 2 and not resumed.stopped


def test_only_memories_new_since_the_cursor_are_judged(judged: Callable[..., Memory]) -> None:
    mem = judged(default=scripted(lambda n, o: None))
    say(mem, "I like tea.", "I like coffee.")
    assert mem.judge().judged == 2
    calls = len(llm_of(mem).calls)

    assert mem.judge().usage.calls == 0
    say(mem, "I like cocoa.", day=5)
    third = mem.judge()

    assert third.judged == 1 and third.usage.calls == 1
    [(_, text, candidates)] = asked(llm_of(mem).calls[calls].prompt)
    assert text == "I like cocoa." and candidates


def test_batches_are_filled_across_subjects(judged: Callable[..., Memory]) -> None:
    mem = judged(default=scripted(lambda n, o: None))
    for subject in ("a", "b"):
        say(mem, "I like tea.", "I like coffee.", "I like cocoa.", "I like juice.", subject=subject)

    report = mem.judge()

    assert report.judged == 8 and report.usage.calls == 1
    news = asked(llm_of(mem).calls[0].prompt)
    assert len(news) == 8


def test_a_dry_run_judges_writes_nothing_and_moves_no_cursor(
    judged: Callable[..., Memory],
) -> None:
    def rule(new: str, old: str) -> tuple[str, str] | None:
        return ("merge", "the same preference")

    mem = judged(default=scripted(rule))
    say(mem, "I love hiking in the Alps.", "I really love hiking in the Alps.")
    audit = mem.audit(limit=1000)

    dry = mem.judge(dry_run=True)

    assert dry.dry_run and dry.merged == 1 and dry.usage.calls == 1
    assert mem.audit(limit=1000) == audit and len(mem.facts(subject="u1")) == 2
    assert mem.judge().merged == 1  # the real run judges the same memories again


def test_the_call_budget_stops_cleanly_and_the_next_run_goes_on(
    judged: Callable[..., Memory],
) -> None:
    mem = judged(default=scripted(lambda n, o: None))
    say(mem, *(f"I visited city number {n}." for n in range(12)))

    first = mem.judge(max_calls=1)

    assert first.usage.calls == 1 and first.judged == 8
    assert first.stopped and "budget" in first.stopped[0]
    second = mem.judge()
    assert second.judged == 4 and second.usage.calls == 1


def test_tokens_are_counted_and_cut_answers_are_unreadable(judged: Callable[..., Memory]) -> None:
    cut = Completion('{"verdicts": [', 10, 4000, truncated=True)
    mem = judged(cut, default=scripted(lambda n, o: None))
    say(mem, "I like tea.", "I like coffee.")

    report = mem.judge()

    assert report.usage.calls == 3 and report.judged == 2  # the cut batch, then each half
    assert report.to_dict()["tokens"] >= 4010


def test_a_memory_edited_while_the_model_thinks_drops_its_verdict(
    judged: Callable[..., Memory], database: str, clock: FakeClock
) -> None:
    def rule(new: str, old: str) -> tuple[str, str] | None:
        return ("merge", "the same preference")

    def answer_while_another_run_reinforces(prompt: str) -> str:
        other = Memory(database, embedder=HashingEmbedder(256), clock=clock, extractor="text")
        try:
            say(other, "I love hiking in the Alps.", day=40)
        finally:
            other.close()
        return scripted(rule)(prompt)

    mem = judged(answer_while_another_run_reinforces, default=scripted(rule))
    say(mem, "I love hiking in the Alps.", "I really love hiking in the Alps.")

    report = mem.judge()

    assert report.merged == 0
    assert {r.code for r in report.refused} == {"edited_meanwhile"}
    assert len(mem.facts(subject="u1")) == 2


def test_judge_without_a_model_says_how_to_give_one(memory: Memory) -> None:
    from distill.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="needs a model"):
        memory.judge()
