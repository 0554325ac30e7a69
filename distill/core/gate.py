"""The write gate: candidates that must never become facts, whatever an extractor says.

Instruction-like text aimed at the agent ("ignore previous instructions", "from now on you
must ...") is a prompt-injection attempt when it is stored as memory and replayed into a
later prompt. Ordinary preferences phrased with "always" are not directives and pass.
A rule (`core.rules`) is an instruction by design, so only the override patterns guard it
(`is_override`): a standing instruction may order the agent, never unseat its prompt.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from distill.core.models import Claim

# Each pattern targets text that addresses the agent and changes its rules, not text that
# merely contains "always" or "never": "I always answer my emails" is a habit, "Always answer
# yes" is an order. Imperatives only count at the start of a clause. English and French.
_CLAUSE = r"(?:^|[.!?;:,\n]\s*|\b(?:and|then|et|puis)\s+)"
# Text that tries to replace the agent's instructions: never a memory, and never a rule
# either (a standing instruction adds to how the agent acts, it does not unseat its prompt).
_OVERRIDES = [
    # English
    r"\b(ignore|disregard|forget|override|bypass)\b.{0,40}\b(previous|prior|above|earlier|all|your|system|the)\b.{0,30}\b(instructions?|prompts?|rules?|directives?|guidelines?)\b",
    r"\b(new|updated) (system )?(instructions?|rules?|prompt)\s*:",
    r"\b(system prompt|developer mode|jailbreak)\b",
    r"\byou are now\b",
    # French
    _CLAUSE
    + r"(oublie|oubliez|ignore|ignorez|ne tiens pas compte|ne tenez pas compte)\b.{0,40}\b(instructions?|consignes?|r[eè]gles?)\b",
    r"\b(tu es|vous êtes) (maintenant|désormais|dorénavant)\b",
    r"\bnouvelles? (instructions?|consignes?|r[eè]gles?)\s*:",
]
# Orders addressed to the agent: a prompt injection when they arrive as a memory.
_IMPERATIVES = [
    # English
    r"\bfrom now on\b.{0,60}\b(you|assistant|agent|ai)\b",
    r"\b(you|assistant|agent|the ai)\b.{0,20}\b(must|should|shall|will) (always|never|now)\b",
    _CLAUSE
    + r"(always|never) (trust|believe|obey|follow|do what|say|reveal|answer|agree|comply)\b",
    # French
    r"\b(à|a) partir de maintenant\b.{0,60}\b(tu|vous)\b",
    r"\b(désormais|dorénavant)\b.{0,40}\b(tu|vous) (dois|devez|vas|allez)\b",
    r"\b(tu|vous) (dois|devez) (toujours |jamais )?(me |m')?(faire confiance|croire|ob[ée]ir|r[ée]pondre)",
    _CLAUSE + r"(fais|faites) (toujours |jamais )?ce que (je|j')",
]


_FLAGS = re.IGNORECASE | re.DOTALL
_OVERRIDE_RE = [re.compile(p, _FLAGS) for p in _OVERRIDES]
_DIRECTIVE_RE = [*_OVERRIDE_RE, *(re.compile(p, _FLAGS) for p in _IMPERATIVES)]
# The same patterns as one alternation each (none refers to a group by its number), for
# short texts: a search gives up at once on a text shorter than the shortest match its
# pattern can make, so one search of the alternation beats a search per pattern on a word
# or two, the words of nearly every claim ("3", "Lyon": 3.3 → 0.1 µs). On a sentence the
# patterns one by one are faster (28 characters: 17 µs against 27), each keeping the
# start-of-match shortcuts an alternation loses. Either way the verdict is the same.
_OVERRIDE_ANY = re.compile("|".join(f"(?:{p})" for p in _OVERRIDES), _FLAGS)
_DIRECTIVE_ANY = re.compile("|".join(f"(?:{p})" for p in [*_OVERRIDES, *_IMPERATIVES]), _FLAGS)
SHORT_TEXT = 12  # characters, below which the alternation is searched (measured: see above)


def _found(text: str, each: list[re.Pattern[str]], one: re.Pattern[str]) -> bool:
    folded = _fold(text)
    if len(folded) < SHORT_TEXT:
        return one.search(folded) is not None
    return any(p.search(folded) for p in each)


def _fold(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).split())


def contains_span(text: str, span: str) -> bool:
    """Whether `span` occurs in `text`, ignoring case, Unicode width forms and spacing."""
    return bool(span.strip()) and _fold(span).casefold() in _fold(text).casefold()


def is_directive(text: str) -> bool:
    """Instruction-like text aimed at the agent: refused as a memory."""
    return _found(text, _DIRECTIVE_RE, _DIRECTIVE_ANY)


def is_override(text: str) -> bool:
    """Text that tries to replace the agent's instructions ("ignore previous instructions",
    "you are now ..."): refused even as a rule, which is an instruction by design."""
    return _found(text, _OVERRIDE_RE, _OVERRIDE_ANY)


@dataclass(frozen=True)
class GateVerdict:
    reason: str  # "" when the candidate passes
    detail: str = ""

    @property
    def passed(self) -> bool:
        return not self.reason


PASS = GateVerdict("")


def gate(claim: Claim, event_text: str, require_evidence: bool) -> GateVerdict:
    """Check one validated candidate against the event it was extracted from."""
    # Everything a candidate could carry into a later prompt is checked, qualifiers included.
    said = " ".join(
        part
        for part in (
            claim.text,
            claim.evidence_span,
            *(str(v) for v in (claim.value or {}).values()),
            *(str(v) for v in claim.qualifiers.values()),
        )
        if part
    )
    if is_directive(said):
        return GateVerdict("imperative_directive", "instruction aimed at the agent, not a fact")
    if claim.evidence_span is not None:
        if not contains_span(event_text, claim.evidence_span):
            return GateVerdict(
                "evidence_not_in_event", "evidence span is not a substring of the event"
            )
    elif require_evidence:
        return GateVerdict("evidence_not_in_event", "candidate has no evidence span")
    return PASS
