"""Asking a model whether contested names are one attribute: the question and its answer.

Identity sets (`attribute_match`: two predicates that are probably one attribute) wait for a
decision. When a model is configured, the open ones are put to it in batches, one call for
up to `JUDGE_BATCH` pairs, each pair numbered; the model answers `same` or not for each
number, with a reason. The model proposes and code decides what it may do: an answer for a
number that was not asked, or without a boolean, is ignored (the set stays open), and the
resolution itself is the one a person's would be (`resolve.resolve_conflict`): one attribute
keeps the newer statement and learns the other name as an alias; two attributes close the
set with both facts kept.

Pure: rendering and reading only; the call is made by `distill.passes.identity_judge`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from distill.core.identity import canonical_json
from distill.core.models import ConflictSet, Fact

JUDGE_BATCH = 20  # pairs per call

SYSTEM = (
    "You keep the long-term memory of an AI agent. Two attribute names were recorded about "
    "one person by different calls of an extractor. For each numbered pair, say whether the "
    "two names are the same attribute of that person (one renamed: bike_count / bikes_owned) "
    "or two different attributes (bike_count / car_count, home_city / birth_city, weight / "
    "target_weight). The values may differ: a changed value does not make two attributes. "
    "Many pairs are two unrelated attributes asked about only because nothing ruled them "
    "out: say same only when one name is plainly another wording of the other, and say "
    "different when unsure. "
    'Answer with one JSON object and nothing else: {"pairs": [{"pair": 1, "same": true, '
    '"reason": "one short sentence"}]}'
)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "pairs": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "pair": {"type": "integer"},
                    "same": {"type": "boolean"},
                    "reason": {"type": "string"},
                },
                "required": ["pair", "same"],
            },
        }
    },
    "required": ["pairs"],
}


@dataclass(frozen=True)
class Pair:
    """One open identity set and its two members, oldest first."""

    conflict: ConflictSet
    older: Fact
    newer: Fact


@dataclass(frozen=True)
class Verdict:
    conflict_id: str
    same: bool
    reason: str


def pair_of(conflict: ConflictSet, members: dict[str, Fact]) -> Pair | None:
    """The pair a set asks about, or None when it no longer holds two live facts."""
    found = [members.get(m) for m in conflict.member_ids]
    facts = [f for f in found if f is not None and f.live]
    if len(facts) != 2:
        return None
    older, newer = sorted(facts, key=lambda f: (f.valid_from, f.id))
    return Pair(conflict, older, newer)


def render(pairs: Sequence[Pair]) -> str:
    lines = ["Pairs of attribute names, each with its value and since when it was stated:", ""]
    for n, p in enumerate(pairs, start=1):
        lines.append(f"{n}. {_shown(p.older)}  |  {_shown(p.newer)}")
    lines += ["", "For each pair: the same attribute, or two attributes?"]
    return "\n".join(lines)


def asked(prompt: str) -> list[tuple[int, tuple[str, str]]]:
    """The numbered pairs of names a `render`ed prompt asks about: what a scripted judge
    (tests, the drift suite, the benches) reads to answer."""
    found = []
    for line in prompt.splitlines():
        number, dot, rest = line.partition(". ")
        if not dot or not number.isdigit():
            continue
        older, _, newer = rest.partition("  |  ")
        found.append((int(number), (older.split(" = ")[0], newer.split(" = ")[0])))
    return found


def scripted(same: Callable[[str, str], bool], reason: str = "scripted") -> Callable[[str], str]:
    """A scripted judge (never a model): the answer to a `render`ed prompt that says
    `same(older, newer)` for each pair it asks about. For the tests, the drift suite and
    scripts/order_search.py."""

    def answer(prompt: str) -> str:
        pairs = [
            {"pair": number, "same": same(older, newer), "reason": reason}
            for number, (older, newer) in asked(prompt)
        ]
        return json.dumps({"pairs": pairs})

    return answer


def _shown(f: Fact) -> str:
    return f"{f.predicate} = {canonical_json(f.value)} (since {f.valid_from.date().isoformat()})"


def read(text: str, pairs: Sequence[Pair]) -> list[Verdict]:
    """The usable verdicts of an answer; anything else in it is ignored. Raises ValueError
    when the answer is not JSON with a list of pairs."""
    data = json.loads(text)
    items = data.get("pairs") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise ValueError('the answer is not {"pairs": [...]}')
    verdicts: dict[str, Verdict] = {}
    for item in items:
        if not isinstance(item, dict):
            continue
        number, same = item.get("pair"), item.get("same")
        if isinstance(number, bool) or not isinstance(number, int) or not isinstance(same, bool):
            continue
        if not 1 <= number <= len(pairs):
            continue
        conflict = pairs[number - 1].conflict
        reason = str(item.get("reason") or "").strip()[:300] or "no reason given"
        verdicts.setdefault(conflict.id, Verdict(conflict.id, same, reason))
    return list(verdicts.values())
