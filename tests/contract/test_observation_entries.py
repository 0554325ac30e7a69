"""An observation's audit entry is kept in the observation's row (sqlite_0022, postgres_0019).

On both backends: a consolidation writes no `record_observation` row to the audit table, yet
`audit`, `history` and `audit_for` read every such entry back, the same entry; an entry its row
cannot stand for (another reason, say) is kept in the audit table as it is; and a database at
the version before moves the entries it holds into their rows when it migrates, leaving in
the audit table the one that says something its row does not.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from distill import Memory
from distill.core.audit_trail import RECORD_OBSERVATION
from distill.core.models import AuditEntry
from distill.core.plan import Plan, RecordObservation
from distill.ports import Store
from tests.contract.life import a_life
from tests.contract.test_storage import accepted_unrecorded, before_migration, read_everything
from tests.contract.test_store_contract import append
from tests.factories import PROJECT, make_event, make_observation


@contextmanager
def raw(backend: str, database: str) -> Iterator[Callable[[str], list[tuple[Any, ...]]]]:
    """Plain SQL on the database, outside any store: what the tables hold."""
    if backend == "sqlite":
        conn: Any = sqlite3.connect(database, isolation_level=None)
    else:
        import psycopg

        conn = psycopg.connect(database, autocommit=True)

    def run(sql: str) -> list[tuple[Any, ...]]:
        cursor = conn.execute(sql)
        return list(cursor.fetchall()) if cursor.description else []

    try:
        yield run
    finally:
        conn.close()


def audit_rows(sql: Callable[[str], list[tuple[Any, ...]]]) -> int:
    return int(sql("SELECT count(*) FROM audit WHERE action = 'record_observation'")[0][0])


def test_a_consolidation_keeps_observation_entries_in_their_rows_and_reads_them_back(
    backend: str, database: str, open_memory: Callable[..., Memory]
) -> None:
    memory = open_memory(database)
    a_life(memory)
    stored = memory.store.audit(PROJECT, None, 10_000)  # as stored: `Memory.audit` expands
    entries = [e for e in stored if e.action == RECORD_OBSERVATION]
    observed = {
        o.id: o
        for f in memory.facts(include_retired=True)
        for o in memory.history(f.id).observations
    }
    assert len(entries) >= 10
    for entry in entries:
        assert entry.pass_name == "extract" and entry.before is None and entry.job_id
        assert entry.after is not None and set(entry.after) == {"id", "event_id"}
        if entry.after["id"] in observed:  # an observation of a fact: its history has both
            found = observed[str(entry.after["id"])]
            assert entry.reason == f"{found.outcome}: {found.reason}"
            assert entry.fact_id == found.fact_id
            assert entry in memory.store.audit_for(PROJECT, found.fact_id or "")
    with raw(backend, database) as sql:
        assert audit_rows(sql) == 0
        assert sql("SELECT count(*) FROM observations WHERE audit_id IS NULL")[0][0] == 0


def test_an_entry_its_row_cannot_stand_for_stays_in_the_audit_table(store: Store) -> None:
    [event] = append(store, make_event())
    observation = make_observation(event)
    action = RecordObservation(observation)
    entry = AuditEntry(
        id="00000000000000000000000000000abc",
        project=observation.project,
        subject=observation.subject,
        job_id=None,
        pass_name="extract",
        action=RECORD_OBSERVATION,
        reason="said so by hand",  # not the outcome and its reason: the row cannot say it
        fact_id=None,
        before=None,
        after={"id": observation.id, "event_id": observation.event_id},
        at=event.recorded_at,
    )
    store.apply(Plan(actions=[action]), None, [entry])
    assert store.audit(PROJECT, None, 10) == [entry]


def test_a_store_at_the_version_before_moves_observation_entries_into_their_rows(
    backend: str,
    open_memory: Callable[..., Memory],
    new_database: Callable[[str], str],
) -> None:
    now_database = new_database("now")
    now = open_memory(now_database)
    a_life(now)
    expected = read_everything(now)
    count = sum(1 for e in expected["audit"] if e["action"] == RECORD_OBSERVATION)
    assert count >= 10
    now.close()

    old = new_database("old")
    before_migration(backend, old, now_database, "_observation_entries.sql")
    with raw(backend, old) as sql:
        assert audit_rows(sql) == count  # as the version before wrote them
        # One entry that says more than its row (a hand edit, an older writer): it stays.
        [(odd,)] = sql(
            "SELECT id FROM audit WHERE action = 'record_observation' ORDER BY at, id LIMIT 1"
        )
        odd_id = odd.hex() if isinstance(odd, bytes) else odd
        placeholder = f"x'{odd_id}'" if isinstance(odd, bytes) else f"'{odd_id}'"
        sql(f"UPDATE audit SET reason = 'edited by hand' WHERE id = {placeholder}")
    for entry in expected["audit"]:
        if entry["id"] == odd_id:
            entry["reason"] = "edited by hand"
    for history in expected["histories"].values():
        for entry in history["audit"]:
            if entry["id"] == odd_id:
                entry["reason"] = "edited by hand"

    migrated = open_memory(old)
    accepted_unrecorded(expected)
    assert read_everything(migrated) == expected
    with raw(backend, old) as sql:
        assert audit_rows(sql) == 1
        assert sql("SELECT count(*) FROM observations WHERE audit_id IS NULL")[0][0] == 1
