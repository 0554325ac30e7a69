"""Every benchmark in one run, and one table of targets met or missed.

    python bench/report.py              # the full sizes (about 40 minutes on 2 cores)
    python bench/report.py --quick      # small sizes: a smoke check of every bench (~2 minutes)

Each bench runs as a subprocess with `--json`; its JSON (rows, and `summary`: metric, value,
target, met) is collected into bench/results/report.json, and the summaries are printed as
one table, so every ratio in it was measured in the same run on the same machine. A bench
that fails (PostgreSQL or the LoCoMo data missing, say) is reported as such and the others
still run. bench/lookup.py, when present, is run the same way (`--json`, plus `--quick`).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
from consolidate import machine  # bench/ is on the path when run as a script
from rich.console import Console
from rich.table import Table

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "results"


@dataclass(frozen=True)
class Bench:
    name: str
    script: str
    full: tuple[str, ...]
    quick: tuple[str, ...]


BENCHES = [
    Bench(
        "consolidate",
        "consolidate.py",
        ("--repeat", "3", "--large-repeat", "1", "--plot", str(RESULTS / "consolidate.png")),
        ("--n", "300", "--n", "1000", "--repeat", "1"),
    ),
    Bench("rss", "rss.py", (), ("--n", "1000")),
    Bench("llm_calls", "llm_calls.py", (), ("--turns", "50", "--every", "10")),
    Bench(
        "workers",
        "workers.py",
        ("--repeat", "3"),
        ("--events", "200", "--subjects", "20", "--repeat", "1", "--embedder", "hashing"),
    ),
    Bench("lookup", "lookup.py", (), ("--quick",)),
    Bench("storage", "storage.py", (), ("--n", "2000", "--embedder", "hashing")),
    Bench("search", "search.py", (), ("--sizes", "2000", "--queries", "50")),
    Bench("http_ingest", "http_ingest.py", (), ("--events", "200")),
]


def run(bench: Bench, quick: bool) -> dict[str, Any]:
    """One bench in its own process: its JSON, or why there is none."""
    command = [sys.executable, str(BENCH / bench.script), *(bench.quick if quick else bench.full)]
    command.append("--json")
    began = time.perf_counter()
    child = subprocess.run(command, capture_output=True, text=True, cwd=BENCH.parent)
    outcome: dict[str, Any] = {
        "command": " ".join(["python", f"bench/{bench.script}", *command[2:]]),
        "seconds": round(time.perf_counter() - began, 1),
    }
    if child.returncode != 0:
        lines = (child.stderr or child.stdout).strip().splitlines()
        return {**outcome, "error": lines[-1] if lines else f"exit status {child.returncode}"}
    return {**outcome, "result": parse(child.stdout)}


def parse(stdout: str) -> Any:
    """The JSON document a bench printed, after anything its libraries printed first."""
    start = 0 if stdout.startswith(("{", "[")) else stdout.index("\n{") + 1
    return json.loads(stdout[start:])


def summary_rows(outcomes: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for name, outcome in outcomes.items():
        if "error" in outcome:
            rows.append({"bench": name, "metric": "did not run", "value": outcome["error"]})
            continue
        result = outcome["result"]
        found = result.get("summary", []) if isinstance(result, dict) else []
        rows.extend({"bench": name, **row} for row in found)
        if not found:
            rows.append({"bench": name, "metric": "ran (no summary rows)", "value": ""})
    return rows


def verdict(met: bool | None) -> str:
    return {True: "[green]met[/]", False: "[red]missed[/]"}.get(met, "")  # type: ignore[arg-type]


@click.command()
@click.option("--quick", is_flag=True, help="Small sizes: checks that every bench runs.")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=RESULTS / "report.json",
    show_default=True,
)
def main(quick: bool, out: Path) -> None:
    console = Console(width=140, stderr=True)
    outcomes: dict[str, dict[str, Any]] = {}
    for bench in BENCHES:
        if not (BENCH / bench.script).exists():
            continue
        console.print(f"running {bench.name} …")
        outcome = outcomes[bench.name] = run(bench, quick)
        console.print(f"  {outcome.get('error', 'done')} ({outcome['seconds']} s)")
    report: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "quick": quick,
        "benches": outcomes,
        "summary": summary_rows(outcomes),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    table = Table(title=f"Distill benchmarks{' (quick sizes)' if quick else ''}, one run")
    for column in ("bench", "metric", "value", "target", ""):
        table.add_column(column, justify="left" if column in ("bench", "metric") else "right")
    for row in report["summary"]:
        table.add_row(
            row["bench"],
            row["metric"],
            str(row["value"]),
            row.get("target", ""),
            verdict(row.get("met")),
        )
    Console(width=140).print(table)
    print(f"machine: {report['machine']} · {report['date']} · written to {out}")


if __name__ == "__main__":
    main()
