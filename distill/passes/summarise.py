"""The summarise pass: a scope's old memories put to a model in batches, each proposal
checked in code (`core.summarise`) and applied through the one applier, with the memories
shown marked in the same transaction (the watermark).

Per scope (a subject with live memories, within a project allowlist):

1. **What is offered.** The watermark (`core.watermark`, `backlog`): the live memories the
   summariser holds no mark of their present text for, least recently reinforced first; of
   those, all but the `SUMMARISE_KEEP` most recently reinforced, unpinned
   (`core.summarise.offered`), at most `SUMMARISE_MAX_PER_RUN` per scope (`capped`).
2. **One call per batch** of `SUMMARISE_BATCH` memories of one scope (a summary belongs to
   one subject, so batches are never filled across scopes; a last batch of fewer than
   `SUMMARISE_MIN_BATCH` waits for the next run). An unreadable answer is asked again in
   halves and a provider error (an unreachable model, a timeout, a rejection) stops the
   pass with one note; what was not asked about stays unmarked (`asking.Asker`), and what was
   applied before the stop stays applied (each batch is its own transaction). The
   provider's own retries are `adapters.llm.calls.RetryPolicy`'s: transient failures only.
3. **Apply.** Under the subject's lock the memories shown are read again with the subject's
   open conflict sets; a memory changed since is dropped from what a proposal consumes
   (`edited_meanwhile`); the rest are checked and applied with the marks of the batch. A
   proposal refused whole writes nothing but the marks: the memories it was shown are not
   offered again until their text changes, so a broken model costs one run's calls.

**Budgets**: `max_calls` calls and `max_tokens` tokens per run, across scopes
(`asking.Budget`). A dry run asks and reports inside a transaction the store rolls back.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from distill.core import summarise as cs
from distill.core.memory_judge import contested_pairs, held_facts
from distill.core.models import ConflictStatus, Fact
from distill.core.passes import Context, Decision, PassResult, Scope
from distill.core.recall import recall_text
from distill.passes.asking import Asker, Budget, ModelRun, Reader, Stop
from distill.passes.backlog import (
    Backlog,
    apply_batch,
    marking,
    marks_read,
    moved_meanwhile,
    over_scopes,
    unmarked,
)
from distill.ports import LLM, Store, Vector

log = logging.getLogger("distill.summarise")

SUMMARISE_MAX_PER_RUN = 48  # memories offered per scope per run, as the judge's cap
# Per-run budget of the pass, across scopes: model calls, and prompt + completion tokens.
# A call carries ten memories and a paragraph back: about a thousand tokens.
SUMMARISE_MAX_CALLS = 20
SUMMARISE_MAX_TOKENS = 100_000
# Tries per call: the seed's "one retry", for transient failures only (transport, timeouts,
# 5xx, 408, 429; any other 4xx is a refusal that a retry would only repeat). Fewer than the
# providers' default 3: the summariser is optional, and a model that fails twice in a row is
# better left for the next cycle than waited on.
SUMMARISE_ATTEMPTS = 2


@dataclass
class SummariseReport(ModelRun):
    """What one summarise run did, or would do (`dry_run`): the summaries written, the
    memories they consume, the conflict sets opened, and every refusal with its code."""

    offered: int = 0
    summaries: list[Fact] = field(default_factory=list)
    consumed: int = 0
    contested: int = 0
    refused: list[cs.Refusal] = field(default_factory=list)

    @property
    def refused_by_code(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for r in self.refused:
            counts[r.code] = counts.get(r.code, 0) + 1
        return counts

    def to_dict(self) -> dict[str, Any]:
        return {
            "pass": cs.PASS_NAME,
            "dry_run": self.dry_run,
            "scopes": self.scopes,
            "offered": self.offered,
            "summaries": [f.model_dump(mode="json") for f in self.summaries],
            "consumed": self.consumed,
            "contested": self.contested,
            "refused": [r.__dict__ for r in self.refused],
            "refused_by_code": self.refused_by_code,
            **self.run_dict(),
        }


@dataclass(frozen=True)
class Proposed:
    """A batch's proposals, to apply: what was shown, and the marks the summariser held of it
    (`read`)."""

    scope: Scope
    shown: tuple[Fact, ...]
    proposals: tuple[cs.Proposal, ...]
    read: dict[str, str]
    recall: cs.Recall | None = None  # the summaries' recall vectors, embedded before the lock


@dataclass(frozen=True)
class Fresh:
    work: Proposed
    facts: dict[str, Fact]
    marks: dict[str, str]
    contested: frozenset[frozenset[str]]
    held: frozenset[str]


@dataclass
class SummariseResult(PassResult):
    checked: cs.Checked = field(default_factory=cs.Checked)


class SummariseBatch:
    """`distill.passes.Pass`: apply one batch's proposals, checked against a fresh read."""

    name = cs.PASS_NAME
    cap: int | None = None

    def load(self, store: Store, scope: Scope, work: Proposed) -> Fresh:
        ids = sorted(f.id for f in work.shown)
        facts = {f.id: f for f in store.facts_by_ids(scope.project, ids)}
        marks = store.fact_marks(scope.project, self.name, ids)
        conflicts = store.conflicts(scope.project, scope.subject, ConflictStatus.OPEN)
        return Fresh(work, facts, marks, contested_pairs(conflicts), held_facts(conflicts))

    def decide(self, snapshot: Fresh, context: Context) -> SummariseResult:
        work = snapshot.work
        checked = cs.Checked()
        if moved_meanwhile(work.read, snapshot.marks, (f.id for f in work.shown)):
            result = SummariseResult(checked.plan, checked=checked)
            result.decisions.append(Decision("skipped", None, "another run summarised meanwhile"))
            return result
        unchanged = {f.id for f in work.shown if snapshot.facts.get(f.id) == f}
        proposals = []
        for p in work.proposals:
            checked.refused.extend(
                cs.Refusal(i, "edited_meanwhile", "read again first")
                for i in p.consumes
                if i not in unchanged
            )
            contradictions = tuple(
                replace(c, memory_ids=tuple(i for i in c.memory_ids if i in unchanged))
                for c in p.contradictions
            )
            consumes = tuple(i for i in p.consumes if i in unchanged)
            proposals.append(replace(p, consumes=consumes, contradictions=contradictions))
        cs.check(
            proposals,
            context.now,
            context.new_id,
            snapshot.contested,
            checked,
            work.recall,
            snapshot.held,
        )
        checked.plan.add(
            marking(
                work.scope,
                self.name,
                [f for f in work.shown if f.id in unchanged],  # an edited one: the next run
                work.read,
                context.now,
                f"offered {len(work.shown)} memory(ies)",
            )
        )
        result = SummariseResult(checked.plan, checked=checked)
        result.decisions.extend(Decision("summary", f.id, f.text[:80]) for f in checked.summaries)
        result.decisions.extend(
            Decision(f"refused_{r.code}", r.memory_id, r.detail) for r in checked.refused
        )
        return result


@dataclass
class _Run:
    store: Store
    llm: LLM
    now: Callable[[], datetime]
    new_id: Callable[[], str]
    report: SummariseReport
    budget: Budget
    keep: int
    whole_batch: bool
    embed: Callable[[Sequence[str]], dict[str, Vector]] | None
    model_id: str | None

    def run(self, scopes: Sequence[tuple[str, str]]) -> None:
        report = self.report
        asker: Asker[Fact, cs.Proposal] = Asker(
            self.llm, cs.SYSTEM, cs.SCHEMA, self.render, self.budget
        )
        for project, subject in scopes:
            report.scopes += 1
            changed = unmarked(self.store, project, subject, cs.PASS_NAME)
            sets = self.store.conflicts(project, subject, ConflictStatus.OPEN)
            offered = cs.offered(changed, self.keep, held_facts(sets))
            if len(offered) > SUMMARISE_MAX_PER_RUN:
                report.capped = True
                offered = offered[:SUMMARISE_MAX_PER_RUN]
            scope = Scope(project, subject)
            read = marks_read(self.store, scope, cs.PASS_NAME, offered)
            for start in range(0, len(offered), cs.SUMMARISE_BATCH):
                batch = offered[start : start + cs.SUMMARISE_BATCH]
                if len(batch) < cs.SUMMARISE_MIN_BATCH:
                    break
                try:
                    proposals = asker.ask(batch)
                except Stop as stopped:
                    log.warning("summarise stopped: %s", stopped)
                    report.stopped.append(f"{project}/{subject}: {stopped}")
                    report.provider_down = asker.down
                    return
                report.offered += len(batch)
                if not self.apply(Backlog(scope, list(batch), read), proposals):
                    break  # rolled back: nothing of this batch marked
        for memory in asker.failed:
            log.warning("summarise: no answer could be read for memory %s", memory.id)
            report.failed.append(memory.id)

    def render(self, batch: Sequence[Fact]) -> tuple[str, Reader[cs.Proposal]]:
        shown = cs.render(batch)
        whole = self.whole_batch
        return shown.prompt, lambda text, truncated: cs.read(text, shown, truncated, whole)

    def apply(self, b: Backlog[Fact], proposals: Sequence[cs.Proposal]) -> bool:
        """Apply one batch's proposals and mark its memories, in one transaction; a refused
        plan marks nothing."""
        recall = None
        if self.embed is not None and self.model_id is not None:
            said = [recall_text(None, None, p.summary) for p in proposals if p.summary]
            recall = cs.Recall(self.model_id, self.embed(said))
        work = Proposed(b.scope, tuple(b.items), tuple(proposals), b.read, recall)
        result = apply_batch(
            self.store,
            SummariseBatch(),
            b,
            work,
            now=self.now(),
            new_id=self.new_id,
            note=self.report.stopped.append,
        )
        if result is None:
            return False
        assert isinstance(result, SummariseResult)
        checked = result.checked
        self.report.summaries.extend(checked.summaries)
        self.report.consumed += len(checked.consumed)
        self.report.contested += len(checked.contested)
        self.report.refused.extend(checked.refused)
        return True


def run_summarise(
    store: Store,
    llm: LLM,
    now: Callable[[], datetime],
    new_id: Callable[[], str],
    *,
    projects: Sequence[str] = (),
    subject: str | None = None,
    dry_run: bool = False,
    max_calls: int | None = SUMMARISE_MAX_CALLS,
    max_tokens: int | None = SUMMARISE_MAX_TOKENS,
    keep: int = cs.SUMMARISE_KEEP,
    embed: Callable[[Sequence[str]], dict[str, Vector]] | None = None,
    model_id: str | None = None,
) -> SummariseReport:
    """Summarise the old memories of every scope of `projects` (empty: all), or of one
    subject. An Anthropic model's answer without `consumes` consumes its whole batch (the
    seed's Anthropic path), each memory still checked. `embed` (through the store's cache)
    and the embedder's `model_id` give each summary its recall vector."""
    report = SummariseReport(dry_run=dry_run)
    budget = Budget(max_calls, max_tokens, report.usage)
    whole = llm.model_id.startswith("anthropic/")
    run = _Run(store, llm, now, new_id, report, budget, keep, whole, embed, model_id)

    over_scopes(store, lambda: store.memory_scopes(list(projects)), subject, dry_run, run.run)
    return report
