"""`Memory.summarise`: a subject's old memories put to a scripted summariser, its proposals
checked in code and applied with their receipts, on every backend.

The memories are made as a user's would be, one event each through the `text` extractor, a
day apart. The scripted model reads the prompt as a real one would (its aliases, through
`core.summarise.asked`) and answers JSON.
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
from distill.core.models import Fact, FactStatus
from distill.core.summarise import asked
from distill.errors import ConfigurationError, TransientProviderError
from tests.conftest import FakeClock

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
OLD = ["User has 3 bikes", "User likes green tea", "User does not eat meat"]
RECENT = ["User plays chess", "User reads novels"]
SUMMARY = "The user has 3 bikes, likes green tea and does not eat meat."


def everything(prompt: str) -> str:
    """A summariser that consumes every memory shown, with a faithful summary."""
    return json.dumps({"summary": SUMMARY, "consumes": [a for a, _ in asked(prompt)]})


@pytest.fixture
def summarising(scripted_memory: Callable[..., Memory]) -> Callable[..., Memory]:
    return partial(scripted_memory, default=everything)


def remember(mem: Memory, texts: list[str], subject: str = "u1", day: int = 0) -> None:
    for n, text in enumerate(texts):
        mem.add_event(subject=subject, text=text, occurred_at=T0 + timedelta(days=day + n))
    mem.consolidate()


def memory_of(mem: Memory, text: str, subject: str = "u1") -> Fact:
    [found] = [f for f in mem.facts(subject=subject, include_retired=True) if f.text == text]
    return found


def llm_of(mem: Memory) -> FakeLLM:
    assert isinstance(mem.llm, FakeLLM)
    return mem.llm


def snapshot(mem: Memory) -> list[tuple[str, str, str | None]]:
    return sorted((f.id, str(f.status), f.superseded_by) for f in mem.facts(include_retired=True))


def test_old_memories_become_one_summary_with_receipts(
    summarising: Callable[..., Memory],
) -> None:
    mem = summarising()
    remember(mem, OLD + RECENT)
    report = mem.summarise(keep=2)
    assert report.offered == 3 and report.consumed == 3 and report.refused == []
    [summary] = report.summaries
    stored = memory_of(mem, SUMMARY)
    assert stored.id == summary.id and stored.status is FactStatus.ACTIVE
    # The summary's evidence is the union of what it consumed: every event is reachable.
    events = set()
    for text in OLD:
        old = memory_of(mem, text)
        assert old.status is FactStatus.SUPERSEDED and old.superseded_by == summary.id
        events.update(old.source_event_ids)
    assert set(stored.source_event_ids) == events
    assert stored.valid_from == memory_of(mem, OLD[0]).valid_from
    # The recent memories were not shown.
    [prompt] = [c.prompt for c in llm_of(mem).calls]
    assert all(t not in prompt for t in RECENT)
    status = mem.status().to_dict()
    assert (status["consolidations"], status["facts_consolidated"]) == (1, 3)
    trail = [e for e in mem.audit("u1") if e.fact_id == memory_of(mem, OLD[0]).id]
    assert trail[-1].action == "consolidate_fact" and trail[-1].pass_name == "summarise"


def test_a_summary_is_found_by_search_through_both_arms_as_its_memories_were(
    summarising: Callable[..., Memory],
) -> None:
    mem = summarising()
    remember(mem, OLD + RECENT)
    mem.summarise(keep=2)

    [hit] = [h for h in mem.search("green tea and bikes", subject="u1") if h.fact.text == SUMMARY]
    # Written with its recall vector: the vector arm finds it, not only the words arm.
    assert "vector" in hit.parts and "lexical" in hit.parts
    assert mem.search("User has 3 bikes", subject="u1", limit=1)[0].fact.text == SUMMARY


def test_scenario_25_hallucinated_and_duplicate_ids(summarising: Callable[..., Memory]) -> None:
    answer = json.dumps({"summary": "The user has 3 bikes.", "consumes": ["M1", "M1", "X"]})
    mem = summarising(answer)
    remember(mem, OLD + RECENT)
    report = mem.summarise(keep=2)
    assert report.consumed == 1 and [r.code for r in report.refused] == ["not_shown"]
    bikes = memory_of(mem, OLD[0])
    assert bikes.superseded_by == memory_of(mem, "The user has 3 bikes.").id
    assert memory_of(mem, OLD[1]).status is FactStatus.ACTIVE
    status = mem.status().to_dict()
    assert (status["consolidations"], status["facts_consolidated"]) == (1, 1)


def test_scenario_25_only_unshown_ids_writes_nothing(summarising: Callable[..., Memory]) -> None:
    mem = summarising(json.dumps({"summary": SUMMARY, "consumes": ["X"]}))
    remember(mem, OLD + RECENT)
    before = snapshot(mem)
    report = mem.summarise(keep=2)
    assert snapshot(mem) == before
    assert {r.code for r in report.refused} == {"not_shown", "no_consumes"}
    status = mem.status().to_dict()
    assert (status["consolidations"], status["facts_consolidated"]) == (0, 0)


@pytest.mark.parametrize(
    "answer",
    [
        "I summarised them for you.",
        json.dumps({"summary": "", "consumes": ["M1", "M2"]}),
        json.dumps({"summary": SUMMARY, "consumes": []}),
    ],
)
def test_scenario_26_malformed_output_leaves_the_store(
    summarising: Callable[..., Memory], answer: str
) -> None:
    mem = summarising(default=answer)
    remember(mem, OLD + RECENT)
    before = snapshot(mem)
    report = mem.summarise(keep=2)
    assert snapshot(mem) == before and report.summaries == []
    assert mem.status().to_dict()["consolidations"] == 0


def test_scenario_26_a_fenced_proposal_is_accepted(summarising: Callable[..., Memory]) -> None:
    body = json.dumps({"summary": SUMMARY, "consumes": ["M1", "M2", "M3"]})
    mem = summarising(f"```json\n{body}\n```")
    remember(mem, OLD + RECENT)
    assert mem.summarise(keep=2).consumed == 3


def test_an_unfaithful_summary_leaves_the_memory_it_loses_live(
    summarising: Callable[..., Memory],
) -> None:
    lossy = "The user has some bikes, likes green tea and does not eat meat."
    mem = summarising(json.dumps({"summary": lossy, "consumes": ["M1", "M2", "M3"]}))
    remember(mem, OLD + RECENT)
    report = mem.summarise(keep=2)
    assert report.consumed == 2 and report.refused_by_code == {"lost_number": 1}
    assert memory_of(mem, OLD[0]).status is FactStatus.ACTIVE


def test_pinned_memories_are_never_shown(summarising: Callable[..., Memory]) -> None:
    mem = summarising()
    remember(mem, OLD + RECENT)
    mem.pin(memory_of(mem, OLD[1]).id)
    mem.summarise(keep=2)
    [prompt] = [c.prompt for c in llm_of(mem).calls]
    assert OLD[1] not in prompt
    assert memory_of(mem, OLD[1]).status is FactStatus.ACTIVE


def test_a_dry_run_writes_nothing(summarising: Callable[..., Memory]) -> None:
    mem = summarising()
    remember(mem, OLD + RECENT)
    before = snapshot(mem)
    report = mem.summarise(keep=2, dry_run=True)
    assert report.consumed == 3 and report.dry_run
    assert snapshot(mem) == before
    # No cursor moved: the real run is offered the same memories.
    assert mem.summarise(keep=2).consumed == 3


def test_unchanged_memory_is_not_offered_again(summarising: Callable[..., Memory]) -> None:
    keep_all = json.dumps({"summary": SUMMARY, "consumes": []})
    mem = summarising(default=keep_all)
    remember(mem, OLD + RECENT)
    mem.summarise(keep=2)
    assert len(llm_of(mem).calls) == 1
    mem.summarise(keep=2)
    assert len(llm_of(mem).calls) == 1, "a second run over unchanged memory asks nothing"
    # New memory pushes the next old ones past the budget: only those are offered.
    remember(mem, ["User swims on Sundays", "User owns a cat"], day=10)
    mem.summarise(keep=2)
    assert len(llm_of(mem).calls) == 2
    shown = [t for _, t in asked(llm_of(mem).calls[-1].prompt)]
    assert shown == RECENT


def test_a_summary_is_offered_again_only_once_it_is_old(
    summarising: Callable[..., Memory],
) -> None:
    mem = summarising()
    remember(mem, OLD + RECENT)
    mem.summarise(keep=2)
    report = mem.summarise(keep=2)
    assert report.offered == 0, "the summary is the newest change: kept verbatim"
    # Retired memories are never offered again.
    remember(mem, ["User swims on Sundays", "User owns a cat", "User bakes bread"], day=10)
    mem.summarise(keep=2)
    shown = {t for c in llm_of(mem).calls[1:] for _, t in asked(c.prompt)}
    assert not shown & set(OLD)


def test_contradictions_open_a_conflict_set(summarising: Callable[..., Memory]) -> None:
    answer = {
        "summary": "The user likes green tea.",
        "consumes": ["M1", "M2", "M3"],
        "contradictions": [{"memories": ["M1", "M3"], "reason": "bikes or no meat?"}],
    }
    mem = summarising(json.dumps(answer))
    remember(mem, OLD + RECENT)
    report = mem.summarise(keep=2)
    assert report.contested == 1 and report.consumed == 1
    [conflict] = mem.conflicts(subject="u1")
    assert set(conflict.member_ids) == {memory_of(mem, OLD[0]).id, memory_of(mem, OLD[2]).id}
    assert memory_of(mem, OLD[0]).status is FactStatus.ACTIVE


def test_an_unreachable_model_is_reported_once_and_the_pass_skips(
    summarising: Callable[..., Memory],
) -> None:
    mem = summarising(TransientProviderError("ollama at http://127.0.0.1:9 is unreachable"))
    remember(mem, OLD + RECENT, subject="u1")
    remember(mem, OLD + RECENT, subject="u2")
    before = snapshot(mem)
    report = mem.summarise(keep=2)
    assert len(report.stopped) == 1 and "unreachable" in report.stopped[0]
    assert snapshot(mem) == before and len(llm_of(mem).calls) == 1
    # Nothing moved: the next run, with the model back, is offered both subjects.
    again = mem.summarise(keep=2)
    assert again.consumed == 6 and again.scopes == 2


def test_no_model_is_an_error_that_says_how_to_give_one(database: str, clock: FakeClock) -> None:
    with (
        Memory(database, embedder=HashingEmbedder(256), clock=clock) as mem,
        pytest.raises(ConfigurationError, match="summarise needs a model"),
    ):
        mem.summarise()


def test_a_summary_is_recalled_and_its_receipts_are_not(
    summarising: Callable[..., Memory],
) -> None:
    mem = summarising()
    remember(mem, OLD + RECENT)
    mem.summarise(keep=2)
    found = [h.fact.text for h in mem.search("bikes", subject="u1")]
    assert SUMMARY in found and OLD[0] not in found


def test_scenario_28_over_many_cycles_every_retired_memory_has_a_live_receipt(
    summarising: Callable[..., Memory],
) -> None:
    """Cycles of new memories and summaries, with a model that consumes what it is shown
    and another that consumes some and loses a number: every memory that leaves the live
    set points at a fact that exists, and nothing retired is ever shown again."""

    def some(prompt: str) -> str:
        shown = asked(prompt)
        text = "The user " + "; ".join(t.removeprefix("User ") for _, t in shown[::2])
        return json.dumps({"summary": text, "consumes": [a for a, _ in shown]})

    mem = summarising(default=some)
    for cycle in range(5):
        texts = [f"User fact {cycle * 10 + n} is kept" for n in range(6)]
        remember(mem, texts, day=cycle * 10)
        mem.summarise(keep=3)
    facts = {f.id: f for f in mem.facts(include_retired=True)}
    retired = {i for i, f in facts.items() if f.status is not FactStatus.ACTIVE}
    assert retired, "some memories were summarised"
    for i in retired:
        receipt = facts[i].superseded_by
        assert receipt in facts, f"{i} left the live set without a receipt"
    shown_after: set[str] = set()
    for call in llm_of(mem).calls:
        texts = {t for _, t in asked(call.prompt)}
        assert not texts & shown_after, "a retired memory was shown again"
        shown_after |= {
            t
            for t in texts
            if any(f.text == t and f.status is not FactStatus.ACTIVE for f in facts.values())
        }


def test_the_anthropic_path_without_consumes_consumes_the_batch(
    summarising: Callable[..., Memory],
) -> None:
    mem = summarising(json.dumps({"summary": SUMMARY}))
    llm_of(mem).model_id = "anthropic/claude-3-5-haiku"
    remember(mem, OLD + RECENT)
    report = mem.summarise(keep=2)
    assert report.consumed == 3
    assert {memory_of(mem, t).superseded_by for t in OLD} == {report.summaries[0].id}


def test_a_memory_pinned_while_the_model_answers_is_not_consumed(
    summarising: Callable[..., Memory],
) -> None:
    mems: list[Memory] = []

    def pin_then_answer(prompt: str) -> str:
        mems[0].pin(memory_of(mems[0], OLD[0]).id)
        return everything(prompt)

    mem = summarising(pin_then_answer)
    mems.append(mem)
    remember(mem, OLD + RECENT)
    report = mem.summarise(keep=2)
    assert report.consumed == 2 and report.refused_by_code == {"edited_meanwhile": 1}
    bikes = memory_of(mem, OLD[0])
    assert bikes.pinned and bikes.status is FactStatus.ACTIVE
