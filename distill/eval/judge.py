"""`judge`: the semantic judge's golden set, run through the real prompt, reader and checks.

`judge_cases.json` (shipped with this module) holds one new memory per case beside the stored
memories recall would put next to it, each with the date it was stated and whether it is
pinned, the verdict a careful person would give, and what that verdict must come to once
`core.memory_judge.check` has had its say. The cases were written from the iii seed and
SCENARIOS D, blind to the merge guards (`statements.merge_objections`): they read as a
user's memories read, and a guard that misses one of them shows here as a miss, not as a case
rewritten to pass. Kinds: `supersede` (moved, rescheduled, switched), `merge` (a paraphrase,
another language, filler words), `keep` (two allergies, two projects) and `trap` (always /
never, a role swap, a changed number, a dropped condition or date, a pin the model would
retire).

An outcome is written as the store would show it: `nothing`, `supersede X -> Y` or `merge X
-> Y` (X retired with `superseded_by` Y; `new` is the case's new memory, `c1`, `c2`... its
candidates in the order shown), or `refused CODE` when nothing was applied and a check refused
the verdict. A case lists as `harmless` the other outcomes that would lose nothing (the two
ways round of a paraphrase). An applied retirement is **harmful** when it is neither the
expected outcome nor a harmless one, or when it retires a pinned memory: a fact that must stay
live was retired, or it points at the wrong fact.

Every case goes through what the pass runs, in batches of `JUDGE_BATCH` as the pass sends
them: `render` -> a model through the LLM port -> `read` -> `check`, with an unreadable
answer asked again in halves down to one case (then that case is `unreadable`: nothing
applied). The models:

- **correct**: a scripted model that reads each prompt with `asked` and answers every memory
  with its case's verdict. Target: every outcome as expected.
- **adversarial**, five scripted runs: merge every memory with its first candidate; supersede
  every memory's first candidate "the wrong way round" (the candidate named as the memory,
  then the memory named as replaced by it); a target shown in the batch but not with that
  memory; an alias that was never shown; an empty reason. Target: no harmful action applied.
  What the checks refused is reported by code.
- **a real provider**, when the command is given one (`distill eval judge --llm PROVIDER`):
  accuracy and harmful actions, for users who have a model.

The guards are passed in (`report(..., objections=...)`); `run` passes the real ones.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from typing import Any

from distill.adapters.llm.fake import FakeLLM
from distill.core.answers import Unreadable
from distill.core.changes import replacement_evidence
from distill.core.memory_judge import (
    JUDGE_BATCH,
    SCHEMA,
    SYSTEM,
    Checked,
    Evidence,
    Guards,
    Item,
    Objections,
    asked,
    check,
    read,
    render,
)
from distill.core.models import Fact, FactKind, FactStatus, Trust
from distill.core.plan import OpenConflict, ReviseFact
from distill.errors import ProviderError
from distill.eval.context import EvalContext
from distill.eval.results import Dataset, Metric, SuiteResult, Table
from distill.ports import LLM

NAME = "judge"
TITLE = "Judge: the semantic judge's golden set (render, a model, read, check)"
DATA = "judge_cases.json"
# Written after the checks by someone who had not read them (nor the prompt, nor the guards),
# the way memories arrive: updates with no change word, typos, three languages, dates in
# several formats. Nothing was tuned on it; it is reported beside the golden set.
HELDOUT = "judge_cases_heldout.json"
HELD_OUT = " (held out)"
LICENSE = "CC0-1.0 (written for Distill)"
PROJECT = "eval-judge"
SUBJECT = "user"
STATED_HOUR = 9  # o'clock UTC: each case gives a date; the hour only has to be the same for all
# When the checks run: after every stated date of the set, so no validity ends in the future.
CHECKED_AT = datetime(2026, 1, 1, tzinfo=UTC)
NEW = "new"
WRONG_WAY = "adversarial: supersede the wrong way round"
WRONG_WAY_REASON = "The candidate is the newer statement and replaces this memory."

# A scripted model: what it answers to a rendered prompt.
Answerer = Callable[[str], dict[str, Any]]


@dataclass(frozen=True)
class Case:
    spec: dict[str, Any]
    item: Item
    names: dict[str, str]  # fact id -> "new" | "c1" | "c2" ...

    @property
    def id(self) -> str:
        return str(self.spec["id"])

    @property
    def expected(self) -> str:
        return str(self.spec["expected"])

    @property
    def harmless(self) -> set[str]:
        return {self.expected, *self.spec.get("harmless", [])}

    def fact(self, name: str) -> Fact:
        return next(
            f for f in (self.item.memory, *self.item.candidates) if self.names[f.id] == name
        )


@dataclass(frozen=True)
class Outcome:
    case: Case
    outcome: str  # as the module docstring writes it
    retirements: tuple[str, ...]  # "supersede X -> Y" / "merge X -> Y", as applied
    harmful: tuple[str, ...]  # the retirements among them that lose or misplace a fact
    refused: tuple[str, ...]  # the codes of this case's refused verdicts

    @property
    def accurate(self) -> bool:
        return self.outcome == self.case.expected


def load_cases(name: str = DATA) -> list[dict[str, Any]]:
    text = resources.files("distill.eval").joinpath(name).read_text(encoding="utf-8")
    cases: list[dict[str, Any]] = json.loads(text)["cases"]
    return cases


def build(spec: dict[str, Any]) -> Case:
    """A case's facts as the store would hold them: active free-text memories of one person,
    each recorded when it was stated."""

    def fact(name: str, given: dict[str, Any]) -> Fact:
        stated = datetime.fromisoformat(given["stated"]).replace(hour=STATED_HOUR, tzinfo=UTC)
        return Fact(
            id=f"{spec['id']}:{name}",
            project=PROJECT,
            subject=SUBJECT,
            kind=FactKind.MEMORY,
            predicate=None,
            value=None,
            text=given["text"],
            identity_key=None,
            status=FactStatus.ACTIVE,
            valid_from=stated,
            recorded_at=stated,
            last_reinforced_at=stated,
            trust=Trust.TRUSTED,
            pinned=bool(given.get("pinned", False)),
        )

    memory = fact(NEW, spec["new"])
    candidates = tuple(fact(f"c{n}", c) for n, c in enumerate(spec["candidates"], start=1))
    names = {f.id: f.id.rsplit(":", 1)[1] for f in (memory, *candidates)}
    return Case(spec, Item(memory, candidates), names)


def build_all(specs: Sequence[dict[str, Any]]) -> list[Case]:
    """Every case, refusing a set a scripted model could not read unambiguously: `asked`
    gives texts, so each new memory's text must be unique, and each candidate's within its
    case."""
    cases = [build(s) for s in specs]
    seen = Counter(c.item.memory.text for c in cases)
    twice = [t for t, n in seen.items() if n > 1]
    if twice:
        raise ValueError(f"two cases share the new memory text {twice[0]!r}")
    for c in cases:
        texts = [f.text for f in c.item.candidates]
        if len(set(texts)) != len(texts):
            raise ValueError(f"case {c.id}: two candidates share a text")
    return cases


# -- the scripted models -------------------------------------------------------------------


def scripted(answer: Answerer, model_id: str) -> FakeLLM:
    """A model behind the LLM port that reads the prompt and answers JSON, as a real one."""
    return FakeLLM(default=lambda prompt: json.dumps(answer(prompt)), model_id=model_id)


def correct_model(cases: Sequence[Case]) -> FakeLLM:
    """Answers each memory of a prompt with its case's verdict, naming the target by the
    alias the prompt gave that candidate's text."""
    by_text = {c.item.memory.text: c for c in cases}

    def answer(prompt: str) -> dict[str, Any]:
        verdicts = []
        for alias, text, candidates in asked(prompt):
            case = by_text[text]
            verdict = case.spec["verdict"]
            target = None
            if verdict["target"] is not None:
                wanted = case.fact(verdict["target"]).text
                target = next(a for a, t in candidates if t == wanted)
            verdicts.append(
                {
                    "memory": alias,
                    "action": verdict["action"],
                    "target": target,
                    "reason": verdict["reason"],
                }
            )
        return {"verdicts": verdicts}

    return scripted(answer, "scripted-correct")


# What an adversary says about one memory: (its index in the batch, its alias, its
# candidates, every alias of the batch's new memories, the batch's alias count) -> entries.
Adversary = Callable[[int, str, list[tuple[str, str]], list[str], int], list[dict[str, Any]]]


def _each(verdict: Adversary) -> Answerer:
    """A scripted adversary's answer to a prompt, from what it says about each memory."""

    def answer(prompt: str) -> dict[str, Any]:
        memories = asked(prompt)
        news = [alias for alias, _, _ in memories]
        count = len({a for m in memories for a in (m[0], *(c for c, _ in m[2]))})
        entries: list[dict[str, Any]] = []
        for index, (alias, _text, candidates) in enumerate(memories):
            entries.extend(verdict(index, alias, candidates, news, count))
        return {"verdicts": entries}

    return answer


Cands = list[tuple[str, str]]


def _merge_first(_i: int, alias: str, cands: Cands, _n: list[str], _k: int) -> list[Any]:
    return [{"memory": alias, "action": "merge", "target": cands[0][0], "reason": "Same fact."}]


def _supersede_wrong_way(_i: int, alias: str, cands: Cands, _n: list[str], _k: int) -> list[Any]:
    first = cands[0][0]
    return [
        {"memory": first, "action": "supersede", "target": alias, "reason": WRONG_WAY_REASON},
        {"memory": alias, "action": "supersede", "target": first, "reason": WRONG_WAY_REASON},
    ]


def _unshown_target(i: int, alias: str, _c: Cands, news: list[str], _k: int) -> list[Any]:
    # Shown in the batch, but not with this memory: the next memory, or itself when alone.
    other = news[(i + 1) % len(news)]
    return [{"memory": alias, "action": "supersede", "target": other, "reason": "Replaced."}]


def _unknown_alias(i: int, alias: str, _c: Cands, _n: list[str], count: int) -> list[Any]:
    # The alias after the last one shown, or one in another shape: what a model invents.
    made_up = f"F{count + 1}" if i % 2 == 0 else f"fact-{count}"
    return [{"memory": alias, "action": "supersede", "target": made_up, "reason": "Replaced."}]


def _empty_reason(i: int, alias: str, cands: Cands, _n: list[str], _k: int) -> list[Any]:
    action = "merge" if i % 2 else "supersede"
    return [{"memory": alias, "action": action, "target": cands[0][0], "reason": " " * (i % 2)}]


ADVERSARIES: dict[str, Answerer] = {
    "adversarial: merge the first candidate": _each(_merge_first),
    WRONG_WAY: _each(_supersede_wrong_way),
    "adversarial: a target shown, not with the memory": _each(_unshown_target),
    "adversarial: an alias never shown": _each(_unknown_alias),
    "adversarial: an empty reason": _each(_empty_reason),
}


# -- running a model over the cases ------------------------------------------------------------


@dataclass
class Run:
    name: str
    outcomes: list[Outcome]
    calls: int
    errors: list[str]

    @property
    def accuracy(self) -> float:
        return round(sum(o.accurate for o in self.outcomes) / (len(self.outcomes) or 1), 4)

    @property
    def harmful(self) -> list[tuple[str, str]]:
        return [(o.case.id, h) for o in self.outcomes for h in o.harmful]

    @property
    def applied(self) -> int:
        return sum(len(o.retirements) for o in self.outcomes)

    @property
    def contested(self) -> int:
        return sum(o.outcome.startswith("contested") for o in self.outcomes)

    @property
    def wrong_way(self) -> list[tuple[str, str]]:
        """Supersedes applied backwards: the newer statement retired into the older."""
        found = []
        for o in self.outcomes:
            kind, _, pair = o.case.expected.partition(" ")
            if kind == "supersede":
                older, _, newer = pair.partition(" -> ")
                found += [
                    (o.case.id, r) for r in o.retirements if r == f"{kind} {newer} -> {older}"
                ]
        return found

    @property
    def refused(self) -> Counter[str]:
        return Counter(code for o in self.outcomes for code in o.refused)


def judge_cases(
    name: str,
    cases: Sequence[Case],
    model: LLM,
    objections: Objections,
    evidence: Evidence = replacement_evidence,
) -> Run:
    """Every case through render -> `model` -> read -> check, `JUDGE_BATCH` at a time."""
    run = Run(name, [], 0, [])
    guards = Guards(objections, evidence)
    for start in range(0, len(cases), JUDGE_BATCH):
        run.outcomes.extend(_batch(run, cases[start : start + JUDGE_BATCH], model, guards))
    return run


def _batch(run: Run, batch: Sequence[Case], model: LLM, guards: Guards) -> list[Outcome]:
    if run.errors:  # as the pass does, a provider that failed is not asked again this run
        return [Outcome(c, "error", (), (), ()) for c in batch]
    shown = render([c.item for c in batch])
    run.calls += 1
    try:
        completion = model.complete(SYSTEM, shown.prompt, SCHEMA)
        verdicts = read(completion.text, shown, completion.truncated)
    except Unreadable:
        if len(batch) > 1:  # as the pass does: ask again in halves, down to one memory
            half = len(batch) // 2
            return _batch(run, batch[:half], model, guards) + _batch(
                run, batch[half:], model, guards
            )
        return [Outcome(batch[0], "unreadable", (), (), ())]
    except ProviderError as exc:  # transport, auth, quota: the rest is not judged
        run.errors.append(f"{type(exc).__name__}: {exc}")
        return [Outcome(c, "error", (), (), ()) for c in batch]
    ids = iter(range(len(batch) * 2))
    checked = check(
        verdicts, [c.item for c in batch], CHECKED_AT, guards, lambda: f"set-{next(ids)}"
    )
    return [outcome_of(c, checked) for c in batch]


def outcome_of(case: Case, checked: Checked) -> Outcome:
    """What the checked plan does to one case's facts, in the golden set's words."""
    names = case.names
    retirements = []
    harmful = []
    for action in checked.plan.actions:
        if not (isinstance(action, ReviseFact) and action.before.id in names):
            continue
        if action.op not in ("retire", "merge"):
            continue  # the survivor absorbing a merge's evidence retires nothing
        kind = "supersede" if action.op == "retire" else "merge"
        pointer = action.after.superseded_by or ""
        said = f"{kind} {names[action.before.id]} -> {names.get(pointer, 'elsewhere ' + pointer)}"
        retirements.append(said)
        if action.before.pinned or said not in case.harmless:
            harmful.append(said)
    contested = [
        "contested " + ", ".join(sorted(names[m] for m in action.conflict.member_ids))
        for action in checked.plan.actions
        if isinstance(action, OpenConflict) and set(action.conflict.member_ids) <= names.keys()
    ]
    refused = tuple(r.code for r in checked.refused if r.memory_id == case.item.memory.id)
    if retirements:
        outcome = "; ".join(sorted(retirements))
    elif contested:
        outcome = "; ".join(sorted(contested))
    elif refused:
        outcome = f"refused {refused[0]}"
    else:
        outcome = "nothing"
    return Outcome(case, outcome, tuple(retirements), tuple(harmful), refused)


# -- the report -----------------------------------------------------------------------------


def report(
    specs: Sequence[dict[str, Any]],
    objections: Objections,
    llm: LLM | None = None,
    heldout: Sequence[dict[str, Any]] = (),
    evidence: Evidence = replacement_evidence,
) -> SuiteResult:
    """The suite's result for these cases (and, when given, the held-out ones, measured the
    same way), with these merge guards and evidence of change and, when given, a real
    model."""
    cases = build_all(specs)
    runs, metrics, notes = _measure(cases, objections, evidence, llm, "")
    params: dict[str, Any] = {"cases": len(cases)}
    params |= {f"{k} cases": n for k, n in sorted(Counter(c.spec["kind"] for c in cases).items())}
    datasets = [Dataset("Distill judge golden set", LICENSE, f"distill/eval/{DATA}")]
    if heldout:
        held = build_all(heldout)
        more = _measure(held, objections, evidence, llm, HELD_OUT)
        runs, metrics, notes = runs + more[0], metrics + more[1], notes + more[2]
        params["held-out cases"] = len(held)
        datasets.append(Dataset("Distill judge held-out set", LICENSE, f"distill/eval/{HELDOUT}"))
    if llm is None:
        notes.append("a real provider: not run (give one: distill eval judge --llm PROVIDER)")
    result = SuiteResult(
        suite=NAME, title=TITLE, datasets=datasets, params=params, metrics=metrics, notes=notes
    )
    result.tables += [_runs_table(runs), _refusals_table(runs), _misses_table(runs)]
    return result


def _measure(
    cases: Sequence[Case],
    objections: Objections,
    evidence: Evidence,
    llm: LLM | None,
    suffix: str,
) -> tuple[list[Run], list[Metric], list[str]]:
    """The correct model, the adversaries and the real model (if any) over one set."""

    def judged(name: str, model: LLM) -> Run:
        return judge_cases(name + suffix, cases, model, objections, evidence)

    correct = judged("scripted correct", correct_model(cases))
    adversarial = [
        judged(name, scripted(answer, "scripted-adversary")) for name, answer in ADVERSARIES.items()
    ]
    real = judged(f"provider {_model_id(llm)}", llm) if llm else None
    metrics = [
        Metric.at_least(f"accuracy, scripted correct model{suffix}", correct.accuracy, 1.0),
        Metric.at_most(
            f"harmful actions applied, scripted correct model{suffix}",
            len(correct.harmful),
            0,
            f"{correct.contested} supersede(s) contested: the words show no change",
        ),
    ]
    for run in adversarial:
        if run.name == WRONG_WAY + suffix:
            metrics.append(
                Metric.at_most(
                    f"supersedes applied the wrong way round, {run.name}",
                    len(run.wrong_way),
                    0,
                    "the newer statement retired into the older, on the cases that are supersedes",
                )
            )
        metrics.append(
            Metric.at_most(
                f"harmful actions applied, {run.name}",
                len(run.harmful),
                0,
                f"{run.applied} applied, {run.contested} contested; refused: "
                f"{_codes(run.refused) or 'none'}",
            )
        )
    notes: list[str] = []
    if real is not None:
        metrics += [
            Metric.info(f"accuracy, {real.name}", real.accuracy),
            Metric.at_most(f"harmful actions applied, {real.name}", len(real.harmful), 0),
            Metric.at_most(f"supersedes the wrong way round, {real.name}", len(real.wrong_way), 0),
            Metric.info(f"model calls, {real.name}", real.calls),
        ]
        notes += [f"{real.name}: {e}" for e in real.errors[:5]]
    return [correct, *adversarial, *([real] if real else [])], metrics, notes


def run(ctx: EvalContext) -> SuiteResult:
    # The one place the real merge guards are named: every other caller passes its own.
    from distill.core.statements import merge_objections

    heldout = ctx.take(load_cases(HELDOUT))
    return report(ctx.take(load_cases()), merge_objections, ctx.llm, heldout)


def _model_id(llm: LLM | None) -> str:
    return str(getattr(llm, "model_id", None) or type(llm).__name__)


def _codes(counts: Counter[str]) -> str:
    return ", ".join(f"{code} {n}" for code, n in sorted(counts.items()))


def _runs_table(runs: Sequence[Run]) -> Table:
    return Table(
        "runs (applied: facts retired; harmful: retired that had to stay, or pointed wrongly)",
        ["model", "cases", "as expected", "applied", "contested", "harmful", "unreadable", "calls"],
        [
            [
                r.name,
                len(r.outcomes),
                sum(o.accurate for o in r.outcomes),
                r.applied,
                r.contested,
                len(r.harmful),
                sum(o.outcome == "unreadable" for o in r.outcomes),
                r.calls,
            ]
            for r in runs
        ],
    )


def _refusals_table(runs: Sequence[Run]) -> Table:
    rows = [[r.name, code, n] for r in runs for code, n in sorted(r.refused.items())]
    return Table("refused by the checks, by code", ["model", "code", "verdicts"], rows)


def _misses_table(runs: Sequence[Run]) -> Table:
    """Each harmful action, and each case the correct and real models got otherwise than
    expected."""
    rows = []
    for r in runs:
        for o in r.outcomes:
            if o.harmful or (not o.accurate and not r.name.startswith("adversarial")):
                rows.append([r.name, o.case.id, o.case.expected, o.outcome, bool(o.harmful)])
    return Table("misses", ["model", "case", "expected", "outcome", "harmful"], rows)
