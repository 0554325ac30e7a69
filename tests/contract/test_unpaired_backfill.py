"""`sqlite_0020` / `postgres_0017` mark the changes already stored as the engine would have.

A store at the version before it has no `unpaired_change` column; its migration marks, from
the facts' own record (their observations, versions and identity sets), each attribute whose
first version came from a `supersede` claim that matched nothing and was never paired since.
Here a store is filled through the engine (which marks as it goes), copied into a database at
the version before (the column dropped), migrated, and the marks compared fact by fact.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from distill import Memory
from distill.adapters.embed.hashing import HashingEmbedder
from distill.adapters.llm.fake import FakeLLM
from tests.conftest import FakeClock
from tests.contract.test_storage import before_migration
from tests.unit.scenario_support import at, say
from tests.unit.test_change_order import DENTIST, apart
from tests.unit.test_identity_judge import GP, PCP, verdicts

OLD_PCP = ("primary_care_physician", {"name": "Dr. Patel"})
RIVAL = ("primary_care_physician", {"name": "Dr. Lee"})

# Subject → its claims in arrival order: (predicate, value), day, and claim options.
HISTORIES: dict[str, list[tuple[tuple[str, dict[str, Any]], int, dict[str, str]]]] = {
    "change-alone": [(PCP, 30, {"action": "supersede"})],
    "paired-by-an-older-name": [(PCP, 30, {"action": "supersede"}), (GP, 0, {})],
    "paired-by-its-own-past": [(PCP, 30, {"action": "supersede"}), (OLD_PCP, 0, {})],
    "moved-to-its-next-version": [
        (PCP, 30, {"action": "supersede"}),
        (("primary_care_physician", {"name": "Dr. Ruiz"}), 40, {"action": "supersede"}),
    ],
    "untrusted": [(PCP, 30, {"action": "supersede", "trust": "untrusted"})],
    "a-later-name-beside-it": [(PCP, 30, {"action": "supersede"}), (DENTIST, 40, {})],
    "a-create-first": [(GP, 0, {}), (PCP, 30, {"action": "supersede"})],
    "an-earlier-change-late": [
        (PCP, 30, {"action": "supersede"}),
        (("primary_care_physician", {"name": "Dr. Ito"}), 10, {"action": "supersede"}),
    ],
    "a-rival-kept": [(PCP, 30, {"action": "supersede"}), (RIVAL, 40, {})],
}


def memory(database: str, clock: FakeClock) -> Memory:
    counter = itertools.count()
    return Memory(
        database,
        embedder=HashingEmbedder(256, overrides=apart(GP, PCP, DENTIST)),
        extractor="claims",
        llm=FakeLLM(default=verdicts(False)),
        clock=clock,
        new_id=lambda: f"id{next(counter):06d}",
    )


def marks(mem: Memory) -> dict[str, bool]:
    return {
        f"{subject}/{f.predicate}/{f.value}": f.unpaired_change
        for subject in HISTORIES
        for f in mem.facts(subject=subject, include_retired=True)
    }


def test_the_migration_marks_what_the_engine_marked(
    backend: str, new_database: Callable[[str], str]
) -> None:
    clock = FakeClock()
    now_database = new_database("now")
    now = memory(now_database, clock)
    for subject, claims in HISTORIES.items():
        for (predicate, value), day, options in claims:
            say(now, predicate, value, when=at(days=day), subject=subject, **options)
            now.consolidate()
            clock.advance(minutes=1)
    (rivals,) = now.conflicts(subject="a-rival-kept")  # a person keeps the rival value
    kept = next(m for m in rivals.member_ids if now.fact(m).value == RIVAL[1])
    now.resolve_conflict(rivals.id, keep=kept)
    expected = marks(now)
    # alone, moved to its next version, beside a later name, begun earlier, handed to a rival
    assert sum(expected.values()) == 5
    now.close()

    old = new_database("old")
    before_migration(backend, old, now_database, "_unpaired_changes.sql")
    migrated = memory(old, clock)
    try:
        assert marks(migrated) == expected
    finally:
        migrated.close()
