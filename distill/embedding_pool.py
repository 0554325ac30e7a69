"""Embedding a search's question while the store answers the search's other reads.

A search reads several things that do not need the question's vector (whether the subject
is unstable, the lexical arm, the subject's open conflict sets) and one that does (the
vector arm). With the default local model the embedding is the largest part of a search
(7 ms of 18 at p50 on PostgreSQL at 10,000 facts, BENCHMARKS.md "Search latency"), so it is
started on a thread of this pool first, and the reads run on the caller's thread meanwhile:
onnxruntime, the remote embedders' HTTP clients, sqlite3 and psycopg all release the GIL
while they work, so the two overlap.

Only the embedder runs here, never the store: a store's connections belong to the thread
that opened them (`adapters/store/connections.py`), and the reads stay on the caller's. The
embedder is already shared by a Memory's threads (the engine's), so it is made for this.

An embedder that computes in Python (`holds_gil = True`: the hashing embedder) embeds on
the caller's thread: beside the reads it would only take turns with them, and the hand-over
costs more than its embedding (0.15 ms at p50 on SQLite at 10,000 facts, where its
embedding takes 0.04 ms).

Bounded: when every thread is busy (many searches at once), the question is embedded on the
caller's thread, in turn, as it was before the pool: a search never queues behind others.
The threads start on the first search and end with the Memory (`close`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from distill.ports import Embedder, Vector

# Searches at once whose question is embedded beside their reads; more embed in turn.
# A few: on the 2-core machine of the benchmarks two embeddings already fill the cores, and
# the threads cost nothing until searches use them.
EMBEDDING_THREADS = 4


class Embedding:
    """A question's embedding: under way on the pool (`beside`), or made when asked."""

    def __init__(self, vector: Callable[[], Vector], beside: bool) -> None:
        self._vector = vector
        self.beside = beside  # whether it is being made while the caller goes on

    def __call__(self) -> Vector:
        """The vector (one row), waiting for it; raises what the embedder raised."""
        return self._vector()


class EmbeddingPool:
    """Threads that embed questions beside a search's reads. Closed with its Memory."""

    def __init__(self, threads: int = EMBEDDING_THREADS) -> None:
        self._threads = threads
        self._free = threading.BoundedSemaphore(threads)
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._closed = False

    def start(self, embedder: Embedder, question: str) -> Embedding:
        """Begin embedding `question` (one row); call the result for the vector. With no
        thread free, the embedding is made by that call, on the caller's thread (so too for
        an embedder that `holds_gil`)."""
        in_turn = Embedding(lambda: _embed_question(embedder, question), beside=False)
        if getattr(embedder, "holds_gil", False) or not self._free.acquire(blocking=False):
            return in_turn
        try:
            future = self._executor().submit(self._embed, embedder, question)
        except RuntimeError:  # closed, or the interpreter is shutting down
            self._free.release()
            return in_turn
        return Embedding(future.result, beside=True)

    def close(self) -> None:
        """Wait for the embeddings under way, then end the threads. Idempotent; a search
        after it embeds on its caller's thread."""
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._closed:
                raise RuntimeError("the embedding pool is closed")
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self._threads, "distill-search-embed")
            return self._pool

    def _embed(self, embedder: Embedder, question: str) -> Vector:
        try:
            return _embed_question(embedder, question)
        finally:
            self._free.release()


def _embed_question(embedder: Embedder, question: str) -> Vector:
    """The question's vector (one row), by the embedder's `embed_question` where it has one (an
    embedder that serves a waiting caller otherwise than a batch: the local model), else
    as a batch of one."""
    embed_question = getattr(embedder, "embed_question", None)
    if embed_question is not None:
        vector: Vector = embed_question(question)
        return vector
    return embedder.embed_batch([question])
