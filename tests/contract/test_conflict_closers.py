"""A closed conflict set names who closed it: a person, the identity judge's model or a claim.

On both backends: each path that closes a set records its closer, the store returns it, and a
database at the version before `resolved_by` existed (`sqlite_0021` / `postgres_0018`) is given
the same closers from its audit trail when it migrates.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from distill import Memory
from distill.adapters.embed.hashing import HashingEmbedder
from distill.adapters.llm.fake import FakeLLM
from distill.core.models import ConflictKind, ConflictSet, ConflictStatus, Resolver
from tests.conftest import FakeClock
from tests.contract.test_storage import before_migration
from tests.unit.scenario_support import at, say
from tests.unit.test_drift_identity import EXTENDED, OLD, far_apart
from tests.unit.test_identity_judge import verdicts


def memory(database: str, clock: FakeClock) -> Memory:
    counter = itertools.count()
    return Memory(
        database,
        embedder=HashingEmbedder(256, overrides=far_apart(OLD, EXTENDED)),
        extractor="claims",
        llm=FakeLLM(default=verdicts(True)),
        clock=clock,
        new_id=lambda: f"id{next(counter):06d}",
    )


def lives(mem: Memory, clock: FakeClock) -> None:
    """One subject per way a set closes, and one set left open."""

    def told(subject: str, predicate: str, value: str, day: int, **claim: str) -> None:
        say(mem, predicate, {"v": value}, when=at(days=day), subject=subject, **claim)
        mem.consolidate()
        clock.advance(minutes=1)

    for subject in ("person", "claim-change", "claim-third", "open"):
        told(subject, "employer", "Acme", 0)
        told(subject, "employer", "Globex", 10)  # held against Acme
    (held,) = mem.conflicts(subject="person")
    globex = next(m for m in held.member_ids if mem.fact(m).value == {"v": "Globex"})
    mem.resolve_conflict(held.id, keep=globex)
    told("claim-change", "employer", "Globex", 20, action="supersede")  # the change adopts it
    told("claim-third", "employer", "Initech", 20)  # a third value: the members are events
    say(mem, *OLD, when=at(0), subject="model")  # two names the model says are one
    mem.consolidate()
    say(mem, *EXTENDED, when=at(days=30), subject="model")
    mem.consolidate()


def closers(mem: Memory) -> dict[str, tuple[ConflictKind, ConflictStatus, Resolver | None]]:
    sets: list[ConflictSet] = mem.conflicts(subject=None, status=None)
    return {c.subject: (c.kind, c.status, c.resolved_by) for c in sets}


def test_each_closer_is_recorded_and_a_migrated_store_names_the_same(
    backend: str, new_database: Callable[[str], str]
) -> None:
    clock = FakeClock()
    now_database = new_database("now")
    now = memory(now_database, clock)
    lives(now, clock)
    expected = closers(now)
    assert expected == {
        "person": (ConflictKind.CONFLICT, ConflictStatus.RESOLVED, Resolver.PERSON),
        "claim-change": (ConflictKind.CONFLICT, ConflictStatus.RESOLVED, Resolver.CLAIM),
        "claim-third": (ConflictKind.CONFLICT, ConflictStatus.RECLASSIFIED, Resolver.CLAIM),
        "model": (ConflictKind.IDENTITY, ConflictStatus.RESOLVED, Resolver.MODEL),
        "open": (ConflictKind.CONFLICT, ConflictStatus.OPEN, None),
    }
    # Which statements a person accepted is recorded from schema 23 (SQLite; 20 on
    # PostgreSQL) on: a set resolved before it records none.
    sets = [
        c.model_copy(update={"accepted_event_ids": ()})
        for c in now.conflicts(subject=None, status=None)
    ]
    now.close()

    old = new_database("old")
    before_migration(backend, old, now_database, "_conflict_resolvers.sql")
    migrated = memory(old, clock)
    try:
        assert migrated.conflicts(subject=None, status=None) == sets
    finally:
        migrated.close()
