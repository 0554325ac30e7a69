"""Does a model that renames attributes leave stale values served as current?

    python bench/llm_drift.py                  # drift 0 and 0.3, with and without `updates`
    python bench/llm_drift.py --subjects 5 --drift 0.5 --json

Each subject reports, month after month, new values of five attributes ("I have 4 bikes
now"). The model is the real OpenAI-compatible provider over HTTP to a scripted server on
127.0.0.1 that reads each message and answers with the fact it states, `action: supersede`,
under the attribute's usual name, or, in a share `--drift` of its answers, under another name
a model might use (`bikes_owned` for `bike_count`, `city_of_residence` for `home_city`). With
`updates` on, the model also names the known fact it changes, copied from the known facts its
prompt shows (the extraction prompt asks for it); off, it never does. Asked as the identity
judge (`passes.identity_judge`, after each run), it answers every pair rightly.

Reported per run, over every subject and attribute at the end: the values served as current
and unflagged that are not the attribute's latest value (stale: the failure this is about;
the target is 0), those served but held in an open identity set (contested, shown as such),
the facts served, LLM calls per event, and the candidates held as ungrounded or rejected
(every answer here states its message's value: both should be 0). The renamings are the
everyday ones; which of them the engine recognises by their words alone is `distill eval
drift`'s question.
"""

from __future__ import annotations

import json
import platform
import random
import re
import sys
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the scripted server lives with the tests

from distill import Memory  # noqa: E402
from distill.adapters.llm.calls import RetryPolicy  # noqa: E402
from distill.adapters.llm.openai import OpenAILLM  # noqa: E402
from distill.core import identity_judge  # noqa: E402
from distill.core.extraction import estimate_tokens  # noqa: E402
from distill.core.models import ConflictStatus  # noqa: E402
from tests.llm_server import Reply, Request, ScriptedServer, openai_reply  # noqa: E402

T0 = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)
_MESSAGE = re.compile(
    r"^\[(\d+)\] \S+ from [^\n]*\n(.*?)(?=\n\n\[\d+\] |\n\nList the durable)", re.M | re.S
)
_KNOWN = re.compile(r"^- ([a-z0-9_]+)(?: \[[^\]]*\])? = ", re.M)


@dataclass(frozen=True)
class Attribute:
    names: tuple[str, ...]  # the usual name first, then the renamings a model uses
    key: str
    values: tuple[Any, ...]
    says: str  # the message, with {v} for the value

    def message(self, value: Any) -> str:
        return self.says.format(v=value)


ATTRIBUTES = (
    Attribute(
        ("bike_count", "bikes_owned", "number_of_bikes"),
        "count",
        (2, 3, 4, 5, 6, 7),
        "Quick update: I have {v} bikes now.",
    ),
    Attribute(
        ("favorite_color", "preferred_color", "favourite_colour"),
        "color",
        ("blue", "green", "red", "teal", "amber", "violet"),
        "These days my favorite color is {v}.",
    ),
    Attribute(
        ("invoice_language", "invoicing_language"),
        "language",
        ("fr", "en", "de", "es", "it", "nl"),
        "Please send my invoices in {v} from now on.",
    ),
    Attribute(
        ("home_city", "city_of_residence", "current_city"),
        "city",
        ("Lyon", "Paris", "Lille", "Nantes", "Nice", "Brest"),
        "I moved, I live in {v} now.",
    ),
    Attribute(
        ("employer", "works_for", "current_employer"),
        "company",
        ("Acme", "Globex", "Initech", "Umbrella", "Hooli", "Vandelay"),
        "New job: I work for {v} now.",
    ),
)


def parse(text: str) -> tuple[Attribute, Any] | None:
    for attribute in ATTRIBUTES:
        before, _, after = attribute.says.partition("{v}")
        if text.startswith(before) and text.endswith(after):
            raw = text[len(before) : len(text) - len(after)]
            value: Any = int(raw) if raw.isdigit() else raw
            return attribute, value
    return None


class DriftingModel:
    """Answers each message with its fact, renaming the attribute in a share of answers."""

    def __init__(self, drift: float, updates: bool, seed: int = 7) -> None:
        self.drift = drift
        self.updates = updates
        self.rng = random.Random(seed)

    def __call__(self, request: Request) -> Reply:
        system = request.body["messages"][0]["content"]
        prompt = request.body["messages"][1]["content"]
        if system == identity_judge.SYSTEM:
            return self.judge(system, prompt)
        known = set(_KNOWN.findall(prompt.split("Messages, oldest first:")[0]))
        facts = []
        for match in _MESSAGE.finditer(prompt):
            found = parse(match.group(2).strip())
            if found is None:
                continue
            attribute, value = found
            name = attribute.names[0]
            if self.rng.random() < self.drift:
                name = self.rng.choice(attribute.names[1:])
            fact: dict[str, Any] = {
                "message": int(match.group(1)),
                "predicate": name,
                "value": {attribute.key: value},
                "action": "supersede",
                "kind": "state",
                "evidence_span": match.group(2).strip(),
            }
            shown = [n for n in attribute.names if n in known and n != name]
            if self.updates and shown:
                fact["updates"] = shown[0]
            facts.append(fact)
        answer = json.dumps({"facts": facts})
        return openai_reply(answer, estimate_tokens(system + prompt), estimate_tokens(answer))

    def judge(self, system: str, prompt: str) -> Reply:
        """Identity-judge prompts: the right verdict for each numbered pair."""
        pairs = [
            {
                "pair": n,
                "same": any(set(names) <= set(a.names) for a in ATTRIBUTES),
                "reason": "scripted",
            }
            for n, names in identity_judge.asked(prompt)
        ]
        answer = json.dumps({"pairs": pairs})
        return openai_reply(answer, estimate_tokens(system + prompt), estimate_tokens(answer))


def run(subjects: int, drift: float, updates: bool, embedder: str) -> dict[str, Any]:
    model = DriftingModel(drift, updates)
    latest: dict[tuple[str, str], Any] = {}
    months = len(ATTRIBUTES[0].values)
    with ScriptedServer(default=model) as server, tempfile.TemporaryDirectory() as tmp:
        llm = OpenAILLM("drifting", base_url=server.url + "/v1", retry=RetryPolicy(attempts=1))
        with Memory(Path(tmp) / "bench.db", embedder=embedder, llm=llm, extractor="llm") as mem:
            calls = events = held = rejected = 0
            for month in range(months):
                for s in range(subjects):
                    for a, attribute in enumerate(ATTRIBUTES):
                        value = attribute.values[(month + s + a) % months]
                        when = T0 + timedelta(days=30 * month, hours=a)
                        mem.add_event(
                            subject=f"user{s}", text=attribute.message(value), occurred_at=when
                        )
                        latest[(f"user{s}", attribute.names[0])] = value
                        events += 1
                report = mem.consolidate()
                if report.jobs_failed:
                    raise SystemExit(f"a job failed: {report.errors}")
                calls += report.llm_calls
                held += report.counters().get("held_ungrounded", 0)
                rejected += report.rejected
            stale = contested = served = 0
            for s in range(subjects):
                subject = f"user{s}"
                open_sets = mem.conflicts(subject=subject, status=ConflictStatus.OPEN)
                flagged = {m for c in open_sets for m in c.member_ids}
                for fact in mem.facts(subject=subject):
                    attribute = next(x for x in ATTRIBUTES if fact.predicate in x.names)
                    served += 1
                    current = (fact.value or {}).get(attribute.key)
                    if current == latest[(subject, attribute.names[0])]:
                        continue
                    if fact.id in flagged:
                        contested += 1
                    else:
                        stale += 1
    return {
        "drift": drift,
        "updates": updates,
        "events": events,
        "attributes": subjects * len(ATTRIBUTES),
        "served": served,
        "stale_unflagged": stale,
        "stale_contested": contested,
        "calls_per_event": round(calls / events, 3),
        "held_ungrounded": held,
        "rejected": rejected,
    }


@click.command()
@click.option("--subjects", default=20, show_default=True, type=click.IntRange(min=1))
@click.option("--drift", "drifts", multiple=True, type=click.FloatRange(0, 1), help="Share.")
@click.option(
    "--embedder", default="local", show_default=True, type=click.Choice(["local", "hashing"])
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def main(subjects: int, drifts: tuple[float, ...], embedder: str, as_json: bool) -> None:
    rows = [
        run(subjects, drift, updates, embedder)
        for drift in (drifts or (0.0, 0.3))
        for updates in (False, True)
    ]
    if as_json:
        print(json.dumps({"machine": machine(), "rows": rows}, indent=2))
        return
    table = Table(title=f"renaming model, {subjects} subjects × {len(ATTRIBUTES)} attributes")
    for column in (
        "drift",
        "updates",
        "events",
        "served",
        "stale (unflagged)",
        "stale (contested)",
        "calls/event",
        "held ungrounded",
        "rejected",
    ):
        table.add_column(column, justify="right")
    for r in rows:
        table.add_row(
            f"{r['drift']:.2f}",
            "on" if r["updates"] else "off",
            str(r["events"]),
            str(r["served"]),
            str(r["stale_unflagged"]),
            str(r["stale_contested"]),
            f"{r['calls_per_event']:.3f}",
            str(r["held_ungrounded"]),
            str(r["rejected"]),
        )
    console = Console()
    console.print(table)
    console.print(f"target: stale (unflagged) = 0 in every row. {machine()}")


def machine() -> str:
    return f"{platform.machine()}, Python {platform.python_version()}"


if __name__ == "__main__":
    main()
