"""Topics on values (`core.topics`): where mentions come from, label propagation and its
ties, SCENARIOS 37 (two 3-cliques joined by one weak edge), retirement of a changed
community, only the touched components run again, names and embeddings; and the property
that any order of the same mentions gives the same topics."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distill.core.apply import validate
from distill.core.cortex_plan import RecordMentions, WriteTopic
from distill.core.event_in import FUTURE_MARGIN_KEY, EventIn
from distill.core.models import (
    NOW,
    Claim,
    Event,
    Observation,
    Outcome,
    Trust,
)
from distill.core.patterns import Mention, MentionOrigin, Topic, TopicStatus, topic_id
from distill.core.plan import Plan
from distill.core.topics import (
    CREATED,
    KEPT,
    RETIRED,
    REVIVED,
    TopicSnapshot,
    communities,
    decide_topics,
    event_mentions,
    links,
    mean_embedding,
    propagate,
    text_entities,
    topic_name,
)
from distill.errors import IntegrityViolation

T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
_ids = itertools.count()


def event(text: str = "", entities: tuple[str, ...] = (), subject: str = "u") -> Event:
    n = next(_ids)
    claims = (Claim(text="noted", entities=entities),) if entities else ()
    return Event(
        id=f"{n:032x}",
        project="p",
        subject=subject,
        text=text,
        occurred_at=T0,
        recorded_at=T0 + timedelta(seconds=n),
        source="api",
        trust=Trust.TRUSTED,
        claims=claims,
        idempotency_key=f"k{n}",
    )


def mentions_of(*groups: tuple[str, ...]) -> list[Mention]:
    """One event per group, naming its entities."""
    found = []
    for group in groups:
        eid = f"{next(_ids):032x}"
        found += [
            Mention(
                project="p",
                subject="u",
                event_id=eid,
                entity=e,
                name=e.title(),
                origin=MentionOrigin.CLAIMS,
                recorded_at=T0,
            )
            for e in group
        ]
    return found


# Two triangles, each pair named together twice; one event links c and d once.
TWO_CLIQUES = [
    *[("a", "b"), ("a", "c"), ("b", "c")] * 2,
    *[("d", "e"), ("d", "f"), ("e", "f")] * 2,
    ("c", "d"),
]


def snapshot(events: list[Event], mentions: list[Mention], topics: list[Topic]) -> TopicSnapshot:
    return TopicSnapshot("p", "u", mentions, events, [], topics)


def topics_made(result_plan: Plan) -> list[Topic]:
    return [a.after for a in result_plan.actions if isinstance(a, WriteTopic)]


# -- mentions --------------------------------------------------------------------------------------
def test_the_claims_entities_come_first() -> None:
    e = event("Alice met Bob", entities=("Lyon", "lyon", "Paris"))
    found = event_mentions(e, [], T0)
    assert [(m.entity, m.name, m.origin) for m in found] == [
        ("lyon", "Lyon", MentionOrigin.CLAIMS),
        ("paris", "Paris", MentionOrigin.CLAIMS),
    ]


def observed(e: Event, entities: tuple[str, ...], extractor: str = "llm") -> Observation:
    claim = Claim(text="x", entities=entities)
    return Observation(
        id="o",
        project="p",
        subject="u",
        event_id=e.id,
        fact_id=None,
        extractor=extractor,
        claim=claim,
        claim_hash="h",
        source="api",
        trust=Trust.TRUSTED,
        occurred_at=T0,
        outcome=Outcome.CREATED,
        reason="",
    )


def test_the_models_entities_next_only_those_the_text_names() -> None:
    e = event("I flew to new york with ada")
    found = event_mentions(e, [observed(e, ("New York", "Ada", "Atlantis"))], T0)
    assert [(m.entity, m.origin) for m in found] == [
        ("new york", MentionOrigin.EXTRACTED),
        ("ada", MentionOrigin.EXTRACTED),
    ]


def test_offline_the_names_the_text_spells() -> None:
    e = event("Yesterday Alice met Bob and NASA people. The weather was fine.")
    found = event_mentions(e, [], T0)
    named = {(m.entity, m.name) for m in found}
    assert named == {("alice", "Alice"), ("bob", "Bob"), ("nasa", "NASA")}
    assert {m.origin for m in found} == {MentionOrigin.TEXT}


def test_a_sentences_grammar_words_are_not_names() -> None:
    assert text_entities("The user said she likes tea. They went home.") == []


# -- label propagation -----------------------------------------------------------------------------
def test_scenario_37_two_cliques_joined_by_a_weak_edge_are_two_communities() -> None:
    graph = links(mentions_of(*TWO_CLIQUES))
    assert graph[("c", "d")] == 1 and graph[("a", "b")] == 2
    assert communities(graph) == [("a", "b", "c"), ("d", "e", "f")]


def test_ties_go_to_the_smaller_label() -> None:
    # m is visited first and hears x and z with equal weight: it takes x, the smaller label;
    # with z weighing more, z.
    assert propagate({("m", "x"): 1, ("m", "z"): 1})["m"] == "x"
    assert propagate({("m", "x"): 1, ("m", "z"): 2})["m"] == "z"


def test_a_lone_pair_is_a_community_and_a_single_entity_is_none() -> None:
    graph = links(mentions_of(("x", "y"), ("z",)))
    assert communities(graph) == [("x", "y")]


def test_an_event_naming_many_entities_links_only_the_first_sixteen() -> None:
    names = tuple(f"e{i:02d}" for i in range(40))
    graph = links(mentions_of(names))
    assert len(graph) == 16 * 15 // 2


# -- the decision ----------------------------------------------------------------------------------
def first_run(groups: list[tuple[str, ...]]) -> tuple[list[Event], list[Topic]]:
    events = [event(entities=g) for g in groups]
    result = decide_topics(snapshot(events, [], []), T0)
    return events, topics_made(result.plan)


def test_scenario_37_ids_come_from_the_sorted_member_set() -> None:
    _, made = first_run(TWO_CLIQUES)
    assert sorted(t.members for t in made) == [("a", "b", "c"), ("d", "e", "f")]
    for t in made:
        assert t.id == topic_id("p", "u", t.members)


def test_scenario_37_a_changed_membership_retires_the_old_topic() -> None:
    events, made = first_run(TWO_CLIQUES)
    stored = []
    for e in events:
        stored += event_mentions(e, [], T0)
    # g joins the first triangle, strongly.
    later = [event(entities=("a", "g")), event(entities=("b", "g")), event(entities=("c", "g"))]
    result = decide_topics(snapshot(later, stored, made), T0 + timedelta(days=1))
    writes = [a for a in result.plan.actions if isinstance(a, WriteTopic)]
    retired = [a.after for a in writes if a.after.status is TopicStatus.RETIRED]
    created = [a.after for a in writes if a.before is None]
    assert [t.members for t in retired] == [("a", "b", "c")]
    assert retired[0].retired_at == T0 + timedelta(days=1)
    assert [t.members for t in created] == [("a", "b", "c", "g")]
    assert result.plan.outcomes == {RETIRED: 1, CREATED: 1, KEPT: 1}
    validate(result.plan, "p", "u")


def test_only_components_with_new_mentions_run_again() -> None:
    events, made = first_run([("a", "b"), ("x", "y")])
    stored = [m for e in events for m in event_mentions(e, [], T0)]
    later = [event(entities=("a", "c"))]  # touches a's component only
    result = decide_topics(snapshot(later, stored, made), T0)
    writes = [a for a in result.plan.actions if isinstance(a, WriteTopic)]
    touched = {m for a in writes for m in a.after.members}
    assert "x" not in touched and "y" not in touched
    assert result.plan.outcomes[KEPT] == 0  # x-y was not even looked at


def test_the_same_community_found_again_brings_its_topic_back() -> None:
    _, made = first_run([("a", "b")])
    retired = made[0].model_copy(update={"status": TopicStatus.RETIRED, "retired_at": T0})
    stored = mentions_of(("a", "b"))
    result = decide_topics(snapshot([event(entities=("a", "b"))], stored, [retired]), T0)
    [write] = [a for a in result.plan.actions if isinstance(a, WriteTopic)]
    assert write.before == retired and write.after.status is TopicStatus.ACTIVE
    assert write.after.retired_at is None and result.plan.outcomes == {REVIVED: 1}


def test_mentions_are_recorded_once_per_event_with_their_entities() -> None:
    e = event(entities=("a", "b"))
    result = decide_topics(snapshot([e], [], []), T0)
    [record] = [a for a in result.plan.actions if isinstance(a, RecordMentions)]
    assert record.event_id == e.id and [m.entity for m in record.mentions] == ["a", "b"]


def test_names_list_up_to_three_members_strongest_first() -> None:
    graph = links(mentions_of(("a", "b"), ("a", "c"), ("a", "d"), ("b", "c")))
    names = {k: k.upper() for k in "abcd"}
    assert topic_name(("a", "b", "c", "d"), names, graph) == "A, B, C +1"
    assert topic_name(("b", "c"), names, graph) == "B, C"


def test_the_embedding_is_the_mean_of_the_members_that_have_one() -> None:
    vectors = {"a": [1.0, 0.0], "b": [0.0, 1.0]}
    assert mean_embedding(("a", "b", "c"), vectors) == (0.5, 0.5)
    assert mean_embedding(("c", "d"), vectors) is None


def test_a_model_name_is_used_when_load_found_one() -> None:
    events = [event(entities=("a", "b"))]
    snap = TopicSnapshot("p", "u", [], events, [], [], model_names={("a", "b"): ("AB", "m/1")})
    [topic] = topics_made(decide_topics(snap, T0).plan)
    assert (topic.name, topic.named_by) == ("AB", "m/1")


@pytest.mark.parametrize(
    "change",
    [{"members": ("a",), "names": ("A",)}, {"members": ("b", "a")}, {"id": "0" * 32}],
)
def test_the_validator_refuses_a_topic_not_of_its_member_set(change: dict[str, object]) -> None:
    _, [topic] = first_run([("a", "b")])
    plan = Plan()
    plan.add(WriteTopic(None, topic.model_copy(update=change), "bad"))
    with pytest.raises(IntegrityViolation):
        validate(plan, "p", "u")


# -- the property: any order, the same topics ------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(
    groups=st.lists(
        st.lists(st.sampled_from("abcdefghij"), min_size=1, max_size=4, unique=True),
        min_size=1,
        max_size=25,
    ),
    data=st.data(),
)
def test_shuffled_input_gives_the_same_topic_ids_and_memberships(
    groups: list[list[str]], data: st.DataObject
) -> None:
    mentions = mentions_of(*[tuple(g) for g in groups])
    shuffled = data.draw(st.permutations(mentions))
    found = communities(links(mentions))
    assert communities(links(shuffled)) == found
    # The decision too, mentions given as stored in another order.
    new = event(entities=("a", "b"))
    one = decide_topics(snapshot([new], mentions, []), T0)
    two = decide_topics(snapshot([new], list(shuffled), []), T0)
    assert [(t.id, t.members) for t in topics_made(one.plan)] == [
        (t.id, t.members) for t in topics_made(two.plan)
    ]
    for members in found:  # every community is disjoint from the others
        assert all(set(members).isdisjoint(o) for o in found if o != members)


def test_an_event_walked_again_records_no_second_mention() -> None:
    e = event(entities=("a", "b"))
    stored = event_mentions(e, [], T0)
    _, made = first_run([("a", "b")])
    result = decide_topics(snapshot([e], stored, made), T0)
    assert [a for a in result.plan.actions if isinstance(a, RecordMentions)] == []


def test_a_callers_bad_entity_is_refused_and_a_models_dropped() -> None:
    context = {NOW: T0, FUTURE_MARGIN_KEY: timedelta(days=1)}
    for bad in (["x" * 500], [""], [3], [f"n{i}" for i in range(40)]):
        with pytest.raises(ValueError):
            EventIn.model_validate(
                {"subject": "u", "claims": [{"text": "x", "entities": bad}]}, context=context
            )
    answer = {"text": "x", "entities": ["Ada", "", "x" * 500, 3, "ada", " Bob  Lee "]}
    assert Claim.model_validate(answer).entities == ("Ada", "Bob Lee")
