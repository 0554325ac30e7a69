"""OllamaEmbedder against a real HTTP server speaking Ollama's `/api/embed` protocol.

What a user running Ollama relies on: a batch of texts per request to the model they pulled,
unit vectors back in input order, `OLLAMA_HOST` honoured, a missing model that says `ollama
pull`, a stopped Ollama that says `ollama serve` in bounded time, transient failures retried
and deterministic ones not, an unreadable or resized answer refused, the proxy token never
shown — and a Memory consolidating claims through it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from distill import Memory
from distill.adapters.embed import make_embedder
from distill.adapters.embed.hashing import HashingEmbedder
from distill.adapters.embed.ollama import OllamaEmbedder, tagged
from distill.adapters.llm.calls import RetryPolicy
from distill.core.identity import identity_text
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
    ollama_embed_reply,
    ollama_embeddings,
    ollama_error,
    unused_port,
)

pytestmark = pytest.mark.http

DIMENSION = 12
TEXTS = ["bike count: 3", "home city: Lyon", "favorite color: blue"]
TOKEN = "proxy-token-SECRET-42"
_hashing = HashingEmbedder(DIMENSION)


def server_vector(text: str) -> list[float]:
    """The scripted model: deterministic, and not unit length (the client normalises)."""
    return [0.5 * float(v) for v in _hashing.embed_batch([text])[0]]


def unit(text: str) -> np.ndarray:
    return _hashing.embed_batch([text])[0]


@pytest.fixture(scope="module")
def running_server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        yield running


@pytest.fixture
def server(running_server: ScriptedServer) -> ScriptedServer:
    return running_server.reset(default=ollama_embeddings(server_vector))


def embedder(
    server: ScriptedServer, sleep: RecordingSleep | None = None, **options: Any
) -> OllamaEmbedder:
    options.setdefault("timeout", 5.0)
    return OllamaEmbedder(
        base_url=server.url,
        retry=RetryPolicy(attempts=3, sleep=sleep or RecordingSleep()),
        **options,
    )


# -- the request ---------------------------------------------------------------------------------


def test_request_is_one_batch_to_the_native_embed_api(server: ScriptedServer) -> None:
    """One POST to /api/embed with the model, every text as a list, and keep_alive; no key,
    no Authorization header."""
    embedder(server, model="mxbai-embed-large", keep_alive="5m").embed_batch(TEXTS)

    [request] = server.requests
    assert (request.method, request.path) == ("POST", "/api/embed")
    assert request.body["model"] == "mxbai-embed-large"
    assert request.body["input"] == TEXTS
    assert request.body["keep_alive"] == "5m"
    assert "authorization" not in request.headers


def test_defaults_are_nomic_embed_text_on_local_ollama(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without settings: nomic-embed-text at localhost:11434, identified with its tag and
    host; building makes no request."""
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    built = OllamaEmbedder()

    assert built.base_url == "http://localhost:11434"
    assert built.model_id == "ollama@localhost:11434/nomic-embed-text:latest"


def test_ollama_host_is_honoured(server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """OLLAMA_HOST, as the Ollama CLI reads it, is where requests go when no base_url is
    given; the host is part of the model id."""
    monkeypatch.setenv("OLLAMA_HOST", server.url)
    built = OllamaEmbedder(retry=RetryPolicy(sleep=RecordingSleep()))
    built.embed_batch(TEXTS[:1])

    assert len(server.requests) == 1
    assert built.model_id == f"ollama@{server.url.removeprefix('http://')}/nomic-embed-text:latest"


def test_a_tag_is_part_of_the_model_id_and_latest_is_implied() -> None:
    assert tagged("nomic-embed-text") == "nomic-embed-text:latest"
    assert tagged("nomic-embed-text:v1.5") == "nomic-embed-text:v1.5"
    assert tagged("hf.co/org/bge-small:Q8_0") == "hf.co/org/bge-small:Q8_0"
    assert tagged("registry.local:5000/bge") == "registry.local:5000/bge:latest"


def test_a_proxy_token_is_sent_but_never_shown(server: ScriptedServer) -> None:
    """The bearer token reaches an authenticating proxy; a 401 says to check the key, and
    neither the error nor the repr carries it, even when the proxy echoes it."""
    server.script(ollama_embeddings(server_vector), ollama_error(401, f"bad token {TOKEN}"))
    client = embedder(server, api_key=TOKEN)
    client.embed_batch(TEXTS[:1])
    with pytest.raises(ProviderError, match="API key") as caught:
        client.embed_batch(TEXTS[1:2])

    assert server.requests[0].headers["authorization"] == f"Bearer {TOKEN}"
    for shown in (str(caught.value), repr(caught.value), repr(client), client.model_id):
        assert TOKEN not in shown


# -- the vectors ---------------------------------------------------------------------------------


def test_vectors_come_back_unit_length_in_input_order(server: ScriptedServer) -> None:
    vectors = embedder(server).embed_batch(TEXTS)

    assert vectors.shape == (3, DIMENSION) and vectors.dtype == np.float32
    for row, text in zip(vectors, TEXTS, strict=True):
        np.testing.assert_allclose(row, unit(text), atol=1e-6)


def test_texts_go_in_batches_of_max_batch(server: ScriptedServer) -> None:
    texts = [f"attribute {i}: {i}" for i in range(5)]
    vectors = embedder(server, max_batch=2).embed_batch(texts)

    assert [r.body["input"] for r in server.requests] == [texts[0:2], texts[2:4], texts[4:5]]
    np.testing.assert_allclose(vectors[4], unit(texts[4]), atol=1e-6)


def test_the_dimension_is_learned_and_a_change_of_size_refused(server: ScriptedServer) -> None:
    """The first answer fixes the dimension; a later answer of another size means another
    model under this name: a deterministic ProviderError, not retried."""
    server.script(ollama_embeddings(server_vector), ollama_embed_reply([[1.0, 0.0]]))
    sleep = RecordingSleep()
    client = embedder(server, sleep=sleep)
    client.embed_batch(TEXTS[:1])
    assert client.dimension == DIMENSION
    with pytest.raises(ProviderError, match="another model") as caught:
        client.embed_batch(TEXTS[1:2])

    assert not isinstance(caught.value, TransientProviderError)
    assert sleep.waits == []


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        pytest.param(
            Reply(200, "<html>502</html>", content_type="text/html"), "unreadable", id="html"
        ),
        pytest.param(Reply(200, {"model": "m"}), "embeddings", id="no-embeddings"),
        pytest.param(ollama_embed_reply([[1.0, 0.0]]), "1 vectors for 3 texts", id="count"),
        pytest.param(
            ollama_embed_reply([[1.0, 0.0], [1.0], [0.0, 1.0]]), "unreadable|one size", id="ragged"
        ),
        pytest.param(
            ollama_embed_reply([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]), "all zeros", id="zero"
        ),
    ],
)
def test_an_unusable_answer_is_a_malformed_answer(
    server: ScriptedServer, reply: Reply, why: str
) -> None:
    server.default = reply
    with pytest.raises(MalformedAnswer, match=why):
        embedder(server).embed_batch(TEXTS)


# -- failures ------------------------------------------------------------------------------------


def test_a_model_not_pulled_says_how_to_pull_it(server: ScriptedServer) -> None:
    server.default = ollama_error(404, 'model "mxbai-embed-large" not found, try pulling it')
    sleep = RecordingSleep()
    with pytest.raises(ProviderError, match="ollama pull mxbai-embed-large") as caught:
        embedder(server, sleep=sleep, model="mxbai-embed-large").embed_batch(TEXTS)

    assert not isinstance(caught.value, TransientProviderError)
    assert len(server.requests) == 1 and sleep.waits == []


def test_a_chat_model_asked_to_embed_fails_at_once(server: ScriptedServer) -> None:
    server.default = ollama_error(400, '"llama3.2" does not support embeddings')
    with pytest.raises(ProviderError, match="does not support embeddings"):
        embedder(server, model="llama3.2").embed_batch(TEXTS)
    assert len(server.requests) == 1


@pytest.mark.parametrize("status", [500, 503])
def test_server_errors_are_retried_with_backoff(server: ScriptedServer, status: int) -> None:
    server.script(ollama_error(status, "llama runner process has terminated"))
    sleep = RecordingSleep()
    vectors = embedder(server, sleep=sleep).embed_batch(TEXTS)

    assert vectors.shape == (3, DIMENSION)
    assert len(server.requests) == 2 and len(sleep.waits) == 1


def test_persistent_overload_raises_rate_limited(server: ScriptedServer) -> None:
    """Ollama answers 429 when its queue is full; after the retries that stops the run.
    (Ollama's client does not expose Retry-After: the backoff applies.)"""
    server.default = ollama_error(429, "server busy, please try again. maximum pending requests")
    sleep = RecordingSleep()
    with pytest.raises(RateLimited):
        embedder(server, sleep=sleep).embed_batch(TEXTS)

    assert len(server.requests) == 3 and len(sleep.waits) == 2


def test_a_stopped_ollama_says_to_start_it_in_bounded_time() -> None:
    port = unused_port()
    client = OllamaEmbedder(
        base_url=f"http://127.0.0.1:{port}",
        timeout=2.0,
        retry=RetryPolicy(attempts=2, sleep=RecordingSleep()),
    )
    started = time.monotonic()
    with pytest.raises(TransientProviderError, match="ollama serve") as caught:
        client.embed_batch(TEXTS)

    assert time.monotonic() - started < 5
    assert f"127.0.0.1:{port}" in str(caught.value)


def test_a_hanging_ollama_times_out(server: ScriptedServer) -> None:
    server.default = Reply(200, ollama_embed_reply([[1.0, 0.0]]).body, delay=2.0)
    client = embedder(server, timeout=0.3)
    client.retry = RetryPolicy(attempts=2, sleep=RecordingSleep())
    started = time.monotonic()
    with pytest.raises(TransientProviderError, match="timed out"):
        client.embed_batch(TEXTS[:1])

    assert time.monotonic() - started < 1.8
    assert len(server.requests) == 2


def test_missing_sdk_raises_missing_dependency_with_install_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "ollama", None)
    with pytest.raises(MissingDependency, match=r"pip install 'distill\[ollama\]'"):
        OllamaEmbedder()


# -- through Memory ------------------------------------------------------------------------------


def test_memory_consolidates_claims_through_ollama(server: ScriptedServer, tmp_path: Path) -> None:
    """`make_embedder("ollama", ...)` in a Memory: identity texts are embedded over HTTP once,
    facts carry the vectors, and the status names the embedder."""
    built = make_embedder("ollama", model="nomic-embed-text", base_url=server.url)
    with Memory(tmp_path / "m.db", embedder=built, extractor="claims", max_distance=0.05) as mem:
        for day, (predicate, value) in enumerate(
            [("bike_count", {"count": 3}), ("home_city", {"city": "Lyon"})], start=1
        ):
            mem.add_event(
                subject="u1",
                text=f"{predicate}",
                occurred_at=f"2025-01-0{day}T10:00:00Z",
                claims=[{"predicate": predicate, "value": value}],
            )
        report = mem.consolidate()
        status = mem.status()

    sent = [t for r in server.requests for t in r.body["input"]]
    assert report.created == 2
    assert identity_text("bike_count", {"count": 3}) in sent
    assert len(sent) == len(set(sent))
    assert status.embedder == built.model_id
