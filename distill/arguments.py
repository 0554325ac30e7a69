"""What a caller hands `Memory` checked and put in shape: times on either axis, and a
pydantic error said in one line. Bad input is `InvalidInput` naming the field at fault."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from distill.core.json_data import JsonProblem
from distill.errors import InvalidInput


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
