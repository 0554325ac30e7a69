"""The worker's configuration: a TOML file plus DISTILL_<SECTION>__<KEY> overrides, unknown
keys refused by name, each value's source, and the hot reload of the [schedule] section."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from distill.errors import ConfigurationError
from distill.service.config import Reloader, effective, load

FILE = """
[worker]
concurrency = 2

[schedule]
retry_minutes = 5

[schedule.passes.judge]
interval_hours = 6
max_calls = 10
"""


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_the_file_and_overrides_set_values_and_say_where_each_came_from(tmp_path: Path) -> None:
    path = write(tmp_path / "distill.toml", FILE)
    env = {
        "DISTILL_SCHEDULE__PASSES__JUDGE__MAX_CALLS": "20",
        "DISTILL_SCHEDULE__PASSES__DEDUPE__PROJECTS": '["blog"]',
        "DISTILL_LLM": "fake",  # the command line's own variables are not settings here
    }
    loaded = load(path, env)

    schedule = loaded.settings.schedule
    assert loaded.settings.worker.concurrency == 2 and schedule.retry_minutes == 5
    assert schedule.of("judge").interval_hours == 6 and schedule.of("judge").max_calls == 20
    assert schedule.of("dedupe").projects == ("blog",)
    shown = {key: (value, source) for key, value, source in effective(loaded)}
    assert shown["schedule.passes.judge.interval_hours"] == (6.0, f"file {path}")
    assert shown["schedule.passes.judge.max_calls"] == (
        20,
        "env DISTILL_SCHEDULE__PASSES__JUDGE__MAX_CALLS",
    )
    assert shown["schedule.lease_minutes"] == (60.0, "default")
    # Every registered pass is shown, with its own default for `enabled`.
    assert shown["schedule.passes.prune.enabled"] == (False, "default")
    assert shown["schedule.passes.dedupe.enabled"] == (True, "default")


def test_the_file_may_come_from_distill_config(tmp_path: Path) -> None:
    path = write(tmp_path / "c.toml", "[worker]\ninterval = 7\n")
    assert load(None, {"DISTILL_CONFIG": str(path)}).settings.worker.interval == 7
    assert load(None, {}).path is None


@pytest.mark.parametrize(
    ("text", "env", "named"),
    [
        ("[schedule]\nretry_minute = 3\n", {}, "unknown setting schedule.retry_minute"),
        ("[schedul]\n", {}, "unknown setting schedul"),
        ("", {"DISTILL_WORKER__THREADS": "3"}, "DISTILL_WORKER__THREADS"),
        ("[schedule.passes.dedupes]\n", {}, "unknown pass(es) dedupes"),
        ("[schedule.passes.judge]\ninterval_hours = 0\n", {}, "interval_hours"),
        ("[worker\n", {}, "not valid TOML"),
    ],
)
def test_a_bad_key_or_value_fails_the_start_by_name(
    tmp_path: Path, text: str, env: dict[str, str], named: str
) -> None:
    path = write(tmp_path / "bad.toml", text)
    with pytest.raises(ConfigurationError) as caught:
        load(path, env)
    assert named in str(caught.value)


def test_a_missing_file_is_an_error_that_names_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="cannot read the configuration file"):
        load(tmp_path / "nowhere.toml", {})


def test_the_schedule_reloads_when_the_file_changes_and_keeps_the_old_on_a_bad_file(
    tmp_path: Path,
) -> None:
    path = write(tmp_path / "distill.toml", FILE)
    reloader = Reloader(load(path, {}), environ={})
    assert reloader.schedule().of("judge").interval_hours == 6

    changed = FILE.replace("interval_hours = 6", "interval_hours = 2")
    write(path, changed.replace("concurrency = 2", "concurrency = 3"))
    os.utime(path, ns=(1, 10**18))  # a modification time that surely differs
    reloader.request()
    assert reloader.schedule().of("judge").interval_hours == 2
    # The worker's own section needs a restart: it stays as it started.
    assert reloader.loaded.settings.worker.concurrency == 2

    write(path, FILE.replace("max_calls = 10", "max_call = 10"))
    reloader.request()
    assert reloader.schedule().of("judge").interval_hours == 2  # the settings in force stay


def test_without_a_request_the_file_is_looked_at_every_few_seconds_only(tmp_path: Path) -> None:
    path = write(tmp_path / "distill.toml", FILE)
    reloader = Reloader(load(path, {}), environ={})
    reloader._maybe_reload(now=1000.0)
    write(path, FILE.replace("interval_hours = 6", "interval_hours = 1"))
    os.utime(path, ns=(1, 10**18))
    reloader._maybe_reload(now=1000.5)
    assert reloader.loaded.settings.schedule.of("judge").interval_hours == 6
    reloader._maybe_reload(now=1003.0)
    assert reloader.loaded.settings.schedule.of("judge").interval_hours == 1


def test_the_readme_s_example_configuration_is_valid(tmp_path: Path) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## The worker and its schedule", 1)[1]
    example = section.split("```toml\n", 1)[1].split("```", 1)[0]
    loaded = load(write(tmp_path / "example.toml", example), {})

    schedule = loaded.settings.schedule
    assert schedule.of("judge").projects == ("blog",) and schedule.of("summarise").dry_run
    assert loaded.settings.backlog.max_events == 10_000
