"""`distill keys`: the keys of the HTTP API (`distill serve`). A token is printed once, when
its key is made; the database keeps only its hash (see `distill.service.api_keys`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

import click
from rich.table import Table

from distill.adapters.store import open_store
from distill.key_ports import ApiKey
from distill.ports import Store
from distill.service.api_keys import create_key, key_store
from distill.service.tables import BOX
from distill.service.terminal import db_option, emit, err, json_option, out


@contextmanager
def _store(ctx: click.Context) -> Iterator[Store]:
    """The store alone: keys need no embedder and no model."""
    store, _ = open_store(ctx.obj["db"])
    try:
        yield store
    finally:
        store.close()


def key_dict(key: ApiKey) -> dict[str, object]:
    return {
        "id": key.id,
        "project": key.project,
        "admin": key.admin,
        "name": key.name,
        "created_at": key.created_at.isoformat(),
        "revoked_at": key.revoked_at.isoformat() if key.revoked_at else None,
    }


@click.group()
def keys() -> None:
    """Keys of the HTTP API: one project each, or admin keys for every project."""


@keys.command()
@click.option("--project", help="The project the key may read and write.")
@click.option("--name", default="", help="What the key is for (shown by `keys list`).")
@click.option("--admin", is_flag=True, help="An admin key: any project, named per request.")
@json_option
@click.pass_context
def create(ctx: click.Context, project: str | None, name: str, admin: bool, as_json: bool) -> None:
    """Make a key and print its token: the only time it is shown."""
    if admin == (project is not None):
        raise click.UsageError("give --project P for a project's key, or --admin (not both)")
    with _store(ctx) as store:
        made = create_key(store, project, name, datetime.now(UTC), admin=admin)
    if as_json:
        emit({**key_dict(made.key), "token": made.token})
        return
    whose = "admin key (every project)" if admin else f"key of project {project!r}"
    err.print(f"made {whose} {made.key.id}; the token is shown once, keep it now:", markup=False)
    click.echo(made.token)


@keys.command("list")
@click.option("--project", help="Only this project's keys (admin keys have none).")
@json_option
@click.pass_context
def list_cmd(ctx: click.Context, project: str | None, as_json: bool) -> None:
    """List keys (never their tokens, which are not stored)."""
    with _store(ctx) as store:
        found = key_store(store).api_keys(project)
    if as_json:
        emit([key_dict(k) for k in found])
        return
    if not found:
        out.print("no keys" + (f" of project {project!r}" if project else ""), markup=False)
        return
    table = Table(title="API keys", box=BOX, show_edge=False, pad_edge=False, title_justify="left")
    table.add_column("id", no_wrap=True, min_width=32)
    table.add_column("project", overflow="fold")
    table.add_column("name", ratio=1, overflow="fold")
    table.add_column("made", no_wrap=True)
    table.add_column("revoked", no_wrap=True)
    for k in found:
        table.add_row(
            k.id,
            "(admin)" if k.admin else k.project,
            k.name,
            f"{k.created_at:%Y-%m-%d %H:%M}",
            f"{k.revoked_at:%Y-%m-%d %H:%M}" if k.revoked_at else "",
        )
    out.print(table)


@keys.command()
@click.argument("key_id")
@json_option
@click.pass_context
def revoke(ctx: click.Context, key_id: str, as_json: bool) -> None:
    """Revoke a key: it stops working at once, on every running server."""
    with _store(ctx) as store:
        key = key_store(store).revoke_key(key_id, datetime.now(UTC))
    if as_json:
        emit(key_dict(key))
    else:
        out.print(f"revoked key {key.id}", markup=False)


for _command in keys.commands.values():
    _command.params.append(db_option())
