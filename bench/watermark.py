"""The extraction watermark: what a second hygiene cycle over unchanged memory costs.

    python bench/watermark.py                        # 4 subjects x 60 memories
    python bench/watermark.py --subjects 10 --memories 200 --json

Every pass that puts facts to a model to derive something from them (the memory judge, the
summariser, rule promotion) keeps a SHA-256 mark per fact it has read (`core.watermark`).
This bench makes `--subjects` subjects of `--memories` free-text memories each (the `text`
extractor, each memory said on its own day, one in five said four times so that rule
promotion has something to offer), then runs one cycle of the three passes with a scripted
model (the judge answers "nothing", the summariser a faithful summary of the first half of
each batch, rule promotion "not a rule"), counting model calls per pass. Then:

1. **a second cycle over unchanged memory** must make 0 model calls and write nothing: the
   facts (every status), the audit and the marks are compared whole, before and after;
2. **one memory's text is changed** (a `ReviseFact` by hand: no pass rewrites words today),
   and a third cycle must ask about exactly that memory: one judge call with it as the only
   new memory, nothing for the summariser (it is among the subject's most recent, kept
   verbatim, or alone in its batch) and nothing for rule promotion (not re-stated enough).

The scripted model answers at once, so the times are Distill's own (SQLite in a temporary
file, the hashing embedder).
"""

from __future__ import annotations

import json
import platform
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from distill import Memory  # noqa: E402
from distill.adapters.embed.hashing import HashingEmbedder  # noqa: E402
from distill.core import memory_judge as mj  # noqa: E402
from distill.core import rules as cr  # noqa: E402
from distill.core import summarise as cs  # noqa: E402
from distill.core.plan import Plan, ReviseFact  # noqa: E402
from distill.ports import Completion  # noqa: E402

T0 = datetime(2024, 1, 1, 9, 0, tzinfo=UTC)
PASSES = ("judge", "summarise", "promote_rules")


class Scripted:
    """A model for the three passes, told apart by their system prompts; counts calls."""

    model_id = "scripted/watermark"

    def __init__(self) -> None:
        self.calls: dict[str, int] = dict.fromkeys(PASSES, 0)
        self.asked: dict[str, list[str]] = {p: [] for p in PASSES}

    def complete(
        self, system: str, prompt: str, schema: dict[str, Any] | None = None
    ) -> Completion:
        if system == mj.SYSTEM:
            name, texts = "judge", [t for _, t, _ in mj.asked(prompt)]
            body: dict[str, Any] = {
                "verdicts": [
                    {"memory": a, "action": "nothing", "target": None, "reason": "distinct"}
                    for a, _, _ in mj.asked(prompt)
                ]
            }
        elif system == cs.SYSTEM:
            name = "summarise"
            shown = cs.asked(prompt)
            texts = [t for _, t in shown]
            half = shown[: max(1, len(shown) // 2)]
            body = {
                "summary": " ".join(t.rstrip(".") + "." for _, t in half),
                "consumes": [a for a, _ in half],
            }
        elif system == cr.SYSTEM:
            name, texts = "promote_rules", [t for _, t in cr.asked(prompt)]
            body = {
                "verdicts": [
                    {"memory": a, "verdict": "not", "rule": None, "reason": "a fact"}
                    for a, _ in cr.asked(prompt)
                ]
            }
        else:
            raise AssertionError(f"an unknown prompt: {system[:60]!r}")
        self.calls[name] += 1
        self.asked[name].extend(texts)
        text = json.dumps(body)
        return Completion(text, len(system + prompt) // 4, len(text) // 4)


def cycle(mem: Memory, llm: Scripted) -> dict[str, Any]:
    """One hygiene cycle of the watermark passes; the calls each made, and its time."""
    before = dict(llm.calls)
    start = time.perf_counter()
    for _ in range(20):  # each pass until its backlog is empty (a run takes 48 per subject)
        made = sum(llm.calls.values())
        mem.judge(max_calls=None, max_tokens=None)
        mem.summarise(max_calls=None, max_tokens=None)
        mem.promote_rules(max_calls=None, max_tokens=None)
        if sum(llm.calls.values()) == made:
            break
    ms = (time.perf_counter() - start) * 1000
    return {"calls": {p: llm.calls[p] - before[p] for p in PASSES}, "ms": round(ms, 1)}


def everything(mem: Memory, database: str) -> dict[str, Any]:
    """What a cycle could write: every fact (any status), the audit, and the marks."""
    import sqlite3

    with sqlite3.connect(database) as db:
        marks = db.execute("SELECT * FROM fact_marks ORDER BY fact_id, pass_name").fetchall()
    return {
        "facts": [f.model_dump(mode="json") for f in mem.facts(subject=None, include_retired=True)],
        "audit": [a.id for a in mem.audit(limit=1_000_000)],
        "marks": marks,
    }


def run(subjects: int, memories: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        database = str(Path(tmp) / "watermark.db")
        llm = Scripted()
        mem = Memory(database, embedder=HashingEmbedder(256), llm=llm, extractor="text")
        try:
            for s in range(subjects):
                for n in range(memories):
                    said = 4 if n % 5 == 0 else 1
                    for k in range(said):
                        mem.add_event(
                            subject=f"s{s}",
                            text=f"Person {s} note {n}: item {n} costs {n + 3} euros.",
                            occurred_at=T0 + timedelta(days=n, hours=k),
                        )
            mem.consolidate()
            first = cycle(mem, llm)
            snapshot = everything(mem, database)
            second = cycle(mem, llm)
            unchanged = everything(mem, database)
            writes = {
                "facts_changed": sum(
                    a != b for a, b in zip(snapshot["facts"], unchanged["facts"], strict=False)
                )
                + abs(len(snapshot["facts"]) - len(unchanged["facts"])),
                "audit_entries": len(unchanged["audit"]) - len(snapshot["audit"]),
                "marks_changed": len(set(unchanged["marks"]) ^ set(snapshot["marks"])),
            }
            live = [
                f for f in mem.facts("s0") if f.kind == "memory" and f.text.startswith("Person")
            ]
            target = live[-1]
            edited = target.model_copy(update={"text": target.text.replace("euros", "pounds")})
            plan = Plan([ReviseFact(target, edited, "link", "edited by the bench", "api")])
            mem.store.apply(plan, None, [])
            asked_before = {p: len(llm.asked[p]) for p in PASSES}
            third = cycle(mem, llm)
            third["asked"] = {p: llm.asked[p][asked_before[p] :] for p in PASSES}
            third["edited"] = edited.text
        finally:
            mem.close()
    return {
        "subjects": subjects,
        "memories_per_subject": memories,
        "first": first,
        "second": {**second, **writes},
        "third": third,
        "ok": {
            "second_cycle_no_calls": sum(second["calls"].values()) == 0,
            "second_cycle_no_writes": not any(writes.values()),
            "third_cycle_asks_only_the_edit": third["calls"]["judge"] == 1
            and third["asked"]["judge"] == [third["edited"]]
            and third["calls"]["summarise"] == 0
            and third["calls"]["promote_rules"] == 0,
        },
        "machine": f"{platform.machine()} {platform.system()}, Python {platform.python_version()}",
    }


@click.command()
@click.option("--subjects", default=4, show_default=True)
@click.option("--memories", default=60, show_default=True, help="memories per subject")
@click.option("--json", "as_json", is_flag=True, help="print the result as JSON")
def main(subjects: int, memories: int, as_json: bool) -> None:
    result = run(subjects, memories)
    if as_json:
        print(json.dumps(result, indent=2))
    else:
        table = Table(title=f"watermark: {subjects} subjects x {memories} memories")
        for column in ("cycle", *PASSES, "ms", "writes"):
            table.add_column(column)
        for name in ("first", "second", "third"):
            row = result[name]
            writes = (
                f"{row['facts_changed']} facts, {row['audit_entries']} audit, "
                f"{row['marks_changed']} marks"
                if name == "second"
                else ""
            )
            calls = [str(row["calls"][p]) for p in PASSES]
            table.add_row(name, *calls, str(row["ms"]), writes)
        Console().print(table)
        print(json.dumps(result["ok"]))
    if not all(result["ok"].values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
