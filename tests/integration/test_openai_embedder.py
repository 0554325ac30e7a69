"""OpenAIEmbedder against a real HTTP server on 127.0.0.1 speaking `/v1/embeddings`.

What a user relies on: the request it sends (model, texts, floats, the key), unit vectors back
in the order of the texts whatever order the server answers in, batches of `max_batch`, a
dimension that is known and never changes under it, and every failure as a Distill error —
deterministic refusals at once, transient ones retried, a 429 as RateLimited, an unreadable
answer as MalformedAnswer, a dead or hanging server in bounded time — without ever showing
the key. Last, a Memory consolidating claims through this embedder over real HTTP.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from distill import Memory
from distill.adapters.embed import make_embedder
from distill.adapters.embed.hashing import HashingEmbedder, vectors_at_distance
from distill.adapters.embed.openai import OpenAIEmbedder
from distill.adapters.embed.remote import PROBE_TEXT
from distill.adapters.llm.calls import RetryPolicy
from distill.core.identity import identity_text
from distill.errors import (
    ConfigurationError,
    MalformedAnswer,
    MissingDependency,
    ProviderError,
    RateLimited,
    TransientProviderError,
)
from tests.llm_server import (
    Reply,
    ScriptedServer,
    openai_embedding_reply,
    openai_embeddings,
    openai_error,
    unused_port,
)

pytestmark = pytest.mark.http

ROOT = Path(__file__).resolve().parents[2]
SECRET = "sk-test-SECRET-0123456789abcdef"
DIMENSION = 16
TEXTS = ["bike count: 3", "home city: Lyon", "favorite color: blue"]
_hashing = HashingEmbedder(DIMENSION)


def server_vector(text: str) -> list[float]:
    """What the scripted server answers for a text: a deterministic vector, three times
    longer than unit, so that normalisation is the client's to do."""
    return [3.0 * float(v) for v in _hashing.embed_batch([text])[0]]


def unit(text: str) -> np.ndarray:
    return _hashing.embed_batch([text])[0]


def no_wait(seconds: float) -> None:
    pass


NO_WAIT = RetryPolicy(attempts=3, base_delay=1, sleep=no_wait)


@pytest.fixture(scope="module")
def shared_server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as server:
        yield server


@pytest.fixture
def server(shared_server: ScriptedServer) -> ScriptedServer:
    """The module's server, answering embeddings computed by `server_vector`."""
    return shared_server.reset(default=openai_embeddings(server_vector))


def embedder(server: ScriptedServer, **options: Any) -> OpenAIEmbedder:
    options.setdefault("api_key", SECRET)
    options.setdefault("retry", NO_WAIT)
    options.setdefault("timeout", 5.0)
    return OpenAIEmbedder("test-embed", base_url=server.url + "/v1", **options)


def recording_policy(attempts: int = 3, **options: Any) -> tuple[RetryPolicy, list[float]]:
    sleeps: list[float] = []
    return RetryPolicy(attempts=attempts, base_delay=1, sleep=sleeps.append, **options), sleeps


def inputs(server: ScriptedServer) -> list[list[str]]:
    return [r.body["input"] for r in server.requests]


# -- the request ---------------------------------------------------------------------------------


def test_request_is_one_embeddings_call_with_model_texts_and_floats(server: ScriptedServer) -> None:
    """One POST to <base_url>/embeddings carries the model, the texts verbatim, floats as the
    encoding (base64, the SDK's default, is not spoken by every compatible server) and no
    `dimensions` unless asked for; the key goes as a bearer token."""
    embedder(server).embed_batch(TEXTS)

    [request] = server.requests
    assert request.method == "POST"
    assert request.path == "/v1/embeddings"
    assert request.body == {"model": "test-embed", "input": TEXTS, "encoding_format": "float"}
    assert request.headers["authorization"] == f"Bearer {SECRET}"


def test_dimensions_are_asked_for_and_name_another_vector_space(server: ScriptedServer) -> None:
    """`dimensions=` goes in the request, fixes the dimension before any call, and is part of
    the model id: shortened vectors are not comparable with full ones."""
    server.default = openai_embeddings(lambda t: server_vector(t)[:8])
    small = embedder(server, dimensions=8)

    assert small.dimension == 8
    assert server.requests == []  # known without asking
    small.embed_batch(TEXTS[:1])
    assert server.requests[0].body["dimensions"] == 8
    assert small.model_id.endswith("/test-embed#8")
    assert small.model_id != embedder(server).model_id


def test_the_distill_key_is_sent_but_openais_own_key_is_not_sent_elsewhere(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The key rules of the chat provider: DISTILL_LLM_API_KEY goes to the configured server;
    OPENAI_API_KEY, which is OpenAI's, is never sent to another base_url."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-only")
    monkeypatch.delenv("DISTILL_LLM_API_KEY", raising=False)
    embedder(server, api_key=None).embed_batch(TEXTS[:1])
    monkeypatch.setenv("DISTILL_LLM_API_KEY", "sk-for-this-server")
    embedder(server, api_key=None).embed_batch(TEXTS[:1])

    first, second = server.requests
    assert "sk-openai-only" not in first.headers["authorization"]
    assert second.headers["authorization"] == "Bearer sk-for-this-server"


def test_openai_itself_without_a_key_is_a_configuration_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No key and no base_url fails when the embedder is built, naming the variables."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("DISTILL_LLM_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ConfigurationError, match="DISTILL_LLM_API_KEY or OPENAI_API_KEY"):
        OpenAIEmbedder()


def test_model_ids_name_the_vector_space(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On OpenAI's API the model name is the space; on any other server the host and port
    are part of it (two servers may serve different vectors under one name); `model_id=`
    names it explicitly. Building makes no request."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    port = server.url.rsplit(":", 1)[1]

    assert OpenAIEmbedder(api_key=SECRET).model_id == "openai/text-embedding-3-small"
    assert embedder(server).model_id == f"openai@127.0.0.1:{port}/test-embed"
    assert embedder(server, model_id="bge-small/q8").model_id == "bge-small/q8"
    assert server.requests == []


# -- the vectors ---------------------------------------------------------------------------------


def test_vectors_come_back_unit_length_in_the_direction_the_server_gave(
    server: ScriptedServer,
) -> None:
    vectors = embedder(server).embed_batch(TEXTS)

    assert vectors.shape == (3, DIMENSION)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    for row, text in zip(vectors, TEXTS, strict=True):
        np.testing.assert_allclose(row, unit(text), atol=1e-6)


def test_rows_are_put_in_input_order_by_their_index(server: ScriptedServer) -> None:
    """A server that answers last text first is read by `index`, not by position."""
    server.default = openai_embeddings(server_vector, reverse=True)
    vectors = embedder(server).embed_batch(TEXTS)

    for row, text in zip(vectors, TEXTS, strict=True):
        np.testing.assert_allclose(row, unit(text), atol=1e-6)


def test_a_server_that_sends_no_index_is_read_in_the_order_it_answered(
    server: ScriptedServer,
) -> None:
    server.default = openai_embedding_reply(
        [server_vector(t) for t in TEXTS], indices=[None, None, None]
    )
    vectors = embedder(server).embed_batch(TEXTS)

    np.testing.assert_allclose(vectors[2], unit(TEXTS[2]), atol=1e-6)


@pytest.mark.parametrize("indices", [[0, 0, 1], [0, 1, 5], [0, None, 2]])
def test_wrongly_numbered_rows_are_a_malformed_answer(
    server: ScriptedServer, indices: list[int | None]
) -> None:
    """Duplicate, out-of-range or partly missing indices cannot be put in order: refused."""
    server.default = openai_embedding_reply([server_vector(t) for t in TEXTS], indices=indices)
    with pytest.raises(MalformedAnswer, match="indices"):
        embedder(server).embed_batch(TEXTS)


def test_texts_go_in_batches_of_max_batch(server: ScriptedServer) -> None:
    """Seven texts with max_batch=3: three requests of 3, 3 and 1, rows in input order."""
    texts = [f"attribute {i}: value {i}" for i in range(7)]
    vectors = embedder(server, max_batch=3).embed_batch(texts)

    assert inputs(server) == [texts[0:3], texts[3:6], texts[6:7]]
    for row, text in zip(vectors, texts, strict=True):
        np.testing.assert_allclose(row, unit(text), atol=1e-6)


def test_no_texts_make_no_request(server: ScriptedServer) -> None:
    assert embedder(server).embed_batch([]).shape[0] == 0
    assert server.requests == []


def test_the_dimension_is_learned_from_the_first_answer(server: ScriptedServer) -> None:
    """After an embedding the dimension is known without a request; asked for first, it
    costs one short request."""
    first = embedder(server)
    first.embed_batch(TEXTS[:1])
    assert first.dimension == DIMENSION
    assert len(server.requests) == 1

    fresh = embedder(server)
    assert fresh.dimension == DIMENSION
    assert inputs(server)[1] == [PROBE_TEXT]


def test_a_server_whose_vectors_change_size_is_refused(server: ScriptedServer) -> None:
    """16 values, then 8: the server now serves another model under the name. That is a
    deterministic error (not retried), not a vector cut or padded to fit."""
    server.script(openai_embeddings(server_vector), openai_embeddings(lambda t: [1.0] * 8))
    policy, sleeps = recording_policy()
    switched = embedder(server, retry=policy)
    switched.embed_batch(TEXTS[:1])
    with pytest.raises(ProviderError, match="another model") as caught:
        switched.embed_batch(TEXTS[1:2])

    assert not isinstance(caught.value, TransientProviderError)
    assert "8 values" in str(caught.value) and "had 16" in str(caught.value)
    assert sleeps == []


def test_vectors_of_another_size_than_asked_for_are_refused(server: ScriptedServer) -> None:
    """A server that ignores `dimensions=8` and answers 16 values is refused at once."""
    with pytest.raises(ProviderError, match="dimensions=8 was asked for"):
        embedder(server, dimensions=8).embed_batch(TEXTS[:1])


# -- malformed answers ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        pytest.param(
            Reply(200, "<html><h1>502 Bad Gateway</h1></html>", content_type="text/html"),
            "unreadable|no `data`",
            id="html",
        ),
        pytest.param(Reply(200, {"object": "list"}), "no `data`", id="no-data"),
        pytest.param(
            Reply(200, {"data": [{"index": i, "object": "embedding"} for i in range(3)]}),
            "no `embedding`",
            id="no-embedding",
        ),
        pytest.param(
            openai_embedding_reply([[1.0, 0.0], [0.0, 1.0]]), "2 vectors for 3 texts", id="count"
        ),
        pytest.param(
            openai_embedding_reply([[1.0, 0.0], [1.0], [0.0, 1.0]]), "one size", id="ragged"
        ),
        pytest.param(
            openai_embedding_reply([[1.0, "x"], [1.0, 0.0], [0.0, 1.0]]), "numbers", id="text"
        ),
        pytest.param(
            openai_embedding_reply([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]), "all zeros", id="zero"
        ),
        pytest.param(
            openai_embedding_reply([[float("nan"), 1.0], [1.0, 0.0], [0.0, 1.0]]),
            "NaN",
            id="nan",
        ),
    ],
)
def test_an_unusable_answer_is_a_malformed_answer(
    server: ScriptedServer, reply: Reply, why: str
) -> None:
    """Anything that is not one finite, non-zero vector per text, all of one size, is a
    MalformedAnswer (the engine fails the job, events intact) — never a vector stored."""
    server.default = reply
    with pytest.raises(MalformedAnswer, match=why):
        embedder(server).embed_batch(TEXTS)


# -- refusals ------------------------------------------------------------------------------------


def test_bad_request_fails_at_once_with_the_server_message(server: ScriptedServer) -> None:
    server.default = openai_error(400, "input must not be empty")
    policy, sleeps = recording_policy()
    with pytest.raises(ProviderError, match="input must not be empty") as caught:
        embedder(server, retry=policy).embed_batch(TEXTS)

    assert not isinstance(caught.value, TransientProviderError)
    assert len(server.requests) == 1 and sleeps == []


def test_unauthorized_names_the_key_but_never_shows_it(server: ScriptedServer) -> None:
    """A 401 is not retried; the error points at the API key, and neither it nor the
    embedder's repr shows the key, even when the server echoes it."""
    server.default = openai_error(401, f"Incorrect API key provided: {SECRET}")
    client = embedder(server)
    with pytest.raises(ProviderError) as caught:
        client.embed_batch(TEXTS)

    error = caught.value
    assert not isinstance(error, TransientProviderError)
    assert "API key" in str(error)
    for shown in (str(error), repr(error), repr(client), str(client)):
        assert SECRET not in shown
    assert len(server.requests) == 1


def test_not_found_asks_whether_the_model_name_is_right(server: ScriptedServer) -> None:
    server.default = openai_error(404, "model 'test-embed' not found")
    with pytest.raises(ProviderError, match="model name") as caught:
        embedder(server).embed_batch(TEXTS)

    assert "not found" in str(caught.value)
    assert len(server.requests) == 1


def test_credentials_in_the_base_url_are_never_shown(server: ScriptedServer) -> None:
    url = server.url.replace("http://", "http://user:hunter2@") + "/v1?key=s3cr3t"
    client = OpenAIEmbedder("m", base_url=url, retry=NO_WAIT, timeout=5.0)
    server.default = openai_error(400, "bad request")
    with pytest.raises(ProviderError) as caught:
        client.embed_batch(TEXTS)

    for shown in (repr(client), client.base_url, client.model_id, str(caught.value)):
        assert "hunter2" not in shown and "s3cr3t" not in shown


# -- transient failures --------------------------------------------------------------------------


@pytest.mark.parametrize("status", [408, 500, 503])
def test_transient_status_is_retried_with_backoff_until_success(
    server: ScriptedServer, status: int
) -> None:
    server.script(openai_error(status, "try again"), openai_error(status, "try again"))
    policy, sleeps = recording_policy()
    vectors = embedder(server, retry=policy).embed_batch(TEXTS)

    assert vectors.shape == (3, DIMENSION)
    assert len(server.requests) == 3
    assert 0.75 <= sleeps[0] <= 1.25 and 1.5 <= sleeps[1] <= 2.5


def test_persistent_server_error_raises_transient_after_all_attempts(
    server: ScriptedServer,
) -> None:
    server.default = openai_error(502, "bad gateway")
    policy, sleeps = recording_policy(attempts=3)
    with pytest.raises(TransientProviderError, match="502") as caught:
        embedder(server, retry=policy).embed_batch(TEXTS)

    assert not isinstance(caught.value, RateLimited)
    assert len(server.requests) == 3 and len(sleeps) == 2


def test_rate_limit_waits_as_long_as_retry_after_says(server: ScriptedServer) -> None:
    server.script(openai_error(429, "Rate limit reached", {"Retry-After": "7"}))
    policy, sleeps = recording_policy()
    embedder(server, retry=policy).embed_batch(TEXTS)

    assert sleeps == [7]
    assert len(server.requests) == 2


def test_persistent_rate_limit_raises_rate_limited(server: ScriptedServer) -> None:
    """RateLimited stops a consolidation run and puts the unstarted jobs back."""
    server.default = openai_error(429, "Rate limit reached", {"Retry-After": "0"})
    with pytest.raises(RateLimited, match="429"):
        embedder(server).embed_batch(TEXTS)
    assert len(server.requests) == 3


def test_a_failed_batch_is_retried_alone(server: ScriptedServer) -> None:
    """With two batches, a 503 on the second retries the second only."""
    server.script(openai_embeddings(server_vector), openai_error(503, "busy"))
    embedder(server, max_batch=2).embed_batch(TEXTS)

    assert inputs(server) == [TEXTS[:2], TEXTS[2:], TEXTS[2:]]


# -- unreachable servers -------------------------------------------------------------------------


def test_slow_server_times_out_within_a_bounded_time(server: ScriptedServer) -> None:
    server.default = Reply(200, openai_embedding_reply([[1.0, 0.0]]).body, delay=2.0)
    client = embedder(server, timeout=0.3, retry=RetryPolicy(attempts=2, sleep=no_wait))
    started = time.monotonic()
    with pytest.raises(TransientProviderError):
        client.embed_batch(TEXTS[:1])

    assert time.monotonic() - started < 1.8
    assert len(server.requests) == 2


def test_connection_refused_is_transient_and_names_the_address() -> None:
    port = unused_port()
    client = OpenAIEmbedder(
        "test-embed",
        base_url=f"http://127.0.0.1:{port}/v1",
        api_key=SECRET,
        timeout=2.0,
        retry=RetryPolicy(attempts=2, sleep=no_wait),
    )
    started = time.monotonic()
    with pytest.raises(TransientProviderError) as caught:
        client.embed_batch(TEXTS)

    assert time.monotonic() - started < 5
    assert f"127.0.0.1:{port}" in str(caught.value)
    assert SECRET not in str(caught.value)


# -- building ------------------------------------------------------------------------------------


def test_make_embedder_builds_a_working_openai_embedder(server: ScriptedServer) -> None:
    built = make_embedder(
        "openai", model="bge-small", base_url=server.url + "/v1", api_key=SECRET, max_batch=2
    )
    vectors = built.embed_batch(TEXTS)

    assert isinstance(built, OpenAIEmbedder)
    assert vectors.shape == (3, DIMENSION)
    assert [r.body["model"] for r in server.requests] == ["bge-small", "bge-small"]


def test_missing_sdk_raises_missing_dependency_with_install_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)
    with pytest.raises(MissingDependency) as caught:
        OpenAIEmbedder("m", base_url="http://127.0.0.1:1/v1")

    assert "pip install 'distill[openai]'" in str(caught.value)


@pytest.mark.parametrize("bad", [{"max_batch": 0}, {"dimensions": 0}])
def test_impossible_settings_fail_at_construction(bad: dict[str, int]) -> None:
    with pytest.raises(ConfigurationError):
        OpenAIEmbedder("m", base_url="http://127.0.0.1:1/v1", **bad)


# -- end to end ----------------------------------------------------------------------------------

OLD = ("running_pace", {"min_per_km": 5.5})
NEW = ("jogging_pace", {"min_per_km": 5.5})


def paraphrase_server(scale: float = 3.0) -> Any:
    """A server whose model puts the two paces' identity texts 0.02 apart (and everything
    else where feature hashing puts it)."""
    near, far = vectors_at_distance(0.02, DIMENSION)
    pinned = {t: near for t in (identity_text(*OLD), identity_text(OLD[0]))}
    pinned.update({t: far for t in (identity_text(*NEW), identity_text(NEW[0]))})
    model = HashingEmbedder(DIMENSION, overrides=pinned)
    return openai_embeddings(lambda text: [scale * float(v) for v in model.embed_batch([text])[0]])


def consolidate_two_paces(mem: Memory) -> None:
    for index, (predicate, value) in enumerate((OLD, NEW)):
        mem.add_event(
            subject="u1",
            text=f"{predicate} {value}",
            occurred_at=f"2025-01-0{index + 1}T10:00:00Z",
            claims=[{"predicate": predicate, "value": value}],
        )
        mem.consolidate()


def test_memory_consolidates_claims_through_the_real_http_path(
    server: ScriptedServer, tmp_path: Path
) -> None:
    """Memory with OpenAIEmbedder: the identity texts travel over HTTP, the server's vectors
    (normalised here) are stored and matched, a paraphrased predicate with the same value
    reinforces the first fact under its name, and texts embedded once are never sent again."""
    server.default = paraphrase_server()
    client = embedder(server)
    with Memory(tmp_path / "m.db", embedder=client, extractor="claims", max_distance=0.05) as mem:
        consolidate_two_paces(mem)
        sent = [t for batch in inputs(server) for t in batch]
        mem.add_event(
            subject="u1",
            text="again",
            occurred_at="2025-01-03T10:00:00Z",
            claims=[{"predicate": NEW[0], "value": NEW[1]}],
        )
        mem.consolidate()
        facts = mem.facts(subject="u1")
        status = mem.status()

    assert identity_text(*OLD) in sent and identity_text(*NEW) in sent
    assert len(sent) == len(set(sent))  # each text once: the cache holds the rest
    assert [t for batch in inputs(server) for t in batch] == sent  # the replay sent nothing
    assert [(f.predicate, f.reinforcement_count) for f in facts] == [("running_pace", 2)]
    assert status.embedder == client.model_id


def test_an_uncalibrated_server_model_keeps_the_paraphrase_apart_and_says_why(
    server: ScriptedServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The same two claims with no threshold given: this server's model has no calibration,
    so the two predicates stay two facts and one warning names the command to run."""
    server.default = paraphrase_server()
    client = embedder(server, model_id=f"uncalibrated/{tmp_path.name}")
    with (
        caplog.at_level(logging.WARNING, logger="distill.embed"),
        Memory(tmp_path / "m.db", embedder=client, extractor="claims") as mem,
    ):
        consolidate_two_paces(mem)
        predicates: Sequence[str | None] = sorted(str(f.predicate) for f in mem.facts(subject="u1"))

    assert predicates == ["jogging_pace", "running_pace"]
    [warning] = [r.getMessage() for r in caplog.records if client.model_id in r.getMessage()]
    assert "--embedder openai --model test-embed --base-url" in warning


# -- the command line ----------------------------------------------------------------------------


def run_cli(tmp_path: Path, *args: str, **variables: str) -> subprocess.CompletedProcess[str]:
    """`python -m distill` of this checkout (PYTHONPATH: not whatever distill is installed)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DISTILL_", "OPENAI_"))}
    env.update(
        PYTHONPATH=str(ROOT),
        HOME=str(tmp_path / "home"),
        XDG_DATA_HOME=str(tmp_path / "xdg"),
        NO_COLOR="1",
        **variables,
    )
    return subprocess.run(
        [sys.executable, "-m", "distill", "--db", str(tmp_path / "cli.db"), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )


def test_the_cli_embeds_through_the_configured_server_without_showing_the_key(
    server: ScriptedServer, tmp_path: Path
) -> None:
    """DISTILL_EMBEDDER=openai with DISTILL_EMBEDDER_MODEL and DISTILL_EMBEDDER_BASE_URL: the
    claims' identity texts go to that server with DISTILL_LLM_API_KEY, status names the
    embedder, stderr says matching by meaning is off until it is calibrated, and the key
    is printed nowhere."""
    variables = {
        "DISTILL_EMBEDDER": "openai",
        "DISTILL_EMBEDDER_MODEL": "bge-small",
        "DISTILL_EMBEDDER_BASE_URL": server.url + "/v1",
        "DISTILL_LLM_API_KEY": SECRET,
    }
    claim = json.dumps({"predicate": "bike_count", "value": {"count": 3}})
    runs = [
        run_cli(tmp_path, "add", "--subject", "u1", "--text", "3 bikes", "--claim", claim),
        run_cli(tmp_path, "consolidate", "--json", **variables),
        run_cli(tmp_path, "status", "--json", **variables),
    ]
    for run in runs:
        assert run.returncode == 0, f"{run.args}: {run.stderr}"
        assert SECRET not in run.stdout + run.stderr

    port = server.url.rsplit(":", 1)[1]
    assert json.loads(runs[1].stdout)["counters"]["created"] == 1
    assert json.loads(runs[2].stdout)["embedder"] == f"openai@127.0.0.1:{port}/bge-small"
    assert "calibrate_threshold.py --embedder openai --model bge-small" in runs[1].stderr
    [request] = server.requests
    assert request.body["model"] == "bge-small"
    # The claim's identity texts: its name alone, and its name with its value.
    assert sorted(request.body["input"]) == sorted(
        [identity_text("bike_count"), identity_text("bike_count", {"count": 3})]
    )
    assert request.headers["authorization"] == f"Bearer {SECRET}"


def test_the_cli_lists_the_embedder_variables_and_refuses_a_model_for_local(
    tmp_path: Path,
) -> None:
    shown = run_cli(tmp_path, "--help")
    refused = run_cli(tmp_path, "status", DISTILL_EMBEDDER_MODEL="bge-small")

    assert "DISTILL_EMBEDDER_MODEL" in shown.stdout
    assert "DISTILL_EMBEDDER_BASE_URL" in shown.stdout
    assert refused.returncode == 1
    assert "Error:" in refused.stderr and "one model" in refused.stderr
