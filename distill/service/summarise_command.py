"""`distill summarise`: each subject's old memories put to a model, and the summaries whose
every consumed memory survives the checks (`core.summarise`) written, with their receipts.

It takes what every pass that asks a model takes (`hygiene_command`: the scopes, the model,
its budget, `--dry-run`), and prints the summaries written and every refusal with its code.
"""

from __future__ import annotations

import click
from rich.table import Table

from distill.core.summarise import SUMMARISE_KEEP
from distill.passes.summarise import (
    SUMMARISE_ATTEMPTS,
    SUMMARISE_MAX_CALLS,
    SUMMARISE_MAX_TOKENS,
    SummariseReport,
)
from distill.service.hygiene_command import (
    model_options,
    run_model_pass,
    run_notes,
    scope_options,
)
from distill.service.tables import BOX
from distill.service.terminal import json_option, out


@click.command()
@scope_options
@click.option("--dry-run", is_flag=True, help="Ask the model and report; write nothing.")
@model_options(SUMMARISE_MAX_CALLS, SUMMARISE_MAX_TOKENS)
@click.option(
    "--keep",
    type=click.IntRange(min=0),
    default=SUMMARISE_KEEP,
    show_default=True,
    help="A subject's most recently reinforced memories that are never offered.",
)
@click.option(
    "--attempts",
    type=click.IntRange(min=1),
    default=SUMMARISE_ATTEMPTS,
    show_default=True,
    help="Tries per model call, for transient failures only (2: one retry).",
)
@json_option
@click.pass_context
def summarise(
    ctx: click.Context,
    projects: tuple[str, ...],
    subject: str | None,
    dry_run: bool,
    llm_provider: str | None,
    max_calls: int,
    max_tokens: int,
    keep: int,
    attempts: int,
    as_json: bool,
) -> None:
    """Ask the model (--llm / DISTILL_LLM) to summarise each subject's old memories (all but
    the most recently changed; pinned ones are never shown). A summary is written only with
    the memories it keeps whole: every number, date, name and negation of each; the
    memories it consumes are retired into it, with a receipt."""
    run_model_pass(
        ctx,
        llm_provider,
        "summarise",
        lambda mem: mem.summarise(
            projects=projects,
            subject=subject,
            dry_run=dry_run,
            max_calls=max_calls,
            max_tokens=max_tokens,
            keep=keep,
            attempts=attempts,
        ),
        as_json,
        _print_summarised,
    )


def _print_summarised(report: SummariseReport) -> None:
    verb = "would write" if report.dry_run else "wrote"
    tokens = report.usage.tokens
    out.print(
        f"offered {report.offered} memory(ies) in {report.scopes} subject(s) with "
        f"{report.usage.calls} call(s), {tokens:,} token(s); {verb} "
        f"{len(report.summaries)} summary(ies) consuming {report.consumed} memory(ies); "
        f"{report.contested} conflict set(s) opened; {len(report.refused)} refused"
        + (" (dry run: nothing written)" if report.dry_run else ""),
        markup=False,
    )
    for summary in report.summaries:
        out.print(f"- {summary.text}  ({summary.subject}, {summary.id})", markup=False)
    if report.refused:
        codes = ", ".join(f"{code} {n}" for code, n in sorted(report.refused_by_code.items()))
        out.print(f"refused, by reason: {codes}", markup=False)
        table = Table("memory", "refused because", box=BOX, show_edge=False)
        for r in report.refused:
            table.add_row(r.memory_id or "(proposal)", f"{r.code}: {r.detail}")
        out.print(table)
    run_notes(report, "offers")
