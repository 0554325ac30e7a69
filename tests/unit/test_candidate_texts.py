"""A candidate's identity texts (what the engine embeds for it, and what adjudication looks
its vectors up by) are worked out once, on the preparation thread, and read again when the
job is decided: the same tuple both times, with what each kind of claim embeds."""

from __future__ import annotations

from distill.core.models import Claim
from distill.core.working import Candidate
from distill.passes.adjudication import identity_texts_of
from tests.factories import make_event


def candidate(**claim: object) -> Candidate:
    event = make_event("I have 3 bikes now", id="e1", subject="ada")
    return Candidate(event, Claim.model_validate(claim), "h", "claims")


def test_a_state_claim_embeds_its_name_and_its_name_with_its_value() -> None:
    c = candidate(predicate="bike_count", value={"count": 3})
    assert identity_texts_of(c) == ("bike count", "bike count: 3")
    assert identity_texts_of(c) is c.identity_texts  # once, then read again


def test_an_occurrence_and_a_memory_embed_their_recall_text() -> None:
    occurrence = candidate(predicate="ran_race", value={"km": 10}, kind="event")
    assert identity_texts_of(occurrence) == ("ran race: 10",)
    assert identity_texts_of(candidate(text=" Likes tea ", kind="memory")) == ("Likes tea",)
