"""A subject's rules in the store, on every backend: written and read back, one per
fingerprint, append-only, scoped by project and subject, erased with their subject, shown
first by `context`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from distill import Memory
from distill.core.models import RuleOrigin
from distill.core.plan import AddRule, Plan
from distill.errors import IntegrityViolation, InvalidInput
from distill.ports import Store
from tests.conftest import FakeClock

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def test_a_persons_rule_reads_back_as_written_and_is_audited(memory: Memory) -> None:
    rule = memory.add_rule(" u1 ", "  Never schedule meetings before 10am ")

    assert (rule.subject, rule.text, rule.origin) == (
        "u1",
        "Never schedule meetings before 10am",
        RuleOrigin.WRITTEN,
    )
    assert memory.rules("u1") == [rule]
    [entry] = [e for e in memory.audit(subject="u1") if e.action == "add_rule"]
    assert entry.pass_name == "api" and entry.fact_id is None
    assert entry.after == rule.model_dump(mode="json")


def test_one_rule_per_fingerprint_and_subject(memory: Memory) -> None:
    first = memory.add_rule("u1", "Always reply in British English.")
    again = memory.add_rule("u1", "always reply in BRITISH english")
    other = memory.add_rule("u2", "Always reply in British English.")
    elsewhere = memory.add_rule("u1", "Always reply in British English.", project="p2")

    assert again == first
    assert memory.rules("u1") == [first]
    assert other.id != first.id and memory.rules("u2") == [other]
    assert memory.rules("u1", project="p2") == [elsewhere]
    assert [e.action for e in memory.audit(subject="u1")].count("add_rule") == 1


def test_the_store_refuses_a_second_rule_of_one_fingerprint(memory: Memory, store: Store) -> None:
    first = memory.add_rule("u1", "Always reply in British English.")
    copy = first.model_copy(update={"id": "another", "text": "ALWAYS reply in British English"})
    with pytest.raises(IntegrityViolation, match="fingerprint"):
        store.apply(Plan([AddRule(copy, "again", "api")]), None, [])
    assert memory.rules("u1") == [first]


def test_a_rule_is_one_line_of_words(memory: Memory) -> None:
    for bad in ("", "  ", "two\nlines", "x" * 201):
        with pytest.raises(InvalidInput):
            memory.add_rule("u1", bad)
    with pytest.raises(InvalidInput, match="subject"):
        memory.add_rule("  ", "Reply in British English.")
    assert memory.rules("u1") == []


def test_rules_are_read_in_order_a_persons_first(memory: Memory, clock: FakeClock) -> None:
    first = memory.add_rule("u1", "Never call before 9am.")
    clock.advance(days=1)
    also = memory.add_rule("u1", "Reply in British English.")
    assert memory.rules("u1") == [first, also]
    assert [r.subject for r in memory.rules()] == ["u1", "u1"]


def test_erasing_a_subject_erases_its_rules_and_counts_them(memory: Memory) -> None:
    memory.add_rule("u1", "Never call before 9am.")
    memory.add_event(subject="u1", text="I live in Leeds.", occurred_at=T0)
    memory.consolidate()
    kept = memory.add_rule("u2", "Reply in British English.")

    counts = memory.erase("default", "u1")

    assert counts["rules"] == 1
    assert memory.rules("u1") == [] and memory.rules("u2") == [kept]
    [receipt] = [e for e in memory.audit(subject="u1") if e.action == "erase_subject"]
    assert receipt.after == {"erased": counts}


def test_a_subject_with_only_rules_is_erased_too(memory: Memory) -> None:
    memory.add_rule("u1", "Never call before 9am.")
    counts = memory.erase("default", "u1")
    assert counts["rules"] == 1 and memory.rules("u1") == []
    assert memory.erase("default", "u1")["rules"] == 0


def test_erasing_a_project_erases_every_subjects_rules(memory: Memory) -> None:
    memory.add_rule("u1", "Never call before 9am.", project="p2")
    memory.add_rule("u2", "Reply in British English.", project="p2")
    mine = memory.add_rule("u1", "Reply in British English.")
    assert memory.erase("p2")["rules"] == 2
    assert memory.rules(project="p2") == [] and memory.rules() == [mine]


def test_context_shows_the_rules_first_and_as_data(memory: Memory, clock: FakeClock) -> None:
    memory.add_event(subject="u1", text="I live in Leeds.", occurred_at=T0)
    memory.consolidate()
    rule = memory.add_rule("u1", "Reply in British English.")
    memory.add_rule("u2", "Someone else's rule.")

    block = memory.context("u1")

    lines = block.text.splitlines()
    assert lines[0].startswith("Rules for u1") and lines[1] == "- Reply in British English."
    assert "What is known about u1:" in lines and "Someone else" not in block.text
    assert block.to_dict()["rules"][0]["id"] == rule.id
    # What Distill knew before the rule was written: no rule.
    before = memory.context("u1", known_at=rule.created_at - timedelta(seconds=1))
    assert before.rules == () and "Rules for" not in before.text
