"""The extraction watermark on every backend (`core.watermark`): the store's backlog of a pass
is the live memories it holds no mark of their present text for; a mark moves only through
the applier, from what the pass read; erasing a subject and pruning a tombstone take their
marks with them; and a store at the previous schema version, whose passes kept cursors,
comes out of the migration with those cursors turned into marks.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import timedelta

import pytest

from distill import Memory
from distill.applier import apply_plan
from distill.core.models import Fact, FactStatus
from distill.core.passes import Scope
from distill.core.plan import MarkFacts, Plan, ReviseFact
from distill.core.watermark import Mark, signature
from distill.errors import IntegrityViolation
from tests.contract.test_dedupe import SUBJECT, plant
from tests.contract.test_prune import STALE, merged
from tests.contract.test_storage import postgres_previous_version, sqlite_previous_version
from tests.factories import T0, new_id

SCOPE = Scope("default", SUBJECT)
# Words the two signatures (Python's, and the one PostgreSQL computes in SQL) must agree on.
TEXTS = ("User has 3 bikes.", "Café au lait, s'il vous plaît ☕", "東京に住んでいる", "tab\there")


def mark(memory: Memory, facts: list[Fact], pass_name: str = "judge", **read: str) -> None:
    marks = tuple(Mark(f.id, read.get(f.id), signature(f.text)) for f in facts)
    action = MarkFacts(SCOPE.project, SCOPE.subject, pass_name, marks, T0, "read", pass_name)
    apply_plan(memory.store, Plan([action]), SCOPE, job_id=None, now=T0, new_id=new_id)


def backlog(memory: Memory, pass_name: str = "judge") -> list[str]:
    return [f.text for f in memory.store.unmarked_memories(SCOPE.project, SUBJECT, pass_name)]


def revise(memory: Memory, fact: Fact, **changes: object) -> Fact:
    after = fact.model_copy(update=changes)
    plan = Plan([ReviseFact(fact, after, "link", "changed by the test", "api")])
    apply_plan(memory.store, plan, SCOPE, job_id=None, now=T0, new_id=new_id)
    return after


def test_marked_memories_leave_the_backlog_whatever_their_words(memory: Memory) -> None:
    facts = [plant(memory, t, minutes=n) for n, t in enumerate(TEXTS)]
    assert backlog(memory) == list(TEXTS)  # least recently reinforced first

    mark(memory, facts[:3])

    assert backlog(memory) == [TEXTS[3]]
    assert backlog(memory, "summarise") == list(TEXTS)  # each pass has its own marks
    marks = memory.store.fact_marks(SCOPE.project, "judge", [f.id for f in facts])
    assert marks == {f.id: signature(f.text) for f in facts[:3]}


def test_a_changed_text_comes_back_a_reinforcement_does_not(memory: Memory) -> None:
    tea, bikes = plant(memory, "I like tea."), plant(memory, "I have 3 bikes.", minutes=1)
    mark(memory, [tea, bikes])

    revise(memory, tea, reinforcement_count=4, last_reinforced_at=T0 + timedelta(days=3))
    assert backlog(memory) == []
    edited = revise(memory, bikes, text="I have 4 bikes.")

    assert backlog(memory) == ["I have 4 bikes."]
    mark(memory, [edited], **{bikes.id: signature(bikes.text)})
    assert backlog(memory) == []


def test_retired_and_pinned_facts_are_not_a_backlog_but_pinned_memories_are(
    memory: Memory,
) -> None:
    survivor, tombstone = merged(memory)
    plant(memory, "Pinned words.", minutes=5, pinned=True)

    # A retired fact is never read again; a pinned memory is the pass's to leave alone.
    assert backlog(memory) == ["Publishes on Tuesday mornings.", "Pinned words."]
    assert tombstone.status is FactStatus.SUPERSEDED and tombstone.superseded_by == survivor.id


def test_a_mark_moves_only_from_what_the_pass_read(memory: Memory) -> None:
    tea = plant(memory, "I like tea.")
    mark(memory, [tea])

    with pytest.raises(IntegrityViolation, match="moved since it was read"):
        mark(memory, [tea])  # another run marked it meanwhile: read None, found a mark
    mark(memory, [tea], **{tea.id: signature(tea.text)})  # from what is there: fine


def test_a_fact_of_another_subject_cannot_be_marked(memory: Memory) -> None:
    elsewhere = plant(memory, "I like tea.", subject="someone-else")

    with pytest.raises(IntegrityViolation, match="not of default"):
        mark(memory, [elsewhere])
    assert memory.store.fact_marks("default", "judge", [elsewhere.id]) == {}


def test_an_erase_and_a_prune_take_the_marks_with_them(memory: Memory, clock: object) -> None:
    survivor, tombstone = merged(memory)
    mark(memory, [survivor, tombstone])
    assert set(memory.store.fact_marks("default", "judge", [survivor.id, tombstone.id])) == {
        survivor.id,
        tombstone.id,
    }
    clock.advance(days=STALE.days)  # type: ignore[attr-defined]

    assert [p.fact_id for p in memory.prune().pruned] == [tombstone.id]
    assert memory.store.fact_marks("default", "judge", [tombstone.id]) == {}

    memory.erase("default", SUBJECT)
    assert memory.store.fact_marks("default", "judge", [survivor.id]) == {}


def test_a_cursor_of_the_previous_version_becomes_marks(
    backend: str,
    open_memory: Callable[..., Memory],
    new_database: Callable[[str], str],
) -> None:
    now_database = new_database("now")
    now = open_memory(now_database)
    read_before, unread = [], []
    for n, text in enumerate(("I like tea.", "I like cocoa.", "I have 3 bikes.", "I sing.")):
        now.add_event(subject=SUBJECT, text=text, occurred_at=T0 + timedelta(days=n))
        now.consolidate()
        now.clock.advance(minutes=1)  # type: ignore[attr-defined]
        (read_before if n < 2 else unread).append(text)
    entries = [e for e in now.audit(SUBJECT) if e.action == "create_fact"]
    last_read = max(
        (e for e in entries if now.fact(e.fact_id or "").text == "I like cocoa."),
        key=lambda e: e.at,
    )
    position = f"{last_read.at.isoformat()}|{last_read.id}"

    old = new_database("old")
    (sqlite_previous_version if backend == "sqlite" else postgres_previous_version)(
        old, now_database
    )
    insert = "INSERT INTO pass_cursors VALUES ('default', %s, 'judge', %s, %s)"
    if backend == "sqlite":
        moved = int(T0.timestamp() * 1_000_000)
        with sqlite3.connect(old) as conn:
            conn.execute(insert.replace("%s", "?"), (SUBJECT, position, moved))
    else:
        import psycopg

        with psycopg.connect(old, autocommit=True) as conn:
            conn.execute(insert, (SUBJECT, position, T0))
    migrated = open_memory(old)

    judged = migrated.store.unmarked_memories("default", SUBJECT, "judge")
    assert sorted(f.text for f in judged) == sorted(unread)
    assert len(migrated.store.unmarked_memories("default", SUBJECT, "summarise")) == 4
