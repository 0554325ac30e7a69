"""LoCoMo's recall gate for the summariser (`distill eval locomo --summarise-gate`): what
`Memory.summarise` does to evidence and recall when the model is faithful, and when it is
lossy in each way the graymatter seed names, measured on the consolidated conversations.

The conversations are consolidated once (as the suite does); then, for each scripted
summariser below, a copy of that store is summarised until no subject has anything left to
offer, and the live facts are measured again with the suite's measures (evidence reachable,
BM25, embedding and `Memory.search` recall at 5 and 20), each against the same measure over
the store before summarising:

- **faithful**: each batch's memories joined word for word (as many as fit a summary);
- **drop a number**: the faithful summary with every number taken out;
- **drop a negation**: the faithful summary with every negation ("not", "never", "n't", ...)
  taken out;
- **invent an id**: the faithful summary, consuming three aliases it was not shown as well;
- **consume pinned**: one live memory in five is pinned first; the summariser consumes its
  batch and names every pinned memory too, by id and by an alias past the batch.

The model proposes, code applies: a lossy proposal's memories that lose a number or a
negation are refused (`lost_number`, `lost_negation`) and stay live, ids not shown are
ignored (`not_shown`), and a pinned memory is never shown nor changed. So the gate holds when
every measure after summarising is at least what it was before, in every case; the table
also gives the compression (live memories after ÷ before), what was consumed and refused,
and the tokens the scripted model was charged (prompt + answer, ~4 characters a token).
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import tempfile
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from distill.adapters.llm.fake import FakeLLM
from distill.core.models import Fact
from distill.core.summarise import SUMMARY_MAX_CHARS, asked
from distill.eval.context import EvalContext
from distill.eval.results import Metric, Table
from distill.memory import Memory

SUMMARISERS = ("faithful", "drop a number", "drop a negation", "invent an id", "consume pinned")
PIN_EVERY = 5  # one live memory in this many pinned for "consume pinned"
MAX_RUNS = 30  # summarise runs per case, each offering at most 48 memories a subject
_NUMBER = re.compile(r"\d+(?:[.,:/-]\d+)*")
_NEGATION = re.compile(r"\b(?:not|never|no|nobody|nothing|none|nor|cannot)\b|n't", re.I)


def scripted(kind: str, pinned: Sequence[str]) -> Callable[[str], str]:
    """The answer of one scripted summariser to a prompt (`FakeLLM` calls it)."""

    def answer(prompt: str) -> str:
        shown = asked(prompt)
        kept: list[tuple[str, str]] = []
        size = 0
        for alias, text in shown:
            if size + len(text) + 1 > SUMMARY_MAX_CHARS:
                break
            kept.append((alias, text))
            size += len(text) + 1
        summary = " ".join(text for _, text in kept)
        consumes = [alias for alias, _ in kept]
        if kind == "drop a number":
            summary = " ".join(_NUMBER.sub("", summary).split())
        elif kind == "drop a negation":
            summary = " ".join(_NEGATION.sub("", summary).split())
        elif kind == "invent an id":
            consumes += [f"M{len(shown) + n}" for n in (1, 2, 3)]
        elif kind == "consume pinned":
            consumes += [*pinned, f"M{len(shown) + 1}"]
        return json.dumps({"summary": summary, "consumes": consumes})

    return answer


@dataclass
class Case:
    """One summariser's run over a copy of the store, and what was live after it."""

    kind: str
    live: Any  # locomo.Live: the live facts after summarising
    found: dict[int, dict[str, float]]  # Memory.search recall by question
    consumed: int
    summaries: int
    refused: Counter[str]
    calls: int
    tokens: int  # prompt + answer, as the scripted model counts them (~4 characters a token)
    pinned: int
    pinned_changed: int


def _copy(source: str, target: str) -> None:
    with sqlite3.connect(source) as src, sqlite3.connect(target) as dst:
        src.backup(dst)


def _pin(mem: Memory, projects: Sequence[str]) -> list[Fact]:
    """Pin one live memory in `PIN_EVERY` of each conversation, in a fixed order."""
    pinned = []
    for project in projects:
        facts = sorted(mem.facts(project=project), key=lambda f: f.id)
        for fact in facts[::PIN_EVERY]:
            mem.pin(fact.id, project=project)
            pinned.append(mem.fact(fact.id, project=project))
    return pinned


def _summarise_all(mem: Memory, projects: Sequence[str]) -> tuple[int, int, Counter[str], int]:
    """Summarise run after run until nothing is offered: consumed, summaries, refusals and
    tokens spent."""
    consumed = summaries = tokens = 0
    refused: Counter[str] = Counter()
    for _ in range(MAX_RUNS):
        report = mem.summarise(projects=projects, max_calls=None, max_tokens=None)
        consumed += report.consumed
        summaries += len(report.summaries)
        tokens += report.usage.tokens
        refused.update(r.code for r in report.refused)
        if report.offered == 0:
            break
    return consumed, summaries, refused, tokens


def run_cases(
    ctx: EvalContext,
    base: str,
    projects: Sequence[str],
    live: Callable[[Memory, Sequence[str]], Any],
    searched: Callable[[Memory, Any], dict[int, dict[str, float]]],
) -> list[Case]:
    """Each scripted summariser over its own copy of the consolidated store at `base`."""
    cases = []
    with tempfile.TemporaryDirectory(prefix="distill-gate-") as tmp:
        for n, kind in enumerate(SUMMARISERS):
            ctx.progress(f"summarise gate: {kind}", n, len(SUMMARISERS))
            path = os.path.join(tmp, f"case{n}.db")
            _copy(base, path)
            llm = FakeLLM(default="{}", model_id=f"scripted/{kind.replace(' ', '-')}")
            mem = Memory(path, embedder=ctx.shared_embedder(), llm=llm, extractor="claims")
            try:
                pinned = _pin(mem, projects) if kind == "consume pinned" else []
                llm.default = scripted(kind, [f.id for f in pinned])
                consumed, summaries, refused, tokens = _summarise_all(mem, projects)
                changed = sum(mem.fact(f.id, project=f.project) != f for f in pinned)
                after = live(mem, projects)
                found = searched(mem, after)
            finally:
                mem.close()
            cases.append(
                Case(
                    kind,
                    after,
                    found,
                    consumed,
                    summaries,
                    refused,
                    len(llm.calls),
                    tokens,
                    len(pinned),
                    changed,
                )
            )
    return cases


def metrics(
    cases: Sequence[Case],
    before: dict[str, float],
    after: Callable[[Case], dict[str, float]],
    live_before: int,
) -> tuple[list[Metric], Table]:
    """The gate's lines (each measure after summarising at least what it was before, per
    case) and its table."""
    out: list[Metric] = []
    rows = []
    measures = list(before)
    for case in cases:
        got = after(case)
        for measure in measures:
            name = "evidence reachable" if measure == "reachable" else f"{measure} recall"
            out.append(
                Metric.at_least(
                    f"summarise gate, {case.kind}: {name}", got[measure], before[measure]
                )
            )
        out.append(
            Metric.at_most(f"summarise gate, {case.kind}: pinned changed", case.pinned_changed, 0)
        )
        live_after = case.live.count
        refused = ", ".join(f"{c} {n}" for c, n in case.refused.most_common())
        rows.append(
            [
                case.kind,
                *[got[m] for m in measures],
                round(live_after / max(live_before, 1), 3),
                case.summaries,
                case.consumed,
                refused or "-",
                case.calls,
                case.tokens,
                f"{case.pinned_changed}/{case.pinned}" if case.pinned else "-",
            ]
        )
    rows.insert(0, ["before", *[before[m] for m in measures], 1.0, 0, 0, "-", 0, 0, "-"])
    table = Table(
        "Summarise gate: faithful and lossy scripted summarisers",
        [
            "summariser",
            *measures,
            "live after ÷ before",
            "summaries",
            "consumed",
            "refused",
            "calls",
            "tokens",
            "pinned changed",
        ],
        rows,
    )
    return out, table
