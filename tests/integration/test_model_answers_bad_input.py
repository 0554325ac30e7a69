"""Model answers are bad input too, end to end: `Memory` → `OpenAILLM` → a scripted
OpenAI-compatible server on 127.0.0.1, on SQLite and on PostgreSQL, and through the CLI.

The issue's case: each subject's batch shows one message; the model answers a candidate for
message 99 with predicate `admin_password`, value `hunter2` and the span "bikes". Before, the
span was found in message 1 and the candidate was stored there as an active fact for both
subjects. Now a candidate naming a message its batch did not show is rejected and counted
(`unknown_message`), and one that names the right message with a span that exists but a
value its message does not state is held in quarantine as ungrounded: never served, counted
(`held_ungrounded`), resolvable by a person.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from distill import Memory
from distill.adapters.llm.calls import RetryPolicy
from distill.adapters.llm.openai import OpenAILLM
from distill.core.models import ConflictKind, ConflictStatus, FactStatus, Outcome
from tests.conftest import FakeClock
from tests.integration.test_llm_over_http import openai_env, run_cli
from tests.llm_server import ScriptedServer, openai_reply

pytestmark = pytest.mark.http

PASSWORD = {"password": "hunter2"}
ALICE, BOB = "I have 3 bikes", "My bikes are red"


def answer(*facts: dict[str, Any]) -> str:
    return json.dumps({"facts": list(facts)})


def candidate(
    message: Any, value: dict[str, Any] = PASSWORD, span: str = "bikes"
) -> dict[str, Any]:
    return {
        "message": message,
        "predicate": "admin_password",
        "value": value,
        "kind": "state",
        "action": "create",
        "confidence": 0.9,
        "evidence_span": span,
    }


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as scripted:
        yield scripted


@pytest.fixture(params=["sqlite", "postgres"])
def open_memory(
    request: pytest.FixtureRequest, tmp_path: Path, server: ScriptedServer
) -> Iterator[Callable[[], Memory]]:
    """A Memory on either backend whose model is the scripted server, through the real
    OpenAI-compatible provider; everything opened is closed at teardown."""
    where: Any = (
        tmp_path / "memory.db"
        if request.param == "sqlite"
        else request.getfixturevalue("postgres_database")
    )
    opened: list[Memory] = []
    llm = OpenAILLM(
        "m", base_url=server.url + "/v1", api_key="sk-test", retry=RetryPolicy(attempts=1)
    )
    counter = itertools.count()

    def make() -> Memory:
        mem = Memory(
            where,
            embedder="hashing",
            llm=llm,
            extractor="llm",
            clock=FakeClock(),
            new_id=lambda: f"id{next(counter):06d}",
        )
        opened.append(mem)
        return mem

    yield make
    for mem in opened:
        mem.close()
    llm.close()


def test_the_issues_case_a_candidate_for_message_99_of_one_is_rejected_for_both_subjects(
    open_memory: Callable[[], Memory], server: ScriptedServer
) -> None:
    """BEFORE: `admin_password: hunter2` active for alice and bob. AFTER: nothing stored,
    two rejections `unknown_message` naming message 99, audited; the jobs are done."""
    server.default = openai_reply(answer(candidate(99)))
    mem = open_memory()
    mem.add_event(subject="alice", text=ALICE)
    mem.add_event(subject="bob", text=BOB)

    report = mem.consolidate()

    assert len(server.requests) == 2 and report.jobs_done == 2
    assert [r.reason for r in report.rejections] == ["unknown_message"] * 2
    assert all("names message 99" in r.detail for r in report.rejections)
    assert report.counters()["rejected"] == 2 and report.created == 0
    assert mem.facts(include_retired=True) == []
    for subject in ("alice", "bob"):
        audited = [a for a in mem.audit(subject=subject) if a.action == "reject_candidate"]
        assert len(audited) == 1 and "unknown_message" in audited[0].reason


def test_a_span_that_exists_but_does_not_support_the_value_is_held_as_ungrounded(
    open_memory: Callable[[], Memory], server: ScriptedServer
) -> None:
    """Message 1 is the right one and holds "bikes", but nothing of `hunter2`: the fact is a
    candidate in an open quarantine set, never served, counted as held_ungrounded; a person
    can keep it. The grounded candidate of the same answer is served."""
    bikes = {**candidate(1, {"count": "three"}, "3 bikes"), "predicate": "bike_count"}
    server.default = openai_reply(answer(candidate(1), bikes))
    mem = open_memory()
    mem.add_event(subject="alice", text=ALICE)

    report = mem.consolidate()

    assert report.quarantined == 1 and report.created == 1 and report.rejected == 0
    assert report.counters()["held_ungrounded"] == 1
    assert [(f.predicate, f.value) for f in mem.facts(subject="alice")] == [
        ("bike_count", {"count": "three"})
    ]
    [held] = [f for f in mem.facts(include_retired=True) if f.predicate == "admin_password"]
    assert held.status is FactStatus.CANDIDATE
    [held_set] = mem.conflicts(subject="alice")
    assert held_set.kind is ConflictKind.QUARANTINE and held_set.status is ConflictStatus.OPEN
    assert held_set.member_ids == (held.id,)
    assert held_set.reason == "ungrounded: none of hunter2 is in its message"
    [observation] = [o for o in mem.history(held.id).observations]
    assert observation.outcome is Outcome.QUARANTINED

    mem.resolve_conflict(held_set.id, keep=held.id)
    assert {f.predicate for f in mem.facts(subject="alice")} == {"bike_count", "admin_password"}


def test_a_replay_holds_and_rejects_the_same_way_without_asking_again(
    open_memory: Callable[[], Memory], server: ScriptedServer
) -> None:
    """The kept answer carries the reason a candidate was unattributable: a replay rejects
    it again, and the held fact stays held (a duplicate), with no new call."""
    server.default = openai_reply(answer(candidate(99), candidate(1)))
    mem = open_memory()
    mem.add_event(subject="alice", text=ALICE)
    first = mem.consolidate()
    mem.replay()

    again = mem.consolidate()

    assert first.counters()["held_ungrounded"] == 1 and first.rejected == 1
    assert len(server.requests) == 1 and again.llm_calls == 0
    assert [r.reason for r in again.rejections] == ["unknown_message"]
    assert again.counters()["held_ungrounded"] == 0 and again.duplicates == 1
    assert mem.facts() == []


def test_consolidate_shows_the_rejection_and_the_hold_in_text_and_json(
    tmp_path: Path, server: ScriptedServer
) -> None:
    """`distill consolidate` (a subprocess, as a user runs it) prints both counters and the
    rejection's reason; `--json` has them in `counters` and `rejections`."""
    server.default = openai_reply(answer(candidate(99), candidate(1)))
    env = openai_env(tmp_path, server)
    db = str(tmp_path / "cli.db")
    for subject, text in (("alice", ALICE), ("bob", BOB)):
        added = run_cli(["--db", db, "add", "--subject", subject, "--text", text], env, tmp_path)
        assert added.returncode == 0, added.stderr
    dry = run_cli(["--db", db, "consolidate", "--dry-run"], env, tmp_path)
    real = run_cli(["--db", db, "consolidate", "--json"], env, tmp_path)

    assert dry.returncode == 0, dry.stderr
    assert "held_ungrounded" in dry.stdout and "rejected (unknown_message): names message 99" in (
        dry.stdout
    )
    assert real.returncode == 0, real.stderr
    data = json.loads(real.stdout)
    assert data["counters"]["held_ungrounded"] == 2 and data["counters"]["quarantined"] == 2
    assert data["counters"]["rejected"] == 2 and data["counters"]["created"] == 0
    assert {r["reason"] for r in data["rejections"]} == {"unknown_message"}
    facts = run_cli(["--db", db, "facts", "--json"], env, tmp_path)
    assert json.loads(facts.stdout) == []


def test_an_answer_no_store_can_keep_as_given_is_rejected_not_a_failed_job(
    open_memory: Callable[[], Memory], server: ScriptedServer
) -> None:
    """A NUL in a value (PostgreSQL refuses it in JSON) or a float beyond 2^53: the candidate
    is rejected as invalid and the job is done; the other candidate of the answer is kept."""
    nul = {**candidate(1, {"password": "hun\x00ter"}, "bikes"), "predicate": "nickname"}
    bikes = {**candidate(1, {"count": 3}, "3 bikes"), "predicate": "bike_count"}
    server.default = openai_reply(answer(nul, bikes))
    mem = open_memory()
    mem.add_event(subject="alice", text=ALICE)

    report = mem.consolidate()

    assert report.jobs_done == 1 and report.jobs_failed == 0
    assert [r.reason for r in report.rejections] == ["invalid_candidate"]
    assert "NUL" in report.rejections[0].detail or "\\x00" in report.rejections[0].detail
    assert [f.predicate for f in mem.facts(subject="alice")] == ["bike_count"]
