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

The order with a query is the search's (most relevant first). Without one: pinned facts
first (a person said they matter), then the most recently confirmed (`last_reinforced_at`),
then the most often confirmed, then by id.
Pure: the caller reads the facts and the open sets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from distill.core.answers import one_line
from distill.core.extraction import estimate_tokens
from distill.core.models import ConflictKind, ConflictSet, Fact, Rule

# Sets whose members are shown together as contested; a quarantine set is not one of them.
CONTESTING = (ConflictKind.CONFLICT, ConflictKind.IDENTITY)


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
) -> Context:
    """The block: the subject's `rules`, in the order to show, then `served` (the subject's
    facts as `Memory.facts` serves them), marked with the open `open_sets` they sit in (whose
    members are in `members`, by id). `ranked`: `served` is in the order to show (a
    search's, most relevant first)."""
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
    lines.append(header)
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
        if used + cost + _TAIL_TOKENS > budget_tokens:
            left = len([f for f in ordered[index:] if f.id not in shown])
            block = _done(subject, project, as_of, budget_tokens, items, lines, left)
            return replace(block, rules=tuple(shown_rules), rules_left_out=rules_left)
        used += cost
        lines.append(line)
        items.append(ContextItem(fact, line, conflict.id if conflict else None, others))
        shown.update({fact.id, *(f.id for f in others)})
    block = _done(subject, project, as_of, budget_tokens, items, lines, 0)
    return replace(block, rules=tuple(shown_rules), rules_left_out=rules_left)


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
