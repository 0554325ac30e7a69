"""The memory judge pass: new and changed memories put to a model beside their nearest stored
ones, batch by batch, each verdict checked in code (`core.memory_judge`) and applied through
the one applier, with the memories judged marked in the same transaction (the watermark).

Per scope (a subject with two or more active memories, within a project allowlist):

1. **What is new.** The watermark (`core.watermark`, `backlog`): the live memories the judge
   holds no mark of their present text for (new, or their text changed; a reinforcement
   changes no text, so it is not judged again), least recently reinforced first, at most
   `JUDGE_MAX_PER_RUN` of them.
2. **Candidates.** For each, `CANDIDATES_PER_ARM` live memories of the scope from the lexical
   arm (BM25 over the memory's own words) and as many from the vector arm (its recall
   vector, read through the embedding cache), interleaved.
3. **One call per `JUDGE_BATCH` memories**, batches filled across scopes (`backlog.walk`).
   An answer that cannot be read (not the JSON asked for, or cut off at the output limit) is
   asked again in halves, down to one memory, which is then listed as failed and skipped: it
   cannot wedge the tier. A provider error (transport, auth, quota, a timeout) stops the
   tier with a note: the memories not yet asked about stay unmarked (`asking.Asker`).
4. **Apply.** Under the subject's lock every fact the model saw is read again, with the
   subject's open conflict sets; a verdict on a fact edited since is dropped
   (`edited_meanwhile`), the others are checked (a supersede the words do not show becomes
   a conflict set: `core.changes`) and applied with the marks of the memories judged: a
   memory is marked only once its batch is fully judged and applied.

**Budgets** (no peer has them): at most `max_calls` model calls and `max_tokens` tokens per
run, across scopes (`asking.Budget`). The tier stops before a call that the budget cannot pay
for, what it did not ask about left unmarked, and the report says what was spent. A dry run
judges and reports, inside a transaction the store rolls back: nothing written, nothing
marked (the calls are made and counted: that is what a dry run of a model tier costs).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from distill.core import memory_judge as mj
from distill.core.memory_judge import Item, Refusal, Verdict
from distill.core.models import ConflictStatus, Fact, FactStatus
from distill.core.passes import Context, Decision, PassResult, Scope
from distill.core.recall import query_terms
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
from distill.ports import LLM, RecallScope, Store, Vector

log = logging.getLogger("distill.judge")

JUDGE_MAX_PER_RUN = 48  # memories judged per scope per run (the seed's semantic_max_per_run)
# Per-run budget of the tier, across scopes: model calls, and prompt + completion tokens.
JUDGE_MAX_CALLS = 100
JUDGE_MAX_TOKENS = 400_000


@dataclass
class JudgeReport(ModelRun):
    """What one judging run did, or would do (`dry_run`); `failed` are the memories no
    answer could be read for, `capped` that a scope had more than one run judges."""

    judged: int = 0  # memories whose verdict was read
    merged: int = 0
    superseded: int = 0
    contested: int = 0  # supersedes the words do not show: both kept, in a conflict set
    kept: int = 0  # "nothing" verdicts
    refused: list[Refusal] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "pass": mj.PASS_NAME,
            "dry_run": self.dry_run,
            "scopes": self.scopes,
            "judged": self.judged,
            "merged": self.merged,
            "superseded": self.superseded,
            "contested": self.contested,
            "kept": self.kept,
            "refused": [r.__dict__ for r in self.refused],
            **self.run_dict(),
        }


@dataclass(frozen=True)
class Judged:
    """A batch's answer, to apply: what was shown, the verdicts, the marks the judge held of
    the memories it judged (`read`)."""

    scope: Scope
    items: tuple[Item, ...]
    verdicts: tuple[Verdict, ...]
    read: dict[str, str]
    max_changes: int | None
    # Whether a memory no readable verdict covers is marked all the same (skipped): when the
    # run read other answers, the model works and that memory is what it fails on; when it
    # read none, the model is what failed, and the memories wait for the next run.
    skip_unanswered: bool = True


@dataclass(frozen=True)
class Fresh:
    work: Judged
    facts: dict[str, Fact]
    marks: dict[str, str]
    contested: frozenset[frozenset[str]]  # pairs of facts in an open conflict set
    held: frozenset[str]  # the facts an open conflict set holds


@dataclass
class JudgeResult(PassResult):
    checked: mj.Checked = field(default_factory=mj.Checked)


class JudgeBatch:
    """`distill.passes.Pass`: apply one judged batch of a scope, checked against a fresh read."""

    name = mj.PASS_NAME
    cap: int | None = None

    def __init__(self, objections: mj.Objections) -> None:
        self.objections = objections

    def load(self, store: Store, scope: Scope, work: Judged) -> Fresh:
        ids = sorted({f.id for i in work.items for f in (i.memory, *i.candidates)})
        facts = {f.id: f for f in store.facts_by_ids(scope.project, ids)}
        judged = [i.memory.id for i in work.items]
        marks = store.fact_marks(scope.project, self.name, judged)
        conflicts = store.conflicts(scope.project, scope.subject, ConflictStatus.OPEN)
        return Fresh(work, facts, marks, mj.contested_pairs(conflicts), mj.held_facts(conflicts))

    def decide(self, snapshot: Fresh, context: Context) -> JudgeResult:
        work = snapshot.work
        result = JudgeResult(mj.Checked().plan)
        judged = [i.memory.id for i in work.items]
        if moved_meanwhile(work.read, snapshot.marks, judged):
            result.decisions.append(Decision("skipped", None, "another run judged meanwhile"))
            return result
        unchanged = {
            i.memory.id
            for i in work.items
            if all(snapshot.facts.get(f.id) == f for f in (i.memory, *i.candidates))
        }
        edited = [
            Refusal(v.memory_id, v.target_id, v.action, "edited_meanwhile", "read again first")
            for v in work.verdicts
            if v.memory_id not in unchanged and v.action != "nothing"
        ]
        fresh = [v for v in work.verdicts if v.memory_id in unchanged]
        guards = mj.Guards(self.objections, contested=snapshot.contested, held=snapshot.held)
        checked = mj.check(fresh, work.items, context.now, guards, context.new_id, work.max_changes)
        checked.refused.extend(edited)
        # Marked: what was judged and stands judged. Not marked, so that the next run asks
        # again: a memory edited meanwhile, one whose verdict the run's cap held back, and
        # one with candidates no readable answer covered when the run read no answer at all.
        answered = {v.memory_id for v in work.verdicts}
        held_back = {r.memory_id for r in checked.refused if r.code == "capped"}
        judged_now = [
            i.memory
            for i in work.items
            if i.memory.id in unchanged
            and (not i.candidates or i.memory.id in answered or work.skip_unanswered)
            and i.memory.id not in held_back
        ]
        checked.plan.add(
            marking(
                work.scope,
                self.name,
                judged_now,
                work.read,
                context.now,
                f"judged {len(judged_now)} memory(ies)",
            )
        )
        result = JudgeResult(checked.plan, checked=checked)
        result.decisions.extend(Decision(v.action, v.memory_id, v.reason) for v in checked.applied)
        result.decisions.extend(
            Decision("contested", v.memory_id, v.reason) for v in checked.contested
        )
        result.decisions.extend(
            Decision(f"refused_{r.code}", r.memory_id, r.detail) for r in checked.refused
        )
        return result


@dataclass
class _Run:
    store: Store
    llm: LLM
    embed: Callable[[Sequence[str]], dict[str, Vector]]
    model_id: str
    objections: mj.Objections
    now: Callable[[], datetime]
    new_id: Callable[[], str]
    report: JudgeReport
    budget: Budget
    max_changes: int | None

    def __post_init__(self) -> None:
        self.asker: Asker[Item, Verdict] = Asker(
            self.llm, mj.SYSTEM, mj.SCHEMA, _render, self.budget
        )

    def run(self, scopes: Sequence[tuple[str, str]]) -> None:
        """Read every scope's backlog, then walk it (`backlog.walk`): ask about all of it in
        batches filled across scopes, and apply each scope's verdicts under its lock."""
        report = self.report
        pending: list[Backlog[Item]] = []
        for project, subject in scopes:
            report.scopes += 1
            changed = unmarked(self.store, project, subject, mj.PASS_NAME)
            if len(changed) > JUDGE_MAX_PER_RUN:
                report.capped = True
                changed = changed[:JUDGE_MAX_PER_RUN]
            if changed:
                scope = Scope(project, subject)
                read = marks_read(self.store, scope, mj.PASS_NAME, changed)
                pending.append(Backlog(scope, self.items(project, subject, changed), read))
        asker = self.asker
        walk(
            pending,
            # A memory with nothing near it needs no verdict; it is marked all the same.
            asks=lambda i: bool(i.candidates),
            ask=asker.ask,
            key=lambda i: i.memory.id,
            batch=mj.JUDGE_BATCH,
            capped=report.capped,
            apply=self.apply,
            note=report.stopped.append,
        )
        report.judged += asker.answered
        report.provider_down = asker.down
        for item in asker.failed:
            log.warning("judge: no answer could be read for memory %s", item.memory.id)
            report.failed.append(item.memory.id)

    def apply(self, b: Backlog[Item], done: int, verdicts: Sequence[Verdict]) -> None:
        """Apply the verdicts on the first `done` memories of a scope's backlog and mark them,
        in one transaction; a refused plan marks nothing."""
        items = tuple(b.items[:done])
        mine = {i.memory.id for i in items if i.candidates}
        found = tuple(v for v in verdicts if v.memory_id in mine)
        work = Judged(b.scope, items, found, b.read, self.left(), self.asker.answered > 0)
        result = apply_batch(
            self.store,
            JudgeBatch(self.objections),
            b,
            work,
            now=self.now(),
            new_id=self.new_id,
            note=self.report.stopped.append,
        )
        if result is None:  # rolled back: nothing marked
            return
        assert isinstance(result, JudgeResult)
        for v in result.checked.applied:
            if v.action == "merge":
                self.report.merged += 1
            else:
                self.report.superseded += 1
        self.report.contested += len(result.checked.contested)
        self.report.refused.extend(result.checked.refused)
        self.report.kept += sum(v.action == "nothing" for v in found)

    def left(self) -> int | None:
        if self.max_changes is None:
            return None
        return max(0, self.max_changes - self.report.merged - self.report.superseded)

    def items(self, project: str, subject: str, memories: Sequence[Fact]) -> list[Item]:
        scope = RecallScope(project, subject, self.model_id, ("memory",))
        vectors = self.embed([m.text for m in memories])
        arms: dict[str, tuple[list[str], list[str]]] = {}
        depth = mj.CANDIDATES_PER_ARM + 1  # the memory itself is usually first
        for m in memories:
            words = [i for i, _ in self.store.recall_words(scope, query_terms(m.text), depth)]
            near = [n.fact_id for n in self.store.recall_nearest(scope, vectors[m.text], depth)]
            arms[m.id] = (words, near)
        wanted = sorted({i for w, n in arms.values() for i in (*w, *n)})
        found = {f.id: f for f in self.store.facts_by_ids(project, wanted)}

        def live(ids: list[str]) -> list[Fact]:
            return [found[i] for i in ids if i in found and found[i].status is FactStatus.ACTIVE]

        return [
            Item(
                m,
                mj.interleave(
                    [live(arms[m.id][0]), live(arms[m.id][1])], m.id, mj.CANDIDATES_PER_ARM
                ),
            )
            for m in memories
        ]


def _render(batch: Sequence[Item]) -> tuple[str, Reader[Verdict]]:
    shown = mj.render(batch)
    return shown.prompt, lambda text, truncated: mj.read(text, shown, truncated)


def run_judge(
    store: Store,
    llm: LLM,
    embed: Callable[[Sequence[str]], dict[str, Vector]],
    model_id: str,
    objections: mj.Objections,
    now: Callable[[], datetime],
    new_id: Callable[[], str],
    *,
    projects: Sequence[str] = (),
    subject: str | None = None,
    dry_run: bool = False,
    max_calls: int | None = JUDGE_MAX_CALLS,
    max_tokens: int | None = JUDGE_MAX_TOKENS,
    max_changes: int | None = None,
) -> JudgeReport:
    """Judge the new memories of every scope of `projects` (empty: all), or of one subject.
    `objections` is `core.statements.merge_objections` (what a merge may not lose), given by
    the caller; `embed` embeds texts through the store's cache."""
    report = JudgeReport(dry_run=dry_run)
    budget = Budget(max_calls, max_tokens, report.usage)
    run = _Run(store, llm, embed, model_id, objections, now, new_id, report, budget, max_changes)

    over_scopes(store, lambda: store.memory_scopes(list(projects)), subject, dry_run, run.run)
    return report
