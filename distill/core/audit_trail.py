"""The audit trail: what an entry stores, and how it reads back whole.

Every applied action writes one audit entry: who (pass, job), what (the action, its ids and
the fields it changed) and why (the reason). An entry does not copy what another row already
holds, because that copy was most of the database (half of a store's bytes, measured by
bench/storage.py). What `stored` keeps of each action:

    create_fact         nothing: before and after are null.
    <op>_fact           the fields the revision changed, before and after, without the id (the
                        entry's `fact_id`). A list that only grew keeps only what was appended,
                        as ``after = {"source_event_ids": {"appended": [...]}}``, and is left
                        out of `before` (a fact reinforced n times would otherwise store its
                        sources n² times).
    open_conflict       ``after = {"id": ...}``: the conflict set's id (no column names it).
    revise_conflict     the fields that changed, before and after, with the id.
    record_observation  ``after = {"id", "event_id"}``: the observation row holds the claim,
                        the extractor, the fact, the outcome and its reason. And since that
                        is all the entry says, a store keeps it in the row too (`in_row`):
                        the entry's id, job and time are three columns of the observation,
                        not a row of its own, and read back as this entry (schema 22: a
                        third of the audit rows, bench/storage.py).
    learn_alias         the alias, whole (aliases are never revised, and rare).
    add_rule            the rule, whole (rules are append-only, never revised, and rare).
    prune_tombstone     the deleted fact's ids and fields (`plan.PRUNED_FIELDS`, no text) as
                        `before`, and its weight as `after`: the one entry of a fact whose
                        row is gone, returned as stored.

Nothing is lost: a fact's row (or a conflict set's) as it is now, with its revisions undone
from the newest back, is the state after each of them, and at the end the state it was
created with; each revision's stored `before` is exactly what it replaced. `expand` does that
walk and gives back every entry as it read when whole copies were stored: the created fact
whole, a fact revision's changed fields with the id, a conflict set whole before and after,
an observation's summary. Datetimes come back in UTC, as the rows give them (the same
instants). Entries written whole by an earlier version are returned as they are.

The walk needs every later entry of the fact or conflict set. Both readers have them:
`Memory.history` reads each version's whole trail, and `Memory.audit`'s window is the latest
N entries of a project or subject, so for any entry in it every later entry of the same
subject (the scope of every fact and conflict set) is in it too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from distill.core.cortex_plan import CORTEX_ACTIONS
from distill.core.models import AuditEntry, ConflictSet, Fact, JsonObject, Observation
from distill.core.plan import (
    OBSERVATION_SUMMARY,
    OBSERVED_BY,
    Action,
    AddRule,
    CreateFact,
    LearnAlias,
    MarkFacts,
    MoveCursor,
    OpenConflict,
    PruneFact,
    RecordCycle,
    RecordObservation,
    ReviseConflict,
    ReviseFact,
    observed_reason,
    pruned_fields,
)

APPENDED = "appended"  # the key of a list field's stored growth: {"appended": [...]}
CREATE_FACT = "create_fact"
OPEN_CONFLICT = "open_conflict"
REVISE_CONFLICT = "revise_conflict"
RECORD_OBSERVATION = "record_observation"
# The observation fields a compact record_observation entry keeps: enough to find the row.
_OBSERVATION_KEYS = frozenset({"id", "event_id"})


def stored(action: Action) -> tuple[JsonObject | None, JsonObject | None]:
    """The `before` and `after` an audit entry of `action` stores (see the module doc)."""
    if isinstance(action, CreateFact):
        return None, None
    if isinstance(action, ReviseFact):
        return _changes(action.before, action.after)
    if isinstance(action, OpenConflict):
        return None, {"id": action.conflict.id}
    if isinstance(action, ReviseConflict):
        before, after = _changes(action.before, action.after)
        return {"id": action.before.id, **before}, {"id": action.after.id, **after}
    if isinstance(action, RecordObservation):
        return None, {"id": action.observation.id, "event_id": action.observation.event_id}
    if isinstance(action, LearnAlias):
        return None, action.alias.model_dump(mode="json")
    if isinstance(action, MoveCursor):
        return {"cursor": action.before}, {"cursor": action.after, "pass": action.cursor_pass}
    if isinstance(action, MarkFacts):
        return None, action.audited()
    if isinstance(action, AddRule):
        return None, action.rule.model_dump(mode="json")
    if isinstance(action, PruneFact):
        return pruned_fields(action)  # ids and fields of what was deleted, no text
    if isinstance(action, RecordCycle):
        return None, {**action.counts, "unstable": action.unstable}
    if isinstance(action, CORTEX_ACTIONS):
        return action.stored()
    return None, {"erased": dict(action.counts)}  # counts only: nothing of what was erased


def _changes(before: BaseModel, after: BaseModel) -> tuple[JsonObject, JsonObject]:
    """The fields that differ (the id aside), before and after; a grown list as its growth."""
    # A model's fields are its __dict__'s: read there, not by getattr (twice as fast).
    first, then = before.__dict__, after.__dict__
    changed = {k for k in type(before).model_fields if k != "id" and first[k] != then[k]}
    old = before.model_dump(mode="json", include=changed)
    new = after.model_dump(mode="json", include=changed)
    for key in changed:
        was, now = old[key], new[key]
        if isinstance(was, list) and isinstance(now, list) and now[: len(was)] == was:
            del old[key]
            new[key] = {APPENDED: now[len(was) :]}
    return old, new


def in_row(entry: AuditEntry, observation: Observation) -> bool:
    """Whether `observation`'s row can stand for `entry`: the entry says nothing but what
    `observation_entry` gives back from the row (the pass, the outcome and its reason, the
    observation's id, event and fact, its scope) and its own id, job and time."""
    return (
        entry.action == RECORD_OBSERVATION
        and entry.pass_name == OBSERVED_BY
        and entry.reason == observed_reason(observation.outcome, observation.reason)
        and entry.before is None
        and entry.after == {"id": observation.id, "event_id": observation.event_id}
        and entry.fact_id == observation.fact_id
        and entry.project == observation.project
        and entry.subject == observation.subject
    )


def observation_entry(
    entry_id: str,
    job_id: str | None,
    at: datetime,
    observation: tuple[str, str, str, str, str | None, str, str],
) -> AuditEntry:
    """The audit entry an observation's row stands for (`in_row`): the entry's own id, job
    and time, and the observation's project, subject, id, event, fact, outcome and reason."""
    project, subject, observation_id, event_id, fact_id, outcome, reason = observation
    return AuditEntry(
        id=entry_id,
        project=project,
        subject=subject,
        job_id=job_id,
        pass_name=OBSERVED_BY,
        action=RECORD_OBSERVATION,
        reason=observed_reason(outcome, reason),
        fact_id=fact_id,
        before=None,
        after={"id": observation_id, "event_id": event_id},
        at=at,
    )


def is_fact_revision(action: str) -> bool:
    """A `ReviseFact` entry: its action is named `<op>_fact`."""
    return action.endswith("_fact") and action != CREATE_FACT


def expand(
    entries: Sequence[AuditEntry],
    facts: Mapping[str, Fact],
    conflicts: Mapping[str, ConflictSet],
    observations: Mapping[str, Observation],
) -> list[AuditEntry]:
    """`entries` (oldest first) as they read whole, given the current rows they point at.

    `facts` and `conflicts` are the rows as they are now, by id; `observations` by id. An
    entry whose row is not given is returned as stored.
    """
    states: dict[str, JsonObject] = {}  # fact or conflict id -> its state after the entry
    out = list(entries)
    for index in range(len(out) - 1, -1, -1):
        entry = out[index]
        if entry.fact_id in facts and _is_fact_entry(entry.action):
            assert entry.fact_id is not None
            key = f"fact:{entry.fact_id}"
            state = states.setdefault(key, facts[entry.fact_id].model_dump(mode="json"))
            out[index] = _expand_fact(entry, state)
            continue
        if entry.action in (OPEN_CONFLICT, REVISE_CONFLICT):
            conflict_id = _conflict_id(entry)
            if conflict_id in conflicts:
                key = f"conflict:{conflict_id}"
                state = states.setdefault(key, conflicts[conflict_id].model_dump(mode="json"))
                out[index] = _expand_conflict(entry, state)
            continue
        if entry.action == RECORD_OBSERVATION and _is_compact_observation(entry.after):
            assert entry.after is not None
            found = observations.get(str(entry.after["id"]))
            if found is not None:
                summary = found.model_dump(mode="json", include=OBSERVATION_SUMMARY)
                out[index] = entry.model_copy(update={"after": summary})
    return out


def as_believed_before(fact: Fact, later: Sequence[AuditEntry]) -> Fact:
    """`fact` (its row as it is now) as it read before the revisions in `later` (every entry
    of it made after some instant, oldest first) were applied: the fact as Distill believed
    it then. Its creation is not undone: the caller knows whether it existed."""
    state = fact.model_dump(mode="json")
    for entry in reversed(later):
        if is_fact_revision(entry.action) and entry.before is not None and entry.after is not None:
            _undo(entry.before, entry.after, state)
    return Fact.model_validate(state)


def observation_event_ids(entries: Sequence[AuditEntry]) -> list[str]:
    """The events whose observations `expand` needs for these entries."""
    return sorted(
        {
            str(e.after["event_id"])
            for e in entries
            if e.action == RECORD_OBSERVATION and e.after and _is_compact_observation(e.after)
        }
    )


def conflict_ids(entries: Sequence[AuditEntry]) -> list[str]:
    """The conflict sets `expand` needs the rows of for these entries."""
    found = {_conflict_id(e) for e in entries if e.action in (OPEN_CONFLICT, REVISE_CONFLICT)}
    return sorted(i for i in found if i)


def fact_ids(entries: Sequence[AuditEntry]) -> list[str]:
    """The facts `expand` needs the rows of for these entries."""
    return sorted({e.fact_id for e in entries if e.fact_id and _is_fact_entry(e.action)})


def _expand_fact(entry: AuditEntry, state: JsonObject) -> AuditEntry:
    """One fact entry, whole; `state` (the fact after it) becomes the state before it."""
    if entry.action == CREATE_FACT:
        if entry.after is not None:  # written whole by an earlier version
            return entry
        return entry.model_copy(update={"after": dict(state)})
    if entry.before is None or entry.after is None:
        return entry
    before, after = _undo(entry.before, entry.after, state)
    fact_id = state["id"]
    return entry.model_copy(
        update={"before": {"id": fact_id, **before}, "after": {"id": fact_id, **after}}
    )


def _expand_conflict(entry: AuditEntry, state: JsonObject) -> AuditEntry:
    """One conflict-set entry, whole before and after; `state` is rolled back past it."""
    if entry.action == OPEN_CONFLICT:
        if entry.after is not None and set(entry.after) == {"id"}:
            return entry.model_copy(update={"after": dict(state)})
        return entry
    if entry.before is None or entry.after is None:
        return entry
    after = dict(state)
    _, changed_after = _undo(entry.before, entry.after, state)
    after.update(changed_after)
    return entry.model_copy(update={"before": dict(state), "after": after})


def _undo(
    before: JsonObject, after: JsonObject, state: JsonObject
) -> tuple[JsonObject, JsonObject]:
    """A revision's changed fields, whole, from its stored form and the state after it;
    rolls `state` back to the state before it."""
    old: JsonObject = {}
    new: JsonObject = {}
    for key in state:
        if key == "id" or (key not in after and key not in before):
            continue
        value: Any = after.get(key, state[key])
        if _is_growth(value) and isinstance(state[key], list):
            grown = list(state[key])
            new[key] = grown
            old[key] = grown[: len(grown) - len(value[APPENDED])]
        else:
            new[key] = value
            if key in before:
                old[key] = before[key]
    state.update(old)
    return old, new


def _is_growth(value: Any) -> bool:
    return (
        isinstance(value, dict) and set(value) == {APPENDED} and isinstance(value[APPENDED], list)
    )


def _is_fact_entry(action: str) -> bool:
    return action == CREATE_FACT or is_fact_revision(action)


def _conflict_id(entry: AuditEntry) -> str:
    for side in (entry.after, entry.before):
        if side and isinstance(side.get("id"), str):
            return str(side["id"])
    return ""


def _is_compact_observation(after: JsonObject | None) -> bool:
    return after is not None and set(after) == _OBSERVATION_KEYS
