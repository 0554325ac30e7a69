"""`distill worker`: consolidate continuously, alone or beside other workers."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

import click

from distill.adapters.embed import close_embedder
from distill.adapters.llm import close_llm
from distill.memory import Memory
from distill.ports import Embedder
from distill.report import Report
from distill.service.terminal import (
    build_embedder,
    build_llm,
    configure_logging,
    err,
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
    models: list[Any] = []
    embedders: list[Embedder] = []

    def open_memory() -> Memory:
        llm = build_llm(ctx)
        models.append(llm)
        embedder = build_embedder(ctx)
        embedders.append(embedder)
        return Memory(ctx.obj["db"], embedder=embedder, llm=llm, extractor=ctx.obj["extractor"])

    def announce(report: Report) -> None:
        counters = ", ".join(f"{k} {v}" for k, v in report.counters().items() if v)
        err.print(f"[{datetime.now().astimezone():%H:%M:%S}] {counters}")

    runner = Worker(
        open_memory, concurrency=concurrency, interval=interval, on_run=announce, settle=settle
    )
    # A worker runs unattended: its warnings (failed jobs, reclaimed ones, a database that
    # went away) are its log.
    configure_logging(logging.INFO if ctx.obj["verbose"] else logging.WARNING)
    runner.stop_on_signals()
    err.print(f"distill worker: {concurrency} thread(s), polling every {interval:g} s")
    try:
        totals = runner.run(once=once)
    finally:
        for llm in models:
            close_llm(llm)
        for embedder in embedders:
            close_embedder(embedder)
    err.print(
        f"stopped: {totals.jobs_done} job(s) done, {totals.jobs_failed} failed, "
        f"{totals.llm_calls} LLM call(s)"
    )
