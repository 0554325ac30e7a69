"""PostgreSQL's posting list of the facts' words (`fact_terms`, postgres_0010), which search's
lexical arm reads instead of the facts: it must hold exactly the words of every fact, with
the fact's scope, status, frequencies and length, whatever wrote the fact and however.

Search's behaviour over it is pinned by test_search.py on both backends; this file pins that
the table never drifts from `facts`, through every kind of write the triggers follow.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from distill.core.plan import CreateFact, Plan
from distill.core.recall import STOP_WORDS
from tests.factories import make_fact, make_memory

psycopg = pytest.importorskip("psycopg")
postgres = pytest.importorskip("distill.adapters.store.postgres")

# What fact_terms must hold: derived from facts by the definition the migration states.
EXPECTED = """
    SELECT f.project, w.lexeme AS term, f.subject, f.id AS fact_id, f.kind, f.status,
           cardinality(w.positions) AS tf, length(f.words) AS len
    FROM facts AS f, unnest(f.words) AS w
    WHERE NOT w.lexeme = ANY(%s)
    ORDER BY 1, 2, 3, 4"""
HELD = """
    SELECT project, term, subject, fact_id, kind, status, tf, len
    FROM fact_terms ORDER BY 1, 2, 3, 4"""

WORDS = ["tea", "green", "lyon", "bikes", "chess", "tea tea", "Lyon's club", "the tea", ""]
STATUSES = ["active", "superseded", "retracted", "candidate"]


@pytest.fixture(scope="module")
def pg_url(postgres_server: str) -> Iterator[str]:
    """One database for the module (a name of its own per process: xdist workers share the
    server): each example works in its own project."""
    from tests.postgres import database_url

    name = f"distill_test_terms_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    url = database_url(postgres_server, name)
    postgres.PostgresStore(url).close()  # migrated
    yield url
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def held_and_expected(url: str, project: str) -> tuple[list[Any], list[Any]]:
    with psycopg.connect(url, autocommit=True) as conn:
        held = [r for r in conn.execute(HELD).fetchall() if r[0] == project]
        found = conn.execute(EXPECTED, (sorted(STOP_WORDS),)).fetchall()
        expected = [r for r in found if r[0] == project]
    return held, expected


operation = st.one_of(
    st.tuples(st.just("create"), st.sampled_from(WORDS), st.sampled_from(["state", "memory"])),
    st.tuples(st.just("text"), st.integers(0, 9), st.sampled_from(WORDS)),
    st.tuples(st.just("status"), st.integers(0, 9), st.sampled_from(STATUSES)),
    st.tuples(st.just("kind"), st.integers(0, 9), st.sampled_from(["state", "event", "memory"])),
    st.tuples(st.just("subject"), st.integers(0, 9), st.sampled_from(["u1", "u2"])),
    st.tuples(st.just("reinforce"), st.integers(0, 9), st.just("")),
    st.tuples(st.just("delete"), st.integers(0, 9), st.just("")),
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=st.lists(operation, min_size=1, max_size=12))
def test_fact_terms_hold_the_words_of_every_fact_after_any_writes(
    pg_url: str, steps: list[tuple[str, Any, str]]
) -> None:
    project = f"p{abs(hash(tuple(steps))) % 10**12}"
    store = postgres.PostgresStore(pg_url)
    ids: list[str] = []
    try:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("DELETE FROM facts WHERE project = %s", (project,))
            for op, target, arg in steps:
                if op == "create":  # `target` is the text, `arg` the kind
                    fact = (
                        make_memory(target or "-", project=project, subject="u1")
                        if arg == "memory"  # a predicate of its own: one active per identity
                        else make_fact(f"likes_{len(ids)}", {"v": target}, project=project)
                    )
                    store.apply(Plan([CreateFact(fact, "test")]), None, [])
                    ids.append(fact.id)
                    continue
                if not ids:
                    continue
                fact_id = ids[target % len(ids)]
                if op == "delete":
                    conn.execute("DELETE FROM facts WHERE id = %s", (fact_id,))
                    ids.remove(fact_id)
                elif op == "reinforce":  # a write that leaves the words as they were
                    conn.execute(
                        "UPDATE facts SET reinforcement_count = reinforcement_count + 1 "
                        "WHERE id = %s",
                        (fact_id,),
                    )
                else:
                    conn.execute(f"UPDATE facts SET {op} = %s WHERE id = %s", (arg, fact_id))
        held, expected = held_and_expected(pg_url, project)
        assert held == expected
    finally:
        store.close()


def test_the_stop_words_left_out_are_the_ones_questions_drop(pg_url: str) -> None:
    """A stop word has no rows (no question asks for it); a word the SQL took for a stop
    word and `query_terms` does not would never be found."""
    with psycopg.connect(pg_url, autocommit=True) as conn:
        [(listed,)] = conn.execute("SELECT recall_stop_words()").fetchall()
    assert sorted(listed) == sorted(STOP_WORDS)


def test_erasing_a_subject_leaves_none_of_its_words(pg_url: str) -> None:
    from distill import Memory
    from distill.adapters.embed.hashing import HashingEmbedder

    with Memory(pg_url, embedder=HashingEmbedder(64)) as mem:
        for subject in ("gone", "kept"):
            mem.add_event(
                project="erase-terms",
                subject=subject,
                occurred_at="2024-05-01T12:00:00+00:00",
                claims=[{"text": f"Zanzibar diving with {subject}."}],
            )
        mem.consolidate()
        assert mem.search("Zanzibar", project="erase-terms", subject="gone")
        mem.erase("erase-terms", subject="gone")
        with psycopg.connect(pg_url, autocommit=True) as conn:
            left = conn.execute(
                "SELECT DISTINCT subject FROM fact_terms WHERE project = 'erase-terms'"
            ).fetchall()
        assert left == [("kept",)]
        held, expected = held_and_expected(pg_url, "erase-terms")
        assert held == expected
