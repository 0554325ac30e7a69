"""The shape of a consolidation pass, written down once.

Every pass (adjudicate today; dedupe, judge, summarise, decay, derive, procedures and topics
next) is three steps, and only the middle one is the pass's own logic:

    snapshot = pass_.load(store, scope, work)    # reads: a few batched store calls
    result   = pass_.decide(snapshot, context)   # pure: decisions and a plan of typed actions
    apply_plan(store, result.plan, ...)          # the one applier: validate, audit, write

`load` reads everything the decision may look at in a handful of batched store calls (never
one call per fact), under the scope's lock; `decide` is a pure function of that snapshot, so
its tests run on values, without a database; the applier (`distill.applier`) is the only
path to the store, so no pass can skip validation or the audit. A pass that works through a
backlog says where it stopped (`cursor`) and whether it stopped at its cap (`capped`), so
that the next run resumes there.

This module holds the values a pass works with and returns; the `Pass` protocol itself, whose
`load` calls the store, is in `distill.passes`. Nothing here does I/O.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from distill.core.plan import Plan, Rejection


@dataclass(frozen=True)
class Scope:
    """Whose memory a pass works on: one subject of a project."""

    project: str
    subject: str


@dataclass(frozen=True)
class Context:
    """What a decision may use besides its snapshot: the time, and how to make ids."""

    now: datetime
    new_id: Callable[[], str]


@dataclass(frozen=True)
class Decision:
    """What a pass decided about one item, and why.

    `outcome` is in the pass's own vocabulary (adjudication: `created`, `reinforced`,
    `superseded`, ...); `fact_id` is the fact the decision ended on, if any.
    """

    outcome: str
    fact_id: str | None
    reason: str


@dataclass
class PassResult:
    """What `decide` returns: the plan to apply and every decision behind it."""

    plan: Plan
    decisions: list[Decision] = field(default_factory=list)
    # Where the next run of the pass starts (for passes that walk a backlog), and whether
    # this one stopped at its cap with work left.
    cursor: str | None = None
    capped: bool = False

    @property
    def outcomes(self) -> Counter[str]:
        return self.plan.outcomes

    @property
    def rejections(self) -> list[Rejection]:
        return self.plan.rejections
