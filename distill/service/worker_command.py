"""`distill worker`: consolidate continuously, alone or beside other workers."""

from __future__ import annotations

import logging
from datetime import datetime

import click

from distill.report import Report
from distill.service.terminal import (
    configure_logging,
    err,
    memory_factory,
    require_model,
)
from distill.service.worker import Worker


@click.command()
@click.option(
    "--concurrency",
    default=1,
    show_default=True,
    type=click.IntRange(1, 64),
    help="Consolidation threads in this process (each with its own connections).",
)
@click.option(
    "--interval",
    default=2.0,
    show_default=True,
    type=click.FloatRange(min=0.05),
    help="Seconds to wait when nothing is due (events arriving meanwhile share model calls).",
)
@click.option(
    "--settle",
    default=0.5,
    show_default=True,
    type=click.FloatRange(min=0),
    help="On PostgreSQL, seconds to wait after new events wake the worker (a burst together).",
)
@click.option("--once", is_flag=True, help="Process what is due, then exit.")
@click.pass_context
def worker(
    ctx: click.Context, concurrency: int, interval: float, settle: float, once: bool
) -> None:
    """Consolidate continuously, until SIGTERM or Ctrl-C (which finish the job being decided
    and put the other claimed ones back). Several workers may share one database."""
    require_model(ctx)

    def announce(report: Report) -> None:
        counters = ", ".join(f"{k} {v}" for k, v in report.counters().items() if v)
        err.print(f"[{datetime.now().astimezone():%H:%M:%S}] {counters}")

    # A worker runs unattended: its warnings (failed jobs, reclaimed ones, a database that
    # went away) are its log.
    configure_logging(logging.INFO if ctx.obj["verbose"] else logging.WARNING)
    with memory_factory(ctx) as open_memory:
        runner = Worker(
            open_memory,
            concurrency=concurrency,
            interval=interval,
            on_run=announce,
            settle=settle,
        )
        runner.stop_on_signals()
        err.print(f"distill worker: {concurrency} thread(s), polling every {interval:g} s")
        totals = runner.run(once=once)
    err.print(
        f"stopped: {totals.jobs_done} job(s) done, {totals.jobs_failed} failed, "
        f"{totals.llm_calls} LLM call(s)"
    )
