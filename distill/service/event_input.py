"""Events as a person hands them to the CLI: flags of `distill add`, or a JSONL file.

Everything is parsed and validated before anything is written, and a bad line names its
number, so a file is added whole or not at all.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from distill.core.models import EventIn
from distill.errors import InvalidInput
from distill.export import event_fields
from distill.memory import explain_validation


def event_from_flags(fields: dict[str, Any]) -> dict[str, Any]:
    item = {k: v for k, v in fields.items() if v not in (None, (), "") and k != "claims"}
    claims = []
    for raw in fields["claims"]:
        try:
            claims.append(json.loads(raw))
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"--claim is not JSON: {exc.msg} (got {raw!r})") from exc
    if claims:
        item["claims"] = claims
    return item


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Every line parsed before anything is written; a bad line names its number. Lines of
    `distill export` are read too: its events, and not its facts (see `distill.export`)."""
    stream = sys.stdin if str(path) == "-" else path.open(encoding="utf-8")
    items = []
    try:
        for number, line in enumerate(stream, start=1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InvalidInput(
                    f"{path}:{number}: not JSON ({exc.msg}); nothing was added"
                ) from exc
            if not isinstance(item, dict):
                raise InvalidInput(f"{path}:{number}: expected a JSON object; nothing was added")
            try:
                fields = event_fields(item)  # an export's lines: events typed, facts skipped
            except InvalidInput as exc:
                raise InvalidInput(f"{path}:{number}: {exc}; nothing was added") from exc
            if fields is not None:
                items.append((number, fields))
    finally:
        if stream is not sys.stdin:
            stream.close()
    for number, item in items:
        try:
            EventIn.model_validate(item)
        except ValidationError as exc:
            problem = explain_validation(exc)
            raise InvalidInput(
                f"{path}:{number}: invalid event ({problem}); nothing was added"
            ) from exc
    return [item for _, item in items]
