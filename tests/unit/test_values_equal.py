"""`values_equal`: its one-pass comparison of flat values gives the answer of comparing the
canonical forms (`canonical_equal`) and of comparing their canonical JSON, on values built to
sit on every edge: spaces and Unicode forms of one string, 3 against 3.0, True against 1,
NaN, -0.0, None, missing keys, nested values and non-str keys (which take the long way)."""

from __future__ import annotations

import math
import unicodedata
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from distill.core.identity import canonical_equal, canonical_json, values_equal

WORDS = ["Lyon", " Lyon ", "Café", unicodedata.normalize("NFD", "Café"), "café", "", " "]
SCALARS = st.one_of(
    st.sampled_from(WORDS),
    st.text(max_size=4),
    st.sampled_from([0, 1, 3, -0.0, 0.0, 1.0, 3.0, 3.5, True, False, None, math.nan, math.inf]),
    st.integers(-3, 3),
    st.floats(allow_nan=True, allow_infinity=True),
)
KEYS = st.sampled_from(["count", "city", "name", "1"])
FLAT = st.dictionaries(KEYS, SCALARS, max_size=3)
ANY = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=2),
        st.dictionaries(st.one_of(KEYS, st.sampled_from([1, 2])), inner, max_size=2),
    ),
    max_leaves=5,
)


def json_equal(a: Any, b: Any) -> bool:
    return canonical_json(a) == canonical_json(b)


@settings(max_examples=1500, suppress_health_check=[HealthCheck.too_slow])
@given(FLAT, FLAT)
def test_flat_values_compare_as_their_canonical_forms(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert values_equal(a, b) == canonical_equal(a, b) == json_equal(a, b)


@settings(max_examples=1000, suppress_health_check=[HealthCheck.too_slow])
@given(FLAT, st.data())
def test_near_copies_compare_as_their_canonical_forms(a: dict[str, Any], data: Any) -> None:
    """b is a with some values respelled: the case where the answer is most often True."""
    b = dict(a)
    for key, value in a.items():
        if data.draw(st.booleans()):
            b[key] = data.draw(st.sampled_from(respellings(value)))
    assert values_equal(a, b) == canonical_equal(a, b) == json_equal(a, b)


@settings(max_examples=1000, suppress_health_check=[HealthCheck.too_slow])
@given(ANY, ANY)
def test_any_value_compares_as_its_canonical_form(a: Any, b: Any) -> None:
    assert values_equal(a, b) == canonical_equal(a, b)


def respellings(value: Any) -> list[Any]:
    if isinstance(value, str):
        return [value, f" {value} ", unicodedata.normalize("NFD", value), value.upper()]
    if isinstance(value, bool):
        return [value, int(value), not value]
    if isinstance(value, int | float) and not math.isnan(value) and not math.isinf(value):
        return [value, float(value), int(value), value + 1]
    return [value, None, "x"]


def test_the_edges_by_hand() -> None:
    assert values_equal({"count": 3}, {"count": 3.0})
    assert values_equal({"city": " Lyon"}, {"city": "Lyon"})
    assert values_equal({"city": "Café"}, {"city": unicodedata.normalize("NFD", "Café")})
    assert values_equal({"x": math.nan}, {"x": math.nan})
    assert not values_equal({"flag": True}, {"flag": 1})
    assert not values_equal({"count": 3}, {"count": "3"})
    assert not values_equal({"count": 3}, {"count": 3, "city": None})
    assert values_equal({"1": "a"}, {1: "a"})  # str(key): the long way
