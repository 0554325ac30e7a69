"""`drift`: one attribute under two names, two attributes under close names.

A model names the same attribute differently from one call to the next (`bike_count`, then
`bikes_owned`), and the stale value stays live beside the new one unless the engine sees
through the rename; it must also never collapse two attributes that only look alike
(`bike_count` / `car_count`). Each case is an earlier claim and a later one, a month apart,
about one person, labelled `same` or `different` by a person, with an `action` as noisy as
real extractors': about a quarter of the changes say `create`, a fifth of the different
attributes say `supersede`. Two sets ship with this module, both written apart from the
calibration pairs (scripts/calibration_pairs.json) and blind to the engine's rules:

- `drift_cases_heldout.json` (round 3, 2026-12-04): the measure. Written by another
  session blind to the rules and to both other sets, and only ever run, never read case by
  case: its figures are what the rules do on pairs nobody tuned them on.
- `drift_cases.json` (301 cases, 2026-12-03): development. It was the held-out measure
  until its misses were read to choose rules (the judge's soft signals in
  `attribute_match`), so its figures flatter the rules; they are shown beside the held-out
  ones so that the gap between them is visible.

Each case gets its own project (learned aliases are per project), and every case goes
through the public API: the first claims, one consolidation, the later claims, another.
What the person would then be served, per case:

- **same, merged**: one live fact for the attribute (superseded or reinforced, or a value
  conflict holding both values of one attribute);
- **same, contested**: both facts live and an open conflict set holds both;
- **same, leaked**: both facts live and nothing says they may be one (the silent failure);
- **different, apart**: both facts live, unflagged (right);
- **different, contested**: flagged as possibly one attribute (a person is asked for nothing);
- **different, merged**: one of them filed under the other's identity (a false merge).

Targets: silent leakage ≤ 10% of the same cases, false merges 0, different attributes
contested ≤ 10%, and no live fact holding a value mixed from both claims (`mixed`: a merge
that carried the old value's keys into a renamed one, `{"count": 3, "number": 4}`, serves the
stale count as current; 60 of the development set's runs did until session 36). Both runs
are made again with the later claim delivered first (a late event, a backfill): each case
must end the same way (DESIGN invariant 8).

The same cases run a second time with a scripted judge (`passes.identity_judge`): a model
that answers each contested pair it is shown from the case's label. With a model configured,
the adjudicator contests more (`attribute_match`, `Bands.judged`): within the embedder's
wider judge band, and, for a claim stated as a change, against the closest known fact no
hard signal rules out. It shows the judge path end to end (one call per batch of
pairs, verdicts applied as a person's would be: the newer value kept, an alias learned) and
what is left once the model has decided. A scripted judge is right by construction: these
lines measure which pairs reach it, not how well a real model answers.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime, timedelta
from importlib import resources
from typing import Any

from distill.adapters.llm.fake import FakeLLM
from distill.core import identity_judge
from distill.core.models import ConflictStatus, Fact, FactStatus
from distill.eval.context import EvalContext
from distill.eval.results import Dataset, Metric, SuiteResult, Table
from distill.memory import Memory

NAME = "drift"
TITLE = "Drift: one attribute under two names, two attributes under close names"
DATA = "drift_cases.json"  # development: seen while the rules were chosen
HELDOUT = "drift_cases_heldout.json"  # written blind, measured, not looked into
HELD_OUT = " (held out)"
LICENSE = "CC0-1.0 (written for Distill)"
SUBJECT = "user"
FIRST_AT = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
THEN_AT = FIRST_AT + timedelta(days=30)
LEAK_MAX = 0.10
CONTESTED_MAX = 0.10


def load_cases(name: str = DATA) -> dict[str, Any]:
    text = resources.files("distill.eval").joinpath(name).read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def event(case: dict[str, Any], side: str) -> dict[str, Any]:
    claim = case[side]
    found: dict[str, Any] = {"predicate": claim["predicate"], "value": claim["value"]}
    if side == "then":
        found["action"] = claim.get("action", "create")
    return {
        "project": case["id"],
        "subject": SUBJECT,
        "text": claim["text"],
        "source": "drift",
        "occurred_at": FIRST_AT if side == "first" else THEN_AT,
        "claims": [found],
    }


def served(mem: Memory, case: dict[str, Any]) -> str:
    """merged, contested or apart: what the person is served for this case."""
    project = case["id"]
    facts = mem.facts(subject=SUBJECT, project=project, include_retired=True)
    live = [f for f in facts if f.status is FactStatus.ACTIVE]
    first = _holding(live, case["first"])
    then = _holding(live, case["then"])
    if first is None or then is None or first.identity_key == then.identity_key:
        return "merged"
    open_sets = mem.conflicts(subject=SUBJECT, project=project, status=ConflictStatus.OPEN)
    if any({first.id, then.id} <= set(c.member_ids) for c in open_sets):
        return "contested"
    return "apart"


def _holding(live: list[Fact], claim: dict[str, Any]) -> Fact | None:
    """The live fact stated under this claim's own predicate, if one stayed so."""
    for fact in live:
        if fact.predicate == claim["predicate"]:
            return fact
    return None


def scripted_judge(cases: list[dict[str, Any]]) -> FakeLLM:
    """A model that answers each numbered pair of a judge prompt from the cases' labels."""
    labels = {
        frozenset((c["first"]["predicate"], c["then"]["predicate"])): c["relation"] == "same"
        for c in cases
    }
    answer = identity_judge.scripted(lambda a, b: labels.get(frozenset((a, b)), False), "label")
    return FakeLLM(default=answer, model_id="scripted-judge")


def mixed(mem: Memory, case: dict[str, Any]) -> bool:
    """Whether a live fact of the case holds a value neither claim stated: keys of both
    (`{"count": 3, "number": 4}`), the old value's keys carried into a renamed one."""
    stated = [set(case[side]["value"]) for side in ("first", "then")]
    held = [set(f.value or {}) for f in mem.facts(subject=SUBJECT, project=case["id"])]
    return any(not any(keys <= claim for claim in stated) for keys in held)


def measure(
    ctx: EvalContext, cases: list[dict[str, Any]], judge: FakeLLM | None, reverse: bool = False
) -> tuple[dict[str, str], int, int, int]:
    """Each case's outcome, the consolidation errors, the judge's calls and the cases
    serving a value mixed from both claims (`mixed`); `reverse` delivers the later claim
    first (each still dated as in the case)."""
    errors = calls = 0
    options: dict[str, Any] = {"extractor": "claims"}
    if judge is not None:
        options["llm"] = judge
    sides = ("then", "first") if reverse else ("first", "then")
    with ctx.memory(**options) as mem:
        for step, side in enumerate(sides, start=1):
            mem.add_events(event(c, side) for c in cases)
            report = mem.consolidate()
            errors += len(report.errors) + bool(report.judge_stopped)
            calls += report.llm_calls
            ctx.progress(NAME, step, 2)
        outcomes = {c["id"]: served(mem, c) for c in cases}
        chimeras = sum(mixed(mem, c) for c in cases)
    return outcomes, errors, calls, chimeras


def run(ctx: EvalContext) -> SuiteResult:
    development = ctx.take(load_cases(DATA)["cases"])
    heldout = ctx.take(load_cases(HELDOUT)["cases"])
    held_metrics, held_table = _measure_set(ctx, heldout, HELD_OUT)
    dev_metrics, dev_table = _measure_set(ctx, development, "")
    result = SuiteResult(
        suite=NAME,
        title=TITLE,
        datasets=[
            Dataset("Distill drift cases, held out (round 3)", LICENSE, f"distill/eval/{HELDOUT}"),
            Dataset("Distill drift cases, development", LICENSE, f"distill/eval/{DATA}"),
        ],
        params={
            **_counts(heldout, "held-out "),
            **_counts(development, ""),
        },
        metrics=held_metrics + dev_metrics,
    )
    result.tables += [held_table, dev_table]
    return result


def _counts(cases: list[dict[str, Any]], prefix: str) -> dict[str, int]:
    return {
        f"{prefix}cases": len(cases),
        f"{prefix}same": sum(1 for c in cases if c["relation"] == "same"),
        f"{prefix}different": sum(1 for c in cases if c["relation"] == "different"),
    }


def _measure_set(
    ctx: EvalContext, cases: list[dict[str, Any]], suffix: str
) -> tuple[list[Metric], Table]:
    """One set's metrics (names ending in `suffix`) and its table by category."""
    outcomes, errors, _, mixed_plain = measure(ctx, cases, None)
    judged, judge_errors, calls, mixed_judged = measure(ctx, cases, scripted_judge(cases))
    backward, back_errors, _, mixed_back = measure(ctx, cases, None, reverse=True)
    judged_backward, judged_back_errors, _, mixed_judged_back = measure(
        ctx, cases, scripted_judge(cases), reverse=True
    )

    def agree(a: dict[str, str], b: dict[str, str]) -> float:
        return round(sum(a[c["id"]] == b[c["id"]] for c in cases) / (len(cases) or 1), 4)

    def rates(
        found: dict[str, str], among: list[dict[str, Any]] = cases
    ) -> tuple[float, int, float, Counter[tuple[str, str]]]:
        tally = Counter((c["relation"], found[c["id"]]) for c in among)
        same = sum(v for (r, _), v in tally.items() if r == "same") or 1
        different = sum(v for (r, _), v in tally.items() if r == "different") or 1
        leak = round(tally[("same", "apart")] / same, 4)
        contested = round(tally[("different", "contested")] / different, 4)
        return leak, tally[("different", "merged")], contested, tally

    leak, false_merges, contested, tally = rates(outcomes)
    j_leak, j_false, j_contested, _ = rates(judged)
    same = sum(v for (r, _), v in tally.items() if r == "same") or 1
    unseen = [c for c in cases if c.get("seen_pair") is False]
    metrics = [
        Metric.at_most(
            f"silent leakage (same attribute, two live unflagged facts){suffix}", leak, LEAK_MAX
        ),
        Metric.at_most(f"false merges (two attributes collapsed){suffix}", false_merges, 0),
        Metric.at_most(f"different attributes contested{suffix}", contested, CONTESTED_MAX),
        Metric.info(
            f"same attribute merged{suffix}",
            round(tally[("same", "merged")] / same, 4),
            "filed under one identity: superseded, reinforced or in a value conflict",
        ),
        Metric.info(
            f"same attribute contested{suffix}", round(tally[("same", "contested")] / same, 4)
        ),
        Metric.at_most(f"silent leakage, scripted judge{suffix}", j_leak, LEAK_MAX),
        Metric.at_most(f"false merges, scripted judge{suffix}", j_false, 0),
        Metric.at_most(f"left contested, scripted judge{suffix}", j_contested, CONTESTED_MAX),
        Metric.info(
            f"judge calls{suffix}",
            calls,
            "each case is its own project here, and a call covers one project's pairs "
            f"(up to 20); without a model, {tally[('same', 'contested')]} "
            f"+ {tally[('different', 'contested')]} cases are contested",
        ),
        Metric.at_least(
            f"same outcome when the later claim arrives first{suffix}",
            agree(outcomes, backward),
            1.0,
            "merged, contested or apart, per case (DESIGN invariant 8)",
        ),
        Metric.at_least(
            f"same outcome when the later claim arrives first, scripted judge{suffix}",
            agree(judged, judged_backward),
            1.0,
        ),
        Metric.at_most(
            f"values mixed from both claims{suffix}",
            mixed_plain + mixed_judged + mixed_back + mixed_judged_back,
            0,
            "a live fact with keys of both the earlier and the later value (a stale key "
            "carried into a renamed one), over the four runs",
        ),
        Metric.at_most(
            f"consolidation errors{suffix}",
            errors + judge_errors + back_errors + judged_back_errors,
            0,
        ),
    ]
    if unseen:
        # The pairs of names neither the calibration pairs nor the development set hold.
        unseen_rates, judged_unseen = rates(outcomes, unseen), rates(judged, unseen)
        note = f"{len(unseen)} cases whose two names no earlier set pairs"
        metrics += [
            Metric.info(f"silent leakage, unseen pairs{suffix}", unseen_rates[0], note),
            Metric.info(f"different attributes contested, unseen pairs{suffix}", unseen_rates[2]),
            Metric.info(f"silent leakage, scripted judge, unseen pairs{suffix}", judged_unseen[0]),
        ]
    return metrics, _by_category(cases, outcomes, suffix)


def _by_category(cases: list[dict[str, Any]], outcomes: dict[str, str], suffix: str) -> Table:
    rows: dict[str, Counter[str]] = {}
    for case in cases:
        counts = rows.setdefault(case["category"], Counter())
        counts[f"{case['relation']} {outcomes[case['id']]}"] += 1
    columns = [
        "same merged",
        "same contested",
        "same apart",
        "different apart",
        "different contested",
        "different merged",
    ]
    return Table(
        f"outcomes by category{suffix} (same apart = leaked; different merged = false merge)",
        ["category", *columns],
        [[name, *(counts[c] for c in columns)] for name, counts in sorted(rows.items())],
    )
