"""Any OpenAI-compatible chat-completions endpoint: OpenAI itself, vLLM, llama.cpp's server,
LM Studio, LiteLLM, Ollama's /v1, and the rest.

Structured output is asked for in the strongest form the server accepts: a JSON schema
(`response_format: json_schema`), else JSON mode (`json_object`), else the prompt alone. A
server that refuses a form with a 400 naming it is asked again, once, in the next weaker form,
and that form is kept for the rest of the session.
"""

from __future__ import annotations

import threading
from typing import Any, Literal

from distill.adapters.llm.calls import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_TIMEOUT,
    HTTPProvider,
    RetryPolicy,
    chat,
    display_url,
    error_detail,
    openai_client,
    sdk_errors,
)
from distill.core.extraction import estimate_tokens
from distill.errors import (
    ConfigurationError,
    MalformedAnswer,
    MissingDependency,
)
from distill.ports import Completion

DEFAULT_MODEL = "gpt-4o-mini"
Structured = Literal["auto", "json_schema", "json_object", "none"]
_WEAKER = {"json_schema": "json_object", "json_object": "none"}


class OpenAILLM(HTTPProvider):
    """An LLM behind an OpenAI-compatible `/chat/completions` endpoint.

    Args:
        model: the model name the server knows.
        base_url: the API root, for example ``http://localhost:8000/v1``; OpenAI's by default.
        api_key: the bearer token; by default ``DISTILL_LLM_API_KEY``, or ``OPENAI_API_KEY``
            when talking to OpenAI itself. Local servers need none.
        timeout: seconds one request may take.
        retry: how transient failures (transport, timeouts, 5xx, 408, 429) are retried.
        structured: ``auto`` (the strongest form the server accepts), or one form.
    """

    provider = "openai"

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
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
            raise MissingDependency.extra(
                "the openai provider needs the OpenAI SDK", "openai"
            ) from exc
        if structured not in ("auto", "json_schema", "json_object", "none"):
            raise ConfigurationError(f"unknown structured output form {structured!r}")
        self._sdk = openai
        self._client, self._secret = openai_client(
            openai, api_key, base_url, timeout, "the openai provider"
        )
        self.model = model
        self.model_id = f"openai/{model}"
        self.base_url = display_url(str(self._client.base_url))
        self.retry = retry or RetryPolicy()
        self.timeout = timeout
        self.max_tokens = max_tokens
        self.temperature = temperature
        self._form: str = "json_schema" if structured == "auto" else structured
        self._adapts = structured == "auto"
        self._token_limit_name = "max_tokens"
        self._lock = threading.Lock()

    def _call(self, system: str, prompt: str, schema: dict[str, Any] | None) -> Completion:
        sdk = self._sdk
        messages = chat(system, prompt)
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
            with sdk_errors(sdk, self, "is the model name right for this server?", self._secret):
                try:
                    response = self._client.chat.completions.create(**request)
                except sdk.BadRequestError as exc:
                    if self._adapt(error_detail(exc), form, limit_name):
                        continue  # asked again in a form this server accepts
                    raise
            return self._read(response, messages)

    def _adapt(self, detail: str, form: str, limit_name: str) -> bool:
        """Step down from the form a refused request used, if the refusal names what the
        server lacks. A limit that is merely too large ("max_tokens is too large") is not
        such a refusal: only an unsupported parameter is."""
        text = detail.lower()
        unsupported = "unsupported" in text or "not supported" in text
        with self._lock:
            if (
                limit_name == self._token_limit_name == "max_tokens"
                and "max_tokens" in text
                and (unsupported or ("max_completion_tokens" in text and "too large" not in text))
            ):
                self._token_limit_name = "max_completion_tokens"  # newer OpenAI models
                return True
            if (
                self._adapts
                and form == self._form
                and form in _WEAKER
                and ("response_format" in text or "json_schema" in text or "json_object" in text)
            ):
                self._form = _WEAKER[form]
                return True
            # Another call already stepped down from this form: ask again in the new one.
            return form != self._form or limit_name != self._token_limit_name

    def _read(self, response: Any, messages: list[dict[str, str]]) -> Completion:
        try:
            choice = response.choices[0]
            text = choice.message.content or ""
            finish = choice.finish_reason
            if not isinstance(text, str):
                raise TypeError(f"content is a {type(text).__name__}, not text")
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
