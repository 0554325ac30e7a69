"""`Memory.reembed`: after a switch of embedders, the facts stored before are embedded again
by the new model, once, and found by meaning under it."""

from __future__ import annotations

import numpy as np

from distill.adapters.embed.hashing import HashingEmbedder
from tests.conftest import MemoryFactory
from tests.factories import at

BIKES = {"predicate": "bike_count", "value": {"count": 3}}


def test_facts_stored_under_another_embedder_are_embedded_again_once(
    make_memory: MemoryFactory,
) -> None:
    before = make_memory("shared.db")
    before.add_event(subject="alice", text="I have 3 bikes", occurred_at=at(0), claims=[BIKES])
    before.consolidate()
    [fact] = before.facts(subject="alice")

    after = make_memory("shared.db", embedder=HashingEmbedder(128), max_distance=0.12)
    model = after.embedder.model_id
    query = after.engine.embed(["bike count: 3"])["bike count: 3"]
    assert after.store.nearest_facts("default", "alice", np.stack([query]), 3, model) == [[]]

    assert after.reembed() == 1
    assert after.reembed() == 0  # nothing left to embed again

    [found] = after.store.nearest_facts("default", "alice", np.stack([query]), 3, model)
    assert [n.fact_id for n in found] == [fact.id]
    assert found[0].distance < 1e-6
    assert after.reembed(project="another") == 0
