"""The pass protocol: decisions are values made without a database, and whatever a pass
proposes goes through the one applier, which no pass can get around.

The first half runs adjudication's `decide` on snapshots built by hand: no store, no
engine. The second half plugs passes that did not exist before into `run_pass` on a real
store, including rogue ones, to show that the applier, not the pass, keeps the invariants.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

import pytest

from distill.adapters.store.sqlite import SqliteStore
from distill.core.models import FactStatus, Outcome
from distill.core.passes import Context, Decision, PassResult, Scope
from distill.core.plan import CreateFact, Plan, ReviseFact
from distill.core.working import Candidate, Snapshot
from distill.errors import IntegrityViolation, PinnedFact
from distill.passes import run_pass
from distill.passes.adjudication import Adjudication, AdjudicationSnapshot
from distill.ports import Store
from tests.factories import PROJECT, SUBJECT, T0, at, make_claim, make_event, make_fact

SCOPE = Scope(PROJECT, SUBJECT)


_IDS = itertools.count()


def context() -> Context:
    return Context(now=at(60), new_id=lambda: f"new{next(_IDS):06d}")


def snapshot(*facts: object, candidates: list[Candidate]) -> AdjudicationSnapshot:
    state = Snapshot(
        project=PROJECT,
        subject=SUBJECT,
        facts={f.id: f for f in facts},  # type: ignore[attr-defined]
        aliases={},
        conflicts={},
        seen=set(),
    )
    return AdjudicationSnapshot(state, candidates, ())


def candidate(predicate: str, value: dict[str, object], action: str = "create") -> Candidate:
    claim = make_claim(predicate=predicate, value=value, action=action)
    event = make_event(occurred_at=at(30), claims=[claim])
    return Candidate(event, claim, f"hash-{predicate}-{value}", "claims")


# -- decisions are values, made without a database -------------------------------------------------
def test_a_new_attribute_is_one_created_decision_and_a_create_action() -> None:
    result = Adjudication().decide(
        snapshot(candidates=[candidate("bike_count", {"count": 3})]), context()
    )
    [decision] = result.decisions
    assert decision == Decision(Outcome.CREATED, decision.fact_id, "new identity")
    [create] = [a for a in result.plan.actions if isinstance(a, CreateFact)]
    assert create.fact.id == decision.fact_id
    assert create.fact.value == {"count": 3}
    assert result.outcomes == {Outcome.CREATED: 1}


def test_a_changed_value_supersedes_and_names_the_new_fact() -> None:
    old = make_fact(predicate="bike_count", value={"count": 3}, valid_from=T0)
    result = Adjudication().decide(
        snapshot(old, candidates=[candidate("bike_count", {"count": 4}, "supersede")]),
        context(),
    )
    [decision] = result.decisions
    assert decision.outcome == Outcome.SUPERSEDED
    retired = [a for a in result.plan.actions if isinstance(a, ReviseFact)]
    assert [(r.before.id, r.after.status, r.after.superseded_by) for r in retired] == [
        (old.id, FactStatus.SUPERSEDED, decision.fact_id)
    ]


def test_the_same_value_again_is_a_reinforcement_of_the_existing_fact() -> None:
    old = make_fact(predicate="bike_count", value={"count": 3}, valid_from=T0)
    result = Adjudication().decide(
        snapshot(old, candidates=[candidate("bike_count", {"count": 3})]), context()
    )
    assert result.decisions == [
        Decision(Outcome.REINFORCED, old.id, "same value (exact predicate)")
    ]


def test_deciding_twice_on_the_same_snapshot_gives_the_same_decisions() -> None:
    old = make_fact(predicate="home_city", value={"city": "Paris"}, valid_from=T0)
    cands = [candidate("home_city", {"city": "Lyon"}), candidate("bike_count", {"count": 2})]
    ids = [itertools.count(), itertools.count()]
    first, second = (
        Adjudication().decide(
            snapshot(old, candidates=cands), Context(at(60), lambda c=c: f"id{next(c)}")
        )
        for c in ids
    )
    assert first.decisions == second.decisions
    assert [a.name for a in first.plan.actions] == [a.name for a in second.plan.actions]


# -- a new pass plugs into run_pass; the applier keeps the invariants ------------------------------
@dataclass
class RetireAll:
    """A pass written for this test: retires every live fact it is shown."""

    name: str = "retire_all"
    cap: int | None = None

    def load(self, store: Store, scope: Scope, work: None) -> list[object]:
        return list(store.facts(scope.project, scope.subject, False, None))

    def decide(self, snapshot: list[object], context: Context) -> PassResult:
        plan = Plan()
        decisions = []
        for fact in snapshot:
            after = fact.model_copy(  # type: ignore[attr-defined]
                update={"status": FactStatus.RETRACTED, "retired_at": context.now}
            )
            plan.add(ReviseFact(fact, after, "retire", "test", pass_name=self.name))  # type: ignore[arg-type]
            decisions.append(Decision("retired", after.id, "test"))
        return PassResult(plan, decisions)


@dataclass
class CreateElsewhere:
    """A pass that tries to write a fact into another subject's memory."""

    name: str = "create_elsewhere"
    cap: int | None = None

    def load(self, store: Store, scope: Scope, work: None) -> None:
        return None

    def decide(self, snapshot: None, context: Context) -> PassResult:
        fact = make_fact(id=context.new_id(), subject="mallory")
        return PassResult(Plan(actions=[CreateFact(fact, "test", pass_name=self.name)]))


@pytest.fixture
def store(tmp_path: Path) -> Store:
    opened = SqliteStore(tmp_path / "passes.db")
    yield opened  # type: ignore[misc]
    opened.close()


def seed(store: Store, **fields: object) -> str:
    [(event, _)] = store.append_events([make_event()], T0)
    fact = make_fact(source_event_ids=(event.id,), **fields)
    run_pass(store, _Seed(fact), SCOPE, None, now=T0, new_id=context().new_id)
    return fact.id


@dataclass
class _Seed:
    fact: object
    name: str = "seed"
    cap: int | None = None

    def load(self, store: Store, scope: Scope, work: None) -> None:
        return None

    def decide(self, snapshot: None, context: Context) -> PassResult:
        return PassResult(Plan(actions=[CreateFact(self.fact, "seeded", pass_name=self.name)]))  # type: ignore[arg-type]


def test_a_new_pass_runs_through_run_pass_and_is_audited(store: Store) -> None:
    fact_id = seed(store, predicate="bike_count", value={"count": 3})
    result = run_pass(store, RetireAll(), SCOPE, None, now=at(5), new_id=context().new_id)
    assert [d.outcome for d in result.decisions] == ["retired"]
    assert store.fact(PROJECT, fact_id).status is FactStatus.RETRACTED
    assert [(e.pass_name, e.action) for e in store.audit_for(PROJECT, fact_id)][-1] == (
        "retire_all",
        "retire_fact",
    )


def test_a_pass_cannot_change_a_pinned_fact(store: Store) -> None:
    fact_id = seed(store, predicate="bike_count", value={"count": 3}, pinned=True)
    with pytest.raises(PinnedFact):
        run_pass(store, RetireAll(), SCOPE, None, now=at(5), new_id=context().new_id)
    assert store.fact(PROJECT, fact_id).status is FactStatus.ACTIVE
    assert [e.pass_name for e in store.audit_for(PROJECT, fact_id)] == ["seed"]


def test_a_pass_cannot_write_outside_its_scope(store: Store) -> None:
    with pytest.raises(IntegrityViolation, match="outside the scope"):
        run_pass(store, CreateElsewhere(), SCOPE, None, now=at(5), new_id=context().new_id)
    assert store.facts(PROJECT, "mallory", True, None) == []


def test_a_dry_run_of_a_pass_shows_its_decisions_and_writes_nothing(store: Store) -> None:
    fact_id = seed(store, predicate="bike_count", value={"count": 3})
    with store.dry_run():
        result = run_pass(store, RetireAll(), SCOPE, None, now=at(5), new_id=context().new_id)
        assert store.fact(PROJECT, fact_id).status is FactStatus.RETRACTED  # seen inside
    assert [d.fact_id for d in result.decisions] == [fact_id]
    assert store.fact(PROJECT, fact_id).status is FactStatus.ACTIVE  # and gone after
