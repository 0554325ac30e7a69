"""A deterministic workload of claim events, and what to check on a database after it was
consolidated, on either backend: `db` is a SQLite file path or a PostgreSQL URL.

Subjects come in three families (7/20 of them each for the first two, the rest for the
third): one value said again and again (one fact, reinforced); a new value every 10 events,
stated as a supersede (a chain); two sources disagreeing (alice says Acme, bob says Globex,
both as creates: one active, one candidate, one open conflict).

States are compared through `canonical`: every fact and conflict set as a user sees them,
without ids or wall-clock times, so two databases that consolidated the same events compare
equal however the work was split between runs, workers or crashes.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from distill import Memory

T0 = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)
SUBJECTS = 20

Rows = list[tuple[Any, ...]]


def families(subjects: int = SUBJECTS) -> tuple[range, range, range]:
    """The subjects that repeat a value, change it, and have two sources disagree."""
    repeat, change = subjects * 7 // 20, subjects * 14 // 20
    return range(0, repeat), range(repeat, change), range(change, subjects)


def event(i: int, subjects: int = SUBJECTS) -> dict[str, Any]:
    """Event i: subject i % subjects, its k-th event, one minute after event i - 1."""
    s, k = i % subjects, i // subjects
    repeat, change, _ = families(subjects)
    source = "api"
    if s in repeat:
        claim = {"predicate": "favorite_color", "value": {"color": "blue"}, "action": "create"}
    elif s in change:
        value = {"city": f"city-{k // 10}"}
        claim = {"predicate": "home_city", "value": value, "action": "supersede"}
    else:
        source = "alice" if k % 2 == 0 else "bob"
        name = "Acme" if k % 2 == 0 else "Globex"
        claim = {"predicate": "employer", "value": {"name": name}, "action": "create"}
    return {
        "subject": f"s{s:02d}",
        "text": f"statement {k} of s{s:02d}",
        "source": source,
        "occurred_at": (T0 + timedelta(minutes=i)).isoformat(),
        "idempotency_key": f"ev-{i:04d}",
        "claims": [claim],
    }


def waves(total: int, count: int) -> list[list[dict[str, Any]]]:
    """`total` events in `count` waves, in order; every wave after the first also replays
    ten events of the wave before it (same idempotency key: no new event)."""
    size = total // count
    out = []
    for w in range(count):
        fresh = [event(i) for i in range(w * size, (w + 1) * size)]
        replays = [event(i) for i in range((w - 1) * size, (w - 1) * size + 10)] if w else []
        out.append(fresh + replays)
    return out


def single_worker_run(db: str, all_waves: list[list[dict[str, Any]]]) -> None:
    """The reference: one Memory, the same events in the same order, a run per wave."""
    with Memory(db, embedder="hashing") as mem:
        for wave in all_waves:
            mem.add_events(wave)
            report = mem.consolidate()
            assert report.jobs_failed == 0, report.errors


# -- reading the database --------------------------------------------------------------------------
def is_postgres(db: str) -> bool:
    return db.startswith(("postgresql://", "postgres://"))


def query(db: str, sql: str, params: dict[str, Any] | None = None) -> Rows:
    """Rows of one read, beside whatever distill is doing: a read-only SQLite connection, or
    an autocommit PostgreSQL one. `params` in the backend's style (:name or %(name)s)."""
    if is_postgres(db):
        import psycopg

        with psycopg.connect(db, autocommit=True) as conn:
            return list(conn.execute(sql, params or {}).fetchall())
    conn = sqlite3.connect(Path(db).resolve().as_uri() + "?mode=ro", uri=True, timeout=30)
    try:
        return [tuple(row) for row in conn.execute(sql, params or {})]
    finally:
        conn.close()


def execute(db: str, sql: str) -> None:
    """One write behind distill's back (a test's way to make time pass for the store)."""
    if is_postgres(db):
        import psycopg

        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute(sql)
        return
    conn = sqlite3.connect(db, timeout=30)
    try:
        with conn:
            conn.execute(sql)
    finally:
        conn.close()


def jobs_by_status(db: str) -> dict[str, int]:
    return dict(query(db, "SELECT status, count(*) FROM jobs GROUP BY status"))


def unfinished(db: str) -> int:
    counts = jobs_by_status(db)
    return sum(n for status, n in counts.items() if status != "done")


def assert_every_job_done_once(db: str, events: int) -> None:
    assert jobs_by_status(db) == {"done": query(db, "SELECT count(*) FROM jobs")[0][0]}
    assert query(db, "SELECT count(*) FROM events")[0][0] == events  # none lost, none doubled
    twice = "SELECT event_id, count(*) FROM job_events GROUP BY event_id HAVING count(*) <> 1"
    assert query(db, twice) == []  # each event belongs to exactly one job
    assert query(db, "SELECT count(DISTINCT event_id) FROM job_events")[0][0] == events
    # Each (event, claim) was decided exactly once: one observation, none missing.
    seen = "SELECT event_id, claim_hash FROM observations GROUP BY 1, 2 HAVING count(*) > 1"
    assert query(db, seen) == []
    assert query(db, "SELECT count(DISTINCT event_id) FROM observations")[0][0] == events


def assert_never_two_active(db: str) -> None:
    doubles = """
        SELECT project, subject, identity_key, count(*) FROM facts
        WHERE status = 'active' AND kind = 'state'
        GROUP BY project, subject, identity_key HAVING count(*) > 1
    """
    assert query(db, doubles) == []


def canonical(db: str) -> tuple[Rows, Rows]:
    """Every fact and conflict set, without ids or wall-clock times (recorded_at and the
    like differ between runs): what a user sees, and the events behind each fact (by
    idempotency key)."""

    def dumped(value: Any) -> str:
        return json.dumps(value, sort_keys=True)

    with Memory(db, embedder="hashing") as mem:
        facts = {f.id: f for f in mem.facts(include_retired=True)}
        keys = {
            e.id: e.idempotency_key
            for e in mem.events(i for f in facts.values() for i in f.source_event_ids)
        }
        fact_rows = [
            (
                f.subject,
                f.kind.value,
                f.predicate,
                dumped(f.qualifiers),
                dumped(f.value),
                f.text,
                f.status.value,
                f.reinforcement_count,
                f.valid_from,
                f.valid_to,
                f.last_reinforced_at,
                sorted(keys[i] for i in f.source_event_ids),
                dumped(facts[f.supersedes_id].value) if f.supersedes_id else None,
            )
            for f in facts.values()
        ]
        conflict_rows = [
            (
                c.subject,
                c.kind.value,
                c.status.value,
                c.identity_key,
                sorted(f"{dumped(facts[m].value)} {facts[m].status.value}" for m in c.member_ids),
            )
            for c in mem.conflicts(status=None)
        ]
    return sorted(fact_rows, key=repr), sorted(conflict_rows, key=repr)
