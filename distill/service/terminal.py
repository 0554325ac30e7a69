"""What every command shares: the two consoles, logging, the models the options configure,
the Memory a command works on, and JSON output."""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import click
from rich.console import Console

from distill.adapters.embed import close_embedder, make_embedder
from distill.adapters.llm import close_llm, make_llm
from distill.memory import Memory
from distill.ports import Embedder

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def build_llm(ctx: click.Context) -> Any:
    """The configured model. The key comes from the environment only: an option would show
    it in `ps` and the shell's history."""
    return make_llm(api_key=os.environ.get("DISTILL_LLM_API_KEY") or None, **ctx.obj["llm"])


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
        mine.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        logger.setLevel(level)
    mine.distill_cli = True  # type: ignore[attr-defined]
    logger.addHandler(mine)


F = TypeVar("F", bound=Callable[..., Any])


def json_option(func: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables.")(
        func
    )


@contextmanager
def memory(ctx: click.Context, with_llm: bool = False) -> Iterator[Memory]:
    """The Memory a command works on. Only consolidation builds the model: importing a
    provider's SDK takes a second or two, and reading the store must not depend on it."""
    llm = build_llm(ctx) if with_llm else None
    try:
        embedder = build_embedder(ctx)
        try:
            mem = Memory(
                ctx.obj["db"],
                embedder=embedder,
                llm=llm,
                extractor=ctx.obj["extractor"] if with_llm else "auto",
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
