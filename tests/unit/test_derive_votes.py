"""The derive decision on values (`core.votes`, `core.derive`, `core.drift`): SCENARIOS 30–34
as cases, the 40% rule at its edges, and the order-independence of clusters and the
canonical value (hypothesis)."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distill.core import drift
from distill.core.derive import DeriveSnapshot, Group, decide
from distill.core.identity import identity_key
from distill.core.models import Fact, FactKind, FactStatus, Trust
from distill.core.plan import CreateFact, MoveCursor, RecordCycle, ReviseFact
from distill.core.votes import Ballot, Policies, Policy, cluster_forms, surface, tally
from distill.errors import ConfigurationError
from tests.factories import unit_vector

JAN = datetime(2025, 1, 10, tzinfo=UTC)
NOW = datetime(2025, 6, 1, tzinfo=UTC)
KEY = identity_key("uses", {})
# Vectors as the calibrated embedder places these forms: the two spellings of one value
# within the distance, the other values far from them and from each other.
VECTORS = {
    "adoption agencies": unit_vector(1.0, 0.0, 0.0),
    "adoption agency": unit_vector(0.98, 0.2, 0.0),
    "foster care": unit_vector(0.3, 0.0, 1.0),
    "rust": unit_vector(0.0, 1.0, 0.0, 0.0),
    "Rust lang": unit_vector(0.0, 0.97, 0.0, 0.25),
    "go": unit_vector(0.0, 0.0, 0.0, 1.0),
}
DISTANCE = 0.24  # the local embedder's calibrated derive distance
_ids = itertools.count()


def new_id() -> str:
    return f"{next(_ids):032x}"


def ballot(form: str, at: datetime, trust: Trust = Trust.THIRD_PARTY) -> Ballot:
    return Ballot(new_id(), new_id(), {"language": form}, form, at, trust)


def votes(*forms: str, start: datetime = JAN) -> list[Ballot]:
    return [ballot(f, start + timedelta(days=i)) for i, f in enumerate(forms)]


def prior_fact(form: str = "rust") -> Fact:
    return Fact(
        id="f" * 32,
        project="p",
        subject="alex",
        kind=FactKind.STATE,
        predicate="uses",
        value={"language": form},
        text=f"uses: language={form}",
        identity_key=KEY,
        status=FactStatus.ACTIVE,
        valid_from=JAN - timedelta(days=30),
        recorded_at=JAN - timedelta(days=30),
        source_event_ids=("e0",),
        last_reinforced_at=JAN - timedelta(days=30),
        trust=Trust.THIRD_PARTY,
    )


def snapshot(
    ballots: list[Ballot],
    prior: Fact | None = None,
    distance: float | None = DISTANCE,
    invalidations: list[datetime] | None = None,
    cursor: str | None = None,
) -> DeriveSnapshot:
    groups = [Group(KEY, "uses", {}, tuple(ballots))] if ballots else []
    return DeriveSnapshot(
        project="p",
        subject="alex",
        groups=groups,
        open_facts={KEY: prior} if prior else {},
        vectors=dict(VECTORS),
        vector_model="test",
        max_distance=distance,
        cursor_before=cursor,
        cursor_after=ballots[-1].observation_id if ballots else cursor,
        processed=len(ballots),
        capped=False,
        invalidations=invalidations or [],
    )


def active(result_facts: list[Fact]) -> list[Fact]:
    return [f for f in result_facts if f.status is FactStatus.ACTIVE]


# -- SCENARIOS 30: cluster voting ------------------------------------------------------------
def test_paraphrases_vote_together_and_elect_the_most_written_form() -> None:
    found = tally(
        votes("adoption agencies", "adoption agencies", "adoption agency", "foster care"),
        VECTORS,
        DISTANCE,
    )
    assert found.winner.surface == "adoption agencies"
    assert found.clusters["adoption agency"] == found.clusters["adoption agencies"]
    assert found.clusters["foster care"] != found.cluster
    assert found.votes[found.cluster] == 3


def test_paraphrase_clustering_saves_a_value_that_exact_counting_loses() -> None:
    # Exact counting splits one value in two: the off-topic one wins the tie on recency.
    cast = votes("adoption agency", "adoption agencies", "foster care")
    assert tally(cast, VECTORS, None).winner.surface == "foster care"
    assert tally(cast, VECTORS, DISTANCE).winner.surface in {"adoption agency", "adoption agencies"}


def test_without_clustering_it_is_the_exact_mode_and_recency_breaks_ties() -> None:
    cast = votes("adoption agencies", "adoption agencies", "adoption agency", "foster care")
    assert tally(cast, VECTORS, None).winner.surface == "adoption agencies"
    tied = votes("adoption agency", "foster care")
    assert tally(tied, VECTORS, None).winner.surface == "foster care"
    assert tally(list(reversed(tied)), VECTORS, None).winner.surface == "foster care"


# -- SCENARIOS 31 ----------------------------------------------------------------------------
def test_one_vote_each_goes_to_the_most_recent() -> None:
    cast = [
        ballot("rust", datetime(2025, 1, 5, tzinfo=UTC)),
        ballot("go", datetime(2025, 3, 5, tzinfo=UTC)),
    ]
    result = decide(snapshot(cast), NOW, new_id)
    (fact,) = active(result.facts)
    assert fact.value == {"language": "go"}
    assert result.counts["created"] == 1


# -- SCENARIOS 32: the 40% rule --------------------------------------------------------------
def test_two_of_five_against_the_prior_fact_leave_it_standing() -> None:
    prior = prior_fact("rust")
    result = decide(snapshot(votes("rust", "go", "rust", "go", "rust"), prior), NOW, new_id)
    assert result.counts["invalidated"] == 0
    assert result.counts["reinforced"] == 1
    revised = [a for a in result.plan.actions if isinstance(a, ReviseFact)]
    assert [a.op for a in revised] == ["reinforce"]
    assert revised[0].after.reinforcement_count == 3
    assert not [a for a in result.plan.actions if isinstance(a, CreateFact)]


def test_four_of_five_against_the_prior_fact_close_it_with_a_receipt() -> None:
    prior = prior_fact("rust")
    cast = votes("go", "go", "rust", "go", "go")
    result = decide(snapshot(cast, prior), NOW, new_id)
    assert result.counts["invalidated"] == 1
    retire, create = [a for a in result.plan.actions if isinstance(a, ReviseFact | CreateFact)]
    assert isinstance(retire, ReviseFact) and isinstance(create, CreateFact)
    closed, new = retire.after, create.fact
    assert closed.status is FactStatus.SUPERSEDED and closed.superseded_by == new.id
    assert closed.valid_to == cast[0].at == new.valid_from  # the first vote for go
    assert new.status is FactStatus.ACTIVE and new.value == {"language": "go"}
    assert new.supersedes_id == prior.id
    assert new.source_event_ids == tuple(b.event_id for b in cast if b.surface == "go")


def test_a_paraphrase_only_change_never_invalidates_nor_opens_a_second_fact() -> None:
    prior = prior_fact("rust")
    result = decide(snapshot(votes(*["Rust lang"] * 5), prior), NOW, new_id)
    assert result.counts["invalidated"] == 0
    assert not [a for a in result.plan.actions if isinstance(a, CreateFact)]
    (revised,) = [a for a in result.plan.actions if isinstance(a, ReviseFact)]
    assert revised.after.value == {"language": "rust"}  # the value stands as it was


def test_half_the_evidence_elsewhere_but_the_mode_still_its_own_keeps_the_fact() -> None:
    # 2 rust, 1 go, 1 foster care: 50% outside its cluster, yet its cluster is the mode:
    # replacing it would replace a value with itself.
    prior = prior_fact("rust")
    result = decide(snapshot(votes("go", "rust", "foster care", "rust"), prior), NOW, new_id)
    assert result.counts["invalidated"] == 0
    assert result.counts["reinforced"] == 1


def test_a_pinned_prior_fact_is_never_touched() -> None:
    prior = prior_fact("rust").model_copy(update={"pinned": True})
    result = decide(snapshot(votes("go", "go", "go"), prior), NOW, new_id)
    assert not [a for a in result.plan.actions if isinstance(a, ReviseFact | CreateFact)]


# -- untrusted votes count zero (DESIGN, the write gate) --------------------------------------
def test_untrusted_votes_alone_elect_nothing_but_are_read_and_counted() -> None:
    cast = [ballot("go", JAN + timedelta(days=i), Trust.UNTRUSTED) for i in range(3)]
    result = decide(snapshot(cast), NOW, new_id)
    assert not [a for a in result.plan.actions if isinstance(a, CreateFact | ReviseFact)]
    assert result.counts["untrusted"] == 3 and result.counts["processed"] == 3
    assert [d.outcome for d in result.decisions] == ["ignored"]
    (move,) = [a for a in result.plan.actions if isinstance(a, MoveCursor)]
    assert move.after == cast[-1].observation_id  # read, and not read again


def test_untrusted_votes_do_not_outvote_the_fact_that_stands() -> None:
    # Three of five against the fact would close it (SCENARIOS 32), but the three are
    # untrusted: the two counted votes are the fact's own.
    prior = prior_fact("rust")
    cast = [
        ballot("go", JAN, Trust.UNTRUSTED),
        ballot("rust", JAN + timedelta(days=1)),
        ballot("go", JAN + timedelta(days=2), Trust.UNTRUSTED),
        ballot("rust", JAN + timedelta(days=3)),
        ballot("go", JAN + timedelta(days=4), Trust.UNTRUSTED),
    ]
    result = decide(snapshot(cast, prior), NOW, new_id)
    assert result.counts["invalidated"] == 0 and result.counts["untrusted"] == 3
    (revised,) = [a for a in result.plan.actions if isinstance(a, ReviseFact)]
    assert revised.op == "reinforce" and revised.after.value == {"language": "rust"}
    assert revised.after.source_event_ids[1:] == (cast[1].event_id, cast[3].event_id)


def test_an_elected_value_is_backed_by_counted_votes_only() -> None:
    cast = [
        ballot("go", JAN, Trust.UNTRUSTED),
        ballot("go", JAN + timedelta(days=1), Trust.UNTRUSTED),
        ballot("rust", JAN + timedelta(days=2), Trust.TRUSTED),
    ]
    (fact,) = active(decide(snapshot(cast), NOW, new_id).facts)
    assert fact.value == {"language": "rust"}
    assert fact.source_event_ids == (cast[2].event_id,)
    assert (fact.trust, fact.confidence, fact.valid_from) == (Trust.TRUSTED, 1.0, cast[2].at)


# -- SCENARIOS 33: drift ---------------------------------------------------------------------
def test_five_invalidations_spread_over_sixty_days_are_stable() -> None:
    times = [NOW - timedelta(days=d) for d in (0, 10, 20, 40, 55)]
    assert drift.in_window(times, NOW) == 3
    assert not drift.unstable(times, NOW)
    for day in range(0, 61):  # at most 4 in any 30 days, wherever the window ends
        assert not drift.unstable(times, NOW - timedelta(days=day))


def test_five_in_thirty_days_are_unstable_until_the_window_slides_past() -> None:
    times = [NOW - timedelta(days=d) for d in (1, 5, 10, 15, 20)]
    assert drift.unstable(times, NOW)
    assert not drift.unstable(times, NOW + timedelta(days=11))  # four left in the window
    assert not drift.unstable(times[:4], NOW)  # exactly four: not more than four


def test_one_drift_alert_on_the_transition_only() -> None:
    four = [NOW - timedelta(days=d) for d in (2, 4, 6, 8)]
    prior = prior_fact("rust")
    cast = votes("go", "go", "go", start=NOW - timedelta(days=1))
    tipped = decide(snapshot(cast, prior, invalidations=four), NOW, new_id)
    assert tipped.counts["invalidated"] == 1
    assert tipped.counts["drift_alerts"] == 1 and tipped.unstable
    again = decide(snapshot(cast, prior, invalidations=[*four, NOW]), NOW, new_id)
    assert again.counts["drift_alerts"] == 0 and again.unstable
    later = NOW + timedelta(days=60)  # the window has slid past all of them
    back = decide(snapshot(cast, prior, invalidations=[*four, NOW]), later, new_id)
    assert back.counts["drift_alerts"] == 0 and not back.unstable


# -- SCENARIOS 34: the cycle's record and cursor ---------------------------------------------
def test_an_empty_cycle_still_records_itself_and_moves_no_cursor() -> None:
    result = decide(snapshot([], cursor="a" * 32), NOW, new_id)
    (record,) = result.plan.actions
    assert isinstance(record, RecordCycle)
    assert record.counts == {
        "processed": 0,
        "untrusted": 0,
        "created": 0,
        "reinforced": 0,
        "invalidated": 0,
        "drift_alerts": 0,
    }


def test_a_cycle_moves_its_cursor_past_the_votes_it_read() -> None:
    cast = votes("rust", "go")
    result = decide(snapshot(cast, cursor=None), NOW, new_id)
    (move,) = [a for a in result.plan.actions if isinstance(a, MoveCursor)]
    assert (move.before, move.after, move.cursor_pass) == (None, cast[-1].observation_id, "derive")
    assert isinstance(result.plan.actions[-1], RecordCycle)


# -- policies and surface forms --------------------------------------------------------------
def test_policies_are_normalised_and_checked() -> None:
    policies = Policies.of({"Employer": "vote", "home-city": Policy.LATEST})
    assert policies.votes("employer") and not policies.votes("home_city")
    assert not policies.votes("anything_else") and not policies.votes(None)
    with pytest.raises(ConfigurationError, match="'latest' or 'vote'"):
        Policies.of({"employer": "majority"})


def test_surface_forms() -> None:
    assert surface({"language": " Rust "}) == "Rust"
    assert surface({"count": 3}) == "3"
    assert surface({"b": 1, "a": "x"}) == "a=x, b=1"


# -- order does not matter -------------------------------------------------------------------
FORMS = sorted(VECTORS)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from(FORMS), min_size=1, max_size=12),
    st.randoms(use_true_random=False),
    st.booleans(),
)
def test_clusters_and_the_canonical_value_do_not_depend_on_input_order(
    forms: list[str], rng: object, clustered: bool
) -> None:
    cast = votes(*forms)  # distinct times: no recency tie is left to order
    shuffled = list(cast)
    rng.shuffle(shuffled)  # type: ignore[attr-defined]
    distance = DISTANCE if clustered else None
    a, b = tally(cast, VECTORS, distance), tally(shuffled, VECTORS, distance)
    assert a.clusters == b.clusters
    assert a.winner == b.winner
    assert cluster_forms(forms, VECTORS, distance) == cluster_forms(
        list(reversed(forms)), VECTORS, distance
    )


def test_a_form_without_a_vector_is_a_cluster_of_its_own() -> None:
    found = cluster_forms(["rust", "Rust lang", "unknown"], {"rust": VECTORS["rust"]}, DISTANCE)
    assert len(set(found.values())) == 3
    assert np.isfinite(list(found.values())).all()
