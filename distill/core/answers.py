"""A model's answer read as the JSON it was asked for, or refused as unreadable.

Every pass that asks a model for a list of verdicts (the memory judge, rule promotion) asks
for one JSON object holding that list under one key, and reads the answer the same strict
way: a fenced block is unwrapped (models add them whatever the prompt says), anything else
that is not that object is `Unreadable`, and so is an answer cut off at the model's output
limit, whatever it holds. What to do then is the caller's: the passes ask again in halves
(`distill.passes.asking`). What each entry of the list may say is checked by the pass's own
reader, entry by entry; this module only finds the list.

Pure: text in, values out.
"""

from __future__ import annotations

import json
from typing import Any


class Unreadable(ValueError):
    """The answer is not the JSON asked for, or it was cut off: the batch is asked again in
    halves."""


def answer_list(text: str, key: str, truncated: bool = False) -> list[Any]:
    """The list under `key` of the JSON object `text` holds; `Unreadable` if there is none,
    or if the answer was `truncated` at the model's output limit."""
    data = answer_object(text, truncated)
    found = data.get(key)
    if not isinstance(found, list):
        raise Unreadable(f'the answer is not {{"{key}": [...]}}')
    return found


def answer_object(text: str, truncated: bool = False) -> dict[str, Any]:
    """The JSON object `text` holds, a fence around it stripped; `Unreadable` if there is
    none, or if the answer was `truncated` at the model's output limit."""
    if truncated:
        raise Unreadable("the answer was cut off at the model's output limit")
    body = text.strip()
    if body.startswith("```"):
        body = body.strip("`").removeprefix("json").strip()
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        raise Unreadable(f"not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise Unreadable("the answer is not a JSON object")
    return data


def verdicts_schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """The JSON schema of an answer `{"verdicts": [...]}` whose entries have `properties`
    (a provider with structured output is held to it; the reader checks anyway)."""
    entry = {"type": "object", "properties": properties, "required": required}
    return {
        "type": "object",
        "properties": {"verdicts": {"type": "array", "items": entry}},
        "required": ["verdicts"],
    }


def one_line(text: str) -> str:
    """`text` with every run of white space (line breaks included) as one space: what a
    prompt shows of a stored text, so that a line break in it cannot write a line of the
    prompt (a fake entry, say)."""
    return " ".join(text.split())
