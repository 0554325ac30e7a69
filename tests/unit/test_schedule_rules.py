"""The schedule's decisions (`distill.core.schedule`) as properties: whatever the runs'
outcomes and the clock's steps, a clean run checkpoints and is not due again before the
interval; an unclean one keeps the pass due and never moves the checkpoint; the retry pause
is positive and never longer than the interval (or the pause itself); health follows the
errors in a row."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from distill.core.schedule import (
    FAILING_AFTER,
    Outcome,
    ScheduleRow,
    compact,
    due_time,
    finish,
    is_due,
    runnable,
)

T0 = datetime(2025, 1, 1, tzinfo=UTC)
INTERVAL = timedelta(hours=24)
PAUSE = timedelta(minutes=15)
OUTCOMES = {
    "clean": Outcome({}),
    "soft": Outcome({}, soft=("model: down",)),
    "error": Outcome({}, stop="error", detail="boom"),
    "cap": Outcome({}, stop="cap", detail="more"),
    "budget": Outcome({}, stop="budget", detail="spent"),
}


@given(
    st.lists(
        st.tuples(st.sampled_from(sorted(OUTCOMES)), st.integers(min_value=0, max_value=3 * 86400)),
        max_size=30,
    )
)
def test_checkpoints_dues_pauses_and_health_hold_for_any_sequence(
    steps: list[tuple[str, int]],
) -> None:
    row = ScheduleRow("p", "", "tidy", 0, T0, T0)
    now = T0
    errors_in_a_row = 0
    for kind, wait in steps:
        now += timedelta(seconds=wait)
        if not runnable(row, INTERVAL, now):
            continue
        outcome = OUTCOMES[kind]
        end = finish(row, outcome, now, INTERVAL, PAUSE)
        before = row.last_clean_at
        row = ScheduleRow(
            "p", "", "tidy", row.generation + 1, T0, end.due_at, end.retry_at, now,
            end.clean_at or before, None, end.health, end.error, end.failures, row.runs + 1,
        )  # fmt: skip
        if outcome.clean:
            errors_in_a_row = 0
            assert row.last_clean_at == now and end.retry_at is None
            assert not is_due(row, INTERVAL, now + INTERVAL - timedelta(seconds=1))
            assert is_due(row, INTERVAL, now + INTERVAL)
            assert row.health == ("degraded" if outcome.soft else "ok")
        else:
            assert row.last_clean_at == before  # the checkpoint never moves
            assert is_due(row, INTERVAL, now)  # still due
            assert end.retry_at is not None and now < end.retry_at <= now + max(INTERVAL, PAUSE)
            errors_in_a_row = errors_in_a_row + 1 if outcome.stop == "error" else errors_in_a_row
            assert row.failures == errors_in_a_row
            want = "failing" if errors_in_a_row >= FAILING_AFTER else "degraded"
            assert row.health == (want if outcome.stop == "error" else "degraded")
        assert due_time(row, INTERVAL) <= now + INTERVAL


def test_catch_up_is_one_run_however_long_the_downtime() -> None:
    row = ScheduleRow("p", "", "tidy", 1, T0, T0 + INTERVAL, last_clean_at=T0)
    later = T0 + 10 * INTERVAL
    assert runnable(row, INTERVAL, later)
    end = finish(row, Outcome({}), later, INTERVAL, PAUSE)
    assert end.due_at == later + INTERVAL  # from the run, not from the missed due times


def test_a_kept_report_holds_counts_and_notes_never_texts() -> None:
    report = {
        "pass": "dedupe",
        "retired": 2,
        "groups": [{"survivor": "Likes jazz."}, {"survivor": "x"}],
        "stopped": ["budget: 3 call(s) of 3 spent"],
        "nested": {"facts": [{"text": "secret"}]},
    }
    assert compact(report) == {
        "pass": "dedupe",
        "retired": 2,
        "groups": 2,
        "stopped": ["budget: 3 call(s) of 3 spent"],
        "nested": {"facts": 1},
    }
