"""`scenarios`: `../shared/SCENARIOS.md` as an executable file of cases.

`scenarios.json` (shipped with the package) holds one or more cases per numbered scenario
(1–44). Each case runs on a fresh memory through the public `Memory` API, with a fixed clock
and deterministic ids; `scenario_steps.py` runs its actions and `scenario_checks.py` its
checks. Scenarios whose capability is not built yet are in the file with what they need and
are reported as "not built", never as passed. Where part of such a scenario is testable
today, that part is its own case.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from distill.adapters.embed import make_embedder
from distill.errors import ConfigurationError
from distill.eval.context import EvalContext, Progress
from distill.eval.results import Dataset, Metric, SuiteResult, Table
from distill.eval.scenario_checks import CHECKS, CaseFailed
from distill.eval.scenario_steps import (
    ACTIONS,
    ANY_ACTION,
    CASE_MAX_DISTANCE,
    REQUIRED,
    CaseRun,
    ScenarioClock,
    distance,
    distance_embedder,
    error_class,
    forms_embedder,
    id_factory,
    make_llm,
    threshold_of,
)
from distill.ports import Embedder

NAME = "scenarios"
TITLE = "SCENARIOS.md as executable cases"
CASES_FILE = Path(__file__).with_name("scenarios.json")

# The scenario numbers of each section of SCENARIOS.md.
SECTIONS: dict[str, range] = {
    "A": range(1, 11),
    "B": range(11, 17),
    "C": range(17, 21),
    "D": range(21, 30),
    "E": range(30, 35),
    "F": range(35, 38),
    "G": range(38, 45),
}
CASE_KEYS = {"id", "section", "scenario", "title", "needs", "memory", "steps"}
MEMORY_KEYS = {"extractor", "llm", "batch_events", "max_distance", "vectors", "policies", "forms"}

PASSED, FAILED, NOT_BUILT = "passed", "failed", "not built"


@dataclass(frozen=True)
class CaseResult:
    id: str
    section: str
    title: str
    verdict: str  # PASSED, FAILED or NOT_BUILT
    reason: str = ""  # why it failed, or what it needs when not built


def _quiet(_label: str, _done: int, _total: int) -> None:
    return None


# -- loading -------------------------------------------------------------------------------------
def load_cases(path: Path) -> list[dict[str, Any]]:
    """The cases of a file, validated: a malformed case is a `ConfigurationError` naming it."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"cannot read scenario cases from {path}: {exc}") from exc
    cases = document.get("cases") if isinstance(document, dict) else None
    if not isinstance(cases, list):
        raise ConfigurationError(f'{path}: expected an object {{"cases": [...]}}')
    seen: set[str] = set()
    for index, case in enumerate(cases, 1):
        name = case.get("id", f"#{index}") if isinstance(case, dict) else f"#{index}"
        problem = _case_problem(case, seen)
        if problem:
            raise ConfigurationError(f"{path}: case {name}: {problem}")
        seen.add(case["id"])
    return cases


def _case_problem(case: Any, seen: set[str]) -> str:
    """What is wrong with one case ("" when nothing is)."""
    if not isinstance(case, dict):
        return "a case is an object"
    missing = {"id", "section", "scenario", "title"} - case.keys()
    if missing:
        return f"missing {', '.join(sorted(missing))}"
    if case.keys() - CASE_KEYS:
        return f"unknown keys {', '.join(sorted(case.keys() - CASE_KEYS))}"
    if case["id"] in seen:
        return "the id is used twice"
    numbers = SECTIONS.get(case["section"])
    if numbers is None:
        return f"section {case['section']!r} is not one of {', '.join(SECTIONS)}"
    if case["scenario"] not in numbers:
        return f"scenario {case['scenario']!r} is not in section {case['section']}"
    if ("needs" in case) == ("steps" in case):
        return "give either `steps` (a built scenario) or `needs` (the capability it waits for)"
    problem = _memory_problem(case.get("memory", {}))
    if problem:
        return f"memory: {problem}"
    steps = case.get("steps", [])
    if "steps" in case and not (isinstance(steps, list) and steps):
        return "`steps` is a non-empty list"
    for number, step in enumerate(steps, 1):
        problem = _step_problem(step)
        if problem:
            return f"step {number}: {problem}"
    return ""


def _memory_problem(memory: Any) -> str:
    if not isinstance(memory, dict):
        return "an object of Memory options"
    if memory.keys() - MEMORY_KEYS:
        return f"unknown options {', '.join(sorted(memory.keys() - MEMORY_KEYS))}"
    for pair in memory.get("vectors", []):
        if not isinstance(pair, dict) or pair.keys() != {"distance", "a", "b"}:
            return 'each of `vectors` is {"distance": ..., "a": [predicate, value], "b": [...]}'
        try:
            distance(pair["distance"], CASE_MAX_DISTANCE)
        except (TypeError, ValueError) as exc:
            return f"vectors: {exc}"
    llm = memory.get("llm", {})
    for answer in [*llm.get("answers", []), llm.get("default")]:
        if isinstance(answer, dict) and "raise" in answer and not error_class(answer["raise"]):
            return f"llm: {answer['raise']!r} is not a distill error"
    return ""


def _step_problem(step: Any) -> str:
    if not isinstance(step, dict) or ("do" in step) == ("check" in step):
        return 'a step is an object with either "do" or "check"'
    if "do" in step:
        op, vocabulary, allowed = step["do"], ACTIONS, {"do"} | ANY_ACTION
    else:
        op, vocabulary, allowed = step["check"], CHECKS, {"check"}
    if op not in vocabulary:
        return f"unknown operation {op!r} (known: {', '.join(vocabulary)})"
    unknown = step.keys() - allowed - vocabulary[op]
    if unknown:
        return f"{op}: unknown keys {', '.join(sorted(unknown))}"
    missing = REQUIRED.get(op, set()) - step.keys()
    if missing:
        return f"{op}: missing {', '.join(sorted(missing))}"
    return ""


# -- running -------------------------------------------------------------------------------------
def run_case(case: Mapping[str, Any], embedder: Embedder) -> CaseResult:
    """One case on a fresh memory. A case with `vectors` gets a test embedder that places its
    claims' identity texts at the distances it gives; the others use `embedder`."""
    if "needs" in case:
        return CaseResult(case["id"], case["section"], case["title"], NOT_BUILT, case["needs"])
    options = dict(case.get("memory", {}))
    pairs = options.pop("vectors", None)
    forms = options.pop("forms", None)
    if "llm" in options:
        options["llm"] = make_llm(options["llm"])
    if pairs:
        embedder = distance_embedder(pairs, threshold_of(options))
        options.setdefault("max_distance", threshold_of(options))
    elif forms:
        embedder = forms_embedder(forms)
    ctx = EvalContext(data_dir=Path("."), embedder=embedder)
    new_id = id_factory()
    try:
        with ctx.memory(clock=ScenarioClock(), new_id=new_id, **options) as mem:
            reason = _run_steps(CaseRun(mem, options, new_id), case["steps"])
    except Exception as exc:  # the memory could not be built or closed: a finding too
        reason = f"its memory raised {type(exc).__name__}: {exc}"
    verdict = FAILED if reason else PASSED
    return CaseResult(case["id"], case["section"], case["title"], verdict, reason)


def _run_steps(run: CaseRun, steps: list[dict[str, Any]]) -> str:
    """Run the steps in order; the reason of the first that fails ("" when none does)."""
    for number, step in enumerate(steps, 1):
        label = f"step {number} ({step.get('do') or step.get('check')})"
        try:
            run.step(step)
        except CaseFailed as exc:
            return f"{label}: {exc}"
        except Exception as exc:  # an error the case did not expect is a finding
            return f"{label} raised {type(exc).__name__}: {exc}"
    return ""


def run_cases(
    path: Path = CASES_FILE,
    embedder: str | Embedder = "hashing",
    progress: Progress = _quiet,
) -> list[CaseResult]:
    """Every case of a file, without an `EvalContext` (tests point this at other files)."""
    return _run_all(load_cases(path), make_embedder(embedder), progress)


def _run_all(
    cases: list[dict[str, Any]], embedder: Embedder, progress: Progress
) -> list[CaseResult]:
    results = []
    for done, case in enumerate(cases, 1):
        results.append(run_case(case, embedder))
        progress("scenario cases", done, len(cases))
    return results


def run(ctx: EvalContext) -> SuiteResult:
    cases = ctx.take(load_cases(CASES_FILE))
    results = _run_all(cases, ctx.shared_embedder(), ctx.progress)
    embedder = ctx.embedder if isinstance(ctx.embedder, str) else ctx.embedder.model_id
    return summarise(results, cases, CASES_FILE, embedder)


# -- reporting -----------------------------------------------------------------------------------
def summarise(
    results: list[CaseResult], cases: Iterable[Mapping[str, Any]], path: Path, embedder: str
) -> SuiteResult:
    """Counts per verdict and per section, the failures with their reasons, and what the
    scenarios not built yet need."""
    count = {v: sum(r.verdict == v for r in results) for v in (PASSED, FAILED, NOT_BUILT)}
    covered = {c["scenario"] for c in cases}
    by_section = [
        [section, *(sum(r.section == section and r.verdict == v for r in results) for v in count)]
        for section in SECTIONS
    ]
    semantic = sorted(c["id"] for c in cases if "vectors" in c.get("memory", {}))
    return SuiteResult(
        suite=NAME,
        title=TITLE,
        datasets=[Dataset("SCENARIOS.md as cases", "Apache-2.0 (this project's own)", str(path))],
        metrics=[
            Metric.info(PASSED, count[PASSED], "cases whose every check held"),
            Metric.at_most(FAILED, count[FAILED], 0, "see the failures table"),
            Metric.info(NOT_BUILT, count[NOT_BUILT], "capability not built yet; never passed"),
            Metric.info("scenarios covered", len(covered), f"of {len(range(1, 45))} numbered"),
        ],
        tables=[
            Table("Cases by section", ["section", PASSED, FAILED, NOT_BUILT], by_section),
            Table(
                "Failures",
                ["case", "title", "reason"],
                [[r.id, r.title, r.reason] for r in results if r.verdict == FAILED],
            ),
            Table(
                "Not built",
                ["case", "needs"],
                [[r.id, r.reason] for r in results if r.verdict == NOT_BUILT],
            ),
        ],
        notes=[
            f"Each case runs on a fresh memory through the public Memory API, embedder {embedder}.",
            f"Semantic cases ({', '.join(semantic) or 'none'}) use a test embedder instead: "
            "hashing vectors with the identity texts of their claims pinned at the cosine "
            "distances the case file gives (SCENARIOS.md allows it); the real model's "
            "distances are calibrated separately.",
        ],
        params={"cases": str(path)},
    )
