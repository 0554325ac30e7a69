"""Invariant 8 across names: every history of three claims from a small pool, in every order.

DESIGN invariant 8 says the same events in any arrival order give the same state. Within one
name the property tests check it (tests/unit/test_properties.py); across names it depends on
the identity rules (`core.attribute_match`, `Fact.unpaired_change`) and on what a judge model
says. This script searches exhaustively: ten claims about one person's doctor (`gp`,
`primary_care_physician`, `dentist`; values, changes, a third party's change, dates 0 to 40),
every set of three, each in its six arrival orders, one consolidation a claim, with a
scripted judge that knows a `gp` is a primary care physician. It prints how many sets end
differently in some order (the current facts, or the identity sets by their names), and
lists them with `--show`. The hashing embedder with each name on its own axis: only words
and the change rules relate names, never a distance.

    python scripts/order_search.py [--show]

Measured 2026-12-03: 84 of 120 sets disagree at 6d3b5bf (before `unpaired_change`), 66 at
the commit that added this script, none that agreed before; EVAL.md.
"""

from __future__ import annotations

import itertools
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import click

from distill import Memory
from distill.adapters.embed.hashing import HashingEmbedder
from distill.adapters.llm.fake import FakeLLM
from distill.core import identity_judge
from distill.core.identity import identity_text
from distill.core.models import ConflictKind

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
GP = ("gp", {"name": "Dr. Patel"})
PCP = ("primary_care_physician", {"name": "Dr. Nguyen"})
DENTIST = ("dentist", {"name": "Dr. Okafor"})
# name → ((predicate, value), day, claim options)
POOL: dict[str, tuple[tuple[str, dict[str, str]], int, dict[str, str]]] = {
    "gp0": (GP, 0, {}),
    "gp0s": (GP, 0, {"action": "supersede"}),
    "gp30": (("gp", {"name": "Dr. Kim"}), 30, {}),
    "gp35": (("gp", {"name": "Dr. Kim"}), 35, {}),
    "pcp0": (("primary_care_physician", {"name": "Dr. Ito"}), 0, {}),
    "pcp20": (("primary_care_physician", {"name": "Dr. Ito"}), 20, {}),
    "pcp30s": (PCP, 30, {"action": "supersede"}),
    "pcp30s_tp": (PCP, 30, {"action": "supersede", "trust": "third_party"}),
    "pcp40s": (("primary_care_physician", {"name": "Dr. Ruiz"}), 40, {"action": "supersede"}),
    "dent40": (DENTIST, 40, {}),
}


def apart() -> dict[str, list[float]]:
    """Each name on its own axis: no two names are close for the embedder."""
    pinned: dict[str, list[float]] = {}
    for axis, predicate in enumerate(sorted({claim[0][0] for claim in POOL.values()})):
        vector = [0.0] * 256
        vector[axis] = 1.0
        pinned[identity_text(predicate)] = vector
        for (name, value), _, _ in POOL.values():
            if name == predicate:
                pinned[identity_text(name, value)] = vector
    return pinned


# A scripted judge that knows one thing: a `gp` is a primary care physician.
gp_is_pcp = identity_judge.scripted(lambda a, b: {a, b} == {GP[0], PCP[0]})


def ending(folder: Path, order: tuple[str, ...]) -> tuple[Any, ...]:
    with Memory(
        folder / ("-".join(order) + ".db"),
        embedder=HashingEmbedder(256, overrides=apart()),
        extractor="claims",
        llm=FakeLLM(default=gp_is_pcp),
    ) as mem:
        for name in order:
            (predicate, value), day, given = POOL[name]
            options = {k: v for k, v in given.items() if k != "trust"}
            mem.add_event(
                subject="u1",
                text=f"{predicate} is {value}",
                occurred_at=T0 + timedelta(days=day),
                trust=given.get("trust", "trusted"),
                claims=[{"predicate": predicate, "value": value, **options}],
            )
            mem.consolidate()
        current = tuple(sorted((f.predicate or "", str(f.value)) for f in mem.facts(subject="u1")))
        sets = tuple(
            sorted(
                (c.status.value, tuple(sorted(mem.fact(m).predicate or "" for m in c.member_ids)))
                for c in mem.conflicts(subject="u1", status=None)
                if c.kind is ConflictKind.IDENTITY
            )
        )
        return current, sets


@click.command()
@click.option("--show", is_flag=True, help="List the sets that end differently.")
def main(show: bool) -> None:
    triples = list(itertools.combinations(sorted(POOL), 3))
    disagree = []
    with tempfile.TemporaryDirectory() as tmp:
        for triple in triples:
            ends = {ending(Path(tmp), order) for order in itertools.permutations(triple)}
            if len(ends) > 1:
                disagree.append(triple)
    print(f"{len(disagree)} of {len(triples)} sets of three claims end differently in some order")
    if show:
        for triple in disagree:
            print("  " + " ".join(triple))


if __name__ == "__main__":
    main()
