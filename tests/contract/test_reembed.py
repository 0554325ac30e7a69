"""Embedding facts again after a switch of embedders, on every backend: which facts need it,
and that their new vectors replace the old model's and are searched under the new one."""

from __future__ import annotations

import numpy as np

from distill.core.models import FactStatus
from distill.core.plan import CreateFact, Plan, ReviseFact
from distill.ports import IdentityVector, Store
from tests.factories import PROJECT, SUBJECT, T0, at, make_event, make_fact, unit_vector

OLD, NEW = "old-model", "new-model"


def seeded(store: Store) -> list[str]:
    """Three active state facts embedded by OLD, one retired, one memory with no vector (a
    fact stored before facts of every kind had a recall vector); the ids of the four active
    ones."""
    [(event, _)] = store.append_events([make_event()], T0)
    facts = [
        make_fact(predicate=f"p{i}", value={"n": i}, source_event_ids=(event.id,)) for i in range(4)
    ]
    actions = [
        CreateFact(f, "seed", vector=unit_vector(float(i + 1)), vector_model=OLD)
        for i, f in enumerate(facts)
    ]
    memory = make_fact(kind="memory", predicate=None, value=None, source_event_ids=(event.id,))
    actions.append(CreateFact(memory, "seed"))
    with store.serialised(PROJECT, SUBJECT):
        store.apply(Plan(actions=list(actions)), None, [])
        retired = facts[3].model_copy(update={"status": FactStatus.RETRACTED, "retired_at": at(1)})
        store.apply(Plan(actions=[ReviseFact(facts[3], retired, "retire", "test")]), None, [])
    return sorted([*(f.id for f in facts[:3]), memory.id])


def test_the_facts_another_model_embedded_are_the_ones_to_embed_again(store: Store) -> None:
    active = seeded(store)
    assert [f.id for f in store.facts_to_reembed(NEW, None, None, 10)] == active
    # Under OLD, only the memory, which has no vector at all.
    assert [f.kind.value for f in store.facts_to_reembed(OLD, None, None, 10)] == ["memory"]
    assert store.facts_to_reembed(NEW, "another project", None, 10) == []
    # Paged by id.
    first = store.facts_to_reembed(NEW, PROJECT, None, 2)
    rest = store.facts_to_reembed(NEW, PROJECT, first[-1].id, 2)
    assert [f.id for f in first + rest] == active


def test_new_vectors_replace_the_old_models_and_are_searched_under_the_new_one(
    store: Store,
) -> None:
    active = seeded(store)
    query = np.stack([unit_vector(1.0, dim=8)])
    assert store.nearest_facts(PROJECT, SUBJECT, query, 5, NEW) == [[]]

    fresh = [
        IdentityVector(fact_id, PROJECT, SUBJECT, f"hash-{i}", unit_vector(0.0, float(i + 1)))
        for i, fact_id in enumerate(active)
    ]
    store.replace_identity_vectors(NEW, fresh)

    assert store.facts_to_reembed(NEW, None, None, 10) == []
    states = {f.id for f in store.facts_by_ids(PROJECT, active) if f.kind.value == "state"}
    state = next(v for v in fresh if v.fact_id in states)
    [found] = store.nearest_facts(PROJECT, SUBJECT, np.stack([state.vector]), 5, NEW)
    assert {n.fact_id for n in found} == states  # identity matching: state facts only
    assert found[0].fact_id == state.fact_id and found[0].distance < 1e-6
    assert store.nearest_facts(PROJECT, SUBJECT, query, 5, OLD) == [[]]  # the old ones are gone
