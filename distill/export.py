"""The export format: a project's or a subject's events, facts, rules, procedures and topics
as JSON Lines.

Every line is one JSON object whose `"type"` says what it holds:

- ``"event"``: the fields `add_event` takes (`subject`, `project`, `text`, `occurred_at`,
  `source`, `trust`, `claims`, `idempotency_key`, and `action` when it records one), plus
  the event's `id` in the exported store (the id that fact lines' `source_event_ids` name).
  `distill add --file` reads these lines as they are: it drops `type` and `id`, since a
  store gives its events its own ids, and the idempotency key makes adding an exported
  event twice store it once.
- ``"fact"``: the whole `Fact` model: every version of every identity, whatever its status
  (active, candidate, superseded, retracted), with its validity, `supersedes_id` and
  `superseded_by` links, sources and counters. `distill add --file` skips these lines: facts
  are what consolidation derives from events, so a store rebuilt from an export's events
  derives them again.
- ``"rule"``: the whole `Rule` model: a subject's standing instructions, learned and written
  (`core.rules`). `distill add --file` skips these lines too: learned rules are derived
  again from the memories, and a person's rules are added back with `distill rules add`.
- ``"procedure"``: the whole `Procedure` model (`core.patterns`): an action that tends to
  follow another, whatever its status, with its support and the uses agents reported.
- ``"topic"``: the whole `Topic` model: a community of entities of a subject's events,
  retired ones included, with its members, their spellings and its embedding. `distill add
  --file` skips procedure and topic lines: the passes find them again from the events (the
  reported uses of a procedure are the one thing no event holds; `distill copy` keeps them).

Events come first, in (occurred_at, id) order, then facts by (subject, valid_from, id), then
rules by (subject, created_at, id), procedures by (subject, action_a, action_b) and topics by
(subject, status, created_at, id). A
backup to restore into Distill as it was, ids and history included, is `distill copy`; an
export is for reading the data elsewhere and for rebuilding a store from its evidence.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from distill.core.event_in import EventIn
from distill.core.models import Event, Fact, Rule
from distill.core.patterns import Procedure, Topic
from distill.errors import InvalidInput
from distill.ports import Store

EVENT = "event"
FACT = "fact"
RULE = "rule"
PROCEDURE = "procedure"
TOPIC = "topic"
DERIVED = (FACT, RULE, PROCEDURE, TOPIC)  # lines `add --file` skips: made again from events
# Keys of an event line beyond `add_event`'s fields, which `add --file` drops.
EVENT_EXTRA_KEYS = ("type", "id")


def export_lines(
    store: Store, project: str, subject: str | None = None
) -> Iterator[dict[str, Any]]:
    """The project's events, then its facts, rules, procedures and topics (one subject's
    only, if given), as lines."""
    for event in store.iter_events(project, subject):
        yield event_line(event)
    for fact in store.facts(project, subject, include_retired=True, as_of=None):
        yield fact_line(fact)
    for rule in store.rules(project, subject):
        yield rule_line(rule)
    for procedure in store.procedures(project, subject):
        yield procedure_line(procedure)
    for topic in store.topics(project, subject, include_retired=True):
        yield topic_line(topic)


def event_line(event: Event) -> dict[str, Any]:
    """An event's line; `action` only when the event records one (most do not)."""
    dumped = event.model_dump(mode="json")
    fields = {name: dumped[name] for name in EventIn.model_fields}
    if fields["action"] is None:
        del fields["action"]
    return {"type": EVENT, "id": event.id, **fields}


def fact_line(fact: Fact) -> dict[str, Any]:
    return {"type": FACT, **fact.model_dump(mode="json")}


def rule_line(rule: Rule) -> dict[str, Any]:
    return {"type": RULE, **rule.model_dump(mode="json")}


def procedure_line(procedure: Procedure) -> dict[str, Any]:
    return {"type": PROCEDURE, **procedure.model_dump(mode="json")}


def topic_line(topic: Topic) -> dict[str, Any]:
    return {"type": TOPIC, **topic.model_dump(mode="json")}


def event_fields(line: dict[str, Any]) -> dict[str, Any] | None:
    """What `add --file` makes of one line: an event's fields, or None for a line of what
    is derived from events (a fact, rule, procedure or topic). A line without a `type` is an
    event's fields as they are (the format `add --file` always read); a line of an unknown
    type is refused."""
    if "type" not in line:
        return line
    kind = line["type"]
    if kind in DERIVED:
        return None
    if kind == EVENT:
        return {k: v for k, v in line.items() if k not in EVENT_EXTRA_KEYS}
    kinds = ", ".join(f'"{k}"' for k in (EVENT, *DERIVED))
    raise InvalidInput(f'"type" is {kind!r}: a line holds one of {kinds}')
