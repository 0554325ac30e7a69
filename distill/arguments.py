"""What a caller hands `Memory` checked and put in shape: times on either axis, and a
pydantic error said in one line, an id a person typed as a prefix made whole. Bad input is
`InvalidInput` naming the field at fault."""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from distill import ids
from distill.core.json_data import JsonProblem
from distill.core.models import normalise_subject
from distill.errors import InvalidInput, NotFound
from distill.ports import IdTable, Store

MIN_ID_PREFIX = 4  # hex characters a person must type of an id, as git asks for a commit
PREFIX_MATCHES_SHOWN = 5  # ids an ambiguous prefix error lists


def parse_time(value: object, field: str) -> datetime:
    """A time a caller gave (a timezone-aware datetime or an ISO-8601 string) in UTC, or
    `InvalidInput` naming the field."""
    if isinstance(value, datetime):
        when = value
    elif isinstance(value, str):
        try:
            when = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError as exc:
            raise InvalidInput(f"{field}: not an ISO-8601 time: {value!r}") from exc
    else:
        raise InvalidInput(
            f"{field}: expected a datetime or an ISO-8601 string, got {type(value).__name__}"
        )
    if when.tzinfo is None:
        raise InvalidInput(
            f"{field}: times must carry a timezone (for example 2024-05-01T10:00:00Z)"
        )
    try:
        return when.astimezone(UTC)
    except OverflowError as exc:  # year 1 at +01:00, year 9999 at -01:00
        raise InvalidInput(f"{field}: {value!s} is outside the years 1 to 9999 in UTC") from exc


def explain_validation(exc: ValidationError) -> str:
    """A pydantic error as one line: `field: problem; field: problem`, each naming the
    field down to the key or index at fault (`claims.0.value.count: nan is not ...`)."""
    problems = []
    for error in exc.errors():
        where: tuple[Any, ...] = tuple(error["loc"])
        message = error["msg"]
        cause = error.get("ctx", {}).get("error")
        if isinstance(cause, JsonProblem):
            where, message = (*where, *cause.path), cause.problem
        elif isinstance(cause, ValueError):
            message = str(cause)  # without pydantic's "Value error, "
        problems.append(f"{'.'.join(str(p) for p in where) or 'event'}: {message}")
    return "; ".join(problems)


def full_id(store: Store, table: IdTable, given: str, project: str) -> str:
    """The id a person meant: the id itself, or the one id of the project that begins
    with what they typed (at least `MIN_ID_PREFIX` characters, as git asks for)."""
    if not isinstance(given, str):
        raise InvalidInput(f"{table} id: expected a string, got {type(given).__name__}")
    if len(given) >= ids.ID_LENGTH or not ids.ID_PREFIX_RE.fullmatch(given.lower()):
        return given  # a whole id (or a caller's own): looked up exactly
    with contextlib.suppress(NotFound):  # a caller's own short id ("a000072") is whole
        (store.fact if table == "fact" else store.conflict)(project, given)
        return given
    if len(given) < MIN_ID_PREFIX:
        raise InvalidInput(
            f"{table} id {given!r} is too short: give at least {MIN_ID_PREFIX} characters"
        )
    found = store.ids_with_prefix(table, project, given.lower(), PREFIX_MATCHES_SHOWN)
    if not found:
        raise NotFound(f"no {table} {given} in project {project!r}")
    if len(found) > 1:
        more = " or more" if len(found) == PREFIX_MATCHES_SHOWN else ""
        raise InvalidInput(
            f"{table} id prefix {given!r} is ambiguous: it begins {len(found)}{more} ids "
            f"({', '.join(found)}); give more characters"
        )
    return found[0]


def subject_named(given: str | None) -> str | None:
    """A subject a caller names, spelt as it was stored (trimmed, NFC)."""
    return None if given is None else normalise_subject(given)
