"""`distill copy` and `distill export` on real stores: SQLite and PostgreSQL, both ways.

One consolidated store (creates, reinforcements, supersedes, a late arrival, conflicts, a
quarantine, learned aliases, memories read by a model, a failed job, a pin, a resolved
conflict, a written and a learned rule, event embeddings) is copied SQLite → PostgreSQL →
SQLite; every read of the copies must equal the original's, and consolidating new events
on a copy must do what it does on the original. The store-level properties (an empty
target, the schema guard, all or nothing, running jobs) are checked for every pair of
backends.
"""

from __future__ import annotations

import itertools
import json
import re
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from distill import Memory
from distill.adapters.embed.calibrations import calibration_for
from distill.adapters.embed.hashing import HashingEmbedder, vectors_at_distance
from distill.adapters.llm.fake import FakeLLM
from distill.adapters.store import copy as copy_module
from distill.adapters.store.copy import TABLES, copy_store, read_pages
from distill.adapters.store.queries import load_queries
from distill.adapters.store.sql_store import SqlStore
from distill.adapters.store.sqlite import SqliteStore
from distill.applier import apply_plan
from distill.core.identity import content_hash, identity_text
from distill.core.models import FactStatus, JobStatus, Rule, RuleOrigin
from distill.core.passes import Scope
from distill.core.plan import AddRule, Plan
from distill.core.rules import fingerprint
from distill.errors import InvalidInput, InvalidOperation, StoreError
from distill.export import event_fields, export_lines
from distill.service.event_input import read_jsonl
from tests.conftest import FakeClock

psycopg = pytest.importorskip("psycopg")
from distill.adapters.store.postgres import PostgresStore  # noqa: E402

DIM = 256  # the hashing embedder's dimension in these tests
T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
_RECORDED = calibration_for(HashingEmbedder().model_id)
assert _RECORDED is not None, "the hashing embedder has no entry in calibrations.json"
CLOSE = _RECORDED.max_distance / 2  # well within the identity threshold
PAIRS = [
    ("sqlite", "sqlite"),
    ("sqlite", "postgres"),
    ("postgres", "sqlite"),
    ("postgres", "postgres"),
]


def day(n: float) -> str:
    return (T0 + timedelta(days=n)).isoformat()


def said(subject: str, predicate: str, value: dict[str, Any], when: float, **more: Any) -> dict:
    """An event carrying one structured claim (`action`, `trust` and `text` may be given)."""
    claim = {"predicate": predicate, "value": value, "action": more.pop("action", "create")}
    text = more.pop("text", f"{predicate} is {value}")
    return {"subject": subject, "text": text, "occurred_at": day(when), "claims": [claim], **more}


def told(subject: str, text: str, when: float) -> dict:
    """An event without claims: the model reads it (each sentence becomes a memory)."""
    return {"subject": subject, "text": text, "occurred_at": day(when)}


FIRST = [
    said("u1", "bike_count", {"count": 3}, 0),
    said("u1", "home_city", {"city": "Lyon"}, 1),
    said("u1", "favorite_cuisine", {"cuisine": "thai"}, 2),
    said("u2", "language", {"lang": "fr"}, 0),
    told("u3", "I like hiking. My sister lives in Oslo.", 0),
    {"subject": "u3", "text": "", "occurred_at": day(1), "claims": [{"text": "No peanuts"}]},
]
SECOND = [
    said("u1", "bike_count", {"count": 4}, 30, action="supersede"),
    said("u1", "home_city", {"city": "Lyon"}, 31, text="Still in Lyon"),
    said("u1", "preferred_cuisine", {"cuisine": "thai"}, 32),  # close to favorite_cuisine
    said("u1", "employer", {"name": "Acme"}, 33, trust="untrusted"),
    said("u1", "bike_count", {"count": 2}, -10),  # late news from before the first count
    said("u2", "language", {"lang": "en"}, 5),
    said("u4", "pet_name", {"name": "Rex"}, 0),
    said("u4", "pet_name", {"name": "Max"}, 1),
    told("u3", "We adopted a cat.", 3),
]
LATER = [
    said("u1", "bike_count", {"count": 5}, 60, action="supersede"),
    said("u1", "home_town", {"city": "Paris"}, 61, action="supersede"),  # close to home_city
    said("u1", "preferred_cuisine", {"cuisine": "ramen"}, 62, action="supersede"),  # the alias
    said("u2", "language", {"lang": "de"}, 6),
    told("u3", "I started running.", 10),
    said("u5", "timezone", {"tz": "Europe/Oslo"}, 0),
]


def overrides() -> dict[str, list[float]]:
    """Two pairs of predicates placed CLOSE apart, in directions of their own: the cuisine pair
    is learned as an alias by the first store; the home pair is matched only through the
    stored identity vectors, so a copy that lost them would create a second fact instead."""
    pinned: dict[str, list[float]] = {}
    pairs = [
        (("favorite_cuisine", {"cuisine": "thai"}), ("preferred_cuisine", {"cuisine": "thai"})),
        (("home_city", {"city": "Lyon"}), ("home_town", {"city": "Paris"})),
    ]
    for shift, (first, second) in enumerate(pairs):
        a, b = (np.roll(v, 2 * shift).tolist() for v in vectors_at_distance(CLOSE, DIM))
        for (predicate, value), vector in ((first, a), (second, b)):
            pinned[identity_text(predicate, value)] = vector
            pinned[identity_text(predicate)] = vector
    return pinned


class Stores:
    """Memories on fresh databases of either backend, sharing one clock and one embedder
    setup; each Memory's new ids carry a prefix of its own, later ones sorting after earlier
    ones (as new ids do in one store)."""

    def __init__(self, tmp_path: Path, new_postgres: Callable[[], str]) -> None:
        self.tmp = tmp_path
        self.new_postgres = new_postgres
        self.clock = FakeClock(T0 + timedelta(days=100))
        self.prefixes = iter("abcdefghijklmnopqrstuvwxyz")
        self.opened: list[Any] = []
        self.files = itertools.count()

    def url(self, backend: str) -> str:
        if backend == "postgres":
            return self.new_postgres()
        return str(self.tmp / f"store{next(self.files)}.db")

    def memory(self, url: str, llm: FakeLLM | None = None) -> Memory:
        prefix, counter = next(self.prefixes), itertools.count()
        mem = Memory(
            url,
            embedder=HashingEmbedder(DIM, overrides=overrides()),
            llm=llm or FakeLLM.sentences(),
            clock=self.clock,
            new_id=lambda: f"{prefix}{next(counter):06d}",
            embed_events=True,
            policies={"supports": "vote"},
        )
        self.opened.append(mem)
        return mem

    def store(self, url: str) -> SqlStore:
        store: SqlStore = PostgresStore(url) if url.startswith("postgresql") else SqliteStore(url)
        self.opened.append(store)
        return store

    def close(self) -> None:
        for thing in reversed(self.opened):
            thing.close()


@pytest.fixture
def stores(tmp_path: Path, make_postgres_database: Callable[[], str]) -> Iterator[Stores]:
    made = Stores(tmp_path, make_postgres_database)
    yield made
    made.close()


VOTES = [
    {
        "subject": "u5",
        "text": f"u5 supports {club}",
        "occurred_at": day(n),
        "source": f"site-{n}",
        "trust": "third_party",
        "claims": [{"predicate": "supports", "value": {"club": club}}],
    }
    for n, club in enumerate(["Reading F.C.", "Reading F.C.", "Fulham F.C."], start=1)
]


def populate(mem: Memory) -> None:
    """Two consolidation runs over FIRST and SECOND, a person's rule, three votes counted by a
    derive cycle (which moves its cursor), and an agent's actions counted into a procedure
    with a reported use, and the topics of the entities named."""
    for batch in (FIRST, SECOND):
        mem.add_events(batch)
        mem.consolidate()
    mem.add_rule("u1", "Always reply in British English.")
    mem.add_events(VOTES)
    mem.consolidate()
    assert mem.derive().created == 1
    steps = []
    for session in ("s1", "s2", "s3"):
        for seq, kind in enumerate(("build", "test")):
            action = {"type": kind, "outcome": "success", "session": session, "seq": seq}
            steps.append({"subject": "u5", "text": f"{kind} in {session}", "action": action})
    steps.append({"subject": "u5", "text": "Ada met Bob in Lyon.", "occurred_at": day(3)})
    mem.add_events(steps)
    mem.consolidate()
    mem.promote_procedures()
    [procedure] = mem.procedures("u5")
    mem.record_procedure_use(procedure.id, True)
    mem.detect_topics()


def decide(mem: Memory) -> None:
    """What a person does: pin a fact, resolve a conflict by keeping the held candidate; and
    a rule learned from the pinned memory (as promote_rules writes one)."""
    [cat] = [f for f in mem.facts(subject="u3") if "cat" in f.text]
    mem.pin(cat.id)
    [pets] = mem.conflicts(subject="u4")
    held = [m for m in pets.member_ids if mem.fact(m).status is FactStatus.CANDIDATE]
    mem.resolve_conflict(pets.id, keep=held[0])
    text = "Ask about the cat."
    learned = Rule(
        id="r" + cat.id[1:],
        project="default",
        subject="u3",
        text=text,
        fingerprint=fingerprint(text),
        origin=RuleOrigin.LEARNED,
        source_fact_ids=(cat.id,),
        pass_name="promote_rules",
        reason="a standing wish",
        created_at=T0 + timedelta(days=50),
    )
    add = AddRule(learned, "promoted", offered=(cat.id,))
    scope = Scope("default", "u3")
    apply_plan(mem.store, Plan([add]), scope, job_id=None, now=T0, new_id=mem._new_id)


def consolidated(stores: Stores, url: str) -> Memory:
    """The rich store of the module docstring. The model's first answer is not JSON, so u3's
    first job fails and waits for its retry."""
    mem = stores.memory(url, llm=FakeLLM.sentences().enqueue("this is not JSON"))
    populate(mem)
    decide(mem)
    return mem


def tables(store: SqlStore) -> dict[str, list[dict[str, Any]]]:
    """Every copied table, row by row, in the copy's neutral form (vectors as lists)."""
    found: dict[str, list[dict[str, Any]]] = {}
    with store._tx(write=False) as db:
        for table in TABLES:
            found[table.name] = [
                {k: v.tolist() if isinstance(v, np.ndarray) else v for k, v in row.items()}
                for page in read_pages(store, db, table)
                for row in page
            ]
    return found


def reads(mem: Memory) -> dict[str, Any]:
    """Everything the API reads, for the whole project."""
    every = mem.facts(include_retired=True)
    events = list(mem.store.iter_events(None))
    claimed = {c.predicate for e in events for c in e.claims if c.predicate}
    predicates = sorted(claimed | {f.predicate for f in every if f.predicate})
    return {
        "current": mem.facts(),
        "every": every,
        "as_of": {n: mem.facts(as_of=T0 + timedelta(days=n)) for n in (-5, 0.5, 2, 20, 40, 99)},
        "history": {f.id: mem.history(f.id) for f in every},
        "conflicts": mem.conflicts(status=None),
        "audit": mem.audit(limit=10_000),
        "jobs": mem.jobs(),
        "events": events,
        "by_id": mem.events([e.id for e in events]),
        "observations": mem.store.observations_for_events("default", [e.id for e in events]),
        "aliases": mem.store.aliases("default", predicates),
        "rules": mem.rules(),
        "procedures": mem.procedures(),
        "topics": mem.topics(include_retired=True),
        "counts": mem.status().counts,
    }


def nearest(mem: Memory) -> dict[str, list[list[tuple[str, float]]]]:
    """For every subject, the nearest active state facts to each of its facts' identity
    texts and to two texts of no fact."""
    found = {}
    every = mem.facts(include_retired=True)
    for subject in sorted({f.subject for f in every}):
        mine = [f for f in every if f.subject == subject]
        texts = [identity_text(f.predicate, f.value) if f.predicate else f.text for f in mine]
        vectors = mem.embedder.embed_batch([*texts, "bike count: 7", "favourite colour: teal"])
        hits = mem.store.nearest_facts("default", subject, vectors, 10, mem.embedder.model_id)
        found[subject] = [[(n.fact_id, n.distance) for n in row] for row in hits]
    return found


def same_neighbours(got: dict[str, Any], want: dict[str, Any], tolerance: float) -> None:
    assert got.keys() == want.keys()
    for subject in want:
        for row_got, row_want in zip(got[subject], want[subject], strict=True):
            assert [i for i, _ in row_got] == [i for i, _ in row_want], subject
            assert [d for _, d in row_got] == pytest.approx([d for _, d in row_want], abs=tolerance)


def outcome(mem: Memory, old_ids: set[str]) -> dict[str, Counter[Any]]:
    """The state as a multiset, ids made comparable across stores: an id the stores share
    stays, a new one is "new"; events are named by their idempotency key."""
    keys = {e.id: e.idempotency_key for e in mem.store.iter_events(None)}

    def ref(fact_id: str | None) -> str | None:
        return fact_id if fact_id is None or fact_id in old_ids else "new"

    facts = Counter(
        (
            ref(f.id),
            f.subject,
            f.kind,
            f.predicate,
            json.dumps(f.value, sort_keys=True),
            f.text,
            f.status,
            f.valid_from,
            f.valid_to,
            f.recorded_at,
            f.retired_at,
            ref(f.supersedes_id),
            ref(f.superseded_by),
            tuple(sorted(keys[e] for e in f.source_event_ids)),
            f.reinforcement_count,
            f.last_reinforced_at,
            f.trust,
            f.pinned,
        )
        for f in mem.facts(include_retired=True)
    )
    conflicts = Counter(
        (ref(c.id), c.subject, c.kind, c.status, tuple(map(ref, c.member_ids)), c.reason)
        for c in mem.conflicts(status=None)
    )
    jobs = Counter((j.subject, j.status, j.attempts, j.error) for j in mem.jobs())
    return {"facts": facts, "conflicts": conflicts, "jobs": jobs}


# -- the whole store, SQLite → PostgreSQL → SQLite ----------------------------------------------
def test_a_copy_there_and_back_reads_exactly_like_the_original(stores: Stores) -> None:
    original = consolidated(stores, stores.url("sqlite"))
    before = reads(original)
    # The population has what the test claims it has.
    assert {str(f.status) for f in before["every"]} == {"active", "candidate", "superseded"}
    assert {(str(c.kind), str(c.status)) for c in before["conflicts"]} == {
        ("conflict", "open"),
        ("conflict", "resolved"),
        ("quarantine", "open"),
    }
    assert [a.alias for a in before["aliases"].values()] == ["preferred_cuisine"]
    assert any(f.pinned for f in before["every"])
    assert {j.status for j in before["jobs"]} == {JobStatus.DONE, JobStatus.FAILED}
    original_tables = tables(original.store)  # type: ignore[arg-type]
    assert all(original_tables.values()), "every table has rows to copy"
    # The events' vectors are in the embedding cache (those of the failed job's too: they were
    # computed before it failed; an empty text has none), which is copied with the rest.
    cached = {row["text_hash"] for row in original_tables["embedding_cache"]}
    texts = {e["text"] for e in original_tables["events"] if e["text"].strip()}
    assert {content_hash(t) for t in texts} <= cached

    pg_url, lite_url = stores.url("postgres"), stores.url("sqlite")
    there = copy_store(stores.store(original.database), stores.store(pg_url))
    back = copy_store(stores.store(pg_url), stores.store(lite_url))
    assert there.rows == back.rows == {t: len(rows) for t, rows in original_tables.items()}

    on_pg, on_lite = stores.memory(pg_url), stores.memory(lite_url)
    for copy in (on_pg, on_lite):
        assert tables(copy.store) == original_tables  # type: ignore[arg-type]
        got = reads(copy)
        for name, value in before.items():
            assert got[name] == value, name
    # Cosine distances: PostgreSQL computes them itself, so to float32 rounding.
    want = nearest(original)
    same_neighbours(nearest(on_pg), want, tolerance=1e-6)
    same_neighbours(nearest(on_lite), want, tolerance=0.0)
    with psycopg.connect(pg_url) as conn:  # PostgreSQL's copy is indexed as if grown there
        indexes = conn.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'fact_vectors'")
        assert f"fact_vectors_hnsw_{DIM}" in {r[0] for r in indexes}


def test_consolidating_new_events_on_a_copy_does_what_it_does_on_the_original(
    stores: Stores,
) -> None:
    original = consolidated(stores, stores.url("sqlite"))
    old_ids = {f.id for f in original.facts(include_retired=True)}
    old_ids |= {c.id for c in original.conflicts(status=None)}
    pg_url, lite_url = stores.url("postgres"), stores.url("sqlite")
    copy_store(stores.store(original.database), stores.store(pg_url))
    copy_store(stores.store(pg_url), stores.store(lite_url))
    copies = [stores.memory(pg_url), stores.memory(lite_url)]

    stores.clock.advance(days=1)  # past the failed job's backoff: it is retried too
    reports = []
    for mem in (original, *copies):
        mem.add_events(LATER)
        reports.append(mem.consolidate())
    counters = reports[0].counters()
    assert counters["superseded"] >= 3 and counters["jobs_failed"] == 0
    for report in reports[1:]:
        assert report.counters() == counters
    want = outcome(original, old_ids)
    for mem in copies:
        assert outcome(mem, old_ids) == want
        # The copy has derive's cursor: the votes it counted are not counted again.
        assert mem.derive().processed == 0
        # "home town" was found to mean "home city" through the copied identity vectors.
        [home] = [f for f in mem.facts(subject="u1") if f.value == {"city": "Paris"}]
        assert home.predicate == "home_city" and home.supersedes_id in old_ids


# -- the store-level properties, for every pair of backends --------------------------------------
@pytest.fixture(params=PAIRS, ids=["→".join(p) for p in PAIRS])
def pair(request: pytest.FixtureRequest, stores: Stores) -> tuple[str, str]:
    source, target = request.param
    return stores.url(source), stores.url(target)


def test_every_row_arrives_as_it_was(
    stores: Stores, pair: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    source_url, target_url = pair
    populate(stores.memory(source_url))
    source, target = stores.store(source_url), stores.store(target_url)
    want = tables(source)
    # A row a page: every table is read past its first page, by its key (composite or not).
    monkeypatch.setattr(copy_module, "PAGE_ROWS", 1)
    report = copy_store(source, target)
    assert tables(target) == want
    assert report.rows == {name: len(rows) for name, rows in want.items()}
    assert all(report.rows.values())
    assert report.total == sum(report.rows.values()) > 0


def test_a_target_that_holds_anything_is_refused_and_nothing_is_written(
    stores: Stores, pair: tuple[str, str]
) -> None:
    source_url, target_url = pair
    populate(stores.memory(source_url))
    stores.memory(target_url).add_events([said("z9", "colour", {"name": "teal"}, 0)])
    target = stores.store(target_url)
    before = tables(target)
    with pytest.raises(InvalidOperation, match=r"is not empty \(rows in events: 1, jobs: 1"):
        copy_store(stores.store(source_url), target)
    assert tables(target) == before


def test_a_failed_copy_leaves_the_target_empty_and_can_simply_be_run_again(
    stores: Stores, pair: tuple[str, str]
) -> None:
    source_url, target_url = pair
    populate(stores.memory(source_url))
    source, target = stores.store(source_url), stores.store(target_url)

    def fail_in_facts(table: str, done: int, total: int) -> None:
        if table == "facts" and done:
            raise KeyboardInterrupt  # an interrupted copy, after events and jobs went in

    with pytest.raises(KeyboardInterrupt):
        copy_store(source, target, fail_in_facts)
    assert all(rows == [] for rows in tables(target).values())
    copy_store(source, target)
    assert tables(target) == tables(source)


def test_progress_counts_every_row_of_every_table(stores: Stores) -> None:
    source_url = stores.url("sqlite")
    populate(stores.memory(source_url))
    seen: dict[str, list[tuple[int, int]]] = {}
    report = copy_store(
        stores.store(source_url),
        stores.store(stores.url("sqlite")),
        lambda table, done, total: seen.setdefault(table, []).append((done, total)),
    )
    assert list(seen) == [t.name for t in TABLES]
    for name, ticks in seen.items():
        assert ticks[0] == (0, report.rows[name])
        assert ticks[-1] == (report.rows[name], report.rows[name])


def test_running_jobs_arrive_pending_and_unclaimed(stores: Stores, pair: tuple[str, str]) -> None:
    source_url, target_url = pair
    stores.memory(source_url).add_events(FIRST)
    source = stores.store(source_url)
    claimed = source.claim_jobs(stores.clock.now(), 10, 5)
    assert claimed and {j.status for j in source.jobs()} == {JobStatus.RUNNING}

    report = copy_store(source, stores.store(target_url))
    assert report.running_jobs_made_pending == len(claimed)
    copied = stores.memory(target_url)
    for job in copied.jobs():
        assert job.status is JobStatus.PENDING
        assert (job.attempts, job.owner, job.claimed_at) == (0, None, None)
    assert {j.status for j in source.jobs()} == {JobStatus.RUNNING}  # the source is untouched
    assert copied.consolidate().jobs_done == len(claimed)
    assert {f.subject for f in copied.facts()} == {"u1", "u2", "u3"}


# -- the schema guard ---------------------------------------------------------------------------
def alter(url: str, statement: str) -> None:
    """Change a database's schema behind its stores' backs."""
    if url.startswith("postgresql"):
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(statement)
        return
    with sqlite3.connect(url) as conn:
        conn.execute(statement)
    conn.close()


@pytest.mark.parametrize("role", ["source", "target"])
@pytest.mark.parametrize(
    ("statement", "named"),
    [
        (
            "ALTER TABLE facts ADD COLUMN note TEXT",
            "the copy does not know and would drop: facts.note",
        ),
        ("CREATE TABLE notes (id TEXT PRIMARY KEY)", "tables the copy does not know: notes"),
    ],
    ids=["column", "table"],
)
def test_a_schema_the_copy_does_not_know_stops_it_before_anything_is_written(
    stores: Stores, pair: tuple[str, str], role: str, statement: str, named: str
) -> None:
    source_url, target_url = pair
    populate(stores.memory(source_url))
    stores.store(target_url)  # migrated, like any store opened for a copy
    alter(source_url if role == "source" else target_url, statement)
    target = stores.store(target_url)
    with pytest.raises(StoreError, match=rf"the {role} database .*{re.escape(named)}"):
        copy_store(stores.store(source_url), target)
    assert all(rows == [] for rows in tables(target).values())


def test_a_database_at_another_schema_version_is_refused(stores: Stores) -> None:
    source_url, target_url = stores.url("sqlite"), stores.url("postgres")
    populate(stores.memory(source_url))
    source, target = stores.store(source_url), stores.store(target_url)
    latest = source.migrations[-1].version
    alter(source_url, f"INSERT INTO schema_migrations VALUES ({latest + 1}, '2999-01-01')")
    with pytest.raises(StoreError, match=rf"schema version {latest + 1}, not {latest}"):
        copy_store(source, target)
    assert all(rows == [] for rows in tables(target).values())


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_each_table_is_read_and_written_with_exactly_its_listed_columns(backend: str) -> None:
    """The read queries return the listed columns (checked on every page as it is read); here:
    each write names every listed column as a parameter, so none is dropped on the way in."""
    queries = load_queries(backend)
    parameter = r":(\w+)" if backend == "sqlite" else r"%\((\w+)\)s"
    for table in TABLES:
        assert table.read in queries
        written = set(re.findall(parameter, queries[table.write]))
        if table.name == "fact_vectors":  # `_store_vectors`: SQLite puts the vector in the cache
            written |= set(re.findall(parameter, queries["cache_embedding"]))
        assert written == set(table.columns), table.name
        key_params = set(re.findall(parameter, queries[table.read]))
        assert key_params == {f"after_{c}" for c in table.key} | {"limit"}, table.name


# -- export ------------------------------------------------------------------------------------
def export_file(mem: Memory, path: Path, subject: str | None = None) -> list[dict[str, Any]]:
    lines = list(export_lines(mem.store, "default", subject))
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return lines


def current(mem: Memory) -> Counter[tuple[Any, ...]]:
    """The facts true now, without ids."""
    return Counter(
        (
            f.subject,
            f.kind,
            f.predicate,
            json.dumps(f.value, sort_keys=True),
            f.text,
            f.valid_from,
            f.valid_to,
            f.reinforcement_count,
            f.trust,
        )
        for f in mem.facts()
    )


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_an_export_added_to_a_fresh_store_consolidates_to_the_same_current_facts(
    stores: Stores, tmp_path: Path, backend: str
) -> None:
    original = stores.memory(stores.url("sqlite"))
    populate(original)
    lines = export_file(original, tmp_path / "export.jsonl")

    rebuilt = stores.memory(stores.url(backend))
    rebuilt.add_events(read_jsonl(tmp_path / "export.jsonl"))  # what `add --file` adds
    rebuilt.consolidate()
    rebuilt.derive()  # the votes are counted again, as they were counted in the original
    assert current(rebuilt) == current(original)
    assert len(rebuilt.facts()) > 5
    # Every event came back with its idempotency key: adding the export again adds nothing.
    events = [line for line in lines if line["type"] == "event"]
    assert {e.idempotency_key for e in rebuilt.store.iter_events(None)} == {
        e["idempotency_key"] for e in events
    }
    assert rebuilt.add_events(read_jsonl(tmp_path / "export.jsonl"))
    assert rebuilt.status().counts.events == len(events)


def test_export_lines_hold_every_event_and_every_version_of_every_fact(stores: Stores) -> None:
    mem = consolidated(stores, stores.url("postgres"))
    lines = list(export_lines(mem.store, "default"))
    kinds = [line["type"] for line in lines]
    # Events first, then facts, rules, procedures and topics.
    order = ["event", "fact", "rule", "procedure", "topic"]
    assert kinds == sorted(kinds, key=order.index) and set(kinds) == set(order)
    events = [line for line in lines if line["type"] == "event"]
    facts = [line for line in lines if line["type"] == "fact"]
    assert [e["id"] for e in events] == [e.id for e in mem.store.iter_events("default")]
    assert set(events[0]) == {"type", "id", "subject", "project", "text", "occurred_at",
                              "source", "trust", "claims", "idempotency_key"}  # fmt: skip
    every = mem.facts(include_retired=True)
    assert [f["id"] for f in facts] == [f.id for f in every]
    assert facts == [{"type": "fact", **f.model_dump(mode="json")} for f in every]
    statuses = {f["status"] for f in facts}
    assert statuses == {"active", "candidate", "superseded"}
    assert any(f["superseded_by"] for f in facts) and any(f["valid_to"] for f in facts)
    rules = [line for line in lines if line["type"] == "rule"]
    assert rules == [{"type": "rule", **r.model_dump(mode="json")} for r in mem.rules()]
    assert {r["origin"] for r in rules} == {"learned", "written"}
    procedures = [line for line in lines if line["type"] == "procedure"]
    assert procedures == [
        {"type": "procedure", **p.model_dump(mode="json")} for p in mem.procedures()
    ]
    assert any(p["successes"] for p in procedures)  # the reported use, which no event holds
    topics = [line for line in lines if line["type"] == "topic"]
    every_topic = mem.topics(include_retired=True)
    assert topics == [{"type": "topic", **t.model_dump(mode="json")} for t in every_topic]
    # `add --file` adds the event lines only.
    assert [event_fields(line) is not None for line in lines] == [k == "event" for k in kinds]

    mine = list(export_lines(mem.store, "default", subject="u1"))
    assert mine and {line["subject"] for line in mine} == {"u1"}
    assert [line for line in lines if line["subject"] == "u1"] == mine
    assert list(export_lines(mem.store, "another project")) == []


def test_add_file_refuses_a_line_of_an_unknown_type(tmp_path: Path) -> None:
    path = tmp_path / "lines.jsonl"
    event = {"type": "event", "id": "x", **told("u1", "hello", 0)}
    path.write_text(json.dumps(event) + "\n" + json.dumps({"type": "edge"}) + "\n")
    with pytest.raises(InvalidInput, match=r"lines.jsonl:2: \"type\" is 'edge'"):
        read_jsonl(path)
