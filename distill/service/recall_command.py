"""Commands that read memory back for an agent or a person: `search` (the facts that best
answer a question) and `context` (the block for a prompt). Both take the two time axes:
`--as-of` (what was true then) and `--known-at` (what Distill believed then)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from distill.core.recall import MAX_SEARCH_LIMIT
from distill.service.tables import hit_table
from distill.service.terminal import emit, json_option, memory, note_unknown_subject, out

KINDS = ("state", "event", "memory")
F = TypeVar("F", bound=Callable[..., Any])


def time_axes(command: F) -> F:
    """`--project`, `--as-of` and `--known-at`, as every reading command takes them."""
    command = click.option("--known-at", help="What Distill believed at this ISO-8601 time.")(
        command
    )
    command = click.option("--as-of", help="What was true at this ISO-8601 time.")(command)
    return click.option("--project", default="default", show_default=True)(command)


@click.command()
@click.argument("query")
@click.option("--subject", help="Search one subject's facts (default: every subject).")
@time_axes
@click.option("--limit", default=10, show_default=True, type=click.IntRange(1, MAX_SEARCH_LIMIT))
@click.option("--kind", "kinds", multiple=True, type=click.Choice(KINDS), help="Repeatable.")
@click.option("--events", is_flag=True, help="Show each fact's evidence events under it.")
@json_option
@click.pass_context
def search(
    ctx: click.Context,
    query: str,
    subject: str | None,
    project: str,
    as_of: str | None,
    known_at: str | None,
    limit: int,
    kinds: tuple[str, ...],
    events: bool,
    as_json: bool,
) -> None:
    """The facts that best answer QUERY, best first, each with its score, the arms that found
    it (lexical, vector) and whether it is contested."""
    with memory(ctx) as mem:
        if subject is not None:
            note_unknown_subject(mem.store, project, subject)
        hits = mem.search(
            query,
            subject=subject,
            project=project,
            as_of=as_of,
            known_at=known_at,
            limit=limit,
            kinds=kinds or None,
            include=("events",) if events else (),
        )
    if as_json:
        emit([h.to_dict() for h in hits])
        return
    if not hits:
        out.print("no facts found", markup=False)
        return
    table = hit_table(hits, f"search: {query}")
    out.print(table)


@click.command()
@click.argument("subject")
@click.option("--query", help="Put the facts most relevant to this question first.")
@time_axes
@click.option("--budget", default=1_000, show_default=True, help="Tokens the block may take.")
@json_option
@click.pass_context
def context(
    ctx: click.Context,
    subject: str,
    query: str | None,
    project: str,
    as_of: str | None,
    known_at: str | None,
    budget: int,
    as_json: bool,
) -> None:
    """The block an agent puts in its prompt about SUBJECT: its facts with their dates, fit
    to a token budget; a contested fact is shown with its rivals, never silently picked."""
    with memory(ctx) as mem:
        note_unknown_subject(mem.store, project, subject)
        block = mem.context(
            subject,
            query=query,
            project=project,
            as_of=as_of,
            known_at=known_at,
            budget_tokens=budget,
        )
    if as_json:
        emit(block.to_dict())
    else:
        out.print(block.text, markup=False, highlight=False)
