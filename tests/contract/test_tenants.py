"""Tenants: every id is scoped to its project, on every backend.

A project is a tenant. An id of another project must read as "not found", exactly as an id
that does not exist, whether it reaches `Memory` or the store's own queries (defence in
depth: the SQL filters by project, not only the Python). The property test drives random
histories in one project and checks that no call scoped to another returns, changes or
reveals anything of it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from distill import Memory
from distill.adapters.embed.hashing import HashingEmbedder
from distill.errors import InvalidInput, NotFound
from distill.ports import Store
from tests.conftest import FakeClock

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
HOME, AWAY = "acme", "globex"


def claim(predicate: str, value: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"predicate": predicate, "value": value, **extra}


def populate(mem: Memory, project: str) -> dict[str, list[str]]:
    """A project with one of everything: a superseded and an active fact, an open conflict, a
    quarantined candidate, a pinned fact, a memory; returns its ids by kind."""

    def add(day: int, source: str = "chat", trust: str = "trusted", **fields: Any) -> None:
        mem.add_event(
            project=project,
            subject="u1",
            occurred_at=T0 + timedelta(days=day),
            source=source,
            trust=trust,
            **fields,
        )

    add(0, claims=[claim("bike_count", {"count": 3})])
    add(30, claims=[claim("bike_count", {"count": 4}, action="supersede")])
    add(1, claims=[claim("invoice_language", {"language": "fr"})], source="crm")
    add(1, claims=[claim("invoice_language", {"language": "de"})], source="billing")
    add(2, claims=[claim("employer", {"name": "Initech"})], source="web", trust="third_party")
    add(3, text="I prefer window seats.", claims=[{"text": "Prefers window seats."}])
    mem.consolidate()
    facts = mem.facts(project=project, include_retired=True)
    active = [f for f in facts if f.status.value == "active"]
    mem.pin(active[0].id, project=project)
    events = {i for f in facts for i in f.source_event_ids}
    return {
        "facts": [f.id for f in facts],
        "conflicts": [c.id for c in mem.conflicts(project=project, status=None)],
        "events": sorted(events),
    }


def snapshot(mem: Memory, project: str) -> dict[str, Any]:
    """Everything a project's reads show, to compare before and after another's calls."""
    return {
        "facts": mem.facts(project=project, include_retired=True),
        "conflicts": mem.conflicts(project=project, status=None),
        "audit": mem.audit(project=project, limit=10_000),
        "counts": mem.status(project).counts,
    }


def refused_like_a_missing_id(call: Callable[[str], object], foreign: str) -> None:
    """`call(foreign)` fails exactly as `call(<an id nobody has>)` does: same error, same
    message but for the id itself."""
    missing = "f" * 32
    with pytest.raises(NotFound) as theirs:
        call(foreign)
    with pytest.raises(NotFound) as nobodys:
        call(missing)
    assert str(theirs.value).replace(foreign, "<id>") == str(nobodys.value).replace(missing, "<id>")


def test_an_id_of_another_project_is_not_found_by_any_operation(memory: Memory) -> None:
    home = populate(memory, HOME)
    populate(memory, AWAY)  # the other tenant has its own of everything
    before = snapshot(memory, HOME)
    assert home["conflicts"] and home["facts"] and home["events"]

    for fact_id in home["facts"]:
        refused_like_a_missing_id(lambda i: memory.fact(i, project=AWAY), fact_id)
        refused_like_a_missing_id(lambda i: memory.history(i, project=AWAY), fact_id)
        refused_like_a_missing_id(lambda i: memory.pin(i, project=AWAY), fact_id)
        refused_like_a_missing_id(lambda i: memory.unpin(i, project=AWAY), fact_id)
        # Their own prefixes, too: a prefix never reaches across projects.
        with pytest.raises(NotFound, match=f"no fact {fact_id[:20]} in project 'globex'"):
            memory.fact(fact_id[:20], project=AWAY)
    for conflict_id in home["conflicts"]:
        refused_like_a_missing_id(
            lambda i: memory.resolve_conflict(i, keep=None, project=AWAY), conflict_id
        )
    # Keeping another project's fact in one's own conflict set is no way in either.
    [own_conflict, *_] = memory.conflicts(project=AWAY)
    with pytest.raises(InvalidInput, match="not a member"):
        memory.resolve_conflict(own_conflict.id, keep=home["facts"][0], project=AWAY)
    assert memory.events(home["events"], project=AWAY) == []
    assert memory.events(home["events"], project=HOME) != []

    assert snapshot(memory, HOME) == before  # nothing of the home project changed


def test_the_default_project_does_not_see_other_projects_ids(memory: Memory) -> None:
    home = populate(memory, HOME)
    with pytest.raises(NotFound):
        memory.fact(home["facts"][0])  # project="default"
    with pytest.raises(NotFound):
        memory.history(home["facts"][0])
    assert memory.fact(home["facts"][0], project=HOME).project == HOME


def test_the_store_queries_filter_by_project_themselves(memory: Memory) -> None:
    """Defence in depth: the store, asked directly, finds nothing of another project."""
    store: Store = memory.store
    home = populate(memory, HOME)
    for fact_id in home["facts"]:
        with pytest.raises(NotFound):
            store.fact(AWAY, fact_id)
        assert store.fact(HOME, fact_id).id == fact_id
        assert store.audit_for(AWAY, fact_id) == []
        assert store.audit_for(HOME, fact_id) != []
        assert store.observations_for(AWAY, fact_id) == []
        assert store.ids_with_prefix("fact", AWAY, fact_id[:8], 5) == []
        assert fact_id in store.ids_with_prefix("fact", HOME, fact_id, 5)
    for conflict_id in home["conflicts"]:
        with pytest.raises(NotFound):
            store.conflict(AWAY, conflict_id)
        assert store.ids_with_prefix("conflict", AWAY, conflict_id, 5) == []
    assert store.events(AWAY, home["events"]) == []
    assert store.observations_for_events(AWAY, home["events"]) == []
    assert len(store.events(HOME, home["events"])) == len(home["events"])
    assert store.observations_for_events(HOME, home["events"]) != []


def test_an_ambiguous_or_too_short_prefix_is_refused(database: str) -> None:
    counter = itertools.count(1)
    # Ids 0000000000000abc0000000000000001, ...02, ...: all share their first 28 characters.
    mem = Memory(
        database,
        embedder=HashingEmbedder(256),
        clock=FakeClock(),
        new_id=lambda: f"{0xABC0 << 64 | next(counter):032x}",
    )
    try:
        populate(mem, HOME)
        target = mem.facts(project=HOME, include_retired=True)[0]
        with pytest.raises(InvalidInput, match=r"ambiguous: it begins \d+ or more ids"):
            mem.fact(target.id[:12], project=HOME)
        with pytest.raises(InvalidInput, match="too short"):
            mem.fact(target.id[:3], project=HOME)
        with pytest.raises(NotFound):
            mem.fact("abcd", project=HOME)  # hex, long enough, and no id begins so
        assert mem.fact(target.id, project=HOME) == target
    finally:
        mem.close()


def test_a_prefix_of_a_real_id_works_for_every_command_that_takes_one(memory: Memory) -> None:
    home = populate(memory, HOME)
    [conflict] = [c for c in memory.conflicts(project=HOME) if c.kind.value == "conflict"]
    fact = memory.fact(home["facts"][-1], project=HOME)
    short = fact.id[:24]  # distill's ids: 12 of time, 4 of counter, 16 random
    assert memory.fact(short, project=HOME) == fact
    assert memory.history(short, project=HOME).fact == fact
    assert memory.pin(short, project=HOME).pinned
    assert not memory.unpin(short, project=HOME).pinned
    resolved = memory.resolve_conflict(
        conflict.id[:24], keep=conflict.member_ids[0][:24], project=HOME
    )
    assert resolved.kept_fact_id == conflict.member_ids[0]


def test_reads_refuse_malformed_arguments_with_the_field(memory: Memory) -> None:
    with pytest.raises(InvalidInput, match="as_of"):
        memory.facts(as_of=5)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="as_of"):
        memory.facts(as_of="yesterday")
    with pytest.raises(InvalidInput, match="as_of"):
        memory.facts(as_of="0001-01-01T00:30:00+01:00")  # before year 1 in UTC
    with pytest.raises(InvalidInput, match="as_of"):
        memory.facts(as_of="9999-12-31T23:30:00-01:00")  # after year 9999 in UTC
    with pytest.raises(InvalidInput, match="status"):
        memory.conflicts(status="bogus")
    with pytest.raises(InvalidInput, match="fact id"):
        memory.fact(42)  # type: ignore[arg-type]


# -- the property ---------------------------------------------------------------------------------
PREDICATES = ["bike_count", "home_city", "employer"]
TRUSTS = ["trusted", "semi_trusted", "third_party"]
projects = itertools.count()


@st.composite
def operations(draw: st.DrawFn) -> list[tuple[str, Any]]:
    steps: list[tuple[str, Any]] = []
    for _ in range(draw(st.integers(1, 8))):
        steps.append(
            draw(
                st.one_of(
                    st.tuples(
                        st.just("add"),
                        st.tuples(
                            st.sampled_from(["u1", "u2"]),
                            st.sampled_from(PREDICATES),
                            st.integers(1, 3),
                            st.integers(0, 40),
                            st.sampled_from(TRUSTS),
                            st.sampled_from(["chat", "crm"]),
                        ),
                    ),
                    st.tuples(st.just("consolidate"), st.none()),
                    st.tuples(st.just("pin"), st.integers(0, 20)),
                    st.tuples(st.just("resolve"), st.integers(0, 20)),
                )
            )
        )
    steps.append(("consolidate", None))
    return steps


def run(mem: Memory, project: str, steps: list[tuple[str, Any]]) -> None:
    for op, arg in steps:
        if op == "add":
            subject, predicate, value, day, trust, source = arg
            mem.add_event(
                project=project,
                subject=subject,
                occurred_at=T0 + timedelta(days=day),
                trust=trust,
                source=source,
                claims=[claim(predicate, {"n": value})],
            )
        elif op == "consolidate":
            mem.consolidate()
        elif op == "pin":
            live = mem.facts(project=project)
            if live:
                mem.pin(live[arg % len(live)].id, project=project)
        elif op == "resolve":
            open_sets = mem.conflicts(project=project)
            if open_sets:
                chosen = open_sets[arg % len(open_sets)]
                mem.resolve_conflict(chosen.id, chosen.member_ids[0], project=project)


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
    database=None,
)
@given(home_steps=operations(), away_steps=operations())
def test_no_call_scoped_to_one_project_returns_changes_or_reveals_another(
    memory: Memory, home_steps: list[tuple[str, Any]], away_steps: list[tuple[str, Any]]
) -> None:
    # Every example gets two projects of its own in the one database of the test.
    n = next(projects)
    home, away = f"home{n}", f"away{n}"
    run(memory, home, home_steps)
    before = snapshot(memory, home)
    theirs = {f.id for f in before["facts"]} | {c.id for c in before["conflicts"]}
    their_events = sorted({i for f in before["facts"] for i in f.source_event_ids})

    run(memory, away, away_steps)  # the other tenant's own life, in the same database
    seen = snapshot(memory, away)
    shown = {f.id for f in seen["facts"]} | {c.id for c in seen["conflicts"]}
    shown |= {e.fact_id for e in seen["audit"]} | {
        i for c in seen["conflicts"] for i in c.member_ids
    }
    assert not shown & theirs
    assert all(f.project == away for f in seen["facts"])
    assert all(e.project == away for e in seen["audit"])
    assert memory.events(their_events, project=away) == []
    for fact_id in sorted(i for i in theirs if i in {f.id for f in before["facts"]}):
        for call in (memory.fact, memory.history, memory.pin, memory.unpin):
            with pytest.raises(NotFound):
                call(fact_id, project=away)  # type: ignore[operator]
    for conflict in before["conflicts"]:
        with pytest.raises(NotFound):
            memory.resolve_conflict(conflict.id, None, project=away)

    assert snapshot(memory, home) == before
