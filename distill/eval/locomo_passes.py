"""LoCoMo with the hygiene passes on (issue 14): what `Memory.dedupe` and `Memory.judge` do
to the consolidated conversations, measured against the same store before them.

The suite consolidates the observations as it always did and measures the live facts; then
this module runs the passes over that store and the suite measures again, with the same
questions, embedder and retrievers, so each figure after the passes is compared like for like
with the same figure before them (not with another run):

- **dedupe** always, over every conversation, with no per-run cap (the cap is production's
  safety valve; the suite wants the whole store's answer in one run); with `--offline`, its
  offline tier too (close in meaning, every guard clean), off by default as for users;
- **judge** only when the run has a model (`distill eval locomo --llm PROVIDER`), run after
  run until no scope has a backlog left (each run spends at most the pass's default call and
  token budget; `MAX_JUDGE_RUNS` bounds the loop). Without a model it is reported as not run,
  never as "merged nothing".

**No merge across speakers or conversations** is checked on the retirements themselves, not
on what the passes report: every fact live before the passes and not live after them is read
back (`Memory.fact`, its audit trail through `Memory.history`), and must be superseded with a
receipt (`superseded_by`) pointing at a fact of the same speaker (subject) in the same
conversation (project). A survivor that is not found in the loser's project belongs to
another conversation (ids are scoped by project). Both passes work scope by scope, so a
crossing would be a bug in the pass or the store, which is what the check is for.

Compression is live memories ÷ observations, before and after the passes. The suite loads
every observation as one memory, so before the passes it is consolidation's own ratio
(identical texts of one speaker are one fact already at arrival).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from distill.core.models import Fact, FactStatus
from distill.errors import NotFound
from distill.eval.results import Metric
from distill.memory import Memory
from distill.passes.dedupe import DedupeReport
from distill.passes.memory_judge import JudgeReport

PASSES = ("dedupe", "judge")
# Judge runs at most, one after the other, to empty every scope's backlog (each run judges up
# to 48 memories a scope within the pass's budget; LoCoMo's largest speaker has ~250).
MAX_JUDGE_RUNS = 50
NO_MODEL = "not run: no model (distill eval locomo --llm PROVIDER)"


@dataclass(frozen=True)
class Retirement:
    """A fact the passes retired, and what its receipt points at."""

    fact: Fact  # as stored after the passes (a fact not found at all is `Passes.missing`)
    survivor: Fact | None  # None: no receipt, or not found in the fact's conversation
    pass_name: str  # the pass of the audit entry that retired it ("?" if none says)
    action: str  # that entry's action: merge_fact (a merge) or retire_fact (a supersede)

    @property
    def receipt(self) -> bool:
        return self.fact.status is FactStatus.SUPERSEDED and self.fact.superseded_by is not None

    @property
    def across_speakers(self) -> bool:
        return self.survivor is not None and self.survivor.subject != self.fact.subject

    @property
    def across_conversations(self) -> bool:
        """A receipt whose survivor is not in the fact's project (not found there, or, should
        a store ever return one, found with another project)."""
        if not self.receipt:
            return False
        return self.survivor is None or self.survivor.project != self.fact.project


@dataclass
class Passes:
    """What the passes did to the store."""

    dedupe: DedupeReport
    judge: JudgeReport | None  # None: no model, not run
    judge_runs: int = 0
    judge_ended: str = ""  # why the judge's runs ended (`judge_all`)
    seconds: float = 0.0
    retirements: list[Retirement] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # live before, not found after (deleted)

    def by_pass(self) -> Counter[tuple[str, str]]:
        return Counter((r.pass_name, r.action) for r in self.retirements)


def run_passes(mem: Memory, projects: Sequence[str], judge: bool, offline: bool) -> Passes:
    """Dedupe the conversations' memories (with the offline tier when `offline`), then judge
    them when `judge` (the memory has a model); the retirements are read back by `walk`,
    once the caller knows what was live."""
    started = time.perf_counter()
    deduped = mem.dedupe(projects=projects, max_supersedes=None, offline=offline)
    if not judge:
        return Passes(deduped, None, seconds=time.perf_counter() - started)
    judged, runs, ended = judge_all(mem, projects)
    return Passes(deduped, judged, runs, ended, time.perf_counter() - started)


def judge_all(mem: Memory, projects: Sequence[str]) -> tuple[JudgeReport, int, str]:
    """`Memory.judge` run after run, while a run leaves a backlog (a scope capped, or the
    budget spent) and at most `MAX_JUDGE_RUNS` times; a provider error ends the loop. The
    reports are summed into one; the last string says why the loop ended."""
    total = JudgeReport()
    for runs in range(1, MAX_JUDGE_RUNS + 1):
        report = mem.judge(projects=projects, max_changes=None)
        _add(total, report)
        budget = bool(report.stopped) and all("budget:" in s for s in report.stopped)
        if report.stopped and not budget:
            # The provider failed: asking again now would fail again.
            return total, runs, f"stopped: {report.stopped[-1]}"
        if not (report.capped or budget):
            return total, runs, "no backlog left"
    return total, MAX_JUDGE_RUNS, f"backlog left after {MAX_JUDGE_RUNS} runs"


def _add(total: JudgeReport, run: JudgeReport) -> None:
    total.scopes = max(total.scopes, run.scopes)
    total.judged += run.judged
    total.merged += run.merged
    total.superseded += run.superseded
    total.contested += run.contested
    total.kept += run.kept
    total.refused.extend(run.refused)
    total.failed.extend(run.failed)
    total.stopped.extend(run.stopped)
    total.capped = run.capped  # whether the last run still left a backlog
    total.usage.include(run.usage)


def walk(
    mem: Memory, before: dict[str, frozenset[str]], after: dict[str, frozenset[str]]
) -> tuple[list[Retirement], list[str]]:
    """Every fact live `before` (conversation → fact ids) and not `after`, read back with its
    receipt's survivor and the audit entry of the pass that retired it; and the ids of those
    not found at all (deleted: never allowed)."""
    retired: list[Retirement] = []
    missing: list[str] = []
    for conversation, ids in before.items():
        for fact_id in sorted(ids - after.get(conversation, frozenset())):
            try:
                fact = mem.fact(fact_id, project=conversation)
            except NotFound:
                missing.append(fact_id)
                continue
            survivor = None
            if fact.superseded_by is not None:
                try:
                    survivor = mem.fact(fact.superseded_by, project=conversation)
                except NotFound:
                    survivor = None  # another conversation's id, or none at all
            trail = mem.history(fact_id, project=conversation).audit
            entries = [e for e in trail if e.fact_id == fact_id and e.pass_name in PASSES]
            last = entries[-1] if entries else None
            retired.append(
                Retirement(
                    fact,
                    survivor,
                    last.pass_name if last else "?",
                    last.action if last else "?",
                )
            )
    return retired, missing


NOTES = [
    "Hygiene passes (issue 14): after the measures over the live facts, Memory.dedupe (no "
    "per-run cap; with its offline tier under --offline) "
    "and, when the run has a model (--llm), Memory.judge run after run until no "
    f"scope has a backlog (at most {MAX_JUDGE_RUNS} runs) went over the same store. The "
    "lines '... after the passes' are the same measures over what was live then, each with "
    "its figure before the passes as its target; the table's 'passes' rows likewise.",
    "Scope check: every fact live before the passes and not after is read back with its "
    "receipt (superseded_by) and the audit entry of the pass that retired it; its survivor "
    "must be a fact of the same speaker (subject) in the same conversation (project).",
    "Compression: live memories ÷ observations, before and after the passes.",
]


def metrics(passes: Passes | None, observations: int, before: int, after: int) -> list[Metric]:
    """The passes' own figures: compression (live memories ÷ observations, `before` and
    `after` being the live counts), retirements by pass, and the scope checks. The measures
    before/after (reachability, recall) are the suite's, which has the scores."""
    if passes is None:
        return [Metric.info("hygiene passes run", 0, "off (--no-passes)")]
    per = passes.by_pass()
    dedupe = passes.dedupe
    out = [
        Metric.info("hygiene passes seconds", round(passes.seconds, 2)),
        Metric.info(
            "compression before the passes",
            round(before / max(observations, 1), 4),
            f"{before} live memories ÷ {observations} observations",
        ),
        Metric.info(
            "compression after the passes",
            round(after / max(observations, 1), 4),
            f"{after} live memories ÷ {observations} observations",
        ),
        Metric.info(
            "dedupe: memories merged",
            per[("dedupe", "merge_fact")],
            f"{dedupe.merged_groups} group(s) merged ({dedupe.offline_groups} by the offline "
            f"tier), {dedupe.report_only} report-only "
            f"(same words, another order), {dedupe.scopes} scope(s) looked at",
        ),
    ]
    judge = passes.judge
    if judge is None:
        out.append(Metric.info("judge run", 0, NO_MODEL))
    else:
        spent = judge.usage.tokens
        budget = sum("budget:" in s for s in judge.stopped)
        out += [
            Metric.info(
                "judge run",
                passes.judge_runs,
                f"runs ({passes.judge_ended}); {judge.judged} memories judged (a survivor "
                f"again after each merge), {judge.usage.calls} calls, {spent:,} tokens, "
                f"{budget} scope stop(s) at a run's budget, {len(judge.failed)} unreadable",
            ),
            Metric.info(
                "judge: verdicts refused by the checks",
                len(judge.refused),
                ", ".join(
                    f"{c} {n}" for c, n in Counter(r.code for r in judge.refused).most_common()
                ),
            ),
            Metric.info("judge: memories merged", per[("judge", "merge_fact")]),
            Metric.info("judge: memories superseded", per[("judge", "retire_fact")]),
            Metric.info("judge: supersedes contested (the words show no change)", judge.contested),
        ]
    receipts = sum(not r.receipt for r in passes.retirements) + len(passes.missing)
    out += [
        Metric.at_most(
            "passes: retired into another speaker's fact",
            sum(r.across_speakers for r in passes.retirements),
            0,
            f"of {len(passes.retirements)} retirement(s), each read back with its survivor",
        ),
        Metric.at_most(
            "passes: retired into another conversation's fact",
            sum(r.across_conversations for r in passes.retirements),
            0,
        ),
        Metric.at_most(
            "passes: retired without a receipt", receipts, 0, "or not found at all (deleted)"
        ),
    ]
    return out
