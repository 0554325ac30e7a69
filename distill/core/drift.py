"""Drift: a subject whose derived facts keep being invalidated is unstable.

The count is of the derive pass's invalidations of the subject's facts (`core.derive`),
each at its world time (the `valid_to` it closed the fact at), inside a real trailing
window: those in (at − `DRIFT_WINDOW`, at]. The subject is unstable while the count is
strictly more than `DRIFT_THRESHOLD`, and stable again as soon as the window has slid past
enough of them: the flag is a function of the invalidations and the present, never a latch.
A derive cycle raises one drift alert when its own invalidations turn a stable subject
unstable (once per transition: a subject already unstable raises none, and one that
became stable again raises a new one when it tips over again).

What it is for: recall (`distill.search`) reads deeper for an unstable subject, whose
current value is the least settled and whose past values are the likeliest to be asked
about; `Memory.subjects()` and `distill status` show the flag.

The window trails the present, not the newest invalidation: a burst that was over long
before it was derived (a backfill of last year's data) raises no alert and sets no flag,
since the flag says what is unstable now.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

# The seed's window and threshold: more than 4 invalidations in 30 days of world time
# (the seed compared "≥ 4" in one place and "> 4" in another; this is the one rule).
DRIFT_WINDOW = timedelta(days=30)
DRIFT_THRESHOLD = 4  # invalidations; unstable at strictly more
# How much deeper recall reads each arm for an unstable subject (`distill.search`):
# its candidates from both arms, before fusion, times this.
DRIFT_DEPTH_FACTOR = 3


def in_window(times: Iterable[datetime], at: datetime) -> int:
    """How many of `times` fall in the trailing window that ends at `at`."""
    start = at - DRIFT_WINDOW
    return sum(1 for t in times if start < t <= at)


def unstable(times: Iterable[datetime], at: datetime) -> bool:
    return in_window(times, at) > DRIFT_THRESHOLD
