"""`Memory.summarise` through the real Ollama provider against a real HTTP server speaking
`/api/chat` (scenario 27): a hanging endpoint costs bounded attempts and leaves the store as
it was; a 500 then a 200 is retried once and the retried answer is still checked; a 400 is
one call. The seed's "one retry" is a `RetryPolicy(attempts=2)`.
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
from distill.core.summarise import SCHEMA
from tests.llm_server import (
    RecordingSleep,
    Reply,
    ScriptedServer,
    SilentServer,
    ollama_error,
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
    with ScriptedServer(default=ollama_reply(GOOD)) as scripted:
        yield scripted


def ollama_at(url: str, timeout: float = 5.0) -> OllamaLLM:
    return OllamaLLM(
        base_url=url, timeout=timeout, retry=RetryPolicy(attempts=2, sleep=RecordingSleep())
    )


def remembering(tmp_path: Path, llm: OllamaLLM) -> Memory:
    mem = Memory(str(tmp_path / "d.db"), embedder=HashingEmbedder(256), llm=llm, extractor="text")
    for n, text in enumerate(OLD + RECENT):
        mem.add_event(subject="u1", text=text, occurred_at=T0 + timedelta(days=n))
    mem.consolidate()
    return mem


def snapshot(mem: Memory) -> list[dict[str, Any]]:
    return [f.model_dump(mode="json") for f in mem.facts(include_retired=True)]


def test_the_proposal_goes_through_ollama_with_its_schema(
    tmp_path: Path, server: ScriptedServer
) -> None:
    llm = ollama_at(server.url)
    with remembering(tmp_path, llm) as mem:
        report = mem.summarise(keep=1)
        assert report.consumed == 2 and report.usage.calls == 1
        [request] = server.requests
        assert request.path == "/api/chat" and request.body["format"] == SCHEMA
        assert request.body["model"] == "llama3.2"  # the default local model
    llm.close()


def test_a_hanging_endpoint_costs_bounded_attempts_and_leaves_the_store(
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
            assert len(report.stopped) == 1 and "Timeout" in report.stopped[0]
            assert snapshot(mem) == before and report.summaries == []
        llm.close()


def test_a_500_then_a_200_is_retried_once_and_the_answer_still_checked(
    tmp_path: Path, server: ScriptedServer
) -> None:
    lossy = json.dumps({"summary": "The user has bikes and likes green tea.", "consumes": ["M1"]})
    server.script(ollama_error(500, "overloaded"), ollama_reply(lossy))
    llm = ollama_at(server.url)
    with remembering(tmp_path, llm) as mem:
        before = snapshot(mem)
        report = mem.summarise(keep=1)
        assert len(server.requests) == 2
        assert [r.code for r in report.refused] == ["lost_number", "nothing_consumed"]
        assert snapshot(mem) == before
    llm.close()


def test_a_400_is_one_call_only(tmp_path: Path, server: ScriptedServer) -> None:
    server.script(ollama_error(400, "invalid format"))
    llm = ollama_at(server.url)
    with remembering(tmp_path, llm) as mem:
        report = mem.summarise(keep=1)
        assert len(server.requests) == 1
        assert len(report.stopped) == 1 and report.summaries == []
        assert all(f.status is FactStatus.ACTIVE for f in mem.facts(include_retired=True))
    llm.close()


def test_a_transport_failure_then_success_summarises(
    tmp_path: Path, server: ScriptedServer
) -> None:
    server.script(Reply(503, {"error": "loading model"}))
    llm = ollama_at(server.url)
    with remembering(tmp_path, llm) as mem:
        assert mem.summarise(keep=1).consumed == 2
        assert len(server.requests) == 2
    llm.close()
