"""The OpenAI-compatible provider against a real HTTP server on 127.0.0.1 (ScriptedServer).

What a user relies on: the request it sends (model, prompts, schema, key), what a success
returns (text and token usage), how it adapts to servers that lack structured output or the
`max_tokens` parameter, and how every failure surfaces as a Distill error — deterministic
refusals at once, transient ones retried with backoff, a 429 as RateLimited (SCENARIOS G41),
a hanging or absent server as a bounded TransientProviderError — without ever leaking the key.

One server serves the whole module (each test resets its script, default and recorded
requests): stopping a ScriptedServer waits out its 0.5 s poll, which would dominate the run.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from distill.adapters.llm import make_llm
from distill.adapters.llm.calls import RetryPolicy
from distill.adapters.llm.openai import OpenAILLM
from distill.errors import (
    ConfigurationError,
    MalformedAnswer,
    MissingDependency,
    ProviderError,
    RateLimited,
    TransientProviderError,
)
from tests.llm_server import Reply, ScriptedServer, openai_error, openai_reply, unused_port

pytestmark = pytest.mark.http

SECRET = "sk-test-SECRET-0123456789abcdef"
SYSTEM = "You extract durable facts about the user."
PROMPT = "Message 1: I live in Lyon and own 3 bikes."
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"facts": {"type": "array", "items": {"type": "object"}}},
    "required": ["facts"],
}
ANSWER = '{"facts": []}'


def no_wait(seconds: float) -> None:
    pass


NO_WAIT = RetryPolicy(attempts=3, base_delay=1, sleep=no_wait)


@pytest.fixture(scope="module")
def shared_server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as server:
        yield server


@pytest.fixture
def server(shared_server: ScriptedServer) -> ScriptedServer:
    """The module's server, answering a chat completion of ANSWER unless a test says else."""
    return shared_server.reset(default=openai_reply(ANSWER))


def provider(server: ScriptedServer, **options: Any) -> OpenAILLM:
    options.setdefault("api_key", SECRET)
    options.setdefault("retry", NO_WAIT)
    options.setdefault("timeout", 5.0)
    return OpenAILLM("test-model", base_url=server.url + "/v1", **options)


def recording_policy(attempts: int = 3, **options: Any) -> tuple[RetryPolicy, list[float]]:
    sleeps: list[float] = []
    return RetryPolicy(attempts=attempts, base_delay=1, sleep=sleeps.append, **options), sleeps


def without(body: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k != key}


# -- request shape -------------------------------------------------------------------------------


def test_request_is_a_chat_completion_with_prompts_schema_and_settings(
    server: ScriptedServer,
) -> None:
    """The server receives one POST to <base_url>/chat/completions carrying the model, the
    system and user prompts verbatim, temperature 0, the max_tokens budget and the JSON schema
    as `response_format` — what a schema-following server needs to constrain its answer."""
    provider(server, max_tokens=777).complete(SYSTEM, PROMPT, SCHEMA)

    [request] = server.requests
    assert request.method == "POST"
    assert request.path == "/v1/chat/completions"
    body = request.body
    assert body["model"] == "test-model"
    assert body["messages"] == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": PROMPT},
    ]
    assert body["temperature"] == 0
    assert body["max_tokens"] == 777
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == SCHEMA


def test_api_key_is_sent_as_bearer_token(server: ScriptedServer) -> None:
    """A configured key reaches the server as `Authorization: Bearer <key>`."""
    provider(server).complete(SYSTEM, PROMPT, SCHEMA)

    [request] = server.requests
    assert request.headers["authorization"] == f"Bearer {SECRET}"


def test_the_distill_key_variable_is_sent_but_openais_own_key_is_not_sent_elsewhere(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without an explicit key, DISTILL_LLM_API_KEY is sent to the configured server; the
    OPENAI_API_KEY a user has for OpenAI is not sent to some other base_url (a LAN server
    over plain HTTP, say)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-only")
    monkeypatch.delenv("DISTILL_LLM_API_KEY", raising=False)
    provider(server, api_key=None).complete(SYSTEM, PROMPT, SCHEMA)
    monkeypatch.setenv("DISTILL_LLM_API_KEY", "sk-for-this-server")
    provider(server, api_key=None).complete(SYSTEM, PROMPT, SCHEMA)

    first, second = server.requests
    assert "sk-openai-only" not in first.headers["authorization"]
    assert second.headers["authorization"] == "Bearer sk-for-this-server"


def test_credentials_in_the_base_url_are_never_shown(server: ScriptedServer) -> None:
    """A base_url with user:password@ or ?key= still works, but what is logged, shown by
    repr, or put in an error (and so in the jobs table) has them masked."""
    url = server.url.replace("http://", "http://user:hunter2@") + "/v1?key=s3cr3t"
    llm = OpenAILLM("m", base_url=url, retry=NO_WAIT, timeout=5.0)
    server.default = openai_error(400, "bad request")
    with pytest.raises(ProviderError):
        llm.complete(SYSTEM, PROMPT, SCHEMA)
    shown = repr(llm) + llm.base_url
    assert "hunter2" not in shown and "s3cr3t" not in shown


def test_local_server_without_any_key_works(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A local server (vLLM, llama.cpp, LM Studio) needs no key: with a base_url and neither a
    key nor OPENAI_API_KEY, the provider is built and a call succeeds."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    completion = provider(server, api_key=None).complete(SYSTEM, PROMPT, SCHEMA)

    assert completion.text == ANSWER
    assert len(server.requests) == 1


def test_no_key_and_no_base_url_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pointing at OpenAI itself without a key fails when the provider is built, with a
    message that says which key is missing — not on the first call in the middle of a run."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="API key"):
        OpenAILLM("gpt-4o-mini")


# -- success -------------------------------------------------------------------------------------


def test_success_returns_text_and_server_reported_usage(server: ScriptedServer) -> None:
    """The completion carries the model's text and the token counts the server reported, so
    a user's usage accounting matches the provider's bill."""
    server.default = openai_reply(ANSWER, prompt_tokens=321, completion_tokens=45)
    completion = provider(server).complete(SYSTEM, PROMPT, SCHEMA)

    assert completion.text == ANSWER
    assert completion.prompt_tokens == 321
    assert completion.completion_tokens == 45


def test_missing_usage_is_estimated(server: ScriptedServer) -> None:
    """A server that omits `usage` (some local servers do) still yields non-zero token
    counts, estimated from the prompts and the answer, so usage is never silently zero."""
    server.default = Reply(200, without(openai_reply(ANSWER).body, "usage"))
    completion = provider(server).complete(SYSTEM, PROMPT, SCHEMA)

    assert completion.text == ANSWER
    assert completion.prompt_tokens > 0
    assert completion.completion_tokens > 0


# -- structured output and parameter adaptation -------------------------------------------------


def test_json_schema_refusal_falls_back_to_json_object_and_sticks(server: ScriptedServer) -> None:
    """A server that refuses `json_schema` with a 400 naming it is asked again in JSON mode,
    the call succeeds, and later calls go straight to JSON mode (no wasted 400 each time)."""
    server.script(openai_error(400, "response_format type 'json_schema' is not supported"))
    llm = provider(server)
    first = llm.complete(SYSTEM, PROMPT, SCHEMA)
    second = llm.complete(SYSTEM, PROMPT, SCHEMA)

    assert first.text == ANSWER and second.text == ANSWER
    formats = [r.body.get("response_format") for r in server.requests]
    assert len(formats) == 3
    assert formats[0]["type"] == "json_schema"
    assert formats[1:] == [{"type": "json_object"}, {"type": "json_object"}]


def test_second_response_format_refusal_falls_back_to_prompt_only(server: ScriptedServer) -> None:
    """A server that refuses JSON mode too is asked with no `response_format` at all, the
    answer is still returned (the prompt alone asks for JSON), and that form is kept."""
    server.script(
        openai_error(400, "response_format json_schema is not supported"),
        openai_error(400, "Invalid value for response_format: json_object"),
    )
    llm = provider(server)
    completion = llm.complete(SYSTEM, PROMPT, SCHEMA)
    llm.complete(SYSTEM, PROMPT, SCHEMA)

    assert completion.text == ANSWER
    requests = server.requests
    assert len(requests) == 4
    assert requests[0].body["response_format"]["type"] == "json_schema"
    assert requests[1].body["response_format"] == {"type": "json_object"}
    assert "response_format" not in requests[2].body
    assert "response_format" not in requests[3].body


def test_explicit_json_schema_is_not_downgraded(server: ScriptedServer) -> None:
    """With `structured="json_schema"` the user demanded schema-constrained output: a 400
    refusing it is reported as a ProviderError with the server's message, and nothing weaker
    is tried."""
    server.script(openai_error(400, "response_format json_schema is not supported"))
    llm = provider(server, structured="json_schema")
    with pytest.raises(ProviderError, match="json_schema is not supported") as caught:
        llm.complete(SYSTEM, PROMPT, SCHEMA)

    assert not isinstance(caught.value, TransientProviderError)
    assert len(server.requests) == 1


def test_max_tokens_refusal_retries_with_max_completion_tokens(server: ScriptedServer) -> None:
    """Newer OpenAI models refuse `max_tokens`; on a 400 naming it the same budget is sent as
    `max_completion_tokens` and the call succeeds."""
    server.script(
        openai_error(
            400,
            "Unsupported parameter: 'max_tokens' is not supported with this model. "
            "Use 'max_completion_tokens' instead.",
        )
    )
    completion = provider(server, max_tokens=900).complete(SYSTEM, PROMPT, SCHEMA)

    assert completion.text == ANSWER
    first, second = server.requests
    assert first.body["max_tokens"] == 900
    assert second.body["max_completion_tokens"] == 900
    assert "max_tokens" not in second.body


# -- deterministic refusals ----------------------------------------------------------------------


def test_unauthorized_is_a_provider_error_that_names_the_key_but_never_shows_it(
    server: ScriptedServer,
) -> None:
    """A 401 is a configuration problem: not retried, reported as a ProviderError that points
    at the API key — and neither the error nor the provider's repr ever shows the key."""
    server.default = openai_error(401, "Incorrect API key provided.")
    policy, sleeps = recording_policy()
    llm = provider(server, retry=policy)
    with pytest.raises(ProviderError) as caught:
        llm.complete(SYSTEM, PROMPT, SCHEMA)

    error = caught.value
    assert not isinstance(error, TransientProviderError)
    assert "API key" in str(error)
    assert SECRET not in str(error)
    assert SECRET not in repr(error)
    assert SECRET not in repr(llm)
    assert SECRET not in str(llm)
    assert len(server.requests) == 1
    assert sleeps == []


def test_not_found_hints_at_the_model_name(server: ScriptedServer) -> None:
    """A 404 (usually a model the server does not serve) is a ProviderError that keeps the
    server's message and asks whether the model name is right; it is not retried."""
    server.default = openai_error(404, "The model `test-model` does not exist")
    with pytest.raises(ProviderError, match="model name") as caught:
        provider(server).complete(SYSTEM, PROMPT, SCHEMA)

    assert not isinstance(caught.value, TransientProviderError)
    assert "does not exist" in str(caught.value)
    assert len(server.requests) == 1


def test_other_bad_request_fails_at_once_with_the_server_message(server: ScriptedServer) -> None:
    """A 400 that names nothing the provider can adapt is a deterministic refusal: exactly
    one request, no wait, and the error carries the server's own explanation."""
    server.default = openai_error(400, "messages[1].role: unknown role 'robot'")
    policy, sleeps = recording_policy()
    with pytest.raises(ProviderError, match="unknown role 'robot'") as caught:
        provider(server, retry=policy).complete(SYSTEM, PROMPT, SCHEMA)

    assert not isinstance(caught.value, TransientProviderError)
    assert len(server.requests) == 1
    assert sleeps == []


# -- transient failures --------------------------------------------------------------------------


@pytest.mark.parametrize("status", [408, 500, 503])
def test_transient_status_is_retried_with_backoff_until_success(
    server: ScriptedServer, status: int
) -> None:
    """A timeout or server error is retried after growing waits (about 1 s, then about 2 s)
    and a later success is returned as if nothing happened."""
    server.script(openai_error(status, "try again"), openai_error(status, "try again"))
    policy, sleeps = recording_policy(attempts=3)
    completion = provider(server, retry=policy).complete(SYSTEM, PROMPT, SCHEMA)

    assert completion.text == ANSWER
    assert len(server.requests) == 3
    assert len(sleeps) == 2
    assert 0.75 <= sleeps[0] <= 1.25
    assert 1.5 <= sleeps[1] <= 2.5


@pytest.mark.parametrize("status", [408, 500, 503])
def test_persistent_transient_status_raises_after_all_attempts(
    server: ScriptedServer, status: int
) -> None:
    """When every attempt fails transiently, the error is a TransientProviderError (so the
    engine fails the job for a later retry, events intact) after exactly `attempts` requests."""
    server.default = openai_error(status, "overloaded")
    policy, sleeps = recording_policy(attempts=3)
    with pytest.raises(TransientProviderError, match=str(status)) as caught:
        provider(server, retry=policy).complete(SYSTEM, PROMPT, SCHEMA)

    assert not isinstance(caught.value, RateLimited)
    assert len(server.requests) == 3
    assert len(sleeps) == 2


def test_rate_limit_waits_as_long_as_retry_after_says(server: ScriptedServer) -> None:
    """A 429 with `Retry-After: 7` waits 7 s before the next attempt, which succeeds."""
    server.script(openai_error(429, "Rate limit reached", {"Retry-After": "7"}))
    policy, sleeps = recording_policy(attempts=3)
    completion = provider(server, retry=policy).complete(SYSTEM, PROMPT, SCHEMA)

    assert completion.text == ANSWER
    assert len(server.requests) == 2
    assert sleeps == [7]


def test_retry_after_is_capped_by_max_delay(server: ScriptedServer) -> None:
    """A provider cannot stall a run beyond the policy's `max_delay`: `Retry-After: 7` with
    max_delay=5 waits 5 s."""
    server.script(openai_error(429, "Rate limit reached", {"Retry-After": "7"}))
    policy, sleeps = recording_policy(attempts=3, max_delay=5)
    provider(server, retry=policy).complete(SYSTEM, PROMPT, SCHEMA)

    assert sleeps == [5]


def test_persistent_rate_limit_raises_rate_limited(server: ScriptedServer) -> None:
    """A 429 that persists through every attempt raises RateLimited, which stops the run
    (SCENARIOS G41), after exactly `attempts` requests."""
    server.default = openai_error(429, "Rate limit reached", {"Retry-After": "0"})
    policy, _ = recording_policy(attempts=3)
    with pytest.raises(RateLimited, match="429"):
        provider(server, retry=policy).complete(SYSTEM, PROMPT, SCHEMA)

    assert len(server.requests) == 3


# -- malformed answers ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param(
            Reply(
                200, "<html><body><h1>502 Bad Gateway</h1></body></html>", content_type="text/html"
            ),
            id="html",
        ),
        pytest.param(
            Reply(200, "upstream connect error", content_type="text/plain"), id="plain-text"
        ),
        pytest.param(
            Reply(200, "upstream connect error", content_type="application/json"),
            id="text-labelled-json",
        ),
    ],
)
def test_non_json_success_body_is_a_malformed_answer(server: ScriptedServer, reply: Reply) -> None:
    """A 200 whose body is not a chat completion (a proxy's HTML page, plain text) is a
    MalformedAnswer — a bad answer the engine counts as such — not an error from inside the
    SDK (DESIGN: SDK errors are translated at the adapter boundary)."""
    server.default = reply
    with pytest.raises(MalformedAnswer):
        provider(server).complete(SYSTEM, PROMPT, SCHEMA)


def test_empty_choices_is_a_malformed_answer(server: ScriptedServer) -> None:
    """A 200 JSON completion with no choices carries no answer: MalformedAnswer."""
    server.default = Reply(200, {**openai_reply(ANSWER).body, "choices": []})
    with pytest.raises(MalformedAnswer):
        provider(server).complete(SYSTEM, PROMPT, SCHEMA)


def test_answer_cut_at_the_token_limit_is_marked_truncated_and_counted(
    server: ScriptedServer,
) -> None:
    """An answer stopped by the token budget (`finish_reason: length`) is truncated JSON: the
    completion says so (the extractor asks again for fewer events) and keeps the tokens the
    server billed; the provider does not retry the same cut."""
    server.default = openai_reply('{"facts": [{"pred', finish_reason="length", completion_tokens=64)
    answer = provider(server, max_tokens=64).complete(SYSTEM, PROMPT, SCHEMA)
    assert answer.truncated
    assert answer.completion_tokens == 64
    assert len(server.requests) == 1


def test_a_key_echoed_by_the_server_is_masked_in_the_error(server: ScriptedServer) -> None:
    """Some compatible servers and proxies echo the key they refused; the error a user sees
    (and logs) must not carry it."""
    server.default = openai_error(401, "Incorrect API key provided: sk-echo-SECRET-123")
    llm = OpenAILLM("m", base_url=server.url + "/v1", api_key="sk-echo-SECRET-123", retry=NO_WAIT)
    with pytest.raises(ProviderError) as caught:
        llm.complete(SYSTEM, PROMPT, SCHEMA)
    assert "SECRET" not in str(caught.value)


# -- unreachable servers -------------------------------------------------------------------------


def test_slow_server_times_out_within_a_bounded_time(server: ScriptedServer) -> None:
    """A hanging server cannot hang a run: with timeout=0.3 and two attempts against a server
    that takes 2 s, a TransientProviderError comes back well before the server would answer,
    after two requests."""
    server.default = Reply(200, openai_reply(ANSWER).body, delay=2.0)
    llm = provider(server, timeout=0.3, retry=RetryPolicy(attempts=2, sleep=no_wait))
    started = time.monotonic()
    with pytest.raises(TransientProviderError):
        llm.complete(SYSTEM, PROMPT, SCHEMA)
    elapsed = time.monotonic() - started

    assert elapsed < 1.8
    assert len(server.requests) == 2


def test_connection_refused_is_transient() -> None:
    """Nothing listening at the base_url (a local server not started yet) is a
    TransientProviderError naming the address, so the job is retried later."""
    port = unused_port()
    llm = OpenAILLM(
        "test-model",
        base_url=f"http://127.0.0.1:{port}/v1",
        api_key=SECRET,
        timeout=2.0,
        retry=RetryPolicy(attempts=2, sleep=no_wait),
    )
    with pytest.raises(TransientProviderError) as caught:
        llm.complete(SYSTEM, PROMPT, SCHEMA)

    assert not isinstance(caught.value, RateLimited)
    assert f"127.0.0.1:{port}" in str(caught.value)
    assert SECRET not in str(caught.value)


# -- building by name ----------------------------------------------------------------------------


def test_make_llm_builds_a_working_openai_provider(server: ScriptedServer) -> None:
    """`make_llm("openai", ...)` — what configuration by name resolves to — gives a provider
    that talks to the given server with the given key and model, identified as openai/<model>."""
    llm = make_llm("openai", model="qwen2.5-7b", base_url=server.url + "/v1", api_key=SECRET)
    assert llm is not None
    completion = llm.complete(SYSTEM, PROMPT, SCHEMA)

    assert llm.model_id == "openai/qwen2.5-7b"
    assert completion.text == ANSWER
    [request] = server.requests
    assert request.body["model"] == "qwen2.5-7b"
    assert request.headers["authorization"] == f"Bearer {SECRET}"


def test_make_llm_none_and_unknown_provider() -> None:
    """`none` (or no provider) means no LLM; an unknown name is a ConfigurationError that
    lists the valid choices."""
    assert make_llm("none") is None
    assert make_llm(None) is None
    with pytest.raises(ConfigurationError, match="openai"):
        make_llm("gpt-magic")


def test_missing_sdk_raises_missing_dependency_with_install_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without the optional OpenAI SDK installed, building the provider fails with
    MissingDependency (a ConfigurationError) whose message is the pip line that fixes it."""
    monkeypatch.setitem(sys.modules, "openai", None)
    with pytest.raises(MissingDependency) as caught:
        OpenAILLM("test-model", base_url="http://127.0.0.1:1/v1", api_key=SECRET)

    assert "pip install 'distill[openai]'" in str(caught.value)
    assert isinstance(caught.value, ConfigurationError)
