"""`distill worker`: consolidate continuously, alone or beside other workers, and run the
scheduled passes (`distill.scheduler`) on their cadence."""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from datetime import datetime
from types import FrameType

import click

from distill.errors import MissingDependency
from distill.memory import Memory
from distill.report import Report
from distill.scheduler import Ran
from distill.service.config import CONFIG_VARIABLE, Reloader, load
from distill.service.terminal import (
    configure_logging,
    err,
    memory_factory,
    require_model,
)
from distill.service.worker import Worker

log = logging.getLogger("distill.worker")


@click.command()
@click.option(
    "--config",
    "config_path",
    envvar=CONFIG_VARIABLE,
    type=click.Path(dir_okay=False),
    help="The configuration file (TOML; `distill config show` prints what is in force). "
    "Its [schedule] section is read again when it changes, or on SIGHUP.",
)
@click.option(
    "--concurrency",
    default=None,
    type=click.IntRange(1, 64),
    help="Consolidation threads in this process (each with its own connections) [default: 1].",
)
@click.option(
    "--interval",
    default=None,
    type=click.FloatRange(min=0.05),
    help="Seconds to wait when nothing is due (events arriving meanwhile share model calls) "
    "[default: 2].",
)
@click.option(
    "--settle",
    default=None,
    type=click.FloatRange(min=0),
    help="On PostgreSQL, seconds to wait after new events wake the worker (a burst together) "
    "[default: 0.5].",
)
@click.option(
    "--schedule/--no-schedule",
    default=True,
    show_default=True,
    help="Also run the scheduled passes (dedupe, judge, ... on their intervals) when no job "
    "is due.",
)
@click.option(
    "--metrics-port",
    default=None,
    type=click.IntRange(0, 65535),
    help="Serve Prometheus metrics on this port (0: any free one, printed at start) "
    "[default: not served].",
)
@click.option(
    "--metrics-host",
    default=None,
    help="The address the metrics bind to [default: 127.0.0.1].",
)
@click.option("--once", is_flag=True, help="Process what is due (jobs, then passes), then exit.")
@click.pass_context
def worker(
    ctx: click.Context,
    config_path: str | None,
    concurrency: int | None,
    interval: float | None,
    settle: float | None,
    schedule: bool,
    metrics_port: int | None,
    metrics_host: str | None,
    once: bool,
) -> None:
    """Consolidate continuously, until SIGTERM or Ctrl-C (which finish the job being decided
    and put the other claimed ones back). A subject's events are extracted once 20 wait or
    the oldest waited 15 minutes (`[worker]` min_events and max_wait_minutes in the
    configuration; `distill consolidate` runs them all now). Several workers may share one
    database; a scheduled pass of a project runs on one of them at a time."""
    require_model(ctx)
    loaded = load(config_path)
    own = loaded.settings.worker
    concurrency = own.concurrency if concurrency is None else concurrency
    interval = own.interval if interval is None else interval
    settle = own.settle if settle is None else settle
    metrics_port = own.metrics_port if metrics_port is None else metrics_port
    metrics_host = own.metrics_host if metrics_host is None else metrics_host
    reloader = Reloader(loaded)

    def announce(report: Report) -> None:
        counters = ", ".join(f"{k} {v}" for k, v in report.counters().items() if v)
        err.print(f"{datetime.now().astimezone():%Y-%m-%d %H:%M:%S} {counters}")

    def scheduled(ran: Ran) -> None:
        row, outcome = ran.row, ran.outcome
        state = "clean" if outcome.clean else f"stopped ({outcome.stop}: {outcome.detail})"
        soft = f"; skipped: {'; '.join(outcome.soft)}" if outcome.soft else ""
        err.print(
            f"{datetime.now().astimezone():%Y-%m-%d %H:%M:%S} {row.pass_name} of {row.project}: "
            f"{state} in {ran.seconds:.1f} s{soft}"
        )

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
            schedule=reloader.schedule if schedule else None,
            on_scheduled=scheduled,
            trigger=own.trigger() if own.min_events > 1 else None,
        )
        runner.stop_on_signals()
        if hasattr(signal, "SIGHUP"):

            def hangup(signum: int, frame: FrameType | None) -> None:
                reloader.request()

            signal.signal(signal.SIGHUP, hangup)
        where = f", configuration {loaded.path}" if loaded.path else ""
        waits = (
            f"; a subject's events wait for {own.min_events} of them or "
            f"{own.max_wait_minutes:g} min"
            if own.min_events > 1
            else ""
        )
        err.print(
            f"distill worker: {concurrency} thread(s), polling every {interval:g} s{waits}{where}"
        )
        with ExitStack() as stack:
            if metrics_port is not None:
                stack.enter_context(_metrics(open_memory, runner, metrics_host, metrics_port))
            totals = runner.run(once=once)
    err.print(
        f"stopped: {totals.jobs_done} job(s) done, {totals.jobs_failed} failed, "
        f"{totals.llm_calls} LLM call(s), {totals.scheduled_runs} scheduled pass(es)"
    )


@contextmanager
def _metrics(
    open_memory: Callable[[], Memory], runner: Worker, host: str, port: int
) -> Iterator[None]:
    """Prometheus metrics while the worker runs, read with a `Memory` of their own."""
    try:
        from distill.service.worker_metrics import MetricsServer
    except ImportError as exc:
        raise MissingDependency.extra(
            f"--metrics-port needs Prometheus's client ({exc.name} is missing)", "server"
        ) from exc
    with open_memory() as memory:
        try:
            server = MetricsServer(lambda: memory, lambda: runner.totals, host, port)
        except OSError as exc:
            raise click.ClickException(  # exit 1: the port is busy, the command was right
                f"cannot serve metrics on {host}:{port}: {exc.strerror or exc}. Another "
                "process may hold that port: pass --metrics-port N, or 0 for any free one"
            ) from exc
        shown = f"[{host}]" if ":" in host else host
        err.print(f"metrics: http://{shown}:{server.port}/metrics", markup=False)
        try:
            yield
        finally:
            server.close()
