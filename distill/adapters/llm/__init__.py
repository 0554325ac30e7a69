"""LLM providers behind the `LLM` port, built by name.

    make_llm("ollama")                                   # llama3.2 on localhost:11434
    make_llm("openai", model="qwen2.5-7b-instruct", base_url="http://localhost:8000/v1")
    make_llm("anthropic", model="claude-haiku-4-5")      # ANTHROPIC_API_KEY

Each provider's SDK is an optional extra, imported only when that provider is built.
"""

from __future__ import annotations

from typing import Any

from distill.errors import ConfigurationError
from distill.ports import LLM

PROVIDERS = ("none", "fake", "openai", "ollama", "anthropic")


def make_llm(
    provider: str | None,
    model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    **options: Any,
) -> LLM | None:
    """The LLM a provider name stands for; `None` for ``none`` (or no provider at all).

    `options` go to the provider's constructor (``timeout``, ``retry``, ``max_tokens``...).
    """
    name = (provider or "none").strip().lower()
    given: dict[str, Any] = {k: v for k, v in (("model", model), ("base_url", base_url)) if v}
    if name == "none":
        return None
    if name == "fake":
        from distill.adapters.llm.fake import FakeLLM

        return FakeLLM.sentences()
    if name == "openai":
        from distill.adapters.llm.openai import OpenAILLM

        return OpenAILLM(api_key=api_key, **given, **options)
    if name == "ollama":
        from distill.adapters.llm.ollama import OllamaLLM

        return OllamaLLM(api_key=api_key, **given, **options)
    if name == "anthropic":
        from distill.adapters.llm.anthropic import AnthropicLLM

        return AnthropicLLM(api_key=api_key, **given, **options)
    raise ConfigurationError(f"unknown LLM provider {provider!r}; choose one of {PROVIDERS}")


def close_llm(llm: LLM | None) -> None:
    """Close a provider's HTTP connections, if it holds any."""
    close = getattr(llm, "close", None)
    if callable(close):
        close()
