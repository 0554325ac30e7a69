"""Anthropic's Messages API. Structured output through a forced tool call: the model must
call `record_facts`, whose input schema is the candidate schema, so the answer is the tool's
input object rather than text that may or may not be JSON."""

from __future__ import annotations

import json
import os
from typing import Any

from distill.adapters.llm.calls import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_TIMEOUT,
    KEY_VARIABLE,
    HTTPProvider,
    RetryPolicy,
    display_url,
    sdk_errors,
)
from distill.errors import (
    ConfigurationError,
    MalformedAnswer,
    MissingDependency,
)
from distill.ports import Completion

TOOL = "record_facts"


class AnthropicLLM(HTTPProvider):
    """An LLM behind Anthropic's Messages API.

    Args:
        model: the model name, for example ``claude-haiku-4-5``.
        base_url: the API root; Anthropic's by default (a proxy or gateway otherwise).
        api_key: ``DISTILL_LLM_API_KEY`` or ``ANTHROPIC_API_KEY`` by default.
        timeout: seconds one request may take.
        retry: how transient failures (transport, timeouts, 5xx and 529, 408, 429) are retried.
    """

    provider = "anthropic"

    def __init__(
        self,
        model: str = "claude-haiku-4-5",
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> None:
        try:
            import anthropic
        except ImportError as exc:
            raise MissingDependency.extra(
                "the anthropic provider needs the Anthropic SDK", "anthropic"
            ) from exc
        key = api_key or os.environ.get(KEY_VARIABLE) or os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            raise ConfigurationError(
                f"the anthropic provider needs an API key: {KEY_VARIABLE} or ANTHROPIC_API_KEY"
            )
        self._secret = key
        self._sdk = anthropic
        self._client = anthropic.Anthropic(
            api_key=key, base_url=base_url, timeout=timeout, max_retries=0
        )
        self.model = model
        self.model_id = f"anthropic/{model}"
        self.base_url = display_url(str(self._client.base_url))
        self.retry = retry or RetryPolicy()
        self.timeout = timeout
        self.max_tokens = max_tokens

    def _call(self, system: str, prompt: str, schema: dict[str, Any] | None) -> Completion:
        request: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "system": system,
            "messages": [{"role": "user", "content": prompt}],
        }
        if schema is not None:
            request["tools"] = [
                {
                    "name": TOOL,
                    "description": "Record the durable facts the messages state.",
                    "input_schema": schema,
                }
            ]
            request["tool_choice"] = {"type": "tool", "name": TOOL}
        with sdk_errors(self._sdk, self, "is the model name right?", self._secret):
            response = self._client.messages.create(**request)
        return self._read(response)

    def _read(self, response: Any) -> Completion:
        try:
            blocks = list(response.content)
            stop = response.stop_reason
        except (AttributeError, TypeError) as exc:
            raise MalformedAnswer(
                f"{self.model_id}: the response has no content ({str(response)[:200]!r})"
            ) from exc
        tool = [b for b in blocks if getattr(b, "type", None) == "tool_use"]
        if tool:
            text = json.dumps(getattr(tool[0], "input", None))
        else:  # no tool call: whatever text there is goes to the parser, which judges it
            text = "".join(getattr(b, "text", "") for b in blocks)
        usage = getattr(response, "usage", None)
        prompt_tokens = sum(
            getattr(usage, name, None) or 0
            for name in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
        )
        completion_tokens = getattr(usage, "output_tokens", None) or 0
        return Completion(text, prompt_tokens, completion_tokens, truncated=stop == "max_tokens")
