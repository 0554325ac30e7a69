"""Procedures and topics through `Memory`, on every store: actions stored with their events,
procedures counted, promoted and used with their audit; topics detected past a cursor,
retired when their community changes; dry runs write nothing; another subject's data is
never read; erase takes it all."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from distill import Memory
from distill.adapters.llm.fake import FakeLLM
from distill.applier import apply_plan
from distill.core.cortex_plan import WriteProcedure
from distill.core.passes import Scope
from distill.core.patterns import ProcedureStatus
from distill.core.plan import Plan
from distill.core.procedures import decide_procedures, record_use
from distill.errors import IntegrityViolation, InvalidInput, NotFound, TransientProviderError
from tests.conftest import FakeClock

T0 = datetime(2024, 12, 1, 9, 0, tzinfo=UTC)


def step(kind: str, session: str, seq: int, outcome: str = "success", **state: Any) -> dict:
    return {
        "subject": "agent",
        "text": f"{kind} {outcome}",
        "occurred_at": T0 + timedelta(hours=seq),
        "action": {
            "type": kind,
            "outcome": outcome,
            "session": session,
            "seq": seq,
            "state": state,
        },
    }


def build_test(memory: Memory, sessions: range, subject: str = "agent") -> None:
    items = []
    for i in sessions:
        items += [step("build", f"s{i}", 1, repo="py"), step("test", f"s{i}", 2, repo="py")]
    memory.add_events([{**item, "subject": subject} for item in items])


def test_an_events_action_is_stored_as_given(memory: Memory) -> None:
    [event] = memory.add_events([step("Build", "s1", 3, ci="true")])
    [stored] = memory.events([event.id])
    assert stored.action is not None
    assert stored.action.model_dump(mode="json") == {
        "type": "build",
        "outcome": "success",
        "session": "s1",
        "seq": 3,
        "state": {"ci": "true"},
    }
    again = memory.append([step("Build", "s1", 3, ci="true")])
    assert again.duplicates == 1  # the same action again is the same event
    other = memory.append([step("Build", "s1", 3, outcome="failure", ci="true")])
    assert other.added == 1  # another outcome is another event


def test_procedures_are_counted_promoted_and_recounted_not_added(memory: Memory) -> None:
    build_test(memory, range(2))
    first = memory.promote_procedures()
    [p] = memory.procedures("agent")
    assert (p.name, p.status, p.support, first.created) == ("build → test", "candidate", 2, 1)
    build_test(memory, range(2, 3))
    second = memory.promote_procedures()
    [p] = memory.procedures("agent")
    assert (p.status, p.support, second.promoted) == (ProcedureStatus.ACTIVE, 3, 1)
    third = memory.promote_procedures()
    assert memory.procedures("agent") == [p]
    assert third.outcomes == {"unchanged": 1} and third.changes == []
    audit = [e.action for e in memory.audit(subject="agent", limit=50)]
    assert audit.count("create_procedure") == 1 and audit.count("revise_procedure") == 1


def test_a_dry_run_reports_and_writes_nothing(memory: Memory) -> None:
    build_test(memory, range(3))
    report = memory.promote_procedures(dry_run=True)
    assert report.created == 1 and report.promoted == 1 and report.dry_run
    assert memory.procedures() == []
    memory.add_events([{"subject": "u", "text": "Alice met Bob in Lyon."}])
    memory.consolidate()
    topics = memory.detect_topics(dry_run=True)
    assert topics.created == 1 and memory.topics() == []
    assert memory.detect_topics().created == 1  # the cursor did not move in the dry run


def test_uses_move_the_lifecycle_with_hysteresis(memory: Memory, clock: FakeClock) -> None:
    build_test(memory, range(3))
    memory.promote_procedures()
    [p] = memory.procedures()
    for success in (True, False, False):  # 1/3 < 0.4
        clock.advance(seconds=1)
        p = memory.record_procedure_use(p.id[:10], success)
    assert p.status is ProcedureStatus.DEPRECATED
    assert memory.match_procedures("repo=py") == []
    for _ in range(2):  # 3/5 = 0.6: back
        clock.advance(seconds=1)
        p = memory.record_procedure_use(p.id, True)
    assert p.status is ProcedureStatus.ACTIVE and memory.procedures()[0] == p
    # A recount keeps the reported uses: they are no event's.
    memory.promote_procedures()
    assert memory.procedures()[0].successes == 3


def test_match_reads_the_precondition(memory: Memory) -> None:
    build_test(memory, range(3))
    memory.promote_procedures()
    assert [p.name for p in memory.match_procedures({"repo": "py"})] == ["build → test"]
    assert memory.match_procedures("repo=go") == []
    assert memory.match_procedures("repo=py", subject="someone else") == []
    with pytest.raises(InvalidInput, match="key=value"):
        memory.match_procedures("repo")
    with pytest.raises(NotFound):
        memory.record_procedure_use("f" * 32, True)


def test_one_subjects_actions_never_make_anothers_procedures(memory: Memory) -> None:
    build_test(memory, range(2), subject="agent")
    build_test(memory, range(2), subject="other")
    memory.promote_procedures()
    assert {(p.subject, p.support, p.status) for p in memory.procedures()} == {
        ("agent", 2, "candidate"),
        ("other", 2, "candidate"),
    }


def test_topics_past_the_cursor_and_a_changed_community_retired(memory: Memory) -> None:
    def said(*entities: str) -> dict:
        text = "noted: " + " and ".join(entities)  # two events of one text would be one
        return {"subject": "u", "text": text, "claims": [{"text": "x", "entities": entities}]}

    memory.add_event(subject="u", text="noted: Ada and Bob, again", claims=[])

    memory.add_events([said("Ada", "Bob"), said("Cy", "Dee")])
    memory.consolidate()
    first = memory.detect_topics()
    assert first.events == 3 and first.created == 2
    assert sorted(t.name for t in memory.topics("u")) == ["Ada, Bob", "Cy, Dee"]
    assert memory.detect_topics().events == 0  # nothing new past the cursor

    memory.add_events([said("Ada", "Eve"), said("Bob", "Eve")])
    memory.consolidate()
    second = memory.detect_topics()
    assert (second.events, second.created, second.retired) == (2, 1, 1)
    active = memory.topics("u")
    assert sorted(t.members for t in active) == [("ada", "bob", "eve"), ("cy", "dee")]
    retired = [t for t in memory.topics("u", include_retired=True) if t.status == "retired"]
    assert [t.members for t in retired] == [("ada", "bob")]
    assert all(t.embedding is not None for t in active)
    assert memory.topics("u", query="Eve")[0].members == ("ada", "bob", "eve")


def test_an_event_waiting_for_extraction_waits_for_topics(memory: Memory) -> None:
    memory.add_events([{"subject": "u", "text": "Alice met Bob in Lyon."}])
    assert memory.detect_topics().events == 0  # its job has not run
    memory.consolidate()
    assert memory.detect_topics().created == 1


def test_erase_takes_procedures_mentions_and_topics(memory: Memory) -> None:
    build_test(memory, range(3))
    memory.add_events([{"subject": "agent", "text": "Alice met Bob in Lyon."}])
    memory.consolidate()
    memory.promote_procedures()
    memory.detect_topics()
    assert memory.procedures() and memory.topics()
    memory.erase("default", "agent")
    assert memory.procedures() == [] and memory.topics(include_retired=True) == []
    build_test(memory, range(1))
    memory.consolidate()
    assert memory.detect_topics().events == 2  # the cursor went with the subject


def test_a_procedure_changed_since_it_was_read_refuses_the_plan(
    memory: Memory, clock: FakeClock
) -> None:
    build_test(memory, range(3))
    memory.promote_procedures()
    [read] = memory.procedures()
    clock.advance(seconds=5)
    memory.record_procedure_use(read.id, True)  # another writer, meanwhile
    late = record_use(read, False, clock.now())
    with pytest.raises(IntegrityViolation, match="changed since it was read"):
        apply_plan(
            memory.store,
            Plan([late]),
            Scope("default", "agent"),
            job_id=None,
            now=clock.now(),
            new_id=memory._new_id,
        )
    [kept] = memory.procedures()
    assert (kept.successes, kept.failures) == (1, 0)


def test_a_write_outside_its_scope_is_refused(memory: Memory) -> None:
    build_test(memory, range(3))
    result = memory.promote_procedures(dry_run=True)
    assert result.changes
    [p] = [
        a.after
        for a in decide_procedures(
            "default", "agent", memory.store.action_events("default", "agent"), [], T0
        ).plan.actions
        if isinstance(a, WriteProcedure)
    ]
    with pytest.raises(IntegrityViolation, match="outside the scope"):
        apply_plan(
            memory.store,
            Plan([WriteProcedure(None, p, "made")]),
            Scope("default", "someone else"),
            job_id=None,
            now=T0,
            new_id=memory._new_id,
        )
    assert memory.procedures() == []


def test_status_counts_procedures_and_topics_by_status_per_project(memory: Memory) -> None:
    build_test(memory, range(2))
    build_test(memory, range(3), subject="other")
    memory.add_events([{"subject": "u", "text": "Ada met Bob in Lyon."}])
    memory.add_events([{"subject": "u", "text": "Ada met Bob.", "project": "elsewhere"}])
    memory.consolidate()
    memory.promote_procedures()
    memory.detect_topics()

    here = memory.status(project="default").to_dict()
    assert here["procedures"] == {"candidate": 1, "active": 1, "deprecated": 0}
    assert here["topics"] == {"active": 1, "retired": 0}
    there = memory.status(project="elsewhere").to_dict()
    assert there["procedures"]["active"] == 0 and there["topics"]["active"] == 1
    assert memory.status().to_dict()["topics"]["active"] == 2


def noted(*entities: str) -> dict:
    return {
        "subject": "u",
        "text": "noted: " + " and ".join(entities),
        "claims": [{"text": "x", "entities": entities}],
    }


def test_a_model_that_fails_names_no_more_topics_that_run(
    scripted_memory: Callable[..., Memory],
) -> None:
    mem = scripted_memory(TransientProviderError("timed out"), default="Chess club")
    mem.add_events([noted("Ada", "Bob"), noted("Cy", "Dee"), noted("Eve", "Fay")])
    mem.consolidate()

    report = mem.detect_topics(name_with_model=True)

    assert report.created == 3 and report.naming_stopped is not None
    assert "timed out" in report.naming_stopped
    assert isinstance(mem.llm, FakeLLM) and len(mem.llm.calls) == 1  # not one per topic
    assert sorted(t.name for t in mem.topics("u")) == ["Ada, Bob", "Cy, Dee", "Eve, Fay"]


@pytest.mark.parametrize(
    ("answer", "named"),
    [("Chess club", "Chess club"), ("Sure! here are your facts: {not json", "Ada, Bob")],
)
def test_a_model_answer_names_a_topic_only_when_it_is_a_title(
    scripted_memory: Callable[..., Memory], answer: str, named: str
) -> None:
    mem = scripted_memory(default=answer)
    mem.add_events([noted("Ada", "Bob")])
    mem.consolidate()
    report = mem.detect_topics(name_with_model=True)
    assert report.naming_stopped is None
    assert [t.name for t in mem.topics("u")] == [named]
