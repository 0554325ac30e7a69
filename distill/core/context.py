"""The context block: what an agent puts in its prompt about a subject.

An agent asks for a subject's memory before it answers; it gets the subject's rules and the
facts that fit a token budget, each fact with its dates, as a text block and as structured
data. Three rules shape it:

- **Rules first.** The subject's rules (`core.rules`: standing instructions, a person's
  first, then the learned ones) open the block, under their own header, because they say
  how to act on everything after them. They take the budget first, but always leave room
  for the facts' header and closing lines; a rule that does not fit is counted in
  `rules_left_out` and the block says so.

- **Nothing contested is silently picked.** A fact in an open conflict set (two values for
  one identity, or two names that may be one attribute) is shown with the other members of
  its set, marked contested, so the agent can say it does not know, or ask. A fact held in
  quarantine (a low-trust claim) is not shown at all: the trusted value it disputes is.
- **The budget is a hard limit.** Items are taken in order until the next would not fit;
  the block says how many were left out. A contested item and its alternatives count as
  one: they are shown together or not at all.

- **What was just said is not hidden.** The worker extracts a subject's events once 20 have
  arrived or the oldest waited 15 minutes (`WorkerSettings`), so an agent's last turns may
  not be facts yet. The subject's events that wait (trusted enough to become facts: an
  untrusted one would be quarantined, so it is not shown) close the block under their own
  header, newest kept first, oldest shown first, marked as not yet consolidated: the agent
  reads "I moved to Lyon" said a minute ago beside the fact that still says Paris. They take
  at most half the budget (`WAITING_SHARE`), so the facts always keep the other half.

The order with a query is the search's (most relevant first). Without one: pinned facts
first (a person said they matter), then the most recently confirmed (`last_reinforced_at`),
then the most often confirmed, then by id.
Pure: the caller reads the facts, the open sets and the waiting events.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from distill.core.answers import one_line
from distill.core.extraction import estimate_tokens
from distill.core.models import ConflictKind, ConflictSet, Event, Fact, Rule, Trust

# Sets whose members are shown together as contested; a quarantine set is not one of them.
CONTESTING = (ConflictKind.CONFLICT, ConflictKind.IDENTITY)
# Tokens of a context block by default: a few dozen facts, a small share of any model's prompt.
CONTEXT_TOKENS = 1_000
CONTEXT_TOKENS_MIN = 50  # room for the header, one fact and the closing line
# Waiting events a block shows at most: the worker's default trigger (20 events), so that
# every event a waiting job holds before its run can be shown when the budget allows.
WAITING_SHOWN = 20
# The share of the budget (after the rules) the waiting events may take: what was just said
# matters most, but an agent that said much must not push every fact out of its prompt.
WAITING_SHARE = 0.5


@dataclass(frozen=True)
class ContextItem:
    """One fact of the block, and, when it is contested, the other members of its set."""

    fact: Fact
    line: str
    conflict_id: str | None = None
    alternatives: tuple[Fact, ...] = ()

    @property
    def contested(self) -> bool:
        return self.conflict_id is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.fact.id,
            "text": self.fact.text,
            "kind": self.fact.kind.value,
            "predicate": self.fact.predicate,
            "value": self.fact.value,
            "valid_from": self.fact.valid_from.isoformat(),
            "valid_to": self.fact.valid_to.isoformat() if self.fact.valid_to else None,
            "pinned": self.fact.pinned,
            "contested": self.contested,
            "conflict_id": self.conflict_id,
            "alternatives": [
                {"id": f.id, "text": f.text, "valid_from": f.valid_from.isoformat()}
                for f in self.alternatives
            ],
            "evidence": list(self.fact.source_event_ids),
        }


@dataclass(frozen=True)
class Context:
    """The block for one subject: `text` goes in the prompt, `items` are the same as data."""

    subject: str
    project: str
    as_of: datetime | None
    budget_tokens: int
    items: tuple[ContextItem, ...]
    left_out: int  # facts that did not fit the budget
    text: str
    rules: tuple[Rule, ...] = ()  # the rules shown, in the order shown
    rules_left_out: int = 0  # rules that did not fit the budget
    waiting: tuple[Event, ...] = ()  # events not consolidated yet, shown oldest first
    waiting_left_out: int = 0  # waiting events that did not fit (their share, or the cap)

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.text)

    def to_dict(self) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "project": self.project,
            "as_of": self.as_of.isoformat() if self.as_of else None,
            "budget_tokens": self.budget_tokens,
            "tokens": self.tokens,
            "left_out": self.left_out,
            "text": self.text,
            "rules": [
                {
                    "id": r.id,
                    "text": r.text,
                    "origin": r.origin.value,
                    "created_at": r.created_at.isoformat(),
                    "source_fact_ids": list(r.source_fact_ids),
                }
                for r in self.rules
            ],
            "rules_left_out": self.rules_left_out,
            "facts": [item.to_dict() for item in self.items],
            "waiting": [
                {"id": e.id, "text": e.text, "occurred_at": e.occurred_at.isoformat()}
                for e in self.waiting
            ],
            "waiting_left_out": self.waiting_left_out,
        }


def build_context(
    subject: str,
    project: str,
    served: Sequence[Fact],
    open_sets: Sequence[ConflictSet],
    members: Mapping[str, Fact],
    budget_tokens: int,
    as_of: datetime | None = None,
    ranked: bool = False,
    rules: Sequence[Rule] = (),
    waiting: Sequence[Event] = (),
) -> Context:
    """The block: the subject's `rules`, in the order to show, then `served` (the subject's
    facts as `Memory.facts` serves them), marked with the open `open_sets` they sit in (whose
    members are in `members`, by id), then the `waiting` events (the subject's newest events
    not consolidated yet, newest first; at most `WAITING_SHOWN` are shown, a longer list says
    there are more). `ranked`: `served` is in the order to show (a search's, most relevant
    first)."""
    sets_of: dict[str, ConflictSet] = {}
    for open_set in open_sets:
        if open_set.kind in CONTESTING:
            for member in open_set.member_ids:
                sets_of.setdefault(member, open_set)
    header = f"What is known about {subject}" + (f" as of {_day(as_of)}" if as_of else "") + ":"
    # What the facts' part needs whatever the rules take: its header, and room for both of
    # its closing lines ("nothing known yet", and what was left out).
    facts_room = estimate_tokens(header) + 1 + 2 * _TAIL_TOKENS
    lines, shown_rules = _rules(subject, rules, budget_tokens - facts_room)
    rules_left = len(rules) - len(shown_rules)
    used = sum(estimate_tokens(line) + 1 for line in lines) + estimate_tokens(header)
    share = int((budget_tokens - used - facts_room) * WAITING_SHARE)
    after, shown_waiting, waiting_left = _waiting(waiting, share)
    budget = budget_tokens - sum(estimate_tokens(line) + 1 for line in after)
    lines.append(header)

    def finish(block: Context) -> Context:
        return replace(
            block,
            text="\n".join([block.text, *after]),
            rules=tuple(shown_rules),
            rules_left_out=rules_left,
            waiting=shown_waiting,
            waiting_left_out=waiting_left,
        )

    items: list[ContextItem] = []
    shown: set[str] = set()
    ordered = list(served) if ranked else sorted(served, key=_rank)
    for index, fact in enumerate(ordered):
        if fact.id in shown:
            continue
        conflict = sets_of.get(fact.id)
        others = tuple(
            members[m]
            for m in (conflict.member_ids if conflict else ())
            if m != fact.id and m in members
        )
        line = _line(fact, others)
        cost = estimate_tokens(line) + 1  # its line break
        if used + cost + _TAIL_TOKENS > budget:
            left = len([f for f in ordered[index:] if f.id not in shown])
            return finish(_done(subject, project, as_of, budget_tokens, items, lines, left))
        used += cost
        lines.append(line)
        items.append(ContextItem(fact, line, conflict.id if conflict else None, others))
        shown.update({fact.id, *(f.id for f in others)})
    return finish(_done(subject, project, as_of, budget_tokens, items, lines, 0))


def _waiting(waiting: Sequence[Event], budget: int) -> tuple[list[str], tuple[Event, ...], int]:
    """The waiting events' lines within `budget` tokens (none without one to show), the
    events shown (oldest first) and how many were left out. `waiting` is newest first: the
    newest are kept when not all fit."""
    candidates = [e for e in waiting if e.trust is not Trust.UNTRUSTED]
    if not candidates:
        return [], (), 0
    header = "Said recently, not consolidated yet (may update the facts above):"
    used = estimate_tokens(header) + 1 + _TAIL_TOKENS
    kept: list[tuple[Event, str]] = []
    for event in candidates[:WAITING_SHOWN]:
        line = f"- {one_line(event.text)} ({_day(event.occurred_at)})"
        cost = estimate_tokens(line) + 1
        if used + cost > budget:
            break
        used += cost
        kept.append((event, line))
    left = len(candidates) - len(kept)
    if not kept:
        return [], (), left
    kept.reverse()  # oldest first, as they were said
    lines = [header, *(line for _, line in kept)]
    if left:
        lines.append("(older waiting events left out)")
    return lines, tuple(e for e, _ in kept), left


# Room kept for the closing line that says how many facts (or rules) were left out.
_TAIL_TOKENS = 12


def _rules(subject: str, rules: Sequence[Rule], budget: int) -> tuple[list[str], list[Rule]]:
    """The rules' lines (none without rules) within `budget` tokens, and the rules shown."""
    if not rules:
        return [], []
    header = f"Rules for {subject} (standing instructions: follow them):"
    lines = [header]
    used = estimate_tokens(header) + 1
    shown: list[Rule] = []
    for rule in rules:
        line = f"- {one_line(rule.text)}"
        cost = estimate_tokens(line) + 1
        if used + cost + _TAIL_TOKENS > budget:
            break
        used += cost
        lines.append(line)
        shown.append(rule)
    if len(shown) < len(rules):
        left = f"({len(rules) - len(shown)} more rule(s) left out to fit the budget)"
        if not shown:
            lines = [left] if estimate_tokens(left) + 1 <= budget else []
        else:
            lines.append(left)
    return lines, shown


def _done(
    subject: str,
    project: str,
    as_of: datetime | None,
    budget: int,
    items: list[ContextItem],
    lines: list[str],
    left_out: int,
) -> Context:
    if not items:
        lines.append("- nothing known yet")
    if left_out:
        lines.append(f"({left_out} more fact(s) left out to fit the budget)")
    return Context(subject, project, as_of, budget, tuple(items), left_out, "\n".join(lines))


def _rank(fact: Fact) -> tuple[bool, float, int, str]:
    return (
        not fact.pinned,
        -fact.last_reinforced_at.timestamp(),
        -fact.reinforcement_count,
        fact.id,
    )


def _line(fact: Fact, others: Sequence[Fact]) -> str:
    line = f"- {fact.text} ({_dates(fact)})"
    if others:
        also = "; ".join(f"{o.text} ({_dates(o)})" for o in others)
        line += f" [contested, unresolved: also {also}]"
    return line


def _dates(fact: Fact) -> str:
    if fact.valid_to is not None:
        return f"{_day(fact.valid_from)} to {_day(fact.valid_to)}"
    return f"since {_day(fact.valid_from)}"


def _day(when: datetime) -> str:
    return when.date().isoformat()
