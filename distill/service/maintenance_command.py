"""Commands that look after a database rather than its memory: replaying jobs, migrating the
schema, and embedding facts again after switching embedders."""

from __future__ import annotations

import click

from distill.adapters.store import open_store
from distill.service.terminal import emit, json_option, memory, out


@click.command()
@click.option("--project", help="Only this project.")
@click.option(
    "--reextract",
    is_flag=True,
    help="Forget the model's kept answers first, so the next run asks it again.",
)
@json_option
@click.pass_context
def replay(ctx: click.Context, project: str | None, reextract: bool, as_json: bool) -> None:
    """Put finished and failed jobs back to pending; replaying changes nothing already known."""
    with memory(ctx) as mem:
        count = mem.replay(project, reextract=reextract)
    if as_json:
        emit({"requeued": count})
    else:
        out.print(f"{count} job(s) back to pending")


@click.command()
@json_option
@click.pass_context
def migrate(ctx: click.Context, as_json: bool) -> None:
    """Bring the database's schema up to date (every command does it on opening; run this
    once before starting several workers on a new database, or to check a deployment)."""
    store, where = open_store(ctx.obj["db"])
    try:
        version = store.schema_version()
        before = getattr(store, "migrated_from", None)
    finally:
        store.close()
    if as_json:
        emit({"database": where, "schema_version": version, "migrated_from": before})
    elif before is None:
        out.print(f"{where}: schema at version {version}, up to date")
    elif before == 0:
        out.print(f"{where}: schema created, at version {version}")
    else:
        out.print(f"{where}: schema migrated from version {before} to {version}")


@click.command()
@click.option("--project", help="Only this project.")
@json_option
@click.pass_context
def reembed(ctx: click.Context, project: str | None, as_json: bool) -> None:
    """Embed every active fact again with the configured embedder (run it after switching
    embedders, so that claims match the facts stored before by meaning)."""
    with memory(ctx) as mem:
        count = mem.reembed(project)
        model = mem.embedder.model_id
    if as_json:
        emit({"reembedded": count, "embedder": model})
    else:
        out.print(f"{count} fact(s) embedded again with {model}")
