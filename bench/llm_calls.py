"""What LLM extraction costs per event: calls, tokens, and Distill's own time.

    python bench/llm_calls.py                       # first 500 LoCoMo turns, real embedder
    python bench/llm_calls.py --turns 200 --every 1 --every 10

The first `--turns` turns of LoCoMo (../shared/data/locomo, CC BY-NC 4.0) are added, in
order, as events of one subject, with each turn's speaker as its source and its session's time.
A consolidation runs after every `--every` events, as a background worker would on a steady
stream. The model is the real OpenAI-compatible provider talking over HTTP to a scripted
server on 127.0.0.1 that answers at once: for each message it is shown, it returns the facts
LoCoMo's own annotators extracted from that turn (its `observation` lists), with a verbatim
evidence span from the turn. So the answers are realistic in size, and every call, token and
millisecond measured is Distill's.

Reported per event: LLM calls, prompt and completion tokens (as the server counts them: about
four characters a token, `distill.core.extraction.estimate_tokens`), and Distill's own time
(adding the event, plus its share of the consolidation it was part of, minus the time the
server spent building answers; the HTTP round trip stays in, so the figure is conservative),
median and p95; the facts served, and the candidates held as ungrounded (their words are not
in their turn: `distill.core.grounding`) or rejected. A last consolidation with nothing
pending must make zero calls.
Mem0 2.2.1 measured the same way on the same turns: 1.00 call, 8,424 prompt tokens and 22 ms
(p95 32 ms) of its own time per message.
"""

from __future__ import annotations

import json
import platform
import re
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
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
from distill.core.extraction import estimate_tokens, split_sentences  # noqa: E402
from tests.llm_server import Reply, Request, ScriptedServer, openai_reply  # noqa: E402

LOCOMO = ROOT.parent / "shared" / "data" / "locomo" / "locomo10.json"
TARGETS = {"calls": 0.2, "prompt_tokens": 1000, "ms": 5.0}
CADENCE = 10  # the per-event targets hold for a consolidation every this many events or more
MEM0 = {"calls": 1.00, "prompt_tokens": 8424, "ms_median": 22.0, "ms_p95": 32.0}
_MESSAGE = re.compile(
    r"^\[(\d+)\] \S+ from [^\n]*\n(.*?)(?=\n\n\[\d+\] |\n\nList the durable)", re.M | re.S
)


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    at: datetime
    facts: tuple[str, ...]  # what LoCoMo's annotators extracted from this turn


def load_turns(limit: int) -> list[Turn]:
    data = json.loads(LOCOMO.read_text(encoding="utf-8"))
    turns: list[Turn] = []
    for sample in data:
        conversation, observed = sample["conversation"], sample["observation"]
        facts: dict[str, list[str]] = {}
        for per_speaker in observed.values():
            for items in per_speaker.values():
                for text, evidence in items:
                    for dia_id in re.findall(r"D\d+:\d+", json.dumps(evidence)):
                        facts.setdefault(dia_id, []).append(text)
        sessions = sorted(
            (int(k.split("_")[1]), v)
            for k, v in conversation.items()
            if re.fullmatch(r"session_\d+", k) and isinstance(v, list)
        )
        for number, session in sessions:
            start = datetime.strptime(
                conversation[f"session_{number}_date_time"], "%I:%M %p on %d %B, %Y"
            ).astimezone()
            for k, turn in enumerate(session):
                turns.append(
                    Turn(
                        turn["dia_id"],
                        turn["speaker"],
                        turn["text"],
                        start + timedelta(seconds=30 * k),
                        tuple(facts.get(turn["dia_id"], ())),
                    )
                )
                if len(turns) == limit:
                    return turns
    return turns


class AnnotatorModel:
    """Answers an extraction prompt with LoCoMo's own facts for the turns it shows."""

    def __init__(self, turns: list[Turn]) -> None:
        self.by_text: dict[str, Turn] = {}
        for turn in turns:
            self.by_text.setdefault(turn.text.strip(), turn)
        self.seconds = 0.0
        self.requests = 0

    def __call__(self, request: Request) -> Reply:
        began = time.perf_counter()
        prompt = request.body["messages"][1]["content"]
        facts: list[dict[str, Any]] = []
        for match in _MESSAGE.finditer(prompt):
            turn = self.by_text.get(match.group(2).strip())
            if turn is None or not turn.facts:
                continue
            span = max(split_sentences(turn.text) or [turn.text], key=len)
            facts.extend(
                {
                    "message": int(match.group(1)),
                    "kind": "memory",
                    "text": text,
                    "action": "create",
                    "confidence": 0.9,
                    "evidence_span": span,
                }
                for text in turn.facts
            )
        answer = json.dumps({"facts": facts})
        system = request.body["messages"][0]["content"]
        reply = openai_reply(answer, estimate_tokens(system + prompt), estimate_tokens(answer))
        self.seconds += time.perf_counter() - began
        self.requests += 1
        return reply


def run(turns: list[Turn], every: int, embedder: str) -> dict[str, Any]:
    model = AnnotatorModel(turns)
    with ScriptedServer(default=model) as server, tempfile.TemporaryDirectory() as tmp:
        llm = OpenAILLM("annotators", base_url=server.url + "/v1", retry=RetryPolicy(attempts=1))
        with Memory(Path(tmp) / "bench.db", embedder=embedder, llm=llm) as mem:
            mem.consolidate()  # open the store and load the model before timing
            per_event: list[float] = []
            calls = prompt = completion = held = rejected = 0
            for start in range(0, len(turns), every):
                chunk = turns[start : start + every]
                added = []
                for turn in chunk:
                    began = time.perf_counter()
                    mem.add_event(
                        subject="locomo", text=turn.text, source=turn.speaker, occurred_at=turn.at
                    )
                    added.append(time.perf_counter() - began)
                server_before = model.seconds
                began = time.perf_counter()
                report = mem.consolidate()
                spent = time.perf_counter() - began - (model.seconds - server_before)
                if report.jobs_failed:
                    raise SystemExit(f"a job failed: {report.errors}")
                calls += report.llm_calls
                held += report.counters().get("held_ungrounded", 0)
                rejected += report.rejected
                prompt += report.prompt_tokens
                completion += report.completion_tokens
                per_event.extend(a + spent / len(chunk) for a in added)
            requests_before = model.requests
            idle = mem.consolidate()
            facts = len(mem.facts(subject="locomo"))
    n = len(turns)
    ms = sorted(1000 * t for t in per_event)
    return {
        "every": every,
        "events": n,
        "facts": facts,
        "calls": calls / n,
        "prompt_tokens": prompt / n,
        "completion_tokens": completion / n,
        "ms_median": statistics.median(ms),
        "ms_p95": ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))],
        "idle_calls": idle.llm_calls + (model.requests - requests_before),
        "held_ungrounded": held,
        "rejected": rejected,
    }


@click.command()
@click.option("--turns", default=500, show_default=True, type=click.IntRange(min=1))
@click.option(
    "--every",
    "cadences",
    multiple=True,
    type=click.IntRange(min=1),
    help="Consolidate after this many events (repeatable; default 1, 10, 25).",
)
@click.option(
    "--embedder", default="local", show_default=True, type=click.Choice(["local", "hashing"])
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def main(turns: int, cadences: tuple[int, ...], embedder: str, as_json: bool) -> None:
    loaded = load_turns(turns)
    rows = [run(loaded, every, embedder) for every in (cadences or (1, 10, 25))]
    if as_json:
        result = {"turns": len(loaded), "embedder": embedder, "machine": machine()}
        click.echo(json.dumps({**result, "rows": rows, "summary": summary(rows)}, indent=2))
        return
    console = Console(width=120)
    console.print(f"{len(loaded)} LoCoMo turns, one subject, embedder={embedder}, {machine()}")
    table = Table(title="LLM extraction cost per event")
    for name in (
        "consolidate every",
        "calls/event",
        "prompt tok/event",
        "completion tok/event",
        "own ms median",
        "own ms p95",
        "facts",
        "held ungrounded",
        "rejected",
        "calls when idle",
    ):
        table.add_column(name, justify="right")
    for r in rows:
        table.add_row(
            str(r["every"]),
            f"{r['calls']:.3f}",
            f"{r['prompt_tokens']:.0f}",
            f"{r['completion_tokens']:.0f}",
            f"{r['ms_median']:.2f}",
            f"{r['ms_p95']:.2f}",
            str(r["facts"]),
            str(r["held_ungrounded"]),
            str(r["rejected"]),
            str(r["idle_calls"]),
        )
    table.add_row(
        "Mem0 2.2.1",
        f"{MEM0['calls']:.2f}",
        f"{MEM0['prompt_tokens']:,}",
        "",
        f"{MEM0['ms_median']:.0f}",
        f"{MEM0['ms_p95']:.0f}",
        "",
        "",
        "",
        "",
    )
    console.print(table)
    console.print(
        f"targets: ≤ {TARGETS['calls']} calls/event, ≤ {TARGETS['prompt_tokens']:,} prompt "
        f"tokens/event, ≤ {TARGETS['ms']} ms/event (median), 0 calls when idle"
    )


def summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows `bench/report.py` shows. The per-event targets are for a worker that runs on a
    cadence (every 10 or more events); consolidating after each event costs a call by design."""
    limits = [
        ("LLM calls / event", "calls", TARGETS["calls"]),
        ("LLM prompt tokens / event", "prompt_tokens", TARGETS["prompt_tokens"]),
        ("LLM extraction own ms / event, median", "ms_median", TARGETS["ms"]),
    ]
    out: list[dict[str, Any]] = []
    for r in rows:
        where = f"consolidating every {r['every']}"
        if r["every"] >= CADENCE:
            out.extend(
                {
                    "metric": f"{name} ({where})",
                    "value": round(r[key], 3),
                    "target": f"≤ {limit:g}",
                    "met": r[key] <= limit,
                }
                for name, key, limit in limits
            )
        idle = r["idle_calls"]
        out.append(
            {
                "metric": f"LLM calls when idle ({where})",
                "value": idle,
                "target": "= 0",
                "met": idle == 0,
            }
        )
    return out


def machine() -> str:
    return f"{platform.machine()}, Python {platform.python_version()}"


if __name__ == "__main__":
    main()
