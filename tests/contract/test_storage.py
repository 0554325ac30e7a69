"""What a store keeps, and that a database of the previous schema version keeps all of it.

Identity vectors are stored once per text on SQLite (the embedding cache is their one copy,
fact rows name them) and once per fact on PostgreSQL (its HNSW index searches that column);
either way every fact reads back its own vector. Claims are stored without the fields equal
to their defaults (which a test pins) and read back as given. Ids of any form read back as
given and page without gaps (SQLite packs distill's own into 16 bytes, and instants into
integers). A database at the previous schema version, holding what that version held,
migrates and then reads exactly as a database made by this version, whatever its ids look
like. An embedded event's vector is kept in the embedding cache, under the hash of its text,
and the event row is never written again; a database of the version that also kept it in the
row moves any vector the cache lacks there.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from distill import Memory
from distill.adapters.embed.hashing import HashingEmbedder
from distill.adapters.store import rows, sql_store
from distill.adapters.store.queries import load_migrations, load_queries
from distill.adapters.store.sqlite import SqliteStore
from distill.adapters.store.sqlite_connection import add_functions
from distill.core.identity import content_hash, identity_text
from distill.core.models import Claim, FactStatus
from distill.core.plan import CreateFact, Plan
from distill.ports import Store
from tests.conftest import FakeClock
from tests.contract.life import a_life
from tests.factories import PROJECT, T0, make_event, make_fact
from tests.unit.scenario_support import SUBJECT, at, every_fact, say

MODEL = "test-model"
DIM = 8


def unit(*values: float) -> np.ndarray:
    vector = np.zeros(DIM, dtype=np.float32)
    vector[: len(values)] = values
    return vector / np.linalg.norm(vector)


def create(store: Store, vector: np.ndarray, text_hash: str | None = None, **fact: Any) -> str:
    made = make_fact(**fact)
    action = CreateFact(made, "new", vector=vector, vector_model=MODEL, vector_text_hash=text_hash)
    store.apply(Plan(actions=[action]), None, [])
    return made.id


def nearest(store: Store, vector: np.ndarray, k: int = 10) -> dict[str, float]:
    [found] = store.nearest_facts(PROJECT, make_fact().subject, vector, k, MODEL)
    return {n.fact_id: round(n.distance, 6) for n in found}


def sqlite_count(database: str, query: str) -> int:
    db = sqlite3.connect(database)
    try:
        return int(db.execute(query).fetchone()[0])
    finally:
        db.close()


# -- vectors ---------------------------------------------------------------------------------------
def test_every_fact_reads_back_its_own_vector_and_sqlite_keeps_each_text_once(
    store: Store, backend: str, database: str
) -> None:
    three, four = unit(1, 0), unit(0, 1)
    made = [create(store, three, "three", value={"count": 3}, predicate=f"p{i}") for i in range(3)]
    given = create(store, four, value={"count": 4}, predicate="q")  # no text: keyed by bytes
    copied = make_fact(value={"count": 3}, predicate="r")
    store.apply(Plan([CreateFact(copied, "again", vector_from=made[0])]), None, [])

    near_three = nearest(store, three)
    assert {fact_id: near_three[fact_id] for fact_id in [*made, copied.id]} == dict.fromkeys(
        [*made, copied.id], 0.0
    )
    assert nearest(store, four)[given] == 0.0
    if backend == "sqlite":  # PostgreSQL keeps a vector per fact, for its HNSW index
        assert sqlite_count(database, "SELECT count(*) FROM fact_vectors") == 5
        assert sqlite_count(database, "SELECT count(*) FROM embedding_cache") == 2
        assert store.cached_embeddings(MODEL, ["three"]).keys() == {"three"}


# -- ids and instants -----------------------------------------------------------------------------
# Ids of every form a caller or a test may give, next to distill's own (32 lowercase hex
# characters, which SQLite stores as 16 bytes): each must read back exactly as given.
ODD_IDS = [
    "f1",  # a caller's or a test's own short name
    "123",  # looks like a number
    "0" * 32,  # hex: packed
    "ffffffffffffffffffffffffffffffff",  # hex, the largest
    "ABCDEF0123456789ABCDEF0123456789",  # hex in upper case: kept as text
    "g" * 32,  # 32 characters, not hex
    "0123456789abcdef 123456789abcdef",  # 32 with a space, which bytes.fromhex would skip
    "vector:" + "a" * 32,
]


def test_ids_and_keys_of_any_form_read_back_as_given_and_page_without_gaps(
    store: Store, backend: str, database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sql_store, "EVENT_PAGE_SIZE", 3)
    events = [
        make_event(f"event {i}", id=event_id, idempotency_key=ODD_IDS[-1 - i])
        for i, event_id in enumerate(ODD_IDS)
    ]
    store.append_events(events, T0)
    again = store.append_events([make_event("again", idempotency_key=ODD_IDS[0])], T0)
    assert again == [(events[-1], False)]  # found by its key, whatever its form

    assert sorted(store.events(PROJECT, ODD_IDS), key=lambda e: e.id) == sorted(
        events, key=lambda e: e.id
    )
    paged = [e.id for e in store.iter_events(PROJECT)]  # one instant: paged by id alone
    assert sorted(paged) == sorted(ODD_IDS)  # every one, once

    facts = [
        make_fact(id=fact_id, predicate=f"p{i}", source_event_ids=[ODD_IDS[i]])
        for i, fact_id in enumerate(ODD_IDS)
    ]
    store.apply(Plan([CreateFact(f, "new") for f in facts]), None, [])
    assert [store.fact(f.project, f.id) for f in facts] == facts
    found = store.facts_with_sources(PROJECT, facts[0].subject, ODD_IDS)
    assert sorted(f.id for f in found) == sorted(ODD_IDS)
    pages, after = [], None
    while page := store.facts_to_reembed(MODEL, PROJECT, after, 3):
        pages.extend(f.id for f in page)
        after = page[-1].id
    assert sorted(pages) == sorted(ODD_IDS)  # the cursor skipped and repeated nothing
    if backend == "sqlite":  # distill's own ids in 16 bytes, instants as integers
        blob = "SELECT count(*) FROM events WHERE typeof(id) = 'blob' AND length(id) = 16"
        assert sqlite_count(database, blob) == 2
        assert sqlite_count(database, "SELECT count(*) FROM events WHERE typeof(id) = 'text'") == 6
        integer = "SELECT count(*) FROM facts WHERE typeof(valid_from) = 'integer'"
        assert sqlite_count(database, integer) == len(facts)


def test_instants_read_back_to_the_microsecond_before_the_epoch_and_far_after(store: Store) -> None:
    moon = datetime(1969, 7, 20, 20, 17, 40, 1, tzinfo=UTC)
    far = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
    events = [make_event("moon", occurred_at=moon), make_event("far", occurred_at=far)]
    store.append_events(events, moon)
    assert store.events(PROJECT, [e.id for e in events]) == events  # in time order, moon first
    assert [j.created_at for j in store.jobs()] == [moon]


def test_sqlite_tables_made_again_by_a_migration_keep_their_names_and_references(
    tmp_path: Path,
) -> None:
    """Version 7 makes every table again under a new name and renames it back (version 6
    does so for conflicts): no new name, and no reference to one, may be left behind."""
    path = tmp_path / "fresh.db"
    SqliteStore(path).close()
    db = sqlite3.connect(path)
    try:
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_schema")}
        schema = "\n".join(sql for (sql,) in db.execute("SELECT sql FROM sqlite_schema") if sql)
        parents = {
            (table, r[2])
            for table in tables
            for r in db.execute(f"PRAGMA foreign_key_list({table})")
        }
    finally:
        db.close()
    assert "_packed" not in schema and "_with_identity" not in schema
    assert {parent for _, parent in parents} == {"events", "jobs", "facts"}
    assert ("fact_sources", "events") in parents and ("job_events", "jobs") in parents


# -- claims ----------------------------------------------------------------------------------------
# The defaults a stored claim leaves out. Changing one would change what every claim stored
# before says: it needs a migration that writes the old default into those claims first.
CLAIM_DEFAULTS = {
    "predicate": None,
    "value": None,
    "text": None,
    "qualifiers": {},
    "action": "create",
    "kind": None,
    "confidence": 1.0,
    "evidence_span": None,
    "valid_from": None,
    "valid_to": None,
    "subject": None,
    "updates": None,
    "entities": (),
}


def test_the_claim_defaults_that_stored_claims_leave_out_are_these() -> None:
    fields = Claim.model_fields.items()
    assert {name: f.get_default(call_default_factory=True) for name, f in fields} == CLAIM_DEFAULTS


def test_a_claim_reads_back_as_given_without_its_default_fields_stored(
    backend: str, open_memory: Callable[[str], Memory], new_database: Callable[[str], str]
) -> None:
    database = new_database("claims")
    mem = open_memory(database)
    claim = {
        "predicate": "bike_count",
        "value": {"count": 3},
        "action": "supersede",
        "confidence": 0.5,
        "qualifiers": {},
        "valid_from": None,
        "evidence_span": None,
    }
    event = mem.add_event(subject=SUBJECT, text="3 bikes", occurred_at=at(0), claims=[claim])
    # A null inside a value is a statement (a supersede deletes that key): it is kept.
    deleting = {"predicate": "home", "value": {"city": "Lyon", "street": None}}
    other = mem.add_event(subject=SUBJECT, text="moved", occurred_at=at(1), claims=[deleting])
    mem.consolidate()

    [stored, stored_other] = mem.events([event.id, other.id])
    assert stored.claims == event.claims
    assert stored_other.claims == other.claims
    assert stored_other.claims[0].value == {"city": "Lyon", "street": None}
    [fact] = [f for f in every_fact(mem) if f.predicate == "bike_count"]
    [observation] = mem.history(fact.id).observations
    assert observation.claim == event.claims[0]
    assert observation.claim.confidence == 0.5 and observation.claim.valid_from is None
    assert observation.claim.qualifiers == {} and other.claims[0].action == "create"
    if backend == "sqlite":
        db = sqlite3.connect(database)
        try:
            written = db.execute("SELECT claims FROM events ORDER BY occurred_at").fetchall()
        finally:
            db.close()
        assert [json.loads(c) for (c,) in written] == [
            [
                {
                    "action": "supersede",
                    "confidence": 0.5,
                    "predicate": "bike_count",
                    "value": {"count": 3},
                }
            ],
            [{"predicate": "home", "value": {"city": "Lyon", "street": None}}],
        ]


# -- migration -------------------------------------------------------------------------------------
# Tables in an order that satisfies their foreign keys, for PostgreSQL's row-by-row checks.
POSTGRES_TABLES = [
    "events",
    "jobs",
    "job_events",
    "facts",
    "fact_sources",
    "fact_vectors",
    "conflicts",
    "observations",
    "aliases",
    "audit",
    "embedding_cache",
    "extractions",
    "api_keys",
    "rules",
    "pass_cursors",
    "fact_marks",
    "procedures",
    "mentions",
    "topics",
    "pass_schedule",
]
# Written by triggers as the facts are copied: PostgreSQL's posting list of their words, and
# the log that in-memory vector indexes catch up from.
TRIGGER_FILLED = {"fact_terms", "vector_changes", "vector_changes_pruned"}


def earlier(migrations: list[Any], before: int | None) -> list[Any]:
    """The migrations of the previous version: all but the last, or those before `before`."""
    return migrations[:-1] if before is None else [m for m in migrations if m.version < before]


def sqlite_previous_version(old: str, now: str, before: int | None = None) -> None:
    """`now`'s rows in a database at the previous schema version (at the last version before
    `before`, when given)."""
    db = sqlite3.connect(old)
    try:
        add_functions(db)  # as the store does
        db.execute(load_queries("sqlite")["create_migrations_table"])
        for migration in earlier(load_migrations("sqlite"), before):
            db.executescript(migration.sql)
            db.execute(
                "INSERT INTO schema_migrations VALUES (?, '2025-01-01T00:00:00.000000+00:00')",
                (migration.version,),
            )
        db.commit()
        db.execute("ATTACH DATABASE ? AS now", (now,))
        current = {name for (name,) in db.execute("SELECT name FROM now.sqlite_schema")}
        tables = [
            name
            for (name,) in db.execute("SELECT name FROM main.sqlite_schema WHERE type = 'table'")
            # The full-text index of the facts' words: its triggers fill it as facts are copied.
            if name not in ("schema_migrations", "sqlite_sequence")
            and not name.startswith("fact_words")
            and name in current  # a table the last migration drops stays empty
        ]
        # The change log last, as it was: copying fact_vectors fired its triggers.
        tables.sort(key=lambda name: name == "vector_changes")
        for table in tables:
            db.execute(f"DELETE FROM main.{table}")
            kept = {r[1] for r in db.execute(f"PRAGMA now.table_info({table})")}
            # The previous version stores rows as this one does; a column the last migration
            # drops stays empty.
            columns = [r[1] for r in db.execute(f"PRAGMA main.table_info({table})") if r[1] in kept]
            names = ", ".join(columns)
            db.execute(f"INSERT INTO main.{table} ({names}) SELECT {names} FROM now.{table}")
        if (
            db.execute(
                "SELECT 1 FROM main.sqlite_schema WHERE name = 'fact_words_added'"
            ).fetchone()
            is None
        ):
            # From sqlite_0016 on, the writers feed the full-text index, as the copy does.
            queries = load_queries("sqlite")
            ids = [
                rows.unpack_id(i) for (i,) in db.execute("SELECT id FROM main.facts ORDER BY rowid")
            ]
            for name in ("index_fact_words_rows", "index_fact_words"):
                db.execute(queries[name], {"ids": json.dumps(ids)})
        if "audit_id" not in {r[1] for r in db.execute("PRAGMA main.table_info(observations)")}:
            # Before sqlite_0022 an observation's audit entry was a row of the audit table.
            text = "CASE typeof({0}) WHEN 'blob' THEN lower(hex({0})) ELSE {0} END"
            db.execute(
                "INSERT INTO main.audit (id, project, subject, job_id, pass_name, action, "
                "reason, fact_id, before, after, at) "
                "SELECT audit_id, project, subject, job_id, 'extract', 'record_observation', "
                f"outcome || ': ' || reason, fact_id, NULL, json_object('event_id', "
                f"{text.format('event_id')}, 'id', {text.format('id')}), at "
                "FROM now.observations WHERE audit_id IS NOT NULL"
            )
        db.commit()
    finally:
        db.close()


def postgres_previous_version(old: str, now: str, before: int | None = None) -> None:
    import psycopg

    with psycopg.connect(old, autocommit=True) as target, psycopg.connect(now) as source:
        target.execute(load_queries("postgres")["create_migrations_table"])
        for migration in earlier(load_migrations("postgres"), before):
            target.execute(migration.sql.encode())
            target.execute(
                "INSERT INTO schema_migrations (version, applied_at) VALUES (%s, now())",
                (migration.version,),
            )
        listed = "SELECT table_name, column_name FROM information_schema.columns"
        columns: dict[str, list[str]] = {}
        # Generated columns (facts.words) are computed by the target, and COPY refuses them.
        public = " WHERE table_schema = 'public' AND is_generated = 'NEVER'"
        for table, column in target.execute(listed + public):
            columns.setdefault(table, []).append(column)
        if before is None:
            assert set(columns) - {"schema_migrations", *TRIGGER_FILLED} == set(POSTGRES_TABLES)
        now_tables = {name for (name,) in source.execute("SELECT tablename FROM pg_tables")}
        now_columns = set(source.execute(listed + public))
        tables = [t for t in POSTGRES_TABLES if t in now_tables and t in columns]
        for table in tables:  # those of both versions, in foreign-key order
            # A column the last migration drops stays empty.
            shared = ", ".join(c for c in columns[table] if (table, c) in now_columns)
            with (
                source.cursor().copy(f"COPY (SELECT {shared} FROM {table}) TO STDOUT") as out,
                target.cursor().copy(f"COPY {table} ({shared}) FROM STDIN") as into,
            ):
                for block in out:
                    into.write(block)
        if "audit_id" not in columns["observations"]:
            # Before postgres_0019 an observation's audit entry was a row of the audit table.
            entries = source.execute(
                "SELECT audit_id, project, subject, job_id, 'extract', 'record_observation', "
                "outcome || ': ' || reason, fact_id, NULL, "
                "jsonb_build_object('id', id, 'event_id', event_id)::text, at "
                "FROM observations WHERE audit_id IS NOT NULL"
            ).fetchall()
            with target.cursor() as cur:
                cur.executemany(
                    "INSERT INTO audit VALUES "
                    "(%s, %s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s::jsonb, %s)",
                    entries,
                )


def before_migration(backend: str, old: str, now: str, suffix: str) -> None:
    """`now`'s rows in database `old` at the version before the migration whose file name
    ends with `suffix` (`_unpaired_changes.sql`): opening it runs that migration on them."""
    [named] = [m for m in load_migrations(backend) if m.name.endswith(suffix)]
    copy = sqlite_previous_version if backend == "sqlite" else postgres_previous_version
    copy(old, now, before=named.version)


def accepted_unrecorded(everything: dict[str, Any]) -> None:
    """`read_everything` as a store from before schema 23 (SQLite; 20 on PostgreSQL) reads
    it once migrated: the statements a person accepted by keeping a fact are recorded from
    that migration on, and a set resolved before it records none (the migration's header
    says why), in the set and in the audit entries that show it."""
    sets = [e[side] for e in everything["audit"] for side in ("before", "after")]
    for conflict in [*everything["conflicts"], *sets]:
        if conflict and "accepted_event_ids" in conflict:
            conflict["accepted_event_ids"] = []


def read_everything(mem: Memory) -> dict[str, Any]:
    """Every read a user has, and the engine's lookups, over everything the database holds."""
    facts = mem.facts(subject=None, include_retired=True)
    dumped = [f.model_dump(mode="json") for f in facts]
    queries = {
        f.id: mem.embedder.embed_batch([identity_text(f.predicate, f.value)])[0]
        for f in facts
        if f.predicate and f.value is not None and f.status is FactStatus.ACTIVE
    }
    return {
        "facts": dumped,
        "histories": {
            f.id: {
                "versions": [v.model_dump(mode="json") for v in h.versions],
                "observations": [o.model_dump(mode="json") for o in h.observations],
                "audit": [a.model_dump(mode="json") for a in h.audit],
            }
            for f in facts
            for h in [mem.history(f.id)]
        },
        "audit": [a.model_dump(mode="json") for a in mem.audit(limit=100_000)],
        "conflicts": [c.model_dump(mode="json") for c in mem.conflicts(status=None)],
        "jobs": [j.model_dump(mode="json") for j in mem.jobs()],
        "events": [
            e.model_dump(mode="json")
            for e in mem.events([i for f in facts for i in f.source_event_ids])
        ],
        "by_source": [  # the lookup adjudication makes, through fact_sources
            f.id
            for f in mem.store.facts_with_sources(
                PROJECT, SUBJECT, sorted({i for f in facts for i in f.source_event_ids})
            )
        ],
        "nearest": {
            fact_id: mem.store.nearest_facts(PROJECT, SUBJECT, q, 5, mem.embedder.model_id)
            for fact_id, q in queries.items()
        },
        "counts": mem.status().to_dict() | {"database": None},
        # Search's lexical arm reads each backend's full-text index (written by the migration
        # that made it, on PostgreSQL filled from the facts already there).
        "search": {
            question: [(h.fact.id, h.parts) for h in mem.search(question, limit=20)]
            for question in ("bike count", "language lang", "hiking", "diet kind keto", "home")
        },
        "search_past": [
            (h.fact.id, h.parts) for h in mem.search("city Lyon", as_of=at(21), limit=20)
        ],
    }


@pytest.mark.parametrize("ids", ["named", "hex", "mixed"])
def test_a_database_at_the_previous_version_migrates_and_reads_the_same(
    backend: str,
    ids: str,
    open_memory: Callable[..., Memory],
    new_database: Callable[[str], str],
) -> None:
    now_database = new_database("now")
    now = open_memory(now_database, ids)
    a_life(now)
    for minute, city in enumerate(("Lyon", "Oslo", "Lyon"), start=20):
        say(now, "home_city", {"city": city}, when=at(minute), action="supersede")
        now.consolidate()
    hand_made = make_fact(subject=SUBJECT, predicate="shoe_size", value={"eu": 44})
    vector = np.zeros(256, dtype=np.float32)
    vector[3] = 1.0
    now.store.apply(
        Plan([CreateFact(hand_made, "given", vector=vector, vector_model=now.embedder.model_id)]),
        None,
        [],
    )
    expected = read_everything(now)
    assert expected["nearest"] and expected["audit"]

    old = new_database("old")
    copy = sqlite_previous_version if backend == "sqlite" else postgres_previous_version
    copy(old, now_database)
    migrated = open_memory(old, ids)

    assert migrated.store.schema_version() == load_migrations(backend)[-1].version
    if load_migrations(backend)[-1].name.endswith("_accepted_statements.sql"):
        accepted_unrecorded(expected)
    assert read_everything(migrated) == expected
    [found] = migrated.store.nearest_facts(PROJECT, SUBJECT, vector, 1, now.embedder.model_id)
    assert found[0].fact_id == hand_made.id and found[0].distance == pytest.approx(0.0, abs=1e-6)


# -- events' vectors -----------------------------------------------------------------------------
def test_an_embedded_event_keeps_its_vector_in_the_embedding_cache_and_its_row_unchanged(
    database: str, clock: FakeClock
) -> None:
    embedder = HashingEmbedder(256)
    with Memory(database, embedder=embedder, clock=clock, embed_events=True) as mem:
        said = say(mem, "home_city", {"city": "Lyon"}, when=at(1))
        noted = mem.add_event(subject=SUBJECT, text="I moved to Oslo last spring")
        mem.consolidate()
        events = [said, noted]
        assert mem.events([e.id for e in events]) == events  # an event is never rewritten
        hashes = [content_hash(e.text) for e in events]
        kept = mem.store.cached_embeddings(embedder.model_id, hashes)
        for event, key in zip(events, hashes, strict=True):
            np.testing.assert_array_equal(kept[key], embedder.embed_batch([event.text])[0])


def test_events_are_not_embedded_unless_asked(memory: Memory) -> None:
    # (The text of a free-text memory is embedded as the memory's own, whatever the setting.)
    event = say(memory, "home_city", {"city": "Lyon"}, when=at(1))
    memory.consolidate()
    hashes = [content_hash(event.text)]
    assert memory.store.cached_embeddings(memory.embedder.model_id, hashes) == {}


def test_event_vectors_of_a_version_that_kept_them_in_the_rows_move_to_the_cache(
    backend: str, new_database: Callable[[str], str], open_memory: Callable[..., Memory]
) -> None:
    now_database = new_database("now")
    now = open_memory(now_database)
    a_life(now)
    texts = sorted({e.text for e in now.store.iter_events(PROJECT)})
    old = new_database("old")
    [moved] = [
        m for m in load_migrations(backend) if m.name.endswith("_event_vectors_in_cache.sql")
    ]
    (sqlite_previous_version if backend == "sqlite" else postgres_previous_version)(
        old, now_database, before=moved.version
    )
    # The previous version kept each event's vector in its row too (under a model whose
    # vectors the cache does not hold here).
    given = {t: v for t, v in zip(texts, HashingEmbedder(8).embed_batch(texts), strict=True)}
    if backend == "sqlite":
        db = sqlite3.connect(old)
        with db:
            for text, vector in given.items():
                db.execute(
                    "UPDATE events SET embedding = ?, embedding_model = 'old-model' WHERE text = ?",
                    (rows.to_blob(vector), text),
                )
        columns = lambda: {r[1] for r in db.execute("PRAGMA table_info(events)")}  # noqa: E731
    else:
        import psycopg

        db = psycopg.connect(old, autocommit=True)
        for text, vector in given.items():
            db.execute(
                "UPDATE events SET embedding = %s::vector, embedding_model = 'old-model' "
                "WHERE text = %s",
                ("[" + ",".join(map(repr, vector.tolist())) + "]", text),
            )
        listed = "SELECT column_name FROM information_schema.columns WHERE table_name = 'events'"
        columns = lambda: {r[0] for r in db.execute(listed)}  # noqa: E731
    try:
        assert {"embedding", "embedding_model"} <= columns()
        migrated = open_memory(old)
        kept = migrated.store.cached_embeddings("old-model", [content_hash(t) for t in given])
        assert kept.keys() == {content_hash(t) for t in given}
        for text, vector in given.items():
            np.testing.assert_array_equal(kept[content_hash(text)], vector)
        assert not {"embedding", "embedding_model"} & columns()
    finally:
        db.close()
