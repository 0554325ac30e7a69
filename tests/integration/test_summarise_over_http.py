"""`Memory.summarise` through the real Ollama provider against a real HTTP server on
127.0.0.1 (scenario 27, and the graymatter seed's provider): the summariser asks
`/api/generate` with `"format": "json"` for the configured model (llama3.2 by default), and
retries a call once (`SUMMARISE_ATTEMPTS`), for transient failures only, whatever the
provider's own policy (3 tries). A hanging endpoint costs two bounded attempts and leaves
the store as it was; a 500 then a 200 is retried once and the retried answer is still
checked; a 408 or a 429 is retried as well; a 400 or a 404 is one call; an unreachable model
is one note, and what was applied before it stays applied.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from distill import Memory
from distill.adapters.embed.hashing import HashingEmbedder
from distill.adapters.llm.calls import RetryPolicy
from distill.adapters.llm.ollama import OllamaLLM
from distill.core.models import FactStatus
from distill.core.summarise import SYSTEM
from tests.llm_server import (
    RecordingSleep,
    ScriptedServer,
    SilentServer,
    ollama_error,
    ollama_generate_reply,
    ollama_reply,
)

pytestmark = pytest.mark.http

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
OLD = ["User has 3 bikes", "User likes green tea"]
RECENT = ["User plays chess"]
SUMMARY = "The user has 3 bikes and likes green tea."
GOOD = json.dumps({"summary": SUMMARY, "consumes": ["M1", "M2"]})


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(default=ollama_generate_reply(GOOD)) as scripted:
        yield scripted


def ollama_at(url: str, timeout: float = 5.0, **given: Any) -> OllamaLLM:
    """The provider as configured by default: three tries for its other callers."""
    return OllamaLLM(
        base_url=url, timeout=timeout, retry=RetryPolicy(sleep=RecordingSleep()), **given
    )


def remembering(tmp_path: Path, llm: OllamaLLM, subjects: tuple[str, ...] = ("u1",)) -> Memory:
    mem = Memory(str(tmp_path / "d.db"), embedder=HashingEmbedder(256), llm=llm, extractor="text")
    for subject in subjects:
        for n, text in enumerate(OLD + RECENT):
            mem.add_event(subject=subject, text=text, occurred_at=T0 + timedelta(days=n))
    mem.consolidate()
    return mem


def snapshot(mem: Memory) -> list[dict[str, Any]]:
    return [f.model_dump(mode="json") for f in mem.facts(subject=None, include_retired=True)]


def test_the_proposal_is_asked_of_api_generate_in_json_format(
    tmp_path: Path, server: ScriptedServer
) -> None:
    llm = ollama_at(server.url)
    with remembering(tmp_path, llm) as mem:
        report = mem.summarise(keep=1)
        assert report.consumed == 2 and report.usage.calls == 1
        assert report.usage.prompt_tokens == 100 and report.usage.completion_tokens == 20
        [request] = server.requests
        assert request.path == "/api/generate"
        assert request.body["format"] == "json" and request.body["stream"] is False
        assert request.body["model"] == "llama3.2"  # the default local model
        assert request.body["system"] == SYSTEM
        assert "M1 (stated 2024-05-01): User has 3 bikes" in request.body["prompt"]
    llm.close()


def test_the_model_is_the_configured_one(tmp_path: Path, server: ScriptedServer) -> None:
    llm = ollama_at(server.url, model="qwen2.5:3b")
    with remembering(tmp_path, llm) as mem:
        assert mem.summarise(keep=1).consumed == 2
        assert [r.body["model"] for r in server.requests] == ["qwen2.5:3b"]
    llm.close()


def test_other_passes_still_ask_api_chat_with_their_schema(
    tmp_path: Path, server: ScriptedServer
) -> None:
    server.script(ollama_reply('{"verdicts": []}'))
    llm = ollama_at(server.url)
    with remembering(tmp_path, llm) as mem:
        mem.judge()
        assert server.requests[0].path == "/api/chat"
        assert isinstance(server.requests[0].body["format"], dict)
    llm.close()


def test_a_hanging_endpoint_costs_two_bounded_attempts_and_leaves_the_store(
    tmp_path: Path,
) -> None:
    with SilentServer() as silent:
        llm = ollama_at(silent.url, timeout=0.3)
        with remembering(tmp_path, llm) as mem:
            before = snapshot(mem)
            started = time.monotonic()
            report = mem.summarise(keep=1)
            elapsed = time.monotonic() - started
            assert elapsed < 3.0, f"summarise waited {elapsed:.2f}s for a hanging model"
            [note] = report.stopped
            assert "did not answer within 0.3 s, 2 time(s) in a row" in note
            assert snapshot(mem) == before and report.summaries == []
            assert mem.status().to_dict()["consolidations"] == 0
        llm.close()


def test_a_500_then_a_200_is_retried_once_and_the_answer_still_checked(
    tmp_path: Path, server: ScriptedServer
) -> None:
    lossy = json.dumps({"summary": "The user has bikes and likes green tea.", "consumes": ["M1"]})
    server.script(ollama_error(500, "overloaded"), ollama_generate_reply(lossy))
    llm = ollama_at(server.url)
    with remembering(tmp_path, llm) as mem:
        before = snapshot(mem)
        report = mem.summarise(keep=1)
        assert len(server.requests) == 2
        assert [r.code for r in report.refused] == ["lost_number", "nothing_consumed"]
        assert snapshot(mem) == before
    llm.close()


@pytest.mark.parametrize("status", [500, 503, 408, 429])
def test_two_transient_failures_are_the_end_of_it(
    tmp_path: Path, server: ScriptedServer, status: int
) -> None:
    server.script(ollama_error(status, "busy"), ollama_error(status, "busy"))
    llm = ollama_at(server.url)
    with remembering(tmp_path, llm) as mem:
        before = snapshot(mem)
        report = mem.summarise(keep=1)
        assert len(server.requests) == 2  # one retry, not the provider's three tries
        assert len(report.stopped) == 1 and str(status) in report.stopped[0]
        assert snapshot(mem) == before
    llm.close()


@pytest.mark.parametrize("status", [408, 429])
def test_a_timeout_or_a_rate_limit_then_a_200_summarises(
    tmp_path: Path, server: ScriptedServer, status: int
) -> None:
    server.script(ollama_error(status, "later"))
    llm = ollama_at(server.url)
    with remembering(tmp_path, llm) as mem:
        assert mem.summarise(keep=1).consumed == 2
        assert len(server.requests) == 2
    llm.close()


@pytest.mark.parametrize("status", [400, 404])
def test_a_refusal_is_one_call_only(tmp_path: Path, server: ScriptedServer, status: int) -> None:
    server.script(ollama_error(status, "invalid format"))
    llm = ollama_at(server.url)
    with remembering(tmp_path, llm) as mem:
        report = mem.summarise(keep=1)
        assert len(server.requests) == 1
        assert len(report.stopped) == 1 and report.summaries == []
        assert all(f.status is FactStatus.ACTIVE for f in mem.facts(include_retired=True))
    llm.close()


def test_the_attempts_are_configurable(tmp_path: Path, server: ScriptedServer) -> None:
    server.script(*[ollama_error(503, "loading model")] * 3)
    llm = ollama_at(server.url)
    with remembering(tmp_path, llm) as mem:
        assert mem.summarise(keep=1, attempts=1).usage.calls == 0
        assert len(server.requests) == 1
        assert mem.summarise(keep=1, attempts=3).consumed == 2
        assert len(server.requests) == 4
    llm.close()


def test_an_outage_mid_run_is_one_note_and_leaves_no_partial_batch(
    tmp_path: Path, server: ScriptedServer
) -> None:
    """The first subject's batch is applied; the model then goes away: one note, the second
    subject as it was (nothing of its batch written or marked), and the next run asks only
    about what was not done."""
    server.script(ollama_generate_reply(GOOD), ollama_error(503, "gone"), ollama_error(503, "gone"))
    llm = ollama_at(server.url)
    with remembering(tmp_path, llm, subjects=("a", "b")) as mem:
        report = mem.summarise(keep=1)
        assert report.consumed == 2 and len(report.stopped) == 1
        assert report.stopped[0].startswith("default/b: ")
        b_facts = mem.facts("b", include_retired=True)
        assert all(f.status is FactStatus.ACTIVE for f in b_facts) and len(b_facts) == 3
        again = mem.summarise(keep=1)
        assert again.consumed == 2 and again.usage.calls == 1
        assert mem.status().to_dict()["consolidations"] == 2
    llm.close()
