"""`Memory.search`: hybrid recall over the facts that may be served, on every backend.

What is served is what `facts` serves (now, `as_of`, `known_at`), never a superseded,
retracted, candidate or quarantined fact as current; a contested fact says so; each hit says
which arm found it; another subject or project is never searched unless asked.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from distill import Hit, Memory
from distill.core.recall import MAX_SEARCH_LIMIT
from distill.errors import InvalidInput
from tests.conftest import FakeClock

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def say(mem: Memory, day: int, predicate: str, value: dict[str, Any], **event: Any) -> None:
    action = event.pop("action", "create")
    mem.add_event(
        subject=event.pop("subject", "u1"),
        occurred_at=T0 + timedelta(days=day),
        claims=[{"predicate": predicate, "value": value, "action": action}],
        **event,
    )


def remember(mem: Memory, day: int, text: str, **event: Any) -> None:
    mem.add_event(
        subject=event.pop("subject", "u1"),
        occurred_at=T0 + timedelta(days=day),
        claims=[{"text": text}],
        **event,
    )


def texts(hits: list[Hit]) -> list[str]:
    return [h.fact.text for h in hits]


def test_a_rare_word_puts_its_fact_first_with_the_arms_that_found_it(memory: Memory) -> None:
    remember(memory, 0, "Caroline got a necklace from her grandmother in Sweden.")
    remember(memory, 1, "Caroline likes to paint sunsets by the lake.")
    remember(memory, 2, "Caroline is training for a marathon in the autumn.")
    say(memory, 3, "bike_count", {"count": 3})
    memory.consolidate()

    hits = memory.search("What does the necklace symbolize?", subject="u1")

    assert hits[0].fact.text.startswith("Caroline got a necklace")
    assert hits[0].parts["lexical"]["rank"] == 1
    assert "vector" in hits[0].parts  # every fact has a recall vector
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert hits[0].score == pytest.approx(sum(1 / (1 + p["rank"]) for p in hits[0].parts.values()))
    found = memory.search("bike count", subject="u1", limit=1)
    assert [h.fact.predicate for h in found] == ["bike_count"]
    assert found[0].to_dict()["evidence_event_ids"] == list(found[0].fact.source_event_ids)


def test_only_what_is_served_now_is_searched(memory: Memory, clock: FakeClock) -> None:
    say(memory, 0, "home_city", {"city": "Lyon"})
    say(memory, 10, "home_city", {"city": "Paris"}, action="supersede")  # Lyon superseded
    say(memory, 1, "employer", {"name": "Acme"})
    say(memory, 2, "employer", {"name": "Initech"}, source="web", trust="third_party")
    remember(memory, 3, "The wrong office is in Marseille.")
    say(
        memory,
        4,
        "membership",
        {"club": "chess"},
    )
    memory.consolidate()
    wrong = memory.search("Marseille office")[0]
    memory.retract(wrong.fact.id, reason="never said")
    [membership] = [f for f in memory.facts("u1") if f.predicate == "membership"]

    served = {f.id for f in memory.facts("u1")}
    for question in ("Lyon", "Initech", "Marseille office", "home city", "employer", "chess"):
        for hit in memory.search(question, limit=MAX_SEARCH_LIMIT):
            assert hit.fact.id in served, (question, hit.fact.text)
    assert "Lyon" not in " ".join(texts(memory.search("Lyon", limit=MAX_SEARCH_LIMIT)))
    assert membership.id in {h.fact.id for h in memory.search("chess club")}


def test_a_fact_whose_stated_end_has_passed_is_not_served(memory: Memory) -> None:
    memory.add_event(
        subject="u1",
        occurred_at=T0,
        claims=[
            {
                "predicate": "team",
                "value": {"name": "Reading"},
                "valid_to": (T0 + timedelta(days=30)).isoformat(),
            }
        ],
    )
    memory.consolidate()
    assert memory.search("Reading team") == []
    assert [h.fact.value for h in memory.search("team", as_of=T0 + timedelta(days=5))] == [
        {"name": "Reading"}
    ]


def test_a_contested_fact_is_marked_with_its_open_set(memory: Memory) -> None:
    say(memory, 1, "language", {"lang": "fr"}, source="crm")
    say(memory, 1, "language", {"lang": "de"}, source="billing")
    say(memory, 2, "home_city", {"city": "Lyon"})
    memory.consolidate()
    [conflict] = memory.conflicts("u1")

    hits = {h.fact.predicate: h for h in memory.search("language lang", subject="u1")}

    assert hits["language"].contested
    assert hits["language"].conflict_ids == (conflict.id,)
    assert hits["language"].to_dict()["contested"] is True
    assert not hits["home_city"].contested
    memory.resolve_conflict(conflict.id, keep=hits["language"].fact.id)
    assert not memory.search("language", subject="u1", limit=1)[0].contested


def test_as_of_searches_what_was_true_then(memory: Memory) -> None:
    say(memory, 0, "home_city", {"city": "Lyon"})
    say(memory, 10, "home_city", {"city": "Paris"}, action="supersede")
    memory.consolidate()

    now = memory.search("home city", limit=5)
    then = memory.search("home city", as_of=T0 + timedelta(days=5), limit=5)
    before = memory.search("home city", as_of=T0 - timedelta(days=1))

    assert [h.fact.value for h in now] == [{"city": "Paris"}]
    assert [h.fact.value for h in then] == [{"city": "Lyon"}]
    assert then[0].fact.status.value == "superseded"  # retired since, but true then
    assert before == []


def test_known_at_searches_what_distill_believed_then(memory: Memory, clock: FakeClock) -> None:
    say(memory, 0, "home_city", {"city": "Lyon"})
    memory.consolidate()
    believed = clock.now()
    clock.advance(hours=1)
    say(memory, 10, "home_city", {"city": "Paris"}, action="supersede")
    memory.consolidate()

    then = memory.search("home city", known_at=believed)
    now = memory.search("home city")

    assert [h.fact.value for h in then] == [{"city": "Lyon"}]
    assert then[0].fact.status.value == "active"  # as it read then
    assert [h.fact.value for h in now] == [{"city": "Paris"}]
    assert memory.search("home city", known_at=T0 - timedelta(days=400)) == []


def test_subjects_and_projects_stay_apart(memory: Memory) -> None:
    remember(memory, 0, "Zanzibar is where u1 spent the summer.")
    remember(memory, 0, "Zanzibar is where u2 went diving.", subject="u2")
    remember(memory, 0, "Zanzibar trip for the other tenant.", project="other")
    memory.consolidate()

    mine = memory.search("Zanzibar", subject="u1")
    everyone = memory.search("Zanzibar")
    other = memory.search("Zanzibar", project="other")

    assert {h.fact.subject for h in mine} == {"u1"}
    assert {h.fact.subject for h in everyone} == {"u1", "u2"}
    assert {h.fact.project for h in everyone} == {"default"}
    assert texts(other) == ["Zanzibar trip for the other tenant."]
    assert memory.search("Zanzibar", project="nobody") == []


def test_kinds_and_included_evidence(memory: Memory) -> None:
    memory.add_event(
        subject="u1",
        occurred_at=T0,
        text="I ran the Lyon marathon and I have 3 bikes.",
        claims=[
            {"predicate": "bike_count", "value": {"count": 3}},
            {"predicate": "ran_race", "value": {"race": "Lyon marathon"}, "kind": "event"},
            {"text": "Runs a marathon every spring in Lyon."},
        ],
    )
    memory.consolidate()

    assert {h.fact.kind.value for h in memory.search("Lyon marathon", kinds=["event"])} == {"event"}
    assert {h.fact.kind.value for h in memory.search("marathon", kinds=("memory", "state"))} <= {
        "memory",
        "state",
    }
    [hit] = memory.search("bikes", kinds=["state"], include=["events"], limit=1)
    assert [e.text for e in hit.events] == ["I ran the Lyon marathon and I have 3 bikes."]
    assert hit.to_dict()["events"][0]["id"] == hit.fact.source_event_ids[0]
    assert memory.search("bikes", limit=1)[0].events == ()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"query": ""}, "query"),
        ({"query": "   "}, "query"),
        ({"query": "x" * 5000}, "query"),
        ({"query": "bikes", "limit": 0}, "limit"),
        ({"query": "bikes", "limit": MAX_SEARCH_LIMIT + 1}, "limit"),
        ({"query": "bikes", "limit": True}, "limit"),
        ({"query": "bikes", "kinds": ["states"]}, "kinds"),
        ({"query": "bikes", "kinds": []}, "kinds"),
        ({"query": "bikes", "include": ["history"]}, "include"),
        ({"query": "bikes", "as_of": "last week"}, "as_of"),
        ({"query": "bikes", "known_at": "soon"}, "known_at"),
    ],
)
def test_bad_arguments_are_refused_clearly(
    memory: Memory, args: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidInput, match=message):
        memory.search(**args)


def test_a_search_writes_nothing(memory: Memory) -> None:
    remember(memory, 0, "Caroline paints sunsets.")
    memory.consolidate()
    before = memory.store.counts(None), memory.audit(limit=1000)
    cached = memory.store.cached_embeddings(memory.embedder.model_id, ["x"])
    memory.search("a question never asked before about sunsets")
    assert (memory.store.counts(None), memory.audit(limit=1000)) == before
    assert memory.store.cached_embeddings(memory.embedder.model_id, ["x"]) == cached


def test_syntax_in_a_question_is_just_words(memory: Memory) -> None:
    remember(memory, 0, "NEAR the station there is a bakery.")
    memory.consolidate()
    for question in (
        'bakery" OR "x',
        "NOT bakery",
        "bakery*",
        "col:bakery",
        "(bakery",
        "a & b | !c",
    ):
        assert texts(memory.search(question))[0] == "NEAR the station there is a bakery."


def test_context_with_a_query_puts_the_relevant_facts_first(memory: Memory) -> None:
    for day in range(8):
        say(memory, day, f"pet_{day}", {"name": f"pet{day}"})
    remember(memory, 9, "Allergic to penicillin since childhood.")
    memory.consolidate()

    block = memory.context("u1", query="penicillin allergy", budget_tokens=60)

    assert block.items[0].fact.text == "Allergic to penicillin since childhood."
    assert block.left_out > 0


WORDS = ["lyon", "paris", "bikes", "chess", "tea", "coffee"]


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    steps=st.lists(
        st.tuples(st.integers(0, 20), st.sampled_from(["city", "drink"]), st.sampled_from(WORDS)),
        min_size=1,
        max_size=8,
    ),
    question=st.sampled_from(WORDS),
    days=st.integers(-1, 25),
)
def test_search_never_serves_what_facts_would_not(
    database: str, backend: str, steps: list[tuple[int, str, str]], question: str, days: int
) -> None:
    """Over random histories of changes: every hit, now or as of any day, is a fact `facts`
    serves for the same time; and a fact served that holds the question's word is found."""
    from distill.adapters.embed.hashing import HashingEmbedder

    project = f"p{abs(hash((tuple(steps), question, days))) % 10**9}"
    with Memory(
        database, embedder=HashingEmbedder(256), clock=FakeClock(T0 + timedelta(days=60))
    ) as mem:
        for day, attribute, word in steps:
            mem.add_event(
                project=project,
                subject="u1",
                occurred_at=T0 + timedelta(days=day),
                claims=[{"predicate": attribute, "value": {"v": word}, "action": "supersede"}],
            )
        mem.consolidate()
        when = T0 + timedelta(days=days)
        for as_of in (None, when):
            served = {f.id for f in mem.facts("u1", project, as_of=as_of)}
            hits = mem.search(question, "u1", project, as_of=as_of, limit=MAX_SEARCH_LIMIT)
            assert {h.fact.id for h in hits} <= served
            holding = {
                f.id for f in mem.facts("u1", project, as_of=as_of) if f.value == {"v": question}
            }
            assert holding <= {h.fact.id for h in hits}


def test_the_question_embedded_beside_the_reads_gives_the_same_hits_as_in_turn(
    memory: Memory,
) -> None:
    """The pool changes when the question is embedded, never what is found: every search
    here, run with the question embedded on the pool's thread and again on the caller's
    (the pool with no thread, as every search ran before it), returns the same hits, scores,
    parts, open sets and evidence, in the same order."""
    from distill.embedding_pool import EmbeddingPool

    say(memory, 1, "language", {"lang": "fr"}, source="crm")
    say(memory, 1, "language", {"lang": "de"}, source="billing")
    say(memory, 2, "home_city", {"city": "Lyon"})
    say(memory, 3, "home_city", {"city": "Paris"}, action="supersede")
    say(memory, 2, "home_city", {"city": "Oslo"}, subject="u2")
    remember(memory, 4, "Caroline got a necklace from her grandmother in Sweden.")
    remember(memory, 5, "Caroline paints sunsets by the lake in Lyon.", subject="u2")
    memory.consolidate()
    assert memory.conflicts("u1")  # a contested fact is among the hits below
    searches: list[dict[str, Any]] = [
        {"query": "language lang", "subject": "u1", "include": ["events"]},
        {"query": "language lang city", "include": ["events"]},
        {"query": "Lyon city sunsets", "limit": 3},
        {"query": "necklace Sweden", "subject": "u1", "kinds": ["memory"]},
        {"query": "home city", "subject": "u1", "as_of": T0 + timedelta(days=2, hours=1)},
        {"query": "home city", "known_at": memory.clock.now()},
    ]

    hashing = memory.embedder
    threads: set[int] = set()

    class Threaded:  # the hashing embedder, but as a model the pool embeds beside the reads
        model_id, max_batch, dimension = hashing.model_id, hashing.max_batch, hashing.dimension

        def embed_batch(self, texts: list[str]) -> Any:
            threads.add(threading.get_ident())
            return hashing.embed_batch(texts)

    def run() -> list[list[dict[str, Any]]]:
        return [[h.to_dict() for h in memory.search(**s)] for s in searches]

    memory.embedder = Threaded()
    beside = run()
    assert threads and threading.get_ident() not in threads
    memory.embedding_pool = EmbeddingPool(threads=0)
    in_turn = run()

    assert threading.get_ident() in threads
    assert beside == in_turn
    assert all(beside)
    assert any(h["contested"] for h in beside[0]) and any(h["contested"] for h in beside[1])


def test_searches_from_many_threads_at_once_find_what_each_finds_alone(memory: Memory) -> None:
    """More searches at once than the pool has threads: some embed beside their reads, the
    others in turn; each finds what it finds alone."""
    from concurrent.futures import ThreadPoolExecutor

    from distill.embedding_pool import EMBEDDING_THREADS

    hashing = memory.embedder

    class Slow:  # a model that takes a while, so that the pool's threads are all busy at once
        model_id, max_batch, dimension = hashing.model_id, hashing.max_batch, hashing.dimension

        def embed_batch(self, texts: list[str]) -> Any:
            time.sleep(0.02)
            return hashing.embed_batch(texts)

    for day, text in enumerate(
        [
            "Caroline got a necklace from her grandmother in Sweden.",
            "Caroline paints sunsets by the lake.",
            "Melanie runs a marathon every spring.",
            "Melanie keeps three bikes in the garage.",
        ]
    ):
        remember(memory, day, text)
    say(memory, 5, "home_city", {"city": "Lyon"})
    memory.consolidate()
    memory.embedder = Slow()
    questions = ["necklace", "sunsets lake", "marathon spring", "bikes", "home city Lyon"] * 3
    alone = {q: [h.to_dict() for h in memory.search(q, subject="u1")] for q in questions}

    with ThreadPoolExecutor(3 * EMBEDDING_THREADS) as callers:
        together = list(
            callers.map(lambda q: [h.to_dict() for h in memory.search(q, subject="u1")], questions)
        )

    assert together == [alone[q] for q in questions]
