"""The instructions a consolidation executes, counted by valgrind: a speed comparison that
this machine's noise cannot blur.

    python bench/instructions.py                      # the working tree, 2,000 events
    python bench/instructions.py --base HEAD~1        # and a revision, side by side

Wall and CPU time on this machine move by 10-50% from minute to minute (a thread's CPU time
for the same work ranged 2.8-4.5 s in one session), so a change worth 2-5% of the deciding
thread cannot be seen in `bench/consolidate.py`'s rounds. Instructions can: two runs of the
same code agree within 0.2%. Each count is valgrind's (`--tool=callgrind`) for a whole
process that ingests N of bench/consolidate.py's claim events with the hashing embedder and
consolidates them, minus the same process without the consolidation; the embedding
threads are counted too (valgrind runs one thread at a time), so a share of the count is
the hashing embedder's, and none is the local model's, which bench/consolidate.py weighs.

An instruction count is not a time (a cache miss costs more than an add), and SQLite's own
instructions are in it: it says whether a change made the work smaller, not by how much
the ratio of bench/consolidate.py moves. `--base` archives that revision's tree to a
temporary directory and runs it from there, with the same events. Needs valgrind (apt
install valgrind); a run of 2,000 events takes about a minute and a half per side.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
COLLECTED = re.compile(r"Collected : (\d+)")

# Run in the child under valgrind: the events, a store, one consolidation unless told not to.
CHILD = """
import sys, tempfile
from pathlib import Path
sys.path.insert(0, {bench!r})
from consolidate import make_events
from distill import Memory
events = make_events({n})
with tempfile.TemporaryDirectory() as tmp, Memory(
    Path(tmp) / "b.db", embedder="hashing", embed_events=True
) as mem:
    for start in range(0, len(events), 1000):
        mem.add_events(events[start : start + 1000])
    if {consolidate}:
        mem.consolidate()
"""


def instructions(tree: Path, n: int, consolidate: bool) -> int:
    """Instructions of one child process running `tree`'s distill."""
    code = CHILD.format(bench=str(HERE), n=n, consolidate=consolidate)
    env = {**os.environ, "PYTHONPATH": str(tree)}
    run = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable],
        input=code,
        capture_output=True,
        text=True,
        env=env,
        cwd=tree,  # the code comes on stdin, so the directory it runs in is first on the path
        check=True,
    )
    found = COLLECTED.search(run.stderr)
    if found is None:
        raise click.ClickException(f"valgrind gave no count:\n{run.stderr[-2000:]}")
    return int(found.group(1))


def consolidation(tree: Path, n: int) -> int:
    return instructions(tree, n, True) - instructions(tree, n, False)


@click.command()
@click.option("--n", default=2000, show_default=True, help="Claim events (100 a subject).")
@click.option("--base", help="A git revision to count beside the working tree.")
def main(n: int, base: str | None) -> None:
    if shutil.which("valgrind") is None:
        raise click.ClickException("valgrind is not installed (apt install valgrind)")
    rows = [("working tree", consolidation(ROOT, n))]
    if base is not None:
        with tempfile.TemporaryDirectory() as tmp:
            archive = subprocess.run(
                ["git", "-C", str(ROOT), "archive", base], capture_output=True, check=True
            )
            subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
            rows.append((base, consolidation(Path(tmp), n)))
    table = Table(title=f"instructions of one consolidation of {n:,} claim events (hashing)")
    for column in ("tree", "instructions (M)", "per event (k)", "÷ working tree"):
        table.add_column(column, justify="right")
    for name, count in rows:
        share = f"{count / rows[0][1]:.3f}"
        table.add_row(name, f"{count / 1e6:,.0f}", f"{count / n / 1e3:,.0f}", share)
    Console().print(table)


if __name__ == "__main__":
    main()
