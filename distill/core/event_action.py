"""What an event may say an agent did: the action it records, and how it ended.

An agent that acts (builds, tests, deploys, asks) writes one event per attempt with an
`action`: its `type`, its `outcome` (`success` or `failure`), the `session` (or episode) it
belongs to and its place in it (`seq`). The procedures pass reads these to learn which action
reliably follows which (`core.procedures`). The action is part of the event, so it is
evidence like the rest of it: stored as given, never changed, carried by copy and export.

`type` is normalised as a predicate is (`Run Tests` and `run_tests` are one action), so
that the same action spelt two ways is not two procedures. Within a session the order is
`seq` when given, else the event's `occurred_at` (then its id): an agent that numbers its
steps is not at the mercy of clocks, and one that does not still has an order. `state` is
what held when the action was taken (`{"repo": "python"}`): a procedure's precondition is
what every success it was learned from had in common.
"""

from __future__ import annotations

import unicodedata
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, field_validator

from distill.core.predicates import normalise_predicate

ACTION_TYPE_MAX_LENGTH = 80  # characters, as a predicate: a longer "type" is a sentence
SESSION_MAX_LENGTH = 200  # characters, as a subject or a source
SEQ_MAX = 2**53  # a step's number; beyond it a float stops being exact in JSON readers
STATE_MAX_KEYS = 32  # key=value pairs of a state; a precondition is a handful of them

Scalar = str | int | float | bool


class ActionOutcome(StrEnum):
    SUCCESS = "success"
    FAILURE = "failure"


class EventAction(BaseModel):
    """The action an event records (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: str = Field(min_length=1, max_length=ACTION_TYPE_MAX_LENGTH)
    outcome: ActionOutcome
    session: str = Field(default="", max_length=SESSION_MAX_LENGTH)
    seq: int | None = Field(default=None, ge=0, le=SEQ_MAX)
    state: dict[str, Scalar] = Field(default_factory=dict, max_length=STATE_MAX_KEYS)

    @field_validator("type")
    @classmethod
    def _type(cls, raw: str) -> str:
        kind = normalise_predicate(raw)
        if not any(unicodedata.category(c)[0] == "L" for c in kind):
            raise ValueError(f"action type {raw!r} has no letters")
        return kind

    @field_validator("session")
    @classmethod
    def _session(cls, raw: str) -> str:
        return unicodedata.normalize("NFC", raw.strip())

    @field_validator("state")
    @classmethod
    def _state(cls, raw: dict[str, Scalar]) -> dict[str, Scalar]:
        state: dict[str, Scalar] = {}
        for key, value in raw.items():
            name = normalise_predicate(key)
            if not name:
                raise ValueError(f"state key {key!r} has no letters or digits")
            if isinstance(value, str) and ("," in value or "=" in value):
                # A precondition is written `key=value,key=value`: a value holding either
                # would read back as another precondition.
                raise ValueError(f"state value {value!r} of {key!r} may not hold ',' or '='")
            state[name] = value
        return state
