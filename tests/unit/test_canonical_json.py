"""`canonical_json` and `compact_writer` (what it and the stores write JSON with) take
shortcuts: no call for the plain values of a dict, the C encoder without its Python wrapper.
They still write what their plain definitions write (`json.dumps`, and the canonical rules
below) for every value, subclasses of dict, str, int and float included, and raise where
those raise."""

from __future__ import annotations

import enum
import json
import math
import unicodedata
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from distill.core.identity import canonical_json
from distill.core.json_data import compact_writer


class Colour(enum.StrEnum):
    TEAL = "teal"


class Count(enum.IntEnum):
    THREE = 3


class Words(dict):  # type: ignore[type-arg]
    pass


def plain(value: Any) -> Any:
    """The definition: str keys, lists for tuples, integral floats as ints, NFC and stripped
    strings."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        return unicodedata.normalize("NFC", value.strip())
    return value


def written(value: Any) -> str | type[Exception]:
    try:
        return json.dumps(plain(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except Exception as exc:  # a value JSON cannot write raises in both
        return type(exc)


def ours(value: Any) -> str | type[Exception]:
    try:
        return canonical_json(value)
    except Exception as exc:
        return type(exc)


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=6),
    st.sampled_from(
        [" Lyon ", unicodedata.normalize("NFD", "Café"), -0.0, 3.0, math.nan, Colour.TEAL]
    ),
    st.sampled_from([Count.THREE, b"x"]),
)
KEYS = st.one_of(st.text(max_size=4), st.integers(-2, 2), st.sampled_from([Colour.TEAL, True]))
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.tuples(inner, inner),
        st.dictionaries(KEYS, inner, max_size=3),
        st.dictionaries(KEYS, inner, max_size=2).map(Words),
    ),
    max_leaves=12,
)


@settings(max_examples=3000, suppress_health_check=[HealthCheck.too_slow])
@given(VALUES)
def test_canonical_json_writes_what_its_definition_writes(value: Any) -> None:
    assert ours(value) == written(value)


def test_a_claims_dump_by_hand() -> None:
    dumped = {"predicate": "bike_count", "value": {"count": 3.0}, "text": None, "b": True}
    expected = '{"b":true,"predicate":"bike_count","text":null,"value":{"count":3}}'
    assert canonical_json(dumped) == expected
    assert canonical_json({"city": " Café "}) == canonical_json({"city": "Café"})
    assert canonical_json({1: "a"}) == '{"1":"a"}'


def dumped(value: Any) -> str | type[Exception]:
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except Exception as exc:
        return type(exc)


def compact(value: Any) -> str | type[Exception]:
    try:
        return compact_writer()(value)
    except Exception as exc:
        return type(exc)


@settings(max_examples=3000, suppress_health_check=[HealthCheck.too_slow])
@given(VALUES)
def test_the_compact_writer_writes_what_json_dumps_writes(value: Any) -> None:
    """Also where `json.dumps` raises: bytes (TypeError), keys of mixed types (TypeError)."""
    assert compact(value) == dumped(value)


def test_the_compact_writer_asks_its_default_for_what_json_cannot_write() -> None:
    write = compact_writer(default=lambda o: sorted(o))
    assert write({"b": {3, 1}, "a": "é"}) == '{"a":"é","b":[1,3]}'
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular"):
        compact_writer()(loop)
