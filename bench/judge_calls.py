"""What the memory judge costs: model calls and tokens per new memory, and its own time.

    python bench/judge_calls.py                     # LoCoMo conversation 1's observations
    python bench/judge_calls.py --conversations 3 --embedder local

The observations LoCoMo's annotators wrote for the first `--conversations` conversations
(../shared/data/locomo, CC BY-NC 4.0) are added as free-text memories, one subject per
speaker, and consolidated. Then `Memory.judge` runs with the real OpenAI-compatible provider
talking over HTTP to a scripted server on 127.0.0.1 that answers "nothing" for every memory
at once (the verdicts do not change what a call costs; they change what is written). The
judge runs until its backlog is empty (one run judges at most 48 memories per subject), then
once more with nothing new, which must make no call. Reported: memories judged, calls, calls
per judged memory against the limit of 1/8 (one call per batch of 8: a subject's last batch
of a backlog may be smaller, so the figure sits just above 1/8 when a subject's count is not
a multiple of 8), prompt tokens per memory, and the judge's time per memory next to the
time of consolidating the same memories.
"""

from __future__ import annotations

import json
import math
import platform
import sys
import tempfile
import time
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the scripted server lives with the tests

from distill import Memory  # noqa: E402
from distill.adapters.llm.calls import RetryPolicy  # noqa: E402
from distill.adapters.llm.openai import OpenAILLM  # noqa: E402
from distill.core.memory_judge import asked  # noqa: E402
from tests.llm_server import Reply, Request, ScriptedServer, openai_reply  # noqa: E402

CALLS_PER_MEMORY_MAX = 1 / 8
DATA = ROOT.parent / "shared" / "data" / "locomo" / "locomo10.json"


def keep_everything(request: Request) -> Reply:
    prompt = request.body["messages"][-1]["content"]
    verdicts = [
        {"memory": alias, "action": "nothing", "target": None, "reason": "distinct facts"}
        for alias, _, _ in asked(prompt)
    ]
    body = json.dumps({"verdicts": verdicts})
    return openai_reply(body, prompt_tokens=len(prompt) // 4, completion_tokens=len(body) // 4)


@click.command()
@click.option("--conversations", default=1, show_default=True, help="LoCoMo conversations.")
@click.option("--embedder", default="hashing", show_default=True, help="local or hashing.")
@click.option("--data", type=click.Path(path_type=Path), default=DATA, show_default=True)
def main(conversations: int, embedder: str, data: Path) -> None:
    samples = json.loads(data.read_text())[:conversations]
    events = []
    for sample in samples:
        for session, by_speaker in sorted(sample["observation"].items()):
            for speaker, items in by_speaker.items():
                for n, (text, _evidence) in enumerate(items):
                    events.append(
                        {
                            "subject": f"{sample['sample_id']}/{speaker}",
                            "text": text,
                            "claims": [{"text": text}],
                            "idempotency_key": f"{sample['sample_id']}/{session}/{speaker}/{n}",
                        }
                    )
    console = Console()
    with tempfile.TemporaryDirectory() as tmp, ScriptedServer(default=keep_everything) as server:
        llm = OpenAILLM("judge", base_url=server.url + "/v1", api_key="x", retry=RetryPolicy())
        mem = Memory(str(Path(tmp) / "bench.db"), embedder=embedder, llm=llm)
        try:
            mem.add_events(events)
            start = time.perf_counter()
            mem.consolidate()
            consolidate_s = time.perf_counter() - start
            memories = len(mem.facts(subject=None))
            judged = calls = tokens = runs = 0
            start = time.perf_counter()
            while True:
                report = mem.judge(max_calls=None, max_tokens=None)
                runs += 1
                judged += report.judged
                calls += report.usage.calls
                tokens += report.usage.prompt_tokens
                if report.judged == 0:
                    break
            judge_s = time.perf_counter() - start
            last_calls = report.usage.calls
        finally:
            mem.close()
    subjects = len({e["subject"] for e in events})
    floor = sum(
        math.ceil(n / 8)
        for n in (sum(e["subject"] == s for e in events) for s in {e["subject"] for e in events})
    )
    per_memory = calls / judged if judged else 0.0
    table = Table(title=f"judge cost, {memories} memories of {subjects} subjects ({embedder})")
    for column in ("measure", "value", "limit", ""):
        table.add_column(column)
    table.add_row("memories judged", str(judged), "", "")
    table.add_row("calls", f"{calls} ({runs} runs)", f"batches of 8 per subject: {floor}", "")
    verdict = "met" if per_memory <= CALLS_PER_MEMORY_MAX else "missed"
    table.add_row("calls per memory", f"{per_memory:.4f}", f"≤ {CALLS_PER_MEMORY_MAX}", verdict)
    table.add_row(
        "calls with nothing new", str(last_calls), "0", "met" if not last_calls else "missed"
    )
    table.add_row("prompt tokens per memory", f"{tokens / max(judged, 1):.0f}", "", "")
    table.add_row(
        "judge ms per memory (the model answers at once)",
        f"{1000 * judge_s / max(judged, 1):.2f}",
        f"consolidation: {1000 * consolidate_s / max(memories, 1):.2f}",
        "",
    )
    console.print(table)
    console.print(f"{platform.machine()}, {platform.python_version()}, data: {data}")


if __name__ == "__main__":
    main()
