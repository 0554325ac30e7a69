"""`Memory.dedupe(offline=True)`: the offline tier on every backend. Memories close in meaning
whose words lose nothing either way merge, with the same receipts as exact duplicates; close
ones that a guard objects to stay; nothing crosses subjects; a dry run writes nothing; an
embedder with no calibrated distance is refused rather than guessed for.

The memories are said as a user would say them (the `text` extractor), so each has the recall
vector the tier searches. The hashing embedder's calibrated distance is 0.24; the pairs'
distances under it are in the comments.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

import pytest

from distill import Memory
from distill.adapters.embed.hashing import HashingEmbedder
from distill.core.models import FactStatus
from distill.errors import ConfigurationError
from tests.conftest import FakeClock

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
CLOSE = ("I like jazz music a lot.", "I really like jazz music a lot.")  # 0.116
OPPOSED = (  # 0.143
    "I always publish my newsletter on Tuesdays.",
    "I never publish my newsletter on Tuesdays.",
)


@pytest.fixture
def opened(database: str, clock: FakeClock) -> Iterator[Callable[..., Memory]]:
    mems: list[Memory] = []

    def make(dimension: int = 256) -> Memory:
        mem = Memory(database, embedder=HashingEmbedder(dimension), clock=clock, extractor="text")
        mems.append(mem)
        return mem

    yield make
    for mem in mems:
        mem.close()


def say(mem: Memory, *texts: str, subject: str = "u1") -> None:
    for i, text in enumerate(texts):
        mem.add_event(subject=subject, text=text, occurred_at=T0 + timedelta(days=i))
    mem.consolidate()


def statuses(mem: Memory, subject: str = "u1") -> dict[str, FactStatus]:
    return {f.text: f.status for f in mem.facts(subject=subject, include_retired=True)}


def test_close_paraphrases_merge_only_with_the_offline_tier(opened: Callable[..., Memory]):
    mem = opened()
    say(mem, *CLOSE)
    assert mem.dedupe().retired == 0  # not the same words: exact dedupe leaves them

    report = mem.dedupe(offline=True)

    assert report.retired == 1 and report.offline_groups == 1
    found = statuses(mem)
    assert found[CLOSE[0]] is FactStatus.ACTIVE  # the older record survives
    assert found[CLOSE[1]] is FactStatus.SUPERSEDED
    survivor = next(f for f in mem.facts(subject="u1") if f.text == CLOSE[0])
    assert survivor.reinforcement_count == 1 and len(survivor.source_event_ids) == 2
    retired = next(f for f in mem.facts(subject="u1", include_retired=True) if f.text == CLOSE[1])
    assert retired.superseded_by == survivor.id  # the receipt
    assert mem.dedupe(offline=True).retired == 0  # nothing left to merge


def test_close_statements_a_guard_objects_to_stay(opened: Callable[..., Memory]) -> None:
    mem = opened()
    say(mem, *OPPOSED)
    report = mem.dedupe(offline=True)
    assert report.retired == 0
    assert set(statuses(mem).values()) == {FactStatus.ACTIVE}


def test_the_offline_tier_never_merges_across_subjects(opened: Callable[..., Memory]) -> None:
    mem = opened()
    say(mem, CLOSE[0], subject="alice")
    say(mem, CLOSE[1], subject="bob")
    assert mem.dedupe(offline=True).retired == 0
    assert statuses(mem, "alice") == {CLOSE[0]: FactStatus.ACTIVE}
    assert statuses(mem, "bob") == {CLOSE[1]: FactStatus.ACTIVE}


def test_a_dry_run_reports_the_merge_and_writes_nothing(opened: Callable[..., Memory]) -> None:
    mem = opened()
    say(mem, *CLOSE)
    before = statuses(mem)
    report = mem.dedupe(offline=True, dry_run=True)
    assert report.dry_run and report.retired == 1 and report.offline_groups == 1
    assert statuses(mem) == before


def test_the_cap_holds_for_the_offline_tier(opened: Callable[..., Memory]) -> None:
    mem = opened()
    say(mem, *CLOSE)
    report = mem.dedupe(offline=True, max_supersedes=0)
    assert report.retired == 0 and report.capped == 1
    assert set(statuses(mem).values()) == {FactStatus.ACTIVE}


def test_an_embedder_with_no_calibrated_distance_is_refused(opened: Callable[..., Memory]):
    mem = opened(dimension=64)  # hashing-64: no offline-merge calibration
    say(mem, *CLOSE)
    with pytest.raises(ConfigurationError, match="offline-merge distance"):
        mem.dedupe(offline=True)
    assert set(statuses(mem).values()) == {FactStatus.ACTIVE}
