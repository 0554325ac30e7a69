"""Property, on every backend: whatever sequence of hygiene cycles runs (memories said, time
passing on a fake clock, summarise with a scripted summariser that is faithful, lossy, broken
or inventive, prune, a pin), every event stays reachable.

After every step: each event ever stored is cited by a live fact (a summary cites the union
of what it consumed, so the events of a receipt are its summary's); each retired fact's
receipt chain (`superseded_by`, followed) ends at a live fact; no pinned memory ever changed.
When prune deletes a tombstone under the floor, the prune rule (`core.decay`, rule 6) says
which events must stay cited: each of the deleted fact's events is cited by a fact that
stays, which the first check then finds live. Each example works in a subject of its own.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from distill import Memory
from distill.core.models import Fact, FactStatus
from distill.core.summarise import asked
from tests.conftest import FakeClock

MODES = ("faithful", "drop a number", "prose", "invent", "half")
STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("say"), st.integers(1, 6)),
        st.tuples(st.just("advance"), st.sampled_from([1, 40, 200, 500])),
        st.tuples(st.just("summarise"), st.sampled_from(MODES)),
        st.tuples(st.just("prune"), st.just(0)),
        st.tuples(st.just("pin"), st.integers(0, 20)),
    ),
    min_size=1,
    max_size=12,
)
SUBJECTS = itertools.count()


class Summariser:
    """A scripted summariser whose behaviour the steps switch."""

    def __init__(self) -> None:
        self.mode = "faithful"

    def __call__(self, prompt: str) -> str:
        shown = asked(prompt)
        summary = " ".join(text for _, text in shown)
        consumes = [alias for alias, _ in shown]
        if self.mode == "drop a number":
            summary = " ".join(w for w in summary.split() if not any(c.isdigit() for c in w))
        elif self.mode == "prose":
            return "Here is a summary of the memories."
        elif self.mode == "invent":
            consumes += ["M99", "f-not-a-fact"]
        elif self.mode == "half":
            half = shown[: max(1, len(shown) // 2)]
            summary = " ".join(text for _, text in half)
            consumes = [alias for alias, _ in half]
        return json.dumps({"summary": summary, "consumes": consumes})


def reachable(mem: Memory, subject: str) -> None:
    """The invariants after a step (module docstring)."""
    facts = {f.id: f for f in mem.facts(subject=subject, include_retired=True)}
    live = {i for i, f in facts.items() if f.status is FactStatus.ACTIVE}
    cited_live = {e for i in live for e in facts[i].source_event_ids}
    events = [e.id for e in mem.store.iter_events("default", subject)]
    lost = [e for e in events if e not in cited_live]
    assert not lost, f"events no live fact cites: {lost}"
    for fact in facts.values():
        if fact.status is not FactStatus.SUPERSEDED:
            continue
        seen, at = set(), fact
        while at.status is FactStatus.SUPERSEDED:
            assert at.superseded_by in facts, f"{at.id}'s receipt names a fact that is gone"
            assert at.id not in seen, f"a receipt cycle through {at.id}"
            seen.add(at.id)
            at = facts[at.superseded_by]
        assert at.status is FactStatus.ACTIVE, f"{fact.id}'s receipts end at {at.status}"


def run(
    mem: Memory, clock: FakeClock, summariser: Summariser, steps: list[tuple[str, object]]
) -> int:
    """Run the steps in a new subject; returns how many tombstones prune deleted."""
    subject = f"s{next(SUBJECTS)}"
    pruned = 0
    said = itertools.count()
    pinned: dict[str, Fact] = {}
    for op, arg in steps:
        if op == "say":
            for _ in range(int(arg)):  # type: ignore[call-overload]
                n = next(said)
                text = f"Note {n}: {subject} keeps {n + 2} jars" if n % 2 else f"Note {n}: no tea"
                mem.add_event(subject=subject, text=text, occurred_at=clock.now())
                clock.advance(hours=1)
            mem.consolidate()
        elif op == "advance":
            clock.advance(days=int(arg))  # type: ignore[call-overload]
        elif op == "summarise":
            summariser.mode = str(arg)
            mem.summarise(subject=subject, keep=1)
        elif op == "prune":
            before = {f.id: f for f in mem.facts(subject=subject, include_retired=True)}
            report = mem.prune(subject=subject)
            pruned += len(report.pruned)
            after = {f.id: f for f in mem.facts(subject=subject, include_retired=True)}
            for gone in report.pruned:
                assert gone.fact_id not in after
                dead = before[gone.fact_id]
                assert dead.status is not FactStatus.ACTIVE and not dead.pinned
                stays = {e for f in after.values() for e in f.source_event_ids}
                assert set(dead.source_event_ids) <= stays  # the prune rule, rule 6
        elif op == "pin":
            live = [f for f in mem.facts(subject=subject) if not f.pinned]
            if live:
                chosen = live[int(arg) % len(live)]  # type: ignore[call-overload]
                mem.pin(chosen.id)
                pinned[chosen.id] = mem.fact(chosen.id)
        reachable(mem, subject)
        for fact_id, fact in pinned.items():
            assert mem.fact(fact_id) == fact, "a pinned memory changed"
    return pruned


def test_every_event_stays_reachable_through_any_hygiene_cycles(
    scripted_memory: Callable[..., Memory], clock: FakeClock
) -> None:
    summariser = Summariser()
    mem = scripted_memory(default=summariser)

    @settings(
        max_examples=25,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(STEPS)
    def cycles(steps: list[tuple[str, object]]) -> None:
        run(mem, clock, summariser, steps)

    cycles()


def test_a_summarised_cycle_a_year_on_prunes_its_receipts_and_loses_no_event(
    scripted_memory: Callable[..., Memory], clock: FakeClock
) -> None:
    """The path the property is about, written out: receipts written, then collected under
    the floor, their events cited by the summary that stays."""
    summariser = Summariser()
    mem = scripted_memory(default=summariser)
    steps: list[tuple[str, object]] = [
        ("say", 6),
        ("pin", 0),
        ("summarise", "faithful"),
        ("advance", 500),
        ("say", 2),
        ("summarise", "drop a number"),
        ("prune", 0),
        ("summarise", "invent"),
        ("advance", 500),
        ("prune", 0),
    ]
    assert run(mem, clock, summariser, steps) >= 4
