"""`Memory.derive` on every backend: votes recorded by adjudication, elected into facts by
the derive pass; the cursor reads each vote once, in batches; an empty cycle is on record;
another scope's votes are never read; invalidations close facts with receipts and count
toward drift, which `subjects()` and `status` show and which clears as the window slides;
a dry run writes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta

import pytest

from distill import Memory
from distill.adapters.embed.hashing import HashingEmbedder
from distill.core.drift import DRIFT_DEPTH_FACTOR
from distill.core.identity import identity_key
from distill.core.models import Alias, FactStatus
from distill.core.plan import CreateFact, LearnAlias, Plan, ReviseFact
from distill.core.recall import ARM_DEPTH
from tests.conftest import FakeClock

SUBJECT = "alex"


@pytest.fixture
def voting(database: str, clock: FakeClock) -> Iterator[Memory]:
    mem = Memory(database, embedder=HashingEmbedder(256), clock=clock, policies={"uses": "vote"})
    yield mem
    mem.close()


def say(
    mem: Memory,
    *values: str,
    at: datetime,
    subject: str = SUBJECT,
    project: str = "default",
    predicate: str = "uses",
) -> None:
    mem.add_events(
        {
            "subject": subject,
            "project": project,
            "text": f"{subject} uses {value}",
            "source": f"site-{i}",
            "trust": "third_party",
            "occurred_at": at + timedelta(hours=i),
            "claims": [{"predicate": predicate, "value": {"language": value}}],
        }
        for i, value in enumerate(values)
    )
    mem.consolidate()


def current(mem: Memory, subject: str = SUBJECT, project: str = "default") -> list[object]:
    return [f.value for f in mem.facts(subject, project) if f.predicate == "uses"]


def cycles(mem: Memory, subject: str = SUBJECT) -> list[dict[str, object]]:
    return [
        dict(e.after or {})
        for e in mem.audit(subject, limit=1000)
        if e.pass_name == "derive" and e.action == "record_cycle"
    ]


def test_votes_wait_for_derive_which_elects_the_mode(voting: Memory, clock: FakeClock) -> None:
    say(voting, "rust", "go", "rust", at=clock.now() - timedelta(days=3))
    assert current(voting) == []  # adjudication recorded votes, decided nothing
    report = voting.derive()
    assert (report.processed, report.created, report.invalidated) == (3, 1, 0)
    assert current(voting) == [{"language": "rust"}]
    (fact,) = voting.facts(SUBJECT)
    assert len(fact.source_event_ids) == 2
    votes = voting.history(fact.id).observations  # the votes that elected it
    assert [(o.outcome, o.claim.value) for o in votes] == [("vote", {"language": "rust"})] * 2


def test_each_vote_is_read_once_and_an_empty_cycle_is_on_record(
    voting: Memory, clock: FakeClock
) -> None:
    say(voting, "rust", "rust", "rust", "go", "go", at=clock.now() - timedelta(days=3))
    first = voting.derive(batch=3)
    assert first.processed == 3 and first.capped == ["default/alex"]
    assert current(voting) == [{"language": "rust"}]
    second = voting.derive(batch=3)
    assert second.processed == 2 and not second.capped
    # The cycle's evidence (core.derive): its two votes are all against rust.
    assert second.invalidated == 1 and current(voting) == [{"language": "go"}]
    third = voting.derive(batch=3)
    assert third.processed == 0
    assert [c["processed"] for c in cycles(voting)] == [3, 2, 0]
    assert voting.status().to_dict()["derive"] == {
        "cycles": 3,
        "facts_derived": 2,
        "facts_invalidated": 1,
    }


def test_a_subject_cycle_never_reads_another_scope(voting: Memory, clock: FakeClock) -> None:
    t = clock.now() - timedelta(days=3)
    say(voting, "rust", at=t)
    say(voting, "go", at=t, subject="sam")
    say(voting, "zig", at=t, project="other")
    report = voting.derive(projects=["default"], subject=SUBJECT)
    assert report.processed == 1 and report.scopes == 1
    assert current(voting, "sam") == [] and current(voting, SUBJECT, "other") == []
    assert voting.derive(projects=["other"]).processed == 1
    assert current(voting, SUBJECT, "other") == [{"language": "zig"}]
    assert current(voting, "sam") == []


def test_a_latest_predicate_is_adjudicated_as_before(voting: Memory, clock: FakeClock) -> None:
    say(voting, "Lyon", at=clock.now() - timedelta(days=1), predicate="home_city")
    assert [f.value for f in voting.facts(SUBJECT)] == [{"language": "Lyon"}]
    assert voting.derive().processed == 0


def test_invalidation_closes_the_fact_with_a_receipt(voting: Memory, clock: FakeClock) -> None:
    say(voting, "rust", at=clock.now() - timedelta(days=10))
    voting.derive()
    say(voting, "go", "go", "rust", "go", "go", at=clock.now() - timedelta(days=5))
    report = voting.derive()
    assert report.invalidated == 1 and report.reinforced == 0
    old, new = sorted(
        voting.facts(SUBJECT, include_retired=True), key=lambda f: f.recorded_at.isoformat() + f.id
    )
    by_status = {f.status: f for f in (old, new)}
    closed, open_ = by_status[FactStatus.SUPERSEDED], by_status[FactStatus.ACTIVE]
    assert closed.superseded_by == open_.id and closed.valid_to == open_.valid_from
    assert open_.value == {"language": "go"}
    assert [v.id for v in voting.history(open_.id).versions] == [closed.id, open_.id]


def test_drift_is_flagged_on_the_transition_and_clears(voting: Memory, clock: FakeClock) -> None:
    values = ["a", "b", "c", "d", "e", "f"]
    alerts = []
    for day, value in enumerate(values):
        say(voting, value, at=clock.now() - timedelta(days=20 - day))
        alerts.append(voting.derive().drift_alerts)
    # Created once, then five invalidations within the window: unstable on the fifth.
    assert alerts == [0, 0, 0, 0, 0, 1]
    (state,) = voting.subjects()
    assert state.unstable and state.invalidations == 5
    assert voting.status().to_dict()["unstable_subjects"] == [
        {"project": "default", "subject": SUBJECT}
    ]
    clock.advance(days=60)
    (state,) = voting.subjects()
    assert not state.unstable and state.invalidations == 0
    assert voting.status().to_dict()["unstable_subjects"] == []


def test_a_dry_run_reports_the_same_and_writes_nothing(voting: Memory, clock: FakeClock) -> None:
    say(voting, "rust", "rust", at=clock.now() - timedelta(days=3))
    audit = voting.audit(SUBJECT, limit=1000)
    dry = voting.derive(dry_run=True)
    assert (dry.processed, dry.created) == (2, 1)
    assert current(voting) == [] and voting.audit(SUBJECT, limit=1000) == audit
    real = voting.derive()
    assert (real.processed, real.created) == (2, 1)
    assert [f.value for f in dry.facts] == [f.value for f in real.facts]


def test_recall_reads_deeper_for_an_unstable_subject(
    voting: Memory, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[int] = []
    nearest = voting.store.recall_nearest

    def spy(scope: object, vector: object, k: int) -> object:
        asked.append(k)
        return nearest(scope, vector, k)  # type: ignore[arg-type]

    monkeypatch.setattr(voting.store, "recall_nearest", spy)
    say(voting, "a", at=clock.now() - timedelta(days=20))
    voting.derive()
    voting.search("which language", SUBJECT)
    for day, value in enumerate(["b", "c", "d", "e", "f"]):
        say(voting, value, at=clock.now() - timedelta(days=19 - day))
        voting.derive()
    voting.search("which language", SUBJECT)
    assert asked == [ARM_DEPTH, ARM_DEPTH * DRIFT_DEPTH_FACTOR]
    hits = voting.search("which language", SUBJECT)
    assert [h.fact.value for h in hits] == [{"language": "f"}]  # still only what is served


def test_votes_for_a_name_resolved_into_another_count_under_the_other(
    database: str, clock: FakeClock
) -> None:
    """Once the subject's `uses` was resolved into `language` (an identity set a person or
    the judge closed: the old name's fact superseded by the other's, the alias learned),
    votes still given as `uses` are counted against `language`'s current value, as a claim
    of that name is filed, never elected under `uses` beside it (the hygiene search's class
    8, seed 28179)."""
    policies = {"uses": "vote", "language": "vote"}
    voting = Memory(database, embedder=HashingEmbedder(256), clock=clock, policies=policies)
    say(voting, "rust", at=clock.now() - timedelta(days=10))
    voting.derive()
    [uses] = [f for f in voting.facts(SUBJECT) if f.predicate == "uses"]
    now = clock.now()
    language = uses.model_copy(
        update={
            "id": "renamed-language-fact",
            "predicate": "language",
            "identity_key": identity_key("language", {}),
            "text": "language: rust",
            "supersedes_id": uses.id,
            "valid_from": now,
            "recorded_at": now,
        }
    )
    retired = uses.model_copy(
        update={
            "status": FactStatus.SUPERSEDED,
            "valid_to": now,
            "retired_at": now,
            "superseded_by": language.id,
        }
    )
    alias = Alias(
        project="default", alias="uses", canonical="language", distance=0.0, learned_at=now
    )
    voting.store.apply(
        Plan(
            [
                ReviseFact(uses, retired, "retire", "resolved into language"),
                CreateFact(language, "resolved into language"),
                LearnAlias(alias, "resolved into language"),
            ]
        ),
        None,
        [],
    )

    clock.advance(days=1)
    say(voting, "go", "go", "go", at=clock.now())
    report = voting.derive()
    active = [f for f in voting.facts(SUBJECT) if f.predicate in ("uses", "language")]
    assert [(f.predicate, f.value) for f in active] == [("language", {"language": "go"})]
    assert report.invalidated == 1 and report.created == 0
    voting.close()
