"""What every command shares: the two consoles, and the models the options configure."""

from __future__ import annotations

import os
from typing import Any

import click
from rich.console import Console

from distill.adapters.embed import make_embedder
from distill.adapters.llm import make_llm
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
