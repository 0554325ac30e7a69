"""Peak memory (RSS) of a process that uses the default `Memory`, model included.

    python bench/rss.py                         # N = 1,000, 10,000 and 100,000
    python bench/rss.py --n 100000 --json

For each N a fresh process opens `Memory(path)` with every default (the local embedder,
all-MiniLM-L6-v2 int8 ONNX; event texts not embedded), adds N claim events in batches of
1,000 (the same events as bench/consolidate.py, generated as they are added, so that the
bench holds none of them), and runs one `consolidate()`. The process reports its peak RSS
(`getrusage(RUSAGE_SELF).ru_maxrss`) at three points: the store open and the model loaded
(one text embedded), after ingesting, and after consolidating. Target: ≤ 400 MB.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from itertools import islice
from pathlib import Path
from typing import Any

import click
from consolidate import iter_events, machine  # bench/ is on the path when run as a script
from rich.console import Console
from rich.table import Table

TARGET_MB = 400.0


def peak_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)  # Linux: KiB


def measure(n: int) -> dict[str, Any]:
    """One process, one N: the default Memory, from opening to a finished consolidation."""
    from distill import Memory

    with tempfile.TemporaryDirectory() as tmp, Memory(Path(tmp) / "rss.db") as mem:
        mem.embedder.embed_batch(["load the model"])
        loaded = peak_mb()
        events = iter_events(n)
        while batch := list(islice(events, 1000)):
            mem.add_events(batch)
        ingested = peak_mb()
        t0 = time.perf_counter()
        report = mem.consolidate()
        seconds = time.perf_counter() - t0
        return {
            "n": n,
            "embedder": mem.embedder.model_id,
            "loaded_mb": loaded,
            "ingested_mb": ingested,
            "peak_mb": peak_mb(),
            "consolidate_s": round(seconds, 2),
            "jobs_done": report.jobs_done,
        }


@click.command()
@click.option(
    "--n", "sizes", multiple=True, type=int, default=(1000, 10000, 100000), show_default=True
)
@click.option("--one", type=int, hidden=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def main(sizes: tuple[int, ...], one: int | None, as_json: bool) -> None:
    if one is not None:  # the child process
        print(json.dumps(measure(one)))
        return
    rows = []
    for n in sizes:
        child = subprocess.run(
            [sys.executable, __file__, "--one", str(n)], check=True, capture_output=True, text=True
        )
        rows.append(json.loads(child.stdout.strip().splitlines()[-1]))
    summary = [
        {
            "metric": f"peak RSS MB, default Memory, N = {r['n']:,}",
            "value": r["peak_mb"],
            "target": f"≤ {TARGET_MB:.0f}",
            "met": r["peak_mb"] <= TARGET_MB,
        }
        for r in rows
    ]
    result = {"machine": machine(), "target_mb": TARGET_MB, "rows": rows, "summary": summary}
    if as_json:
        print(json.dumps(result, indent=2))
        return
    table = Table(title="peak RSS of a process using the default Memory (MB)")
    for column in ("N", "model loaded", "after ingest", "after consolidate", "consolidate s"):
        table.add_column(column, justify="right")
    for r in rows:
        table.add_row(
            f"{r['n']:,}",
            str(r["loaded_mb"]),
            str(r["ingested_mb"]),
            str(r["peak_mb"]),
            str(r["consolidate_s"]),
        )
    console = Console(width=120)
    console.print(table)
    console.print(f"target: ≤ {TARGET_MB:.0f} MB · {machine()}")


if __name__ == "__main__":
    main()
