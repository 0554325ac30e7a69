"""The promote-rules pass: memories a subject keeps re-stating put to a model, and those it
calls standing instructions added to the subject's rules (`core.rules`), through the one
applier, with the memories answered marked in the same transaction (the watermark).

Per scope (a subject with an active memory re-observed at least the threshold, within a
project allowlist):

1. **What is new.** The watermark (`core.watermark`, `backlog`): the live memories this
   pass holds no mark of their present text for, least recently reinforced first. Those that
   are offered (`core.rules.is_offered`: corroborated enough, trusted enough, no rule promoted
   from them yet) are asked about, at most `RULES_MAX_PER_RUN` per scope, and marked once
   answered; the others are not marked, so that one re-stated often enough later (or a lower
   threshold) offers it then, for no call until it does. A memory answered is not offered
   again unless its text changes: a reinforcement shows the model the same words.
2. **One call per `RULES_BATCH` memories**, batches filled across scopes, answers halved when
   unreadable and a provider error stopping the pass with a note (`asking.Asker`).
3. **Apply.** Under the subject's lock the offered memories and the subject's rules are read
   again: an answer on a memory changed since, or no longer offered, is dropped
   (`edited_meanwhile`); the others are checked (`core.rules.check`, against the rules as
   they are now, so that two runs, or two memories of one run, never add one rule twice) and
   applied with the marks of the memories answered.

**Budgets**: at most `max_calls` calls and `max_tokens` tokens per run, across scopes
(`asking.Budget`); the pass stops cleanly before a call it cannot pay for, what it did not
ask about left unmarked, and the report says what was spent. A dry run asks and reports
inside a transaction the store rolls back: no rule written, nothing marked.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from distill.core import rules as cr
from distill.core.models import Fact, Rule
from distill.core.passes import Context, Decision, PassResult, Scope
from distill.core.plan import Plan
from distill.passes.asking import Asker, Budget, ModelRun, Reader
from distill.passes.backlog import (
    Backlog,
    apply_batch,
    marking,
    marks_read,
    moved_meanwhile,
    over_scopes,
    unmarked,
    walk,
)
from distill.ports import LLM, Store

log = logging.getLogger("distill.rules")

RULES_MAX_PER_RUN = 48  # memories offered per scope per run, as the judge's per-run cap
# Per-run budget of the pass, across scopes: model calls, and prompt + completion tokens.
# Far fewer memories are offered than the judge sees (only the corroborated ones).
RULES_MAX_CALLS = 20
RULES_MAX_TOKENS = 100_000


@dataclass
class PromoteReport(ModelRun):
    """What one promote-rules run did, or would do (`dry_run`); `failed` are the memories no
    answer could be read for, `capped` that a scope had more to offer than one run asks."""

    offered: int = 0  # memories put to the model
    answered: int = 0  # memories whose answer was read
    promoted: list[Rule] = field(default_factory=list)
    not_rules: int = 0  # "not" verdicts
    already: list[cr.Refusal] = field(default_factory=list)  # rules the subject had
    refused: list[cr.Refusal] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "pass": cr.PASS_NAME,
            "dry_run": self.dry_run,
            "scopes": self.scopes,
            "offered": self.offered,
            "answered": self.answered,
            "promoted": [r.model_dump(mode="json") for r in self.promoted],
            "not_rules": self.not_rules,
            "already": [r.__dict__ for r in self.already],
            "refused": [r.__dict__ for r in self.refused],
            **self.run_dict(),
        }


@dataclass(frozen=True)
class Answered:
    """A scope's answered memories, to apply: what was offered, the verdicts, the marks the
    pass held of them (`read`)."""

    scope: Scope
    offered: tuple[Fact, ...]
    verdicts: tuple[cr.Verdict, ...]
    read: dict[str, str]
    threshold: int


@dataclass(frozen=True)
class Fresh:
    work: Answered
    facts: dict[str, Fact]
    rules: list[Rule]
    marks: dict[str, str]


@dataclass
class PromoteResult(PassResult):
    checked: cr.Checked = field(default_factory=cr.Checked)
    edited: list[cr.Refusal] = field(default_factory=list)


class PromoteBatch:
    """`distill.passes.Pass`: apply one scope's answered memories, against a fresh read."""

    name = cr.PASS_NAME
    cap: int | None = None

    def load(self, store: Store, scope: Scope, work: Answered) -> Fresh:
        ids = sorted(f.id for f in work.offered)
        facts = {f.id: f for f in store.facts_by_ids(scope.project, ids)}
        rules = store.rules(scope.project, scope.subject)
        return Fresh(work, facts, rules, store.fact_marks(scope.project, self.name, ids))

    def decide(self, snapshot: Fresh, context: Context) -> PromoteResult:
        work = snapshot.work
        if moved_meanwhile(work.read, snapshot.marks, (f.id for f in work.offered)):
            result = PromoteResult(Plan())
            result.decisions.append(Decision("skipped", None, "another run promoted meanwhile"))
            return result
        promoted = cr.promoted_from(snapshot.rules)
        still = [
            f
            for f in work.offered
            if snapshot.facts.get(f.id) == f and cr.is_offered(f, work.threshold, promoted)
        ]
        ids = {f.id for f in still}
        edited = [
            cr.Refusal(v.memory_id, v.alias, v.text, "edited_meanwhile", "read again first")
            for v in work.verdicts
            if v.memory_id not in ids and v.verdict == "rule" and v.memory_id is not None
        ]
        fresh = [v for v in work.verdicts if v.memory_id in ids]
        checked = cr.check(fresh, still, snapshot.rules, context.now, context.new_id)
        checked.plan.add(
            marking(
                work.scope,
                self.name,
                [f for f in work.offered if snapshot.facts.get(f.id) == f],  # edited: next run
                work.read,
                context.now,
                f"offered {len(work.offered)} memory(ies)",
            )
        )
        result = PromoteResult(checked.plan, checked=checked, edited=edited)
        result.decisions.extend(Decision("promoted", r.id, r.reason) for r in checked.promoted)
        result.decisions.extend(
            Decision(f"refused_{r.code}", r.memory_id, r.detail)
            for r in [*checked.refused, *edited]
        )
        return result


@dataclass
class _Run:
    store: Store
    llm: LLM
    now: Callable[[], datetime]
    new_id: Callable[[], str]
    report: PromoteReport
    budget: Budget
    threshold: int
    offered: set[str] = field(default_factory=set)  # the memories this run asks about

    def __post_init__(self) -> None:
        self.asker: Asker[Fact, cr.Verdict] = Asker(
            self.llm, cr.SYSTEM, cr.SCHEMA, _render, self.budget
        )

    def run(self, scopes: Sequence[tuple[str, str]]) -> None:
        """Read every scope's backlog, then walk it (`backlog.walk`)."""
        report = self.report
        pending: list[Backlog[Fact]] = []
        for project, subject in scopes:
            report.scopes += 1
            changed = unmarked(self.store, project, subject, cr.PASS_NAME)
            promoted = cr.promoted_from(self.store.rules(project, subject))
            mine = [f for f in changed if cr.is_offered(f, self.threshold, promoted)]
            if len(mine) > RULES_MAX_PER_RUN:
                report.capped = True
                mine = mine[:RULES_MAX_PER_RUN]
            self.offered.update(f.id for f in mine)
            if mine:
                scope = Scope(project, subject)
                read = marks_read(self.store, scope, cr.PASS_NAME, mine)
                pending.append(Backlog(scope, mine, read))
        asker = self.asker

        unknown: list[cr.Verdict] = []  # naming an alias no batch showed: no scope's

        def ask(batch: Sequence[Fact]) -> list[cr.Verdict]:
            found = asker.ask(batch)
            report.offered += len(batch)
            unknown.extend(v for v in found if v.memory_id is None)
            return [v for v in found if v.memory_id is not None]

        walk(
            pending,
            asks=lambda f: f.id in self.offered,
            ask=ask,
            key=lambda f: f.id,
            batch=cr.RULES_BATCH,
            capped=report.capped,
            apply=self.apply,
            note=report.stopped.append,
        )
        report.answered += asker.answered
        report.provider_down = asker.down
        report.refused.extend(cr.check(unknown, (), (), self.now(), self.new_id).refused)
        for memory in asker.failed:
            log.warning("promote_rules: no answer could be read for memory %s", memory.id)
            report.failed.append(memory.id)

    def apply(self, b: Backlog[Fact], done: int, verdicts: Sequence[cr.Verdict]) -> None:
        """Apply the verdicts on the first `done` memories of a scope's backlog and mark them,
        in one transaction; a refused plan marks nothing. A memory no answer could be read
        for is skipped (marked) when the run read other answers; when it read none, the
        model is what failed, and the next run offers it again."""
        waits = {m.id for m in self.asker.failed} if not self.asker.answered else set()
        offered = tuple(f for f in b.items[:done] if f.id in self.offered and f.id not in waits)
        mine = {f.id for f in offered}
        found = tuple(v for v in verdicts if v.memory_id in mine)
        work = Answered(b.scope, offered, found, b.read, self.threshold)
        result = apply_batch(
            self.store,
            PromoteBatch(),
            b,
            work,
            now=self.now(),
            new_id=self.new_id,
            note=self.report.stopped.append,
        )
        if result is None:  # rolled back: nothing marked
            return
        assert isinstance(result, PromoteResult)
        checked = result.checked
        self.report.promoted.extend(checked.promoted)
        self.report.not_rules += len(checked.kept)
        self.report.already.extend(checked.already)
        self.report.refused.extend([*checked.refused, *result.edited])


def _render(batch: Sequence[Fact]) -> tuple[str, Reader[cr.Verdict]]:
    shown = cr.render(batch)
    return shown.prompt, lambda text, truncated: cr.read(text, shown, truncated)


def run_promote_rules(
    store: Store,
    llm: LLM,
    now: Callable[[], datetime],
    new_id: Callable[[], str],
    *,
    projects: Sequence[str] = (),
    subject: str | None = None,
    dry_run: bool = False,
    max_calls: int | None = RULES_MAX_CALLS,
    max_tokens: int | None = RULES_MAX_TOKENS,
    threshold: int = cr.PROMOTE_CORROBORATION_THRESHOLD,
) -> PromoteReport:
    """Promote the standing instructions among the corroborated memories of every scope of
    `projects` (empty: all), or of one subject, to rules."""
    report = PromoteReport(dry_run=dry_run)
    budget = Budget(max_calls, max_tokens, report.usage)
    run = _Run(store, llm, now, new_id, report, budget, threshold)

    scopes = lambda: store.rule_scopes(list(projects), threshold)  # noqa: E731
    over_scopes(store, scopes, subject, dry_run, run.run)
    return report
