"""The `judge` suite: the golden set's shape, the scripted correct model scoring every case,
the adversaries applying no harm, a provider's prose or cut answer applying nothing, and
checks that each of these assertions can fail (a build without the pinned check, without the
direction rule, without merge guards, is caught by a case).

The real merge guards (`statements.merge_objections`) are not used here, so that these tests
say what the suite and `check` do, apart from what the guards catch: `ideal_guards` objects
exactly when a case says a merge would lose something (the guards a perfect implementation
would be), `no_guards` never objects. The suite's own figures with the real guards are
`distill eval judge`'s (EVAL.md); `test_the_cli_runs_the_suite_with_the_real_guards` runs it
and holds what does not depend on them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distill.adapters.llm.calls import RetryPolicy
from distill.adapters.llm.fake import FakeLLM
from distill.adapters.llm.openai import OpenAILLM
from distill.core import memory_judge
from distill.core.memory_judge import Item
from distill.core.models import FactStatus
from distill.core.plan import ReviseFact
from distill.errors import TransientProviderError
from distill.eval import judge
from distill.eval.judge import ADVERSARIES, Case, build_all, judge_cases, load_cases, report
from distill.ports import Completion
from tests.llm_server import ScriptedServer, openai_reply, prompt_of

OUTCOME = re.compile(r"^(nothing|refused [a-z_]+|(supersede|merge) (new|c\d) -> (new|c\d))$")
MERGE_ADVERSARY = "adversarial: merge the first candidate"
WRONG_WAY = "adversarial: supersede the wrong way round"


@dataclass(frozen=True)
class Objection:
    code: str
    detail: str


def ideal_guards(cases: list[Case]) -> Any:
    """Objects to merging `loser` into `survivor` unless the case holding both says that
    merge loses nothing (it is the expected outcome or a harmless one)."""
    allowed: set[tuple[str, str]] = set()
    known: set[tuple[str, str]] = set()
    for case in cases:
        facts = [case.item.memory, *case.item.candidates]
        for survivor in facts:
            for loser in facts:
                pair = (survivor.text, loser.text)
                known.add(pair)
                said = f"merge {case.names[loser.id]} -> {case.names[survivor.id]}"
                if said in case.harmless:
                    allowed.add(pair)

    def objections(survivor: str, loser: str) -> list[Objection]:
        assert (survivor, loser) in known, "asked about a pair no case shows together"
        return [] if (survivor, loser) in allowed else [Objection("lost", "the case says so")]

    return objections


def no_guards(_survivor: str, _loser: str) -> list[Objection]:
    return []


def ideal_evidence(cases: list[Case]) -> Any:
    """Shows a change exactly where a case says superseding the older by the newer is right
    (the expected outcome or a harmless one)."""
    shown: set[tuple[str, str]] = set()
    for case in cases:
        facts = [case.item.memory, *case.item.candidates]
        for older in facts:
            for newer in facts:
                said = f"supersede {case.names[older.id]} -> {case.names[newer.id]}"
                if said in case.harmless:
                    shown.add((older.text, newer.text))
    return lambda older, newer: "the case says so" if (older, newer) in shown else None


def any_change(_older: str, _newer: str) -> str:
    return "every supersede taken as shown"


@pytest.fixture(scope="module")
def specs() -> list[dict[str, Any]]:
    return load_cases()


@pytest.fixture(scope="module")
def cases(specs: list[dict[str, Any]]) -> list[Case]:
    return build_all(specs)


def correct(cases: list[Case], guards: Any, evidence: Any = any_change) -> judge.Run:
    return judge_cases("correct", cases, judge.correct_model(cases), guards, evidence)


def adversary(name: str, cases: list[Case], guards: Any, evidence: Any = None) -> judge.Run:
    model = judge.scripted(ADVERSARIES[name], "adversary")
    if evidence is None:  # the real `changes.replacement_evidence`
        return judge_cases(name, cases, model, guards)
    return judge_cases(name, cases, model, guards, evidence)


# -- the golden set --------------------------------------------------------------------------


def test_the_golden_set_has_every_kind_and_says_what_each_case_must_come_to(
    specs: list[dict[str, Any]], cases: list[Case]
) -> None:
    assert len(specs) >= 30
    kinds = Counter(s["kind"] for s in specs)
    assert kinds["supersede"] >= 8 and kinds["merge"] >= 8 and kinds["keep"] >= 6
    assert kinds["trap"] >= 8
    assert len({s["id"] for s in specs}) == len(specs)
    for case in cases:
        names = set(case.names.values())
        for said in (case.expected, *case.harmless):
            assert OUTCOME.match(said), f"{case.id}: {said!r}"
            assert set(re.findall(r"\b(?:new|c\d)\b", said)) <= names, case.id
        verdict = case.spec["verdict"]
        assert verdict["action"] in memory_judge.ACTIONS and verdict["reason"].strip()
        assert (verdict["target"] is None) == (verdict["action"] == "nothing"), case.id
        assert verdict["target"] is None or verdict["target"] in names - {"new"}


def test_the_golden_set_holds_the_traps_the_seed_and_scenarios_name(cases: list[Case]) -> None:
    by_id = {c.id: c for c in cases}
    pinned = [c for c in cases if any(f.pinned for f in (c.item.memory, *c.item.candidates))]
    assert any(c.expected == "refused pinned" for c in pinned)
    # A changed number is a supersede or nothing, never a merge, whichever way round.
    assert by_id["kids-count"].harmless == {"supersede c1 -> new"}
    assert by_id["role-swap"].expected == "nothing" and by_id["always-never"].expected == "nothing"
    # One case where the new memory was stated first: the one retired is the new memory.
    assert by_id["backfilled-older-statement"].expected == "supersede new -> c1"


def test_a_set_a_scripted_model_could_not_read_is_refused(specs: list[dict[str, Any]]) -> None:
    twin = {**specs[1], "id": "twin", "new": specs[0]["new"]}
    with pytest.raises(ValueError, match="share the new memory text"):
        build_all([specs[0], twin])


# -- the scripted correct model ----------------------------------------------------------------


def test_the_correct_model_gets_every_case_with_guards_that_object_rightly(
    cases: list[Case],
) -> None:
    run = correct(cases, ideal_guards(cases), ideal_evidence(cases))
    missed = [(o.case.id, o.case.expected, o.outcome) for o in run.outcomes if not o.accurate]
    assert missed == []
    assert run.harmful == [] and run.accuracy == 1.0
    assert run.calls == -(-len(cases) // memory_judge.JUDGE_BATCH)  # one call per batch of 8
    assert run.refused == Counter({"pinned": 2})


def test_without_merge_guards_the_survivor_cases_fail(cases: list[Case]) -> None:
    # The same verdicts with no guard keep the older record even when it lacks the detail:
    # the set must catch that, as harm.
    run = correct(cases, no_guards)
    harmed = {case for case, _ in run.harmful}
    assert {"more-detail-survives", "condition-dropped", "date-dropped-newer"} <= harmed
    assert run.accuracy < 1.0


def test_without_the_pinned_check_a_case_catches_it(
    cases: list[Case], monkeypatch: pytest.MonkeyPatch
) -> None:
    real_check = judge.check

    def check_ignoring_pins(verdicts: Any, items: Any, *args: Any, **kw: Any) -> Any:
        unpinned = [
            Item(
                i.memory.model_copy(update={"pinned": False}),
                tuple(c.model_copy(update={"pinned": False}) for c in i.candidates),
            )
            for i in items
        ]
        return real_check(verdicts, unpinned, *args, **kw)

    monkeypatch.setattr(judge, "check", check_ignoring_pins)
    run = correct(cases, ideal_guards(cases))
    assert ("pinned-supersede", "supersede c1 -> new") in run.harmful
    assert run.accuracy < 1.0


def test_a_check_that_trusted_the_models_direction_would_be_caught(
    cases: list[Case], monkeypatch: pytest.MonkeyPatch
) -> None:
    # As if the memory named were always the newer: the backfilled note retires the newer.
    monkeypatch.setattr(
        memory_judge, "_stated", lambda f: (f.id.endswith(":new"), f.valid_from, f.id)
    )
    run = adversary(WRONG_WAY, cases, ideal_guards(cases), any_change)
    assert ("backfilled-older-statement", "supersede c1 -> new") in run.wrong_way


# -- the adversaries -------------------------------------------------------------------------


def test_a_model_that_merges_everything_applies_no_harm_with_guards_that_object_rightly(
    cases: list[Case],
) -> None:
    run = adversary(MERGE_ADVERSARY, cases, ideal_guards(cases))
    assert run.harmful == []
    assert run.refused["merge_lost"] >= 20 and run.refused["pinned"] == 1
    # The true duplicates whose first candidate is the duplicate are still merged.
    merged = {o.case.id for o in run.outcomes if o.accurate and o.case.spec["kind"] == "merge"}
    assert {"paraphrase-tea", "french-allergy", "pinned-survives-merge"} <= merged


def test_a_model_that_merges_everything_harms_without_guards(cases: list[Case]) -> None:
    run = adversary(MERGE_ADVERSARY, cases, no_guards)
    harmed = {case for case, _ in run.harmful}
    assert {"kids-count", "always-never", "role-swap", "two-allergies"} <= harmed


def test_a_supersede_the_wrong_way_round_never_retires_the_newer(cases: list[Case]) -> None:
    run = adversary(WRONG_WAY, cases, ideal_guards(cases))
    assert run.wrong_way == []
    by_id = {o.case.id: o for o in run.outcomes}
    assert by_id["backfilled-older-statement"].outcome == "supersede new -> c1"
    assert by_id["moved-city"].outcome == "supersede c1 -> new"
    assert by_id["pinned-supersede"].outcome == "refused pinned"
    assert run.refused["pinned"] == 2


def test_a_false_supersede_of_two_distinct_facts_is_contested_not_applied(
    cases: list[Case],
) -> None:
    # The words show no change between two allergies: the model's supersede puts both to a
    # person instead of retiring one. Taking every supersede as shown, it would be obeyed.
    run = adversary(WRONG_WAY, cases, ideal_guards(cases))
    by_id = {o.case.id: o for o in run.outcomes}
    assert by_id["two-allergies"].outcome == "contested c1, new"
    assert by_id["brother-sister"].outcome == "contested c1, new"
    assert "two-allergies" not in {case for case, _ in run.harmful}
    trusting = adversary(WRONG_WAY, cases, ideal_guards(cases), any_change)
    assert "two-allergies" in {case for case, _ in trusting.harmful}
    # The gap left, which the suite reports: a change word that is about another memory
    # ("I left Acme..." retires "Acme's office is in Leeds").
    assert [case for case, _ in run.harmful] == ["job-changed-second-candidate"]
    # Two statements of one instant have no "last": such a supersede is refused.
    by_id = {o.case.id: o for o in run.outcomes}
    assert by_id["always-never"].outcome == by_id["role-swap"].outcome == "refused no_order"


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("adversarial: a target shown, not with the memory", "target_not_shown"),
        ("adversarial: an alias never shown", "target_not_shown"),
        ("adversarial: an empty reason", "no_reason"),
    ],
)
def test_invalid_verdicts_apply_nothing_and_are_refused_by_code(
    cases: list[Case], name: str, code: str
) -> None:
    run = adversary(name, cases, no_guards)  # no guard needed: nothing reaches one
    assert run.applied == 0 and run.harmful == []
    assert run.refused == Counter({code: len(cases)})


# -- a provider ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        "I think F1 and F2 are the same, so merge them.",
        Completion('{"verdicts": [{"memory": "F1", "action": "merge", "target": "F2", "reason'
                   , 10, 10, truncated=True),
        Completion('{"verdicts": []}', 10, 10, truncated=True),
    ],
    ids=["prose", "cut-mid-json", "whole-json-but-cut"],
)  # fmt: skip
def test_a_provider_answer_in_prose_or_cut_off_is_unreadable_and_applies_nothing(
    cases: list[Case], answer: Any
) -> None:
    llm = FakeLLM(default=answer, model_id="prose")
    run = judge_cases("provider", cases, llm, no_guards)
    assert {o.outcome for o in run.outcomes} == {"unreadable"}
    assert run.applied == 0 and not run.refused
    # Each batch of 8 was asked again in halves down to one memory: 15 calls per full batch.
    assert run.calls == len(llm.calls) > len(cases)


def test_a_provider_error_stops_the_run_and_is_noted(cases: list[Case]) -> None:
    llm = FakeLLM(default=TransientProviderError("503 from the provider"))
    result = report([c.spec for c in cases], ideal_guards(cases), llm)
    assert result.metric("accuracy, provider fake").value == 0
    assert result.metric("harmful actions applied, provider fake").value == 0
    assert any("503" in note for note in result.notes)
    assert len(llm.calls) == 1  # a provider that failed is not asked again in the run


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as scripted:
        yield scripted


@pytest.mark.http
@pytest.mark.parametrize(
    ("content", "finish"),
    [("Merge F1 with F2: they are the same.", "stop"), ('{"verdicts": [{"memo', "length")],
    ids=["prose", "cut"],
)
def test_an_openai_compatible_model_over_http_that_answers_badly_changes_nothing(
    cases: list[Case], server: ScriptedServer, content: str, finish: str
) -> None:
    server.reset(openai_reply(content, finish_reason=finish))
    llm = OpenAILLM("judge-model", base_url=server.url + "/v1", retry=RetryPolicy(attempts=1))
    try:
        result = report([c.spec for c in cases[:3]], ideal_guards(cases), llm)
    finally:
        llm.close()
    assert result.metric("accuracy, provider openai/judge-model").value == 0
    assert result.metric("harmful actions applied, provider openai/judge-model").value == 0
    runs = {row[0]: row for row in result.tables[0].rows}
    assert runs["provider openai/judge-model"][6] == 3  # unreadable, each asked alone in the end
    assert server.requests[0].body["messages"][0]["content"] == memory_judge.SYSTEM


# -- the report ------------------------------------------------------------------------------


def test_the_report_reads_as_the_suite_promises(specs: list[dict[str, Any]], cases: list[Case]):
    # With guards and evidence of change that are right, every target of the suite is met.
    result = report(specs, ideal_guards(cases), evidence=ideal_evidence(cases))
    assert result.metric("accuracy, scripted correct model").met is True
    assert result.metric(f"harmful actions applied, {MERGE_ADVERSARY}").met is True
    assert result.metric(f"supersedes applied the wrong way round, {WRONG_WAY}").met is True
    assert result.metric(f"harmful actions applied, {WRONG_WAY}").met is True
    # With the real evidence, the seat preference is contested: a miss the suite reports.
    real = report(specs, ideal_guards(cases))
    assert real.metric("accuracy, scripted correct model").met is False
    assert (
        "1 supersede(s) contested"
        in real.metric("harmful actions applied, scripted correct model").note
    )
    assert any("not run" in note for note in result.notes)
    refusals = {(row[0], row[1]) for row in result.tables[1].rows}
    assert ("adversarial: an empty reason", "no_reason") in refusals
    json.dumps(result.to_dict())  # the JSON written beside the tables


def test_the_cli_runs_the_suite_with_the_real_guards(tmp_path: Path) -> None:
    out = tmp_path / "judge.json"
    command = [sys.executable, "-m", "distill", "--embedder", "hashing", "eval", "judge"]
    done = subprocess.run(
        [*command, "--json", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())["results"][0]
    assert result["params"]["cases"] == len(load_cases())
    metrics = {m["name"]: m for m in result["metrics"]}
    # What holds whatever the guards object to: no pin, direction or target is the model's.
    held = [
        "harmful actions applied, scripted correct model",
        f"supersedes applied the wrong way round, {WRONG_WAY}",
        "harmful actions applied, adversarial: a target shown, not with the memory",
        "harmful actions applied, adversarial: an alias never shown",
        "harmful actions applied, adversarial: an empty reason",
    ]
    assert {name: metrics[name]["value"] for name in held} == dict.fromkeys(held, 0)
    assert any("not run" in note for note in result["notes"])


@pytest.mark.http
def test_the_cli_asks_a_real_provider_given_with_llm(
    tmp_path: Path, server: ScriptedServer, cases: list[Case]
) -> None:
    # An OpenAI-compatible server on 127.0.0.1 answering as the correct model would: the
    # provider's figures are then the scripted correct model's, through the real client.
    # The golden set and the held-out one, as the command runs both.
    scripted = judge.correct_model([*cases, *build_all(load_cases(judge.HELDOUT))])
    server.reset(lambda request: openai_reply(scripted.complete("", prompt_of(request)).text))
    out = tmp_path / "judge.json"
    done = subprocess.run(
        [sys.executable, "-m", "distill", "--embedder", "hashing", "eval", "judge",
         "--llm", "openai", "--json", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "DISTILL_LLM": "none", "DISTILL_LLM_MODEL": "judge-model",
             "DISTILL_LLM_BASE_URL": server.url + "/v1", "DISTILL_LLM_API_KEY": "test-key"},
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    metrics = {m["name"]: m["value"] for m in json.loads(out.read_text())["results"][0]["metrics"]}
    provider = "provider openai/judge-model"
    assert metrics[f"accuracy, {provider}"] == metrics["accuracy, scripted correct model"]
    assert metrics[f"harmful actions applied, {provider}"] == 0
    assert metrics[f"model calls, {provider}"] == 5  # 38 cases, 8 to a call
    assert len(server.requests) == 5 + metrics[f"model calls, {provider}{judge.HELD_OUT}"]
    assert server.requests[0].headers.get("authorization") == "Bearer test-key"


@settings(max_examples=15, deadline=None)
@given(order=st.permutations(range(len(load_cases()))))
def test_what_a_case_comes_to_does_not_depend_on_its_batch(order: list[int]) -> None:
    # Aliases are per batch: a case judged beside other cases, in another position, must come
    # to the same outcome.
    cases = build_all(load_cases())
    guards = ideal_guards(cases)
    shuffled = [cases[i] for i in order]
    first = {o.case.id: o.outcome for o in correct(cases, guards).outcomes}
    again = {o.case.id: o.outcome for o in correct(shuffled, guards).outcomes}
    assert again == first


def test_retiring_a_pinned_memory_is_harmful_even_where_a_case_would_allow_it(
    specs: list[dict[str, Any]],
) -> None:
    spec = next(s for s in specs if s["id"] == "pinned-supersede")
    lenient = build_all([{**spec, "harmless": ["supersede c1 -> new"]}])[0]
    pinned, new = lenient.fact("c1"), lenient.item.memory
    checked = memory_judge.Checked()
    gone = pinned.model_copy(update={"status": FactStatus.SUPERSEDED, "superseded_by": new.id})
    checked.plan.add(ReviseFact(pinned, gone, "retire", "judge: moved", memory_judge.PASS_NAME))
    found = judge.outcome_of(lenient, checked)
    assert found.outcome == "supersede c1 -> new" and found.harmful == ("supersede c1 -> new",)
