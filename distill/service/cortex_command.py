"""`distill procedures` and `distill topics`: what a subject's actions and entities teach.

`procedures list` shows them, `promote` runs the pass that counts action events into
procedures (`--dry-run`), `use` reports one real use of a procedure (its lifecycle follows),
`match` lists the active procedures a state meets. `topics list` shows the topics (with
`--query`, nearest first), `detect` runs the pass that links new events to their entities and
finds the communities (`--dry-run`, `--name-with-model`). The rules: `distill.core.procedures`,
`distill.core.topics`.
"""

from __future__ import annotations

from typing import Any

import click
from rich.table import Table

from distill.core.patterns import Procedure, ProcedureStatus, Topic
from distill.passes.procedures import ProceduresReport
from distill.passes.topics import TopicsReport
from distill.service.hygiene_command import scope_options
from distill.service.tables import BOX, id_column
from distill.service.terminal import db_option, emit, err, json_option, memory, out

_STATUSES = click.Choice([s.value for s in ProcedureStatus])


@click.group("procedures")
def procedures_cmd() -> None:
    """Procedures: `a → b` when an action that succeeded is often followed by another that
    succeeds, learned from the actions events record (add --action). Candidates become active
    at support 3; an active one under 0.4 effectiveness is deprecated, back at 0.6."""


@procedures_cmd.command("list")
@click.option("--subject", help="Only this subject's.")
@click.option("--project", default="default", show_default=True)
@click.option("--status", type=_STATUSES, help="Only those of this status.")
@json_option
@click.pass_context
def list_procedures(
    ctx: click.Context, subject: str | None, project: str, status: str | None, as_json: bool
) -> None:
    """The procedures of a project (of one subject), by subject and name."""
    with memory(ctx) as mem:
        found = mem.procedures(subject, project, status)
    _show_procedures(found, as_json, f"no procedures in project {project!r}")


@procedures_cmd.command("promote")
@scope_options
@click.option("--dry-run", is_flag=True, help="Report what would change; write nothing.")
@json_option
@click.pass_context
def promote(
    ctx: click.Context,
    projects: tuple[str, ...],
    subject: str | None,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Count every subject's action events into procedures again: new pairs become
    candidates, support is recounted (a re-run over the same events changes nothing),
    candidates at support 3 become active."""
    with memory(ctx) as mem:
        report = mem.promote_procedures(projects=projects, subject=subject, dry_run=dry_run)
    if as_json:
        emit(report.to_dict())
    else:
        _print_promoted(report)
    if report.errors:
        ctx.exit(1)


@procedures_cmd.command("use")
@click.argument("procedure_id")
@click.option("--success", is_flag=True, help="The use went well.")
@click.option("--failure", is_flag=True, help="The use went badly.")
@click.option("--project", default="default", show_default=True)
@json_option
@click.pass_context
def use(
    ctx: click.Context,
    procedure_id: str,
    success: bool,
    failure: bool,
    project: str,
    as_json: bool,
) -> None:
    """Report one real use of PROCEDURE_ID (an id or a unique prefix) and how it went: give
    exactly one of --success and --failure."""
    if success == failure:
        raise click.UsageError("give exactly one of --success and --failure")
    with memory(ctx) as mem:
        before = mem.procedures(None, project)
        after = mem.record_procedure_use(procedure_id, success, project)
    was = next((p.status for p in before if p.id == after.id), after.status)
    if as_json:
        emit({**_procedure_dict(after), "was": str(was)})
        return
    moved = f" ({was} → {after.status})" if was is not after.status else ""
    out.print(
        f"{after.name}: {after.successes}/{after.uses} successful uses, {after.status}{moved}",
        markup=False,
    )


@procedures_cmd.command("match")
@click.argument("state", required=False, default="")
@click.option("--subject", help="Only this subject's.")
@click.option("--project", default="default", show_default=True)
@json_option
@click.pass_context
def match(ctx: click.Context, state: str, subject: str | None, project: str, as_json: bool) -> None:
    """The active procedures whose precondition STATE meets (`key=value,key=value`; none:
    those that need nothing), most supported first."""
    with memory(ctx) as mem:
        found = mem.match_procedures(state, subject, project)
    _show_procedures(found, as_json, "no active procedure matches")


def _procedure_dict(p: Procedure) -> dict[str, Any]:
    return {**p.model_dump(mode="json"), "name": p.name, "effectiveness": p.effectiveness}


def _show_procedures(found: list[Procedure], as_json: bool, empty: str) -> None:
    if as_json:
        emit([_procedure_dict(p) for p in found])
        return
    if not found:
        out.print(empty, markup=False)
        return
    table = Table(box=BOX)
    id_column(table)
    for column in ("subject", "procedure", "status", "support", "uses", "when"):
        table.add_column(column, overflow="fold")
    for p in found:
        uses = f"{p.successes}/{p.uses}" if p.uses else "-"
        table.add_row(p.id, p.subject, p.name, str(p.status), str(p.support), uses, p.precondition)
    out.print(table)


def _print_promoted(report: ProceduresReport) -> None:
    verb = "would create" if report.dry_run else "created"
    out.print(
        f"{report.scopes} subject(s): {verb} {report.created} procedure(s), "
        f"{report.promoted} promoted, {report.outcomes['recounted']} recounted, "
        f"{report.outcomes['unchanged']} unchanged"
        + (" (dry run: nothing written)" if report.dry_run else ""),
        markup=False,
    )
    for change in report.changes:
        out.print(f"- {change['subject']}: {change['reason']}", markup=False)
    for error in report.errors:
        out.print(f"refused: {error}", markup=False)


@click.group("topics")
def topics_cmd() -> None:
    """Topics: communities of entities that travel together in a subject's events, found by
    label propagation over the entities events name (their claims' entities, the model's,
    or the names their text spells)."""


@topics_cmd.command("list")
@click.option("--subject", help="Only this subject's.")
@click.option("--project", default="default", show_default=True)
@click.option("--all", "include_retired", is_flag=True, help="Retired topics too.")
@click.option("--query", help="Nearest first to these words (by embedding).")
@click.option("--limit", type=click.IntRange(min=1), help="At most this many.")
@json_option
@click.pass_context
def list_topics(
    ctx: click.Context,
    subject: str | None,
    project: str,
    include_retired: bool,
    query: str | None,
    limit: int | None,
    as_json: bool,
) -> None:
    """The topics of a project (of one subject)."""
    with memory(ctx) as mem:
        found = mem.topics(subject, project, include_retired, query, limit)
    if as_json:
        emit([_topic_dict(t) for t in found])
        return
    if not found:
        out.print(f"no topics in project {project!r}", markup=False)
        return
    table = Table(box=BOX)
    id_column(table)
    for column in ("subject", "topic", "members", "status"):
        table.add_column(column, overflow="fold")
    for t in found:
        table.add_row(t.id, t.subject, t.name, ", ".join(t.names), str(t.status))
    out.print(table)


@topics_cmd.command("detect")
@scope_options
@click.option("--dry-run", is_flag=True, help="Report what would change; write nothing.")
@click.option(
    "--name-with-model",
    is_flag=True,
    help="Ask the model (--llm / DISTILL_LLM) to name new topics; any failure: member names.",
)
@json_option
@click.pass_context
def detect(
    ctx: click.Context,
    projects: tuple[str, ...],
    subject: str | None,
    dry_run: bool,
    name_with_model: bool,
    as_json: bool,
) -> None:
    """Link the events new since the last run to the entities they name, and find the
    communities again where they changed: new ones become topics, changed ones retire."""
    with memory(ctx, with_llm=name_with_model) as mem:
        if name_with_model and mem.llm is None:
            err.print("note: no model is configured (--llm / DISTILL_LLM): members' names stand")
        report = mem.detect_topics(
            projects=projects, subject=subject, dry_run=dry_run, name_with_model=name_with_model
        )
    if report.naming_stopped:
        err.print(
            f"note: the model stopped naming topics ({report.naming_stopped}); the rest are "
            "named by their members",
            markup=False,
        )
    if as_json:
        emit(report.to_dict())
    else:
        _print_detected(report)
    if report.errors:
        ctx.exit(1)


def _topic_dict(t: Topic) -> dict[str, Any]:
    return t.model_dump(mode="json", exclude={"embedding"}) | {"embedded": t.embedding is not None}


def _print_detected(report: TopicsReport) -> None:
    verb = "would create" if report.dry_run else "created"
    out.print(
        f"{report.scopes} subject(s), {report.events} new event(s), {report.mentions} "
        f"mention(s): {verb} {report.created} topic(s), {report.retired} retired"
        + (f", {report.capped} subject(s) with events left" if report.capped else "")
        + (" (dry run: nothing written)" if report.dry_run else ""),
        markup=False,
    )
    for change in report.changes:
        out.print(f"- {change['subject']}: {change['action']} {change['topic']}", markup=False)
    for error in report.errors:
        out.print(f"refused: {error}", markup=False)


for _group in (procedures_cmd, topics_cmd):
    for _command in _group.commands.values():
        _command.params.append(db_option())
