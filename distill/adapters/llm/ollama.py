"""Ollama's native API. Calls go to `/api/chat` with the caller's JSON schema in `format`,
which Ollama turns into a grammar that constrains sampling: the model cannot emit anything
else, which matters most for the small models people run on a laptop. A plain-JSON call
(`complete_with(..., plain_json=True)`: the summariser's, as the graymatter seed has it) goes
to `/api/generate` with `"format": "json"`: sampling constrained to one JSON object of any
shape, whose shape the caller checks."""

from __future__ import annotations

import contextlib
from typing import Any

from distill.adapters.llm.calls import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_TIMEOUT,
    HTTPProvider,
    RetryPolicy,
    chat,
    display_url,
    ollama_client,
    ollama_errors,
)
from distill.core.extraction import estimate_tokens
from distill.errors import MalformedAnswer, MissingDependency
from distill.ports import Completion

DEFAULT_MODEL = "llama3.2"


class OllamaLLM(HTTPProvider):
    """An LLM served by Ollama.

    Args:
        model: a model Ollama has pulled (``ollama pull llama3.2``).
        base_url: where Ollama listens; ``OLLAMA_HOST`` or ``http://localhost:11434`` by
            default.
        api_key: sent as a bearer token, for an Ollama behind an authenticating proxy
            (``DISTILL_LLM_API_KEY`` by default).
        timeout: seconds one request may take (the first call also loads the model).
        retry: how transient failures (transport, timeouts, 5xx, 408, 429) are retried.
        keep_alive: how long Ollama keeps the model loaded after a call.
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
        max_tokens: int = DEFAULT_MAX_TOKENS,
        temperature: float = 0.0,
        keep_alive: str = "10m",
    ) -> None:
        try:
            import httpx
            import ollama
        except ImportError as exc:
            raise MissingDependency.extra(
                "the ollama provider needs the Ollama SDK", "ollama"
            ) from exc
        self._sdk = ollama
        self._httpx = httpx
        self._client, host, self._secret = ollama_client(ollama, api_key, base_url, timeout)
        self.base_url = display_url(host)
        self.model = model
        self.model_id = f"ollama/{model}"
        self.retry = retry or RetryPolicy()
        self.timeout = timeout
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.keep_alive = keep_alive

    def _call(self, system: str, prompt: str, schema: dict[str, Any] | None) -> Completion:
        sdk, httpx = self._sdk, self._httpx
        messages = chat(system, prompt)
        with ollama_errors(sdk, httpx, self, self.model, self._secret):
            response = self._client.chat(
                model=self.model,
                messages=messages,
                format=schema,
                stream=False,
                options={"temperature": self.temperature, "num_predict": self.max_tokens},
                keep_alive=self.keep_alive,
            )
        try:
            text = response.message.content or ""
        except AttributeError as exc:
            raise MalformedAnswer(f"{self.model_id}: the response has no message") from exc
        return self._completion(text, [m["content"] for m in messages], response)

    def _call_plain_json(
        self, system: str, prompt: str, schema: dict[str, Any] | None
    ) -> Completion:
        sdk, httpx = self._sdk, self._httpx
        with ollama_errors(sdk, httpx, self, self.model, self._secret):
            response = self._client.generate(
                model=self.model,
                prompt=prompt,
                system=system,
                format="json",
                stream=False,
                options={"temperature": self.temperature, "num_predict": self.max_tokens},
                keep_alive=self.keep_alive,
            )
        try:
            text = response.response or ""
        except AttributeError as exc:
            raise MalformedAnswer(f"{self.model_id}: the response has no text") from exc
        return self._completion(text, [system, prompt], response)

    def _completion(self, text: str, sent: list[str], response: Any) -> Completion:
        """A completion with Ollama's token counts (estimated when it gives none)."""
        prompt_tokens = response.prompt_eval_count
        completion_tokens = response.eval_count
        if prompt_tokens is None:
            prompt_tokens = sum(estimate_tokens(t) for t in sent)
        if completion_tokens is None:
            completion_tokens = estimate_tokens(text)
        truncated = getattr(response, "done_reason", None) == "length"
        return Completion(text, prompt_tokens, completion_tokens, truncated=truncated)

    def close(self) -> None:
        """Close the HTTP connections this provider holds."""
        # ollama.Client has close() from 0.5 on; before, only its httpx client has.
        close = getattr(self._client, "close", None) or self._client._client.close
        close()

    def __del__(self) -> None:
        # The OpenAI and Anthropic clients close themselves when discarded; Ollama's does not.
        with contextlib.suppress(Exception):
            self.close()
