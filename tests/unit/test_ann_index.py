"""The ANN index behind SqliteStore.nearest_facts: it answers what exact search answers.

`AnnIndex` alone is compared with `exact_nearest` on random data; through the store, the
index is made to take over at a small size, and every lookup is compared with exact search
over the facts that are active at that moment, while facts are added, retired, held and
reactivated by this store, by another thread, by another store on the same file and by
another process, and inside a transaction that is then rolled back.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from distill.adapters.store import flat_index, vector_cache
from distill.adapters.store.ann_index import AnnIndex
from distill.adapters.store.flat_index import FlatIndex
from distill.adapters.store.sqlite import SqliteStore
from distill.adapters.store.vector_cache import VectorScope
from distill.adapters.store.vector_search import exact_nearest
from distill.core.models import Fact, FactKind, FactStatus
from distill.core.plan import CreateFact, Plan, ReviseFact
from distill.ports import Neighbour
from tests.factories import PROJECT, SUBJECT, make_fact

MODEL = "test-model"
DIM = 24
THRESHOLD = 200  # the index takes over from this many active vectors in these tests
Matrix = npt.NDArray[np.float32]


def unit_rows(rng: np.random.Generator, n: int, dim: int = DIM) -> Matrix:
    rows = rng.standard_normal((n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def near(rng: np.random.Generator, rows: Matrix, noise: float = 0.1) -> Matrix:
    """Queries close to the given rows (an identity looked up again), and some anywhere."""
    moved = rows + noise * unit_rows(rng, len(rows), rows.shape[1])
    return np.vstack([moved / np.linalg.norm(moved, axis=1, keepdims=True), unit_rows(rng, 5)])


def same(got: list[list[Neighbour]], want: list[list[Neighbour]]) -> None:
    assert [[n.fact_id for n in hood] for hood in got] == [
        [n.fact_id for n in hood] for hood in want
    ]
    for g, w in zip(got, want, strict=True):
        assert [n.distance for n in g] == pytest.approx([n.distance for n in w], abs=1e-6)


# -- the index alone -------------------------------------------------------------------------------
Index = type[AnnIndex] | type[FlatIndex]


@pytest.fixture(params=[AnnIndex, FlatIndex], ids=["graph", "flat"])
def kind(request: pytest.FixtureRequest) -> Index:
    """Each test of the index alone runs on both kinds: they must answer alike."""
    return request.param  # type: ignore[no-any-return]


@pytest.mark.parametrize("k", range(1, 11))
def test_the_index_answers_what_exact_search_answers(kind: Index, k: int) -> None:
    rng = np.random.default_rng(k)
    matrix = unit_rows(rng, 2_000)
    ids = [f"f{i:05d}" for i in range(len(matrix))]
    index = kind(DIM)
    index.add(ids, matrix)
    queries = near(rng, matrix[rng.integers(0, len(matrix), 20)])
    same(index.nearest(queries, k), exact_nearest(ids, matrix, queries, k))


def test_ties_are_broken_by_id_as_exact_search_does(kind: Index) -> None:
    rng = np.random.default_rng(0)
    matrix = unit_rows(rng, 500)
    twins = np.vstack([matrix, matrix[:3]])  # the same vector under a second, smaller id
    ids = [f"b{i:04d}" for i in range(500)] + ["a0000", "a0001", "a0002"]
    index = kind(DIM)
    index.add(ids, twins)
    got = index.nearest(matrix[:3], 2)
    assert [[n.fact_id for n in hood] for hood in got] == [
        ["a0000", "b0000"],
        ["a0001", "b0001"],
        ["a0002", "b0002"],
    ]
    same(got, exact_nearest(ids, twins, matrix[:3], 2))


def test_removed_ids_are_never_returned_and_the_graph_is_rebuilt_when_mostly_removed(
    kind: Index,
) -> None:
    rng = np.random.default_rng(1)
    matrix = unit_rows(rng, 1_000)
    ids = [f"f{i:04d}" for i in range(1_000)]
    index = kind(DIM)
    index.add(ids, matrix)
    gone = ids[:700]  # past half: the graph is rebuilt from the 300 left
    index.remove(gone)
    index.remove(["never-indexed"])
    assert len(index) == 300 and "f0000" not in index and "f0999" in index
    queries = near(rng, matrix[:20])  # close to removed vectors
    same(index.nearest(queries, 10), exact_nearest(ids[700:], matrix[700:], queries, 10))


def test_an_overlay_hides_and_adds_without_changing_the_index(kind: Index) -> None:
    rng = np.random.default_rng(2)
    matrix = unit_rows(rng, 600)
    ids = [f"f{i:04d}" for i in range(600)]
    index = kind(DIM)
    index.add(ids, matrix)
    queries = matrix[:5]
    newcomer = matrix[5] * 0.999 + matrix[6] * 0.001
    newcomer /= np.linalg.norm(newcomer)
    overlay: dict[str, Matrix | None] = {fact_id: None for fact_id in ids[:5]}
    overlay["new"] = newcomer
    kept_ids = [*ids[5:], "new"]
    kept = np.vstack([matrix[5:], newcomer])
    same(index.nearest(queries, 3, overlay), exact_nearest(kept_ids, kept, queries, 3))
    same(index.nearest(queries, 3), exact_nearest(ids, matrix, queries, 3))  # unchanged


def test_small_and_empty_indexes(kind: Index) -> None:
    index = kind(DIM)
    assert index.nearest(unit_rows(np.random.default_rng(3), 2), 5) == [[], []]
    index.add(["only"], unit_rows(np.random.default_rng(4), 1))
    assert [[n.fact_id for n in hood] for hood in index.nearest(np.eye(DIM)[:1], 5)] == [["only"]]


def test_a_flat_index_grows_reuses_nothing_stale_and_compacts() -> None:
    rng = np.random.default_rng(3)
    matrix = unit_rows(rng, 300)
    ids = [f"f{i:04d}" for i in range(300)]
    index = FlatIndex(DIM)
    for start in range(0, 300, 70):  # past its first capacity, a batch at a time
        index.add(ids[start : start + 70], matrix[start : start + 70])
    index.add(ids[:1], unit_rows(rng, 1))  # already indexed: keeps its vector
    index.remove(ids[:250])  # most rows masked: compacted
    index.add(["back"], matrix[:1])  # a removed vector under a new id
    queries = near(rng, matrix[:10])
    kept_ids, kept = [*ids[250:], "back"], np.vstack([matrix[250:], matrix[:1]])
    same(index.nearest(queries, 7), exact_nearest(kept_ids, kept, queries, 7))
    assert len(index) == 51 and "f0000" not in index and "back" in index
    assert index.items()[0] == kept_ids


# -- through the store -----------------------------------------------------------------------------
@pytest.fixture(params=["flat", "graph"])
def small_threshold(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    """The index takes over at `THRESHOLD` vectors, as a flat index or as a graph."""
    monkeypatch.setattr(vector_cache, "INDEX_MIN_VECTORS", THRESHOLD)
    flat_max = 10**9 if request.param == "flat" else 0
    monkeypatch.setattr(flat_index, "FLAT_MAX_VECTORS", flat_max)


@pytest.fixture
def store(tmp_path: Path, small_threshold: None) -> Iterator[SqliteStore]:
    with SqliteStore(tmp_path / "ann.db") as opened:
        yield opened


def create(store: SqliteStore, matrix: Matrix, subject: str = SUBJECT) -> list[Fact]:
    facts = [
        make_fact(f"attribute_{i}", {"n": i}, subject=subject, status=FactStatus.ACTIVE)
        for i in range(len(matrix))
    ]
    actions = [
        CreateFact(fact, "new", vector=vector, vector_model=MODEL)
        for fact, vector in zip(facts, matrix, strict=True)
    ]
    store.apply(Plan(actions=list(actions)), None, [])
    return facts


def revise(store: SqliteStore, facts: list[Fact], **changes: object) -> list[Fact]:
    after = [f.model_copy(update=changes) for f in facts]
    actions = [ReviseFact(b, a, "test", "test") for b, a in zip(facts, after, strict=True)]
    store.apply(Plan(actions=list(actions)), None, [])
    return after


def retire(store: SqliteStore, facts: list[Fact]) -> list[Fact]:
    return revise(store, facts, status=FactStatus.RETRACTED)


def expected(store: SqliteStore, queries: Matrix, k: int) -> list[list[Neighbour]]:
    """Exact search over what is active now, read past any index."""
    with store._tx(write=False) as db:
        found = db.execute(
            "SELECT v.fact_id, c.vector FROM fact_vectors AS v JOIN facts AS f"
            " ON f.id = v.fact_id JOIN embedding_cache AS c"
            " ON c.model_id = v.model_id AND c.text_hash = v.text_hash"
            " WHERE f.status = 'active' AND f.kind = 'state'"
            " AND v.subject = ? ORDER BY v.fact_id",
            (SUBJECT,),
        ).fetchall()
    ids = [store.codec.read_id(r["fact_id"]) for r in found]
    matrix = np.stack([np.frombuffer(r["vector"], dtype=np.float32) for r in found])
    return exact_nearest(ids, matrix, queries, k)


def lookup(store: SqliteStore, queries: Matrix, k: int) -> list[list[Neighbour]]:
    """The store's answer; then any index the lookup started building is made ready."""
    found = store.nearest_facts(PROJECT, SUBJECT, queries, k, MODEL)
    store._vectors.wait_for_builds()
    return found


def indexed(store: SqliteStore) -> int:
    """How many active vectors the store's index of the subject holds (0: none built)."""
    scope = store._vectors._scopes.get((VectorScope(PROJECT, SUBJECT, MODEL), DIM))
    return 0 if scope is None else len(scope.index)


def test_below_the_threshold_search_stays_exact_and_builds_no_index(store: SqliteStore) -> None:
    rng = np.random.default_rng(10)
    matrix = unit_rows(rng, THRESHOLD - 1)
    create(store, matrix)
    queries = near(rng, matrix[:10])
    same(lookup(store, queries, 5), expected(store, queries, 5))
    assert indexed(store) == 0


@pytest.mark.parametrize("k", [1, 3, 10])
def test_above_the_threshold_the_index_answers_what_exact_search_answers(
    store: SqliteStore, k: int
) -> None:
    rng = np.random.default_rng(11 + k)
    matrix = unit_rows(rng, 3 * THRESHOLD)
    create(store, matrix)
    create(store, unit_rows(rng, 50), subject="bob")  # another subject is never searched
    queries = near(rng, matrix[:15])
    first = lookup(store, queries, k)  # exact, and builds the index
    assert indexed(store) == 3 * THRESHOLD
    same(first, expected(store, queries, k))
    same(lookup(store, queries, k), first)  # now from the index


def test_retired_facts_are_never_returned_and_new_ones_are(store: SqliteStore) -> None:
    rng = np.random.default_rng(20)
    matrix = unit_rows(rng, 2 * THRESHOLD)
    facts = create(store, matrix)
    queries = near(rng, matrix[:10], noise=0.01)
    lookup(store, queries, 5)
    assert indexed(store) == 2 * THRESHOLD
    nearest = {n.fact_id for hood in lookup(store, queries, 5) for n in hood}
    retire(store, [f for f in facts if f.id in nearest])
    got = lookup(store, queries, 5)
    assert nearest.isdisjoint(n.fact_id for hood in got for n in hood)
    same(got, expected(store, queries, 5))
    added = create(store, near(rng, matrix[:10], noise=0.001)[:10])  # closer than anything
    got = lookup(store, queries, 1)
    assert [hood[0].fact_id for hood in got[:10]] == [f.id for f in added]
    same(got, expected(store, queries, 1))
    assert indexed(store) == 2 * THRESHOLD - len(nearest) + 10


def test_a_fact_held_then_reactivated_or_turned_into_an_event_follows(store: SqliteStore) -> None:
    rng = np.random.default_rng(30)
    matrix = unit_rows(rng, THRESHOLD)
    facts = create(store, matrix)
    queries = matrix[:2]
    lookup(store, queries, 1)
    held = revise(store, facts[:2], status=FactStatus.CANDIDATE)
    assert {hood[0].fact_id for hood in lookup(store, queries, 1)}.isdisjoint(f.id for f in held)
    revise(store, held[:1], status=FactStatus.ACTIVE)
    revise(store, held[1:], status=FactStatus.ACTIVE, kind=FactKind.EVENT)
    got = lookup(store, queries, 1)
    assert got[0][0].fact_id == facts[0].id
    assert got[1][0].fact_id != facts[1].id
    same(got, expected(store, queries, 1))


def test_another_store_on_the_same_file_sees_every_change(
    store: SqliteStore, tmp_path: Path
) -> None:
    """Two stores share no memory, like two processes: only the file connects them."""
    rng = np.random.default_rng(40)
    matrix = unit_rows(rng, 2 * THRESHOLD)
    facts = create(store, matrix)
    queries = near(rng, matrix[:10], noise=0.01)
    with SqliteStore(tmp_path / "ann.db") as other:
        lookup(other, queries, 3)  # builds its own index
        retire(store, facts[:10])
        create(store, near(rng, matrix[10:20], noise=0.001)[:10])
        got = lookup(other, queries, 3)
        same(got, expected(store, queries, 3))
        assert {f.id for f in facts[:10]}.isdisjoint(n.fact_id for hood in got for n in hood)


def test_another_process_writing_the_file_is_seen(store: SqliteStore, tmp_path: Path) -> None:
    rng = np.random.default_rng(50)
    matrix = unit_rows(rng, 2 * THRESHOLD)
    facts = create(store, matrix)
    queries = matrix[:3]
    lookup(store, queries, 1)
    assert indexed(store) == 2 * THRESHOLD
    script = (
        "import sqlite3, sys\n"
        "db = sqlite3.connect(sys.argv[1])\n"
        "with db:\n"
        "    fact_id = bytes.fromhex(sys.argv[2])  # as SQLite stores distill's ids\n"
        "    db.execute(\"UPDATE facts SET status = 'retracted' WHERE id = ?\", (fact_id,))\n"
    )
    path = str(tmp_path / "ann.db")
    subprocess.run([sys.executable, "-c", script, path, facts[0].id], check=True, timeout=60)
    got = lookup(store, queries, 1)
    assert got[0][0].fact_id != facts[0].id
    same(got, expected(store, queries, 1))


def test_a_write_from_another_thread_is_seen(store: SqliteStore) -> None:
    rng = np.random.default_rng(60)
    matrix = unit_rows(rng, THRESHOLD)
    facts = create(store, matrix)
    lookup(store, matrix[:1], 1)
    writer = threading.Thread(target=retire, args=(store, facts[:1]))
    writer.start()
    writer.join()
    got = lookup(store, matrix[:1], 1)
    assert got[0][0].fact_id != facts[0].id
    same(got, expected(store, matrix[:1], 1))


def test_uncommitted_writes_are_searched_but_not_kept_after_a_rollback(
    store: SqliteStore,
) -> None:
    rng = np.random.default_rng(70)
    matrix = unit_rows(rng, 2 * THRESHOLD)
    facts = create(store, matrix)
    fresh = near(rng, matrix[2:4], noise=0.001)[:2]
    queries = np.vstack([matrix[:2], fresh])
    before = lookup(store, queries, 2)
    assert indexed(store) == 2 * THRESHOLD

    class Rollback(Exception):
        pass

    with pytest.raises(Rollback), store.serialised(PROJECT, SUBJECT):
        retire(store, facts[:2])
        added = create(store, fresh)
        inside = lookup(store, queries, 2)
        assert {f.id for f in facts[:2]}.isdisjoint(n.fact_id for h in inside for n in h)
        assert [hood[0].fact_id for hood in inside[2:]] == [f.id for f in added]
        same(inside, expected(store, queries, 2))
        raise Rollback
    same(lookup(store, queries, 2), before)
    assert indexed(store) == 2 * THRESHOLD


def test_writes_made_while_the_index_is_built_are_caught_up(
    store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The build runs in the background from the rows read by the first lookup; lookups stay
    exact meanwhile, and the finished index catches up with what was written since."""
    release = threading.Event()

    build = vector_cache._index

    def slow_build(dim: int, ids: list[str], matrix: Matrix) -> AnnIndex | FlatIndex:
        release.wait(timeout=30)
        return build(dim, ids, matrix)

    monkeypatch.setattr(vector_cache, "_index", slow_build)
    rng = np.random.default_rng(80)
    matrix = unit_rows(rng, 2 * THRESHOLD)
    facts = create(store, matrix)
    fresh = near(rng, matrix[1:2], noise=0.001)[:1]
    queries = np.vstack([matrix[:1], fresh])
    store.nearest_facts(PROJECT, SUBJECT, queries, 2, MODEL)  # starts the build
    retire(store, facts[:1])
    added = create(store, fresh)
    during = store.nearest_facts(PROJECT, SUBJECT, queries, 2, MODEL)
    assert indexed(store) == 0
    same(during, expected(store, queries, 2))
    release.set()
    store._vectors.wait_for_builds()
    assert indexed(store) == 2 * THRESHOLD  # as read when the build started
    after = lookup(store, queries, 2)
    assert indexed(store) == 2 * THRESHOLD  # one retired, one added
    assert after[1][0].fact_id == added[0].id
    same(after, expected(store, queries, 2))


def test_a_flat_index_that_outgrows_its_size_is_replaced_by_a_graph(
    store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(flat_index, "FLAT_MAX_VECTORS", 2 * THRESHOLD)
    rng = np.random.default_rng(90)
    matrix = unit_rows(rng, 4 * THRESHOLD)
    facts = create(store, matrix)
    held = revise(store, facts[THRESHOLD:], status=FactStatus.CANDIDATE)
    queries = near(rng, matrix[:10])
    lookup(store, queries, 3)

    def kind() -> type:
        return type(store._vectors._scopes[(VectorScope(PROJECT, SUBJECT, MODEL), DIM)].index)

    assert kind() is FlatIndex
    revise(store, held, status=FactStatus.ACTIVE)  # four times the threshold: twice the maximum
    same(lookup(store, queries, 3), expected(store, queries, 3))  # flat; the graph is built
    assert kind() is AnnIndex and indexed(store) == 4 * THRESHOLD
    same(lookup(store, queries, 3), expected(store, queries, 3))
