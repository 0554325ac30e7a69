"""What an event may carry: JSON data that every store keeps exactly as it was given.

An event is evidence, stored as given or not at all. A value the JSON encoders would
quietly change is refused instead, with the place it sits at: NaN and the infinities
(written as null), keys that are not strings (turned into strings), sets, bytes, datetimes
and other objects (converted, or a crash at the database), text that is not Unicode (a lone
surrogate), integers too long to write as text. Tuples are JSON arrays, read back as lists.

New input is held to more (`strict`): no NUL character (SQLite stores it, PostgreSQL refuses
it), no float beyond ±2^53 (not exact, and read back by PostgreSQL as another number), and
nesting capped: an attribute's value is a small record, and a structure hundreds of levels
deep is a mistake, or an attack on the recursion of every reader after us (pydantic's
serialiser stops at a few hundred levels with a misleading "circular reference"). Claims
read back from a store are checked without these, so that what an earlier version stored
(a NUL on SQLite, a float of 1e300) can still be read.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any

JSON_MAX_DEPTH = 32  # levels of objects and arrays in one field; real values use two or three
# Levels nothing stored can exceed (pydantic's serialiser stops before), checked even when
# not strict: a cyclic value given in Python must not loop for ever.
STORED_MAX_DEPTH = 1_000
# Python will not write an integer of more digits as text (sys.int_info.default_max_str_digits).
INTEGER_MAX_DIGITS = 4300
_INTEGER_LIMIT = 10**INTEGER_MAX_DIGITS
# Floats stop being exact at 2^53 (every integer below it is one), and from 1e16 up
# PostgreSQL's jsonb reads a float back as an integer (1.7976931348623157e308 comes back as
# 17976931348623157 followed by 292 zeros): such a number is given as an integer or a string.
FLOAT_MAX_MAGNITUDE = 2.0**53

Path = tuple[str | int, ...]


class JsonProblem(ValueError):
    """A value that is not JSON data as given, and where it is (keys and indexes under the
    field that holds it)."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(f"{'.'.join(str(p) for p in path)}: {problem}" if path else problem)
        self.path = path
        self.problem = problem


def check_json(value: Any, path: Path = (), *, strict: bool = True) -> None:
    """Raise `JsonProblem` at the first part of `value` (found at `path`) that JSON cannot
    keep as it is, or, if `strict`, that new input may not hold (see the module docstring).
    Iterative, so that no depth of nesting reaches Python's recursion limit."""
    if isinstance(value, str):  # most fields: no walk
        check_text(value, path, strict)
        return
    max_depth = JSON_MAX_DEPTH if strict else STORED_MAX_DEPTH
    stack: list[tuple[Any, Path]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if item is None or isinstance(item, bool):
            continue
        if isinstance(item, str):
            check_text(item, where, strict)
        elif isinstance(item, int):
            if not -_INTEGER_LIMIT < item < _INTEGER_LIMIT:
                raise JsonProblem(where, f"an integer of more than {INTEGER_MAX_DIGITS} digits")
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise JsonProblem(
                    where,
                    f"{item!r} is not a number JSON can hold (NaN, Infinity and numbers beyond "
                    "±1.8e308 have no JSON form): give a finite number, or the word as a string",
                )
            if strict and abs(item) >= FLOAT_MAX_MAGNITUDE:
                raise JsonProblem(
                    where,
                    f"{item!r} is a float beyond ±2^53, which is not exact and which PostgreSQL "
                    "reads back as an integer: give an integer, or the number as a string",
                )
        elif isinstance(item, dict | list | tuple):
            if len(where) - len(path) >= max_depth:
                raise JsonProblem(
                    path, f"nested more than {max_depth} levels deep; flatten the value"
                )
            if isinstance(item, dict):
                for key, inner in item.items():
                    if not isinstance(key, str):
                        raise JsonProblem(
                            where, f"the key {key!r} is not a string (JSON keys are strings)"
                        )
                    check_text(key, (*where, key), strict)
                    stack.append((inner, (*where, key)))
            else:
                stack.extend(((inner, (*where, i)) for i, inner in enumerate(item)))
        else:
            raise JsonProblem(
                where,
                f"a value of type {type(item).__name__} is not JSON data (give strings, numbers, "
                "true/false, null, lists and objects; a time as an ISO-8601 string)",
            )


def check_text(text: str, path: Path, strict: bool = True) -> None:
    if strict and "\x00" in text:
        raise JsonProblem(path, "contains a NUL character (\\u0000), which PostgreSQL cannot store")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise JsonProblem(
            path, f"is not valid Unicode (a lone surrogate at character {exc.start})"
        ) from None


def compact_writer(default: Callable[[Any], Any] | None = None) -> Callable[[Any], str]:
    """A function writing what `json.dumps(value, sort_keys=True, separators=(",", ":"),
    ensure_ascii=False, default=default)` writes, the canonical and the stored spelling.

    `json.dumps` and `JSONEncoder.encode` build the C encoder anew in Python on every call
    (which is what keeps them safe across threads); this builds only the C encoder, which
    is all the work they do for a small value: `rows.dumps({"count": 3})` 2.4 → 0.9 µs, and
    a consolidation writes about nine values a claim (rows, canonical forms, hashes). Same
    text (a property test against `json.dumps`; the C encoder takes these arguments from
    Python 3.11 to 3.13)."""
    spelled = json.JSONEncoder(
        sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=default
    )
    if c_make_encoder is None:  # an interpreter without json's C accelerator
        return spelled.encode
    fallback = spelled.default

    def write(value: Any) -> str:
        encode = c_make_encoder({}, fallback, encode_basestring, None, ":", ",", True, False, True)
        return "".join(encode(value, 0))

    return write
