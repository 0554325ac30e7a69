"""Turning extractor output into validated candidates, and text into sentences.

Pure functions: the LLM call itself happens in `distill.extractors`; what to ask and how to
read the answer is decided here, so it can be tested without a model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from distill.core.event_in import ended_untold_start
from distill.core.gate import contains_span, gate
from distill.core.identity import canonical_json, content_hash
from distill.core.json_data import JsonProblem, check_json
from distill.core.models import Claim, Event, Fact, FactKind, normalise_predicate
from distill.core.plan import Rejection

_FENCE = re.compile(r"```(?:json)?\s*(.*?)\s*```", re.DOTALL | re.IGNORECASE)
# A sentence ends at . ! ? followed by white space and an upper-case letter, a digit or a quote.
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+(?=[\"'“(\[]?[A-Z0-9À-Ý])")
KINDS = frozenset(k.value for k in FactKind)
MIN_SENTENCE_CHARS = 3  # shorter fragments ("OK.") are not worth a memory
CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD_TOKENS = 12  # the "[n] time from source" header of each message
# The key `attribute` puts on a candidate that names no message of its batch: why, for the
# rejection. It is kept with the stored answer, so a replay rejects the candidate again.
UNKNOWN_MESSAGE = "unknown_message"
UNSTORABLE = "unstorable"  # marks a model's candidate no store could keep as given


class UnparseableAnswer(ValueError):
    """The answer is not a JSON object with a list of facts."""


@dataclass(frozen=True)
class Extracted:
    claims: list[tuple[Claim, str]]  # (claim, claim hash)
    rejections: list[Rejection]
    # Candidates whose `kind` was not one Distill knows ("recurring"): kept with the default
    # kind for their shape instead of being rejected whole.
    kind_fallbacks: int = 0


def claim_hash(claim: Claim) -> str:
    """What makes two candidates of one event the same claim (confidence and the entities it
    names aside). Fields added to `Claim` later are left out while unset, so stored hashes
    keep matching."""
    dumped = claim.model_dump(mode="json", exclude={"confidence", "entities"})
    if dumped.get("updates") is None:
        dumped.pop("updates", None)
    return content_hash(canonical_json(dumped))


def split_sentences(text: str) -> list[str]:
    pieces: list[str] = []
    for paragraph in re.split(r"\n\s*\n|\n(?=\s*[-*•])", text):
        cleaned = " ".join(paragraph.split()).lstrip("-*• ").strip()
        pieces.extend(s.strip() for s in _SENTENCE_END.split(cleaned) if s.strip())
    return [p for p in pieces if len(p) >= MIN_SENTENCE_CHARS]


def validate_candidates(
    raw: Iterable[Any],
    event: Event,
    extractor: str,
    require_evidence: bool,
) -> Extracted:
    """Validate each raw candidate on its own: one bad candidate never sinks the others."""
    claims: list[tuple[Claim, str]] = []
    rejections: list[Rejection] = []
    fallbacks = 0
    for item in raw:
        if isinstance(item, dict) and UNKNOWN_MESSAGE in item:
            shown = {k: v for k, v in item.items() if k != UNKNOWN_MESSAGE}
            detail = str(item[UNKNOWN_MESSAGE])
            rejections.append(Rejection(event.id, extractor, UNKNOWN_MESSAGE, detail, shown))
            continue
        if isinstance(item, dict) and item.get("kind") is not None and item["kind"] not in KINDS:
            item = {k: v for k, v in item.items() if k != "kind"}
            fallbacks += 1
        if isinstance(item, dict) and UNSTORABLE in item:
            shown = {"raw": item.get("raw")}
            detail = str(item[UNSTORABLE])
            rejections.append(Rejection(event.id, extractor, "invalid_candidate", detail, shown))
            continue
        try:
            claim = item if isinstance(item, Claim) else Claim.model_validate(item)
        except ValidationError as exc:
            shown = item if isinstance(item, dict) else {"raw": repr(item)[:200]}
            detail = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'candidate'}: {e['msg']}" for e in exc.errors()
            )
            rejections.append(Rejection(event.id, extractor, "invalid_candidate", detail, shown))
            continue
        ended = ended_untold_start(claim, event.occurred_at)
        if ended:
            shown = claim.model_dump(mode="json")
            rejections.append(Rejection(event.id, extractor, "invalid_candidate", ended, shown))
            continue
        verdict = gate(claim, event.text, require_evidence)
        if not verdict.passed:
            rejections.append(
                Rejection(
                    event.id,
                    extractor,
                    verdict.reason,
                    verdict.detail,
                    claim.model_dump(mode="json"),
                )
            )
            continue
        claims.append((claim, claim_hash(claim)))
    return Extracted(claims, rejections, fallbacks)


def parse_answer(text: str) -> list[Any]:
    """The model's answer as a list of raw candidates: `{"facts": [...]}` or a bare list.

    The JSON may be fenced (```json ... ```) or wrapped in a sentence of prose; the first
    fenced block, else the outermost braces, are read then. Raises `UnparseableAnswer` for
    prose, truncated JSON or any other shape, so the job fails whole (and is retried)
    instead of applying half an answer.
    """
    body = text.strip()
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        data = _embedded_json(body)
        if data is None:
            raise UnparseableAnswer(f"answer is not JSON ({exc.msg} at char {exc.pos})") from exc
    if isinstance(data, dict) and isinstance(data.get("facts"), list):
        return list(data["facts"])
    if isinstance(data, list):
        return data
    raise UnparseableAnswer('answer is JSON but not {"facts": [...]}')


def _embedded_json(text: str) -> Any | None:
    """JSON inside prose: the first fenced block, else from the first `{` to the last `}`."""
    fenced = _FENCE.search(text)
    candidates = [fenced.group(1)] if fenced else []
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except json.JSONDecodeError:
            continue
    return None


CANDIDATE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "facts": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "message": {"type": "integer"},
                    "predicate": {"type": ["string", "null"]},
                    "value": {"type": ["object", "null"]},
                    "text": {"type": ["string", "null"]},
                    "qualifiers": {"type": "object"},
                    "action": {"enum": ["create", "supersede"]},
                    "kind": {"enum": ["state", "event", "memory"]},
                    "confidence": {"type": "number"},
                    "evidence_span": {"type": "string"},
                    "valid_from": {"type": ["string", "null"]},
                    "updates": {"type": ["string", "null"]},
                    "entities": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["message", "action", "evidence_span"],
            },
        }
    },
    "required": ["facts"],
}


def estimate_tokens(text: str) -> int:
    """A provider-neutral token estimate (about four characters per token in English), used
    to bound a call before it is made; the provider's own count is what gets reported."""
    return -(-len(text) // CHARS_PER_TOKEN)


def plan_batches(events: Sequence[Event], max_tokens: int, max_events: int) -> list[list[Event]]:
    """Split a job's events, in order, into groups that each fit one call. An event longer
    than `max_tokens` gets a call of its own; it is never cut."""
    batches: list[list[Event]] = []
    current: list[Event] = []
    used = 0
    for event in events:
        cost = estimate_tokens(event.text) + MESSAGE_OVERHEAD_TOKENS
        if current and (used + cost > max_tokens or len(current) >= max_events):
            batches.append(current)
            current, used = [], 0
        current.append(event)
        used += cost
    if current:
        batches.append(current)
    return batches


def only_shown_updates(raw: Sequence[Any], known: Sequence[Fact]) -> list[Any]:
    """A candidate's `updates` may only name a known fact the model was shown: any other
    reference (a made-up predicate, a fact of another subject) is dropped, the candidate
    kept."""
    shown = {f.predicate for f in known if f.predicate}

    def names_shown(reference: Any) -> bool:
        return isinstance(reference, str) and normalise_predicate(reference) in shown

    return [
        {k: v for k, v in item.items() if k != "updates"}
        if isinstance(item, dict) and "updates" in item and not names_shown(item["updates"])
        else item
        for item in raw
    ]


def render_known(known: Sequence[Fact]) -> str:
    lines = []
    for f in known:
        if not f.predicate:
            continue
        qualifiers = (
            " [" + ", ".join(f"{k}={v}" for k, v in sorted(f.qualifiers.items())) + "]"
            if f.qualifiers
            else ""
        )
        lines.append(f"- {f.predicate}{qualifiers} = {canonical_json(f.value)}")
    return "\n".join(lines) or "(none yet)"


def render_messages(events: Sequence[Event]) -> str:
    return "\n\n".join(
        f"[{n}] {e.occurred_at.isoformat()} from {e.source}\n{e.text}"
        for n, e in enumerate(events, start=1)
    )


def render_prompt(
    template: str, subject: str, events: Sequence[Event], known: Sequence[Fact]
) -> str:
    """Fill the extraction prompt with a batch of one subject's messages and the subject's
    relevant active facts."""
    return template.format(
        subject=subject,
        known_facts=render_known(known),
        messages=render_messages(events),
    )


def attribute(raw: Sequence[Any], events: Sequence[Event]) -> dict[str, list[Any]]:
    """Assign each raw candidate of a batched answer to the message it names.

    A candidate is never moved to another message: the one it names is the one the write
    gate checks its evidence against (a span found elsewhere is no evidence for it). With no
    number (`null` or none), the batch's only message, or the only one holding its evidence
    span, takes it. A candidate that names a message the batch did not show (99 of one), or
    names none and could belong to several messages or none, is filed under the batch's
    first event with the reason it is invalid, and rejected there as `unknown_message`.
    Every event of the batch gets an entry, an empty list when nothing durable was found.
    """
    found: dict[str, list[Any]] = {e.id: [] for e in events}
    for item in raw:
        target = events[0]
        if isinstance(item, dict):
            named = _message_number(item.get("message"))
            shown = f"messages 1-{len(events)}" if len(events) > 1 else "one message"
            unshown = ""
            if named is not None:
                if 1 <= named <= len(events):
                    target = events[named - 1]
                else:
                    unshown = f"names message {item['message']!r}; the batch showed {shown}"
            elif len(events) > 1:
                span = item.get("evidence_span")
                holders = [e for e in events if contains_span(e.text, str(span or ""))]
                if len(holders) == 1:
                    target = holders[0]
                else:
                    where = f"{len(holders)} of them" if holders else "none of them"
                    unshown = f"names no message of {shown}, and its evidence is in {where}"
            item = _tidy(item)
            if unshown:
                item[UNKNOWN_MESSAGE] = unshown
        found[target.id].append(_storable(item))
    return found


def _storable(item: Any) -> Any:
    """A candidate as it is kept with the model's answer, or, when a store could not keep it
    as given (a NUL, which PostgreSQL refuses; NaN; a float beyond 2^53...), the mark that
    it is invalid with why and a printable copy: rejected now, and on every replay."""
    try:
        check_json(item)
    except JsonProblem as exc:
        return {UNSTORABLE: f"a store cannot keep it as given: {exc}", "raw": repr(item)[:200]}
    return item


def _message_number(raw: Any) -> int | None:
    """The message a candidate names: an integer, also written "2" or 2.0; None when it
    names none. Anything else (true, "two", 1.5) is a number no message has: -1."""
    if raw is None:
        return None
    if isinstance(raw, bool):
        return -1
    if isinstance(raw, int):
        return raw
    if isinstance(raw, float):
        return int(raw) if raw.is_integer() else -1
    if isinstance(raw, str) and raw.strip().isdigit():
        return int(raw.strip())
    return -1


def _tidy(item: dict[str, Any]) -> dict[str, Any]:
    """Drop the message number (and a key of the model's own that reads like the mark of an
    unknown message) and read a model's dates leniently: a null date is no date,
    and a date without a time zone ("2024-05-07") is taken as UTC."""
    tidy = {k: v for k, v in item.items() if k not in ("message", UNKNOWN_MESSAGE, UNSTORABLE)}
    for key in ("valid_from", "valid_to"):
        value = tidy.get(key)
        if value is None:
            tidy.pop(key, None)
        elif isinstance(value, str):
            try:
                when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
            except ValueError:
                continue  # left as is: validation rejects the candidate with the reason
            if when.tzinfo is None:
                tidy[key] = when.replace(tzinfo=UTC).isoformat()
    return tidy
