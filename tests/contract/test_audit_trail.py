"""The audit trail on every store: entries store what changed, and read back whole.

An entry no longer copies the rows it points at (the created fact, the observation, the
conflict set): `Memory.history` and `Memory.audit` rebuild them from the rows as they are now
and the later entries. These tests pin that nothing is lost: the history replays every version
of a fact from its creation, and both readers give exactly what they gave when every entry
stored whole copies.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from distill import Memory
from distill.core import apply
from distill.core.audit_trail import expand
from distill.core.models import AuditEntry, Fact
from distill.core.plan import Action, describe_action
from tests.contract.life import a_life
from tests.unit.scenario_support import SUBJECT, every_fact


def test_history_replays_every_version_of_a_fact_from_its_creation(
    open_memory: Callable[[str], Memory],
    new_database: Callable[[str], str],
) -> None:
    mem = open_memory(new_database("life"))
    seen = a_life(mem)

    trail = [e for e in mem.history(seen[0].id).audit if e.fact_id == seen[0].id]
    create, *revisions = [e for e in trail if e.action.endswith("_fact")]
    assert create.action == "create_fact" and create.before is None and create.after
    state: dict[str, Any] = dict(create.after)
    replayed = [Fact.model_validate(state)]
    for revision in revisions:
        assert revision.before is not None and revision.after is not None
        assert {k: state[k] for k in revision.before} == revision.before  # what it replaced
        state.update(revision.after)
        replayed.append(Fact.model_validate(state))

    assert [r.action for r in revisions] == [
        "reinforce_fact",
        "reinforce_fact",
        "pin_fact",
        "pin_fact",
        "retire_fact",
    ]
    assert replayed == seen  # every version, field for field


def test_entries_store_what_changed_and_ids_not_copies_of_rows(
    open_memory: Callable[[str], Memory],
    new_database: Callable[[str], str],
) -> None:
    mem = open_memory(new_database("life"))
    seen = a_life(mem)

    stored = {e.action: e for e in mem.store.audit(mem_project(mem), SUBJECT, 1000)}
    trail = mem.store.audit_for(seen[0].project, seen[0].id)
    create = next(e for e in trail if e.action == "create_fact")
    assert (create.before, create.after) == (None, None)  # the fact row holds it
    reinforce = next(e for e in trail if e.action == "reinforce_fact")
    assert reinforce.after is not None and reinforce.before is not None
    assert "id" not in reinforce.after  # the entry's fact_id
    assert reinforce.after["source_event_ids"] == {"appended": [seen[1].source_event_ids[-1]]}
    assert "source_event_ids" not in reinforce.before
    assert reinforce.before["reinforcement_count"] == 0
    assert reinforce.after["reinforcement_count"] == 1
    observation = next(e for e in trail if e.action == "record_observation")
    assert observation.after is not None and set(observation.after) == {"id", "event_id"}
    opened = stored["open_conflict"]
    assert opened.after is not None and set(opened.after) == {"id"}
    revised = stored["revise_conflict"]
    assert revised.after is not None and "status" in revised.after
    assert "project" not in revised.after  # unchanged fields are left out


def mem_project(mem: Memory) -> str:
    return every_fact(mem)[0].project


def whole(action: Action) -> tuple[Any, Any]:
    """What an entry stored before: the action's whole description."""
    described = describe_action(action)
    return described.get("before"), described.get("after")


def test_history_and_audit_read_as_when_entries_stored_whole_copies(
    open_memory: Callable[[str], Memory],
    new_database: Callable[[str], str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with monkeypatch.context() as patched:
        patched.setattr(apply, "stored", whole)
        old = open_memory(new_database("whole"))
        a_life(old)
    new = open_memory(new_database("compact"))
    a_life(new)

    def readable(entries: list[AuditEntry]) -> list[dict[str, Any]]:
        # Job ids come from the store, not from the memory's id factory: they differ.
        return [e.model_dump(mode="json", exclude={"job_id"}) for e in entries]

    everything = readable(new.audit(subject=SUBJECT, limit=1000))
    as_stored_whole = readable(old.store.audit(mem_project(old), SUBJECT, 1000))
    assert readable(old.audit(subject=SUBJECT, limit=1000)) == as_stored_whole  # left as they are
    assert everything == as_stored_whole
    assert {e["action"] for e in everything} >= {
        "create_fact",
        "reinforce_fact",
        "pin_fact",
        "retire_fact",
        "resolve_fact",
        "reclassify_fact",
        "record_observation",
        "reject_candidate",
        "open_conflict",
        "revise_conflict",
    }
    for size in (1, 5, 20):  # any window: its later entries are in it
        assert readable(new.audit(subject=SUBJECT, limit=size)) == everything[-size:]
    for fact in every_fact(new):
        assert readable(new.history(fact.id).audit) == readable(old.history(fact.id).audit)


def test_an_entry_whose_row_is_gone_reads_as_stored(
    open_memory: Callable[[str], Memory], new_database: Callable[[str], str]
) -> None:
    mem = open_memory(new_database("life"))
    seen = a_life(mem)
    trail = mem.store.audit_for(seen[0].project, seen[0].id)

    assert expand(trail, {}, {}, {}) == trail
    assert expand(trail, {seen[0].id: mem.store.fact(seen[0].project, seen[0].id)}, {}, {}) != trail
