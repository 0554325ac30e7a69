"""`distill copy`: the whole database into an empty one (see `adapters/store/copy`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

import click
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from distill.adapters.store import open_store
from distill.adapters.store.copy import Progress as CopyProgress
from distill.adapters.store.copy import copy_store
from distill.adapters.store.sql_keys import SqlKeys
from distill.adapters.store.sql_store import SqlStore
from distill.errors import ConfigurationError, StoreError
from distill.service.tables import titled_table
from distill.service.terminal import err, json_option, out


@click.command("copy")
@click.option(
    "--to",
    "to",
    required=True,
    metavar="URL",
    help="The empty database to copy into: a SQLite path, sqlite:///path or "
    "postgresql://user@host/dbname.",
)
@json_option
@click.pass_context
def copy_cmd(ctx: click.Context, to: str, as_json: bool) -> None:
    """Copy everything in the database (--db) into an empty one: SQLite to PostgreSQL, back,
    or to a new SQLite file. All or nothing; running jobs arrive pending."""
    source, source_where = _open(ctx.obj["db"], must_exist=True)
    try:
        keys = source.count_keys().active if isinstance(source, SqlKeys) else 0
        try:
            target, target_where = _open(to)
        except (ConfigurationError, StoreError) as exc:  # say which of the two it is
            raise type(exc)(f"cannot open the target (--to): {exc}") from exc
        try:
            with progress_bars(enabled=not as_json) as tick:
                report = copy_store(source, target, tick)
        finally:
            target.close()
    finally:
        source.close()
    if as_json:
        data = {
            "source": source_where,
            "target": target_where,
            **report.to_dict(),
            "api_keys_not_copied": keys,
        }
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
        return
    table = titled_table(f"copied {source_where} → {target_where}")
    table.add_column("table")
    table.add_column("rows", justify="right")
    for name, count in report.rows.items():
        table.add_row(name, f"{count:,}")
    table.add_row("total", f"{report.total:,}")
    out.print(table)
    if keys:
        err.print(
            f"{keys} API key(s) of the source were not copied: keys belong to the deployment "
            "they were made for; make new ones on the copy (distill keys create)"
        )
    if report.running_jobs_made_pending:
        err.print(
            f"{report.running_jobs_made_pending} job(s) running in the source are pending in "
            "the copy: nobody holds them there, and its workers will run them"
        )


def _open(url: str | None, must_exist: bool = False) -> tuple[SqlStore, str]:
    store, where = open_store(url, must_exist)
    if not isinstance(store, SqlStore):  # pragma: no cover - every store open_store makes is
        store.close()
        raise click.UsageError(f"{where} is not a store distill can copy")
    return store, where


@contextmanager
def progress_bars(enabled: bool) -> Iterator[CopyProgress]:
    """One bar per table on stderr, with its rows copied and its rows in all."""
    if not enabled or not err.is_terminal:
        yield lambda table, done, total: None
        return
    columns = (
        TextColumn("{task.description:<16}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=err, transient=True) as bars:
        tasks: dict[str, TaskID] = {}

        def tick(table: str, done: int, total: int) -> None:
            if table not in tasks:
                tasks[table] = bars.add_task(table, total=total)
            bars.update(tasks[table], completed=done)

        yield tick
