"""What a predicate's name says, read as words: the identity signal that ignores the value.

A model names one attribute differently from one call to the next (`bike_count`, then
`bikes_owned`; `dob`, then `date_of_birth`), and a supersede changes the value by definition,
so the signal that decides "same attribute?" must not depend on the value. Embeddings of a
two-word name are weak at it (the local model puts `bike_count` 0.44 from `bikes_owned` and
0.05 from `older_sister_name` / `younger_sister_name`), while the words say most of it:

* spelling, abbreviation, number, verb forms and a few synonyms are folded (`favourite`/
  `preferred` → `favorite`, `dob` → `date birth`, `kids` → `child`, `num`/`number`/`owned`
  → `count`, `swimming` → `swim`), and filler that names no attribute is dropped (`my`,
  `current`, `of`, `user`);
* two names with the same folded words are the same attribute, in any order
  (`name_of_pet` / `pet_name`);
* names that share a word and differ only by words that turn one attribute into another
  (`target`, `previous`, `spouse`, `max`, `start`, `weekend`, ...) contrast: `weight_kg` /
  `target_weight_kg`, `home_city` / `birth_city`, `step_goal` / `step_count`. Never merged,
  never contested;
* names that share a word and each have one the other lacks (`bike_count` / `car_count`) are
  a substitution: usually two attributes (the head is the same, what it counts is not).

The word lists were chosen on scripts/calibration_pairs.json and are measured on pairs
written apart from them (`distill eval drift`); see EVAL.md for both figures.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache

# Abbreviations and spellings, to the words they stand for.
EXPANSIONS: dict[str, tuple[str, ...]] = {
    "dob": ("date", "birth"),
    "bday": ("date", "birth"),
    "birthday": ("date", "birth"),
    "birthdate": ("date", "birth"),
    "tz": ("timezone",),
    "hr": ("heart", "rate"),
    "bp": ("blood", "pressure"),
    "addr": ("address",),
    "pb": ("personal", "best"),
    "pr": ("personal", "best"),
    "gpa": ("grade", "point", "average"),
    "rhr": ("resting", "heart", "rate"),
    "isp": ("internet", "provider"),
    "meds": ("medication",),
    "uni": ("university",),
    "num": ("count",),
    "no": ("count",),
    "qty": ("count",),
    "nr": ("count",),
    "tel": ("phone",),
    "telephone": ("phone",),
    "cell": ("mobile",),
    "cellphone": ("mobile", "phone"),
    "mob": ("mobile",),
    "mgr": ("manager",),
    "dept": ("department",),
    "org": ("organization",),
    "yr": ("year",),
    "yrs": ("year",),
    "mins": ("minute",),
    "min": ("minimum",),
    "max": ("maximum",),
    "favourite": ("favorite",),
    "fav": ("favorite",),
    "fave": ("favorite",),
    "colour": ("color",),
    "neighbourhood": ("neighborhood",),
    "licence": ("license",),
    "programme": ("program",),
    "organisation": ("organization",),
    "centre": ("center",),
    "mum": ("mother",),
    "mom": ("mother",),
    "mama": ("mother",),
    "dad": ("father",),
    "papa": ("father",),
    "kid": ("child",),
    "grandkid": ("grandchild",),
    "grandkids": ("grandchild",),
    "grandchildren": ("grandchild",),
    "works": ("employer",),
    "role": ("job", "title"),
    "position": ("job", "title"),
    "kids": ("child",),
    "children": ("child",),
    "people": ("person",),
    "timezone": ("timezone",),
    "time_zone": ("timezone",),
    "email": ("email",),
    "e": (),
}
# Words that mean the same inside an attribute name, to one of them.
SYNONYMS: dict[str, str] = {
    "preferred": "favorite",
    "favorite": "favorite",
    "owned": "count",
    "total": "count",
    "number": "count",
    "amount": "count",
    "residence": "home",
    "residential": "home",
    "hobby": "pastime",
    "annual": "yearly",
    "office": "work",
    "postal": "mailing",
    "target": "goal",
    "upcoming": "next",
    "business": "work",
    "marriage": "wedding",
    "studying": "learning",
    "study": "learning",
    "tier": "plan",
    "spouse": "partner",
    "wife": "partner",
    "husband": "partner",
    "boss": "manager",
    "supervisor": "manager",
    "occupation": "job",
    "profession": "job",
    "vehicle": "car",
    "automobile": "car",
    "liv": "home",
    "company": "employer",
    "workplace": "employer",
    "brand": "make",
    "manufacturer": "make",
    "elo": "rating",
    "method": "mode",
    "kind": "type",
    "dish": "food",
    "meal": "food",
    "marital": "relationship",
    "preference": "favorite",
    "mobile": "mobile",
    "cellphone": "mobile",
    "income": "salary",
    "pay": "salary",
    "wage": "salary",
    "telephone": "phone",
    "cellular": "mobile",
}
# Words that name no attribute: ownership, "now", grammar.
FILLER = frozenset(
    {
        "my", "user", "users", "current", "currently", "present", "now", "usual", "usually",
        "typical", "the", "a", "an", "of", "in", "at", "on", "is", "are", "has", "have",
        "do", "does", "for", "to", "with", "main", "primary", "info", "information",
        "detail", "details", "value", "actual", "today", "latest", "default",
    }
)  # fmt: skip
# Words that make another attribute of the one they qualify, even when the other name says
# nothing in their place: `weight_kg` / `target_weight_kg`, `phone` / `partner_phone`.
MARKED = frozenset(
    {
        # goals and plans against facts
        "target", "goal", "desired", "ideal", "planned", "expected", "dream",
        "wish", "wanted", "limit", "forecast", "estimated",
        # other times
        "previous", "former", "ex", "old", "past", "next", "future", "upcoming",
        "original", "initial", "final", "second", "third", "other", "last", "first",
        # ranges and ends
        "maximum", "minimum", "least", "most", "start", "end", "begin", "finish",
        "until", "open", "close", "high", "low", "average", "median", "peak",
        # whose
        "partner", "child", "son", "daughter", "mother", "father", "brother", "sister",
        "sibling", "parent", "grandmother", "grandfather", "friend", "colleague",
        "manager", "team", "family", "emergency", "assistant", "roommate", "law",
        # which one
        "secondary", "backup", "alternate", "half", "older", "younger", "elder", "middle",
        "maiden", "nick", "nickname", "departure", "arrival", "outbound", "return",
        "inbound", "destination", "origin", "gross", "net", "systolic", "diastolic",
        "out", "off", "favorite", "remote", "skip", "step", "grand",
    }
)  # fmt: skip
# Words that tell apart attributes sharing a head when each name has its own (`home_city` /
# `birth_city`), but that a name may leave unsaid for its usual case (`rent` is the monthly
# rent, `address` the home address).
DEFAULTABLE = frozenset(
    {
        "home", "work", "business", "private", "birth", "billing",
        "shipping", "mailing", "legal", "daily", "weekly", "monthly", "yearly", "weekday",
        "weekend", "morning", "evening", "night", "native", "learning", "spoken",
        "resting", "wedding", "dating", "engagement", "frontend", "backend", "left",
        "right", "upper", "lower", "short", "long", "winter", "summer", "indoor",
        "outdoor", "pet", "dog", "cat", "full",
    }
)  # fmt: skip
CONTRASTS = MARKED | DEFAULTABLE
# "per month" and the like, read as the one word a name would use.
PER = {"day": "daily", "week": "weekly", "month": "monthly", "year": "yearly"}


class NameRelation(StrEnum):
    SAME = "same"  # the same words once folded
    CONTRAST = "contrast"  # a shared word, and a contrasting word on one side
    EXTENSION = "extension"  # one name's words are the other's plus some (no contrast)
    SUBSTITUTION = "substitution"  # a shared word, and each side has words the other lacks
    DISJOINT = "disjoint"  # no word in common


@dataclass(frozen=True)
class NameComparison:
    relation: NameRelation
    only_a: frozenset[str]
    only_b: frozenset[str]
    shared: frozenset[str]

    @property
    def firm(self) -> bool:
        """A contrast that a judge model is not asked about either: a marked word
        (`weight_kg` / `target_weight_kg`), or contrasting words on both sides (`home_city` /
        `birth_city`). A contrasting word against another kind of word (`dog_name` /
        `puppy_name`, `mortgage_payment` / `monthly_mortgage`) sets them apart without a
        model, but a stated change is put to one (`attribute_match`)."""
        own = self.only_a | self.only_b
        both = bool(self.only_a) and bool(self.only_b) and own <= CONTRASTS
        return self.relation is NameRelation.CONTRAST and (bool(own & MARKED) or both)


def singular(word: str) -> str:
    if len(word) <= 3 or word.endswith(("ss", "us", "is")):
        return word
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "xes", "sses")):
        return word[:-2]
    if word.endswith("s"):
        return word[:-1]
    return word


# A consonant doubled before "-ing" or "-ed" (`running`, `swimming`, `planned`), kept single
# in the word's other forms; "ll", "ss" and "zz" belong to the word itself (`falling`,
# `dressed`, `buzzing`). English spelling's rule, as the Porter stemmer writes it.
_UNDOUBLED = frozenset("bcdfghjkmnpqrtvwx")


def stem(word: str) -> str:
    """Verb and noun forms of one word: `invoicing` / `invoice`, `lives` / `living`,
    `running` / `run`."""
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            if word[-1] == word[-2] and word[-1] in _UNDOUBLED:
                return word[:-1]
            break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


@lru_cache(maxsize=4096)
def name_words(predicate: str) -> frozenset[str]:
    """The folded words of a snake_case predicate, filler dropped."""
    words: list[str] = []
    for raw in predicate.split("_"):
        if not raw:
            continue
        expanded = EXPANSIONS.get(raw)
        if expanded is None:
            expanded = EXPANSIONS.get(singular(raw), (raw,))
        for word in expanded:
            word = singular(word)
            word = SYNONYMS.get(word, word)
            if word in CONTRASTS or word in SYNONYMS.values():
                words.append(word)
            else:
                words.append(SYNONYMS.get(stem(word), stem(word)))
    for i, word in enumerate(words[1:], start=1):
        if words[i - 1] == "per" and word in PER:
            words[i - 1 : i + 1] = ["", PER[word]]
    return frozenset(w for w in words if w and w not in FILLER and w != "per")


def _contrasts(own: frozenset[str], other: frozenset[str]) -> bool:
    """One name's own words are all contrasting words: a MARKED one, or DEFAULTABLE ones
    against words of the other name in their place. A name whose own words include any
    other word (`personal_best_5k` / `goal_personal_best_time`: `5k`; `time` with `goal`) is
    not told apart by its contrasting words alone; the distances decide it."""
    if not own or not own <= CONTRASTS:
        return False
    return bool(own & MARKED) or bool(other)


@lru_cache(maxsize=8192)  # pure in its two names, asked about the same pairs again and again
def compare_names(a: str, b: str) -> NameComparison:
    """How two predicate names relate, by their folded words (see the module docstring)."""
    words_a, words_b = name_words(a), name_words(b)
    only_a, only_b = words_a - words_b, words_b - words_a
    if not only_a and not only_b:
        relation = NameRelation.SAME
    elif not words_a & words_b:
        relation = NameRelation.DISJOINT
    elif _contrasts(only_a, only_b) or _contrasts(only_b, only_a):
        relation = NameRelation.CONTRAST
    elif only_a and only_b:
        relation = NameRelation.SUBSTITUTION
    else:
        relation = NameRelation.EXTENSION
    return NameComparison(relation, only_a, only_b, words_a & words_b)
