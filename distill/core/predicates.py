"""Predicate names, one spelling each: what `Claim` normalises its predicate and qualifier
keys with, and an event's action its type and state keys (`core.event_action`)."""

from __future__ import annotations

import re
import unicodedata

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_NON_WORD = re.compile(r"[^a-z0-9]+")


def normalise_predicate(raw: str) -> str:
    """`Bike Count` / `bike-count` / `bikeCount` → `bike_count`; `Prénom` → `prénom`.

    Words are runs of letters, marks and digits of any script (NFC, case-folded), joined by
    `_`: `prénom` stays itself, a name apart from `pr_nom`.
    """
    if raw.isascii():  # the common case, the same rule in two regular expressions
        spaced = _CAMEL.sub("_", raw.strip())
        return _NON_WORD.sub("_", spaced.lower()).strip("_")
    chars: list[str] = []
    previous = ""
    for char in unicodedata.normalize("NFC", raw.strip()):
        if char.isupper() and (previous.islower() or previous.isdigit()):
            chars.append("_")  # camelCase
        chars.append(char if _in_word(char) else "_")
        previous = char
    folded = unicodedata.normalize("NFC", "".join(chars).casefold())
    return "_".join(word for word in folded.split("_") if word)


def _in_word(char: str) -> bool:
    """A letter, a mark (accents, the vowel signs of Indic scripts) or a decimal digit."""
    category = unicodedata.category(char)
    return category[0] in "LM" or category == "Nd"
