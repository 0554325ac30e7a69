"""A provider that accepts connections and never answers: the run stops after one request's
timeout and retries, not after every job's.

The provider is a port on 127.0.0.1 that accepts connections and never reads nor answers
(tests/llm_server.py `SilentServer`); each of its requests ends on the client's read timeout.
Six subjects have events without claims, so each of their six jobs asks the model.
"""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from distill import Memory
from distill.adapters.llm.calls import RetryPolicy
from distill.adapters.llm.openai import OpenAILLM
from distill.core.models import JobStatus
from tests.llm_server import SilentServer
from tests.processes import Processes
from tests.workload import jobs_by_status

pytestmark = pytest.mark.http

SUBJECTS = 6  # six jobs, each asking the model
TIMEOUT_S = 2  # DISTILL_LLM_TIMEOUT: seconds one request may take
POLICY = RetryPolicy()  # what the CLI's provider retries with
# One job's worth of a silent provider: every attempt times out, with the longest backoff
# between attempts (calls.py: base_delay * 2**(n - 1), +25% jitter at most, n = 1 .. attempts
# - 1): 3 x 2 s + 1.25 s + 2.5 s = 9.75 s. Today the run goes on to the next jobs until
# OUTAGE_AFTER (3) jobs have failed in a row: three times that, about 29 s.
ONE_JOB_S = POLICY.attempts * TIMEOUT_S + sum(
    min(POLICY.base_delay * 2 ** (n - 1) * 1.25, POLICY.max_delay)
    for n in range(1, POLICY.attempts)
)
MEMORY_TIMEOUT_S = 0.5  # the provider's timeout in the Memory test
STARTUP_S = 10  # starting Python, importing the SDK, opening the store, on a loaded machine


def events() -> list[dict[str, Any]]:
    return [
        {
            "subject": f"s{s}",
            "text": f"s{s} drinks green tea, note {n}",
            "idempotency_key": f"{s}-{n}",
        }
        for s in range(SUBJECTS)
        for n in range(2)
    ]


def test_the_cli_stops_at_a_silent_provider_and_says_the_events_are_kept(
    processes: Processes, tmp_path: Path
) -> None:
    """`distill consolidate` with DISTILL_LLM_TIMEOUT=2 against a silent provider ends
    within one job's attempts (plus start-up), leaves no job running or done, at most one
    failed and every other one pending, keeps every event, prints no traceback, and prints
    one line that says the provider did not answer, for how long, and that the events are
    kept."""
    db = str(tmp_path / "memory.db")
    with Memory(db, embedder="hashing") as agent:
        agent.add_events(events())
    with SilentServer() as silent:
        processes.env.update(
            DISTILL_LLM="openai",
            DISTILL_LLM_BASE_URL=silent.url + "/v1",
            DISTILL_LLM_MODEL="m",
            DISTILL_LLM_API_KEY="sk-test",
            DISTILL_LLM_TIMEOUT=str(TIMEOUT_S),
        )
        started = time.monotonic()
        try:
            done = processes.run(db, "consolidate", timeout=ONE_JOB_S + STARTUP_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the run took more than {ONE_JOB_S + STARTUP_S} s (killed)")
        took = time.monotonic() - started

    said = done.stdout + done.stderr
    assert took < ONE_JOB_S + STARTUP_S, f"the run took {took:.1f} s:\n{said}"
    assert "Traceback" not in said, said
    counts = jobs_by_status(db)
    assert set(counts) <= {"pending", "failed"}, counts
    assert counts.get("failed", 0) <= 1, counts
    assert sum(counts.values()) == SUBJECTS
    lines = [line for line in said.splitlines() if "did not answer" in line]
    assert len(lines) == 1, said
    assert "kept" in lines[0], lines[0]
    assert re.search(r"\d+(\.\d+)? ?(s|seconds)\b", lines[0]), lines[0]  # for how long
    with Memory(db, embedder="hashing") as mem:
        assert mem.status().counts.events == 2 * SUBJECTS


def test_memory_consolidate_stops_at_a_silent_provider(tmp_path: Path) -> None:
    """The same through `Memory.consolidate()`, with a 0.5 s timeout and retries that do not
    wait: the run ends after one job's three attempts (1.5 s, not OUTAGE_AFTER x 1.5 s), its
    report says the provider stopped it, at most one job failed and the others are back to
    pending, with their events."""
    with SilentServer() as silent:
        llm = OpenAILLM(
            "m",
            base_url=silent.url + "/v1",
            api_key="sk-test",
            timeout=MEMORY_TIMEOUT_S,
            retry=RetryPolicy(attempts=3, sleep=lambda seconds: None),
        )
        try:
            with Memory(tmp_path / "memory.db", embedder="hashing", llm=llm) as mem:
                mem.add_events(events())
                started = time.monotonic()
                report = mem.consolidate()
                took = time.monotonic() - started
                jobs = mem.jobs()
        finally:
            llm.close()

    assert took < 3 * MEMORY_TIMEOUT_S + 3, f"the run took {took:.1f} s"
    assert report.stopped_by_provider
    assert report.jobs_failed <= 1 and report.jobs_done == 0
    statuses = [j.status for j in jobs]
    assert statuses.count(JobStatus.FAILED) == report.jobs_failed
    assert statuses.count(JobStatus.PENDING) == SUBJECTS - report.jobs_failed
    assert sum(len(j.event_ids) for j in jobs) == 2 * SUBJECTS
