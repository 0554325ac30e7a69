"""Commands by which a person decides what the memory holds: resolving a conflict set,
pinning a fact, retracting a wrong one, erasing a subject. Each takes ids (or their unique
prefixes) scoped to `--project`, and goes through `Memory`, so the one applier audits it."""

from __future__ import annotations

import click

from distill.core.models import Fact
from distill.service.terminal import emit, json_option, memory, out


@click.command("resolve")
@click.argument("conflict_id")
@click.option("--keep", help="The id of the fact to keep; omit to reject every held candidate.")
@click.option("--project", default="default", show_default=True)
@json_option
@click.pass_context
def resolve_cmd(
    ctx: click.Context, conflict_id: str, keep: str | None, project: str, as_json: bool
) -> None:
    """Resolve a conflict set by keeping one of its facts (ids, or the start of them)."""
    with memory(ctx) as mem:
        result = mem.resolve_conflict(conflict_id, keep=keep, project=project)
    if as_json:
        emit(result.model_dump(mode="json"))
    else:
        out.print(
            f"conflict {result.id} {result.status.value}; kept {result.kept_fact_id or 'none'}"
        )


@click.command()
@click.argument("fact_id")
@click.option("--unpin", is_flag=True, help="Remove the pin instead.")
@click.option("--project", default="default", show_default=True)
@json_option
@click.pass_context
def pin(ctx: click.Context, fact_id: str, unpin: bool, project: str, as_json: bool) -> None:
    """Pin a fact: automatic consolidation will never change it (FACT_ID: the id, or the
    start of it)."""
    with memory(ctx) as mem:
        fact = mem.pin(fact_id, pinned=not unpin, project=project)
    _done("pinned" if fact.pinned else "unpinned", fact, as_json)


@click.command()
@click.argument("fact_id")
@click.option("--reason", required=True, help="Why the fact is wrong (kept in the audit).")
@click.option("--project", default="default", show_default=True)
@json_option
@click.pass_context
def retract(ctx: click.Context, fact_id: str, reason: str, project: str, as_json: bool) -> None:
    """Retire a wrong fact: never served again, the reason kept in the audit, nothing deleted
    (FACT_ID: the id, or the start of it)."""
    with memory(ctx) as mem:
        fact = mem.retract(fact_id, reason=reason, project=project)
    _done("retracted", fact, as_json)


@click.command()
@click.option("--subject", help="The subject to forget; without it, --all-subjects.")
@click.option("--all-subjects", is_flag=True, help="Forget every subject of the project.")
@click.option("--project", default="default", show_default=True)
@click.option("--yes", is_flag=True, help="Confirm: this deletes, and cannot be undone.")
@json_option
@click.pass_context
def erase(
    ctx: click.Context,
    subject: str | None,
    all_subjects: bool,
    project: str,
    yes: bool,
    as_json: bool,
) -> None:
    """Forget a subject for good (right to be forgotten): its events, facts, vectors,
    observations, conflicts, jobs, kept model answers and audit entries are deleted; one
    audit entry with the counts remains."""
    if (subject is None) == (not all_subjects):
        raise click.UsageError("give --subject S, or --all-subjects for the whole project")
    if not yes:
        raise click.UsageError("erase deletes for good: add --yes to confirm")
    with memory(ctx) as mem:
        counts = mem.erase(project, subject)
    if as_json:
        emit({"project": project, "subject": subject, "erased": counts})
        return
    whom = f"subject {subject!r}" if subject is not None else "every subject"
    if not any(counts.values()):
        out.print(f"nothing to erase: no rows of {whom} in project {project!r}", markup=False)
        return
    done = ", ".join(f"{n} {kind}" for kind, n in counts.items())
    out.print(f"erased {whom} of project {project!r}: {done}", markup=False)


def _done(what: str, fact: Fact, as_json: bool) -> None:
    if as_json:
        emit(fact.model_dump(mode="json"))
    else:
        out.print(f"{what} {fact.id}: {fact.text}", markup=False)
