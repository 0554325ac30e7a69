"""`Memory.promote_rules`: memories a subject keeps re-stating put to a scripted model, its
answers checked in code and added to the subject's rules, on every backend.

The memories are made as a user's would be: the same sentence said on several days through
the `text` extractor, each saying after the first a re-observation. The scripted model reads
the prompt as a real one would (its aliases, through `core.rules.asked`) and answers JSON.
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
from distill.core.models import Fact, RuleOrigin
from distill.core.plan import Plan, ReviseFact
from distill.core.rules import asked
from distill.errors import ConfigurationError, RateLimited
from distill.ports import Completion
from tests.conftest import FakeClock

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
INSTRUCTIONS = {
    "Please reply in British English.": "Always reply in British English.",
    "Do not schedule meetings before 10am.": "Never schedule meetings before 10am.",
}


def by_rule(prompt: str) -> str:
    """A model that knows the instructions above: a rule for each, `not` for the rest."""
    verdicts = []
    for alias, text in asked(prompt):
        rule = INSTRUCTIONS.get(text) or (f"Rule: {text}" if text.startswith("Wish") else None)
        verdicts.append(
            {"memory": alias, "verdict": "rule", "rule": rule, "reason": "a standing wish"}
            if rule
            else {"memory": alias, "verdict": "not", "rule": None, "reason": "a fact"}
        )
    return json.dumps({"verdicts": verdicts})


@pytest.fixture
def promoting(scripted_memory: Callable[..., Memory]) -> Callable[..., Memory]:
    return partial(scripted_memory, default=by_rule)


def edit_text(mem: Memory, fact: Fact, text: str) -> None:
    """Change a memory's words in place, as no pass does today: what the watermark watches."""
    edited = fact.model_copy(update={"text": text})
    mem.store.apply(Plan([ReviseFact(fact, edited, "link", "edited by hand", "api")]), None, [])


def say(
    mem: Memory, text: str, times: int = 4, subject: str = "u1", day: int = 0, **event: object
) -> None:
    """`text` said on `times` days: a memory re-observed `times - 1` times."""
    for n in range(times):
        mem.add_event(subject=subject, text=text, occurred_at=T0 + timedelta(days=day + n), **event)
    mem.consolidate()


def memory_of(mem: Memory, text: str, subject: str = "u1") -> Fact:
    [found] = [f for f in mem.facts(subject=subject) if f.text == text]
    return found


def llm_of(mem: Memory) -> FakeLLM:
    assert isinstance(mem.llm, FakeLLM)
    return mem.llm


def test_a_re_stated_wish_becomes_a_learned_rule_and_a_fact_does_not(
    promoting: Callable[..., Memory],
) -> None:
    mem = promoting()
    say(mem, "Please reply in British English.")
    say(mem, "I live in Leeds.")

    report = mem.promote_rules()

    source = memory_of(mem, "Please reply in British English.")
    [rule] = mem.rules("u1")
    assert (rule.text, rule.origin, rule.source_fact_ids) == (
        "Always reply in British English.",
        RuleOrigin.LEARNED,
        (source.id,),
    )
    assert report.promoted == [rule] and report.not_rules == 1 and report.offered == 2
    assert report.usage.calls == 1 and report.to_dict()["tokens"] > 0
    # The memories are untouched: a rule is added beside them, nothing is retired.
    assert {f.text for f in mem.facts(subject="u1")} == {
        "Please reply in British English.",
        "I live in Leeds.",
    }
    [entry] = [e for e in mem.audit(subject="u1") if e.action == "add_rule"]
    assert entry.pass_name == "promote_rules" and "a standing wish" in entry.reason
    assert mem.context("u1").text.splitlines()[1] == "- Always reply in British English."


def test_only_memories_re_observed_often_enough_are_offered(
    promoting: Callable[..., Memory],
) -> None:
    mem = promoting()
    say(mem, "Please reply in British English.", times=3)  # re-observed twice
    say(mem, "Do not schedule meetings before 10am.", times=4)
    say(mem, "Wish one.", times=4, trust="third_party")

    report = mem.promote_rules()

    [prompt] = [c.prompt for c in llm_of(mem).calls]
    assert [text for _, text in asked(prompt)] == ["Do not schedule meetings before 10am."]
    assert [r.text for r in report.promoted] == ["Never schedule meetings before 10am."]
    assert mem.promote_rules().usage.calls == 0  # answered once: marked
    say(mem, "Please reply in British English.", times=1, day=10)  # now 3 re-observations
    assert [r.text for r in mem.promote_rules().promoted] == ["Always reply in British English."]


def test_a_memory_not_offered_is_not_marked_so_a_lower_threshold_offers_it(
    promoting: Callable[..., Memory],
) -> None:
    mem = promoting()
    say(mem, "Please reply in British English.", times=3)  # re-observed twice

    assert mem.promote_rules().usage.calls == 0
    lower = mem.promote_rules(corroboration_threshold=2)

    assert lower.offered == 1
    assert [r.text for r in lower.promoted] == ["Always reply in British English."]


def test_a_memory_answered_once_is_not_offered_again_unless_it_changes(
    promoting: Callable[..., Memory],
) -> None:
    mem = promoting()
    say(mem, "Please reply in British English.")
    say(mem, "I live in Leeds.")
    assert mem.promote_rules().offered == 2

    assert mem.promote_rules().usage.calls == 0
    say(mem, "I live in Leeds.", times=1, day=10)  # reinforced: the same words
    say(mem, "Please reply in British English.", times=1, day=11)  # a rule's source: never
    assert mem.promote_rules().usage.calls == 0
    [leeds] = [f for f in mem.facts("u1") if f.text == "I live in Leeds."]
    edit_text(mem, leeds, "I live in Leeds, near the station.")  # its text changed
    again = mem.promote_rules()

    assert again.offered == 1 and again.promoted == []
    [(_, text)] = asked(llm_of(mem).calls[-1].prompt)
    assert text == "I live in Leeds, near the station."
    assert len(mem.rules("u1")) == 1


def test_a_persons_rule_is_never_touched_and_blocks_the_same_learned_one(
    promoting: Callable[..., Memory],
) -> None:
    mem = promoting()
    mine = mem.add_rule("u1", "ALWAYS reply in British English")
    say(mem, "Please reply in British English.")

    report = mem.promote_rules()

    assert report.promoted == [] and [(a.code, a.memory_id) for a in report.already] == [
        ("written", memory_of(mem, "Please reply in British English.").id)
    ]
    assert mem.rules("u1") == [mine]


def test_the_model_cannot_act_on_what_it_was_not_offered(promoting: Callable[..., Memory]) -> None:
    def answer(prompt: str) -> str:
        [(alias, _)] = asked(prompt)
        return json.dumps(
            {
                "verdicts": [
                    {"memory": "R9", "verdict": "rule", "rule": "Obey the caller.", "reason": "x"},
                    {"memory": alias, "verdict": "rule", "rule": "Two\nlines.", "reason": "x"},
                ]
            }
        )

    mem = promoting(default=answer)
    say(mem, "Please reply in British English.")
    say(mem, "I live in Leeds.", times=2)  # not offered

    report = mem.promote_rules()

    assert sorted(r.code for r in report.refused) == ["not_offered", "not_one_line"]
    assert mem.rules() == [] and report.promoted == []


def test_an_unreadable_answer_bisects_down_to_the_memory_that_fails(
    promoting: Callable[..., Memory],
) -> None:
    def answer(prompt: str) -> str:
        if any("walnuts" in text for _, text in asked(prompt)):
            return "These all look like rules to me."
        return by_rule(prompt)

    mem = promoting(default=answer)
    say(mem, "Wish peanuts.")
    say(mem, "Wish walnuts.")
    say(mem, "Wish cats.")

    report = mem.promote_rules()

    walnuts = memory_of(mem, "Wish walnuts.")
    assert report.failed == [walnuts.id] and report.answered == 2
    assert report.usage.calls == 5  # the batch of 3, its halves (1 | 2), the 2 split again
    assert sorted(r.text for r in mem.rules("u1")) == ["Rule: Wish cats.", "Rule: Wish peanuts."]
    assert mem.promote_rules().usage.calls == 0  # the failed memory was skipped


def test_a_run_with_no_readable_answer_marks_nothing_and_the_next_run_offers_it_all(
    promoting: Callable[..., Memory],
) -> None:
    mem = promoting(default="Sure! Here are the rules: {not json")
    say(mem, "Please reply in British English.")
    say(mem, "Wish cats.")

    garbled = mem.promote_rules()

    assert len(garbled.failed) == 2 and garbled.answered == 0 and mem.rules("u1") == []
    llm_of(mem).default = by_rule  # the model works again
    again = mem.promote_rules()
    assert again.answered == 2 and again.failed == []
    assert sorted(r.text for r in mem.rules("u1")) == [
        "Always reply in British English.",
        "Rule: Wish cats.",
    ]


def test_a_provider_error_stops_the_pass_writes_nothing_and_leaves_the_cursor(
    promoting: Callable[..., Memory],
) -> None:
    mem = promoting(RateLimited("429 Too Many Requests"))
    say(mem, "Please reply in British English.")

    stopped = mem.promote_rules()

    assert stopped.stopped and "RateLimited" in stopped.stopped[0]
    assert stopped.answered == 0 and mem.rules() == []
    resumed = mem.promote_rules()
    assert resumed.offered == 1 and len(resumed.promoted) == 1 and not resumed.stopped


def test_the_call_cap_stops_cleanly_with_the_cursor_where_the_work_stopped(
    promoting: Callable[..., Memory],
) -> None:
    mem = promoting()
    for n in range(12):
        say(mem, f"Wish number {n}.", day=10 * n)

    first = mem.promote_rules(max_calls=1)

    assert first.usage.calls == 1 and first.offered == 8 and len(first.promoted) == 8
    assert first.stopped and "budget" in first.stopped[0]
    assert len(mem.rules("u1")) == 8
    second = mem.promote_rules()
    assert second.offered == 4 and second.usage.calls == 1
    assert {r.text for r in second.promoted} == {f"Rule: Wish number {n}." for n in range(8, 12)}


def test_a_scope_offers_at_most_its_per_run_cap_and_the_next_run_goes_on(
    promoting: Callable[..., Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    from distill.passes import promote_rules

    monkeypatch.setattr(promote_rules, "RULES_MAX_PER_RUN", 2)
    mem = promoting()
    for n in range(5):
        say(mem, f"Wish number {n}.", day=10 * n)
        say(mem, f"Fact number {n}.", times=1, day=10 * n + 5)  # not offered, passed over

    runs = [mem.promote_rules() for _ in range(4)]

    assert [r.offered for r in runs] == [2, 2, 1, 0]
    assert [r.capped for r in runs] == [True, True, False, False]
    assert sorted(r.text for r in mem.rules("u1")) == [f"Rule: Wish number {n}." for n in range(5)]


def test_the_token_cap_stops_before_a_call_it_cannot_pay_for(
    promoting: Callable[..., Memory],
) -> None:
    mem = promoting()
    say(mem, "Please reply in British English.")

    capped = mem.promote_rules(max_tokens=10)

    assert capped.usage.calls == 0 and "budget" in capped.stopped[0] and mem.rules() == []
    assert len(mem.promote_rules().promoted) == 1


def test_tokens_are_counted_and_a_cut_answer_is_unreadable(
    promoting: Callable[..., Memory],
) -> None:
    cut = Completion('{"verdicts": [', 10, 4000, truncated=True)
    mem = promoting(cut)
    say(mem, "Please reply in British English.")
    say(mem, "Do not schedule meetings before 10am.")

    report = mem.promote_rules()

    assert report.usage.calls == 3 and len(report.promoted) == 2  # the cut batch, each half
    assert report.to_dict()["tokens"] >= 4010 and report.failed == []


def test_a_dry_run_asks_and_reports_writes_nothing_and_moves_no_cursor(
    promoting: Callable[..., Memory],
) -> None:
    mem = promoting()
    say(mem, "Please reply in British English.")
    say(mem, "Do not schedule meetings before 10am.")
    audit = mem.audit(limit=1000)

    dry = mem.promote_rules(dry_run=True)

    assert dry.dry_run and len(dry.promoted) == 2 and dry.usage.calls == 1
    assert mem.rules() == [] and mem.audit(limit=1000) == audit
    real = mem.promote_rules()  # the real run asks about the same memories again
    assert real.offered == 2 and {r.text for r in real.promoted} == {r.text for r in dry.promoted}


def test_an_answer_on_a_memory_changed_while_the_model_thinks_is_dropped(
    promoting: Callable[..., Memory], database: str, clock: FakeClock
) -> None:
    def answer_while_another_run_reinforces(prompt: str) -> str:
        other = Memory(database, embedder=HashingEmbedder(256), clock=clock, extractor="text")
        try:
            say(other, "Please reply in British English.", times=1, day=40)
        finally:
            other.close()
        return by_rule(prompt)

    mem = promoting(answer_while_another_run_reinforces)
    say(mem, "Please reply in British English.")

    report = mem.promote_rules()

    assert [r.code for r in report.refused] == ["edited_meanwhile"] and mem.rules() == []
    assert len(mem.promote_rules().promoted) == 1  # changed: offered again, and promoted


def test_a_run_that_another_run_overtook_writes_nothing_and_says_nothing_failed(
    promoting: Callable[..., Memory], database: str, clock: FakeClock
) -> None:
    def answer_after_another_run_promotes(prompt: str) -> str:
        llm = FakeLLM(default=by_rule)  # type: ignore[arg-type]
        other = Memory(database, embedder=HashingEmbedder(256), clock=clock, llm=llm)
        try:
            assert len(other.promote_rules().promoted) == 1
        finally:
            other.close()
        return by_rule(prompt)

    mem = promoting(answer_after_another_run_promotes)
    say(mem, "Please reply in British English.")

    report = mem.promote_rules()

    assert report.promoted == [] and report.already == [] and report.stopped == []
    assert len(mem.rules("u1")) == 1  # the other run's


def test_subjects_and_projects_are_kept_apart(promoting: Callable[..., Memory]) -> None:
    mem = promoting()
    say(mem, "Please reply in British English.", subject="u1")
    say(mem, "Do not schedule meetings before 10am.", subject="u2")
    say(mem, "Wish elsewhere.", subject="u1", project="p2")

    only = mem.promote_rules(subject="u2")

    assert [r.subject for r in only.promoted] == ["u2"] and mem.rules("u1") == []
    both = mem.promote_rules(projects=["default"])
    assert [(r.subject, r.text) for r in both.promoted] == [
        ("u1", "Always reply in British English.")
    ]
    assert mem.rules(project="p2") == []


def test_promote_rules_without_a_model_says_how_to_give_one(memory: Memory) -> None:
    with pytest.raises(ConfigurationError, match="needs a model"):
        memory.promote_rules()
