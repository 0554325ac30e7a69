"""Property: whatever supersedes, merges, retractions, pins and prunes happen, in whatever
order and at whatever age, no evidence becomes unreachable and no receipt dangles.

The facts live as values: each step changes them as the passes would (a merge absorbs the
retired memory's events into the survivor, a supersede does not), and a prune deletes what
`decide_prune` planned, after the one validator accepted it. After every step: every event
ever cited is still cited by a fact that exists; every retired fact's receipt points at a
fact that exists (SCENARIOS 28); every live fact that says what it replaced names a fact
that exists; no live or pinned fact was ever pruned.
"""

from __future__ import annotations

from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from distill.core.apply import validate
from distill.core.decay import HALF_LIFE_DAYS, decide_prune
from distill.core.models import Fact, FactStatus
from distill.core.plan import PruneFact
from tests.factories import PROJECT, SUBJECT, T0, make_conflict, make_memory

OPS = st.lists(
    st.tuples(
        st.sampled_from(
            ["add", "merge", "supersede", "retract", "pin", "age", "prune", "reinforce"]
        ),
        st.integers(0, 50),
        st.integers(0, 50),
    ),
    max_size=40,
)


class World:
    def __init__(self) -> None:
        self.now = T0
        self.facts: dict[str, Fact] = {}
        self.cited: set[str] = set()
        self.events = 0
        self.made = 0  # facts made: ids are never reused after a prune
        self.conflicted: set[str] = set()

    def event(self) -> str:
        self.events += 1
        return f"e{self.events}"

    def live(self) -> list[Fact]:
        return sorted((f for f in self.facts.values() if f.live), key=lambda f: f.id)

    def pick(self, facts: list[Fact], n: int) -> Fact | None:
        return facts[n % len(facts)] if facts else None

    def put(self, fact: Fact) -> None:
        self.facts[fact.id] = fact
        self.cited.update(fact.source_event_ids)

    def add(self, supersedes: Fact | None = None, events: tuple[str, ...] = ()) -> Fact:
        self.made += 1
        fact = make_memory(
            f"memory {self.made}",
            id=f"f{self.made:03d}",
            source_event_ids=(*events, self.event()),
            valid_from=self.now,
            recorded_at=self.now,
            last_reinforced_at=self.now,
            supersedes_id=supersedes.id if supersedes else None,
        )
        self.put(fact)
        return fact

    def retire(self, fact: Fact, by: Fact | None, status: FactStatus) -> None:
        update = {"status": status, "retired_at": self.now, "superseded_by": by.id if by else None}
        self.put(fact.model_copy(update=update))

    def step(self, op: str, a: int, b: int) -> None:
        live = [f for f in self.live() if not f.pinned]
        if op == "add" or not self.facts:
            self.add()
        elif op == "merge" and len(live) >= 2:
            keep, gone = self.pick(live, a), self.pick(live, b)
            assert keep is not None and gone is not None
            if keep.id != gone.id:
                events = tuple(dict.fromkeys(keep.source_event_ids + gone.source_event_ids))
                self.put(keep.model_copy(update={"source_event_ids": events}))
                self.retire(gone, self.facts[keep.id], FactStatus.SUPERSEDED)
        elif op == "supersede" and (old := self.pick(live, a)) is not None:
            new = self.add(supersedes=old, events=old.source_event_ids if b % 2 else ())
            self.retire(old, new, FactStatus.SUPERSEDED)
        elif op == "retract" and (fact := self.pick(live, a)) is not None:
            self.retire(fact, None, FactStatus.RETRACTED)
        elif op == "pin" and (
            fact := self.pick(sorted(self.facts.values(), key=lambda f: f.id), a)
        ):
            self.put(fact.model_copy(update={"pinned": not fact.pinned}))
        elif op == "reinforce" and (fact := self.pick(live, a)) is not None:
            self.put(fact.model_copy(update={"last_reinforced_at": self.now}))
        elif op == "age":
            self.now += timedelta(days=HALF_LIFE_DAYS * (1 + a % 6))
        elif op == "prune":
            self.prune(cap=None if b % 3 else b % 5)

    def prune(self, cap: int | None) -> None:
        conflicts = (
            [make_conflict(sorted(self.conflicted), identity_key=None)] if self.conflicted else []
        )
        decided = decide_prune(list(self.facts.values()), conflicts, self.now, cap=cap)
        validate(decided.plan, PROJECT, SUBJECT)
        for action in decided.plan.actions:
            assert isinstance(action, PruneFact)
            fact = self.facts.pop(action.fact.id)
            assert not fact.live and not fact.pinned and fact.id not in self.conflicted

    def check(self) -> None:
        remaining = {e for f in self.facts.values() for e in f.source_event_ids}
        assert remaining == self.cited, "an event is no longer cited by any fact"
        for f in self.facts.values():
            if f.superseded_by is not None:
                assert f.superseded_by in self.facts, f"{f.id}'s receipt points at nothing"
            if f.live and f.supersedes_id is not None:
                assert f.supersedes_id in self.facts, f"live {f.id} replaced a deleted fact"


@settings(max_examples=300, deadline=None)
@given(OPS, st.integers(0, 50))
def test_no_sequence_of_retirements_and_prunes_loses_evidence_or_strands_a_receipt(
    ops: list[tuple[str, int, int]], conflicted: int
) -> None:
    world = World()
    for index, (op, a, b) in enumerate(ops):
        world.step(op, a, b)
        if index == conflicted and world.facts:  # one fact drawn into an open conflict
            world.conflicted.add(sorted(world.facts)[a % len(world.facts)])
        world.check()
    world.now += timedelta(days=HALF_LIFE_DAYS * 30)
    world.prune(cap=None)
    world.check()
