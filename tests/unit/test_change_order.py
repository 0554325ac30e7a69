"""Issue 11 and DESIGN invariant 8: a change under a new name ends the same in either order.

A claim stated as a change (`supersede`) whose name matches no known fact is contested
against a related one: by two shared words without a model, against the closest fact
nothing rules out with one (`attribute_match`). When the change arrives before the value it
replaced (a late event, a backfill, a second worker), that value finds the change already
stored: the change's fact carries `unpaired_change`, and the value is judged against it as
the change would have been against the value. Once paired, the mark is cleared, so a change
is paired once in either order.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from distill import Memory
from distill.adapters.llm.fake import FakeLLM
from distill.core import identity_judge
from distill.core.identity import identity_text
from distill.core.models import FactStatus
from distill.report import Report
from tests.unit.scenario_support import SUBJECT, MemoryFactory, at, every_fact, say
from tests.unit.test_drift_identity import content, far_apart
from tests.unit.test_identity_judge import GP, PCP, identity_sets, verdicts

Claim = tuple[str, dict[str, Any]]
ORDERS = pytest.mark.parametrize("reverse", [False, True], ids=["in-order", "reversed"])


def arrive(
    mem: Memory, old: Claim, change: Claim, reverse: bool, trust: tuple[str, str] | None = None
) -> list[Report]:
    """`old` (said at day 0) and `change` (a `supersede` at day 30), each in its own run, in
    world order or reversed; each run's report."""
    old_trust, change_trust = trust or ("trusted", "trusted")
    steps = [
        lambda: say(mem, *old, when=at(0), trust=old_trust),
        lambda: say(mem, *change, when=at(days=30), action="supersede", trust=change_trust),
    ]
    reports = []
    for step in reversed(steps) if reverse else steps:
        step()
        reports.append(mem.consolidate())
    return reports


def final(mem: Memory) -> tuple[Any, ...]:
    """What either order must agree on: every fact by value, the sets by status and size,
    the aliases learned."""
    sets = sorted((c.status.value, len(c.member_ids)) for c in identity_sets(mem))
    aliases = mem.store.aliases("default", [GP[0], PCP[0], "personal_best_5k"])
    return content(mem), sets, sorted((a.alias, a.canonical) for a in aliases.values())


@pytest.mark.parametrize("same", [True, False], ids=["same", "different"])
def test_with_a_judge_a_change_before_its_old_value_ends_as_in_order(
    make_memory: MemoryFactory, same: bool
) -> None:
    """`primary_care_physician` stated as a change, then the older `gp` it replaced: the
    pair is put to the judge as it is in world order, and its verdict leaves the same facts,
    set and alias in both orders."""
    ends = []
    for reverse in (False, True):
        llm = FakeLLM(default=verdicts(same))
        name = "reversed.db" if reverse else "in-order.db"
        mem = make_memory(name, overrides=far_apart(GP, PCP), extractor="claims", llm=llm)
        reports = arrive(mem, GP, PCP, reverse)

        assert [r.contested for r in reports] == [0, 1]
        assert sum(r.llm_calls for r in reports) == 1
        current = sorted((f.predicate, f.value) for f in mem.facts(subject=SUBJECT))
        assert current == ([PCP] if same else sorted([GP, PCP]))
        assert not any(f.unpaired_change for f in every_fact(mem))
        ends.append(final(mem))
    assert ends[1] == ends[0]


def test_without_a_model_shared_words_contest_a_change_in_either_order(
    make_memory: MemoryFactory,
) -> None:
    """The rule without a model (a change sharing two words with a known name is contested):
    `goal_personal_best_time` stated as a change of `personal_best_5k` leaves both current
    and one open set for a person, whichever arrived first."""
    old = ("personal_best_5k", {"time": "27:12"})
    change = ("goal_personal_best_time", {"time": "25:50"})
    ends = []
    for reverse in (False, True):
        name = "reversed.db" if reverse else "in-order.db"
        mem = make_memory(name, overrides=far_apart(old, change), extractor="claims")
        reports = arrive(mem, old, change, reverse)

        assert [r.contested for r in reports] == [0, 1]
        assert all(f.status is FactStatus.ACTIVE for f in every_fact(mem))
        ends.append(final(mem))
    assert ends[0][1] == [("open", 2)]
    assert ends[1] == ends[0]


@ORDERS
def test_a_change_is_paired_once_whatever_comes_after(
    make_memory: MemoryFactory, reverse: bool
) -> None:
    """After the change and its old value were judged different, a third new name is not
    asked about the change in either order: a stored change waits for one value, not for
    every name that follows (a `create` is never asked about a fact nothing points at)."""
    dentist = ("dentist", {"name": "Dr. Okafor"})
    llm = FakeLLM(default=verdicts(False))
    mem = make_memory(overrides=far_apart(GP, PCP), extractor="claims", llm=llm)
    arrive(mem, GP, PCP, reverse)
    calls = len(llm.calls)
    say(mem, *dentist, when=at(days=40))
    report = mem.consolidate()

    assert (report.contested, len(llm.calls) - calls) == (0, 0)
    assert len(mem.facts(subject=SUBJECT)) == 3


@ORDERS
def test_a_better_trusted_old_value_is_not_put_to_the_model_in_either_order(
    make_memory: MemoryFactory, reverse: bool
) -> None:
    """A third party's change under a new name may not replace the user's own value through
    the judge: not asked, both current, whichever arrived first."""
    llm = FakeLLM(default=verdicts(True))
    mem = make_memory(overrides=far_apart(GP, PCP), extractor="claims", llm=llm)
    reports = arrive(mem, GP, PCP, reverse, trust=("trusted", "third_party"))

    assert sum(r.contested for r in reports) == 0
    assert llm.calls == []
    assert sorted(f.predicate or "" for f in mem.facts(subject=SUBJECT)) == [GP[0], PCP[0]]


def test_the_mark_moves_with_the_attribute_and_clears_when_an_older_value_comes(
    make_memory: MemoryFactory,
) -> None:
    """A marked change superseded under its own name hands the mark to the new version (the
    attribute still waits for the value it replaced); an older value of its own name, filed
    into its past, pairs it."""
    mem = make_memory(overrides=far_apart(GP, PCP), extractor="claims")
    say(mem, *PCP, when=at(days=30), action="supersede")
    mem.consolidate()
    say(mem, PCP[0], {"name": "Dr. Adeyemi"}, when=at(days=40), action="supersede")
    mem.consolidate()
    marked = [(f.value, f.status) for f in every_fact(mem) if f.unpaired_change]
    assert marked == [({"name": "Dr. Adeyemi"}, FactStatus.ACTIVE)]

    say(mem, PCP[0], {"name": "Dr. Patel"}, when=at(0))
    mem.consolidate()
    assert not any(f.unpaired_change for f in every_fact(mem))
    (current,) = mem.facts(subject=SUBJECT)
    assert current.value == {"name": "Dr. Adeyemi"}


DENTIST = ("dentist", {"name": "Dr. Okafor"})


def apart(*claims: Claim) -> dict[str, list[float]]:
    """Overrides placing each claim's identity texts on its own axis: orthogonal, so that
    only words (and the change rules) relate them."""
    pinned: dict[str, list[float]] = {}
    for axis, (predicate, value) in enumerate(claims):
        vector = [0.0] * 256
        vector[axis] = 1.0
        pinned[identity_text(predicate)] = vector
        pinned[identity_text(predicate, value)] = vector
    return pinned


def gp_is_pcp(prompt: str) -> str:
    """A scripted judge that knows one thing: a `gp` is a primary care physician."""
    pairs = [
        {"pair": n, "same": {a, b} == {GP[0], PCP[0]}, "reason": "scripted"}
        for n, (a, b) in identity_judge.asked(prompt)
    ]
    return json.dumps({"pairs": pairs})


@pytest.mark.parametrize(
    "order",
    [(0, 1, 2), (1, 2, 0), (2, 1, 0), (1, 0, 2)],
    ids=["in-order", "change-dentist-gp", "dentist-change-gp", "change-gp-dentist"],
)
def test_a_later_new_name_neither_pairs_with_the_change_nor_uses_it_up(
    make_memory: MemoryFactory, order: tuple[int, ...]
) -> None:
    """`gp` (day 0), a change under `primary_care_physician` (day 30), `dentist` (day 40),
    in four arrival orders: the dentist, dated after the change, is never what it replaced
    (not contested, no call for it), and `gp` is paired with the change in every order."""
    llm = FakeLLM(default=gp_is_pcp)
    mem = make_memory(overrides=apart(GP, PCP, DENTIST), extractor="claims", llm=llm)
    steps = [
        lambda: say(mem, *GP, when=at(0)),
        lambda: say(mem, *PCP, when=at(days=30), action="supersede"),
        lambda: say(mem, *DENTIST, when=at(days=40)),
    ]
    for index in order:
        steps[index]()
        mem.consolidate()

    assert sorted(f.predicate or "" for f in mem.facts(subject=SUBJECT)) == [DENTIST[0], PCP[0]]
    assert len(llm.calls) == 1
    assert not any(f.unpaired_change for f in every_fact(mem))


@pytest.mark.parametrize("order", [(0, 1, 2), (1, 2, 0)], ids=["in-order", "gp-last"])
def test_a_change_restated_before_its_old_value_comes_still_pairs(
    make_memory: MemoryFactory, order: tuple[int, ...]
) -> None:
    """`gp` (day 0), a change under `primary_care_physician` (day 30), then a second value of
    that name (day 40): `gp` arriving last is paired with the current version, as the set
    would have followed it in world order."""
    llm = FakeLLM(default=gp_is_pcp)
    mem = make_memory(overrides=apart(GP, PCP), extractor="claims", llm=llm)
    steps = [
        lambda: say(mem, *GP, when=at(0)),
        lambda: say(mem, *PCP, when=at(days=30), action="supersede"),
        lambda: say(mem, PCP[0], {"name": "Dr. Ruiz"}, when=at(days=40), action="supersede"),
    ]
    for index in order:
        steps[index]()
        mem.consolidate()

    (current,) = mem.facts(subject=SUBJECT)
    assert (current.predicate, current.value) == (PCP[0], {"name": "Dr. Ruiz"})
    assert mem.store.aliases("default", [GP[0]])[GP[0]].canonical == PCP[0]


def test_a_pinned_change_is_not_paired_automatically(make_memory: MemoryFactory) -> None:
    """A person pinned the change: related names that arrive after it (older or newer) are
    not contested against it by the mark, however many come."""
    change = ("goal_personal_best_time", {"time": "25:50"})
    older = [("personal_best_5k", {"time": "27:12"}), ("personal_best_10k", {"time": "55:00"})]
    mem = make_memory(overrides=apart(change, *older), extractor="claims")
    say(mem, *change, when=at(days=30), action="supersede")
    mem.consolidate()
    (fact,) = mem.facts(subject=SUBJECT)
    mem.pin(fact.id)
    contested = []
    for day, claim in enumerate(older):
        say(mem, *claim, when=at(days=day))
        contested.append(mem.consolidate().contested)

    assert contested == [0, 0]
