"""What every provider adapter shares: the retry policy, the HTTP status rules, and how a
failure is reported. Providers differ in their wire protocol, not in how they fail.

Only transient failures are retried here (transport errors, timeouts, 5xx, 408, 429); any
other 4xx is a deterministic refusal and fails at once. When retries run out, the error
reaches the engine, which fails the job (events intact) and, on a 429, stops the run.
"""

from __future__ import annotations

import json
import logging
import os
import random
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, TypeVar
from urllib.parse import urlsplit, urlunsplit

from distill.errors import (
    ConfigurationError,
    MalformedAnswer,
    ProviderError,
    ProviderTimeout,
    RateLimited,
    TransientProviderError,
)
from distill.ports import LLM, Completion

log = logging.getLogger("distill.llm")

T = TypeVar("T")

DEFAULT_TIMEOUT = 120.0  # seconds per request: a local model on a CPU can be slow, not forever
DEFAULT_MAX_TOKENS = 4096  # room for the facts of a full batch of events
KEY_VARIABLE = "DISTILL_LLM_API_KEY"  # every provider's key, when none is passed


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently one call is retried.

    `attempts` counts the first try. Waits double from `base_delay` (with ±25% jitter, so
    that workers hitting one rate limit do not come back in step), and no wait is longer than
    `max_delay`, including one a provider asks for in `Retry-After`.
    """

    attempts: int = 3
    base_delay: float = 1.0
    max_delay: float = 20.0
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ConfigurationError("a retry policy needs at least one attempt")

    def delay(self, attempt: int, asked: float | None) -> float:
        if asked is not None and asked >= 0:
            return min(float(asked), self.max_delay)
        wait = self.base_delay * 2 ** (attempt - 1) * random.uniform(0.75, 1.25)
        return float(min(wait, self.max_delay))


class Described(Protocol):
    """What an error message names: every provider, chat model or embedder, has both."""

    model_id: str
    base_url: str


def openai_api_key(api_key: str | None, base_url: str | None, what: str) -> str | None:
    """The key for an OpenAI-compatible server: the one given, else ``DISTILL_LLM_API_KEY``,
    else ``OPENAI_API_KEY`` when talking to OpenAI itself. OPENAI_API_KEY is OpenAI's: it is
    not sent to another server unless asked to. No key and no base_url fails here."""
    key = (
        api_key
        or os.environ.get(KEY_VARIABLE)
        or (os.environ.get("OPENAI_API_KEY") if base_url is None else None)
    )
    if not key and base_url is None:
        raise ConfigurationError(
            f"{what} needs an API key ({KEY_VARIABLE} or OPENAI_API_KEY), "
            "or a base_url for a local server that needs none"
        )
    return key or None


OLLAMA_DEFAULT_HOST = "http://localhost:11434"


def openai_client(
    sdk: Any, api_key: str | None, base_url: str | None, timeout: float, what: str
) -> tuple[Any, str | None]:
    """An OpenAI SDK client with the key rule of `openai_api_key`, and that key. Retries are
    ours, the same for every provider: the SDK's are switched off."""
    key = openai_api_key(api_key, base_url, what)
    client = sdk.OpenAI(
        api_key=key or "unused",  # local servers ignore it; the SDK insists on one
        base_url=base_url,
        timeout=timeout,
        max_retries=0,
    )
    return client, key


def ollama_client(
    sdk: Any, api_key: str | None, base_url: str | None, timeout: float
) -> tuple[Any, str, str | None]:
    """An Ollama SDK client, the host it talks to (the given one, else OLLAMA_HOST, else
    localhost) and the bearer key sent to it, if any (a proxy in front of Ollama may want
    one)."""
    host = (base_url or os.environ.get("OLLAMA_HOST") or OLLAMA_DEFAULT_HOST).rstrip("/")
    key = api_key or os.environ.get(KEY_VARIABLE)
    headers = {"Authorization": f"Bearer {key}"} if key else None
    return sdk.Client(host=host, timeout=timeout, headers=headers), host, key


class HTTPProvider:
    """What the three HTTP providers share: one chat call, retried by the same policy.

    A subclass sets `model`, `model_id`, `base_url` (as it may be shown: `display_url`),
    `retry` and `_client` (the SDK's client, which has `close()`), and implements `_call`,
    which raises Distill errors only.
    """

    model: str
    model_id: str
    base_url: str
    retry: RetryPolicy
    timeout: float  # seconds one request may take
    _client: Any

    def __repr__(self) -> str:  # never the key
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    def complete(
        self, system: str, prompt: str, schema: dict[str, Any] | None = None
    ) -> Completion:
        return self.complete_with(system, prompt, schema)

    def complete_with(
        self,
        system: str,
        prompt: str,
        schema: dict[str, Any] | None = None,
        *,
        retry: RetryPolicy | None = None,
        plain_json: bool = False,
    ) -> Completion:
        """`complete`, as one caller needs it: under its own `retry` policy (the
        provider's by default), and, with `plain_json`, as a completion constrained to one
        JSON object of any shape where the provider has such a mode (`_call_plain_json`:
        Ollama's `/api/generate` with `"format": "json"`); `schema` is then the caller's to
        check, as it always is."""
        policy = retry or self.retry
        where = f"{self.model_id} at {self.base_url}"
        call = self._call_plain_json if plain_json else self._call
        try:
            return with_retries(lambda: call(system, prompt, schema), policy, where)
        except ProviderTimeout as exc:
            raise ProviderTimeout(
                f"{where} did not answer within {self.timeout:g} s, {policy.attempts} "
                f"time(s) in a row"
            ) from exc

    def _call(self, system: str, prompt: str, schema: dict[str, Any] | None) -> Completion:
        raise NotImplementedError

    def _call_plain_json(
        self, system: str, prompt: str, schema: dict[str, Any] | None
    ) -> Completion:
        """A plain-JSON completion; a provider without that mode answers under `schema`,
        which constrains at least as much."""
        return self._call(system, prompt, schema)

    def close(self) -> None:
        """Close the HTTP connections this provider holds."""
        self._client.close()


@contextmanager
def sdk_errors(sdk: Any, provider: Described, hint: str, secret: str | None) -> Iterator[None]:
    """Translate the errors of a Stainless-generated SDK (OpenAI's and Anthropic's share one
    exception tree) into Distill's, inside the `with` block."""
    try:
        yield
    except sdk.APITimeoutError as exc:
        raise ProviderTimeout(f"{provider.model_id}: request timed out") from exc
    except sdk.APIConnectionError as exc:
        raise TransientProviderError(
            f"{provider.model_id}: cannot reach {provider.base_url} ({exc.__cause__ or exc})"
        ) from exc
    except sdk.APIStatusError as exc:
        raise status_error(
            provider.model_id,
            exc.status_code,
            error_detail(exc),
            exc.response.headers,
            hint=hint,
            secret=secret,
        ) from exc
    except (sdk.APIResponseValidationError, json.JSONDecodeError) as exc:
        # A 200 whose body is not the API's JSON: a proxy's page, a half-written answer.
        raise MalformedAnswer(f"{provider.model_id}: unreadable response ({exc})") from exc


@contextmanager
def ollama_errors(
    sdk: Any, httpx: Any, provider: Described, model: str, secret: str | None
) -> Iterator[None]:
    """Translate the errors of Ollama's SDK (and of the httpx client under it) into
    Distill's, inside the `with` block."""
    try:
        yield
    except sdk.ResponseError as exc:
        raise status_error(
            provider.model_id,
            exc.status_code,
            str(exc.error),
            hint=f"has the model been pulled? ollama pull {model}",
            secret=secret,
        ) from exc
    except httpx.TimeoutException as exc:
        raise ProviderTimeout(f"{provider.model_id}: request timed out") from exc
    except (ConnectionError, httpx.TransportError) as exc:
        raise TransientProviderError(
            f"{provider.model_id}: cannot reach Ollama at {provider.base_url} "
            f"(is `ollama serve` running?): {exc}"
        ) from exc
    except (httpx.HTTPError, sdk.RequestError) as exc:  # redirects, refused requests
        raise ProviderError(f"{provider.model_id}: {type(exc).__name__}: {exc}") from exc
    except (ValueError, TypeError, AttributeError) as exc:
        # A body that is not Ollama's JSON (the SDK fails to read even its error bodies).
        raise MalformedAnswer(f"{provider.model_id}: unreadable response ({exc})") from exc


def chat(system: str, prompt: str) -> list[dict[str, str]]:
    """The two messages of an extraction call, in the chat format all providers share."""
    return [{"role": "system", "content": system}, {"role": "user", "content": prompt}]


def with_retries(call: Callable[[], T], policy: RetryPolicy, what: str) -> T:
    """Run `call`, retrying transient provider errors; the last error is raised as is."""
    for attempt in range(1, policy.attempts + 1):
        try:
            return call()
        except TransientProviderError as exc:
            if attempt == policy.attempts:
                raise
            wait = policy.delay(attempt, exc.retry_after)
            log.warning(
                "%s failed (%s); retry %d of %d in %.1f s",
                what,
                exc,
                attempt,
                policy.attempts - 1,
                wait,
            )
            policy.sleep(wait)
    raise AssertionError("unreachable: the last attempt returns or raises")


def retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds from a `Retry-After` header (delta-seconds form), or `retry-after-ms`."""
    if not headers:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        raw = headers.get(name)
        if raw is None:
            continue
        try:
            return float(raw) * scale
        except ValueError:
            continue  # an HTTP date: not worth parsing, the backoff applies
    return None


def redact(text: str, secret: str | None) -> str:
    """`text` with every occurrence of `secret` masked: servers sometimes echo the key."""
    if not secret or len(secret) < 4:
        return text
    return text.replace(secret, secret[:3] + "***")


def status_error(
    provider: str,
    status: int,
    detail: str,
    headers: Mapping[str, str] | None = None,
    hint: str = "",
    secret: str | None = None,
) -> ProviderError:
    """The Distill error for an HTTP error status: transient ones are worth retrying."""
    detail = redact(" ".join(detail.split())[:300], secret)
    message = f"{provider} answered HTTP {status}: {detail}" if detail else f"{provider} {status}"
    if status == 429:
        return RateLimited(message, retry_after(headers))
    if status == 408 or status >= 500:
        return TransientProviderError(message, retry_after(headers))
    if status in (401, 403):
        return ProviderError(
            f"{message} (check the API key: DISTILL_LLM_API_KEY or the provider's own variable)"
        )
    if status == 404 and hint:
        return ProviderError(f"{message} ({hint})")
    return ProviderError(message)


def error_detail(exc: Any) -> str:
    """The server's own message from an SDK's status error: the `error.message` of a JSON
    error body (OpenAI and Anthropic both use that shape), else the raw response text."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
    response = getattr(exc, "response", None)
    text = getattr(response, "text", None)
    return text if isinstance(text, str) and text else str(exc)


def display_url(url: str) -> str:
    """`url` without the credentials it may carry (user:password@, a query string)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    netloc = f"***@{host}" if parts.username or parts.password else host
    return urlunsplit((parts.scheme, netloc, parts.path, "***" if parts.query else "", ""))


@dataclass(frozen=True)
class AskedAs:
    """An `LLM` as one pass asks it: with its own number of `attempts` (transient failures
    only, as always: transport, timeouts, 5xx, 408, 429), and, with `plain_json`, through the
    provider's plain-JSON mode (Ollama's `/api/generate` with `"format": "json"`). The
    provider's other retry settings (waits, `Retry-After`) stay its own. A model that is not
    an HTTP provider (a scripted one) is asked as it is."""

    llm: LLM
    attempts: int
    plain_json: bool = False

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ConfigurationError("a model is asked at least once: attempts must be 1 or more")

    @property
    def model_id(self) -> str:
        return self.llm.model_id

    def complete(
        self, system: str, prompt: str, schema: dict[str, Any] | None = None
    ) -> Completion:
        if not isinstance(self.llm, HTTPProvider):
            return self.llm.complete(system, prompt, schema)
        retry = replace(self.llm.retry, attempts=self.attempts)
        return self.llm.complete_with(
            system, prompt, schema, retry=retry, plain_json=self.plain_json
        )
