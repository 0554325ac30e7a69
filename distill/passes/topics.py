"""The topics pass: a subject's new events linked to the entities they name, and the
communities of those entities made topics, scope by scope (the rules: `core.topics`).

`DetectTopics` is a `Pass`. Under a subject's lock, `load` reads the events recorded after
the pass's cursor (at most `TOPIC_EVENTS_PER_RUN`, and none past an event whose extraction
is still to run), the claims the extractor proposed for them, the subject's mentions and its
topics (four store calls); it then works out which communities will be new and fetches what
only I/O can give them: their members' embeddings (through the embedding cache) and, when a
namer is given, a model's name for each (any failure: the members' names, silently). `decide`
is `core.topics.decide_topics` plus the cursor's move past the events walked, applied in the
same transaction. `run_topics` walks every scope holding an event, or one subject; a dry run
is the same walk in a transaction the store always rolls back.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from distill.core.cortex_plan import TOPICS_PASS, RecordMentions, WriteTopic
from distill.core.passes import Context, PassResult, Scope
from distill.core.patterns import TopicStatus, topic_id
from distill.core.topics import (
    CREATED,
    RETIRED,
    Namer,
    TopicSnapshot,
    decide_topics,
    new_mentions,
    planned_communities,
)
from distill.errors import DistillError
from distill.passes import refused, run_pass, walked_scopes
from distill.passes.cursors import EPOCH, cursor_move, position_key
from distill.ports import Store, Vector

log = logging.getLogger("distill.passes")

# Events one run reads per subject: a few thousand mentions at most, one transaction's worth;
# the rest waits for the next run behind the cursor.
TOPIC_EVENTS_PER_RUN = 2_000
WALKED = "events_walked"  # an outcome count the report takes out as its `events`

Embed = Callable[[Sequence[str]], Mapping[str, Vector]]


@dataclass(frozen=True)
class Walk:
    """A scope's snapshot and where its walk starts and ends."""

    snapshot: TopicSnapshot
    cursor: str | None
    position: str | None  # of the last event walked; None: nothing new
    capped: bool


def position_of(recorded_at: datetime, event_id: str) -> str:
    return f"{recorded_at.isoformat()}|{event_id}"


class DetectTopics:
    """`distill.passes.Pass` for one subject's topics."""

    name: str = TOPICS_PASS
    cap: int | None = TOPIC_EVENTS_PER_RUN

    def __init__(self, embed: Embed | None, namer: Namer | None) -> None:
        self.embed = embed
        self.namer = namer

    def load(self, store: Store, scope: Scope, work: None) -> Walk:
        p, s = scope.project, scope.subject
        cursor = store.pass_cursor(p, s, TOPICS_PASS)
        after = position_key(cursor) if cursor else None
        found = store.events_recorded_after(p, s, after, TOPIC_EVENTS_PER_RUN + 1)
        walked = []
        for event, waiting in found[:TOPIC_EVENTS_PER_RUN]:
            if waiting:  # its extraction is to run: the model's entities are not in yet
                break
            walked.append(event)
        capped = len(walked) == TOPIC_EVENTS_PER_RUN and len(found) > TOPIC_EVENTS_PER_RUN
        if not walked:  # nothing new: nothing to decide, and nothing more to read
            return Walk(TopicSnapshot(p, s, [], [], [], []), cursor, None, False)
        snapshot = TopicSnapshot(
            project=p,
            subject=s,
            mentions=store.mentions(p, s),
            new_events=walked,
            extracted=store.observations_for_events(p, [e.id for e in walked]),
            topics=store.topics(p, s, include_retired=True),
        )
        last = walked[-1] if walked else None
        position = position_of(last.recorded_at, last.id) if last else None
        return Walk(self._enriched(snapshot), cursor, position, capped)

    def _enriched(self, snapshot: TopicSnapshot) -> TopicSnapshot:
        """The snapshot with the embeddings and model names of the communities to be made."""
        if not snapshot.new_events or (self.embed is None and self.namer is None):
            return snapshot
        fresh = new_mentions(snapshot, EPOCH)  # what is found, not when: no time needed
        _, _, found = planned_communities(snapshot, fresh)
        active = {t.id for t in snapshot.topics if t.status is TopicStatus.ACTIVE}
        coming = [m for m in found if topic_id(snapshot.project, snapshot.subject, m) not in active]
        if not coming:
            return snapshot
        names: dict[str, str] = {}
        for m in [*snapshot.mentions, *(m for ms in fresh.values() for m in ms)]:
            names.setdefault(m.entity, m.name)
        vectors: dict[str, Sequence[float]] = {}
        if self.embed is not None:
            members = sorted({e for group in coming for e in group})
            by_text = self.embed([names[e] for e in members])
            vectors = {e: [float(x) for x in by_text[names[e]]] for e in members}
        model_names: dict[tuple[str, ...], tuple[str, str]] = {}
        if self.namer is not None:
            for group in coming:
                named = _ask(self.namer, [names[e] for e in group])
                if named is not None:
                    model_names[group] = named
        return replace(snapshot, vectors=vectors, model_names=model_names)

    def decide(self, snapshot: Walk, context: Context) -> PassResult:
        result = decide_topics(snapshot.snapshot, context.now)
        if snapshot.position is not None:
            reason = f"{len(snapshot.snapshot.new_events)} event(s) linked to their entities"
            result.plan.add(
                cursor_move(
                    Scope(snapshot.snapshot.project, snapshot.snapshot.subject),
                    TOPICS_PASS,
                    snapshot.cursor,
                    snapshot.position,
                    context.now,
                    reason,
                )
            )
        result.plan.outcomes[WALKED] += len(snapshot.snapshot.new_events)
        result.cursor = snapshot.position
        result.capped = snapshot.capped
        return result


def _ask(namer: Namer, names: list[str]) -> tuple[str, str] | None:
    """A model's name for a topic, or None: naming is cosmetic and never fails a run."""
    try:
        name = namer(names)
    except Exception as exc:  # any provider failure: the members' names stand
        log.info("topic naming failed, the members' names stand: %s", exc)
        return None
    if not isinstance(name, str):
        return None
    if "\n" in name.strip() or any(c in name for c in "{}[]<>"):  # prose or JSON, not a title
        log.info("topic naming answered %r, not a title: the members' names stand", name[:80])
        return None
    name = " ".join(name.split())
    if not name or len(name) > TOPIC_NAME_MAX_LENGTH:
        return None
    return name, getattr(namer, "model_id", "model")


TOPIC_NAME_MAX_LENGTH = 80  # characters of a model's name for a topic: a title, not a summary


@dataclass
class TopicsReport:
    """What one topics run did, or would do (`dry_run`)."""

    dry_run: bool = False
    scopes: int = 0
    events: int = 0  # events walked past the cursors
    mentions: int = 0
    capped: int = 0  # scopes with events left for the next run
    outcomes: Counter[str] = field(default_factory=Counter)
    changes: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    naming_stopped: str | None = None  # why the model stopped naming topics, if it did

    @property
    def created(self) -> int:
        return self.outcomes[CREATED]

    @property
    def retired(self) -> int:
        return self.outcomes[RETIRED]

    def to_dict(self) -> dict[str, Any]:
        return {
            "pass": TOPICS_PASS,
            "dry_run": self.dry_run,
            "scopes": self.scopes,
            "events": self.events,
            "mentions": self.mentions,
            "topics_created": self.created,
            "topics_retired": self.retired,
            "capped": self.capped,
            "outcomes": dict(sorted(self.outcomes.items())),
            "changes": list(self.changes),
            "errors": list(self.errors),
            "naming_stopped": self.naming_stopped,
        }


def run_topics(
    store: Store,
    now: Callable[[], datetime],
    new_id: Callable[[], str],
    *,
    embed: Embed | None = None,
    namer: Namer | None = None,
    projects: Sequence[str] = (),
    subject: str | None = None,
    dry_run: bool = False,
) -> TopicsReport:
    """Link new events to their entities and bring the topics of every scope of `projects`
    (empty: every project), or of one `subject`, up to date."""
    report = TopicsReport(dry_run=dry_run)
    pass_ = DetectTopics(embed, namer)
    with store.dry_run() if dry_run else nullcontext():
        for scope in walked_scopes(store.event_scopes(list(projects)), subject):
            report.scopes += 1
            try:
                result = run_pass(store, pass_, scope, None, now=now(), new_id=new_id)
            except DistillError as exc:  # this scope's plan was rolled back; the others go on
                report.errors.append(refused("topics", scope, exc))
                continue
            report.events += result.outcomes.pop(WALKED, 0)
            report.outcomes.update(result.outcomes)
            report.capped += int(result.capped)
            for action in result.plan.actions:
                if isinstance(action, WriteTopic):
                    report.changes.append(change(action))
                elif isinstance(action, RecordMentions):
                    report.mentions += len(action.mentions)
    return report


def change(action: WriteTopic) -> dict[str, Any]:
    t = action.after
    return {
        "project": t.project,
        "subject": t.subject,
        "id": t.id,
        "topic": t.name,
        "members": list(t.names),
        "status": str(t.status),
        "action": action.name,
        "reason": action.reason,
    }
