"""`distill derive` and `distill subjects`: votes elected into facts, and which subjects
drift.

`derive` runs one cycle per scope holding votes (claims of predicates whose policy is
`vote`: `distill --policy PREDICATE=vote`, or DISTILL_POLICIES) and prints what it did:
processed, untrusted, created, reinforced, invalidated, drift_alerts. `subjects` lists a project's
subjects with their drift flag.
"""

from __future__ import annotations

import click
from rich.table import Table

from distill.core.derive import DERIVE_BATCH
from distill.core.drift import DRIFT_THRESHOLD, DRIFT_WINDOW
from distill.errors import InvalidInput
from distill.passes.derive import DeriveReport
from distill.service.hygiene_command import scope_options
from distill.service.tables import BOX, fact_table
from distill.service.terminal import emit, json_option, memory, out


def parse_policies(values: tuple[str, ...]) -> dict[str, str]:
    """`PREDICATE=POLICY` pairs (the `--policy` option, DISTILL_POLICIES) as a mapping."""
    found: dict[str, str] = {}
    for item in values:
        for part in item.replace(",", " ").split():
            name, sep, policy = part.partition("=")
            if not sep or not name.strip():
                raise click.BadParameter(
                    f"{part!r}: give PREDICATE=latest or PREDICATE=vote", param_hint="--policy"
                )
            found[name.strip()] = policy.strip()
    return found


@click.command()
@scope_options
@click.option("--dry-run", is_flag=True, help="Decide and report; write nothing.")
@click.option(
    "--no-cluster",
    "exact",
    is_flag=True,
    help="Count exact values only: no clustering of paraphrases by embedding.",
)
@click.option(
    "--batch",
    type=click.IntRange(min=1),
    default=DERIVE_BATCH,
    show_default=True,
    help="Votes one cycle reads per subject; the rest wait for the next cycle.",
)
@json_option
@click.pass_context
def derive(
    ctx: click.Context,
    projects: tuple[str, ...],
    subject: str | None,
    dry_run: bool,
    exact: bool,
    batch: int,
    as_json: bool,
) -> None:
    """Elect the values of predicates whose policy is `vote` (--policy P=vote before the
    command) from the votes recorded since the last cycle: the mode over paraphrase
    clusters, ties to the most recent; an open fact outvoted (more than 40% of the votes
    elsewhere) is closed with a receipt."""
    with memory(ctx) as mem:
        report = mem.derive(
            projects=projects, subject=subject, dry_run=dry_run, cluster=not exact, batch=batch
        )
    if as_json or ctx.obj.get("json"):
        emit(report.to_dict())
        return
    _print(report)


def _print(report: DeriveReport) -> None:
    c = report.counts
    out.print(
        f"{report.scopes} subject(s): processed {c['processed']} vote(s)"
        + (f" ({c['untrusted']} untrusted, not counted)" if c["untrusted"] else "")
        + f"; created "
        f"{c['created']}, reinforced {c['reinforced']}, invalidated {c['invalidated']}; "
        f"{c['drift_alerts']} drift alert(s)"
        + (" (dry run: nothing written)" if report.dry_run else ""),
        markup=False,
    )
    if report.facts:  # what was elected (or would be): the values, not only their count
        title = "would elect" if report.dry_run else "elected"
        out.print(fact_table(report.facts, title=title))
    if report.capped:
        out.print(f"votes left for the next cycle in: {', '.join(report.capped)}", markup=False)
    if report.unstable:
        out.print(f"unstable: {', '.join(report.unstable)}", markup=False)
    for line in report.errors:
        out.print(f"not applied: {line}", markup=False)


@click.command()
@click.option("--project", default="default", show_default=True)
@click.option("--unstable", "only_unstable", is_flag=True, help="Only the unstable subjects.")
@json_option
@click.pass_context
def subjects(ctx: click.Context, project: str, only_unstable: bool, as_json: bool) -> None:
    """A project's subjects, each with its drift flag: unstable while more than
    DRIFT_THRESHOLD of its derived facts were invalidated in the trailing window."""
    if not project.strip():
        raise InvalidInput("--project: give a project name")
    with memory(ctx) as mem:
        found = [s for s in mem.subjects(project) if s.unstable or not only_unstable]
    if as_json or ctx.obj.get("json"):
        emit([s.to_dict() for s in found])
        return
    if not found:
        which = "unstable subjects" if only_unstable else "subjects"
        out.print(f"no {which} in project {project!r}", markup=False)
        return
    table = Table(
        title=f"subjects of {project} (unstable: more than {DRIFT_THRESHOLD} invalidations "
        f"in {DRIFT_WINDOW.days} days)",
        box=BOX,
    )
    for column in ("subject", "unstable", "invalidations"):
        table.add_column(column)
    for s in found:
        table.add_row(s.subject, "yes" if s.unstable else "no", str(s.invalidations))
    out.print(table)
