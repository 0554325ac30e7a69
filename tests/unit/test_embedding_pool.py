"""`EmbeddingPool`: a search's question is embedded on another thread while its caller goes
on reading; with no thread free it is embedded by the caller; errors reach the caller; the
threads end with the Memory."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import pytest

from distill import Memory
from distill.adapters.embed.hashing import HashingEmbedder
from distill.embedding_pool import EmbeddingPool
from distill.errors import ProviderError
from distill.ports import Vector

WAIT_S = 5.0  # seconds a test waits for a thread before it fails instead of hanging


class Gated:
    """An embedder that waits for `gate` before it answers, and records on which thread."""

    model_id, max_batch, dimension = "gated", 8, 4

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.started = threading.Event()
        self.threads: list[int] = []

    def embed_batch(self, texts: Sequence[str]) -> Vector:
        self.threads.append(threading.get_ident())
        self.started.set()
        if not self.gate.wait(WAIT_S):
            raise AssertionError("the gate was never opened")
        return np.ones((len(texts), self.dimension), dtype=np.float32) / 2


class Failing:
    model_id, max_batch, dimension = "failing", 8, 4

    def embed_batch(self, texts: Sequence[str]) -> Vector:
        raise ProviderError("the model server answered 503")


def test_the_question_is_embedded_while_the_caller_goes_on() -> None:
    pool, embedder = EmbeddingPool(), Gated()
    try:
        vector = pool.start(embedder, "where does she live?")
        # The caller is free while the embedding waits: were it done here, this would block.
        assert embedder.started.wait(WAIT_S)
        embedder.gate.set()
        assert vector().shape == (1, 4)
        assert embedder.threads != [threading.get_ident()]
    finally:
        embedder.gate.set()
        pool.close()


def test_with_every_thread_busy_the_caller_embeds_its_question_itself() -> None:
    pool, busy = EmbeddingPool(threads=1), Gated()
    try:
        first = pool.start(busy, "one")
        assert busy.started.wait(WAIT_S)
        other = HashingEmbedder(16)
        calls: list[int] = []
        original = other.embed_batch

        def recorded(texts: Sequence[str]) -> Vector:
            calls.append(threading.get_ident())
            return original(texts)

        other.embed_batch = recorded  # type: ignore[method-assign]
        second = pool.start(other, "two")
        assert first.beside and not second.beside
        assert np.array_equal(second(), HashingEmbedder(16).embed_batch(["two"]))
        assert calls == [threading.get_ident()]  # not queued behind the busy thread
        busy.gate.set()
        assert first().shape == (1, 4)
    finally:
        busy.gate.set()
        pool.close()


def test_an_embedder_that_holds_the_gil_embeds_on_the_callers_thread() -> None:
    pool, hashing = EmbeddingPool(), HashingEmbedder(16)
    calls: list[int] = []
    original = hashing.embed_batch

    def recorded(texts: Sequence[str]) -> Vector:
        calls.append(threading.get_ident())
        return original(texts)

    hashing.embed_batch = recorded  # type: ignore[method-assign]
    try:
        assert pool.start(hashing, "q")().shape == (1, 16)
        assert calls == [threading.get_ident()]
    finally:
        pool.close()


def test_a_failed_embedding_raises_its_error_to_the_caller_and_frees_its_thread() -> None:
    pool = EmbeddingPool(threads=1)
    try:
        with pytest.raises(ProviderError, match="503"):
            pool.start(Failing(), "q")()
        embedder = Gated()
        embedder.gate.set()
        pool.start(embedder, "q")()
        assert embedder.threads != [threading.get_ident()]  # the one thread was free again
    finally:
        pool.close()


def test_close_waits_for_the_embedding_under_way_and_later_questions_embed_inline() -> None:
    pool, embedder = EmbeddingPool(), Gated()
    vector = pool.start(embedder, "q")
    assert embedder.started.wait(WAIT_S)
    closing = threading.Thread(target=pool.close)
    closing.start()
    closing.join(0.2)
    assert closing.is_alive()  # waiting for the embedding
    embedder.gate.set()
    closing.join(WAIT_S)
    assert not closing.is_alive()
    assert vector().shape == (1, 4)
    after = pool.start(HashingEmbedder(16), "q")()
    assert after.shape == (1, 16)
    pool.close()  # again: nothing to do


def test_a_memory_ends_its_search_threads_when_it_closes() -> None:
    def search_threads() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if t.name.startswith("distill-search-embed")]

    before = set(search_threads())
    mem = Memory(":memory:", embedder=HashingEmbedder(64))
    mem.embedder.holds_gil = False  # type: ignore[misc]  # as a model: embedded on the pool
    mem.add_event(subject="u1", claims=[{"text": "Caroline paints sunsets by the lake."}])
    mem.consolidate()
    assert mem.search("sunsets", subject="u1")
    assert set(search_threads()) - before
    mem.close()
    assert not set(search_threads()) - before


class Asking:
    """An embedder that embeds a waiting caller's question otherwise than a batch."""

    model_id, max_batch, dimension = "asking", 8, 4

    def __init__(self) -> None:
        self.asked: list[str] = []

    def embed_batch(self, texts: Sequence[str]) -> Vector:
        raise AssertionError("a question goes to embed_question")

    def embed_question(self, text: str) -> Vector:
        self.asked.append(text)
        return np.full((1, self.dimension), 0.5, dtype=np.float32)


@pytest.mark.parametrize("threads", [0, 2])  # in turn, and beside the reads
def test_a_question_goes_to_embed_question_where_the_embedder_has_it(threads: int) -> None:
    pool, embedder = EmbeddingPool(threads=threads), Asking()
    try:
        vector = pool.start(embedder, "where do I live?")()
    finally:
        pool.close()
    assert embedder.asked == ["where do I live?"]
    assert vector.shape == (1, 4)
