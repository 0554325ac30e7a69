"""Extractors: what candidates an event proposes.

- `claims`: the event already carries structured claims (no LLM).
- `text`: no LLM; each sentence becomes a free-text memory.
- `llm`: a model behind the LLM port proposes candidates for a batch of a subject's events;
  code attributes each to its event and validates it.

`auto` uses the event's own claims when it has some, else the LLM when one is configured,
else the text extractor.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from distill.core.extraction import (
    CANDIDATE_SCHEMA,
    Extracted,
    UnparseableAnswer,
    attribute,
    only_shown_updates,
    parse_answer,
    plan_batches,
    render_prompt,
    split_sentences,
    validate_candidates,
)
from distill.core.identity import canonical_json, content_hash
from distill.core.models import Event, Fact, FactKind
from distill.errors import ConfigurationError, MalformedAnswer, ProviderError
from distill.ports import LLM, LLMUsage

log = logging.getLogger("distill.extract")

PROMPT_VERSION = "extract_v2"
EXTRACTORS = ("auto", "claims", "text", "llm")
# One call covers up to this many events of a job, and about this many tokens of their text.
BATCH_EVENTS = 16
BATCH_TOKENS = 2000

# The facts shown for a batch of events, given the batch: relevance-ranked and bounded.
Context = Callable[[Sequence[Event]], Sequence[Fact]]


def _prompt(name: str) -> str:
    return resources.files("distill").joinpath(f"prompts/{name}.txt").read_text("utf-8")


def from_claims(event: Event) -> Extracted:
    return validate_candidates(event.claims, event, "claims", require_evidence=False)


def from_text(event: Event) -> Extracted:
    raw = [{"text": s, "kind": FactKind.MEMORY.value} for s in split_sentences(event.text)]
    return validate_candidates(raw, event, "text", require_evidence=False)


def from_llm_answer(raw: Sequence[Any], event: Event) -> Extracted:
    return validate_candidates(raw, event, "llm", require_evidence=True)


class LLMExtractor:
    """Asks a model for candidates, one call per batch of a subject's events."""

    def __init__(
        self, llm: LLM, batch_events: int = BATCH_EVENTS, batch_tokens: int = BATCH_TOKENS
    ) -> None:
        if batch_events < 1 or batch_tokens < 1:
            raise ConfigurationError("batch_events and batch_tokens must be at least 1")
        self.llm = llm
        self.batch_events = batch_events
        self.batch_tokens = batch_tokens
        self.template = _prompt(PROMPT_VERSION)
        self.system = _prompt(f"{PROMPT_VERSION}.system")
        self.prompt_hash = content_hash(
            self.system, self.template, canonical_json(CANDIDATE_SCHEMA)
        )[:12]

    @property
    def key(self) -> str:
        """What produced an answer: answers are reused only for the same prompt (its version
        and its exact text and schema) and the same model."""
        return f"{PROMPT_VERSION}-{self.prompt_hash}/{self.llm.model_id}"

    def propose(
        self, subject: str, events: Sequence[Event], context: Context, usage: LLMUsage
    ) -> Iterator[dict[str, list[Any]]]:
        """For each batch, the raw candidates of each of its events (an empty list when the
        model found nothing durable). An unparseable answer raises `MalformedAnswer`: the
        batches already answered have been yielded, nothing of this one is."""
        for batch in plan_batches(events, self.batch_tokens, self.batch_events):
            yield from self._ask(subject, batch, context, usage)

    def _ask(
        self, subject: str, batch: Sequence[Event], context: Context, usage: LLMUsage
    ) -> Iterator[dict[str, list[Any]]]:
        known = context(batch)
        prompt = render_prompt(self.template, subject, batch, known)
        answer = self.llm.complete(self.system, prompt, CANDIDATE_SCHEMA)
        usage.add(answer)
        if answer.truncated:
            if len(batch) > 1:  # too many facts for one answer: ask for each half
                log.info("answer cut at the output limit; splitting %d events", len(batch))
                half = len(batch) // 2
                yield from self._ask(subject, batch[:half], context, usage)
                yield from self._ask(subject, batch[half:], context, usage)
                return
            # Asking again would be cut again: this waits for a person (no automatic retry).
            raise ProviderError(
                f"{self.llm.model_id}: the answer for one event was cut at the model's "
                "output limit; raise the provider's max_tokens, then replay"
            )
        try:
            raw = parse_answer(answer.text)
        except UnparseableAnswer as exc:
            raise MalformedAnswer(f"{self.llm.model_id}: {exc}") from exc
        yield attribute(only_shown_updates(raw, known), batch)


@dataclass(frozen=True)
class Extraction:
    """Which extractor each event goes to."""

    mode: str
    llm: LLMExtractor | None

    def route(self, event: Event) -> str:
        if self.mode == "llm" and not event.text.strip():
            return "claims"  # no text to ask about (so it has claims): no call
        if self.mode != "auto":
            return self.mode
        if event.claims:
            return "claims"
        return "llm" if self.llm is not None else "text"


def make_extraction(
    mode: str,
    llm: LLM | None,
    batch_events: int = BATCH_EVENTS,
    batch_tokens: int = BATCH_TOKENS,
) -> Extraction:
    if mode not in EXTRACTORS:
        raise ConfigurationError(
            f"unknown extractor {mode!r}; choose one of {', '.join(EXTRACTORS)}"
        )
    if mode == "llm" and llm is None:
        raise ConfigurationError("the llm extractor needs an LLM: pass llm=... to Memory")
    extractor = LLMExtractor(llm, batch_events, batch_tokens) if llm is not None else None
    return Extraction(mode, extractor if mode in ("auto", "llm") else None)
