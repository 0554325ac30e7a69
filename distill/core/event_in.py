"""What a caller hands to `add_event`, and the checks it passes before anything is written.

`EventIn` is the one door for new input (Python, the CLI's `add --file`, the HTTP API, MCP):
every field JSON data, a claim naming only claim fields (a misspelt `vaild_from` is refused
with the field it probably meant, not dropped), the subject in one spelling, the whole event
within `EVENT_MAX_BYTES`, `occurred_at` not further past the present than `FUTURE_MARGIN`,
and no period that ended before it was told without saying when it began. A stored `Event`
read back is not checked again.
"""

from __future__ import annotations

import difflib
from datetime import datetime, timedelta
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from distill.core.event_action import EventAction
from distill.core.json_data import JsonProblem, check_json
from distill.core.models import (
    CLAIM_FIELDS,
    NAME_MAX_LENGTH,
    NOW,
    TEXT_MAX_LENGTH,
    Claim,
    Trust,
    as_utc,
    claim_fields,
    normalise_subject,
)

# Bytes of a whole event written as JSON (UTF-8). Its text alone may take 80 KB (20,000
# characters of up to 4 bytes), its claims a few hundred bytes each. Every claim's value is
# copied into a fact, an observation and audit entries (a 10 MB value made 60 MB of
# database), so a document belongs elsewhere, named in a claim by its reference.
EVENT_MAX_BYTES = 256 * 1024
# How far past the present an event may say it occurred. A time whose zone was lost reads up
# to 14 h ahead of UTC, and clocks drift; a date further out is a typo ("2204") that would
# stay the current value for ever and file every real update as history. Claims' own
# valid_from/valid_to may name the future: that is what they are for.
FUTURE_MARGIN = timedelta(days=1)
# `EventIn.model_validate(..., context=...)` keys: the present (`models.NOW`), and how far
# past it `occurred_at` may be. Without them (a stored event read back) nothing is checked.
FUTURE_MARGIN_KEY = "future_margin"


class EventIn(BaseModel):
    """What a caller hands to `add_event`, validated before anything is written.

    Stored exactly as given or not at all: every field is JSON data (see `json_data`), a
    claim names only claim fields, and the whole event fits `EVENT_MAX_BYTES`. The subject
    is trimmed and NFC-normalised, one spelling per person. Validated with a context of
    `NOW` and `FUTURE_MARGIN_KEY`, `occurred_at` may not be further past the present.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    subject: str = Field(min_length=1, max_length=NAME_MAX_LENGTH)
    text: str = Field(default="", max_length=TEXT_MAX_LENGTH)
    project: str = Field(default="default", min_length=1, max_length=NAME_MAX_LENGTH)
    occurred_at: datetime | None = None
    source: str = Field(default="api", max_length=NAME_MAX_LENGTH)
    trust: Trust = Trust.TRUSTED
    claims: tuple[Claim, ...] = ()
    idempotency_key: str | None = Field(default=None, max_length=NAME_MAX_LENGTH)
    # What the agent did, if the event records an action (`core.event_action`).
    action: EventAction | None = None

    @model_validator(mode="before")
    @classmethod
    def _json_data(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for key, value in data.items():
                if key == "claims" and isinstance(value, list | tuple):
                    for index, claim in enumerate(value):
                        _check_claim(claim, index)
                elif not (key == "occurred_at" and isinstance(value, datetime)):
                    check_json(value, (key,))
        return data

    @field_validator("subject")
    @classmethod
    def _subject(cls, raw: str) -> str:
        subject = normalise_subject(raw)
        if not subject:
            raise ValueError("is blank: name whose memory it is")
        return subject

    @field_validator("occurred_at")
    @classmethod
    def _time(cls, value: datetime | None, info: ValidationInfo) -> datetime | None:
        value = as_utc(value, "occurred_at")
        context = info.context or {}
        if value is None or NOW not in context:
            return value
        now: datetime = context[NOW]
        margin: timedelta = context[FUTURE_MARGIN_KEY]
        if value > now + margin:
            raise ValueError(
                f"{value.isoformat()} is more than {_duration(margin)} past the present "
                f"({now.isoformat(timespec='seconds')}): an event cannot have happened yet "
                "(a claim's valid_from and valid_to may name the future)"
            )
        return value

    @model_validator(mode="after")
    def _periods(self, info: ValidationInfo) -> EventIn:
        told = self.occurred_at or (info.context or {}).get(NOW)
        for index, claim in enumerate(self.claims):
            problem = ended_untold_start(claim, told) if told else None
            if problem:
                raise ValueError(f"claims.{index}: {problem}")
        return self

    @model_validator(mode="after")
    def _has_content(self) -> EventIn:
        if not self.text.strip() and not self.claims and self.action is None:
            raise ValueError("an event needs a text, at least one claim or an action")
        return self

    @model_validator(mode="after")
    def _fits(self) -> EventIn:
        size = len(self.model_dump_json().encode())
        if size > EVENT_MAX_BYTES:
            raise ValueError(
                f"{size:,} bytes as JSON, over the limit of {EVENT_MAX_BYTES:,} for an event: "
                "keep large documents elsewhere and give a reference to them in a claim"
            )
        return self


def _duration(span: timedelta) -> str:
    """`1 day`, `6 h`, `90 s`: a margin as a person reads it."""
    seconds = span.total_seconds()
    for unit, size in (("day", 86_400), ("h", 3_600), ("min", 60)):
        if seconds >= size and seconds % size == 0:
            count = int(seconds // size)
            return f"{count} {unit}{'s' if unit == 'day' and count > 1 else ''}"
    return f"{seconds:g} s"


def ended_untold_start(claim: Claim, told: datetime) -> str | None:
    """What is wrong with a claim of a period that ended by the time it was told (`valid_to`
    no later than the event's time) but gives no start: a fact starts at its `valid_from`,
    else when it was told, and that would end before it began. Distill has no "unknown start"
    (README, "Known limits"), so such a claim is refused with this reason; None when fine."""
    if claim.valid_from is not None or claim.valid_to is None or claim.valid_to > told:
        return None
    return (
        f"valid_to ({claim.valid_to.isoformat()}) is not after the event's time "
        f"({told.isoformat()}) and no valid_from is given: a period that ended before it was "
        "told needs its start (valid_from)"
    )


def _check_claim(claim: Any, index: int) -> None:
    """A caller's claim, held to the strict rules of new input. It names claim fields only:
    a misspelt `vaild_from` would otherwise be dropped in silence (an extractor's answers
    may carry other keys; `Claim` ignores them)."""
    if isinstance(claim, Claim):
        claim = dict(claim)
    if not isinstance(claim, dict):
        return  # the field's own validation says what is wrong with it
    fields = list(CLAIM_FIELDS)
    for key in claim:
        if key not in CLAIM_FIELDS:
            near = difflib.get_close_matches(str(key), fields, n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise JsonProblem(
                ("claims", index, key), f"not a claim field{hint}; a claim has {', '.join(fields)}"
            )
    for key, value in claim_fields(claim):
        check_json(value, ("claims", index, key))
