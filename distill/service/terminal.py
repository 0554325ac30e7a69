"""What every command shares: the two consoles, logging, the models the options configure,
the Memory a command works on, and JSON output."""

from __future__ import annotations

import inspect
import json
import logging
import os
import socket
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import click
from rich.console import Console

from distill.adapters.embed import close_embedder, make_embedder
from distill.adapters.llm import close_llm, make_llm
from distill.core.models import normalise_subject
from distill.errors import ConfigurationError
from distill.log_scope import ScopeFilter
from distill.memory import Memory
from distill.ports import Embedder, Store
from distill.service.api_keys import key_store
from distill.service.event_input import future_margin_setting

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def build_llm(ctx: click.Context) -> Any:
    """The configured model. The key comes from the environment only: an option would show
    it in `ps` and the shell's history."""
    return make_llm(api_key=os.environ.get("DISTILL_LLM_API_KEY") or None, **ctx.obj["llm"])


def require_model(ctx: click.Context) -> None:
    """The llm extractor without a model, said in the CLI's words (the API's own message
    speaks of `Memory(llm=...)`, which a CLI user has no way to pass)."""
    if ctx.obj["extractor"] == "llm" and ctx.obj["llm"]["provider"] == "none":
        raise ConfigurationError(
            "the llm extractor (DISTILL_EXTRACTOR=llm or --extractor llm) needs a model: set "
            "DISTILL_LLM to openai, ollama or anthropic (and DISTILL_LLM_MODEL), or use "
            "DISTILL_EXTRACTOR=auto to extract without one"
        )


def describe_llm(config: dict[str, Any]) -> str:
    """The model a command would ask, with its default name resolved, named without being
    built: `status` must work when it cannot be (no SDK, no key, no server)."""
    provider = config["provider"]
    if provider == "none":
        return "none"
    if provider == "fake":
        return "fake"
    model = config["model"] or _default_model(provider)
    return f"{provider}/{model}"


def _default_model(provider: str) -> str:
    from distill.adapters.llm.anthropic import AnthropicLLM
    from distill.adapters.llm.ollama import OllamaLLM
    from distill.adapters.llm.openai import OpenAILLM

    cls = {"openai": OpenAILLM, "ollama": OllamaLLM, "anthropic": AnthropicLLM}[provider]
    return str(inspect.signature(cls).parameters["model"].default)


def describe_extraction(extractor: str, llm: str) -> str:
    """What `consolidate` will turn events into, with the choices of `auto` resolved."""
    if extractor == "auto":
        return "auto: an event's own claims, else " + (
            "its sentences as memories (no LLM)" if llm == "none" else f"the LLM {llm}"
        )
    if extractor == "claims":
        return "claims: an event's own claims only; text alone gives nothing"
    if extractor == "text":
        return "text: each sentence a memory (no LLM)"
    if llm == "none":
        return "llm: unusable, no model is set (DISTILL_LLM)"
    return f"llm: {llm}"


def build_embedder(ctx: click.Context) -> Embedder:
    """The configured embedder; the caller closes it (`close_embedder`). A key, for a server
    that needs one, is read from the environment by the embedder itself."""
    return make_embedder(**ctx.obj["embedder"])


def configure_logging(level: int | None) -> None:
    """Where the engine's and the providers' log records go: stderr from `level` up, or
    nowhere (`None`). A command prints what a person needs from its result (a run's report
    says which jobs failed and why a provider ended it), so by default its logs stay quiet;
    `--verbose` shows them, and the long-running worker keeps its warnings. Records still
    reach handlers an embedding application installed above (propagation is left on)."""
    logger = logging.getLogger("distill")
    for handler in [h for h in logger.handlers if getattr(h, "distill_cli", False)]:
        logger.removeHandler(handler)
    # A handler of its own, even a null one, keeps Python's last-resort printer away.
    mine: logging.Handler = logging.NullHandler()
    if level is not None:
        mine = logging.StreamHandler(sys.stderr)
        # Every line says what it is about: project, subject, job, pass (`log_scope`).
        mine.addFilter(ScopeFilter())
        mine.setFormatter(
            # The worker's own lines (a run's counts) begin with the same time.
            logging.Formatter(
                "%(asctime)s %(levelname)s %(name)s: %(message)s%(scope)s", "%Y-%m-%d %H:%M:%S"
            )
        )
        logger.setLevel(level)
    mine.distill_cli = True  # type: ignore[attr-defined]
    logger.addHandler(mine)


F = TypeVar("F", bound=Callable[..., Any])


def _json_before_the_command(ctx: click.Context, _: click.Parameter, value: bool) -> bool:
    return value or bool((ctx.obj or {}).get("json"))


def json_flag(help: str) -> Callable[[F], F]:
    """`--json` after the command; `distill --json COMMAND` sets it too."""
    return click.option(
        "--json", "as_json", is_flag=True, callback=_json_before_the_command, help=help
    )


json_option = json_flag("Print JSON instead of tables.")


def _set_db(ctx: click.Context, _: click.Parameter, value: str | None) -> None:
    if value is not None:
        ctx.ensure_object(dict)["db"] = value


def db_option() -> click.Option:
    """`--db` after the command: a person types it where the other options are, and it wins
    over `--db` before the command and over DISTILL_DATABASE_URL."""
    return click.Option(
        ["--db"], expose_value=False, callback=_set_db, help="The database (as `distill --db`)."
    )


@contextmanager
def memory(ctx: click.Context, with_llm: bool = False) -> Iterator[Memory]:
    """The Memory a command works on. Only consolidation builds the model: importing a
    provider's SDK takes a second or two, and reading the store must not depend on it."""
    if with_llm:
        require_model(ctx)
    llm = build_llm(ctx) if with_llm else None
    try:
        embedder = build_embedder(ctx)
        try:
            mem = Memory(
                ctx.obj["db"],
                embedder=embedder,
                llm=llm,
                extractor=ctx.obj["extractor"] if with_llm else "auto",
                future_margin=future_margin_setting(),
                policies=ctx.obj.get("policies"),
            )
            try:
                yield mem
            finally:
                mem.close()
        finally:
            close_embedder(embedder)
    finally:
        close_llm(llm)


def emit(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


@contextmanager
def memory_factory(ctx: click.Context) -> Iterator[Callable[[], Memory]]:
    """A way to open one Memory per worker thread (each with its own model client and
    embedder, as `Worker` wants), and every model and embedder opened closed at the end."""
    models: list[Any] = []
    embedders: list[Embedder] = []

    def open_memory() -> Memory:
        llm = build_llm(ctx)
        models.append(llm)
        embedder = build_embedder(ctx)
        embedders.append(embedder)
        return Memory(
            ctx.obj["db"],
            embedder=embedder,
            llm=llm,
            extractor=ctx.obj["extractor"],
            future_margin=future_margin_setting(),
            policies=ctx.obj.get("policies"),
        )

    try:
        yield open_memory
    finally:
        for llm in models:
            close_llm(llm)
        for embedder in embedders:
            close_embedder(embedder)


def port_free(host: str, port: int, command: str) -> None:
    """Refuse at once, in one line, a port another program listens on: uvicorn would log
    its own error and exit with status 3."""
    if port == 0:
        return
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise click.ClickException(
                f"{command} cannot listen on {host}:{port}: {exc.strerror or exc}. Another "
                "server may hold that port: pass --port N, or --port 0 for any free one"
            ) from exc


def note_unknown_subject(store: Store, project: str, subject: str) -> None:
    """A subject the project holds nothing of is said on stderr (the HTTP API answers 404):
    a misspelt subject must not read as an empty memory. The answer itself is unchanged."""
    stored = normalise_subject(subject)
    if stored and not key_store(store).subject_known(project, stored):
        err.print(
            f"note: nothing is stored about subject {stored!r} in project {project!r} "
            "(`distill subjects` lists the known ones)",
            markup=False,
        )


def misplaced_option(
    exc: click.NoSuchOption, params: list[click.Parameter]
) -> click.UsageError | None:
    """An option of `distill` itself typed after the command: say where it goes."""
    for param in params:
        if exc.option_name in param.opts and exc.ctx is not None:
            command = exc.ctx.info_name
            if exc.option_name == "--json":  # every command that prints a result takes it
                return click.UsageError(
                    f"distill {command} has no JSON output: it runs until stopped and logs",
                    exc.ctx,
                )
            return click.UsageError(
                f"{exc.option_name} is an option of distill itself: put it before the "
                f"command (distill {exc.option_name} ... {command} ...); only --db and "
                "--json may follow the command",
                exc.ctx,
            )
    return None
