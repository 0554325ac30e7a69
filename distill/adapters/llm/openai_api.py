"""Any OpenAI-compatible chat-completions endpoint: OpenAI itself, vLLM, llama.cpp's server,
LM Studio, LiteLLM, Ollama's /v1, and the rest.

Structured output is asked for in the strongest form the server accepts: a JSON schema
(`response_format: json_schema`), else JSON mode (`json_object`), else the prompt alone. A
server that refuses a form with a 400 naming it is asked again, once, in the next weaker form,
and that form is kept for the rest of the session.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any, Literal

from distill.adapters.llm.calls import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_TIMEOUT,
    RetryPolicy,
    error_detail,
    status_error,
    with_retries,
)
from distill.core.extraction import estimate_tokens
from distill.errors import (
    ConfigurationError,
    MalformedAnswer,
    MissingDependency,
    TransientProviderError,
)
from distill.ports import Completion

Structured = Literal["auto", "json_schema", "json_object", "none"]
_WEAKER = {"json_schema": "json_object", "json_object": "none"}


class OpenAICompatible:
    """An LLM behind an OpenAI-compatible `/chat/completions` endpoint.

    Args:
        model: the model name the server knows.
        base_url: the API root, for example ``http://localhost:8000/v1``; OpenAI's by default.
        api_key: the bearer token; ``OPENAI_API_KEY`` by default. Local servers need none.
        timeout: seconds one request may take.
        retry: how transient failures (transport, timeouts, 5xx, 408, 429) are retried.
        structured: ``auto`` (the strongest form the server accepts), or one form.
    """

    provider = "openai"

    def __init__(
        self,
        model: str = "gpt-4o-mini",
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        structured: Structured = "auto",
        temperature: float = 0.0,
    ) -> None:
        try:
            import openai
        except ImportError as exc:
            raise MissingDependency(
                "the openai provider needs the OpenAI SDK: pip install 'distill[openai]'"
            ) from exc
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            if base_url is None:
                raise ConfigurationError(
                    "the openai provider needs an API key (DISTILL_LLM_API_KEY or "
                    "OPENAI_API_KEY), or a base_url for a local server that needs none"
                )
            key = "unused"  # local servers ignore it; the SDK insists on one
        self._secret = key
        if structured not in ("auto", "json_schema", "json_object", "none"):
            raise ConfigurationError(f"unknown structured output form {structured!r}")
        self._sdk = openai
        # Retries are ours, the same for every provider; the SDK's are switched off.
        self._client = openai.OpenAI(api_key=key, base_url=base_url, timeout=timeout, max_retries=0)
        self.model = model
        self.model_id = f"openai/{model}"
        self.base_url = str(self._client.base_url)
        self.retry = retry or RetryPolicy()
        self.max_tokens = max_tokens
        self.temperature = temperature
        self._form: str = "json_schema" if structured == "auto" else structured
        self._adapts = structured == "auto"
        self._token_limit_name = "max_tokens"
        self._lock = threading.Lock()

    @property
    def json_mode(self) -> bool:
        return self._form != "none"

    def __repr__(self) -> str:  # never the key
        return f"OpenAICompatible(model={self.model!r}, base_url={self.base_url!r})"

    def complete(
        self, system: str, prompt: str, schema: dict[str, Any] | None = None
    ) -> Completion:
        messages = [
            {"role": "system", "content": system},
            {"role": "user", "content": prompt},
        ]
        return with_retries(
            lambda: self._call(messages, schema), self.retry, f"{self.model_id} at {self.base_url}"
        )

    def _call(self, messages: list[dict[str, str]], schema: dict[str, Any] | None) -> Completion:
        sdk = self._sdk
        while True:
            with self._lock:
                form, limit_name = self._form, self._token_limit_name
            request: dict[str, Any] = {
                "model": self.model,
                "messages": messages,
                "temperature": self.temperature,
                limit_name: self.max_tokens,
            }
            if schema is not None and form == "json_schema":
                request["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": "facts", "schema": schema, "strict": False},
                }
            elif schema is not None and form == "json_object":
                request["response_format"] = {"type": "json_object"}
            try:
                response = self._client.chat.completions.create(**request)
            except sdk.APITimeoutError as exc:
                raise TransientProviderError(f"{self.model_id}: request timed out") from exc
            except sdk.APIConnectionError as exc:
                raise TransientProviderError(
                    f"{self.model_id}: cannot reach {self.base_url} ({exc.__cause__ or exc})"
                ) from exc
            except sdk.APIStatusError as exc:
                if exc.status_code == 400 and self._adapt(error_detail(exc)):
                    continue
                raise status_error(
                    self.model_id,
                    exc.status_code,
                    error_detail(exc),
                    exc.response.headers,
                    hint="is the model name right for this server?",
                    secret=self._secret,
                ) from exc
            except (sdk.APIResponseValidationError, json.JSONDecodeError) as exc:
                raise MalformedAnswer(f"{self.model_id}: unreadable response ({exc})") from exc
            return self._read(response, messages)

    def _adapt(self, detail: str) -> bool:
        """Step down to a form the server accepts, if its refusal names what it lacks."""
        text = detail.lower()
        with self._lock:
            if "max_tokens" in text and self._token_limit_name == "max_tokens":
                self._token_limit_name = "max_completion_tokens"  # newer OpenAI models
                return True
            if (
                self._adapts
                and self._form in _WEAKER
                and ("response_format" in text or "json_schema" in text or "json_object" in text)
            ):
                self._form = _WEAKER[self._form]
                return True
        return False

    def _read(self, response: Any, messages: list[dict[str, str]]) -> Completion:
        try:
            choice = response.choices[0]
            text = choice.message.content or ""
            finish = choice.finish_reason
        except (AttributeError, IndexError, TypeError) as exc:
            raise MalformedAnswer(
                f"{self.model_id}: the response has no message ({str(response)[:200]!r})"
            ) from exc
        usage = getattr(response, "usage", None)
        prompt_tokens = getattr(usage, "prompt_tokens", None)
        completion_tokens = getattr(usage, "completion_tokens", None)
        if not isinstance(prompt_tokens, int):
            prompt_tokens = sum(estimate_tokens(m["content"]) for m in messages)
        if not isinstance(completion_tokens, int):
            completion_tokens = estimate_tokens(text)
        return Completion(text, prompt_tokens, completion_tokens, truncated=finish == "length")

    def close(self) -> None:
        """Close the HTTP connections this provider holds."""
        self._client.close()
