"""`distill config show`: the configuration in force, each value with where it came from
(the default, the file, or a `DISTILL_*` override), as `distill worker` would read it."""

from __future__ import annotations

import json

import click

from distill.service.config import CONFIG_VARIABLE, effective, load
from distill.service.terminal import emit, json_option, out


@click.group("config")
def config_cmd() -> None:
    """The worker's configuration file (TOML) and its DISTILL_<SECTION>__<KEY> overrides."""


@config_cmd.command("show")
@click.option(
    "--config",
    "config_path",
    envvar=CONFIG_VARIABLE,
    type=click.Path(dir_okay=False),
    help="The configuration file to read (as `distill worker --config`).",
)
@json_option
def show(config_path: str | None, as_json: bool) -> None:
    """Print every setting in force and where it came from; exit 1, naming each bad key or
    value, if the configuration does not validate."""
    loaded = load(config_path)
    rows = effective(loaded)
    if as_json:
        emit({key: {"value": value, "source": source} for key, value, source in rows})
        return
    # One line per setting, as TOML would write it, its source as a comment: long paths and
    # values stay whole (a table would cut them to the terminal's width).
    width = max(len(key) for key, _, _ in rows)
    for key, value, source in rows:
        shown = "(unset)" if value is None else json.dumps(value, ensure_ascii=False)
        out.print(f"{key:<{width}} = {shown:<8} # {source}", markup=False)
