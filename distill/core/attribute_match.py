"""Is a new predicate another name for a known attribute? Three answers, not two.

Between "surely the same" (file the claim under the known fact: reinforce or supersede it) and
"surely different" (a new fact) there is a band where a wrong guess either way is costly: a
false merge hides a real value, a miss leaves a stale value served beside the new one (the
Haki seed measured 87.5% of contradictions leaking that way). In the band the claim becomes
its own fact and an `identity` conflict set holds both, so that both are served as contested
and a person or a model decides; resolving it teaches an alias, and the next occurrence is
exact.

The verdict for one known fact, in order:
1. a guard (numbers, negation, antonyms: `identity.veto`) or a contrasting word in the names
   (`names.compare_names`: `home_city` / `birth_city`) → different;
2. the same words once folded (`bikes_owned` / `bike_count`) → the same;
3. value shapes that cannot be one attribute's (other keys and other types) → different;
4. identity texts (name and value) within the embedder's calibrated `same` distance → the
   same (a renamed attribute restated with its value);
5. one name is the other plus words (`yoga_frequency` / `yoga_class_frequency`), or the names
   are within the embedder's `name` band, or the identity texts within its `full` band, or
   the claim says it changes a known fact (action `supersede`, and no fact has its name)
   and its name or identity text is within the wider `change` band (the embedder's judge
   band) or it shares two words with this one (`personal_best_5k` /
   `goal_personal_best_time`) → probably the same: contested;
6. anything else → different.

With a judge model (`Bands.judged`), the contested pairs are decided by the model
(`passes.identity_judge`), not by a person, so more of them may be contested: the bands are
the embedder's wider judge band, and a claim stated as a change (`supersede`) is contested
against the closest known fact no hard signal rules out, whatever the words and
distances. The extractor says a value was replaced; which one is often world knowledge
(`gp` / `primary_care_physician`, `manager` / `boss`) that neither the words nor the
embedder carries, and the model has it. The hard signals are the guards (numbers, negation,
antonyms) and a firm contrast (`NameComparison.firm`: a marked word such as `target`,
`previous` or `spouse`, or contrasting words on both sides, `home_city` / `birth_city`).
A contrasting word against another kind of word (`dog_name` / `puppy_name`,
`mortgage_payment` / `monthly_mortgage`) and values of other shapes under names that share a
word (`home_address {"street", "city"}` / `address {"address"}`, `weight_kg {"kg"}` /
`body_weight {"weight", "unit"}`) set two attributes apart without a model, but a stated
change is put to the model. A change is still asked about its closest candidate only, so
this adds a call only where a change had none to ask about: on the drift cases, where each
case is a subject with one known fact, 115 → 123 calls (development) and 134 → 143 (held
out); a subject with several facts had one to ask about already. On the drift development
cases these signals had kept 6 of the 17 changes a scripted judge never saw. A `create` claim
is not asked about every known fact: nearly half of unrelated attribute pairs pass the
guards, so a new name would be asked about almost always (scripts/calibrate_threshold.py
measures both).

Both change rules hold in either arrival order: a known fact created from a change that
matched nothing (`Fact.unpaired_change`: the value it replaced came later) makes the pair a
change too (`asserted` is the adjudicator's to say: core/adjudicate.py).

Without a model no band reaches a silent leak of 10% at 10% of different attributes contested
with the shipped embedder, even on the pairs it was chosen on (12.9% at 7.7%, 9.5% at 14.5%):
a person's attention is the limit there. A stated change is contested within the wider
change band (the judge band) without a model too: a silent leak costs more than a question.
On cases written blind to all of this (`distill eval drift`, held out) the words and bands
leak 22% at 16% contested; with a judge model, 9%.

The distances are cosine distances of one embedder and are calibrated per embedder
(scripts/calibrate_threshold.py); with none, only the words decide.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from distill.core.identity import veto
from distill.core.names import NameRelation, compare_names

# A claim stated as a change of something known ("supersede") whose name shares this many
# folded words with a known fact's is contested against it, whatever the distances. Fixed,
# not calibrated (the calibration pairs carry no action); measured by `distill eval drift`.
ASSERTED_SHARED_WORDS = 2


class Verdict(StrEnum):
    SAME = "same"
    PROBABLE = "probable"
    DIFFERENT = "different"


@dataclass(frozen=True)
class Bands:
    """An embedder's calibrated cosine distances (None: that test is off)."""

    same: float | None = None  # identity texts this close are one attribute
    name: float | None = None  # names this close are probably one attribute
    full: float | None = None  # identity texts this close are probably one attribute
    judged: bool = False  # a judge model decides the contested pairs (see the docstring)
    # A claim stated as a change is contested within these (the embedder's judge band):
    change_name: float | None = None
    change_full: float | None = None


@dataclass(frozen=True)
class Match:
    verdict: Verdict
    reason: str
    distance: float  # of the identity texts; 1.0 when unknown
    # Contested only because a judge decides every change nothing firm rules out: no word
    # or distance points at this fact (or only soft signals set it apart), so a fact they
    # do point at is the likelier one and is asked about first.
    unsupported: bool = False


def compatible(a: dict[str, Any] | None, b: dict[str, Any] | None) -> bool:
    """Whether two values could be one attribute's: the same keys, or one value each of the
    same JSON type (`{"count": 3}` / `{"number": 4}`), or some key in common."""
    a, b = a or {}, b or {}
    if a.keys() & b.keys() or not a or not b:
        return True
    if len(a) == 1 and len(b) == 1:
        (x,) = a.values()
        (y,) = b.values()
        return _kind(x) == _kind(y)
    return False


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__


def judge(
    known: tuple[str, dict[str, Any] | None],
    new: tuple[str, dict[str, Any] | None],
    bands: Bands,
    name_distance: float | None,
    full_distance: float | None,
    asserted: bool = False,
) -> Match:
    """The verdict for a known fact (predicate, value) and a new claim (see the docstring)."""
    (pa, va), (pb, vb) = known, new
    full = 1.0 if full_distance is None else round(full_distance, 6)
    name = 1.0 if name_distance is None else round(name_distance, 6)
    guard = veto(pa, pb)
    if guard is not None:
        return Match(Verdict.DIFFERENT, f"the names differ in {guard}", full)
    names = compare_names(pa, pb)
    # A change is put to a judge model unless a hard signal rules it out (see the docstring).
    ask = asserted and bands.judged
    if names.relation is NameRelation.CONTRAST:
        words = ", ".join(sorted(names.only_a | names.only_b))
        if ask and not names.firm:
            reason = f"stated as a change, the names differ only in {words}: judged"
            return Match(Verdict.PROBABLE, reason, full, unsupported=True)
        return Match(Verdict.DIFFERENT, f"the names contrast ({words})", full)
    if names.relation is NameRelation.SAME:
        return Match(Verdict.SAME, "the same words", full)
    if not compatible(va, vb):
        if ask and names.shared:
            reason = "stated as a change, the values have other shapes: judged"
            return Match(Verdict.PROBABLE, reason, full, unsupported=True)
        return Match(Verdict.DIFFERENT, "the values have other shapes", full)
    if bands.same is not None and full <= bands.same:
        return Match(Verdict.SAME, f"the same meaning, distance {full:.3f}", full)
    if names.relation is NameRelation.EXTENSION:
        extra = ", ".join(sorted(names.only_a | names.only_b))
        return Match(Verdict.PROBABLE, f"one name adds words ({extra})", full)
    if bands.name is not None and name <= bands.name:
        return Match(Verdict.PROBABLE, f"close names, distance {name:.3f}", full)
    if bands.full is not None and full <= bands.full:
        return Match(Verdict.PROBABLE, f"close meanings, distance {full:.3f}", full)
    if asserted and (_within(name, bands.change_name) or _within(full, bands.change_full)):
        reason = f"stated as a change, close names or meanings ({name:.3f}, {full:.3f})"
        return Match(Verdict.PROBABLE, reason, full)
    if asserted and len(names.shared) >= ASSERTED_SHARED_WORDS:
        words = ", ".join(sorted(names.shared))
        return Match(Verdict.PROBABLE, f"stated as a change, and the names share {words}", full)
    if asserted and bands.judged:
        reason = "stated as a change, nothing rules it out: judged"
        return Match(Verdict.PROBABLE, reason, full, unsupported=True)
    return Match(Verdict.DIFFERENT, "neither the words nor the meaning match", full)


def _within(distance: float, band: float | None) -> bool:
    return band is not None and distance <= band
