"""Turning extractor output into validated candidates, and text into sentences.

Pure functions: the LLM call itself happens in `distill.extractors`; what to ask and how to
read the answer is decided here, so it can be tested without a model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from distill.core.gate import gate
from distill.core.identity import canonical_json, content_hash
from distill.core.models import Claim, Event, Fact
from distill.core.plan import Rejection

_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL | re.IGNORECASE)
# A sentence ends at . ! ? followed by white space and an upper-case letter, a digit or a quote.
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+(?=[\"'“(\[]?[A-Z0-9À-Ý])")
MIN_SENTENCE_CHARS = 3  # shorter fragments ("OK.") are not worth a memory


class UnparseableAnswer(ValueError):
    """The answer is not a JSON object with a list of facts."""


@dataclass(frozen=True)
class Extracted:
    claims: list[tuple[Claim, str]]  # (claim, claim hash)
    rejections: list[Rejection]


def claim_hash(claim: Claim) -> str:
    return content_hash(canonical_json(claim.model_dump(mode="json", exclude={"confidence"})))


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
    for item in raw:
        try:
            claim = item if isinstance(item, Claim) else Claim.model_validate(item)
        except ValidationError as exc:
            shown = item if isinstance(item, dict) else {"raw": repr(item)[:200]}
            detail = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'candidate'}: {e['msg']}" for e in exc.errors()
            )
            rejections.append(Rejection(event.id, extractor, "invalid_candidate", detail, shown))
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
    return Extracted(claims, rejections)


def parse_answer(text: str) -> list[Any]:
    """The model's answer as a list of raw candidates: `{"facts": [...]}` or a bare list.

    Raises `UnparseableAnswer` for prose, truncated JSON or any other shape, so the job
    fails whole (and is retried) instead of applying half an answer.
    """
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1)
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        raise UnparseableAnswer(f"answer is not JSON ({exc.msg} at char {exc.pos})") from exc
    if isinstance(data, dict) and isinstance(data.get("facts"), list):
        return list(data["facts"])
    if isinstance(data, list):
        return data
    raise UnparseableAnswer('answer is JSON but not {"facts": [...]}')


CANDIDATE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "facts": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "predicate": {"type": ["string", "null"]},
                    "value": {"type": ["object", "null"]},
                    "text": {"type": ["string", "null"]},
                    "qualifiers": {"type": "object"},
                    "action": {"enum": ["create", "supersede"]},
                    "kind": {"enum": ["state", "event", "memory"]},
                    "confidence": {"type": "number"},
                    "evidence_span": {"type": "string"},
                },
                "required": ["action", "evidence_span"],
            },
        }
    },
    "required": ["facts"],
}


def render_prompt(template: str, event: Event, known: Sequence[Fact]) -> str:
    """Fill the extraction prompt with the event and the subject's relevant active facts."""
    facts = "\n".join(
        f"- {f.predicate} {canonical_json(f.qualifiers) if f.qualifiers else ''} = "
        f"{canonical_json(f.value)}"
        for f in known
        if f.predicate
    )
    return template.format(
        subject=event.subject,
        occurred_at=event.occurred_at.isoformat(),
        source=event.source,
        known_facts=facts or "(none yet)",
        text=event.text,
    )
