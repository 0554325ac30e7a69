"""Dedupe: free-text memories of one subject that say the same thing in the same words.

Arrival already files a memory whose normalised text is known under the fact that has it
(`core.adjudicate`). What piles up anyway is what arrival could not see: memories stored by
an earlier version with another normalisation, copies brought in by `distill copy`, the same
words said under two speakers' names, a held candidate kept later. This pass looks at what is
stored, not at what arrives, and is deliberately conservative (the iii seed's v1):

* **merge**: texts equal once case, punctuation, white space and Unicode forms are folded
  (`identity.normalise_text`), under the same speaker (`attribution`). Nothing else merges
  here: one differing word is another statement ("always publishes" / "never publishes"),
  and meaning is the judge's and the offline tier's business, with their guards;
* **report only**: the same words in another order ("the deploy runs on Fridays" / "on
  Fridays the deploy runs", but also "Alice manages Bob" / "Bob manages Alice"). Word order
  can carry meaning, so a group of these is listed and nothing is written.

The survivor of a group is the pinned member, then the most corroborated, then the oldest
record (it carries the first provenance), then the smallest id: a total order, so the input
order never changes the outcome. Each other member retires in one action that is its
receipt (`superseded` with `superseded_by` the survivor, its validity emptied: the survivor
now stands for that span), while the survivor absorbs its evidence and corroboration in the
same plan: its events are added to the survivor's, its statements to the survivor's count
(a memory stated k+1 times has `reinforcement_count` k), its start moves back to the
earliest. A pinned member is never retired (it is reported as skipped); a pinned survivor is
never revised, so the losers point at it and keep their own evidence, which their receipts
lead to.

`max_retired` caps how many memories one run may retire; the members past it are reported as
capped and wait for the next run, which finds them again (nothing is remembered between
runs: the stored memories are the state).

**The offline tier** (`near`, off unless asked for): for users with no model, two memories of
one speaker merge when their embeddings are within the embedder's calibrated offline-merge
distance *and* `statements.offline_merge` finds no objection either way (a number, a
negation, an opposite, a name, a date, a condition, a role swap, a change), so whichever
survives loses nothing the words can see, and neither is placed relative to a different day
of saying ("yesterday", "last week": `statements.time_objection`). Closest pairs first; each
memory takes part in one merge per run (the next run goes on from the survivor). Its
figures on SICK test miss the targets it would need to be on by default (EVAL.md), which is
why it is an option.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from distill.core.identity import normalise_text
from distill.core.models import Fact, FactKind, FactStatus
from distill.core.passes import Decision, PassResult
from distill.core.plan import Plan, ReviseFact
from distill.core.statements import offline_merge, time_objection

PASS_NAME = "dedupe"
MERGING = ("merged", "offline")  # the group outcomes that retire memories


@dataclass(frozen=True)
class Group:
    """One set of memories that say the same thing: the survivor and what became of the rest.

    `merged` is "merged", "offline" (close in meaning, every guard clean: the offline tier)
    or "report_only" (the same words in another order: nothing written); `capped` are the
    members the run's cap left for the next run."""

    text: str
    survivor: str
    retired: tuple[str, ...] = ()
    pinned_skipped: tuple[str, ...] = ()
    members: tuple[str, ...] = ()
    merged: str = "merged"
    capped: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        return {
            "text": self.text,
            "survivor": self.survivor,
            "retired": list(self.retired),
            "pinned_skipped": list(self.pinned_skipped),
            "capped": list(self.capped),
            "members": list(self.members),
            "outcome": self.merged,
        }


@dataclass
class DedupeResult(PassResult):
    """What `decide` returns: the plan, and every group it found."""

    groups: list[Group] = field(default_factory=list)

    @property
    def retired(self) -> int:
        return sum(len(g.retired) for g in self.groups if g.merged in MERGING)


def survivor_order(fact: Fact) -> tuple[bool, int, datetime, str]:
    """Sort key of a group's members, best survivor first: pinned, most corroborated, oldest
    record, smallest id."""
    return (not fact.pinned, -fact.reinforcement_count, fact.recorded_at, fact.id)


def word_bag(text: str) -> tuple[str, ...]:
    """The words of a text, case and punctuation folded, in sorted order (kept with their
    repetitions: "very very good" is not "very good")."""
    return tuple(sorted(normalise_text(text).split()))


@dataclass(frozen=True)
class Near:
    """Two memories whose embeddings are `distance` apart (cosine), for the offline tier."""

    a: str
    b: str
    distance: float


def dedupe(
    memories: Iterable[Fact],
    now: datetime,
    max_retired: int | None = None,
    near: Sequence[Near] = (),
    max_distance: float | None = None,
    held: frozenset[str] = frozenset(),
) -> DedupeResult:
    """Group one subject's live memories and plan the merges (see the module docstring).

    Only active memory facts, unpinned or pinned, take part; anything else is ignored, and so
    is a memory an open conflict set holds (`held`: that set decides it first). `max_retired`
    None: no cap. `near` and `max_distance`: the offline tier's pairs and its calibrated
    distance (none: the tier is off).
    """
    live = sorted(
        (
            f
            for f in memories
            if f.kind is FactKind.MEMORY and f.status is FactStatus.ACTIVE and f.id not in held
        ),
        key=survivor_order,
    )
    exact: dict[tuple[str | None, str], list[Fact]] = defaultdict(list)
    for fact in live:
        exact[(fact.attribution, normalise_text(fact.text))].append(fact)

    result = DedupeResult(plan=Plan())
    budget = max_retired
    # Groups in a stable order (by their survivor), so that a capped run always takes the
    # same groups first.
    for (_, norm), members in sorted(exact.items(), key=lambda kv: survivor_order(kv[1][0])):
        if len(members) < 2:
            continue
        survivor, others = members[0], members[1:]
        losers = [f for f in others if not f.pinned]
        skipped = tuple(f.id for f in others if f.pinned)
        ids = tuple(f.id for f in members)
        left: list[Fact] = []
        if budget is not None:
            losers, left = losers[:budget], losers[budget:]
            budget -= len(losers)
            result.capped = result.capped or bool(left)
        same = f"the same text as {survivor.id} once case, punctuation and spacing are folded"
        merge_into(result.plan, survivor, losers, now, same)
        result.decisions.extend(Decision("merged", f.id, f"into {survivor.id}") for f in losers)
        retired = tuple(f.id for f in losers)
        capped = tuple(f.id for f in left)
        result.groups.append(Group(norm, survivor.id, retired, skipped, ids, "merged", capped))
        for fact in others:
            if fact.pinned:
                result.decisions.append(
                    Decision("pinned_skipped", fact.id, "pinned: never retired")
                )

    if near and max_distance is not None:
        budget = _offline(result, live, near, max_distance, now, budget)

    # Word-order groups: the same bag of words under one speaker, in more than one order.
    reordered: dict[tuple[str | None, tuple[str, ...]], dict[str, Fact]] = defaultdict(dict)
    for fact in live:
        norm = normalise_text(fact.text)
        reordered[(fact.attribution, word_bag(fact.text))].setdefault(norm, fact)
    for (_, bag), by_text in sorted(reordered.items(), key=lambda kv: kv[0][1]):
        if len(by_text) < 2:
            continue
        firsts = sorted(by_text.values(), key=survivor_order)
        result.groups.append(
            Group(
                " ".join(bag),
                firsts[0].id,
                members=tuple(f.id for f in firsts),
                merged="report_only",
            )
        )
        result.decisions.append(
            Decision(
                "report_only",
                firsts[0].id,
                "the same words in another order: word order may carry meaning",
            )
        )
    result.plan.outcomes.update(
        {"retired": result.retired, "groups": sum(g.merged in MERGING for g in result.groups)}
    )
    return result


def _offline(
    result: DedupeResult,
    live: Sequence[Fact],
    near: Sequence[Near],
    max_distance: float,
    now: datetime,
    budget: int | None,
) -> int | None:
    """The offline tier's merges (module docstring), after the exact ones; returns what is
    left of the cap."""
    by_id = {f.id: f for f in live}
    taken = {a.before.id for a in result.plan.actions if isinstance(a, ReviseFact)}
    for pair in sorted(near, key=lambda n: (n.distance, min(n.a, n.b), max(n.a, n.b))):
        a, b = by_id.get(pair.a), by_id.get(pair.b)
        if a is None or b is None or a.id == b.id or {a.id, b.id} & taken:
            continue
        if a.attribution != b.attribution or (a.pinned and b.pinned):
            continue
        apart = time_objection(a.text, a.valid_from.date(), b.text, b.valid_from.date())
        decided = offline_merge(a.text, b.text, pair.distance, max_distance)
        if apart is not None or not decided:
            continue
        survivor, loser = sorted((a, b), key=survivor_order)
        if budget is not None and budget <= 0:
            result.capped = True
            result.groups.append(
                Group(survivor.text, survivor.id, members=(survivor.id, loser.id),
                      merged="offline", capped=(loser.id,))
            )  # fmt: skip
            continue
        merge_into(result.plan, survivor, [loser], now, f"offline tier: {decided.reason}")
        taken |= {a.id, b.id}
        if budget is not None:
            budget -= 1
        result.decisions.append(Decision("merged", loser.id, f"into {survivor.id} (offline)"))
        result.groups.append(
            Group(survivor.text, survivor.id, (loser.id,), members=(survivor.id, loser.id),
                  merged="offline")
        )  # fmt: skip
    return budget


def merge_into(
    plan: Plan,
    survivor: Fact,
    losers: Sequence[Fact],
    now: datetime,
    reason: str,
    pass_name: str = PASS_NAME,
) -> None:
    """Retire each of `losers` into `survivor` (the receipt: superseded by it, its validity
    emptied, for the survivor now stands for its span) and let the survivor absorb their
    evidence, statements, earliest start and best trust, unless it is pinned (then it is
    left as it is, and the losers' receipts lead to their own evidence). Every pass that
    merges memories merges them this way."""
    if not losers:
        return
    for loser in losers:
        retired = loser.model_copy(
            update={
                "status": FactStatus.SUPERSEDED,
                "superseded_by": survivor.id,
                "valid_to": loser.valid_from,
                "retired_at": now,
            }
        )
        plan.add(ReviseFact(loser, retired, "merge", reason, pass_name))
    if survivor.pinned:
        return
    sources = list(survivor.source_event_ids)
    for loser in losers:
        sources.extend(e for e in loser.source_event_ids if e not in sources)
    absorbed = survivor.model_copy(
        update={
            "source_event_ids": tuple(sources),
            "reinforcement_count": survivor.reinforcement_count
            + sum(f.reinforcement_count + 1 for f in losers),
            "valid_from": min([survivor.valid_from, *(f.valid_from for f in losers)]),
            "last_reinforced_at": max(
                [survivor.last_reinforced_at, *(f.last_reinforced_at for f in losers)]
            ),
            # The evidence it absorbs keeps its weight: trust is the best of it, as a
            # reinforcement's is.
            "trust": max([survivor.trust, *(f.trust for f in losers)], key=lambda t: t.rank),
        }
    )
    absorbed_ids = ", ".join(f.id for f in losers)
    plan.add(ReviseFact(survivor, absorbed, "absorb", f"absorbed {absorbed_ids}", pass_name))
