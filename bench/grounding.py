"""How often grounded model answers are held as ungrounded, and ungrounded ones are caught.

    python bench/grounding.py
    python bench/grounding.py --json

`distill.core.grounding` holds a model's candidate in quarantine when none of its value's
words or numbers is in its message. Its word rules (function words, number words, how a word
is matched) were tuned on the cases of tests/unit/test_grounding.py; they are measured here
on those and on LoCoMo (../shared/data/locomo, CC BY-NC 4.0), which they were not tuned on:

- observations: each fact LoCoMo's annotators (a model) extracted from one turn, as a memory
  of that turn: grounded by construction, so each one held is a false hold;
- qa by category: each answer whose evidence is one turn, as the value `{"answer": ...}` of
  that turn (category 2 answers are dates in words, often resolved from "yesterday": a
  model would write them as ISO dates, which are not checked; they are held here when their
  words are not in the turn);
- control: each observation against a turn of another conversation (its evidence span would
  exist there, its value would not): the share held is what the check catches.
"""

from __future__ import annotations

import json
import random
import re
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the tuning cases live with the tests

from distill.core.grounding import ungrounded  # noqa: E402
from distill.core.models import Claim  # noqa: E402
from tests.unit.test_grounding import GROUNDED, UNGROUNDED  # noqa: E402

LOCOMO = ROOT.parent / "shared" / "data" / "locomo" / "locomo10.json"
_DIA = re.compile(r"D\d+:\d+")
EXAMPLES = 5  # held grounded answers shown per set


def claim(predicate: str | None, said: Any) -> Claim:
    return Claim(text=said) if predicate is None else Claim(predicate=predicate, value=said)


def rate(pairs: list[tuple[Claim, str]]) -> tuple[int, int, list[str]]:
    held = [(c, m) for c, m in pairs if ungrounded(c, m)]
    shown = [f"{c.text or json.dumps(c.value)} ← {m[:80]}" for c, m in held[:EXAMPLES]]
    return len(held), len(pairs), shown


def locomo_sets(seed: int) -> dict[str, list[tuple[Claim, str]]]:
    data = json.loads(LOCOMO.read_text(encoding="utf-8"))
    sets: dict[str, list[tuple[Claim, str]]] = {"locomo observations": []}
    control: list[tuple[str, int]] = []
    turns_of: list[list[str]] = []
    for n, sample in enumerate(data):
        turns = {
            t["dia_id"]: t["text"]
            for key, session in sample["conversation"].items()
            if re.fullmatch(r"session_\d+", key) and isinstance(session, list)
            for t in session
        }
        turns_of.append(list(turns.values()))
        for per_speaker in sample["observation"].values():
            for items in per_speaker.values():
                for text, evidence in items:
                    ids = _DIA.findall(json.dumps(evidence))
                    if len(ids) == 1 and ids[0] in turns:
                        sets["locomo observations"].append((claim(None, text), turns[ids[0]]))
                        control.append((text, n))
        for qa in sample["qa"]:
            ids = qa.get("evidence", [])
            if "answer" not in qa or len(ids) != 1 or ids[0] not in turns:
                continue
            name = f"locomo qa category {qa['category']}"
            said = claim("answer", {"answer": qa["answer"]})
            sets.setdefault(name, []).append((said, turns[ids[0]]))
    rng = random.Random(seed)
    sets["control: observation vs another conversation's turn"] = [
        (
            claim(None, text),
            rng.choice(turns_of[(n + 1 + rng.randrange(len(data) - 1)) % len(data)]),
        )
        for text, n in control
    ]
    return dict(sorted(sets.items()))


@click.command()
@click.option("--seed", default=0, show_default=True, help="Seed of the control pairs.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def main(seed: int, as_json: bool) -> None:
    sets = {
        "tuned: grounded": [(claim(p, v), m) for p, v, m in GROUNDED],
        "tuned: ungrounded": [(claim(p, v), m) for p, v, m in UNGROUNDED],
        **locomo_sets(seed),
    }
    rows: list[dict[str, Any]] = []
    for name, pairs in sets.items():
        held, total, shown = rate(pairs)
        rows.append({"set": name, "held": held, "total": total, "examples": shown})
    if as_json:
        print(json.dumps({"rows": rows}, indent=2, ensure_ascii=False))
        return
    table = Table(title="candidates held as ungrounded")
    for column in ("set", "held", "of", "share"):
        table.add_column(column, justify="left" if column == "set" else "right")
    for r in rows:
        table.add_row(r["set"], str(r["held"]), str(r["total"]), f"{r['held'] / r['total']:.1%}")
    console = Console()
    console.print(table)
    for r in rows:
        if r["examples"] and not r["set"].startswith("control"):
            console.print(f"[bold]{r['set']}[/bold], held:")
            for line in r["examples"]:
                console.print(f"  {line}", markup=False)


if __name__ == "__main__":
    main()
