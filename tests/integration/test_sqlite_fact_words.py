"""SQLite's full-text index fed once per plan (sqlite_0016) holds exactly what the trigger
per inserted fact wrote: the same number for each fact, every word of every fact at the same
position, the same document lengths and totals (so the same BM25 scores), after plans that
create, revise (words and status) and prune facts, and after a copy into an empty store.

Only how FTS5 lays the words out differs, which no query sees: the trigger ran inside each
insert's statement, and FTS5 wrote every fact as a segment of its own (then merged them);
fed once per plan, a plan's facts make one segment.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from distill.adapters.store.copy import copy_store
from distill.adapters.store.queries import load_migrations
from distill.adapters.store.sqlite import SqliteStore
from distill.core.models import Fact, FactKind, FactStatus
from distill.core.plan import CreateFact, Plan, PruneFact, ReviseFact
from tests.factories import at, make_fact, make_memory

# What the trigger's migration made it; restored below to write the index the old way.
_ADDED_TRIGGER = (
    next(
        statement
        for m in load_migrations("sqlite")
        if m.version == 8
        for statement in m.sql.split(";\n\n")
        if statement.startswith("CREATE TRIGGER fact_words_added")
    )
    + ";"
)
# Everything a query of the index can see: each fact's number, every (word, document,
# position), each document's length, and the totals BM25 reads (the averages record, id 1).
INDEX_READS = {
    "numbers": "SELECT n, fact_id FROM fact_words_rows",
    "words": "SELECT term, doc, col, offset FROM fact_words_vocabulary",
    "lengths": "SELECT id, sz FROM fact_words_docsize",
    "totals": "SELECT block FROM fact_words_data WHERE id = 1",
    "config": "SELECT k, v FROM fact_words_config",
}


def _by_trigger(store: SqliteStore) -> SqliteStore:
    """The store as it was before sqlite_0016: a trigger per inserted fact, nothing after."""
    with store._tx() as db:
        db.execute(_ADDED_TRIGGER)
    store._facts_inserted = lambda db, fact_ids: None  # type: ignore[method-assign]
    return store


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[tuple[SqliteStore, SqliteStore]]:
    per_plan = SqliteStore(tmp_path / "per_plan.db")
    trigger = _by_trigger(SqliteStore(tmp_path / "trigger.db"))
    yield per_plan, trigger
    per_plan.close()
    trigger.close()


def index_of(path: Path) -> dict[str, list[tuple[object, ...]]]:
    """What the full-text index holds, as queries see it (fts5vocab lists every instance)."""
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE VIRTUAL TABLE temp.fact_words_vocabulary USING fts5vocab(main, fact_words, "
            "instance)"
        )
        return {name: sorted(db.execute(sql).fetchall()) for name, sql in INDEX_READS.items()}


def scores(store: SqliteStore, words: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(store.path) as db:
        return db.execute(
            "SELECT rowid, bm25(fact_words) FROM fact_words WHERE fact_words MATCH ? "
            "ORDER BY rowid",
            (words,),
        ).fetchall()


def matches(store: SqliteStore, word: str) -> list[str]:
    """The ids of the facts whose indexed words hold `word`, whatever their status."""
    with sqlite3.connect(store.path) as db:
        found = db.execute(
            "SELECT r.fact_id FROM fact_words JOIN fact_words_rows AS r ON r.n = fact_words.rowid"
            " WHERE fact_words MATCH ?",
            (f'"{word}"',),
        ).fetchall()
    return sorted(store.codec.read_id(fact_id) for (fact_id,) in found)


def facts(count: int, start: int = 0) -> list[Fact]:
    made: list[Fact] = []
    for i in range(start, start + count):
        if i % 3 == 0:
            made.append(make_memory(f"Élodie's café note {i}: naïve résumé, 東京 trip"))
        else:
            made.append(make_fact(f"attribute_{i % 7}", {"value": f"v{i}"}, subject=f"s{i}"))
    return made


def apply_all(store: SqliteStore, plans: Sequence[Plan]) -> None:
    for plan in plans:
        store.apply(plan, None, [])


def test_plans_index_each_new_fact_as_the_trigger_did(
    stores: tuple[SqliteStore, SqliteStore],
) -> None:
    first, second = facts(40), facts(40, start=40)
    renamed = first[1].model_copy(update={"text": "renamed words entirely", "predicate": "moved"})
    retired = first[2].model_copy(
        update={"status": FactStatus.RETRACTED, "retired_at": at(5), "valid_to": at(5)}
    )
    born_retired = second[0].model_copy(update={"status": FactStatus.RETRACTED})
    plans = [
        Plan([CreateFact(f, "new") for f in first]),
        # New facts between revisions of older ones, one created and revised in one plan
        # (inserted in its final version), one revision that changes a fact's words.
        Plan(
            [
                ReviseFact(first[1], renamed, "reclassify", "words change"),
                *(CreateFact(f, "new") for f in second[:20]),
                ReviseFact(second[0], born_retired, "retract", "same plan"),
                ReviseFact(first[2], retired, "retract", "status only"),
                *(CreateFact(f, "new") for f in second[20:]),
            ]
        ),
        # A prune after a create in one plan: the new fact's words are indexed first.
        Plan([CreateFact(make_memory("a late bright word"), "new"), PruneFact(retired, "x", 0.0)]),
    ]
    per_plan, trigger = stores

    for store in stores:
        apply_all(store, plans)

    index = index_of(Path(per_plan.path))
    assert index == index_of(Path(trigger.path))
    assert len(index["numbers"]) == 80 and len(index["words"]) > 500  # one fact pruned
    question = '"attribute" OR "cafe" OR "v41" OR "words"'
    assert scores(per_plan, question) == scores(trigger, question) != []
    assert matches(per_plan, "renamed") == [first[1].id]
    memories = [f.id for f in (*first, *second) if f.kind is FactKind.MEMORY]
    assert matches(per_plan, "elodie") == sorted(memories)  # accents folded, as before
    assert matches(per_plan, "bright") == matches(trigger, "bright") != []


def test_a_copy_into_sqlite_indexes_the_facts_as_the_trigger_did(
    stores: tuple[SqliteStore, SqliteStore], tmp_path: Path
) -> None:
    source, _ = stores
    apply_all(source, [Plan([CreateFact(f, "new") for f in facts(30)])])
    per_plan = SqliteStore(tmp_path / "copy_per_plan.db")
    trigger = _by_trigger(SqliteStore(tmp_path / "copy_trigger.db"))
    try:
        for target in (per_plan, trigger):
            copy_store(source, target)
        assert index_of(Path(per_plan.path)) == index_of(Path(trigger.path))
        assert matches(per_plan, "cafe") == matches(source, "cafe") != []
    finally:
        per_plan.close()
        trigger.close()
