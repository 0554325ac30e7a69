"""Events as a person hands them to the CLI: flags of `distill add`, or a JSONL file.

Everything is parsed and validated before anything is written, and a bad line names its
number, so a file is added whole or not at all. A line is checked as `Memory` checks an
event (its `occurred_at` against the present too), so that whatever `Memory` would refuse
is refused here first, with the line it is on.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from distill.arguments import explain_validation
from distill.core.event_in import FUTURE_MARGIN, FUTURE_MARGIN_KEY, EventIn
from distill.core.json_data import INTEGER_MAX_DIGITS
from distill.core.models import NOW
from distill.errors import ConfigurationError, InvalidInput
from distill.export import event_fields

FUTURE_MARGIN_VARIABLE = "DISTILL_FUTURE_MARGIN"  # seconds; see FUTURE_MARGIN
PROGRESS_EVERY = 500  # lines between two updates of the progress display


def future_margin_setting() -> timedelta:
    """How far past now an event's time may be: `DISTILL_FUTURE_MARGIN` seconds, if set."""
    raw = os.environ.get(FUTURE_MARGIN_VARIABLE, "").strip()
    if not raw:
        return FUTURE_MARGIN
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not math.isfinite(seconds) or not 0 <= seconds <= timedelta.max.total_seconds():
        raise ConfigurationError(
            f"{FUTURE_MARGIN_VARIABLE} is a number of seconds of zero or more (got {raw!r}); "
            f"the default is {FUTURE_MARGIN.total_seconds():.0f}"
        )
    return timedelta(seconds=seconds)


def event_from_flags(fields: dict[str, Any]) -> dict[str, Any]:
    item = {
        k: v for k, v in fields.items() if v not in (None, (), "") and k not in ("claims", "action")
    }
    if fields.get("action"):
        try:
            item["action"] = _parse(fields["action"])
        except ValueError as exc:
            shown = fields["action"][:200]
            raise InvalidInput(f"--action is not JSON: {exc} (got {shown!r})") from exc
    claims = []
    for raw in fields["claims"]:
        try:
            claims.append(_parse(raw))
        except ValueError as exc:
            raise InvalidInput(f"--claim is not JSON: {exc} (got {raw[:200]!r})") from exc
    if claims:
        item["claims"] = claims
    return item


# `distill add`'s options that describe one event: with --file, each line says them.
ONE_EVENT = ("subject", "text", "claims", "action", "idempotency_key", "occurred_at")
_OPTION = {"claims": "--claim"}


def with_file_options(
    items: list[dict[str, Any]], fields: dict[str, Any], given: set[str]
) -> list[dict[str, Any]]:
    """--file's lines with the options that apply to them: `--source` (and `--trust`, when
    given) for each line that does not say, and `--project`, when given, for every line (a
    line's own project replaced: how an export of one project is added to another). An
    option that describes one event is an `InvalidInput`: it would be ignored otherwise."""
    stray = [
        _OPTION.get(name, f"--{name.replace('_', '-')}") for name in ONE_EVENT if name in given
    ]
    if stray:
        raise InvalidInput(
            f"{', '.join(stray)} cannot go with --file: each line gives its own event "
            "(--project, --source and --trust apply to the file's lines)"
        )
    defaults = {"source": fields["source"]}
    if "trust" in given:
        defaults["trust"] = fields["trust"]
    project = {"project": fields["project"]} if "project" in given else {}
    return [{**defaults, **item, **project} for item in items]


def read_jsonl(
    path: Path,
    future_margin: timedelta = FUTURE_MARGIN,
    progress: Callable[[int], None] | None = None,
) -> list[dict[str, Any]]:
    """Every line parsed before anything is written; a bad line names its number. Lines of
    `distill export` are read too: its events, and not its facts (see `distill.export`).
    `progress` is told how many lines have been read, now and then."""
    stream = sys.stdin.buffer if str(path) == "-" else path.open("rb")
    items = []
    try:
        for number, raw in enumerate(stream, start=1):
            if progress is not None and number % PROGRESS_EVERY == 0:
                progress(number)
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InvalidInput(
                    f"{path}:{number}: not UTF-8 (byte 0x{raw[exc.start]:02x} at byte "
                    f"{exc.start + 1} of the line); nothing was added"
                ) from exc
            if not line.strip():
                continue
            try:
                item = _parse(line)
            except ValueError as exc:
                raise InvalidInput(f"{path}:{number}: not JSON ({exc}); nothing was added") from exc
            if not isinstance(item, dict):
                raise InvalidInput(f"{path}:{number}: expected a JSON object; nothing was added")
            try:
                fields = event_fields(item)  # an export's lines: events typed, facts skipped
            except InvalidInput as exc:
                raise InvalidInput(f"{path}:{number}: {exc}; nothing was added") from exc
            if fields is not None:
                items.append((number, fields))
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()
    context = {NOW: datetime.now(UTC), FUTURE_MARGIN_KEY: future_margin}
    for number, item in items:
        try:
            EventIn.model_validate(item, context=context)
        except ValidationError as exc:
            problem = explain_validation(exc)
            raise InvalidInput(
                f"{path}:{number}: invalid event ({problem}); nothing was added"
            ) from exc
    return [item for _, item in items]


def _parse(text: str) -> Any:
    """JSON, with every way `json.loads` fails as a ValueError that says why."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(exc.msg) from exc
    except RecursionError as exc:  # thousands of levels: refused, as any depth over the limit
        raise ValueError("nested too deeply") from exc
    except ValueError as exc:  # the one other failure: Python's limit on an integer's length
        raise ValueError(f"an integer of more than {INTEGER_MAX_DIGITS} digits") from exc


@contextmanager
def adding_progress(console: Console, enabled: bool) -> Iterator[AddingProgress]:
    """What `add --file` shows on a terminal while it works: lines read, then the time spent
    storing them (one transaction: there is no count to show inside it)."""
    if not enabled or not console.is_terminal:
        yield AddingProgress(None)
        return
    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        yield AddingProgress(bar)


class AddingProgress:
    def __init__(self, bar: Progress | None) -> None:
        self._bar = bar
        self._task = bar.add_task("reading", total=None) if bar is not None else None

    def read(self, lines: int) -> None:
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, description=f"reading: {lines:,} lines")

    def storing(self, events: int) -> None:
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, description=f"storing {events:,} event(s)")
