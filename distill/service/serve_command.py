"""`distill serve`: the HTTP API on uvicorn, with a background worker that consolidates what
it is sent (see `distill.service.http`).

It binds to 127.0.0.1 unless told otherwise. On any other address it refuses to start
while the database has no active key: an API without keys there would serve every project
to the network. On loopback without any key it serves every caller as an admin of `default`
(the machine's own users could read the database file anyway) and says so.
"""

from __future__ import annotations

import logging
import signal

import click

from distill.errors import MissingDependency
from distill.service.config import CONFIG_VARIABLE, Reloader, load
from distill.service.terminal import (
    configure_logging,
    err,
    memory_factory,
    port_free,
    require_model,
)

DEFAULT_PORT = 8420


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to bind.")
@click.option(
    "--port",
    default=DEFAULT_PORT,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="The port (0: any free one, printed at start).",
)
@click.option(
    "--worker-threads",
    default=1,
    show_default=True,
    type=click.IntRange(0, 64),
    help="Background consolidation threads (0: none; run `distill worker` instead).",
)
@click.option(
    "--interval",
    default=1.0,
    show_default=True,
    type=click.FloatRange(min=0.05),
    help="Seconds the worker waits when nothing is due.",
)
@click.option(
    "--config",
    "config_path",
    envvar=CONFIG_VARIABLE,
    type=click.Path(dir_okay=False),
    help="The configuration file (TOML): the backlog's bound ([backlog]), the background "
    "worker's schedule and trigger ([schedule], [worker]). Its [schedule] section is read "
    "again when it changes, or on SIGHUP.",
)
@click.pass_context
def serve(
    ctx: click.Context,
    host: str,
    port: int,
    worker_threads: int,
    interval: float,
    config_path: str | None,
) -> None:
    """Serve the HTTP API (OpenAPI at /docs) and consolidate in the background, until
    SIGTERM or Ctrl-C."""
    try:
        import uvicorn

        from distill.service.http import Service, create_app
        from distill.service.http.state import is_loopback_address
    except ImportError as exc:
        raise MissingDependency.extra(
            f"distill serve needs FastAPI and uvicorn ({exc.name} is missing)", "server"
        ) from exc
    require_model(ctx)
    settings = Reloader(load(config_path))
    loopback = is_loopback_address(host)
    configure_logging(logging.INFO if ctx.obj["verbose"] else logging.WARNING)
    with memory_factory(ctx) as open_memory:
        svc = Service(
            open_memory,
            loopback=loopback,
            worker_threads=worker_threads,
            interval=interval,
            config=settings,
        )
        try:
            keys = svc.keys.count_keys()
            if not loopback and not keys.active:
                raise click.UsageError(
                    f"refusing to serve on {host} without API keys: anyone who reaches it "
                    "could read and erase every project. Make a key first (distill keys "
                    "create --project P), or serve on 127.0.0.1"
                )
            port_free(host, port, "distill serve")
            config = uvicorn.Config(
                create_app(svc),
                host=host,
                port=port,
                log_level="info" if ctx.obj["verbose"] else "warning",
                access_log=ctx.obj["verbose"],
            )
            sock = config.bind_socket()
        except BaseException:
            svc.close()
            raise
        bound = sock.getsockname()
        where = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
        err.print(f"distill serve: http://{where}:{bound[1]} (API at /docs)", markup=False)
        if not keys.made:
            err.print(
                "warning: no API keys yet, so every caller on this machine acts as an admin "
                "(project 'default', or ?project=); the first `distill keys create` ends this",
                markup=False,
            )
        # uvicorn stops on SIGTERM or Ctrl-C, then sends itself the signal again, to die of
        # it. By then the app's lifespan has stopped the worker (the job being decided
        # finished, the others released), so the command ends as `distill worker` does.
        server = uvicorn.Server(config)
        for stopping in (signal.SIGINT, signal.SIGTERM):
            signal.signal(stopping, lambda *_: setattr(server, "should_exit", True))
        if hasattr(signal, "SIGHUP"):  # the schedule's settings again, as `distill worker`
            signal.signal(signal.SIGHUP, lambda *_: settings.request())
        server.run(sockets=[sock])
        err.print("distill serve: stopped", markup=False)
