"""Whether the words themselves show that a newer statement replaces an older one.

A model's `supersede` retires a memory: "I live in Paris" stops being served once "I moved to
Lyon" is said. Code cannot check that the model is right. The words cannot tell "I prefer
the aisle seat" replacing "I prefer the window seat" from "I'm allergic to shellfish" said
beside "I'm allergic to peanuts": both are one sentence with one thing put for another, and
only knowing that a seat preference has one value and allergies many decides. A model that
supersedes every pair it is shown would retire the peanut allergy.

So the judge applies a supersede only when the words give evidence of their own, and
otherwise opens a conflict set: both memories stay live, served as contested with the
model's reason, and a person (or a model, through the conflict) keeps one. A wrong model
then costs a question, never a fact; a right one still retires what it should whenever the
statement says so. Evidence, any of:

* **change**: the newer statement says something changed ("moved", "switched", "no longer",
  "anymore", "now", "since", "replaced", `statement_words.CHANGE_WORDS`) and the older does not
  say it too;
* **negated**: one statement is negated and the other is not, about the same things ("I eat
  meat" / "I don't eat meat anymore");
* **value**: the same words around another number, date or time ("I have 3 kids" / "I have
  4 kids"; "standup at 9:30" / "standup at 10:00");
* **opposite**: a pair of opposites split across the two ("likes" / "dislikes",
  `statements` antonym lists).

What it misses, by design: a replacement said as a plain new state with no such word ("We're
in Denver" after "We live in Austin") is contested, not applied. And a change word is
evidence that something changed, not that it is the older statement: "My daughter starts
school" beside "My daughter plays the violin" has one. `distill eval judge` reports both, on
the golden set and on a held-out one.
"""

from __future__ import annotations

from distill.core.identity import NEGATIONS
from distill.core.statements import Reading, antonym_pairs, read

# Share of the smaller statement's content words the other must have for "the same words"
# (negated, value): "I have 3 kids" / "I have 4 kids" share all, "I eat meat" / "I don't eat
# meat anymore" all of the first. Half keeps a rephrased sentence in and two statements that
# share only a subject ("my daughter") out.
SAME_WORDS_MIN = 0.5


def replacement_evidence(older: str, newer: str) -> str | None:
    """What in the words shows `newer` replaces `older` ("change: moved", "value: 3 -> 4",
    ...), or None when they show nothing (see the module docstring)."""
    a, b = read(older), read(newer)
    if b.changes - a.changes:
        return f"change: {', '.join(sorted(b.changes - a.changes))}"
    if opposites := antonym_pairs(a, b):
        return f"opposite: {opposites[0]}"
    if not _same_words(a, b):
        return None
    if bool(a.negations) != bool(b.negations):
        return f"negated: {', '.join(a.negations or b.negations)}"
    for old, new in ((a.numbers, b.numbers), (a.dates, b.dates)):
        if old and new and old != new:
            return f"value: {', '.join(sorted(old))} -> {', '.join(sorted(new))}"
    return None


def _same_words(a: Reading, b: Reading) -> bool:
    """The two say mostly the same content words, leaving out negations and dates (what a
    negated or re-dated statement changes)."""
    plain_a, plain_b = _plain(a), _plain(b)
    if not plain_a or not plain_b:
        return False
    shared = len(plain_a & plain_b)
    return shared / min(len(plain_a), len(plain_b)) >= SAME_WORDS_MIN


def _plain(r: Reading) -> set[str]:
    return {w for w in r.content if w not in NEGATIONS and w not in r.dates and len(w) > 1}
