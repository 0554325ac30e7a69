"""`distill rules`: a subject's rules, the standing instructions an agent follows for it.

`list` shows them (a person's first, then the learned ones), `add` writes a person's rule,
and `promote` runs the pass that learns rules from the memories a subject keeps re-stating
(`--dry-run`, the scopes and the model's budget as every pass over stored memory takes them:
`hygiene_command`). What a rule is and what may become one: `distill.core.rules`.
"""

from __future__ import annotations

import click
from rich.table import Table

from distill.core.models import Rule
from distill.core.rules import PROMOTE_CORROBORATION_THRESHOLD, RULE_MAX_CHARS
from distill.passes.promote_rules import RULES_MAX_CALLS, RULES_MAX_TOKENS, PromoteReport
from distill.service.hygiene_command import (
    model_options,
    run_model_pass,
    run_notes,
    scope_options,
)
from distill.service.tables import BOX
from distill.service.terminal import db_option, emit, json_option, memory, out


@click.group("rules")
def rules_cmd() -> None:
    """A subject's rules: standing instructions the agent follows for it, shown first in
    its context. Append-only: written by a person, or learned from memories it keeps
    re-stating (promote)."""


@rules_cmd.command("list")
@click.argument("subject")
@click.option("--project", default="default", show_default=True)
@json_option
@click.pass_context
def list_rules(ctx: click.Context, subject: str, project: str, as_json: bool) -> None:
    """The rules of SUBJECT: a person's first, then the learned ones, oldest first."""
    with memory(ctx) as mem:
        found = mem.rules(subject, project)
    if as_json:
        emit([r.model_dump(mode="json") for r in found])
        return
    if not found:
        out.print(f"no rules for {subject!r} in project {project!r}", markup=False)
        return
    out.print(_lines(found), markup=False, highlight=False)


@rules_cmd.command(
    "add",
    help=f"Add a person's rule for SUBJECT: TEXT, one line of at most {RULE_MAX_CHARS} "
    'characters ("Always reply in British English"). A rule it has already (the same words, '
    "whatever the case and punctuation) is not added twice; no pass ever changes a rule.",
)
@click.argument("subject")
@click.argument("text")
@click.option("--project", default="default", show_default=True)
@json_option
@click.pass_context
def add_rule(ctx: click.Context, subject: str, text: str, project: str, as_json: bool) -> None:
    with memory(ctx) as mem:
        before = {r.id for r in mem.rules(subject, project)}
        rule = mem.add_rule(subject, text, project)
    if as_json:
        emit({**rule.model_dump(mode="json"), "added": rule.id not in before})
        return
    if rule.id in before:
        out.print(f"already a rule ({rule.origin}, {rule.id}): {rule.text}", markup=False)
    else:
        out.print(f"added rule {rule.id} for {rule.subject!r}: {rule.text}", markup=False)


@rules_cmd.command("promote")
@scope_options
@click.option("--dry-run", is_flag=True, help="Ask the model and report; write nothing.")
@model_options(RULES_MAX_CALLS, RULES_MAX_TOKENS)
@click.option(
    "--corroboration-threshold",
    type=click.IntRange(min=0),
    default=PROMOTE_CORROBORATION_THRESHOLD,
    show_default=True,
    help="Times a memory must have been re-observed to be offered.",
)
@json_option
@click.pass_context
def promote(
    ctx: click.Context,
    projects: tuple[str, ...],
    subject: str | None,
    dry_run: bool,
    llm_provider: str | None,
    max_calls: int,
    max_tokens: int,
    corroboration_threshold: int,
    as_json: bool,
) -> None:
    """Offer the memories re-observed often enough, new or changed since the last run, to
    the model (--llm / DISTILL_LLM); those it calls standing instructions become rules of
    their subject, once each. Every answer is checked: only memories it was offered, one
    line, a reason, nothing that would unseat the agent's instructions."""
    run_model_pass(
        ctx,
        llm_provider,
        "rules promote",
        lambda mem: mem.promote_rules(
            projects=projects,
            subject=subject,
            dry_run=dry_run,
            max_calls=max_calls,
            max_tokens=max_tokens,
            corroboration_threshold=corroboration_threshold,
        ),
        as_json,
        _print_promoted,
    )


def _lines(rules: list[Rule], subjects: bool = False) -> str:
    """One line a rule, its text first and whole (a table would wrap it)."""
    lines = []
    for r in rules:
        whose = f"{r.subject}, " if subjects else ""
        learned = f", from {', '.join(r.source_fact_ids)}" if r.source_fact_ids else ""
        since = r.created_at.date().isoformat()
        lines.append(f"- {r.text}  ({whose}{r.origin} {since}, {r.id}{learned})")
    return "\n".join(lines)


def _print_promoted(report: PromoteReport) -> None:
    verb = "would add" if report.dry_run else "added"
    tokens = report.usage.tokens
    out.print(
        f"offered {report.offered} memory(ies) in {report.scopes} subject(s) with "
        f"{report.usage.calls} call(s), {tokens:,} token(s); {verb} "
        f"{len(report.promoted)} rule(s); {report.not_rules} not a rule; "
        f"{len(report.already)} already a rule; {len(report.refused)} refused"
        + (" (dry run: nothing written)" if report.dry_run else ""),
        markup=False,
    )
    if report.promoted:
        out.print(_lines(report.promoted, subjects=True), markup=False, highlight=False)
    if report.refused:
        table = Table("memory", "rule", "refused because", box=BOX, show_edge=False)
        for r in report.refused:
            table.add_row(r.memory_id or r.alias, r.text or "-", f"{r.code}: {r.detail}")
        out.print(table)
    run_notes(report, "offers")


for _command in rules_cmd.commands.values():
    _command.params.append(db_option())
