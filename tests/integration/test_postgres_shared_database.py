"""A PostgreSQL database that other applications use too.

Unlike a SQLite file, a PostgreSQL database is named on purpose and is often shared, so
Distill does not refuse one that holds other tables: it adds its own beside them and leaves
theirs alone. A table name it needs that is taken stops the migration with nothing written,
and the error says how to give Distill a schema of its own, which these tests also try.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from distill.adapters.store.postgres import PostgresStore
from distill.errors import StoreError
from tests.factories import T0, make_event

OWN_SCHEMA = "options=-csearch_path%3Ddistill,public"


@pytest.fixture
def pg(postgres_database: str) -> Iterator[psycopg.Connection[Any]]:
    """A connection of "another application" to the test's database."""
    with psycopg.connect(postgres_database, autocommit=True) as conn:
        yield conn


def tables(pg: psycopg.Connection[Any]) -> set[tuple[str, str]]:
    query = (
        "SELECT table_schema, table_name FROM information_schema.tables "
        "WHERE table_schema NOT IN ('pg_catalog', 'information_schema')"
    )
    return {(schema, name) for schema, name in pg.execute(query).fetchall()}


def test_other_applications_tables_are_left_alone_beside_distills(
    pg: psycopg.Connection[Any], postgres_database: str
) -> None:
    pg.execute("CREATE TABLE users (id integer PRIMARY KEY, name text)")
    pg.execute("INSERT INTO users VALUES (1, 'ann')")
    with PostgresStore(postgres_database) as store:
        store.append_events([make_event()], T0)
        assert store.counts(None).events == 1
    assert ("public", "events") in tables(pg) and ("public", "users") in tables(pg)
    assert pg.execute("SELECT id, name FROM users").fetchall() == [(1, "ann")]


def test_a_table_name_another_application_took_stops_the_migration_with_nothing_written(
    pg: psycopg.Connection[Any], postgres_database: str
) -> None:
    pg.execute("CREATE TABLE events (id integer PRIMARY KEY, name text)")
    pg.execute("INSERT INTO events VALUES (1, 'launch')")
    with pytest.raises(StoreError) as refused:
        PostgresStore(postgres_database)
    assert str(refused.value).startswith(
        'PostgreSQL failed: relation "events" already exists: another application\'s table'
    )
    assert f"CREATE SCHEMA distill, then add {OWN_SCHEMA}" in str(refused.value)
    assert tables(pg) == {("public", "events")}
    assert pg.execute("SELECT id, name FROM events").fetchall() == [(1, "launch")]


def test_in_a_schema_of_its_own_distill_lives_beside_a_table_of_the_same_name(
    pg: psycopg.Connection[Any], postgres_database: str
) -> None:
    pg.execute("CREATE TABLE events (id integer PRIMARY KEY, name text)")
    pg.execute("CREATE SCHEMA distill")
    joiner = "&" if "?" in postgres_database else "?"
    with PostgresStore(f"{postgres_database}{joiner}{OWN_SCHEMA}") as store:
        store.append_events([make_event()], T0)
        assert store.counts(None).events == 1
    found = tables(pg)
    assert ("distill", "events") in found and ("distill", "schema_migrations") in found
    assert {name for schema, name in found if schema == "public"} == {"events"}
    assert pg.execute("SELECT count(*) FROM public.events").fetchone() == (0,)


def test_a_user_who_may_not_create_the_vector_extension_is_told_what_to_ask_for(
    pg: psycopg.Connection[Any], postgres_database: str
) -> None:
    database = pg.info.dbname
    role = f"limited_{database}"[:63]
    pg.execute(f"CREATE ROLE \"{role}\" LOGIN PASSWORD 'pw'")
    try:
        pg.execute(f'GRANT CREATE ON DATABASE "{database}" TO "{role}"')
        pg.execute(f'GRANT CREATE ON SCHEMA public TO "{role}"')
        as_role = psycopg.conninfo.make_conninfo(postgres_database, user=role, password="pw")
        with pytest.raises(StoreError) as refused:
            PostgresStore(as_role)
        said = str(refused.value)
        assert "permission denied to create extension" in said
        assert f"CREATE EXTENSION IF NOT EXISTS vector; in database '{database}'" in said
        assert "pw" not in said.replace("password=***", "")
    finally:
        pg.execute(f'REVOKE ALL ON SCHEMA public FROM "{role}"')
        pg.execute(f'REVOKE ALL ON DATABASE "{database}" FROM "{role}"')
        pg.execute(f'DROP ROLE "{role}"')
