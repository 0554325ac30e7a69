"""AnthropicLLM against a real HTTP server speaking Anthropic's `/v1/messages` protocol.

What a user relies on: the candidate schema is enforced through a forced `record_facts` tool
call and its input comes back as JSON text, usage is reported, a cut answer is flagged as
cut, an unreadable one is a MalformedAnswer (the job fails, events stay intact), a bad key
fails at once with advice and without printing the key, overload and rate limits are retried
as the provider asks, and a hung endpoint cannot block a run forever.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator

import pytest

from distill import Memory
from distill.adapters.llm.anthropic import AnthropicLLM
from distill.adapters.llm.calls import RetryPolicy
from distill.core.extraction import CANDIDATE_SCHEMA
from distill.errors import (
    ConfigurationError,
    MalformedAnswer,
    MissingDependency,
    ProviderError,
    RateLimited,
    TransientProviderError,
)
from tests.llm_server import (
    RecordingSleep,
    Reply,
    ScriptedServer,
    anthropic_error,
    anthropic_reply,
    unused_port,
)

pytestmark = pytest.mark.http

KEY = "sk-test-secret"
SYSTEM = "You extract durable facts."
PROMPT = "Message 1: I live in Lyon"
LYON = {
    "facts": [
        {
            "message": 1,
            "predicate": "home_city",
            "value": {"city": "Lyon"},
            "action": "create",
            "kind": "state",
            "confidence": 0.9,
            "evidence_span": "I live in Lyon",
        }
    ]
}


@pytest.fixture(scope="module")
def running_server() -> Iterator[ScriptedServer]:
    # one server per module: stopping one takes half a second (its poll interval)
    with ScriptedServer() as running:
        yield running


@pytest.fixture
def server(running_server: ScriptedServer) -> ScriptedServer:
    """The module's server, reset: no recorded requests, nothing scripted, a success default."""
    return running_server.reset(default=anthropic_reply({"facts": []}))


def messages(
    server: ScriptedServer,
    sleep: RecordingSleep | None = None,
    attempts: int = 3,
    **options: object,
) -> AnthropicLLM:
    options.setdefault("model", "claude-test")
    options.setdefault("api_key", KEY)
    options.setdefault("timeout", 5.0)
    return AnthropicLLM(
        base_url=server.url,
        retry=RetryPolicy(attempts=attempts, sleep=sleep or RecordingSleep()),
        **options,  # type: ignore[arg-type]
    )


# -- the request ---------------------------------------------------------------------------------


def test_request_forces_the_record_facts_tool_with_the_schema(server: ScriptedServer) -> None:
    """The schema is enforced by a forced tool call: one tool `record_facts` whose
    input_schema is the candidate schema, tool_choice naming it; system and prompt verbatim;
    max_tokens bounds the answer."""
    messages(server, model="claude-haiku-4-5", max_tokens=777).complete(
        SYSTEM, PROMPT, CANDIDATE_SCHEMA
    )

    [request] = server.requests
    assert request.method == "POST"
    assert request.path == "/v1/messages"
    body = request.body
    assert body["model"] == "claude-haiku-4-5"
    assert body["max_tokens"] == 777
    assert body["system"] == SYSTEM
    assert body["messages"] == [{"role": "user", "content": PROMPT}]
    [tool] = body["tools"]
    assert tool["name"] == "record_facts"
    assert tool["input_schema"] == CANDIDATE_SCHEMA
    assert body["tool_choice"] == {"type": "tool", "name": "record_facts"}


def test_api_key_and_api_version_are_sent(server: ScriptedServer) -> None:
    """The key authenticates the call (this SDK sends `authorization: Bearer`; the classic
    header is `x-api-key`) and an `anthropic-version` header is present."""
    messages(server).complete(SYSTEM, PROMPT, CANDIDATE_SCHEMA)

    headers = server.requests[0].headers
    assert headers.get("x-api-key") == KEY or headers.get("authorization") == f"Bearer {KEY}"
    assert headers.get("anthropic-version")


def test_key_is_read_from_anthropic_api_key(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without an explicit key, ANTHROPIC_API_KEY is used (the provider's own variable)."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-from-env")

    messages(server, api_key=None).complete(SYSTEM, PROMPT, CANDIDATE_SCHEMA)

    headers = server.requests[0].headers
    assert (
        headers.get("x-api-key") == "sk-from-env"
        or headers.get("authorization") == "Bearer sk-from-env"
    )


def test_no_key_anywhere_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """With no key at all the provider refuses to be built, naming the variables to set,
    instead of failing every job later."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)

    with pytest.raises(ConfigurationError, match="ANTHROPIC_API_KEY"):
        AnthropicLLM("claude-test", api_key=None)


# -- the answer ----------------------------------------------------------------------------------


def test_tool_call_input_is_returned_as_json_with_usage(server: ScriptedServer) -> None:
    """The `record_facts` input object is the answer: its JSON is returned for the parser,
    with Anthropic's input/output token counts as usage."""
    server.script(anthropic_reply(LYON, input_tokens=1500, output_tokens=85))

    completion = messages(server).complete(SYSTEM, PROMPT, CANDIDATE_SCHEMA)

    assert json.loads(completion.text) == LYON
    assert completion.prompt_tokens == 1500
    assert completion.completion_tokens == 85


def test_cached_input_tokens_count_as_prompt_tokens(server: ScriptedServer) -> None:
    """With prompt caching Anthropic reports cached input separately; all input the call
    consumed is counted, so usage does not under-report what was spent."""
    body = anthropic_reply(LYON).body
    body["usage"] = {
        "input_tokens": 10,
        "cache_read_input_tokens": 1000,
        "cache_creation_input_tokens": 200,
        "output_tokens": 30,
    }
    server.script(Reply(200, body))

    completion = messages(server).complete(SYSTEM, PROMPT, CANDIDATE_SCHEMA)

    assert completion.prompt_tokens == 1210
    assert completion.completion_tokens == 30


def test_text_only_answer_is_returned_for_the_parser_to_judge(server: ScriptedServer) -> None:
    """A model that answers in text instead of calling the tool: the text is passed on (the
    parser accepts it if it is valid JSON, rejects it otherwise), not silently dropped."""
    server.script(anthropic_reply(text='{"facts": []}', stop_reason="end_turn"))

    completion = messages(server).complete(SYSTEM, PROMPT, CANDIDATE_SCHEMA)

    assert completion.text == '{"facts": []}'


def test_answer_cut_at_max_tokens_is_marked_truncated(server: ScriptedServer) -> None:
    """`stop_reason: "max_tokens"` means the tool input may be partial: the completion says
    so (the extractor then asks again for fewer events), its paid tokens are counted, and
    the provider does not retry the same cut."""
    server.script(anthropic_reply({"facts": []}, stop_reason="max_tokens", output_tokens=256))
    sleep = RecordingSleep()

    answer = messages(server, sleep, max_tokens=256).complete(SYSTEM, PROMPT, CANDIDATE_SCHEMA)

    assert answer.truncated
    assert answer.completion_tokens == 256
    assert len(server.requests) == 1
    assert sleep.waits == []


def test_html_body_is_a_malformed_answer(server: ScriptedServer) -> None:
    """A gateway's HTML page with status 200 is a MalformedAnswer, not a crash."""
    server.script(Reply(200, "<html><body>Welcome</body></html>", content_type="text/html"))

    with pytest.raises(MalformedAnswer):
        messages(server).complete(SYSTEM, PROMPT, CANDIDATE_SCHEMA)


def test_json_of_another_shape_is_a_malformed_answer(server: ScriptedServer) -> None:
    """A 200 JSON body that is not a Message (a misconfigured proxy) is a MalformedAnswer."""
    server.script(Reply(200, {"status": "ok"}))

    with pytest.raises(MalformedAnswer):
        messages(server).complete(SYSTEM, PROMPT, CANDIDATE_SCHEMA)


# -- deterministic refusals: not retried ---------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "kind"), [(401, "authentication_error"), (403, "permission_error")]
)
def test_bad_key_fails_at_once_with_advice_and_never_shows_the_key(
    server: ScriptedServer, status: int, kind: str
) -> None:
    """A rejected key is not retried; the error tells the user to check the API key, and
    neither the error nor the provider's repr (both end up in logs) contains the key."""
    server.script(anthropic_error(status, kind, "invalid x-api-key"))
    sleep = RecordingSleep()
    llm = messages(server, sleep)

    with pytest.raises(ProviderError) as raised:
        llm.complete(SYSTEM, PROMPT, CANDIDATE_SCHEMA)

    assert not isinstance(raised.value, TransientProviderError)
    assert "API key" in str(raised.value)
    assert KEY not in str(raised.value)
    assert KEY not in repr(llm)
    assert len(server.requests) == 1
    assert sleep.waits == []


def test_bad_request_fails_once_without_retry(server: ScriptedServer) -> None:
    """400 is deterministic: retrying would fail the same way, so one request only, and the
    server's message reaches the user."""
    server.script(anthropic_error(400, "invalid_request_error", "tools.0.input_schema: invalid"))
    sleep = RecordingSleep()

    with pytest.raises(ProviderError) as raised:
        messages(server, sleep).complete(SYSTEM, PROMPT, CANDIDATE_SCHEMA)

    assert not isinstance(raised.value, TransientProviderError)
    assert "input_schema: invalid" in str(raised.value)
    assert len(server.requests) == 1
    assert sleep.waits == []


def test_unknown_model_is_not_retried_and_hints_at_the_name(server: ScriptedServer) -> None:
    """404 `not_found_error` for a misspelt model fails at once, hinting at the model name."""
    server.script(anthropic_error(404, "not_found_error", "model: claude-nope"))

    with pytest.raises(ProviderError) as raised:
        messages(server, model="claude-nope").complete(SYSTEM, PROMPT, CANDIDATE_SCHEMA)

    assert not isinstance(raised.value, TransientProviderError)
    assert "model name" in str(raised.value)
    assert len(server.requests) == 1


# -- transient failures: retried -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "kind"),
    [(529, "overloaded_error"), (500, "api_error"), (408, "timeout_error")],
    ids=["529", "500", "408"],
)
def test_overload_and_server_error_are_retried_then_succeed(
    server: ScriptedServer, status: int, kind: str
) -> None:
    """529 overloaded and 5xx are transient: retried after a wait, and the retried answer
    is returned."""
    server.script(anthropic_error(status, kind, "Overloaded"), anthropic_reply(LYON))
    sleep = RecordingSleep()

    completion = messages(server, sleep).complete(SYSTEM, PROMPT, CANDIDATE_SCHEMA)

    assert json.loads(completion.text) == LYON
    assert len(server.requests) == 2
    assert len(sleep.waits) == 1 and sleep.waits[0] > 0


def test_rate_limit_waits_as_long_as_retry_after_asks(server: ScriptedServer) -> None:
    """A 429 with `retry-after: 3` is retried after exactly 3 s, as the provider asked."""
    server.script(
        anthropic_error(429, "rate_limit_error", "slow down", {"retry-after": "3"}),
        anthropic_reply(LYON),
    )
    sleep = RecordingSleep()

    completion = messages(server, sleep).complete(SYSTEM, PROMPT, CANDIDATE_SCHEMA)

    assert json.loads(completion.text) == LYON
    assert sleep.waits == [3.0]


def test_persistent_rate_limit_raises_rate_limited_after_the_attempts(
    server: ScriptedServer,
) -> None:
    """A 429 that does not clear becomes RateLimited after `attempts` requests, which stops
    the run (SCENARIOS C)."""
    server.default = anthropic_error(429, "rate_limit_error", "slow down", {"retry-after": "1"})
    sleep = RecordingSleep()

    with pytest.raises(RateLimited):
        messages(server, sleep, attempts=3).complete(SYSTEM, PROMPT, CANDIDATE_SCHEMA)

    assert len(server.requests) == 3
    assert sleep.waits == [1.0, 1.0]


# -- an unreachable or hung endpoint -----------------------------------------------------------


def test_slow_server_times_out_in_bounded_time(server: ScriptedServer) -> None:
    """A hung endpoint cannot block consolidation: each try ends at `timeout`, and after the
    attempts a TransientProviderError is raised (the job fails, events intact)."""
    server.default = Reply(200, anthropic_reply(LYON).body, delay=2.0)
    started = time.monotonic()

    with pytest.raises(TransientProviderError):
        messages(server, attempts=2, timeout=0.3).complete(SYSTEM, PROMPT, CANDIDATE_SCHEMA)

    assert time.monotonic() - started < 1.8
    assert len(server.requests) == 2


def test_nothing_listening_is_transient() -> None:
    """An unreachable endpoint (proxy down) is a transient error naming where it called."""
    url = f"http://127.0.0.1:{unused_port()}"
    llm = AnthropicLLM(
        "claude-test",
        base_url=url,
        api_key=KEY,
        timeout=2.0,
        retry=RetryPolicy(attempts=2, sleep=RecordingSleep()),
    )

    with pytest.raises(TransientProviderError) as raised:
        llm.complete(SYSTEM, PROMPT, CANDIDATE_SCHEMA)

    assert "127.0.0.1" in str(raised.value)
    assert KEY not in str(raised.value)


# -- through Memory ------------------------------------------------------------------------------


def test_memory_consolidates_through_anthropic_and_reports_its_usage(
    server: ScriptedServer, make_memory: Callable[..., Memory]
) -> None:
    """End to end: `Memory(llm=AnthropicLLM(...))` turns an event into a fact from the
    tool call's input, and the report carries Anthropic's own token counts."""
    server.script(anthropic_reply(LYON, input_tokens=900, output_tokens=60))
    mem = make_memory(llm=messages(server), extractor="llm")
    mem.add_event(subject="alice", text="I live in Lyon")

    report = mem.consolidate()

    assert report.created == 1 and report.jobs_done == 1
    assert [f.value for f in mem.facts(subject="alice")] == [{"city": "Lyon"}]
    assert (report.llm_calls, report.prompt_tokens, report.completion_tokens) == (1, 900, 60)
    assert server.requests[0].body["tool_choice"] == {"type": "tool", "name": "record_facts"}


# -- installation --------------------------------------------------------------------------------


def test_missing_sdk_names_the_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the Anthropic SDK, building the provider says which extra to install."""
    monkeypatch.setitem(sys.modules, "anthropic", None)

    with pytest.raises(MissingDependency, match=r"pip install 'distill\[anthropic\]'"):
        AnthropicLLM("claude-test", api_key=KEY)
