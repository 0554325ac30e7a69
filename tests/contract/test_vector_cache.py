"""The in-memory index behind search's vector arm (`vector_cache`), on every backend.

Once a scope's index is built, every lookup is compared with exact search over the facts
live at that moment, while another store (another process, for all either can tell) retires,
adds, holds and erases facts. On PostgreSQL, where the change log cannot be read in commit
order, a change committed after a later one was read is still found.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import NamedTuple

import numpy as np
import numpy.typing as npt
import psycopg
import pytest

from distill.adapters.store import sql_store
from distill.adapters.store.sqlite import SqliteStore
from distill.adapters.store.vector_cache import VectorScope
from distill.adapters.store.vector_search import exact_nearest
from distill.core import resolve
from distill.core.models import Fact, FactKind, FactStatus
from distill.core.plan import CreateFact, Plan, ReviseFact
from distill.errors import InvalidInput
from distill.ports import Neighbour, RecallScope
from tests.factories import PROJECT, SUBJECT, make_fact

MODEL = "test-model"
DIM = 24
THRESHOLD = 60  # the index takes over from this many live vectors in these tests
SCOPE = RecallScope(PROJECT, SUBJECT, MODEL)
KEY = (VectorScope(PROJECT, SUBJECT, MODEL, True, None), DIM)
Matrix = npt.NDArray[np.float32]
Store = SqliteStore  # or PostgresStore: the same methods are used


def unit_rows(rng: np.random.Generator, n: int) -> Matrix:
    rows = rng.standard_normal((n, DIM)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


@pytest.fixture
def open_store(backend: str, database: str) -> Iterator[Callable[[], Store]]:
    """Stores on this test's database whose index takes over at `THRESHOLD` vectors."""
    opened: list[Store] = []

    def make() -> Store:
        if backend == "sqlite":
            store = SqliteStore(database, ann_min_vectors=THRESHOLD)
        else:
            from distill.adapters.store.postgres import PostgresStore

            store = PostgresStore(database, ann_min_vectors=THRESHOLD)  # type: ignore[assignment]
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


class World:
    """The facts written, their vectors, and which are live: what exact search reads."""

    def __init__(self) -> None:
        self.vectors: dict[str, Matrix] = {}
        self.live: set[str] = set()

    def create(self, store: Store, matrix: Matrix, subject: str = SUBJECT) -> list[Fact]:
        facts = [
            make_fact(f"attribute_{len(self.vectors) + i}", {"n": i}, subject=subject)
            for i in range(len(matrix))
        ]
        store.apply(
            Plan(
                actions=[
                    CreateFact(f, "new", vector=v, vector_model=MODEL)
                    for f, v in zip(facts, matrix, strict=True)
                ]
            ),
            None,
            [],
        )
        for f, v in zip(facts, matrix, strict=True):
            self.vectors[f.id] = v
            if subject == SUBJECT:
                self.live.add(f.id)
        return facts

    def revise(self, store: Store, facts: list[Fact], **changes: object) -> list[Fact]:
        after = [f.model_copy(update=changes) for f in facts]
        actions = [ReviseFact(b, a, "test", "test") for b, a in zip(facts, after, strict=True)]
        store.apply(Plan(actions=list(actions)), None, [])
        for f in after:
            (self.live.add if f.status == FactStatus.ACTIVE else self.live.discard)(f.id)
        return after

    def expected(self, queries: Matrix, k: int) -> list[list[Neighbour]]:
        ids = sorted(self.live)
        if not ids:
            return [[] for _ in queries]
        return exact_nearest(ids, np.stack([self.vectors[i] for i in ids]), queries, k)


def lookup(store: Store, queries: Matrix, k: int) -> list[list[Neighbour]]:
    return [store.recall_nearest(SCOPE, q[None, :], k) for q in queries]


def indexed(store: Store) -> int:
    """How many vectors the store's index of the scope holds (0: none built)."""
    store._vectors.wait_for_builds()
    scope = store._vectors._scopes.get(KEY)
    return 0 if scope is None else len(scope.index)


def same(got: list[list[Neighbour]], want: list[list[Neighbour]]) -> None:
    assert [[n.fact_id for n in hood] for hood in got] == [
        [n.fact_id for n in hood] for hood in want
    ]
    for g, w in zip(got, want, strict=True):
        assert [n.distance for n in g] == pytest.approx([n.distance for n in w], abs=1e-5)


def test_once_built_the_index_answers_what_exact_search_answers(
    open_store: Callable[[], Store],
) -> None:
    store, world, rng = open_store(), World(), np.random.default_rng(1)
    matrix = unit_rows(rng, 3 * THRESHOLD)
    world.create(store, matrix)
    world.create(store, unit_rows(rng, 20), subject="bob")  # another subject is never searched
    queries = np.vstack([matrix[:8], unit_rows(rng, 4)])
    same(lookup(store, queries, 5), world.expected(queries, 5))  # the database; a build starts
    assert indexed(store) == 3 * THRESHOLD
    same(lookup(store, queries, 5), world.expected(queries, 5))  # the index


# Subjects whose names sort next to each other, or where a range of text might end: one
# subject's search must read its own facts only, the project's every subject's.
NEIGHBOURING_NAMES = ("a", "a ", "ab", "A", "é", "\U0001f600", "\x7f", "z" * 60)


@pytest.mark.parametrize("per_subject", [3, THRESHOLD], ids=["exact", "indexed"])
def test_a_subject_searches_its_own_facts_and_the_project_all_whatever_the_names(
    open_store: Callable[[], Store], per_subject: int
) -> None:
    store, world, rng = open_store(), World(), np.random.default_rng(7)
    made = {
        name: {f.id for f in world.create(store, unit_rows(rng, per_subject), subject=name)}
        for name in NEIGHBOURING_NAMES
    }
    everyone = set().union(*made.values())
    question = unit_rows(rng, 1)
    for _ in range(2):  # the database, then (per_subject = THRESHOLD) the indexes it built
        for name, ids in made.items():
            found = store.recall_nearest(RecallScope(PROJECT, name, MODEL), question, len(everyone))
            assert {n.fact_id for n in found} == ids, name
        found = store.recall_nearest(RecallScope(PROJECT, None, MODEL), question, len(everyone))
        assert {n.fact_id for n in found} == everyone
        store._vectors.wait_for_builds()


def test_below_the_threshold_no_index_is_built(open_store: Callable[[], Store]) -> None:
    store, world, rng = open_store(), World(), np.random.default_rng(2)
    matrix = unit_rows(rng, THRESHOLD - 1)
    world.create(store, matrix)
    same(lookup(store, matrix[:3], 2), world.expected(matrix[:3], 2))
    assert indexed(store) == 0


class Indexed(NamedTuple):
    """A store whose index of the scope is built, another store on the same database, and
    six of the indexed vectors as queries."""

    store: Store
    other: Store
    world: World
    facts: list[Fact]
    queries: Matrix
    rng: np.random.Generator

    @classmethod
    def make(cls, open_store: Callable[[], Store], seed: int) -> Indexed:
        store, other, world = open_store(), open_store(), World()
        rng = np.random.default_rng(seed)
        matrix = unit_rows(rng, 2 * THRESHOLD)
        facts = world.create(store, matrix)
        lookup(store, matrix[:6], 3)
        assert indexed(store) == 2 * THRESHOLD
        return cls(store, other, world, facts, matrix[:6], rng)

    def replace_each_query_fact(self) -> list[Fact]:
        """The other store retires each query's own fact and adds one closer to the query."""
        self.world.revise(self.other, self.facts[:6], status=FactStatus.RETRACTED)
        closer = self.queries + 0.001 * unit_rows(self.rng, 6)
        return self.world.create(self.other, closer / np.linalg.norm(closer, axis=1, keepdims=True))


def test_what_another_store_changes_is_followed(open_store: Callable[[], Store]) -> None:
    store, other, world, _, queries, _ = made = Indexed.make(open_store, 3)
    added = made.replace_each_query_fact()
    got = lookup(store, queries, 3)
    same(got, world.expected(queries, 3))
    assert [hood[0].fact_id for hood in got] == [f.id for f in added]
    held = world.revise(other, added[:2], status=FactStatus.CANDIDATE)
    same(lookup(store, queries, 3), world.expected(queries, 3))
    world.revise(other, held, status=FactStatus.ACTIVE)
    world.revise(other, added[2:3], kind=FactKind.EVENT)  # recall searches every kind
    same(lookup(store, queries, 3), world.expected(queries, 3))
    assert indexed(store) == 2 * THRESHOLD


def test_an_erased_subject_leaves_the_index(open_store: Callable[[], Store]) -> None:
    store, other, world = open_store(), open_store(), World()
    rng = np.random.default_rng(4)
    matrix = unit_rows(rng, 2 * THRESHOLD)
    world.create(store, matrix)
    lookup(store, matrix[:2], 2)
    assert indexed(store) == 2 * THRESHOLD
    counts = other.erasable(PROJECT, SUBJECT)
    facts = other.facts(PROJECT, SUBJECT, True, None)
    other.apply(resolve.erase(PROJECT, SUBJECT, counts, [], facts, []), None, [])
    assert lookup(store, matrix[:2], 2) == [[], []]
    assert indexed(store) == 0


def test_an_index_behind_what_the_log_pruned_is_built_again(
    open_store: Callable[[], Store],
) -> None:
    store, other, world, _, queries, _ = made = Indexed.make(open_store, 6)
    added = made.replace_each_query_fact()
    # The other store prunes the log of every change: the index cannot learn of them.
    assert other.prune_vector_log(keep=0) >= 6
    got = lookup(store, queries, 3)  # exact search, while the index is built again
    same(got, world.expected(queries, 3))
    assert [hood[0].fact_id for hood in got] == [f.id for f in added]
    assert indexed(store) == 2 * THRESHOLD
    same(lookup(store, queries, 3), world.expected(queries, 3))  # the new index


def log_rows(store: Store) -> int:
    with store._tx(write=False) as db:
        return int(db.execute("SELECT count(*) AS n FROM vector_changes").fetchone()["n"])


def test_a_store_keeps_the_log_to_its_newest_rows_as_it_writes(
    open_store: Callable[[], Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sql_store, "VECTOR_LOG_KEEP", 10)
    store, world, rng = open_store(), World(), np.random.default_rng(8)
    for _ in range(8):  # pruned to the newest 10 after every 5 vectors
        world.create(store, unit_rows(rng, 5))
    assert log_rows(store) == 10
    with pytest.raises(InvalidInput):
        store.prune_vector_log(keep=-1)


def test_a_change_committed_after_a_later_one_was_read_is_found(
    postgres_database: str,
) -> None:
    """PostgreSQL: transaction A logs a change and stays open while B logs one and commits;
    a lookup reads B's; then A commits, and the next lookup must still see A's."""
    from distill.adapters.store.postgres import PostgresStore

    world, rng = World(), np.random.default_rng(5)
    with PostgresStore(postgres_database, ann_min_vectors=THRESHOLD) as store:
        matrix = unit_rows(rng, 2 * THRESHOLD)
        facts = world.create(store, matrix)
        queries = matrix[:2]
        lookup(store, queries, 1)
        assert indexed(store) == 2 * THRESHOLD
        with psycopg.connect(postgres_database) as slow:
            slow.execute("UPDATE facts SET status = 'retracted' WHERE id = %s", (facts[0].id,))
            world.revise(store, facts[1:2], status=FactStatus.RETRACTED)  # B, committed
            world.live.discard(facts[0].id)  # A's, once it commits
            got = lookup(store, queries, 1)
            assert got[0][0].fact_id == facts[0].id  # A has not committed yet
            assert got[1][0].fact_id != facts[1].id
        same(lookup(store, queries, 1), world.expected(queries, 1))  # A committed


def test_past_the_memory_budget_the_least_recently_searched_index_goes(
    open_store: Callable[[], Store],
) -> None:
    store, world, rng = open_store(), World(), np.random.default_rng(6)
    store._vectors.max_vectors = 3 * THRESHOLD  # room for one subject's index, not two
    mine = unit_rows(rng, 2 * THRESHOLD)
    world.create(store, mine)
    world.create(store, unit_rows(rng, 2 * THRESHOLD), subject="bob")
    bob = RecallScope(PROJECT, "bob", MODEL)
    bob_key = (VectorScope(PROJECT, "bob", MODEL, True, None), DIM)
    lookup(store, mine[:2], 3)
    assert indexed(store) == 2 * THRESHOLD
    store.recall_nearest(bob, mine[0], 3)
    store._vectors.wait_for_builds()
    assert set(store._vectors._scopes) == {bob_key}  # mine went, bob's is in
    same(lookup(store, mine[:2], 3), world.expected(mine[:2], 3))  # still answered, and rebuilt
    assert indexed(store) == 2 * THRESHOLD
    assert set(store._vectors._scopes) == {KEY}


@pytest.mark.parametrize("built", [False, True], ids=["server or exact", "index"])
def test_a_question_still_embedding_is_asked_for_once(
    open_store: Callable[[], Store], built: bool
) -> None:
    store, other, world = open_store(), open_store(), World()
    rng = np.random.default_rng(7)
    matrix = unit_rows(rng, 2 * THRESHOLD)
    facts = world.create(store, matrix)
    if built:
        lookup(store, matrix[:1], 1)
        assert indexed(store) == 2 * THRESHOLD
    world.revise(other, facts[:1], status=FactStatus.RETRACTED)
    asked: list[int] = []

    def question() -> Matrix:
        asked.append(1)
        return matrix[:1]

    assert store.recall_nearest(SCOPE, question, 0) == [] and asked == []
    got = store.recall_nearest(SCOPE, question, 3)
    assert asked == [1]
    same([got], world.expected(matrix[:1], 3))


def test_searches_from_many_threads_while_another_store_writes(
    open_store: Callable[[], Store],
) -> None:
    """Every lookup sees at least what was committed before it began (a retired fact never
    comes back once its retirement is committed), whichever thread catches the index up."""
    store, other, world = open_store(), open_store(), World()
    rng = np.random.default_rng(8)
    matrix = unit_rows(rng, 2 * THRESHOLD)
    facts = world.create(store, matrix)
    lookup(store, matrix[:1], 1)
    assert indexed(store) == 2 * THRESHOLD
    retired: set[str] = set()  # committed before the lookups that read it began
    failures: list[BaseException] = []
    done = threading.Event()

    def search(seed: int) -> None:
        picks = np.random.default_rng(seed)
        try:
            while not done.is_set():
                gone = set(retired)
                i = int(picks.integers(0, len(matrix)))
                got = store.recall_nearest(SCOPE, matrix[i], 3)
                assert gone.isdisjoint(n.fact_id for n in got)
        except BaseException as exc:  # reported by the main thread
            failures.append(exc)

    threads = [threading.Thread(target=search, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    try:
        for batch in range(10):
            chosen = facts[batch * 10 : batch * 10 + 10]
            world.revise(other, chosen, status=FactStatus.RETRACTED)
            retired.update(f.id for f in chosen)
    finally:
        done.set()
        for t in threads:
            t.join(timeout=60)
    assert failures == []
    same(lookup(store, matrix[:20], 3), world.expected(matrix[:20], 3))
