"""OllamaLLM against a real HTTP server speaking Ollama's `/api/chat` protocol.

What a user running a local model relies on: the schema reaches Ollama's sampler (`format`),
answers and token counts come back, a missing model says `ollama pull`, a stopped Ollama says
`ollama serve`, transient failures are retried and deterministic ones are not, a cut answer
is flagged as cut (with its tokens counted), an unreadable one is a MalformedAnswer (the job
fails, events stay intact), and a hung server cannot block a run forever.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import sys
import time
import warnings
from collections.abc import Callable, Iterator

import pytest

from distill import Memory
from distill.adapters.llm.calls import RetryPolicy
from distill.adapters.llm.ollama import OllamaLLM
from distill.core.extraction import CANDIDATE_SCHEMA
from distill.errors import (
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
    ollama_error,
    ollama_reply,
    unused_port,
)

pytestmark = pytest.mark.http

SYSTEM = "You extract durable facts."
PROMPT = "Message 1: I live in Lyon"
ANSWER = json.dumps({"facts": []})


@pytest.fixture(scope="module")
def running_server() -> Iterator[ScriptedServer]:
    # one server per module: stopping one takes half a second (its poll interval)
    with ScriptedServer() as running:
        yield running


@pytest.fixture
def server(running_server: ScriptedServer) -> ScriptedServer:
    """The module's server, reset: no recorded requests, nothing scripted, a success default."""
    return running_server.reset(default=ollama_reply(ANSWER))


def chat(
    server: ScriptedServer,
    sleep: RecordingSleep | None = None,
    attempts: int = 3,
    **options: object,
) -> OllamaLLM:
    options.setdefault("model", "qwen2.5:7b")
    options.setdefault("timeout", 5.0)
    return OllamaLLM(
        base_url=server.url,
        retry=RetryPolicy(attempts=attempts, sleep=sleep or RecordingSleep()),
        **options,  # type: ignore[arg-type]
    )


# -- the request ---------------------------------------------------------------------------------


def test_request_carries_model_messages_schema_and_sampling_options(
    server: ScriptedServer,
) -> None:
    """The schema goes in `format`, so Ollama constrains sampling to it; the prompt is sent
    verbatim as [system, user]; temperature 0 and num_predict = max_tokens bound the answer."""
    chat(server, model="qwen2.5:7b", max_tokens=321).complete(SYSTEM, PROMPT, CANDIDATE_SCHEMA)

    [request] = server.requests
    assert request.method == "POST"
    assert request.path == "/api/chat"
    body = request.body
    assert body["model"] == "qwen2.5:7b"
    assert body["stream"] is False
    assert body["messages"] == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": PROMPT},
    ]
    assert body["format"] == CANDIDATE_SCHEMA
    assert body["options"]["temperature"] == 0
    assert body["options"]["num_predict"] == 321


def test_model_defaults_to_llama32(server: ScriptedServer) -> None:
    """`make_llm("ollama")` with no model uses llama3.2, the documented default."""
    llm = OllamaLLM(base_url=server.url, retry=RetryPolicy(sleep=RecordingSleep()))

    llm.complete(SYSTEM, PROMPT, CANDIDATE_SCHEMA)

    assert server.requests[0].body["model"] == "llama3.2"
    assert llm.model_id == "ollama/llama3.2"


def test_base_url_defaults_to_local_ollama() -> None:
    """Without a base_url the provider talks to Ollama's default port on localhost
    (no request is made by building it)."""
    assert OllamaLLM().base_url == "http://localhost:11434"


def test_api_key_is_sent_as_bearer_token(server: ScriptedServer) -> None:
    """An Ollama behind an authenticating proxy gets the key as `Authorization: Bearer`."""
    chat(server, api_key="proxy-token").complete(SYSTEM, PROMPT, CANDIDATE_SCHEMA)

    assert server.requests[0].headers["authorization"] == "Bearer proxy-token"


def test_without_api_key_no_authorization_header_is_sent(server: ScriptedServer) -> None:
    """A plain local Ollama gets no credentials at all."""
    chat(server).complete(SYSTEM, PROMPT, CANDIDATE_SCHEMA)

    assert "authorization" not in server.requests[0].headers


def test_repr_never_shows_the_api_key(server: ScriptedServer) -> None:
    """Logging the provider (repr) must not leak the proxy token."""
    llm = chat(server, api_key="proxy-token-secret")

    assert "proxy-token-secret" not in repr(llm)
    assert server.url in repr(llm)


# -- the answer ----------------------------------------------------------------------------------


def test_answer_text_and_reported_token_counts_are_returned(server: ScriptedServer) -> None:
    """The model's content is returned as is, with Ollama's prompt_eval_count / eval_count as
    the usage that `Report.prompt_tokens` / `completion_tokens` add up."""
    server.script(ollama_reply('{"facts": [1]}', prompt_eval_count=1234, eval_count=56))

    completion = chat(server).complete(SYSTEM, PROMPT, CANDIDATE_SCHEMA)

    assert completion.text == '{"facts": [1]}'
    assert completion.prompt_tokens == 1234
    assert completion.completion_tokens == 56


def test_missing_token_counts_are_estimated_not_zero(server: ScriptedServer) -> None:
    """Ollama omits the counts when it answers from its prompt cache; usage must still be a
    positive estimate rather than 0, so token accounting does not silently drop calls."""
    server.script(
        Reply(
            200,
            {
                "model": "qwen2.5:7b",
                "created_at": "2024-05-01T10:00:00Z",
                "message": {"role": "assistant", "content": ANSWER},
                "done": True,
                "done_reason": "stop",
            },
        )
    )

    completion = chat(server).complete(SYSTEM, PROMPT, CANDIDATE_SCHEMA)

    assert completion.text == ANSWER
    assert completion.prompt_tokens > 0
    assert completion.completion_tokens > 0


# -- deterministic refusals: not retried ---------------------------------------------------------


def test_missing_model_says_how_to_pull_it_and_is_not_retried(server: ScriptedServer) -> None:
    """404 `model not found` is a setup mistake: fail at once with the fix (`ollama pull`)."""
    server.script(ollama_error(404, "model 'qwen2.5:7b' not found, try pulling it first"))
    sleep = RecordingSleep()

    with pytest.raises(ProviderError) as raised:
        chat(server, sleep).complete(SYSTEM, PROMPT, CANDIDATE_SCHEMA)

    assert not isinstance(raised.value, TransientProviderError)
    assert "ollama pull qwen2.5:7b" in str(raised.value)
    assert len(server.requests) == 1
    assert sleep.waits == []


def test_bad_request_fails_once_without_retry(server: ScriptedServer) -> None:
    """400 is deterministic: retrying would fail the same way, so one request only."""
    server.script(ollama_error(400, "invalid format: schema is not valid"))
    sleep = RecordingSleep()

    with pytest.raises(ProviderError) as raised:
        chat(server, sleep).complete(SYSTEM, PROMPT, CANDIDATE_SCHEMA)

    assert not isinstance(raised.value, TransientProviderError)
    assert "invalid format" in str(raised.value)
    assert len(server.requests) == 1
    assert sleep.waits == []


# -- transient failures: retried -----------------------------------------------------------------


@pytest.mark.parametrize("status", [500, 503, 408])
def test_transient_status_is_retried_then_succeeds(server: ScriptedServer, status: int) -> None:
    """A 5xx or 408 (model still loading, server busy) is retried after a wait, and the
    retried answer is returned."""
    server.script(ollama_error(status, "busy"), ollama_reply('{"facts": ["ok"]}'))
    sleep = RecordingSleep()

    completion = chat(server, sleep).complete(SYSTEM, PROMPT, CANDIDATE_SCHEMA)

    assert completion.text == '{"facts": ["ok"]}'
    assert len(server.requests) == 2
    assert len(sleep.waits) == 1 and sleep.waits[0] > 0


def test_persistent_server_error_gives_up_after_the_attempts(server: ScriptedServer) -> None:
    """Retries are bounded: after `attempts` tries the transient error reaches the engine
    (which fails the job and keeps the events)."""
    server.default = ollama_error(500, "llama runner process has terminated")
    sleep = RecordingSleep()

    with pytest.raises(TransientProviderError, match="llama runner"):
        chat(server, sleep, attempts=3).complete(SYSTEM, PROMPT, CANDIDATE_SCHEMA)

    assert len(server.requests) == 3
    assert len(sleep.waits) == 2


def test_persistent_rate_limit_raises_rate_limited_after_the_attempts(
    server: ScriptedServer,
) -> None:
    """A 429 that does not clear becomes RateLimited, which stops the run (SCENARIOS C)."""
    server.default = ollama_error(429, "too many requests")
    sleep = RecordingSleep()

    with pytest.raises(RateLimited):
        chat(server, sleep, attempts=4).complete(SYSTEM, PROMPT, CANDIDATE_SCHEMA)

    assert len(server.requests) == 4
    assert len(sleep.waits) == 3


# -- malformed answers ---------------------------------------------------------------------------


def test_non_json_body_is_a_malformed_answer(server: ScriptedServer) -> None:
    """A proxy's HTML page instead of Ollama's JSON is a MalformedAnswer, not a crash."""
    server.script(Reply(200, "<html><body>Bad gateway</body></html>", content_type="text/html"))

    with pytest.raises(MalformedAnswer):
        chat(server).complete(SYSTEM, PROMPT, CANDIDATE_SCHEMA)


def test_answer_cut_at_max_tokens_is_marked_truncated(server: ScriptedServer) -> None:
    """`done_reason: "length"` means the JSON was cut: the completion says so (the extractor
    then asks again for fewer events), its tokens are still counted (they were paid for),
    and the provider does not retry the same cut."""
    server.script(
        ollama_reply('{"facts": [{"predicate": "home', done_reason="length", eval_count=64)
    )

    answer = chat(server, max_tokens=64).complete(SYSTEM, PROMPT, CANDIDATE_SCHEMA)

    assert answer.truncated
    assert answer.completion_tokens == 64
    assert len(server.requests) == 1


# -- an unreachable or hung Ollama -------------------------------------------------------------


def test_slow_server_times_out_in_bounded_time(server: ScriptedServer) -> None:
    """A hung Ollama cannot block consolidation: each try ends at `timeout`, and after the
    attempts a TransientProviderError is raised (the job fails, events intact)."""
    server.default = dataclasses.replace(ollama_reply(ANSWER), delay=2.0)
    started = time.monotonic()

    with pytest.raises(TransientProviderError):
        chat(server, attempts=2, timeout=0.3).complete(SYSTEM, PROMPT, CANDIDATE_SCHEMA)

    assert time.monotonic() - started < 1.8
    assert len(server.requests) == 2


def test_nothing_listening_says_to_start_ollama() -> None:
    """With Ollama not running, the error is transient and tells the user to run
    `ollama serve`."""
    port = unused_port()
    llm = OllamaLLM(
        "llama3.2",
        base_url=f"http://127.0.0.1:{port}",
        timeout=2.0,
        retry=RetryPolicy(attempts=2, sleep=RecordingSleep()),
    )

    with pytest.raises(TransientProviderError) as raised:
        llm.complete(SYSTEM, PROMPT, CANDIDATE_SCHEMA)

    assert "ollama serve" in str(raised.value)


# -- through Memory ------------------------------------------------------------------------------


def test_memory_consolidates_through_ollama_and_reports_its_usage(
    server: ScriptedServer, make_memory: Callable[..., Memory]
) -> None:
    """End to end: `Memory(llm=OllamaLLM(...))` turns an event into a fact from the model's
    answer, and the report and status carry Ollama's own token counts."""
    lyon = {
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
    server.script(ollama_reply(json.dumps(lyon), prompt_eval_count=700, eval_count=40))
    mem = make_memory(llm=chat(server), extractor="llm")
    mem.add_event(subject="alice", text="I live in Lyon")

    report = mem.consolidate()

    assert report.created == 1 and report.jobs_done == 1
    assert [f.value for f in mem.facts(subject="alice")] == [{"city": "Lyon"}]
    assert (report.llm_calls, report.prompt_tokens, report.completion_tokens) == (1, 700, 40)
    assert server.requests[0].body["format"] == CANDIDATE_SCHEMA


# -- installation --------------------------------------------------------------------------------


def test_missing_sdk_names_the_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the Ollama SDK, building the provider says which extra to install."""
    monkeypatch.setitem(sys.modules, "ollama", None)

    with pytest.raises(MissingDependency, match=r"pip install 'distill\[ollama\]'"):
        OllamaLLM("llama3.2")


# -- resources -----------------------------------------------------------------------------------


def test_discarding_the_provider_closes_its_connection() -> None:
    """A long-running agent that builds a provider per session must not leak one open socket
    per provider (the OpenAI and Anthropic SDK clients close theirs when discarded; under
    `-W error` the leak is an error)."""
    with ScriptedServer(
        default=ollama_reply(ANSWER), keep_alive=True
    ) as keep_alive:  # no Connection: close
        llm = OllamaLLM("llama3.2", base_url=keep_alive.url, timeout=5.0)
        llm.complete(SYSTEM, PROMPT, CANDIDATE_SCHEMA)
        gc.collect()  # whatever earlier tests left behind is not this provider's
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ResourceWarning)
            del llm
            gc.collect()

    leaks = [w for w in caught if issubclass(w.category, ResourceWarning)]
    assert leaks == [], [str(w.message) for w in leaks]


def test_close_releases_the_connection() -> None:
    """`close()` (called by Memory for a provider it built, and by the CLI) closes the kept-alive
    socket at once; the provider refuses further calls instead of leaking a new socket."""
    with ScriptedServer(default=ollama_reply(ANSWER), keep_alive=True) as keep_alive:
        llm = OllamaLLM("llama3.2", base_url=keep_alive.url, timeout=5.0)
        llm.complete(SYSTEM, PROMPT, CANDIDATE_SCHEMA)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ResourceWarning)
            llm.close()
            gc.collect()
        with pytest.raises(Exception):  # noqa: B017 - whatever the closed client raises
            llm.complete(SYSTEM, PROMPT, CANDIDATE_SCHEMA)

    assert [w for w in caught if issubclass(w.category, ResourceWarning)] == []


def test_a_refused_key_fails_at_once_and_is_never_shown(server: ScriptedServer) -> None:
    """An Ollama behind an authenticating proxy that refuses the key (401): no retry, an
    error that says to check the key, and the key itself in neither the error nor repr."""
    server.script(ollama_error(401, "invalid token sk-ollama-SECRET"))
    sleep = RecordingSleep()
    llm = chat(server, sleep, api_key="sk-ollama-SECRET")

    with pytest.raises(ProviderError) as raised:
        llm.complete(SYSTEM, PROMPT, CANDIDATE_SCHEMA)

    assert not isinstance(raised.value, TransientProviderError)
    assert "API key" in str(raised.value)
    assert "SECRET" not in str(raised.value) and "SECRET" not in repr(llm)
    assert server.requests[0].headers["authorization"] == "Bearer sk-ollama-SECRET"
    assert len(server.requests) == 1 and sleep.waits == []
