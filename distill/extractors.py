"""Extractors: what candidates an event proposes.

- `claims`: the event already carries structured claims (no LLM).
- `text`: no LLM; each sentence becomes a free-text memory.
- `llm`: any provider behind the LLM port proposes candidates; code validates them.

`auto` uses the event's own claims when it has some, else the LLM when one is configured,
else the text extractor.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from importlib import resources

from distill.core.extraction import (
    CANDIDATE_SCHEMA,
    Extracted,
    UnparseableAnswer,
    parse_answer,
    render_prompt,
    split_sentences,
    validate_candidates,
)
from distill.core.models import Event, Fact, FactKind
from distill.errors import ConfigurationError, MalformedAnswer
from distill.ports import LLM, Completion

log = logging.getLogger("distill.extract")

PROMPT_VERSION = "extract_v1"
EXTRACTORS = ("auto", "claims", "text", "llm")


def _prompt(name: str) -> str:
    return resources.files("distill").joinpath(f"prompts/{name}.txt").read_text("utf-8")


class ClaimsExtractor:
    name = "claims"

    def extract(self, event: Event, known: Sequence[Fact]) -> Extracted:
        return validate_candidates(event.claims, event, self.name, require_evidence=False)


class TextExtractor:
    name = "text"

    def extract(self, event: Event, known: Sequence[Fact]) -> Extracted:
        raw = [{"text": s, "kind": FactKind.MEMORY.value} for s in split_sentences(event.text)]
        return validate_candidates(raw, event, self.name, require_evidence=False)


class LLMExtractor:
    name = "llm"

    def __init__(self, llm: LLM) -> None:
        self.llm = llm
        self.template = _prompt(PROMPT_VERSION)
        self.system = _prompt(f"{PROMPT_VERSION}.system")
        self.calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0

    def extract(self, event: Event, known: Sequence[Fact]) -> Extracted:
        prompt = render_prompt(self.template, event, known)
        answer: Completion = self.llm.complete(self.system, prompt, CANDIDATE_SCHEMA)
        self.calls += 1
        self.prompt_tokens += answer.prompt_tokens
        self.completion_tokens += answer.completion_tokens
        try:
            raw = parse_answer(answer.text)
        except UnparseableAnswer as exc:
            raise MalformedAnswer(f"{self.llm.model_id}: {exc}") from exc
        return validate_candidates(raw, event, self.name, require_evidence=True)


class AutoExtractor:
    """Claims when the event has them, else the LLM if configured, else sentences."""

    name = "auto"

    def __init__(self, llm: LLM | None) -> None:
        self.claims = ClaimsExtractor()
        self.text = TextExtractor()
        self.llm = LLMExtractor(llm) if llm is not None else None

    def extract(self, event: Event, known: Sequence[Fact]) -> Extracted:
        if event.claims:
            return self.claims.extract(event, known)
        if self.llm is not None:
            return self.llm.extract(event, known)
        return self.text.extract(event, known)


def make_extractor(
    name: str, llm: LLM | None
) -> AutoExtractor | ClaimsExtractor | TextExtractor | LLMExtractor:
    if name == "auto":
        return AutoExtractor(llm)
    if name == "claims":
        return ClaimsExtractor()
    if name == "text":
        return TextExtractor()
    if name == "llm":
        if llm is None:
            raise ConfigurationError("the llm extractor needs an LLM: pass llm=... to Memory")
        return LLMExtractor(llm)
    raise ConfigurationError(f"unknown extractor {name!r}; choose one of {', '.join(EXTRACTORS)}")
