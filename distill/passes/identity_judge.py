"""The identity judge: open identity sets put to a model, decided through the one applier.

`judge_identities` gathers a project's open identity sets (`core.attribute_match`: two
predicates that are probably one attribute), asks the model about them in batches
(`core.identity_judge`: one call per `JUDGE_BATCH` pairs, whatever the number of subjects),
then applies the verdicts one by one with `IdentityJudgement`, a `Pass` like any other:
under the subject's lock it reads the set again, applies the verdict only if the set is still
open with two live facts (a person, or an earlier verdict of this run, may have decided it
meanwhile; a set an earlier verdict moved to its kept fact keeps its question, the kept fact
being the same attribute), and resolves it the way a person would
(`core.resolve.resolve_conflict`), signed by this pass. One verdict a transaction: sets of
one subject often share a fact (several new names contested against one known fact), and
each verdict must see what the one before it did (a fact retired, a set moved to the kept
fact, an alias learned); a verdict that cannot be applied (a fact pinned meanwhile) costs
only itself.

Not asked, left to a person: a pair with a pinned member (a model's `same` would retire a
fact a person fixed), a pair whose newer fact comes from a less trusted source than the
older (a model's `same` would let it replace a better-trusted value, which the adjudicator
quarantines when it comes under the same name), and a pair with a member held in an open
value conflict or quarantine set, or with a rival value held in one
(`resolve.resolve_conflict` refuses to retire it: that set is decided first, and the pair
is asked about in a later run).

Fail-soft: a provider error or an answer that cannot be read stops judging for this run and
leaves the sets open (they are asked about again next run); nothing is half-applied.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from distill.core import identity_judge
from distill.core.identity_judge import JUDGE_BATCH, Pair, Verdict, pair_of
from distill.core.models import ConflictKind, ConflictSet, ConflictStatus, Fact, Resolver
from distill.core.passes import Context, Decision, PassResult, Scope
from distill.core.plan import Plan
from distill.core.resolve import held_elsewhere, resolve_conflict
from distill.errors import DistillError
from distill.passes import run_pass
from distill.ports import LLM, LLMUsage, Store

log = logging.getLogger("distill.judge")

PASS_NAME = "judge_identity"


@dataclass
class Judged:
    """What one judging run did."""

    asked: int = 0  # pairs put to the model
    same: int = 0  # sets resolved as one attribute
    different: int = 0  # sets closed as two attributes
    skipped: int = 0  # verdicts dropped: the set changed meanwhile, or no usable answer
    stopped: str = ""  # why judging stopped early, "" when it did not
    usage: LLMUsage = field(default_factory=LLMUsage)
    projects: int = 0  # projects looked at
    capped: int = 0  # open pairs left by `max_pairs`
    budget: str = ""  # why the token budget stopped it, "" when it did not
    dry_run: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "pass": PASS_NAME,
            "dry_run": self.dry_run,
            "projects": self.projects,
            "asked": self.asked,
            "same": self.same,
            "different": self.different,
            "skipped": self.skipped,
            "stopped": self.stopped,
            "capped": self.capped,
            "budget": self.budget,
            "llm_calls": self.usage.calls,
            "llm_tokens": self.usage.tokens,
        }


@dataclass(frozen=True)
class JudgeSnapshot:
    verdicts: Sequence[Verdict]
    conflicts: dict[str, ConflictSet]
    members: dict[str, Fact]
    aliases: dict[str, str]  # the members' names that already mean something: → canonical


class IdentityJudgement:
    """`distill.passes.Pass`: apply a model's verdicts on one subject's identity sets
    (`judge_identities` gives it one a run: see the module docstring)."""

    name = PASS_NAME
    cap: int | None = None

    def __init__(self, model_id: str) -> None:
        self.model_id = model_id

    def load(self, store: Store, scope: Scope, work: Sequence[Verdict]) -> JudgeSnapshot:
        conflicts = {
            c.id: c for c in store.conflicts(scope.project, scope.subject, ConflictStatus.OPEN)
        }
        wanted = sorted(
            {
                m
                for v in work
                if v.conflict_id in conflicts
                for m in conflicts[v.conflict_id].member_ids
            }
        )
        members = {f.id: f for f in store.facts_by_ids(scope.project, wanted)}
        names = sorted({f.predicate for f in members.values() if f.predicate})
        aliases = {a: x.canonical for a, x in store.aliases(scope.project, names).items()}
        return JudgeSnapshot(work, conflicts, members, aliases)

    def decide(self, snapshot: JudgeSnapshot, context: Context) -> PassResult:
        plan = Plan()
        decisions: list[Decision] = []
        by = f"the model {self.model_id}"
        others = list(snapshot.conflicts.values())
        for verdict in snapshot.verdicts:
            conflict = snapshot.conflicts.get(verdict.conflict_id)
            pair = pair_of(conflict, snapshot.members) if conflict is not None else None
            if conflict is None or conflict.status is not ConflictStatus.OPEN or pair is None:
                decisions.append(Decision("skipped", None, "the set changed meanwhile"))
                continue
            if for_a_person(pair, others):  # pinned, less trusted, or held in a value set
                decisions.append(Decision("skipped", None, "left to a person"))
                continue
            # A set an earlier verdict moved to its kept fact keeps its question: the fact
            # it now holds is the same attribute as the one it was asked about.
            keep = pair.newer.id if verdict.same else None
            resolved = resolve_conflict(
                conflict,
                snapshot.members,
                keep,
                context.now,
                by=by,
                pass_name=PASS_NAME,
                resolver=Resolver.MODEL,
                aliases=snapshot.aliases,
                others=others,
            )
            plan.actions.extend(resolved.actions)
            outcome = "same" if verdict.same else "different"
            decisions.append(Decision(outcome, keep, verdict.reason))
        return PassResult(plan, decisions)


def open_pairs(store: Store, project: str) -> list[Pair]:
    """The project's open identity sets that still hold two live facts, oldest first."""
    everything = store.conflicts(project, None, ConflictStatus.OPEN)
    sets = [c for c in everything if c.kind is ConflictKind.IDENTITY]
    ids = sorted({m for c in sets for m in c.member_ids})
    members = {f.id: f for f in store.facts_by_ids(project, ids)}
    pairs = [p for c in sets if (p := pair_of(c, members)) is not None]
    return [p for p in pairs if not for_a_person(p, everything)]


def for_a_person(pair: Pair, others: Sequence[ConflictSet]) -> bool:
    """A pair no model's verdict may settle (see the module docstring)."""
    older, newer = pair.older, pair.newer
    return (
        older.pinned
        or newer.pinned
        or newer.trust.rank < older.trust.rank
        or bool(held_elsewhere(pair.conflict, [older, newer], others))
    )


def judge_projects(
    store: Store,
    llm: LLM,
    projects: Sequence[str],
    now: Callable[[], datetime],
    new_id: Callable[[], str],
    max_pairs: int | None = None,
    max_tokens: int | None = None,
) -> Judged:
    """`judge_identities` over `projects` in order, at most `max_pairs` pairs and
    `max_tokens` tokens in all; the first project the model fails for stops the rest
    (`stopped` names it). The open pairs of projects the cap or the budget left are counted
    (`capped`), so that a scheduled run that stopped short says so."""
    total = Judged()
    for index, project in enumerate(projects):
        pairs = None if max_pairs is None else max_pairs - total.asked
        tokens = None if max_tokens is None else max_tokens - total.usage.tokens
        if (pairs is not None and pairs <= 0) or total.budget:
            total.capped += sum(len(open_pairs(store, p)) for p in projects[index:])
            break
        judged = judge_identities(store, llm, project, now, new_id, pairs, tokens)
        total.projects += 1
        total.asked += judged.asked
        total.same += judged.same
        total.different += judged.different
        total.skipped += judged.skipped
        total.capped += judged.capped
        total.budget = judged.budget
        total.usage.include(judged.usage)
        if judged.stopped:
            total.stopped = f"{project}: {judged.stopped}"
            break
    return total


def judge_identities(
    store: Store,
    llm: LLM,
    project: str,
    now: Callable[[], datetime],
    new_id: Callable[[], str],
    max_pairs: int | None = None,
    max_tokens: int | None = None,
) -> Judged:
    """Ask `llm` about the project's open identity sets (at most `max_pairs` of them, no call
    begun once `max_tokens` are spent) and apply its verdicts."""
    judged = Judged()
    everything = open_pairs(store, project)
    pairs = everything[:max_pairs]
    judged.capped = len(everything) - len(pairs)
    verdicts: list[Verdict] = []
    for start in range(0, len(pairs), JUDGE_BATCH):
        if max_tokens is not None and judged.usage.tokens >= max_tokens:
            judged.budget = f"budget: {judged.usage.tokens} of {max_tokens} tokens spent"
            judged.capped += len(pairs) - start
            pairs = pairs[:start]
            break
        batch = pairs[start : start + JUDGE_BATCH]
        try:
            answer = llm.complete(
                identity_judge.SYSTEM, identity_judge.render(batch), identity_judge.SCHEMA
            )
            judged.usage.add(answer)
            found = identity_judge.read(answer.text, batch)
        except (DistillError, ValueError) as exc:
            judged.stopped = f"{type(exc).__name__}: {exc}"
            log.warning("identity judge stopped, sets left open: %s", judged.stopped)
            break
        judged.asked += len(batch)
        judged.skipped += len(batch) - len(found)
        verdicts.extend(found)

    subjects = {p.conflict.id: p.conflict.subject for p in pairs}
    judgement = IdentityJudgement(getattr(llm, "model_id", "model"))
    for verdict in sorted(verdicts, key=lambda v: subjects[v.conflict_id]):
        subject = subjects[verdict.conflict_id]
        try:
            result = run_pass(
                store, judgement, Scope(project, subject), [verdict], now=now(), new_id=new_id
            )
        except DistillError as exc:  # rolled back: this set stays open
            log.warning("identity verdict for %s/%s not applied: %s", project, subject, exc)
            judged.skipped += 1
            continue
        for d in result.decisions:
            if d.outcome == "same":
                judged.same += 1
            elif d.outcome == "different":
                judged.different += 1
            else:
                judged.skipped += 1
    return judged
