"""The derive pass's decision: a scope's new votes (`core.votes`) against its open facts.

For each identity (predicate and identity qualifiers) with votes in the cycle:

- no open fact: the canonical value (`votes.tally`) becomes an active fact, supported by
  the events of its cluster's votes (`created`);
- the canonical value falls in the open fact's cluster: the fact is reinforced by that
  cluster's votes, its value left as it is; a paraphrase-only change never invalidates and
  never opens a second fact (`reinforced`);
- otherwise, when strictly more than `INVALIDATE_SHARE` of the evidence falls outside the
  open fact's cluster, the fact is closed in world time where the winning cluster's first
  vote of the cycle begins (`valid_to`), retired with a receipt (`superseded_by`), and the
  canonical value becomes the active fact (`invalidated`). With the mode deciding the
  canonical value, another cluster winning means the open one holds at most half of the
  evidence, so the bar is always met then; it is checked anyway, the rule written once.

**Untrusted votes count zero.** They are read (`processed`), kept as observations and counted
apart (`untrusted`), but elect, reinforce and close nothing: everywhere else an untrusted
source's claim is held in quarantine and never served (DESIGN, the write gate), and a vote
is no way round that. An identity whose cycle brought only untrusted votes is left as it
stands (`ignored`). The other trust classes count one each: `vote` is declared where no
single source is reliable, and weights between third parties and trusted sources would need
a measurement the benchmark (one trust class) cannot give; a value a person must hold fixed
is pinned, or its predicate kept `latest`.

Pinned facts are never touched. A cycle always ends with a `RecordCycle` (its audit entry
is the cycle's record, also when it had nothing to do) and, when it read votes, the move of
the scope's cursor past them.

**Whose evidence: the cycle's.** Each vote counts once, in the cycle that reads it (the
cursor), against the fact that stands. Accumulated evidence was rejected: an attribute
voted on is one that changes (a footballer's club, a town's population), and a fact
elected by years of votes would then outvote the first seasons of the new value. Measured
on the derive benchmark (`distill eval derive`, EVAL.md), accumulated counts are right less
often than `latest` (0.78 against 0.90 with 10% noise); the cycle's votes, more often
(0.99). The cycle's evidence degrades gracefully: a cycle of one vote decides as `latest`
would; a cycle of many outvotes the noise. The cost, said plainly: the outcome depends on
how votes fall into cycles (the batch cap, how often derive runs), not only on the votes;
within one cycle it depends on nothing but the votes and their times.

Drift (`core.drift`) is counted over the subject's invalidations, these included.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from distill.core import drift
from distill.core.identity import content_hash, fact_text, identity_text
from distill.core.models import Fact, FactKind, FactStatus, Scalar, Trust
from distill.core.passes import Decision, PassResult
from distill.core.plan import CreateFact, MoveCursor, Plan, RecordCycle, ReviseFact
from distill.core.votes import Ballot, Tally, surface, tally

PASS_NAME = "derive"
# The seed's contradiction threshold: a prior fact is invalidated when strictly more than
# this share of the cycle's evidence falls outside its cluster (3 of 5 votes against it do,
# 2 of 5 do not: SCENARIOS 32).
INVALIDATE_SHARE = 0.40
# Votes read per scope per cycle; the rest waits behind the cursor for the next cycle (the
# seed's DEFAULT_BATCH_SIZE: one cycle's embedding call and plan stay small).
DERIVE_BATCH = 500
COUNTS = ("processed", "untrusted", "created", "reinforced", "invalidated", "drift_alerts")

Vector = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Group:
    """One identity's votes in the cycle."""

    key: str
    predicate: str
    qualifiers: dict[str, Scalar]
    ballots: tuple[Ballot, ...]


@dataclass
class DeriveSnapshot:
    """What the derive decision may see of one scope."""

    project: str
    subject: str
    groups: list[Group]
    open_facts: dict[str, Fact]  # the active state fact of each voted identity, by key
    vectors: dict[str, Vector]  # surface forms and identity texts, by text
    vector_model: str | None
    max_distance: float | None  # the clustering distance (None: exact mode)
    cursor_before: str | None
    cursor_after: str | None  # the last vote read (None: none was)
    processed: int
    capped: bool
    invalidations: list[datetime] = field(default_factory=list)  # world times, before


@dataclass
class DeriveResult(PassResult):
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTS, 0))
    unstable: bool = False
    facts: list[Fact] = field(default_factory=list)  # created or reinforced, as they end


def decide(s: DeriveSnapshot, now: datetime, new_id: Callable[[], str]) -> DeriveResult:
    """The plan of one cycle over one scope (see the module docstring)."""
    d = _Deriver(s, now, new_id)
    for group in sorted(s.groups, key=lambda g: g.key):
        d.group(group)
    before = drift.unstable(s.invalidations, now)
    after = drift.unstable(s.invalidations + d.closed, now)
    d.result.unstable = after
    counts = d.result.counts
    counts["processed"] = s.processed
    counts["drift_alerts"] = int(after and not before)
    plan = d.result.plan
    if s.cursor_after is not None and s.cursor_after != s.cursor_before:
        plan.add(
            MoveCursor(
                s.project,
                s.subject,
                PASS_NAME,
                s.cursor_before,
                s.cursor_after,
                now,
                f"read {s.processed} vote(s)" + (" (capped)" if s.capped else ""),
                PASS_NAME,
            )
        )
    reason = ", ".join(f"{k} {v}" for k, v in counts.items())
    if after != before:
        reason += f"; the subject is {'unstable' if after else 'stable again'}"
    plan.add(RecordCycle(s.project, s.subject, PASS_NAME, dict(counts), after, reason))
    plan.outcomes.update({k: v for k, v in counts.items() if k != "processed" and v})
    d.result.cursor, d.result.capped = s.cursor_after, s.capped
    return d.result


class _Deriver:
    def __init__(self, s: DeriveSnapshot, now: datetime, new_id: Callable[[], str]) -> None:
        self.s, self.now, self.new_id = s, now, new_id
        self.result = DeriveResult(Plan())
        self.closed: list[datetime] = []  # world times of this cycle's invalidations

    def group(self, g: Group) -> None:
        prior = self.s.open_facts.get(g.key)
        counted = tuple(b for b in g.ballots if b.trust is not Trust.UNTRUSTED)
        if len(counted) < len(g.ballots):
            untrusted = len(g.ballots) - len(counted)
            self.result.counts["untrusted"] += untrusted
            if not counted:
                self._decision(
                    "ignored",
                    prior.id if prior is not None else None,
                    f"{untrusted} vote(s) on {g.predicate}, all from untrusted sources: "
                    "an untrusted source never decides a value",
                )
                return
            g = replace(g, ballots=counted)
        also = [surface(prior.value)] if prior is not None and prior.value else []
        t = tally(g.ballots, self.s.vectors, self.s.max_distance, also)
        share = f"{t.votes[t.cluster]} of {t.total} votes"
        if prior is None:
            self._create(g, t, None, f"elected by {share}")
            self.result.counts["created"] += 1
            return
        if prior.pinned:
            self._decision("kept", prior.id, "pinned facts are not changed by consolidation")
            return
        home = t.clusters[also[0]] if also else -1
        outside = t.share_outside(home)
        if t.cluster == home or outside <= INVALIDATE_SHARE:
            self._reinforce(prior, g, t, home, f"{outside:.0%} of the votes against it")
            return
        self._invalidate(prior, g, t, f"{outside:.0%} of the votes against it; {share}")

    def _supporters(self, g: Group, t: Tally, cluster: int) -> list[Ballot]:
        return sorted(t.ballots_in(g.ballots, cluster), key=lambda b: (b.at, b.observation_id))

    def _create(self, g: Group, t: Tally, prior: Fact | None, reason: str) -> Fact:
        fact = self._elected(g, t, prior)
        self._add(g, fact, reason)
        self._decision("created" if prior is None else "invalidated", fact.id, reason)
        return fact

    def _elected(self, g: Group, t: Tally, prior: Fact | None) -> Fact:
        """The fact the vote elects: the canonical value, backed by its cluster's votes."""
        backing = self._supporters(g, t, t.cluster)
        value = dict(t.winner.value)
        start = backing[0].at if prior is None else max(prior.valid_from, backing[0].at)
        trust = max((b.trust for b in backing), key=lambda r: r.rank)
        events = tuple(dict.fromkeys(b.event_id for b in backing))
        fact = Fact(
            id=self.new_id(),
            project=self.s.project,
            subject=self.s.subject,
            kind=FactKind.STATE,
            predicate=g.predicate,
            value=value,
            text=fact_text(g.predicate, value, g.qualifiers),
            qualifiers=g.qualifiers,
            identity_key=g.key,
            status=FactStatus.ACTIVE,
            valid_from=start,
            recorded_at=self.now,
            supersedes_id=prior.id if prior else None,
            source_event_ids=events,
            reinforcement_count=len(events) - 1,
            last_reinforced_at=backing[-1].at,
            trust=trust,
            # The vote's margin, not a model's confidence: the winning cluster's share.
            confidence=round(t.votes[t.cluster] / t.total, 4),
        )
        return fact

    def _add(self, g: Group, fact: Fact, reason: str) -> None:
        assert fact.value is not None
        text = identity_text(g.predicate, fact.value)
        vector = self.s.vectors.get(text)
        self.result.plan.add(
            CreateFact(
                fact,
                reason,
                PASS_NAME,
                vector=vector,
                vector_model=self.s.vector_model if vector is not None else None,
                vector_text_hash=content_hash(text) if vector is not None else None,
            )
        )
        self.result.facts.append(fact)

    def _reinforce(self, prior: Fact, g: Group, t: Tally, home: int, reason: str) -> None:
        backing = self._supporters(g, t, home)
        new = [b for b in backing if b.event_id not in prior.source_event_ids]
        events = tuple(dict.fromkeys(b.event_id for b in new))
        if not events:  # nothing new for it (the votes went elsewhere, and not far enough)
            self._decision("kept", prior.id, reason)
            return
        trust = max([prior.trust, *(b.trust for b in new)], key=lambda r: r.rank)
        after = prior.model_copy(
            update={
                "source_event_ids": (*prior.source_event_ids, *events),
                "reinforcement_count": prior.reinforcement_count + len(events),
                "last_reinforced_at": max(prior.last_reinforced_at, new[-1].at),
                "trust": trust,
            }
        )
        why = f"re-elected: {reason}"
        self.result.plan.add(ReviseFact(prior, after, "reinforce", why, PASS_NAME))
        self.result.counts["reinforced"] += 1
        self.result.facts.append(after)
        self._decision("reinforced", prior.id, why)

    def _invalidate(self, prior: Fact, g: Group, t: Tally, reason: str) -> None:
        fact = self._elected(g, t, prior)
        end = fact.valid_from if prior.valid_to is None else min(prior.valid_to, fact.valid_from)
        after = prior.model_copy(
            update={
                "status": FactStatus.SUPERSEDED,
                "valid_to": end,
                "retired_at": self.now,
                "superseded_by": fact.id,
            }
        )
        # The retirement goes first: one active fact per identity at every step.
        self.result.plan.add(ReviseFact(prior, after, "retire", reason, PASS_NAME))
        why = f"invalidates {prior.id}: {reason}"
        self._add(g, fact, why)
        self._decision("invalidated", fact.id, why)
        self.result.counts["invalidated"] += 1
        self.closed.append(end)

    def _decision(self, outcome: str, fact_id: str | None, reason: str) -> None:
        self.result.decisions.append(Decision(outcome, fact_id, reason))


def follow(groups: Sequence[Group], moves: dict[str, tuple[str, str]]) -> list[Group]:
    """`groups` with each one whose name the subject resolved into another counted under
    that other (`moves`: key -> (predicate, key), as the adjudicator files a claim of that
    name); groups that meet merge, their ballots in world-time order."""
    found: dict[str, tuple[str, dict[str, Scalar], list[Ballot]]] = {}
    for g in groups:
        predicate, key = moves.get(g.key, (g.predicate, g.key))
        found.setdefault(key, (predicate, g.qualifiers, []))[2].extend(g.ballots)
    return [
        Group(k, p, q, tuple(sorted(b, key=lambda x: (x.at, x.observation_id))))
        for k, (p, q, b) in sorted(found.items())
    ]


def ballot_groups(
    observations: Sequence[tuple[str, str, dict[str, Any], dict[str, Scalar], Ballot]],
) -> list[Group]:
    """Votes grouped by identity: `(key, predicate, value, identity qualifiers, ballot)`."""
    found: dict[str, tuple[str, dict[str, Scalar], list[Ballot]]] = {}
    for key, predicate, _value, qualifiers, ballot in observations:
        found.setdefault(key, (predicate, qualifiers, []))[2].append(ballot)
    return [
        Group(k, p, q, tuple(sorted(b, key=lambda x: (x.at, x.observation_id))))
        for k, (p, q, b) in sorted(found.items())
    ]
