"""Commands that keep stored memory clean: `distill dedupe`, `distill judge`,
`distill judge-identities` and `distill prune`, and the
options every pass over stored memory shares (`scope_options`, `pass_options`,
`model_options`, and `run_model_pass` for a pass that asks a model: `distill rules promote`
takes them too).

Each is a pass over what is stored, not over what arrives; each takes `--dry-run` (the same
report, nothing written), a project allowlist and the pass's per-run cap, and prints every
group it found, so that a person sees what was (or would be) retired and why.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import click
from rich.table import Table

from distill.adapters.llm import PROVIDERS
from distill.core.decay import HALF_LIFE_DAYS, MAX_PRUNES_PER_RUN, PRUNE_FLOOR
from distill.errors import ConfigurationError
from distill.memory import Memory
from distill.passes.asking import ModelRun
from distill.passes.dedupe import MAX_SUPERSEDES_PER_RUN, DedupeReport
from distill.passes.identity_judge import Judged
from distill.passes.memory_judge import JUDGE_MAX_CALLS, JUDGE_MAX_TOKENS, JudgeReport
from distill.passes.prune import PruneReport
from distill.service.tables import id_column
from distill.service.terminal import emit, err, json_option, memory, out

F = TypeVar("F", bound=Callable[..., Any])


class Reported(Protocol):
    def to_dict(self) -> dict[str, Any]: ...


R = TypeVar("R", bound=Reported)


# A project allowlist, for every pass over stored memory.
project_option = click.option(
    "--project",
    "projects",
    multiple=True,
    help="Only this project (repeat for several); every project by default.",
)


def scope_options(command: F) -> F:
    """The scopes a pass over stored memory may touch: a project allowlist, one subject."""
    for option in reversed(
        [
            project_option,
            click.option("--subject", help="Only this subject (of the projects given)."),
        ]
    ):
        command = option(command)
    return command


def pass_options(command: F) -> F:
    """What every pass that retires memories takes: its scopes and its per-run cap."""
    return scope_options(
        click.option(
            "--max-supersedes",
            type=click.IntRange(min=0),
            default=MAX_SUPERSEDES_PER_RUN,
            show_default=True,
            help="Memories one run retires at most; the rest wait for the next run.",
        )(command)
    )


# The model a pass asks: its provider, else `distill --llm`.
llm_option = click.option(
    "--llm",
    "llm_provider",
    type=click.Choice([p for p in PROVIDERS if p != "none"]),
    help="The model to ask (default: distill --llm / DISTILL_LLM; its name, "
    "URL and key from --llm-model, --llm-base-url and DISTILL_LLM_API_KEY).",
)


def model_options(max_calls: int, max_tokens: int) -> Callable[[F], F]:
    """What every pass that asks a model takes: the provider (else `distill --llm`) and the
    run's budget, with the pass's defaults."""

    def decorate(command: F) -> F:
        for option in reversed(
            [
                llm_option,
                click.option(
                    "--max-calls",
                    type=click.IntRange(min=0),
                    default=max_calls,
                    show_default=True,
                    help="Model calls one run makes at most.",
                ),
                click.option(
                    "--max-tokens",
                    type=click.IntRange(min=0),
                    default=max_tokens,
                    show_default=True,
                    help="Prompt and answer tokens one run spends at most.",
                ),
            ]
        ):
            command = option(command)
        return command

    return decorate


def run_model_pass(
    ctx: click.Context,
    provider: str | None,
    what: str,
    run: Callable[[Memory], R],
    as_json: bool,
    show: Callable[[R], None],
) -> None:
    """Run a pass that asks a model and print its report (`show`, or JSON): the model is
    `--llm` of the command if given, else distill's; none is an error that says how to give
    one."""
    if provider is not None:
        ctx.obj["llm"] = {**ctx.obj["llm"], "provider": provider}
    if ctx.obj["llm"]["provider"] == "none":
        raise ConfigurationError(
            f"{what} needs a model: set DISTILL_LLM (or --llm) to openai, ollama or "
            "anthropic, and DISTILL_LLM_MODEL"
        )
    run_and_show(ctx, run, as_json, show, with_llm=True)


def run_and_show(
    ctx: click.Context,
    run: Callable[[Memory], R],
    as_json: bool,
    show: Callable[[R], None],
    *,
    with_llm: bool = False,
) -> None:
    """Run a pass on distill's memory and print its report (`show`, or JSON)."""
    with memory(ctx, with_llm=with_llm) as mem:
        report = run(mem)
    if as_json:
        emit(report.to_dict())
        if getattr(report, "provider_down", None):  # exit 1, as without --json
            raise click.exceptions.Exit(1)
        return
    show(report)


def run_notes(report: ModelRun, verb: str) -> None:
    """What every pass that asks a model prints last: the memories no answer could be read
    for, where it stopped and why, and whether more waits than one run `verb`."""
    for failed in report.failed:
        out.print(f"no readable answer for memory {failed}: skipped", markup=False)
    said: dict[str, list[str]] = {}  # one line for a reason every scope gave (a budget)
    for stop in report.stopped:
        scope, _, why = stop.partition(": ")
        said.setdefault(why if why else stop, []).append(scope if why else "")
    for why, scopes in said.items():
        where = f"{scopes[0]}: " if len(scopes) == 1 and scopes[0] else ""
        many = f" ({len(scopes)} subjects)" if len(scopes) > 1 else ""
        out.print(f"stopped: {where}{why}{many}", markup=False)
    if report.capped:
        out.print(f"more memories wait than one run {verb}: run it again", markup=False)
    if report.provider_down:  # exit 1, as consolidate's: a script sees the model was away
        raise click.exceptions.Exit(1)


@click.command()
@pass_options
@click.option("--dry-run", is_flag=True, help="Report the groups; write nothing.")
@click.option(
    "--offline",
    is_flag=True,
    help="Also merge memories close in meaning when every guard passes (no model; off by "
    "default: see the README for what it misses).",
)
@json_option
@click.pass_context
def dedupe(
    ctx: click.Context,
    projects: tuple[str, ...],
    subject: str | None,
    dry_run: bool,
    offline: bool,
    max_supersedes: int,
    as_json: bool,
) -> None:
    """Merge stored memories that say the same thing in the same words (case, punctuation,
    spacing and Unicode forms folded): the most corroborated survives (a pinned one first)
    and absorbs the others' evidence; each duplicate is superseded by it, with a receipt.
    The same words in another order are reported, never merged. With --offline, also
    paraphrases the embedder puts within its calibrated distance that lose nothing."""
    run_and_show(
        ctx,
        lambda mem: mem.dedupe(
            projects=projects,
            subject=subject,
            dry_run=dry_run,
            max_supersedes=max_supersedes,
            offline=offline,
        ),
        as_json,
        _print,
    )


def _print(report: DedupeReport) -> None:
    verb = "would retire" if report.dry_run else "retired"
    if not report.groups and not report.errors:
        looked = f"{report.scopes} subject(s) with two or more memories looked at"
        out.print(f"no duplicate memories ({looked})")
        return
    table = Table()
    for column in ("project", "subject", "outcome"):
        table.add_column(column, overflow="fold")
    id_column(table, "survivor")
    for column in ("retired", "text"):  # ids folded whole onto the next line, never cut
        table.add_column(column, overflow="fold")
    for g in report.groups:
        group = g.group
        retired = ", ".join(group.retired) or "-"
        if group.pinned_skipped:
            retired += f" (pinned, kept: {', '.join(group.pinned_skipped)})"
        if group.capped:
            retired += f" (capped: {len(group.capped)} left for the next run)"
        outcome = {"report_only": "word order: report only", "offline": "offline tier: merged"}.get(
            group.merged, group.merged
        )
        table.add_row(g.project, g.subject, outcome, group.survivor, retired, group.text)
    out.print(table)
    out.print(
        f"{verb} {report.retired} memory(ies) in {report.merged_groups} group(s)"
        + (f" ({report.offline_groups} by the offline tier)" if report.offline_groups else "")
        + f"; {report.report_only} word-order group(s) reported; "
        f"{report.pinned_skipped} pinned kept; {report.capped} capped"
        + (" (dry run: nothing written)" if report.dry_run else "")
    )
    for error in report.errors:
        out.print(f"not applied: {error}", markup=False)


@click.command()
@pass_options
@click.option("--dry-run", is_flag=True, help="Ask the model and report; write nothing.")
@model_options(JUDGE_MAX_CALLS, JUDGE_MAX_TOKENS)
@json_option
@click.pass_context
def judge(
    ctx: click.Context,
    projects: tuple[str, ...],
    subject: str | None,
    dry_run: bool,
    llm_provider: str | None,
    max_calls: int,
    max_tokens: int,
    max_supersedes: int,
    as_json: bool,
) -> None:
    """Ask the model (--llm / DISTILL_LLM) about memories new since the last run, each beside
    its nearest stored ones: merge (the same fact), supersede (a changed state) or nothing.
    Every verdict is checked before it is applied: targets it was shown, pins, and nothing a
    merge would lose (a number, a negation, a name, a date, a condition)."""
    run_model_pass(
        ctx,
        llm_provider,
        "judge",
        lambda mem: mem.judge(
            projects=projects,
            subject=subject,
            dry_run=dry_run,
            max_calls=max_calls,
            max_tokens=max_tokens,
            max_changes=max_supersedes,
        ),
        as_json,
        _print_judged,
    )


@click.command("judge-identities")
@project_option
@click.option("--dry-run", is_flag=True, help="Ask the model and report; write nothing.")
@llm_option
@click.option(
    "--max-pairs",
    type=click.IntRange(min=0),
    default=None,
    help="Pairs one run asks about at most (20 a call); every open pair by default.",
)
@click.option(
    "--max-tokens",
    type=click.IntRange(min=0),
    default=None,
    help="No call begun once this many prompt and answer tokens are spent; no limit by default.",
)
@json_option
@click.pass_context
def judge_identities(
    ctx: click.Context,
    projects: tuple[str, ...],
    dry_run: bool,
    llm_provider: str | None,
    max_pairs: int | None,
    max_tokens: int | None,
    as_json: bool,
) -> None:
    """Put the open identity sets (two names that may be one attribute, e.g. `gp` and
    `primary_care_physician`) to the model and apply its verdicts as a person's would be:
    one attribute keeps the newer value and learns the alias, two closes the set. A run of
    `distill consolidate` does this for the projects it touched; this reaches the others.
    Pairs with a pinned member or a less trusted newer value stay with a person."""
    run_model_pass(
        ctx,
        llm_provider,
        "judge-identities",
        lambda mem: mem.judge_identities(
            projects=projects, dry_run=dry_run, max_pairs=max_pairs, max_tokens=max_tokens
        ),
        as_json,
        _print_identities,
    )


def _print_identities(report: Judged) -> None:
    verb = "would apply" if report.dry_run else "applied"
    out.print(
        f"asked about {report.asked} pair(s) in {report.projects} project(s) with "
        f"{report.usage.calls} call(s), {report.usage.tokens:,} token(s); {verb}: "
        f"{report.same} one attribute, {report.different} two; {report.skipped} left"
        + (" (dry run: nothing written)" if report.dry_run else "")
    )
    if report.stopped:
        err.print(f"the model stopped: {report.stopped}; the sets stay open")
    if report.capped:
        why = report.budget or "the --max-pairs cap"
        out.print(f"{report.capped} open pair(s) left for the next run ({why})")


def _print_judged(report: JudgeReport) -> None:
    verb = "would apply" if report.dry_run else "applied"
    tokens = report.usage.tokens
    out.print(
        f"judged {report.judged} memory(ies) in {report.scopes} subject(s) with "
        f"{report.usage.calls} call(s), {tokens:,} token(s); {verb}: {report.merged} merged, "
        f"{report.superseded} superseded; {report.contested} contested (the words show no "
        f"change: a conflict set each); {report.kept} kept; {len(report.refused)} refused"
        + (" (dry run: nothing written)" if report.dry_run else "")
    )
    if report.refused:
        table = Table()
        id_column(table, "memory")
        table.add_column("verdict")
        id_column(table, "target")
        table.add_column("refused because", overflow="fold")
        for r in report.refused:
            table.add_row(r.memory_id, r.action, r.target_id or "-", f"{r.code}: {r.detail}")
        out.print(table)
    run_notes(report, "judges")


@click.command()
@scope_options
@click.option("--dry-run", is_flag=True, help="Report what would be deleted; write nothing.")
@click.option(
    "--half-life-days",
    type=click.FloatRange(min=0, min_open=True),
    default=HALF_LIFE_DAYS,
    show_default=True,
    help="Days of staleness (since the last reinforcement) that halve a fact's weight.",
)
@click.option(
    "--floor",
    type=click.FloatRange(0, 1),
    default=PRUNE_FLOOR,
    show_default=True,
    help="Weight under which a tombstone may be deleted (0.05 at 90 days: ~13 months).",
)
@click.option(
    "--max-prunes",
    type=click.IntRange(min=0),
    default=MAX_PRUNES_PER_RUN,
    show_default=True,
    help="Tombstones one run deletes at most; the rest wait for the next run.",
)
@json_option
@click.pass_context
def prune(
    ctx: click.Context,
    projects: tuple[str, ...],
    subject: str | None,
    dry_run: bool,
    half_life_days: float,
    floor: float,
    max_prunes: int,
    as_json: bool,
) -> None:
    """Delete for good the tombstones (superseded or retracted facts) whose weight decayed
    below the floor: never a live or pinned fact, one in an open conflict, one a receipt
    still names, or one whose events no fact that stays would cite. Events are never
    deleted; each deleted fact leaves an audit entry."""
    run_and_show(
        ctx,
        lambda mem: mem.prune(
            projects=projects,
            subject=subject,
            dry_run=dry_run,
            half_life_days=half_life_days,
            floor=floor,
            max_prunes=max_prunes,
        ),
        as_json,
        _print_pruned,
    )


def _print_pruned(report: PruneReport) -> None:
    verb = "would delete" if report.dry_run else "deleted"
    if report.pruned:
        table = Table()
        for column in ("project", "subject"):
            table.add_column(column, overflow="fold")
        id_column(table, "fact")
        table.add_column("weight")
        for p in report.pruned:
            table.add_row(p.project, p.subject, p.fact_id, f"{p.weight:.4f}")
        out.print(table)
    kept = ", ".join(f"{n} {reason.replace('_', ' ')}" for reason, n in sorted(report.kept.items()))
    out.print(
        f"{verb} {len(report.pruned)} tombstone(s) in {report.scopes} subject(s) "
        f"(half-life {report.half_life_days:g} days, floor {report.floor:g}); "
        f"kept: {kept or 'none'}" + (" (dry run: nothing written)" if report.dry_run else "")
    )
    for error in report.errors:
        out.print(f"not applied: {error}", markup=False)
