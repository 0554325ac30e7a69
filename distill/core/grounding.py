"""Grounding: whether a model's candidate says something its message says.

The write gate checks that a candidate's evidence span is a part of its message; that proves
the span exists, not that it supports the value. A model (or an injection steering one) can
pair `{"password": "hunter2"}` with the span "bikes". A candidate is *ungrounded* when none of
its value's terms can be found in its message; the adjudicator then holds it in quarantine
instead of serving it (a person resolves it like any held candidate).

The terms of a value:
- the words of its string leaves, without the function words that any message has ("the",
  "is", "my", "le", "est"); a value made only of such words ("yes") keeps them all;
- its numbers: numeric leaves, digits inside strings ("3 km", "7th", "10am" give 3, 7, 10)
  and number words, English and French ("three" = "trois" = 3, "twenty-five" = 25,
  "a dozen" = 12, "third" = 3);
- not its booleans and nulls, nor its ISO dates and times, which a model resolves from
  words like "last Tuesday" that no date matches;
- never its keys, predicate or qualifiers: those are the model's names for the attribute,
  so `bike_count` with `{"count": 99}` and the span "bikes" is ungrounded.
A memory's text is its value. A value with no number and no word of four letters or more is
not checked: a boolean, a date, a code a model maps a word to ("I speak English" → "en",
"dollars" → "USD") is too little to look for, and too little to carry anything.

A term is found when the message has it after folding case, accents and Unicode width: a
number written in digits or in words; a word itself or, for a word of four letters or more,
a word with the same first four (bike/bikes, married/marriage, tutoiement/tutoyé) or a word
of four letters or more inside it or around it (formal/informally, bike/motorbike).
The check is lenient on purpose: it catches answers with nothing in common with their
message, and leaves paraphrase to the model.

Only model answers are checked: claims the caller puts on an event are first-hand, and the
text extractor's memories are the message's own sentences.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from decimal import Decimal, InvalidOperation
from typing import Any

from distill.core.models import Claim

# The report's count of candidates held as ungrounded, kept beside the outcome counts.
HELD_UNGROUNDED = "held_ungrounded"
# Letters two words share when they are one word inflected or derived: bike/bikes,
# married/marriage, tutoiement/tutoyé, formal/informally ("cat"/"category" are too short).
WORD_STEM_CHARS = 4
SHOWN_TERMS_MAX = 5  # terms of a value named in the reason it is held

_TOKEN = re.compile(r"\d+(?:[.,]\d+)+|[^\W_]+")
_GROUPED = re.compile(r"\d+(?:[.,]\d+)+")
_LEADING_DIGITS = re.compile(r"\d+")
_ISO_TIME = re.compile(
    r"\d{4}-\d{2}(?:-\d{2})?(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?(?:Z|[+-]\d{2}:?\d{2})?"
)

_UNITS = {
    # English
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
    "seventy": 70, "eighty": 80, "ninety": 90, "dozen": 12, "couple": 2, "pair": 2,
    "once": 1, "twice": 2, "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5,
    "sixth": 6, "seventh": 7, "eighth": 8, "ninth": 9, "tenth": 10, "twelfth": 12,
    # French (accents folded)
    "un": 1, "une": 1, "deux": 2, "trois": 3, "quatre": 4, "cinq": 5, "sept": 7,
    "huit": 8, "neuf": 9, "dix": 10, "onze": 11, "douze": 12, "treize": 13, "quatorze": 14,
    "quinze": 15, "seize": 16, "vingt": 20, "vingts": 20, "trente": 30, "quarante": 40,
    "cinquante": 50, "soixante": 60, "douzaine": 12, "premier": 1, "premiere": 1,
    "deuxieme": 2, "troisieme": 3, "quatrieme": 4, "cinquieme": 5,
}  # fmt: skip
_SCALES = {"hundred": 100, "cent": 100, "cents": 100, "thousand": 1000, "mille": 1000,
           "million": 1_000_000, "millions": 1_000_000}  # fmt: skip
_ORDINAL_SUFFIX = re.compile(r"(\d+)(?:st|nd|rd|th|e|er|re|eme)")

# Words any message has; they say nothing about a value. English and French, accents folded.
_FUNCTION_WORDS = frozenset(
    {"a", "an", "the", "and", "or", "but", "if", "of", "to", "in", "on", "at", "by", "for", "with",
     "from", "into", "onto", "about", "as", "than", "then", "so", "too", "very", "just", "also",
     "not", "no", "is", "are", "was", "were", "be", "been", "being", "am", "do", "does", "did",
     "done", "have", "has", "had", "having", "will", "would", "shall", "should", "can", "could",
     "may", "might", "must", "i", "me", "my", "mine", "myself", "we", "us", "our", "ours", "you",
     "your", "yours", "he", "him", "his", "she", "her", "hers", "it", "its", "they", "them",
     "their", "theirs", "this", "that", "these", "those", "there", "here", "what", "which", "who",
     "whom", "whose", "when", "where", "why", "how", "all", "any", "some", "each", "now", "still",
     "again", "up", "out", "off", "over", "s", "t", "d", "ll", "m", "re", "ve", "le", "la", "les",
     "l", "un", "une", "des", "du", "de", "et", "ou", "mais", "je", "j", "mon", "ma", "mes", "tu",
     "te", "ton", "ta", "tes", "il", "elle", "nous", "vous", "ils", "elles", "son", "sa", "ses",
     "notre", "nos", "votre", "vos", "leur", "leurs", "ce", "cet", "cette", "ces", "c", "est",
     "suis", "es", "sont", "etre", "ete", "ai", "avons", "avez", "ont", "avoir", "au", "aux", "en",
     "dans", "sur", "par", "pour", "avec", "sans", "que", "qu", "qui", "quoi", "ne", "n", "pas",
     "plus", "y", "se"}
)  # fmt: skip


def fold(text: str) -> str:
    """Case, accents and Unicode width folded: "Zoë" and "ZOE" are one word."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def _number(raw: str) -> Decimal | None:
    try:
        return Decimal(raw).normalize()
    except InvalidOperation:
        return None


def _numbers_of_group(token: str) -> Iterator[Decimal]:
    """ "1,200" is 1200 (or 1.2, in French); "3.5" is 3.5 (or 35); each group counts too."""
    for candidate in (re.sub(r"[.,]", "", token), token.replace(",", ".")):
        if candidate.count(".") <= 1 and (n := _number(candidate)) is not None:
            yield n
    for group in re.split(r"[.,]", token):
        if (n := _number(group)) is not None:
            yield n


def _spelt_run(words: list[str]) -> Iterator[Decimal]:
    """The number a run of number words spells ("twenty five" = 25, "two hundred" = 200,
    "quatre vingt" = 80 is read 4 and 20 and 24: lenient), and each word's own."""
    total = current = 0
    for word in words:
        if word in _SCALES:
            scale = _SCALES[word]
            if scale == 100:
                current = max(current, 1) * scale
            else:
                total += max(current, 1) * scale
                current = 0
            yield Decimal(scale)
        else:
            current += _UNITS[word]
            yield Decimal(_UNITS[word])
    yield Decimal(total + current)


def terms(text: str) -> tuple[set[str], set[Decimal]]:
    """The words and the numbers of a text, folded."""
    words: set[str] = set()
    numbers: set[Decimal] = set()
    run: list[str] = []
    for token in _TOKEN.findall(fold(text)):
        if token in _UNITS or token in _SCALES:
            run.append(token)
            continue
        if run:
            numbers.update(_spelt_run(run))
            run = []
        if _GROUPED.fullmatch(token):
            numbers.update(_numbers_of_group(token))
        elif token.isdigit():
            numbers.add(Decimal(int(token)))
        else:
            words.add(token)
            if ordinal := _ORDINAL_SUFFIX.fullmatch(token):
                numbers.add(Decimal(int(ordinal.group(1))))
            elif leading := _LEADING_DIGITS.match(token):
                numbers.add(Decimal(int(leading.group())))
    if run:
        numbers.update(_spelt_run(run))
    return words, numbers


def _leaves(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _leaves(v)
    else:
        yield value


def value_terms(claim: Claim) -> tuple[set[str], set[Decimal]]:
    """What of a candidate is looked for in its message (see the module docstring)."""
    texts: list[str] = []
    numbers: set[Decimal] = set()
    if claim.predicate is None:
        texts.append(claim.text or "")
    for leaf in _leaves(claim.value or {}):
        if isinstance(leaf, bool) or leaf is None:
            continue
        if isinstance(leaf, int | float):
            if (n := _number(repr(leaf))) is not None and n.is_finite():
                numbers.add(n)
        elif not _ISO_TIME.fullmatch(str(leaf).strip()):
            texts.append(str(leaf))
    words: set[str] = set()
    for text in texts:
        found_words, found_numbers = terms(text)
        words |= found_words
        numbers |= found_numbers
    return (words - _FUNCTION_WORDS) or words, numbers


def _word_found(word: str, message_words: set[str]) -> bool:
    if len(word) < WORD_STEM_CHARS:
        return word in message_words
    stem = word[:WORD_STEM_CHARS]
    return any(
        other.startswith(stem)
        or (len(other) >= WORD_STEM_CHARS and (other in word or word in other))
        for other in message_words
    )


def ungrounded(claim: Claim, message: str) -> str | None:
    """Why the candidate is held as ungrounded, or None when its message has one of its
    value's terms, or the value has too little to look for."""
    words, numbers = value_terms(claim)
    if not numbers and all(len(w) < WORD_STEM_CHARS for w in words):
        return None  # nothing to look for: a boolean, a date, a code
    said_words, said_numbers = terms(message)
    if numbers & said_numbers or any(_word_found(w, said_words) for w in words):
        return None
    shown = sorted(words)[:SHOWN_TERMS_MAX] + [f"{n:f}" for n in sorted(numbers)][:SHOWN_TERMS_MAX]
    return f"ungrounded: none of {', '.join(shown)} is in its message"
