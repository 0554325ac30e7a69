"""What a free-text memory would lose if it were merged into another: the merge guard.

A merge retires the loser and keeps the survivor's text, so whatever the loser says that the
survivor does not is gone from the live set. Embeddings cannot see most of it: "Alice always
publishes on Monday" and "Alice never publishes on Monday" are 0.05 apart for the default
model, "The woman is picking up the kangaroo" and its role swap 0.035. So every tier that
merges memories (dedupe, the judge's validator, the offline tier) asks this module first, and
it answers on the words alone:

* asymmetric detail checks, loser against survivor: a number, a named entity, a date or a
  condition (if / unless / when / only / except ...) the loser states and the survivor lacks.
  A survivor with *more* detail may absorb a loser with less ("User publishes on Tuesdays" into
  "User publishes on Tuesday mornings"), not the other way;
* symmetric meaning checks: a negation on one side only (always / never, "doesn't"), a pair
  of antonyms split across the sides (likes / dislikes, near / far), an action on each side
  that the other lacks ("is running" / "is standing": a verb in -ing), and a role swap (the
  same content words with two arguments exchanged around the same word: "Alice manages Bob"
  / "Bob manages Alice"). A passive on one side only reverses the order legitimately ("A man
  is playing a guitar" / "A guitar is being played by a man") and is not a swap.

The action check is the costly one: on SICK TRAIN+TRIAL it refuses about 105 of the 690 pairs
that entail each other both ways (synonyms: "cutting" / "slicing") and stops 34 of the 49
contradictions that the other checks let through. A refused merge leaves a second
memory; a wrong one loses a fact, so the trade is taken (scripts/calibrate_offline_merge.py
prints both lists).

Words are compared folded: case, punctuation, Unicode forms, plurals ("Tuesdays" / "tuesday"),
number words ("three" / "3"), and contractions ("doesn't" is "doesn" + "t", a negation as
in `identity.negated`). The negation and antonym word lists are the ones the identity guards
use (`identity.NEGATIONS`, `identity.ANTONYMS`, plus STATEMENT_ANTONYMS for words only whole
statements use), and plurals and verb forms are folded by
`names.singular` / `names.stem`: one copy of each list.

What the words cannot tell: one thing put for another ("a soccer ball" / "a tennis ball",
"blond" / "with dark hair"), opposites outside the lists, a common noun at the start of a
sentence (read as a name: "Children are playing" keeps "children"), a swap through a
relative clause. An empty answer means "nothing the words can see", not "same meaning"; that is why
the offline tier also requires the embeddings to be close.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import date
from functools import lru_cache
from itertools import pairwise

from distill.core.identity import ANTONYMS, NEGATING_PREFIXES, NEGATIONS
from distill.core.names import singular, stem
from distill.core.statement_words import (
    AMBIGUOUS_MONTHS,
    CHANGE_PHRASES,
    CHANGE_WORDS,
    CONDITION_PHRASES,
    CONDITIONS,
    FOREIGN_INITIALS,
    FUNCTION_WORDS,
    GERMAN_GRAMMAR,
    GERMAN_MIN,
    MONTHS,
    NOT_ACTIONS,
    NOT_CONTENT,
    NOT_PREFIXED,
    PRONOUN_ONE_BEFORE,
    RELATIVE_DAYS,
    RELATIVE_MARKERS,
    RELATIVE_PERIODS,
    RELATIVE_TO_NOW,
    SCALES,
    STATEMENT_ANTONYMS,
    TENS,
    UNITS,
    WEEKDAYS,
)

CODES = (
    "number", "negation", "antonym", "action", "entity", "date", "condition", "role_swap",
    "change",
)  # fmt: skip


@dataclass(frozen=True)
class Objection:
    """One reason not to merge: its code (one of CODES) and what, in words."""

    code: str
    detail: str


@dataclass(frozen=True)
class OfflineMerge:
    """The offline tier's decision on one pair, with the reason for it."""

    merge: bool
    reason: str
    objections: tuple[Objection, ...] = ()

    def __bool__(self) -> bool:
        return self.merge


# Capitalised at a sentence start, these are the grammar of the sentence, not a name.
_NOT_NAMES = frozenset(
    {*FUNCTION_WORDS, *FOREIGN_INITIALS, *NEGATIONS, *CONDITIONS, *UNITS, *TENS, *SCALES}
    | {x for pair in ANTONYMS for x in pair}
)
_BE = frozenset({"is", "are", "was", "were", "be", "being", "been", "am"})
_CHANGE_STEMS = frozenset(stem(w) for w in CHANGE_WORDS)

_TOKEN = re.compile(r"\d+(?:[.,:/-]\d+)*|[^\W\d_]+", re.UNICODE)
_SENTENCE_END = re.compile(r"[.!?;:]\s*$")
_ISO_DATE = re.compile(r"^\d{4}-\d{1,2}-\d{1,2}$|^\d{1,2}/\d{1,2}(?:/\d{2,4})?$")


@dataclass(frozen=True)
class _Token:
    raw: str  # as written (case kept)
    word: str  # casefolded
    initial: bool  # first word of a sentence


@dataclass(frozen=True)
class Reading:
    """What the checks need of one text, computed once."""

    words: tuple[str, ...]  # casefolded, in order
    folded: frozenset[str]  # casefolded, singular: what "the text has this word" means
    content: tuple[str, ...]  # content words, singular and stemmed, in order
    surface: dict[str, str]  # a content word as first written
    actions: frozenset[str]  # content words that were verbs in -ing, stemmed
    numbers: frozenset[str]
    dates: frozenset[str]
    entities: frozenset[str]  # singular, casefolded
    spelled: dict[str, str]  # an entity as written ("james" for "jame")
    conditions: frozenset[str]
    negations: tuple[str, ...]
    changes: frozenset[str]  # CHANGE_WORDS and CHANGE_PHRASES it says, by stem
    passive: bool
    has_article: bool


def _tokens(text: str) -> list[_Token]:
    normal = unicodedata.normalize("NFKC", text)
    tokens: list[_Token] = []
    last_end = 0
    for match in _TOKEN.finditer(normal):
        between = normal[last_end : match.start()]
        initial = not tokens or bool(_SENTENCE_END.search(between))
        tokens.append(_Token(match.group(), match.group().casefold(), initial))
        last_end = match.end()
    return tokens


def _year(text: str) -> bool:
    """Four digits in the years a memory names (1900-2099) are a date; other numbers of four
    digits ("1200 euros") are amounts."""
    return len(text) == 4 and text.isdigit() and 1900 <= int(text) <= 2099


def _number(text: str) -> str:
    """One spelling per number: "1,000" and "1000" are one, "3.0" and "3" are one."""
    plain = text.replace(",", "") if re.fullmatch(r"\d{1,3}(?:,\d{3})+", text) else text
    try:
        value = float(plain)
    except ValueError:
        return text
    return str(int(value)) if value.is_integer() else str(value)


def _spelled_numbers(words: list[str]) -> set[str]:
    """Numbers written as words: "three" is 3, "twenty-three" 23, "two hundred" 200."""
    found: set[str] = set()
    i = 0
    while i < len(words):
        w = words[i]
        if w not in UNITS and w not in TENS:
            i += 1
            continue
        if w == "one" and i > 0 and words[i - 1] in PRONOUN_ONE_BEFORE:
            i += 1
            continue
        total, current = 0, 0
        while i < len(words) and (words[i] in UNITS or words[i] in TENS or words[i] in SCALES):
            word = words[i]
            if word in SCALES:
                current = max(current, 1) * SCALES[word]
                if SCALES[word] >= 1000:
                    total, current = total + current, 0
            else:
                current += UNITS.get(word, 0) + TENS.get(word, 0)
            i += 1
        found.add(str(total + current))
    return found


@lru_cache(maxsize=16384)  # pure in its text; a run compares one memory with many
def read(text: str) -> Reading:
    tokens = _tokens(text)
    words = [t.word for t in tokens]
    capitals_are_nouns = sum(w in GERMAN_GRAMMAR for w in words) >= GERMAN_MIN
    numbers: set[str] = set()
    dates: set[str] = set()
    entities: set[str] = set()
    spelled: dict[str, str] = {}
    for i, t in enumerate(tokens):
        near_digit = any(
            0 <= j < len(tokens) and tokens[j].raw[0].isdigit() for j in (i - 1, i + 1)
        )
        if t.raw[0].isdigit():
            if _ISO_DATE.match(t.raw) or _year(t.raw):
                dates.add(t.raw)
            else:
                numbers.add(_number(t.raw))
            continue
        one = singular(t.word)
        if one in WEEKDAYS or t.word in WEEKDAYS:
            dates.add(WEEKDAYS.get(one, WEEKDAYS.get(t.word, one)))
        elif t.word in MONTHS:
            dates.add(MONTHS[t.word])
        elif t.word in AMBIGUOUS_MONTHS and (near_digit or (t.raw[0].isupper() and not t.initial)):
            dates.add(AMBIGUOUS_MONTHS[t.word])
        elif t.word in RELATIVE_DAYS or one in RELATIVE_DAYS:
            dates.add(one)
        elif _named(t, capitals_are_nouns):
            entities.add(one)
            spelled.setdefault(one, t.word)
    numbers |= _spelled_numbers(words)
    conditions = {w for w in words if w in CONDITIONS}
    for first, second in CONDITION_PHRASES:
        if any(a == first and b == second for a, b in pairwise(words)):
            conditions.add(f"{first} {second}")
    negations = tuple(
        ("n't" if w == "t" else w)
        for i, w in enumerate(words)
        if w in NEGATIONS or (w == "t" and i > 0 and words[i - 1].endswith("n"))
    )
    changes = {stem(w) for w in words if w in CHANGE_WORDS or stem(w) in _CHANGE_STEMS}
    changes |= {f"{a} {b}" for a, b in pairwise(words) if (a, b) in CHANGE_PHRASES}
    kept = [
        w for w in words if w not in FUNCTION_WORDS and w not in NOT_CONTENT and not w[0].isdigit()
    ]
    content = tuple(stem(singular(w)) for w in kept)
    surface: dict[str, str] = {}
    for c, w in zip(content, kept, strict=True):
        surface.setdefault(c, w)
    return Reading(
        words=tuple(words),
        folded=frozenset(words) | frozenset(singular(w) for w in words),
        content=content,
        surface=surface,
        actions=frozenset(
            stem(w) for w in kept if w.endswith("ing") and len(w) > 4 and w not in NOT_ACTIONS
        ),
        numbers=frozenset(numbers),
        dates=frozenset(dates),
        entities=frozenset(entities),
        spelled=spelled,
        conditions=frozenset(conditions),
        negations=negations,
        changes=frozenset(changes),
        passive="by" in words and bool(_BE.intersection(words)),
        has_article=bool({"a", "an"}.intersection(words)),
    )


def _named(t: _Token, capitals_are_nouns: bool = False) -> bool:
    """A name, by its spelling: capitalised inside a sentence ("met Alice"), mixed case or
    all capitals ("iPhone", "NASA"), or capitalised at a sentence start when it is no
    function word ("Alice manages Bob"; "The", "User", "She" are not names). In German,
    where every noun is capitalised ("von zu Hause"), only the mixed case and capitals."""
    raw = t.raw
    if len(raw) < 2:
        return False
    if any(c.isupper() for c in raw[1:]):
        return True
    if not raw[0].isupper() or capitals_are_nouns:
        return False
    return not t.initial or t.word not in _NOT_NAMES


# -- the checks ------------------------------------------------------------------------------
def _lost(kind: str, loser: Reading, survivor: Reading, label: str) -> list[Objection]:
    """Details of one kind the loser has and the survivor lacks. A name counts as kept when
    the survivor has the word in any case ("alice"); a date only when the survivor reads it
    as a date too ("she may go" keeps no date "May")."""
    kept = _of(kind, survivor) | (survivor.folded if kind == "entity" else frozenset())
    return [
        Objection(kind, f"the loser's {label} {loser.spelled.get(x, x)!r} is not in the survivor")
        for x in sorted(_of(kind, loser) - kept)
    ]


def _of(kind: str, r: Reading) -> frozenset[str]:
    return {
        "number": r.numbers,
        "date": r.dates,
        "entity": r.entities,
        "condition": r.conditions,
    }[kind]


def _numbers_lost(survivor: Reading, loser: Reading) -> list[Objection]:
    found = []
    for n in sorted(loser.numbers - survivor.numbers):
        if n == "1" and survivor.has_article:
            continue  # "one bike" is "a bike"
        found.append(Objection("number", f"the loser's number {n} is not in the survivor"))
    return found


def _negation(a: Reading, b: Reading) -> list[Objection]:
    if bool(a.negations) == bool(b.negations):
        return []
    said = a.negations or b.negations
    side = "survivor" if a.negations else "loser"
    return [Objection("negation", f"only the {side} is negated ({', '.join(said)})")]


def antonym_pairs(a: Reading, b: Reading) -> list[str]:
    """Opposites split across two statements, one on each side ("'like' against 'dislike'"):
    the lists, and a word against itself with a negating prefix."""
    only_a, only_b = a.folded - b.folded, b.folded - a.folded
    found = [
        f"{x!r} against {y!r}"
        for x, y in (*ANTONYMS, *STATEMENT_ANTONYMS)
        if (x in only_a and y in only_b) or (y in only_a and x in only_b)
    ]
    seen: set[str] = set()
    for ones, others in ((only_a, only_b), (only_b, only_a)):
        for w in sorted(ones):
            for prefix in NEGATING_PREFIXES:
                opposite = prefix + w
                if len(w) >= 3 and opposite in others and opposite not in NOT_PREFIXED:
                    if singular(w) not in seen:  # "like"/"dislike" and "likes"/"dislikes"
                        found.append(f"{w!r} against {opposite!r}")
                    seen.add(singular(w))
    return found


def _antonyms(a: Reading, b: Reading) -> list[Objection]:
    return [Objection("antonym", pair) for pair in antonym_pairs(a, b)]


def _change(a: Reading, b: Reading) -> list[Objection]:
    """One side says something changed and the other does not: "I replaced my Pixel 6 with an
    iPhone 15" is not "My phone is a Pixel 6", though it loses none of its words."""
    if bool(a.changes) == bool(b.changes):
        return []
    said = ", ".join(sorted(a.changes or b.changes))
    side = "survivor" if a.changes else "loser"
    return [Objection("change", f"only the {side} states a change ({said})")]


def _action(a: Reading, b: Reading) -> list[Objection]:
    """Each side says the subject is doing something the other does not ("A dog is running"
    / "A dog is standing"; "is slicing" / "is peeling"). Verbs in -ing are the only ones the
    words show reliably; a synonym ("cutting" / "chopping") is refused too, which costs a
    second memory, never a lost one."""
    only_a, only_b = a.actions - b.actions, b.actions - a.actions
    if not only_a or not only_b:
        return []
    said_a = ", ".join(sorted(a.surface[w] for w in only_a))
    said_b = ", ".join(sorted(b.surface[w] for w in only_b))
    return [Objection("action", f"{said_a!r} against {said_b!r}")]


def _role_swap(a: Reading, b: Reading) -> list[Objection]:
    """Two content words on either side of a third, in one order on one side and the other
    order on the other ("alice manage bob" / "bob manage alice"). Only words said once on
    each side count; a passive on one side only reverses the order by grammar."""
    if a.passive != b.passive:
        return []
    once_a = {w for w in a.content if a.content.count(w) == 1}
    once_b = {w for w in b.content if b.content.count(w) == 1}
    shared = once_a & once_b
    pos_a = {w: a.content.index(w) for w in shared}
    pos_b = {w: b.content.index(w) for w in shared}
    ordered = sorted(shared, key=pos_a.__getitem__)
    for i, u in enumerate(ordered):
        for j in range(i + 2, len(ordered)):
            v = ordered[j]
            if pos_b[v] >= pos_b[u]:
                continue
            for w in ordered[i + 1 : j]:
                if pos_b[v] < pos_b[w] < pos_b[u]:
                    x, y, z = (a.surface[k] for k in (u, v, w))
                    return [Objection("role_swap", f"{x!r} and {y!r} swap around {z!r}")]
    return []


def said_relative_to_now(text: str) -> str | None:
    """The word or words placing `text` relative to when it was said ("yesterday", "last
    week"), if any."""
    words = read(text).words
    for w in words:
        if w in RELATIVE_TO_NOW:
            return w
    for a, b in pairwise(words):
        if a in RELATIVE_MARKERS and singular(b) in RELATIVE_PERIODS:
            return f"{a} {b}"
    return None


def time_objection(a: str, a_day: date, b: str, b_day: date) -> Objection | None:
    """Two statements of which one is placed relative to when it was said, said on different
    days: they speak of different times ("I went hiking yesterday", twice)."""
    if a_day == b_day:
        return None
    said = said_relative_to_now(a) or said_relative_to_now(b)
    if said is None:
        return None
    return Objection("date", f"{said!r}, said on {a_day} and on {b_day}: two different times")


@lru_cache(maxsize=16384)
def merge_objections(survivor: str, loser: str) -> tuple[Objection, ...]:
    """Why merging `loser` into `survivor` (the loser retires, the survivor's text stays)
    would lose or distort something; empty when the words show nothing. See the module
    docstring for what each code means and what the words cannot see."""
    s, lo = read(survivor), read(loser)
    found: list[Objection] = [
        *_numbers_lost(s, lo),
        *_negation(s, lo),
        *_antonyms(s, lo),
        *_action(s, lo),
        *_lost("entity", lo, s, "name"),
        *_lost("date", lo, s, "date"),
        *_lost("condition", lo, s, "condition"),
        *_role_swap(s, lo),
        *_change(s, lo),
    ]
    return tuple(found)


def offline_merge(a: str, b: str, distance: float, max_distance: float) -> OfflineMerge:
    """The offline tier: merge two memories only when their embeddings are within
    `max_distance` (cosine distance, calibrated per embedder) and the words object in
    neither direction, so that whichever survives loses nothing."""
    if distance > max_distance:
        return OfflineMerge(False, f"distance {distance:.3f} > {max_distance:g}")
    objections = tuple(dict.fromkeys((*merge_objections(a, b), *merge_objections(b, a))))
    if objections:
        return OfflineMerge(False, objections[0].detail, objections)
    return OfflineMerge(True, f"distance {distance:.3f} ≤ {max_distance:g}, no objection")
