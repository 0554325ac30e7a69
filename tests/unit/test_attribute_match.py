"""Issue 11, identity across predicate drift: what a predicate's name says read as words
(`names.compare_names`) and the three verdicts for "is this new predicate a known attribute?"
(`attribute_match.judge`).

Pure functions, no database. The rules pinned here are the ones the module docstrings state:
names with the same folded words are one attribute; a contrasting word (`target`, `birth`,
`partner`, ...) makes another attribute; a guard (numbers, negation) says "different" whatever
the distances; a name that only adds words is contested; the calibrated bands decide the rest,
inclusive at their edge.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distill.core.attribute_match import Bands, Verdict, compatible, judge
from distill.core.names import NameRelation, compare_names, name_words

# Bands like a calibrated embedder's (the local model's registry entry at the time of
# writing), spelled out here so that these tests do not move when the registry does.
BANDS = Bands(same=0.12, name=0.22, full=0.30)
JUST = 1e-4  # just outside a band: well above the 6-decimal rounding `judge` applies

Value = dict[str, Any] | None


# -- compare_names -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b"),
    [
        pytest.param("bike_count", "bikes_owned", id="plural-and-owned-is-count"),
        pytest.param("favorite_color", "preferred_color", id="synonym"),
        pytest.param("invoice_language", "invoicing_language", id="verb-and-noun-stem"),
        pytest.param("swim_day", "swimming_day", id="doubled-consonant-before-ing"),
        pytest.param("run_pace", "running_pace", id="doubled-consonant-n"),
        pytest.param("scanned_documents", "scan_documents", id="doubled-consonant-before-ed"),
        pytest.param("name_of_pet", "pet_name", id="word-order-and-filler"),
        pytest.param("dob", "date_of_birth", id="abbreviation"),
        pytest.param("num_kids", "number_of_children", id="abbreviation-and-plural"),
    ],
)
def test_names_with_the_same_folded_words_are_the_same(a: str, b: str) -> None:
    """Issue 11, names rule 2: spelling, abbreviation, number, synonyms and filler are folded;
    two names with the same folded words are one attribute, in any order."""
    found = compare_names(a, b)
    assert found.relation is NameRelation.SAME, found
    assert found.only_a == found.only_b == frozenset()
    assert found.shared


def test_a_doubled_l_s_or_z_belongs_to_the_word() -> None:
    """Only the consonant that "-ing" or "-ed" doubled is undone: `falling` is `fall`, not
    `fal`, so it meets `fall_risk` and not a word `fal`."""
    assert compare_names("falling_risk", "fall_risk").relation is NameRelation.SAME
    assert compare_names("dressed_size", "dress_size").relation is NameRelation.SAME
    assert compare_names("swimming_day", "swim_day").shared == {"swim", "day"}


@pytest.mark.parametrize(
    ("a", "b", "contrasting"),
    [
        pytest.param("home_city", "birth_city", {"home", "birth"}, id="defaultable-both-sides"),
        pytest.param("first_name", "last_name", {"first", "last"}, id="marked-both-sides"),
        pytest.param("weight_kg", "target_weight_kg", {"goal"}, id="target-is-goal"),
        pytest.param("daily_step_goal", "daily_step_count", {"goal", "count"}, id="goal-vs-count"),
        pytest.param("phone_number", "partner_phone_number", {"partner"}, id="whose"),
        pytest.param("check_in_time", "check_out_time", {"out"}, id="in-is-filler-out-is-not"),
    ],
)
def test_a_contrasting_word_makes_another_attribute(a: str, b: str, contrasting: set[str]) -> None:
    """Issue 11, names rule 3: names sharing a word whose own words on one side are all
    contrasting words (`target`, `partner`, `birth`, `out`, ...) are two attributes."""
    found = compare_names(a, b)
    assert found.relation is NameRelation.CONTRAST, found
    assert found.only_a | found.only_b == contrasting
    assert found.shared
    assert found.firm


@pytest.mark.parametrize(
    ("a", "b"),
    [
        pytest.param("dog_name", "puppy_name", id="defaultable-against-a-plain-word"),
        pytest.param("mortgage_payment", "monthly_mortgage", id="defaultable-each-side-plain"),
    ],
)
def test_a_contrasting_word_against_a_plain_word_is_a_soft_contrast(a: str, b: str) -> None:
    """A word a name may leave unsaid (`dog`, `monthly`) against a word that is no
    contrasting word (`puppy`, `payment`) is a contrast, but not a firm one: a judge model
    may be asked about it (`attribute_match`)."""
    found = compare_names(a, b)
    assert found.relation is NameRelation.CONTRAST, found
    assert not found.firm


def test_a_shared_word_with_other_words_on_each_side_is_a_substitution() -> None:
    """Issue 11, names rule 4: `bike_count` / `car_count` share the head, and what it counts
    differs: a substitution (usually two attributes), not a contrast nor an extension."""
    found = compare_names("bike_count", "car_count")
    assert found.relation is NameRelation.SUBSTITUTION
    # (words are stemmed: `bike` is kept as `bik`)
    assert (found.only_a, found.only_b) == (name_words("bike"), name_words("car"))
    assert found.shared == {"count"}


def test_a_name_that_only_adds_words_is_an_extension() -> None:
    """Issue 11, names: `yoga_class_frequency` is `yoga_frequency` plus `class`, a word that
    contrasts nothing: an extension."""
    found = compare_names("yoga_frequency", "yoga_class_frequency")
    assert found.relation is NameRelation.EXTENSION
    assert found.only_a == frozenset()
    assert found.only_b == {"class"}


def test_contrasting_words_beside_other_own_words_are_no_contrast() -> None:
    """Issue 11, `names._contrasts`: a contrasting word (`goal`) beside a word that contrasts
    nothing (`time`), against a side with its own other word (`5k`), does not tell the names
    apart on the words alone: a substitution, left to the distances."""
    found = compare_names("personal_best_5k", "goal_personal_best_time")
    assert found.relation is NameRelation.SUBSTITUTION  # not CONTRAST
    assert found.shared == {"personal", "best"}
    assert found.only_a == {"5k"}
    assert found.only_b == {"goal"} | name_words("time")


def test_names_without_a_word_in_common_are_disjoint() -> None:
    """Issue 11, names: nothing shared once folded → disjoint."""
    assert compare_names("home_city", "bike_count").relation is NameRelation.DISJOINT


# -- judge: guards and words first --------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "guard"),
    [
        pytest.param("q1_revenue", "q2_revenue", "numbers", id="numbers"),
        pytest.param("publishes_on_monday", "never_publishes_on_monday", "negation", id="never"),
    ],
)
def test_a_guard_says_different_even_at_distance_zero(a: str, b: str, guard: str) -> None:
    """Issue 11, judge rule 1: a guard (numbers, negation) → DIFFERENT, however close the
    embeddings and whatever the claim says of itself."""
    value = {"amount": 10}
    found = judge((a, value), (b, value), BANDS, 0.0, 0.0, asserted=True)
    assert found.verdict is Verdict.DIFFERENT
    assert guard in found.reason
    assert found.distance == 0.0


def test_a_contrast_says_different_even_at_distance_zero() -> None:
    """Issue 11, judge rule 1: contrasting names (`home_city` / `birth_city`) → DIFFERENT
    even at distance 0."""
    found = judge(("home_city", {"city": "Lyon"}), ("birth_city", {"city": "Lyon"}), BANDS, 0, 0)
    assert found.verdict is Verdict.DIFFERENT
    assert "contrast" in found.reason


def test_the_same_words_are_the_same_without_any_distance() -> None:
    """Issue 11, judge rule 2: the same folded words → SAME with no bands and no distances
    (an uncalibrated embedder still matches `bikes_owned` to `bike_count`)."""
    found = judge(("bike_count", {"count": 3}), ("bikes_owned", {"count": 4}), Bands(), None, None)
    assert found.verdict is Verdict.SAME
    assert found.distance == 1.0  # unknown


def test_values_of_other_shapes_are_different_even_inside_the_same_band() -> None:
    """Issue 11, judge rule 3: values that cannot be one attribute's (another key, another
    JSON type) → DIFFERENT, before any distance is looked at."""
    found = judge(
        ("yoga_frequency", {"per_week": 3}),
        ("yoga_class_frequency", {"day": "monday"}),
        BANDS,
        0.0,
        0.0,
    )
    assert found.verdict is Verdict.DIFFERENT
    assert "shapes" in found.reason


# -- judge: the bands ----------------------------------------------------------------------------

# A substitution (`bicycle` / `bike`): neither merged nor contested by the words alone.
SUB_A = ("bike_count", {"count": 3})
SUB_B = ("bicycle_count", {"count": 4})


@pytest.mark.parametrize("full", [0.0, 0.05, 0.12], ids=["zero", "inside", "at-the-edge"])
def test_identity_texts_inside_the_same_band_are_the_same(full: float) -> None:
    """Issue 11, judge rule 4: identity texts within the `same` band (inclusive) → SAME."""
    found = judge(SUB_A, SUB_B, BANDS, None, full)
    assert found.verdict is Verdict.SAME
    assert found.distance == pytest.approx(full)


def test_just_outside_the_same_band_is_not_the_same() -> None:
    """Issue 11, judge rule 4/6: just outside `same`, with the other bands off → DIFFERENT."""
    found = judge(SUB_A, SUB_B, Bands(same=0.12), None, 0.12 + JUST)
    assert found.verdict is Verdict.DIFFERENT


def test_an_extension_is_probable_without_any_distance() -> None:
    """Issue 11, judge rule 5: one name is the other plus words → PROBABLE (contested), with
    no bands and no distances."""
    found = judge(
        ("yoga_frequency", {"per_week": 3}),
        ("yoga_class_frequency", {"per_week": 2}),
        Bands(),
        None,
        None,
    )
    assert found.verdict is Verdict.PROBABLE
    assert "class" in found.reason


def test_an_extension_inside_the_same_band_is_the_same() -> None:
    """Issue 11, judge rules 4 before 5: the `same` band wins over "probable"."""
    found = judge(
        ("yoga_frequency", {"per_week": 3}),
        ("yoga_class_frequency", {"per_week": 3}),
        BANDS,
        None,
        0.1,
    )
    assert found.verdict is Verdict.SAME


@pytest.mark.parametrize(
    ("name", "full", "verdict"),
    [
        pytest.param(0.22, None, Verdict.PROBABLE, id="name-band-edge"),
        pytest.param(0.10, 0.9, Verdict.PROBABLE, id="name-band-inside"),
        pytest.param(0.22 + JUST, None, Verdict.DIFFERENT, id="just-outside-name-band"),
        pytest.param(None, 0.30, Verdict.PROBABLE, id="full-band-edge"),
        pytest.param(0.9, 0.20, Verdict.PROBABLE, id="full-band-inside"),
        pytest.param(None, 0.30 + JUST, Verdict.DIFFERENT, id="just-outside-full-band"),
        pytest.param(0.22 + JUST, 0.30 + JUST, Verdict.DIFFERENT, id="outside-both"),
    ],
)
def test_the_name_and_full_bands_make_a_substitution_probable(
    name: float | None, full: float | None, verdict: Verdict
) -> None:
    """Issue 11, judge rules 5 and 6: names within the `name` band, or identity texts within
    the `full` band (both inclusive) → PROBABLE; just outside both → DIFFERENT."""
    assert judge(SUB_A, SUB_B, BANDS, name, full).verdict is verdict


# -- judge: a claim stated as a change ------------------------------------------------------------

PB = ("personal_best_5k", {"time": "27:12"})
GOAL_PB = ("goal_personal_best_time", {"time": "25:50"})


def test_stated_as_a_change_with_two_shared_words_is_probable() -> None:
    """Issue 11, judge rule 5: action `supersede` and two shared folded words (`personal`,
    `best`) → PROBABLE, whatever the distances; without the assertion → DIFFERENT."""
    asserted = judge(PB, GOAL_PB, Bands(), None, None, asserted=True)
    assert asserted.verdict is Verdict.PROBABLE
    assert "best" in asserted.reason and "personal" in asserted.reason
    assert judge(PB, GOAL_PB, Bands(), None, None, asserted=False).verdict is Verdict.DIFFERENT


def test_stated_as_a_change_with_one_shared_word_is_different() -> None:
    """Issue 11, judge rule 5 (ASSERTED_SHARED_WORDS = 2): `bike_count` / `car_count` share
    only `count`: a supersede under `car_count` is not contested against `bike_count`."""
    found = judge(("bike_count", {"count": 3}), ("car_count", {"count": 1}), BANDS, 0.5, 0.5, True)
    assert found.verdict is Verdict.DIFFERENT


@pytest.mark.parametrize(
    ("name", "full"),
    [
        pytest.param(0.31, 0.9, id="names-at-the-edge"),
        pytest.param(0.9, 0.48, id="texts-at-the-edge"),
    ],
)
def test_stated_as_a_change_inside_the_change_band_is_probable(name: float, full: float) -> None:
    """Issue 11, judge rule 5: without a model, a claim stated as a change is contested
    within the wider change band (the embedder's judge band), inclusive at its edge; stated
    as new, or just outside the band, it is different."""
    bands = Bands(same=0.12, name=0.16, full=0.30, change_name=0.31, change_full=0.48)
    german, proficiency = ("german_level", {"level": "B1"}), ("german_proficiency", {"level": "B2"})
    found = judge(german, proficiency, bands, name, full, asserted=True)
    assert found.verdict is Verdict.PROBABLE
    assert "stated as a change" in found.reason
    assert judge(german, proficiency, bands, name, full).verdict is Verdict.DIFFERENT
    outside = judge(german, proficiency, bands, name + JUST, full + JUST, asserted=True)
    assert outside.verdict is Verdict.DIFFERENT


def test_with_a_judge_a_change_no_guard_rules_out_is_probable() -> None:
    """Issue 11, with a judge model (`Bands.judged`): a claim stated as a change whose names
    share no word and lie far apart (`gp` / `primary_care_physician`, which only world
    knowledge joins) is contested for the model to decide. Stated as new, or without a
    judge, it is different."""
    gp, pcp = ("gp", {"name": "Dr. Patel"}), ("primary_care_physician", {"name": "Dr. Nguyen"})
    judged = Bands(same=0.12, name=0.31, full=0.48, judged=True)
    found = judge(gp, pcp, judged, 0.64, 0.64, asserted=True)
    assert found.verdict is Verdict.PROBABLE
    assert "judged" in found.reason
    assert judge(gp, pcp, judged, 0.64, 0.64, asserted=False).verdict is Verdict.DIFFERENT
    assert judge(gp, pcp, BANDS, 0.64, 0.64, asserted=True).verdict is Verdict.DIFFERENT


@pytest.mark.parametrize(
    ("a", "b"),
    [
        pytest.param(
            ("home_city", {"city": "Lyon"}), ("birth_city", {"city": "Oslo"}), id="contrast"
        ),
        pytest.param(
            ("personal_best_5k", {"time": "27:12"}),
            ("personal_best_10k", {"time": "55:02"}),
            id="numbers",
        ),
        pytest.param(("weight_kg", {"kg": 72}), ("target_weight_kg", {"kg": 68}), id="marked-word"),
        pytest.param(("employer", {"name": "Acme"}), ("bike_count", {"count": 3}), id="shapes"),
    ],
)
def test_with_a_judge_the_guards_still_say_different(
    a: tuple[str, dict[str, Any]], b: tuple[str, dict[str, Any]]
) -> None:
    """A judge sees only what the hard signals leave open: a firm contrast (contrasting
    words on both sides, or a marked word), a numbered word, or values of other shapes
    under names with no word in common stay DIFFERENT, never asked, even stated as a
    change."""
    assert judge(a, b, Bands(judged=True), 0.0, 0.0, asserted=True).verdict is Verdict.DIFFERENT


@pytest.mark.parametrize(
    ("a", "b"),
    [
        pytest.param(
            ("dog_name", {"name": "Pepper"}), ("puppy_name", {"name": "Miso"}), id="soft-contrast"
        ),
        pytest.param(
            ("home_address", {"street": "12 Rue Victor Hugo", "city": "Lyon"}),
            ("address", {"address": "8 Rue de Rivoli, Paris"}),
            id="shapes",
        ),
    ],
)
def test_with_a_judge_a_change_only_soft_signals_set_apart_is_asked(
    a: tuple[str, dict[str, Any]], b: tuple[str, dict[str, Any]]
) -> None:
    """A contrasting word against another kind of word, or values of other shapes, set two
    attributes apart without a model; stated as a change, with a judge, the pair is put to
    the model. Stated as new, or without a judge, it stays different."""
    judged = Bands(same=0.12, name=0.31, full=0.48, judged=True)
    found = judge(a, b, judged, 0.0, 0.0, asserted=True)
    assert found.verdict is Verdict.PROBABLE
    assert found.unsupported
    assert judge(a, b, judged, 0.0, 0.0, asserted=False).verdict is Verdict.DIFFERENT
    assert judge(a, b, BANDS, 0.0, 0.0, asserted=True).verdict is Verdict.DIFFERENT


# -- compatible ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        pytest.param({"count": 3}, {"number": 4}, True, id="one-number-each"),
        pytest.param({"count": 3}, {"model": "Trek"}, False, id="number-vs-string"),
        pytest.param({"count": 3}, {"count": 3, "unit": "bikes"}, True, id="a-shared-key"),
        pytest.param({"flag": True}, {"count": 1}, False, id="bool-is-not-a-number"),
        pytest.param({"a": 1, "b": 2}, {"c": 1, "d": 2}, False, id="other-keys-several"),
        pytest.param(None, {"model": "Trek"}, True, id="unknown-value"),
    ],
)
def test_compatible_values(a: Value, b: Value, expected: bool) -> None:
    """Issue 11, judge rule 3 (`compatible`): the same keys, a key in common, or one value
    each of one JSON type could be one attribute's; anything else cannot."""
    assert compatible(a, b) is expected
    assert compatible(b, a) is expected


# -- symmetry ------------------------------------------------------------------------------------

# A small vocabulary with words of every class: heads, folded synonyms and abbreviations,
# contrasting words (MARKED and DEFAULTABLE), filler, numbered tokens and a negation.
WORDS = [
    "bike", "bikes", "car", "count", "number", "owned", "num", "home", "birth", "city",
    "target", "goal", "weight", "kg", "first", "last", "name", "pet", "partner", "phone",
    "daily", "step", "yoga", "class", "frequency", "my", "of", "in", "out", "check", "time",
    "q1", "q2", "5k", "never", "personal", "best", "favourite", "preferred", "color", "dob",
    "date", "kids", "children", "start", "end", "on", "off",
]  # fmt: skip
names = st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map("_".join)
values = st.sampled_from(
    [None, {"count": 3}, {"number": 4}, {"model": "Trek"}, {"count": 3, "unit": "x"}, {}]
)
distances = st.none() | st.floats(0.0, 2.0, allow_nan=False)
bands = st.builds(
    Bands,
    same=distances,
    name=distances,
    full=distances,
    judged=st.booleans(),
    change_name=distances,
    change_full=distances,
)


@settings(max_examples=500, deadline=None, database=None)
@given(a=names, b=names)
def test_compare_names_is_symmetric(a: str, b: str) -> None:
    """Issue 11: how two names relate does not depend on which is the known one."""
    ab, ba = compare_names(a, b), compare_names(b, a)
    assert ab.relation is ba.relation
    assert (ab.only_a, ab.only_b, ab.shared) == (ba.only_b, ba.only_a, ba.shared)
    assert ab.firm == ba.firm


@settings(max_examples=500, deadline=None, database=None)
@given(
    a=names,
    b=names,
    va=values,
    vb=values,
    found_bands=bands,
    name=distances,
    full=distances,
    asserted=st.booleans(),
)
def test_judge_gives_the_same_verdict_both_ways(
    a: str,
    b: str,
    va: Value,
    vb: Value,
    found_bands: Bands,
    name: float | None,
    full: float | None,
    asserted: bool,
) -> None:
    """Issue 11: the verdict for a known fact and a new claim is the verdict with the two
    swapped (same distances): which one arrived first does not decide whether they are one
    attribute."""
    ab = judge((a, va), (b, vb), found_bands, name, full, asserted)
    ba = judge((b, vb), (a, va), found_bands, name, full, asserted)
    assert ab.verdict is ba.verdict, (ab, ba)
    assert ab.unsupported == ba.unsupported  # it ranks the facts a judge is asked about
    assert ab.distance == ba.distance
