"""Topics: communities of entities that travel together in a subject's events.

**Entities and mentions.** An event names entities in three ways, first found wins:

1. the `entities` of the claims it carries (the caller said so: origin `claims`);
2. the `entities` of the claims the extractor proposed for it (the model said so, in the
   answer schema of `prompts/extract_v2.system.txt`: origin `extracted`), each kept only if
   the event's text names it;
3. offline, when neither named any: the names its text spells (`core.statements.read`:
   capitalised inside a sentence, mixed case or all capitals, or capitalised at a sentence's
   start when it is no grammar word), origin `text`. A fallback: "New York" reads as two
   names, a lower-case name as none, and a capitalised common word that begins a sentence
   ("Please", "Send") as a name.

An entity's key is its name case-folded with its spaces collapsed (read from text, also in
the singular, as `statements` reads names): `Ada`, `ada` and `ADA` are one entity. A mention
links an event to an entity; it is written once, when the pass first walks the event.

**Communities.** Two entities are linked by the number of events naming both (at most
`PAIRED_PER_EVENT` names of an event are paired, the first by key, so a list of fifty names
is not 1,225 links; at most `MAX_LINKS` links per subject, the strongest). Weighted label
propagation: each entity starts with its own key as label; a sweep visits the entities in key
order and gives each the label of greatest total weight among its neighbours, ties to the
smaller label; sweeps stop when nothing changes, or after `MAX_SWEEPS`. Nothing depends on
the order the events or mentions came in: every iteration is over sorted keys and the
weights are integer counts, so the same mentions in any order give the same communities
(a property test shuffles them).

**Topics.** A community of two or more entities is a topic whose id is the hash of its
scope and sorted member set (`patterns.topic_id`), its name the names of up to three
members, strongest first (`topic_name`); its embedding the mean of its members' (of those
that have one). When a community changes, the topic of its old member set is retired (kept,
with `retired_at`), never left standing beside the new one; the same set found again later
brings its topic back.

**Only what changed is run again.** Label propagation over a connected component depends on
that component alone, so a run recomputes only the components holding an entity named by an
event new since the pass's cursor (`pass_cursors`, moved in the same transaction): topics of
untouched components stay as they are without being looked at. The events walked are those
whose extraction is done (a pending job's event waits, so that a model's entities are not
missed for the offline fallback). An extraction watermark (a hash per fact of what it was
extracted from) would plug in at `changed_entities`: the entities of facts whose hash moved
join the new events' entities there.
"""

from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from distill.core.cortex_plan import RecordMentions, WriteTopic
from distill.core.models import Event, Observation
from distill.core.names import singular
from distill.core.passes import Decision, PassResult
from distill.core.patterns import Mention, MentionOrigin, Topic, TopicStatus, topic_id
from distill.core.plan import Plan
from distill.core.statements import read

MIN_MEMBERS = 2  # a community of one entity is that entity, not a topic
MAX_SWEEPS = 20  # label propagation settles in a handful on real graphs; a bound for the rest
PAIRED_PER_EVENT = 16  # names of one event linked pairwise (120 links at most)
MAX_LINKS = 50_000  # links per subject kept for propagation, the strongest
NAMED_MEMBERS = 3  # members a topic's name lists
EMBEDDING_DIGITS = 6  # decimals of a stored topic embedding: float32 has about seven

CREATED = "created"
RETIRED = "retired"
REVIVED = "revived"
KEPT = "kept"

_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)


def entity_key(name: str) -> str:
    return " ".join(unicodedata.normalize("NFC", name).casefold().split())


# -- mentions --------------------------------------------------------------------------------------
def text_entities(text: str) -> list[tuple[str, str]]:
    """(key, name) of the names a text spells, in the order first written (the fallback)."""
    keys = read(text).entities
    found: dict[str, str] = {}
    for word in _WORD.findall(unicodedata.normalize("NFKC", text)):
        key = singular(word.casefold())
        if key in keys and key not in found:
            found[key] = word
    for key in sorted(keys - found.keys()):
        found[key] = key
    return list(found.items())


def event_mentions(
    event: Event, extracted: Sequence[Observation], recorded_at: datetime
) -> list[Mention]:
    """The entities `event` names (see the module docstring for the order of the sources)."""
    named: list[tuple[str, MentionOrigin]] = [
        (name, MentionOrigin.CLAIMS) for claim in event.claims for name in claim.entities
    ]
    if not named:
        # A model's entity counts only if the event's text names it: the model proposes,
        # and a name it made up links nothing.
        said = entity_key(event.text)
        named = [
            (name, MentionOrigin.EXTRACTED)
            for o in extracted
            if o.event_id == event.id and o.extractor != "claims"
            for name in o.claim.entities
            if entity_key(name) in said
        ]
    pairs = [(entity_key(n), n, origin) for n, origin in named]
    if not pairs and event.text.strip():
        pairs = [(key, name, MentionOrigin.TEXT) for key, name in text_entities(event.text)]
    mentions: dict[str, Mention] = {}
    for key, name, origin in pairs:
        if key and key not in mentions:
            mentions[key] = Mention(
                project=event.project,
                subject=event.subject,
                event_id=event.id,
                entity=key,
                name=name,
                origin=origin,
                recorded_at=recorded_at,
            )
    return list(mentions.values())


# -- the graph -------------------------------------------------------------------------------------
Links = dict[tuple[str, str], int]


def links(mentions: Iterable[Mention]) -> Links:
    """Co-occurrence counts of entity pairs (a < b), over events."""
    by_event: dict[str, set[str]] = defaultdict(set)
    for m in mentions:
        by_event[m.event_id].add(m.entity)
    counted: Links = defaultdict(int)
    for entities in by_event.values():
        paired = sorted(entities)[:PAIRED_PER_EVENT]
        for i, a in enumerate(paired):
            for b in paired[i + 1 :]:
                counted[(a, b)] += 1
    if len(counted) > MAX_LINKS:
        kept = sorted(counted.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_LINKS]
        return dict(kept)
    return dict(counted)


def _neighbours(graph: Links) -> dict[str, dict[str, int]]:
    near: dict[str, dict[str, int]] = defaultdict(dict)
    for (a, b), weight in graph.items():
        near[a][b] = weight
        near[b][a] = weight
    return near


def components(graph: Links) -> list[set[str]]:
    """Connected components of the linked entities, each as a set."""
    near = _neighbours(graph)
    seen: set[str] = set()
    found = []
    for start in sorted(near):
        if start in seen:
            continue
        part, stack = set(), [start]
        while stack:
            node = stack.pop()
            if node in part:
                continue
            part.add(node)
            stack.extend(n for n in near[node] if n not in part)
        seen |= part
        found.append(part)
    return found


def propagate(graph: Links, only: set[str] | None = None) -> dict[str, str]:
    """Weighted label propagation (see the module docstring): entity → community label.
    With `only`, over those entities and the links among them."""
    near = _neighbours(graph)
    nodes = sorted(near if only is None else only & near.keys())
    label = {n: n for n in nodes}
    for _ in range(MAX_SWEEPS):
        moved = False
        for node in nodes:
            weights: dict[str, int] = defaultdict(int)
            for other, weight in near[node].items():
                if other in label:
                    weights[label[other]] += weight
            if not weights:
                continue
            best = min(weights.items(), key=lambda kv: (-kv[1], kv[0]))[0]
            if best != label[node]:
                label[node] = best
                moved = True
        if not moved:
            break
    return label


def communities(graph: Links, only: set[str] | None = None) -> list[tuple[str, ...]]:
    """Communities of at least `MIN_MEMBERS` entities, each sorted, in order."""
    groups: dict[str, list[str]] = defaultdict(list)
    for node, label in propagate(graph, only).items():
        groups[label].append(node)
    return sorted(tuple(sorted(g)) for g in groups.values() if len(g) >= MIN_MEMBERS)


def changed_entities(new_mentions: Iterable[Mention]) -> set[str]:
    """The entities whose communities may have changed since the cursor: those new events
    named. (An extraction watermark's changed facts would add their entities here.)"""
    return {m.entity for m in new_mentions}


def touched(graph: Links, changed: set[str]) -> set[str]:
    """Every entity of a component holding a changed entity: what is run again."""
    return set().union(*[part for part in components(graph) if part & changed])


def topic_name(members: Sequence[str], names: Mapping[str, str], graph: Links) -> str:
    """Up to three member names, the most linked within the community first (then by key),
    and how many more there are."""
    inside = set(members)
    strength: dict[str, int] = defaultdict(int)
    for (a, b), weight in graph.items():
        if a in inside and b in inside:
            strength[a] += weight
            strength[b] += weight
    order = sorted(members, key=lambda m: (-strength[m], m))
    shown = ", ".join(names.get(m, m) for m in order[:NAMED_MEMBERS])
    more = len(order) - NAMED_MEMBERS
    return f"{shown} +{more}" if more > 0 else shown


def mean_embedding(
    members: Sequence[str], vectors: Mapping[str, Sequence[float]]
) -> tuple[float, ...] | None:
    rows = [np.asarray(vectors[m], dtype=np.float64) for m in members if m in vectors]
    if not rows:
        return None
    mean = np.mean(np.stack(rows), axis=0)
    return tuple(round(float(x), EMBEDDING_DIGITS) for x in mean)


# -- the pass's decision ---------------------------------------------------------------------------
@dataclass(frozen=True)
class TopicSnapshot:
    """One subject's mentions so far, the events new since the cursor with their extracted
    claims, its topics, and what load found for the communities to come."""

    project: str
    subject: str
    mentions: list[Mention]
    new_events: list[Event]
    extracted: list[Observation]
    topics: list[Topic]
    vectors: Mapping[str, Sequence[float]] = field(default_factory=dict)
    model_names: Mapping[tuple[str, ...], tuple[str, str]] = field(default_factory=dict)


def new_mentions(snapshot: TopicSnapshot, now: datetime) -> dict[str, list[Mention]]:
    """The mentions of each new event (event id → mentions), computed once per event; an
    event whose mentions are stored already (a cursor moved back, or lost) adds
    none."""
    recorded = {m.event_id for m in snapshot.mentions}
    return {
        e.id: event_mentions(e, snapshot.extracted, now)
        for e in snapshot.new_events
        if e.id not in recorded
    }


def planned_communities(
    snapshot: TopicSnapshot, fresh: Mapping[str, list[Mention]]
) -> tuple[Links, set[str], list[tuple[str, ...]]]:
    """The graph, the entities run again, and their communities."""
    added = [m for ms in fresh.values() for m in ms]
    graph = links([*snapshot.mentions, *added])
    rerun = touched(graph, changed_entities(added))
    return graph, rerun, communities(graph, rerun) if rerun else []


def decide_topics(snapshot: TopicSnapshot, now: datetime) -> PassResult:
    plan = Plan()
    decisions: list[Decision] = []
    fresh = new_mentions(snapshot, now)
    for event in snapshot.new_events:
        found = fresh.get(event.id, [])
        if found:
            reason = f"event names {len(found)} entit{'y' if len(found) == 1 else 'ies'}"
            plan.add(
                RecordMentions(snapshot.project, snapshot.subject, event.id, tuple(found), reason)
            )
    graph, rerun, found_sets = planned_communities(snapshot, fresh)
    names: dict[str, str] = {}
    for m in [*snapshot.mentions, *(m for ms in fresh.values() for m in ms)]:
        names.setdefault(m.entity, m.name)
    stored = {t.id: t for t in snapshot.topics}
    wanted = {topic_id(snapshot.project, snapshot.subject, m): m for m in found_sets}
    # Retire the active topics of the components run again that are no longer a community.
    for tid, topic in sorted(stored.items()):
        if topic.status is TopicStatus.ACTIVE and set(topic.members) & rerun and tid not in wanted:
            after = topic.model_copy(update={"status": TopicStatus.RETIRED, "retired_at": now})
            reason = f"{topic.name}: its members no longer form this community"
            plan.add(WriteTopic(topic, after, reason))
            plan.outcomes[RETIRED] += 1
            decisions.append(Decision(RETIRED, None, reason))
    for tid, members in sorted(wanted.items()):
        before = stored.get(tid)
        if before is not None and before.status is TopicStatus.ACTIVE:
            plan.outcomes[KEPT] += 1
            decisions.append(Decision(KEPT, None, f"{before.name}: the same community"))
            continue
        name, named_by = snapshot.model_names.get(members) or (
            topic_name(members, names, graph),
            "members",
        )
        topic = Topic(
            id=tid,
            project=snapshot.project,
            subject=snapshot.subject,
            name=name,
            members=members,
            names=tuple(names.get(m, m) for m in members),
            embedding=mean_embedding(members, snapshot.vectors),
            named_by=named_by,
            created_at=before.created_at if before is not None else now,
        )
        outcome = CREATED if before is None else REVIVED
        reason = f"{len(members)} entities travel together: {topic.name}"
        plan.add(WriteTopic(before, topic, reason))
        plan.outcomes[outcome] += 1
        decisions.append(Decision(outcome, None, reason))
    return PassResult(plan, decisions)


Namer = Callable[[Sequence[str]], str | None]
