"""The worker's configuration file: one TOML file plus `DISTILL_*` overrides, validated.

Where a value comes from, lowest first: the default; the file (`--config PATH` or
`DISTILL_CONFIG`); an environment variable named by the value's path in upper case, sections
joined by a double underscore (`DISTILL_SCHEDULE__RETRY_MINUTES=5`,
`DISTILL_SCHEDULE__PASSES__JUDGE__MAX_CALLS=20`), its text read as a TOML value (`true`,
`6`, `["a", "b"]`) or else as a string. Every section refuses keys it does not know, by
name, at start (pydantic, `extra="forbid"`), and so does an override whose path names no
setting: a typo fails the start instead of being ignored.

Hot reload (`Reloader`): the `[schedule]` section (on/off, intervals, dry runs, allowlists,
per-run caps and budgets: the iii seed's hot fields) is read again when the file changes
or on SIGHUP, and the next worker cycle uses it; a file that no longer validates is logged
and the settings in force are kept. The other sections need a restart (said in the log).
"""

from __future__ import annotations

import logging
import os
import threading
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from distill.backpressure import BACKLOG_RETRY_AFTER_S
from distill.core.schedule import Trigger
from distill.errors import ConfigurationError
from distill.scheduler import ScheduleSettings

log = logging.getLogger("distill.config")

ENV_PREFIX = "DISTILL_"
ENV_NESTING = "__"  # DISTILL_<SECTION>__<KEY>: single-underscore names are the CLI's own
CONFIG_VARIABLE = "DISTILL_CONFIG"
# How often (seconds) the worker looks at the file's modification time: a changed setting
# applies within this, and a stat per 2 s costs nothing.
RELOAD_CHECK_S = 2.0


class WorkerSettings(BaseModel):
    """`distill worker`'s own settings (its command-line options override them)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    concurrency: int = Field(1, ge=1, le=64)
    interval: float = Field(2.0, ge=0.05)  # seconds between idle polls
    settle: float = Field(0.5, ge=0)
    # The trigger of extraction and adjudication per subject: N new events OR a timer (OR
    # force: `distill consolidate`, `POST /v1/consolidate`). The Uniko seed's 20 events or 15
    # minutes: a subject's events are extracted together, in one model call per batch, not
    # one call per turn. What waits is not hidden: the context block shows a subject's
    # waiting events beside its facts (`core.context`). 1: extract as soon as the worker
    # polls (a demo, a test, an agent that must search its last turn as a fact at once).
    min_events: int = Field(20, ge=1)
    max_wait_minutes: float = Field(15.0, gt=0)

    # `distill worker --metrics-port`: Prometheus metrics on this port (None: not served; 0:
    # any free port, printed at start), on this address (loopback: the metrics name projects).
    metrics_port: int | None = Field(None, ge=0, le=65535)
    metrics_host: str = "127.0.0.1"

    def trigger(self) -> Trigger:
        return Trigger(self.min_events, timedelta(minutes=self.max_wait_minutes))


class BacklogSettings(BaseModel):
    """Backpressure on ingest (`distill.backpressure`): `distill serve` refuses events past
    `max_events` waiting per project with 429 and `Retry-After: retry_after_seconds`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # 10,000 events: about 2 min of the worker's rate with a model (BENCHMARKS.md, soak),
    # enough to absorb a burst, small enough that an agent learns within minutes that the
    # workers cannot keep up. 0: no bound.
    max_events: int = Field(10_000, ge=0)
    retry_after_seconds: float = Field(BACKLOG_RETRY_AFTER_S, gt=0)


class Settings(BaseModel):
    """The whole file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    worker: WorkerSettings = Field(default_factory=WorkerSettings)
    schedule: ScheduleSettings = Field(default_factory=ScheduleSettings)
    backlog: BacklogSettings = Field(default_factory=BacklogSettings)


@dataclass(frozen=True)
class Loaded:
    """Settings and where each value came from (dotted path -> "default", "file <path>" or
    "env <NAME>")."""

    settings: Settings
    sources: Mapping[str, str]
    path: Path | None


def load(path: str | Path | None = None, environ: Mapping[str, str] | None = None) -> Loaded:
    """Read the file (`path`, else `DISTILL_CONFIG`, else none) and the overrides; raise
    `ConfigurationError` naming every bad key or value."""
    env = os.environ if environ is None else environ
    chosen = path if path is not None else env.get(CONFIG_VARIABLE) or None
    file = Path(chosen) if chosen else None
    data: dict[str, Any] = {}
    sources: dict[str, str] = {}
    if file is not None:
        try:
            data = tomllib.loads(file.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigurationError(f"cannot read the configuration file {file}: {exc}") from exc
        except tomllib.TOMLDecodeError as exc:
            raise ConfigurationError(f"{file} is not valid TOML: {exc}") from exc
        for key in _leaves(data):
            sources[key] = f"file {file}"
    for name, text in sorted(env.items()):
        if not name.startswith(ENV_PREFIX) or ENV_NESTING not in name:
            continue
        parts = name[len(ENV_PREFIX) :].lower().split(ENV_NESTING)
        _put(data, parts, _value(text))
        sources[".".join(parts)] = f"env {name}"
    try:
        settings = Settings.model_validate(data)
    except ValidationError as exc:
        raise ConfigurationError(_explain(exc, file, sources)) from exc
    return Loaded(settings, sources, file)


def effective(loaded: Loaded) -> list[tuple[str, Any, str]]:
    """Every setting in force: (dotted path, value, where it came from), in order. The
    passes the file does not name are shown with their defaults."""
    dumped = loaded.settings.model_dump(mode="json")
    from distill.scheduled_passes import PASSES

    named = dumped["schedule"]["passes"]
    passes = dumped["schedule"]["passes"] = {}
    for name, entry in PASSES.items():  # in the registry's order
        settings = passes[name] = named.get(name, {})
        defaults = ScheduleSettings().of(name).model_dump(mode="json")
        for key, value in defaults.items():
            settings.setdefault(key, value)
        if settings.get("enabled") is None:
            settings["enabled"] = entry.default_enabled
    return [(key, value, loaded.sources.get(key, "default")) for key, value in _flat(dumped)]


class Reloader:
    """The schedule settings in force, read again when the file changes or on `request()`
    (SIGHUP). `schedule()` is what the worker's threads call at each cycle."""

    def __init__(self, loaded: Loaded, environ: Mapping[str, str] | None = None) -> None:
        self._loaded = loaded
        self._environ = environ
        self._lock = threading.Lock()
        self._asked = threading.Event()
        self._checked = 0.0
        self._mtime = _mtime(loaded.path)

    @property
    def loaded(self) -> Loaded:
        return self._loaded

    def request(self) -> None:
        """Read the file again at the next cycle (SIGHUP's handler: no I/O in a handler)."""
        self._asked.set()

    def schedule(self) -> ScheduleSettings:
        self._maybe_reload()
        return self._loaded.settings.schedule

    def _maybe_reload(self, now: float | None = None) -> None:
        import time

        moment = time.monotonic() if now is None else now
        if self._loaded.path is None:
            return
        if not self._asked.is_set() and moment - self._checked < RELOAD_CHECK_S:
            return
        with self._lock:
            self._checked = moment
            mtime = _mtime(self._loaded.path)
            if not self._asked.is_set() and mtime == self._mtime:
                return
            self._asked.clear()
            self._mtime = mtime
            self.reload()

    def reload(self) -> bool:
        """Read the file now; whether the new settings were taken."""
        try:
            fresh = load(self._loaded.path, self._environ)
        except ConfigurationError as exc:
            log.error("configuration not reloaded, the settings in force stay: %s", exc)
            return False
        if fresh.settings.worker != self._loaded.settings.worker:
            log.warning("the [worker] settings changed: they apply at the worker's next start")
        # Only the schedule is hot: the worker's own settings stay as the worker started.
        kept = fresh.settings.model_copy(update={"worker": self._loaded.settings.worker})
        self._loaded = Loaded(kept, fresh.sources, fresh.path)
        log.warning("configuration reloaded from %s", fresh.path)
        return True


# -- helpers -------------------------------------------------------------------------------------
def _mtime(path: Path | None) -> float | None:
    try:
        return path.stat().st_mtime_ns if path is not None else None
    except OSError:
        return None


def _value(text: str) -> Any:
    """An override's text as a TOML value (a number, a boolean, a list), else the string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def _put(data: dict[str, Any], parts: list[str], value: Any) -> None:
    for part in parts[:-1]:
        nested = data.setdefault(part, {})
        if not isinstance(nested, dict):
            raise ConfigurationError(f"{'.'.join(parts)}: {part} is a value, not a section")
        data = nested
    data[parts[-1]] = value


def _leaves(data: Mapping[str, Any], prefix: str = "") -> list[str]:
    found = []
    for key, value in data.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            found += _leaves(value, path + ".")
        else:
            found.append(path)
    return found


def _flat(data: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    for key, value in data.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            found += _flat(value, path + ".")
        else:
            found.append((path, value))
    return found


def _explain(exc: ValidationError, file: Path | None, sources: Mapping[str, str]) -> str:
    lines = []
    for error in exc.errors():
        path = ".".join(str(p) for p in error["loc"])
        where = sources.get(path) or (f"file {file}" if file else "the settings")
        if error["type"] == "extra_forbidden":
            lines.append(f"unknown setting {path} ({where}): remove it or fix its name")
        else:
            lines.append(f"{path} ({where}): {error['msg']}")
    return "invalid configuration: " + "; ".join(lines)
