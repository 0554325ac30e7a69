"""In-memory ANN indexes over a store's vectors, kept current from the store's change log.

Both stores keep, per process, an index of the vectors of a busy scope (one subject's, or a
whole project's, of one embedder and one dimension; `VectorScope`): exact below
`flat_index.FLAT_MAX_VECTORS` vectors (`FlatIndex`, one matrix product), an HNSW graph from
there (`AnnIndex`; a flat index that grows to twice that is replaced by a graph built in the
background). Reading the vectors back for each lookup, or asking the database for them,
costs more than the lookup:

- SQLite has no vector index of its own. Below `INDEX_MIN_VECTORS` a lookup reads the scope's
  rows and scores them with numpy; the first that reads at least that many starts building an
  index (`sqlite_vectors`). Identity matching and search both use it.
- PostgreSQL has HNSW (pgvector), but a search's vector arm through it costs 3-4 ms at 10,000
  facts of one subject on a local server: the plan, the index walk and a heap fetch per
  candidate to filter by subject and status (bench/search.py, `--phases`). A search outside
  a transaction is answered from an index here once one is built, in the background, on a
  connection of its own; until then, and for every other lookup, the server answers.

Every process and thread may write the same database, so an index is only a cache. Triggers
log every fact whose vector may have entered or left a scope (a vector stored, a fact's
status or kind changed, a scope erased) in `vector_changes`, and before each lookup the index
reads what was logged after its mark and re-reads those facts: a live one is added, anything
else removed. A retired fact is therefore never returned, and a fact made live anywhere is
found by the next lookup. What a mark is differs:

- SQLite commits one writer at a time, so the log's `seq` grows in commit order: the mark is
  the last `seq` read.
- PostgreSQL hands out sequence values before commit, so a smaller one may commit after a
  larger one was read. Its log records the writer's transaction id (`xid8`) instead, and the
  mark is the oldest transaction still running when the changes were read (the snapshot's
  xmin): everything older had ended, so was read if it committed; the next read starts from
  there, reading again what committed since (re-reading a fact is harmless, its state is read
  afresh). A transaction left open for long holds the mark back and makes each read longer;
  it never makes one miss a change.

The log keeps its newest `sql_store.VECTOR_LOG_KEEP` rows (each store prunes it as it
writes), and records how far it was pruned. An index whose mark is behind that cannot know
what it missed: it is dropped, the lookup is answered as if there were none, and the scope's
index is built again. PostgreSQL never prunes past the oldest transaction still running, so
a mark read after a prune is never behind it.

A lookup inside a transaction that has written but not committed sees its own writes, which
may still be rolled back (a dry run is one such transaction): they are searched as an overlay
on the index and never folded into it. (PostgreSQL's lookups inside a transaction go to the
server instead.)
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from distill.adapters.store import flat_index
from distill.adapters.store.ann_index import AnnIndex
from distill.adapters.store.flat_index import FlatIndex
from distill.ports import Neighbour

log = logging.getLogger(__name__)

# Live vectors of one scope from which an index replaces reading them (SQLite) or asking the
# server (PostgreSQL). SQLite's exact search reads every vector of the subject on each lookup:
# 9-24 ms at 1,000 vectors and 110 ms at 2,000 on a busy 2-core machine, against 0.3-0.5 ms
# from the index (bench/lookup.py). Below this, an index would cost memory (~2 KB a vector)
# for little.
INDEX_MIN_VECTORS = 1_000
# Vectors all of a process's indexes may hold together: about 2 KB each (the vector, and the
# graph's links above FLAT_MAX_VECTORS), so about 500 MB. Once a new index is in and all hold
# more, the least recently searched go (built again if searched again). A worker whose passes
# walk many busy subjects would otherwise keep an index of each.
MAX_CACHED_VECTORS = 250_000
# How long a scope found too small for an index is left to the server before it is counted
# again (PostgreSQL, where counting means reading its vectors on a connection of its own).
SMALL_RECHECK_S = 60.0
# Reads a catch-up makes outside the lock before it reads under it (another thread folded
# first each time): two searches of one scope at once need one more, rarely two.
CATCH_UP_TRIES = 3

Matrix = npt.NDArray[np.float32]
Mark = Any  # a point in the change log: an int (SQLite's seq) or a text xid8 (PostgreSQL's)
Changes = Mapping[str, Matrix | None]  # fact id -> its vector if the scope searches it now
# What was logged after a mark (None: the log was pruned past it), and the new mark.
ChangesSince = Callable[[Mark], tuple[Changes | None, Mark]]
Loaded = tuple[list[str], Matrix, Mark]  # a scope's ids and vectors, and the mark read before


@dataclass(frozen=True)
class VectorScope:
    """Which vectors a lookup searches: those of one subject (or, for recall, of the whole
    project when `subject` is None) made by one model, of active state facts (`recall`
    False) or of active facts of the `kinds` (None: every kind)."""

    project: str
    subject: str | None
    model_id: str
    recall: bool = False
    kinds: tuple[str, ...] | None = None

    @property
    def queries(self) -> tuple[str, str]:
        """The named queries that read every vector of the scope, and those changed since."""
        if self.recall:
            return "active_recall_vectors", "changed_recall_vectors"
        return "active_state_vectors", "changed_vectors"


ScopeKey = tuple[VectorScope, int]  # the scope, and the vectors' dimension


@dataclass
class _Scope:
    index: FlatIndex | AnnIndex
    mark: Mark  # the change log read up to here
    used: float = 0.0  # when it last answered (monotonic)


def _given(loaded: Loaded) -> Loaded:
    return loaded


def _index(dim: int, ids: list[str], matrix: Matrix) -> FlatIndex | AnnIndex:
    """Exact below `flat_index.FLAT_MAX_VECTORS` vectors, the HNSW graph from there."""
    index = FlatIndex(dim) if len(ids) < flat_index.FLAT_MAX_VECTORS else AnnIndex(dim)
    index.add(ids, matrix)
    return index


class VectorCache:
    """The in-memory indexes of one store, each caught up from the change log before it
    answers."""

    def __init__(self, min_vectors: int | None = None, max_vectors: int | None = None) -> None:
        self.min_vectors = INDEX_MIN_VECTORS if min_vectors is None else min_vectors
        self.max_vectors = MAX_CACHED_VECTORS if max_vectors is None else max_vectors
        self._scopes: dict[ScopeKey, _Scope] = {}
        self._building: set[ScopeKey] = set()  # being built, or failed to build
        self._small: dict[ScopeKey, float] = {}  # found too small, at this monotonic time
        self._builders: list[tuple[threading.Thread, threading.Event]] = []
        self._closed = False
        self._lock = threading.Lock()  # an index is not safe to search while it changes

    def lookup(
        self,
        key: ScopeKey,
        queries: Matrix,
        k: int,
        changes_since: ChangesSince | None = None,
        uncommitted: bool = False,
    ) -> list[list[Neighbour]] | None:
        """For each row of `queries`, the `k` nearest facts of the scope, from its index
        brought up to date with `changes_since` (None: as `catch_up` left it); None when the
        scope has no index (yet).

        `uncommitted`: the caller's transaction has written, and may still roll back.
        """
        with self._lock:
            scope = self._scopes.get(key)
            if scope is None:
                return None
            scope.used = time.monotonic()
            if changes_since is None:
                return scope.index.nearest(queries, k)
            changed, mark = changes_since(scope.mark)
            if changed is None:  # the log was pruned past the mark: built again, from the vectors
                del self._scopes[key]
                return None
            if uncommitted:
                return scope.index.nearest(queries, k, overlay=changed)
            outgrown = self._fold(key, scope, changed, mark)
            found = scope.index.nearest(queries, k)
        if outgrown is not None:
            self.start_build(key, functools.partial(_given, outgrown), replace=True)
        return found

    def catch_up(
        self,
        scope: VectorScope,
        changes_for: Callable[[ScopeKey, Mark], tuple[Changes | None, Mark]],
    ) -> None:
        """Bring the scope's indexes (one a dimension; none if not built) up to date with
        what `changes_for(key, mark)` reads, before a `lookup` without `changes_since`:
        every change committed before this call is in the index when it returns.

        The read runs outside the lock, so that other threads' searches do not wait on a
        round trip to the server. A read is folded only into the index it was read for, from
        the mark it was read from; if another thread folded first, it is read again from the
        new mark (after `CATCH_UP_TRIES`, under the lock).
        """
        with self._lock:
            keys = [key for key in self._scopes if key[0] == scope]
        for key in keys:
            outgrown = self._catch_up(key, functools.partial(changes_for, key))
            if outgrown is not None:
                self.start_build(key, functools.partial(_given, outgrown), replace=True)

    def _catch_up(self, key: ScopeKey, changes_since: ChangesSince) -> Loaded | None:
        for _ in range(CATCH_UP_TRIES):
            with self._lock:
                known = self._scopes.get(key)
                if known is None:
                    return None
                since = known.mark
            changed, mark = changes_since(since)
            with self._lock:
                if self._scopes.get(key) is known and known.mark == since:
                    return self._fold(key, known, changed, mark)
        with self._lock:  # others kept folding first: read while they wait
            known = self._scopes.get(key)
            return None if known is None else self._fold(key, known, *changes_since(known.mark))

    def _fold(
        self, key: ScopeKey, scope: _Scope, changed: Changes | None, mark: Mark
    ) -> Loaded | None:
        """Fold committed changes into a scope's index (the lock held). Returns what a graph
        that takes over from a flat index that outgrew it is built from, when one should be.
        No changes (None): the log was pruned past the index's mark, and the index goes (the
        next lookup that reads the scope builds it again)."""
        if changed is None:
            self._scopes.pop(key, None)
            return None
        if changed:
            scope.index.remove([fact_id for fact_id, v in changed.items() if v is None])
            live = {fact_id: v for fact_id, v in sorted(changed.items()) if v is not None}
            if live:
                scope.index.add(list(live), np.stack(list(live.values())))
        scope.mark = mark
        grown = len(scope.index) >= 2 * flat_index.FLAT_MAX_VECTORS
        if grown and isinstance(scope.index, FlatIndex) and key not in self._building:
            return (*scope.index.items(), mark)
        return None

    def wanted(self, key: ScopeKey) -> bool:
        """Whether an index of the scope is neither built, nor being built, nor recently
        found unneeded."""
        with self._lock:
            if key in self._scopes or key in self._building or self._closed:
                return False
            since = self._small.get(key)
            return since is None or time.monotonic() - since >= SMALL_RECHECK_S

    def start_build(
        self, key: ScopeKey, load: Callable[[], Loaded | None], replace: bool = False
    ) -> None:
        """Build the scope's index in the background from what `load` reads (there too):
        its ids and vectors, and the mark of the change log read before them, from which
        lookups catch up once the index is in. `load` returns None when the scope has fewer
        than `min_vectors`: it is left alone for `SMALL_RECHECK_S`. `replace`: the scope has
        an index, which answers until this one is ready."""
        loaded = threading.Event()
        with self._lock:
            if key in self._building or (key in self._scopes) != replace or self._closed:
                return
            self._building.add(key)
            builder = threading.Thread(
                target=self._build,
                args=(key, load, loaded),
                name="distill-ann",
                daemon=True,
            )
            self._builders = [b for b in self._builders if b[0].is_alive()] + [(builder, loaded)]
        builder.start()

    def wait_for_builds(self) -> None:
        """Return once every index being built is ready (for tests and benchmarks)."""
        with self._lock:
            builders = [thread for thread, _ in self._builders]
        for builder in builders:
            builder.join()

    def close(self) -> None:
        """Drop every index. A build still reading from the database is waited for (it
        holds a connection of its own); one building is discarded when it ends."""
        with self._lock:
            self._closed = True
            self._scopes.clear()
            reading = [thread for thread, loaded in self._builders if not loaded.is_set()]
        for builder in reading:
            builder.join()

    def _build(
        self, key: ScopeKey, load: Callable[[], Loaded | None], loaded: threading.Event
    ) -> None:
        try:
            try:
                found = load()
            finally:
                loaded.set()
            if found is None:
                with self._lock:
                    self._building.discard(key)
                    self._small[key] = time.monotonic()
                return
            ids, matrix, mark = found
            index = _index(key[1], ids, matrix)
        except Exception:  # lookups go on without it, and stay correct
            log.exception("could not build the vector index of %s", key[0])
            return
        with self._lock:
            self._building.discard(key)
            self._small.pop(key, None)
            if not self._closed:
                self._scopes[key] = _Scope(index, mark, time.monotonic())
                self._evict(keep=key)

    def _evict(self, keep: ScopeKey) -> None:
        """Drop the least recently searched indexes while all hold more than `max_vectors`
        (never `keep`, just built). Called with the lock held."""
        held = sum(len(s.index) for s in self._scopes.values())
        for key in sorted(self._scopes, key=lambda k: self._scopes[k].used):
            if held <= self.max_vectors:
                return
            if key != keep:
                held -= len(self._scopes.pop(key).index)
