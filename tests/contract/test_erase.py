"""`Memory.erase`: the one hard delete, on every backend.

A subject erased is gone from every table, and on SQLite from the file's bytes too; what
remains is one audit entry without content. Nothing of another subject or project changes.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from distill import Memory
from distill.core.identity import content_hash, identity_text
from distill.errors import InvalidInput

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
SECRET = "Zanzibar7731"  # appears in u1's texts and values only


def live(mem: Memory, subject: str, project: str = "default") -> None:
    """A subject's life with one of everything: facts superseded and active, a conflict, a
    memory, a pin; u1's carries the secret in its texts and values."""
    mark = SECRET if subject == "u1" else "Lisbon"

    def add(day: int, source: str = "chat", **fields: Any) -> None:
        mem.add_event(
            project=project,
            subject=subject,
            occurred_at=T0 + timedelta(days=day),
            source=source,
            **fields,
        )

    add(0, text=f"I live in {mark}.", claims=[claim("home_city", {"city": mark})])
    add(1, claims=[claim("bike_count", {"count": 3})])
    add(9, claims=[claim("bike_count", {"count": 4}, action="supersede")])
    add(2, claims=[claim("language", {"lang": "fr"})], source="crm")
    add(2, claims=[claim("language", {"lang": "de"})], source="billing")
    add(3, text=f"My locker code is {mark}.")
    mem.consolidate()
    mem.pin(mem.facts(subject=subject, project=project)[0].id, project=project)


def claim(predicate: str, value: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"predicate": predicate, "value": value, **extra}


def everything(mem: Memory, project: str = "default") -> dict[str, Any]:
    return {
        "facts": mem.facts(project=project, include_retired=True),
        "conflicts": mem.conflicts(project=project, status=None),
        "audit": mem.audit(project=project, limit=10_000),
        "events": list(mem.store.iter_events(project)),
    }


def test_an_erased_subject_leaves_one_entry_without_content(memory: Memory) -> None:
    live(memory, "u1")
    live(memory, "u2")
    before = everything(memory)
    theirs = {
        k: [x for x in v if x.subject == "u2"] for k, v in before.items()
    }  # the other subject's rows, which must not change

    counts = memory.erase("default", "u1")

    assert counts["events"] == 6 and counts["facts"] >= 5 and counts["conflicts"] == 1
    assert counts["observations"] >= 6 and counts["jobs"] >= 1 and counts["audit"] > 0
    after = everything(memory)
    assert [f for f in after["facts"] if f.subject == "u1"] == []
    assert [c for c in after["conflicts"] if c.subject == "u1"] == []
    assert [e for e in after["events"] if e.subject == "u1"] == []
    assert [j for j in memory.jobs("default") if j.subject == "u1"] == []
    [receipt] = [e for e in after["audit"] if e.subject == "u1"]
    assert (receipt.action, receipt.pass_name, receipt.fact_id) == ("erase_subject", "api", None)
    assert receipt.before is None and receipt.after == {"erased": counts}
    assert SECRET not in receipt.model_dump_json()
    # The other subject is exactly as it was.
    assert {k: [x for x in v if x.subject == "u2"] for k, v in after.items()} == theirs
    counted = memory.status("default").counts
    assert counted.events == len(theirs["events"])


def test_no_trace_of_the_erased_text_is_left_in_any_table(memory: Memory) -> None:
    live(memory, "u1")
    live(memory, "u2")
    memory.erase("default", "u1")
    for table, text in dump_tables(memory):
        # The full-text index keeps words folded to lower case.
        assert SECRET.lower() not in text.lower(), f"{table} still holds the erased text"


def test_no_trace_is_left_in_the_sqlite_files_bytes(
    memory: Memory, backend: str, database: str
) -> None:
    if backend != "sqlite":
        pytest.skip("PostgreSQL keeps a deleted row's bytes until VACUUM reuses the page")
    live(memory, "u1")
    live(memory, "u2")
    memory.store.forget_erased()  # the text written into the file's own pages, not only the log
    files = [Path(database + suffix) for suffix in ("", "-wal", "-shm", "-journal")]
    folded = SECRET.lower().encode()  # as the full-text index keeps its words
    assert any(folded in f.read_bytes() for f in files if f.exists())  # it was there
    memory.erase("default", "u1")
    for f in files:
        if f.exists():
            assert SECRET.encode() not in f.read_bytes(), f"{f.name} still holds the text"
            assert folded not in f.read_bytes(), f"{f.name} still holds the indexed word"


def test_the_cached_vectors_of_erased_texts_go_but_shared_ones_stay(memory: Memory) -> None:
    live(memory, "u1")
    live(memory, "u2")
    model = memory.embedder.model_id
    own = content_hash(identity_text("home_city", {"city": SECRET}))
    shared = content_hash(identity_text("bike_count", {"count": 4}))  # u2 says it too
    assert set(memory.store.cached_embeddings(model, [own, shared])) == {own, shared}
    memory.erase("default", "u1")
    assert set(memory.store.cached_embeddings(model, [own, shared])) == {shared}
    # u2's facts still find their vectors: a restatement is a reinforcement, not a new fact.
    memory.add_event(
        subject="u2",
        occurred_at=T0 + timedelta(days=20),
        claims=[claim("bike_count", {"count": 4})],
    )
    assert memory.consolidate().reinforced == 1


def test_an_erased_subject_may_start_again(memory: Memory) -> None:
    live(memory, "u1")
    memory.erase("default", "u1")
    live(memory, "u1")
    assert {f.predicate for f in memory.facts(subject="u1")} >= {"home_city", "bike_count"}


def test_an_erase_never_erases_an_earlier_erases_receipt(memory: Memory) -> None:
    live(memory, "u1")
    first = memory.erase("default", "u1")
    assert set(memory.erase("default", "u1").values()) == {0}  # nothing left: no new entry
    live(memory, "u1")
    second = memory.erase("default", "u1")
    receipts = [e.after for e in memory.audit(subject="u1") if e.action == "erase_subject"]
    assert receipts == [{"erased": first}, {"erased": second}]
    assert memory.erase("default") == dict.fromkeys(first, 0)  # receipts are not counted


def test_erasing_nobody_changes_nothing_and_leaves_no_name(memory: Memory) -> None:
    live(memory, "u2")
    before = everything(memory)
    assert set(memory.erase("default", "ghost").values()) == {0}
    assert everything(memory) == before
    with pytest.raises(InvalidInput, match="subject"):
        memory.erase("default", "  ")


def test_a_whole_project_is_erased_and_no_other(memory: Memory) -> None:
    live(memory, "u1", project="acme")
    live(memory, "u2", project="acme")
    live(memory, "u1", project="globex")
    other = everything(memory, "globex")

    counts = memory.erase("acme")

    assert counts["events"] == 12
    after = everything(memory, "acme")
    assert after["facts"] == [] and after["conflicts"] == [] and after["events"] == []
    [receipt] = after["audit"]
    assert receipt.action == "erase_project" and receipt.after == {"erased": counts}
    assert memory.store.aliases("acme", ["home_city", "bike_count", "language"]) == {}
    assert everything(memory, "globex") == other


def dump_tables(mem: Memory) -> Iterator[tuple[str, str]]:
    """Every row of every table of the database, as text."""
    from distill.adapters.store.sqlite import SqliteStore

    store = mem.store
    if isinstance(store, SqliteStore):
        db = store._connections.raw()
        names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for name in names:
            for row in db.execute(f'SELECT * FROM "{name}"'):
                yield name, repr(tuple(row))
        return
    import psycopg

    with psycopg.connect(store.url, autocommit=True) as conn:  # type: ignore[attr-defined]
        names = [
            r[0]
            for r in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
            )
        ]
        for name in names:
            for row in conn.execute(f'SELECT t::text FROM "{name}" AS t'):
                yield name, row[0]
