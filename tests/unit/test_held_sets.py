"""A memory an open conflict set holds stays live until that set is decided.

The judge and the summariser open sets instead of guessing ("both stay live, served as
contested, until a person keeps one"). A later pass that merged, superseded or summarised a
held memory away left the set open over retired facts: the person's "keep" then decided
nothing, and the contested words were served uncontested inside a summary. Found by a random
search over the hygiene passes (session 40); the first two tests are its histories.
"""

from __future__ import annotations

import json
from datetime import timedelta

from distill import Memory
from distill.adapters.llm.fake import FakeLLM
from distill.core import memory_judge as mj
from distill.core import summarise as cs
from distill.core.dedupe import dedupe
from distill.core.models import ConflictSet
from tests.factories import T0, make_conflict
from tests.factories import make_memory as memory_fact
from tests.unit.scenario_support import MemoryFactory


def said(mem: Memory, text: str, day: int) -> None:
    mem.add_event(
        subject="alice",
        text=text,
        occurred_at=T0 + timedelta(days=day),
        claims=[{"text": text, "kind": "memory"}],
    )


def retired_members(mem: Memory) -> list[str]:
    facts = {f.id: f for f in mem.facts(subject="alice", include_retired=True)}
    return [m for c in mem.conflicts(subject="alice") for m in c.member_ids if not facts[m].live]


def judge_supersedes_summariser_consumes(prompt: str) -> str:
    if asked := mj.asked(prompt):
        alias, _, candidates = asked[0]
        verdict = {"memory": alias, "action": "supersede", "target": candidates[0][0]}
        return json.dumps({"verdicts": [{**verdict, "reason": "replaced"}]})
    shown = cs.asked(prompt)
    return json.dumps(
        {"summary": " and ".join(t for _, t in shown), "consumes": [a for a, _ in shown]}
    )


def test_the_summariser_leaves_what_the_judge_contested(make_memory: MemoryFactory) -> None:
    mem = make_memory(llm=FakeLLM(default=judge_supersedes_summariser_consumes))
    said(mem, "I run on Sundays", 1)
    said(mem, "I have 3 bikes.", 32)
    mem.consolidate()
    assert mem.judge().contested == 1  # the words show no change: both kept, in one set
    (held,) = mem.conflicts(subject="alice")

    summed = mem.summarise(keep=0)

    assert summed.consumed == 0 and not summed.summaries
    assert retired_members(mem) == []
    assert {f.text for f in mem.facts(subject="alice")} == {"I run on Sundays", "I have 3 bikes."}
    assert mem.resolve_conflict(held.id, keep=held.member_ids[1]).status.value == "resolved"
    assert [f.text for f in mem.facts(subject="alice")] == [mem.fact(held.member_ids[1]).text]


def judge_merges_summariser_contradicts(prompt: str) -> str:
    if asked := mj.asked(prompt):
        verdicts = [
            {"memory": alias, "action": "merge", "target": cands[0][0], "reason": "same"}
            for alias, _, cands in asked
            if cands
        ]
        return json.dumps({"verdicts": verdicts})
    shown = [a for a, _ in cs.asked(prompt)]
    answer = {"memories": shown, "reason": "they contradict"}
    return json.dumps({"summary": "nothing", "consumes": [], "contradictions": [answer]})


def test_the_judge_merges_nothing_the_summariser_contested(make_memory: MemoryFactory) -> None:
    mem = make_memory(llm=FakeLLM(default=judge_merges_summariser_contradicts))
    said(mem, "i like green tea", 38)
    said(mem, "I run on Sundays", 26)
    mem.consolidate()
    assert mem.summarise(keep=0).contested == 1

    judged = mem.judge()

    assert judged.merged == 0 and "already_contested" in [r.code for r in judged.refused]
    assert retired_members(mem) == []
    assert len(mem.facts(subject="alice")) == 2


def test_the_judge_leaves_a_held_memory_to_its_set() -> None:
    """A merge of a held memory with a third one (not its rival) is refused as `held`."""
    held, rival, third = (
        memory_fact(text, valid_from=T0 + timedelta(days=d))
        for d, text in enumerate(["I like tea", "I like coffee", "I really like tea"])
    )
    verdict = mj.Verdict(third.id, "merge", held.id, "the same")
    guards = mj.Guards(lambda _s, _l: [], held=mj.held_facts([open_set(held.id, rival.id)]))
    checked = mj.check([verdict], [mj.Item(third, (held,))], T0, guards, lambda: "x")
    assert [r.code for r in checked.refused] == ["held"] and not checked.plan.actions


def test_the_summariser_is_never_shown_a_held_memory_and_dedupe_leaves_it() -> None:
    held, rival, twin = (
        memory_fact(text, valid_from=T0 + timedelta(days=d))
        for d, text in enumerate(["I like tea", "I like coffee", "i like tea!"])
    )
    holding = mj.held_facts([open_set(held.id, rival.id)])
    assert [f.id for f in cs.offered([held, rival, twin], keep=0, held=holding)] == [twin.id]
    assert dedupe([held, twin], T0).retired == 1  # the same words: one retired
    assert dedupe([held, twin], T0, held=holding).plan.actions == []


def open_set(*members: str) -> ConflictSet:
    return make_conflict(list(members), identity_key=None)
