"""Commands that keep stored memory clean: `distill dedupe`.

Each is a pass over what is stored, not over what arrives; each takes `--dry-run` (the same
report, nothing written), a project allowlist and the pass's per-run cap, and prints every
group it found, so that a person sees what was (or would be) retired and why.
"""

from __future__ import annotations

import click
from rich.table import Table

from distill.passes.dedupe import MAX_SUPERSEDES_PER_RUN, DedupeReport
from distill.service.terminal import emit, json_option, memory, out


@click.command()
@click.option(
    "--project",
    "projects",
    multiple=True,
    help="Only this project (repeat for several); every project by default.",
)
@click.option("--subject", help="Only this subject (of the projects given).")
@click.option("--dry-run", is_flag=True, help="Report the groups; write nothing.")
@click.option(
    "--max-supersedes",
    type=click.IntRange(min=0),
    default=MAX_SUPERSEDES_PER_RUN,
    show_default=True,
    help="Memories one run retires at most; the rest wait for the next run.",
)
@json_option
@click.pass_context
def dedupe(
    ctx: click.Context,
    projects: tuple[str, ...],
    subject: str | None,
    dry_run: bool,
    max_supersedes: int,
    as_json: bool,
) -> None:
    """Merge stored memories that say the same thing in the same words (case, punctuation,
    spacing and Unicode forms folded): the most corroborated survives (a pinned one first)
    and absorbs the others' evidence; each duplicate is superseded by it, with a receipt.
    The same words in another order are reported, never merged."""
    with memory(ctx) as mem:
        report = mem.dedupe(
            projects=projects, subject=subject, dry_run=dry_run, max_supersedes=max_supersedes
        )
    if as_json:
        emit(report.to_dict())
        return
    _print(report)


def _print(report: DedupeReport) -> None:
    verb = "would retire" if report.dry_run else "retired"
    if not report.groups and not report.errors:
        looked = f"{report.scopes} subject(s) with two or more memories looked at"
        out.print(f"no duplicate memories ({looked})")
        return
    table = Table("project", "subject", "outcome", "survivor", "retired", "text")
    for g in report.groups:
        group = g.group
        retired = ", ".join(group.retired) or "-"
        if group.pinned_skipped:
            retired += f" (pinned, kept: {', '.join(group.pinned_skipped)})"
        if group.capped:
            retired += f" (capped: {len(group.capped)} left for the next run)"
        outcome = "word order: report only" if group.merged == "report_only" else group.merged
        table.add_row(g.project, g.subject, outcome, group.survivor, retired, group.text)
    out.print(table)
    out.print(
        f"{verb} {report.retired} memory(ies) in {report.merged_groups} group(s); "
        f"{report.report_only} word-order group(s) reported; "
        f"{report.pinned_skipped} pinned kept; {report.capped} capped"
        + (" (dry run: nothing written)" if report.dry_run else "")
    )
    for error in report.errors:
        out.print(f"not applied: {error}", markup=False)
