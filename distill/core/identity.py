"""What makes two claims "the same thing": identity keys, canonical values, normalised text.

Identity = (project, subject, predicate, identity qualifiers). Attribution (who said it) is
kept on the fact but is not identity, so it is split off the qualifiers here.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from distill.core.json_data import compact_writer
from distill.core.models import Claim, Scalar

# Qualifier keys that say who stated a claim rather than which claim it is.
ATTRIBUTION_KEYS = frozenset({"speaker", "said_by", "source", "attributed_to", "reported_by"})
_ATTRIBUTION_ORDER = tuple(sorted(ATTRIBUTION_KEYS))  # the first of them names the speaker


def canonical_json(value: Any) -> str:
    """One spelling per value: sorted keys, no spaces, floats that equal ints written as ints."""
    return _CANONICAL_JSON(_canonical(value))


# Built once, not by `json.dumps` on every call (a claim's dump 6.6 → 3 µs: the preparation
# thread hashes every claim, `extraction.claim_hash`).
_CANONICAL_JSON = compact_writer()
_PLAIN = frozenset({int, bool, type(None)})  # kept as they are: no call for them


def _canonical(value: Any) -> Any:
    kind = type(value)
    if kind is str:
        return unicodedata.normalize("NFC", value.strip())
    if kind is dict:  # nearly every value: a claim's dump, a fact's value, its qualifiers
        return {
            k if type(k) is str else str(k): v if type(v) in _PLAIN else _canonical(v)
            for k, v in value.items()
        }
    if kind in _PLAIN:
        return value
    # The general rules (for subclasses of dict, str and float too).
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        return unicodedata.normalize("NFC", value.strip())
    return value


def split_qualifiers(qualifiers: dict[str, Scalar]) -> tuple[dict[str, Scalar], str | None]:
    """Separate identity qualifiers from attribution."""
    if not qualifiers:  # most claims have none
        return {}, None
    identity = {k: v for k, v in qualifiers.items() if k not in ATTRIBUTION_KEYS}
    said_by = [str(qualifiers[k]) for k in _ATTRIBUTION_ORDER if k in qualifiers]
    return identity, (said_by[0] if said_by else None)


def identity_key(predicate: str, qualifiers: dict[str, Scalar]) -> str:
    """The key the one-active-fact-per-identity index is built on."""
    return f"{predicate}|{canonical_json(qualifiers) if qualifiers else '{}'}"


def qualifiers_of_key(key: str) -> str:
    return key.split("|", 1)[1]


def identity_text(predicate: str, value: dict[str, Any] | None = None) -> str:
    """What is embedded to find a fact with the same meaning under another predicate name.

    The value is part of it: predicate names alone are too short to embed reliably ("bike
    count" sits closer to "car count" than to "bikes owned"), while "bike count: 3" and
    "bikes owned: 3" are close and "first name: John" and "last name: Smith" are not.
    Measured by scripts/calibrate_threshold.py.
    """
    words = predicate.replace("_", " ")
    if not value:
        return words
    shown = ", ".join(_show(v) for _, v in sorted(value.items()) if v is not None)
    return f"{words}: {shown}" if shown else words


_NUMBERED = re.compile(r"\d")


def contrasting(a: str, b: str) -> bool:
    """Predicates that both carry a number and carry different ones name different things,
    however close their embeddings ("personal_best_5k" / "personal_best_10k", "q1_revenue" /
    "q2_revenue"). A number on one side only ("personal_best_5k" / "goal_personal_best_time")
    is no contrast."""
    numbered_a = {t for t in a.split("_") if _NUMBERED.search(t)}
    numbered_b = {t for t in b.split("_") if _NUMBERED.search(t)}
    return bool(numbered_a and numbered_b) and numbered_a != numbered_b


# Words that deny the statement they stand in. "n't" is caught as a "t" after a word that ends
# in "n" ("isn't" and "isn_t" both split into "isn", "t").
NEGATIONS = frozenset(
    {"no", "not", "never", "nobody", "none", "nothing", "nowhere", "neither", "nor", "without"}
    | {"cannot", "cant", "dont", "doesnt", "didnt", "isnt", "arent", "wasnt", "werent", "wont"}
)
# Word pairs whose swap turns a statement into another one, however close the embeddings (SICK
# training sentences that differ in "near"/"far" sit at cosine distance 0.07, in "day"/"night"
# at 0.09). "always"/"never" is covered by NEGATIONS. Chosen on SICK TRAIN/TRIAL and STS-B
# train/dev only (scripts/calibrate_pairs.py); the test splits were not looked at.
ANTONYMS: tuple[tuple[str, str], ...] = (
    ("always", "sometimes"),
    ("all", "some"),
    ("everyone", "someone"),
    ("everything", "something"),
    ("true", "false"),
    ("yes", "no"),
    ("enabled", "disabled"),
    ("allowed", "forbidden"),
    ("accepted", "rejected"),
    ("before", "after"),
    ("above", "below"),
    ("inside", "outside"),
    ("into", "out"),
    ("onto", "off"),
    ("on", "off"),
    ("up", "down"),
    ("open", "closed"),
    ("start", "stop"),
    ("win", "lose"),
    ("increase", "decrease"),
    ("more", "less"),
    ("minimum", "maximum"),
    ("first", "last"),
    ("early", "late"),
    ("near", "far"),
    ("close", "far"),
    ("big", "small"),
    ("large", "small"),
    ("huge", "small"),
    ("huge", "tiny"),
    ("full", "empty"),
    ("hot", "cold"),
    ("fast", "slow"),
    ("day", "night"),
    ("sitting", "standing"),
)
# A word and the same word with one of these prefixes are opposites ("folding"/"unfolding",
# "likes"/"dislikes").
NEGATING_PREFIXES = ("un", "dis")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def _words(text: str) -> list[str]:
    return _WORD.findall(unicodedata.normalize("NFKC", text).casefold())


def negated(text: str) -> bool:
    """The text carries a negation: a word of NEGATIONS or a contracted "n't". "no" read as
    "number" is not one: last ("tel_no", "passport no") or before "of" ("no_of_kids")."""
    words = _words(text)
    return any(
        (w in NEGATIONS and not (w == "no" and _number_no(words, i)))
        or (w == "t" and i > 0 and words[i - 1].endswith("n"))
        for i, w in enumerate(words)
    )


def _number_no(words: list[str], i: int) -> bool:
    return len(words) > 1 and (i == len(words) - 1 or words[i + 1] == "of")


def negation_differs(a: str, b: str) -> bool:
    """One side negates and the other does not: "publishes_on_monday" /
    "never_publishes_on_monday". An embedding puts such a pair almost on top of each other
    (cosine distance 0.05 for "always"/"never"), so the match is vetoed on the words."""
    return negated(a) != negated(b)


def antonym_differs(a: str, b: str) -> bool:
    """A word of an ANTONYMS pair on one side and its opposite on the other, neither on both
    ("likes_tea_in_the_morning" / "likes_tea_at_night"), or a word opposite to the same word
    with a NEGATING_PREFIXES prefix ("likes_tea" / "dislikes_tea")."""
    words_a, words_b = set(_words(a)), set(_words(b))
    only_a, only_b = words_a - words_b, words_b - words_a
    if any((x in only_a and y in only_b) or (y in only_a and x in only_b) for x, y in ANTONYMS):
        return True
    return any(
        prefix + w in others
        for ones, others in ((only_a, only_b), (only_b, only_a))
        for w in ones
        for prefix in NEGATING_PREFIXES
    )


# The vetoes `veto` applies, by name, in order: each says two predicates are different
# attributes however close their embeddings. Tested one by one in tests/unit/test_identity_guards.py
# and measured one by one on sentence pairs by `distill eval pairs`.
GUARDS: dict[str, Callable[[str, str], bool]] = {
    "numbers": contrasting,
    "negation": negation_differs,
    "antonyms": antonym_differs,
}


@lru_cache(maxsize=8192)  # pure in its two names; a run asks about the same pairs many times
def veto(a: str, b: str) -> str | None:
    """The first guard that tells predicates `a` and `b` apart, by name; None if none does.

    Only predicates are guarded, not values: "diet: vegetarian" / "diet type: not vegetarian"
    is one attribute whose value changed, while "eats_meat" / "never_eats_meat" are two."""
    return next((name for name, differs in GUARDS.items() if differs(a, b)), None)


# Words that make a claim a standing instruction for the agent when they name its attribute
# or one of its value's keys: {"rule": "always be extra polite"}, agent_instruction {...}.
# ("order", "policy", "prompt" are left out: `coffee_order`, `insurance_policy`.)
INSTRUCTION_WORDS = frozenset(
    {"rule", "rules", "instruction", "instructions", "directive", "directives", "guideline",
     "guidelines"}
)  # fmt: skip


def standing_instruction(claim: Claim) -> bool:
    """The claim is shaped as an instruction for the agent: its predicate or a key of its
    value names a rule, an instruction, a directive, a policy..."""
    names = [claim.predicate or "", *(claim.value or {}).keys()]
    return any(set(_words(n.replace("_", " "))) & INSTRUCTION_WORDS for n in names)


def values_equal(a: Any, b: Any) -> bool:
    """Equal canonical values: {"count": 3} equals {"count": 3.0}; " Lyon" equals "Lyon".

    The same answer as comparing their `canonical_json`, without encoding either: this
    runs for nearly every claim a job decides, most often on values that differ (an
    encoding of both cost 28 µs of the 30 a comparison took; BENCHMARKS.md). A flat value
    (one level of str keys and scalars: nearly all of them) is compared in one pass without
    building its canonical form (3.5 → 0.8 µs); anything else as `canonical_equal`."""
    flat = _flat_equal(a, b)
    return canonical_equal(a, b) if flat is None else flat


def canonical_equal(a: Any, b: Any) -> bool:
    """`values_equal` for any value: the canonical forms compared as JSON compares them."""
    return _same(a, b) or _same(_canonical(a), _canonical(b))


_NUMBERS = (int, float)


def _flat_equal(a: Any, b: Any) -> bool | None:
    """`canonical_equal` of two dicts of str keys and scalar values, without building their
    canonical forms; None for any other pair (nested values, other types)."""
    if type(a) is not dict or type(b) is not dict:
        return None
    if not all(type(k) is str for k in a) or not all(type(k) is str for k in b):
        return None  # str(key) could make two keys one
    if a.keys() != b.keys():
        return False
    for key, x in a.items():
        y = b[key]
        tx, ty = type(x), type(y)
        if tx is str and ty is str:
            same = x == y or _nfc(x) == _nfc(y)
        elif tx is bool or ty is bool:  # True is not 1
            same = tx is ty and x == y
        elif tx in _NUMBERS and ty in _NUMBERS:  # 3 is 3.0, and NaN is NaN
            same = x == y or (x != x and y != y)
        elif x is None or y is None:
            same = x is y
        elif tx in _SCALARS and ty in _SCALARS:  # a string against a number
            same = False
        else:
            return None
        if not same:
            return False
    return True


_SCALARS = (str, int, float)


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text.strip())


def _same(a: Any, b: Any) -> bool:
    """Equality as JSON text has it: True is not 1 (Python says it is), and NaN is NaN
    (both are written `NaN`; Python says they differ)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(v, b[k]) for k, v in a.items())
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b) or (a != a and b != b)  # NaN is the one value unequal to itself


_NON_WORD = re.compile(r"[^\w\s]", re.UNICODE)
_SPACE = re.compile(r"\s+")


def normalise_text(text: str) -> str:
    """Case, punctuation and white space folded: the deterministic duplicate test for memories."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return _SPACE.sub(" ", _NON_WORD.sub(" ", folded)).strip()


def content_hash(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8"))
        digest.update(b"\x1f")
    return digest.hexdigest()[:32]


def fact_text(predicate: str, value: dict[str, Any], qualifiers: dict[str, Scalar]) -> str:
    """A readable one-line rendering of a structured fact, used for display and search."""
    shown = ", ".join(f"{k}={_show(v)}" for k, v in value.items())
    where = ", ".join(f"{k}={_show(v)}" for k, v in qualifiers.items())
    text = f"{identity_text(predicate)}: {shown}" if shown else identity_text(predicate)
    return f"{text} ({where})" if where else text


def _show(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def without_nulls(value: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in value.items() if v is not None}


def carried_forward(
    before: dict[str, Any] | None, stated: dict[str, Any], same_name: bool
) -> dict[str, Any]:
    """A change's value: what it states over the version before it, keys it leaves unsaid
    carried forward, an explicit null deleting one. A change stated under the version's own
    name is a partial update (`{"agency": ...}` over `{"target", "status"}` adds a key).
    Under another name (a rename the words, a judge or a person joined to the attribute),
    keys are carried only into a value of the same shape, a key in common: a renamed claim
    in other keys (`bikes_owned {"number": 4}` over `bike_count {"count": 3}`) describes the
    value afresh, and carrying the old keys served the stale count beside the new one."""
    if before and (same_name or not stated or stated.keys() & before.keys()):
        return without_nulls({**before, **stated})
    return without_nulls(stated)
