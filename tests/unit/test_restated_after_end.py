"""A value stated again after its stated end: each version keeps its own statements.

When a late statement gives the current version an end, its statements dated after that end
restated the value after a gap and become a version of their own
(`Rivals._given_an_end`). The version before keeps only the statements dated before the
end, for its provenance and for every rule of the same run that reads them: a late change
that splits it later in the run takes its trust from them alone. Hygiene seed 1405180: the
statement that moved to the new version still counted for the old one, so the part before a
semi-trusted change came out trusted and the change displaced it.
"""

from __future__ import annotations

from distill.core.models import FactStatus, Trust
from tests.unit.test_late_edges import at, in_one_run, told_gp
from tests.unit.test_properties import fresh_memory


def test_the_part_before_a_late_change_is_as_trusted_as_its_own_statements() -> None:
    """The person's `a` on day 29; then, in one run, the person's `a` for day 13 only
    (said on day 23), a semi-trusted `a` from day 3, and a semi-trusted change to `b` for
    days 11-17 (said on day 28). The `a` of days 3-11 rests on the semi-trusted statement
    alone, so the semi-trusted `b` may replace it; the person's two statements keep their
    own versions, each trusted, and no version is replaced by a less trusted one."""
    with fresh_memory() as mem:
        in_one_run(mem, told_gp(0, 29, "a", "trusted", "create"))
        facts = in_one_run(
            mem,
            told_gp(1, 23, "a", "trusted", "supersede", period=(13, 14)),
            told_gp(2, 3, "a", "semi_trusted", "supersede"),
            told_gp(3, 28, "b", "semi_trusted", "supersede", period=(11, 17)),
        )

    got = sorted((f.valid_from, f.value["v"], f.trust, f.status) for f in facts)
    assert got == [
        (at(3), "a", Trust.SEMI_TRUSTED, FactStatus.SUPERSEDED),
        (at(11), "b", Trust.SEMI_TRUSTED, FactStatus.SUPERSEDED),
        (at(13), "a", Trust.TRUSTED, FactStatus.SUPERSEDED),
        (at(29), "a", Trust.TRUSTED, FactStatus.ACTIVE),
    ]
    by_id = {f.id: f for f in facts}
    for fact in facts:
        after = by_id.get(fact.superseded_by or "")
        if after is not None:
            assert not after.trust.yields_to(fact.trust), (fact, after)
    first = min(facts, key=lambda f: f.valid_from)
    assert first.reinforcement_count == 0  # its one statement: the semi-trusted one of day 3
