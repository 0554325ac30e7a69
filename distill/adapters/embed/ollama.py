"""Embeddings from Ollama's native API (`/api/embed`), which takes a batch of texts in one
request and answers the vectors in input order.

The model id carries the server, as for any server other than OpenAI's (see
`distill.adapters.embed.openai`): an Ollama tag names whatever weights that machine pulled
under it, so ``ollama@localhost:11434/nomic-embed-text:latest``. A name without a tag is
Ollama's ``:latest``, and is identified as such, so both spellings share their vectors.
"""

from __future__ import annotations

import contextlib
from typing import Any
from urllib.parse import urlsplit

from distill.adapters.embed.remote import DEFAULT_MAX_BATCH, DEFAULT_TIMEOUT, RemoteEmbedder
from distill.adapters.llm.calls import RetryPolicy, display_url, ollama_client, ollama_errors
from distill.errors import ConfigurationError, MalformedAnswer, MissingDependency

DEFAULT_MODEL = "nomic-embed-text"


def tagged(model: str) -> str:
    """`model` with Ollama's implied ``:latest`` tag when it names none."""
    return model if ":" in model.rsplit("/", 1)[-1] else f"{model}:latest"


class OllamaEmbedder(RemoteEmbedder):
    """An embedding model served by Ollama.

    Args:
        model: an embedding model Ollama has pulled (``ollama pull nomic-embed-text``).
        base_url: where Ollama listens; ``OLLAMA_HOST`` or ``http://localhost:11434`` by
            default.
        api_key: sent as a bearer token, for an Ollama behind an authenticating proxy
            (``DISTILL_LLM_API_KEY`` by default).
        timeout: seconds one request may take (the first call also loads the model).
        retry: how transient failures (transport, timeouts, 5xx, 408, 429) are retried.
        max_batch: texts per request.
        keep_alive: how long Ollama keeps the model loaded after a call.
        model_id: the name of the vector space, when the default will not do.
    """

    provider = "ollama"

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        max_batch: int = DEFAULT_MAX_BATCH,
        keep_alive: str = "10m",
        model_id: str | None = None,
    ) -> None:
        try:
            import httpx
            import ollama
        except ImportError as exc:
            raise MissingDependency.extra(
                "the ollama embedder needs the Ollama SDK", "ollama"
            ) from exc
        if max_batch < 1:
            raise ConfigurationError(f"max_batch must be at least 1, got {max_batch}")
        super().__init__(None)
        self._sdk = ollama
        self._httpx = httpx
        self._client, _, self._secret = ollama_client(ollama, api_key, base_url, timeout)
        # As the SDK parsed it: OLLAMA_HOST may be "localhost" or "0.0.0.0:11434".
        url = str(self._client._client.base_url)
        self.base_url = display_url(url).rstrip("/")
        self.model = model
        self.retry = retry or RetryPolicy()
        self.max_batch = max_batch
        self.keep_alive = keep_alive
        parts = urlsplit(url)
        where = f"{parts.hostname}:{parts.port}" if parts.port else str(parts.hostname)
        self.model_id = model_id or f"ollama@{where}/{tagged(model)}"
        self.calibrate_args: tuple[str, ...] = ("--embedder", "ollama", "--model", model)
        if base_url is not None:
            self.calibrate_args += ("--base-url", self.base_url)

    def _request(self, texts: list[str]) -> list[Any]:
        with ollama_errors(self._sdk, self._httpx, self, self.model, self._secret):
            response = self._client.embed(model=self.model, input=texts, keep_alive=self.keep_alive)
        vectors = getattr(response, "embeddings", None)
        if not isinstance(vectors, list):
            raise MalformedAnswer(f"{self.model_id}: the response has no `embeddings` list")
        return vectors

    def close(self) -> None:
        """Close the HTTP connections this embedder holds."""
        # ollama.Client has close() from 0.5 on; before, only its httpx client has.
        close = getattr(self._client, "close", None) or self._client._client.close
        close()

    def __del__(self) -> None:
        # The OpenAI client closes itself when discarded; Ollama's does not.
        with contextlib.suppress(Exception):
            self.close()
