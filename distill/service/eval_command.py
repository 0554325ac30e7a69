"""`distill eval SUITE`: measure Distill on public data and print what it found."""

from __future__ import annotations

import json
import platform
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from distill.adapters.embed import close_embedder
from distill.adapters.llm import PROVIDERS, close_llm
from distill.eval import SUITES, EvalContext, SuiteResult, default_data_dir, run_suite
from distill.eval.context import Progress as ProgressFn
from distill.eval.results import format_value
from distill.service.terminal import build_embedder, build_llm, err, json_flag, out


@click.command("eval")
@click.argument("suite", type=click.Choice([*SUITES, "all"]))
@click.option(
    "--data",
    "data_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="The folder holding the datasets (default: ../shared/data).",
)
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    help="Use only the first N items of each dataset (a quick slice).",
)
@click.option("--seed", default=0, show_default=True, help="Seed for shuffled arrival orders.")
@click.option(
    "--out",
    "out_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Where to write the JSON result (default: eval-results/SUITE.json).",
)
@click.option(
    "--llm",
    "llm_provider",
    type=click.Choice(PROVIDERS),
    help="A model for the judge suite to ask, and for locomo's judge pass (default: distill "
    "--llm / DISTILL_LLM; its name, URL and key from --llm-model, --llm-base-url and "
    "DISTILL_LLM_API_KEY).",
)
@click.option(
    "--passes/--no-passes",
    default=True,
    show_default=True,
    help="locomo: run the hygiene passes (dedupe; the judge too with a model) over the "
    "consolidated store and measure again.",
)
@click.option(
    "--offline",
    is_flag=True,
    help="locomo: the dedupe pass with its offline tier (close in meaning, every guard "
    "clean), as `distill dedupe --offline`.",
)
@click.option(
    "--summarise-gate",
    is_flag=True,
    help="locomo: the summariser's recall gate: scripted summarisers, faithful and lossy, "
    "over copies of the consolidated store, each measured against it.",
)
@json_flag("Print the JSON result instead of tables.")
@click.option("--markdown", is_flag=True, help="Print Markdown tables (for a report).")
@click.pass_context
def eval_cmd(
    ctx: click.Context,
    suite: str,
    data_dir: Path | None,
    limit: int | None,
    seed: int,
    out_file: Path | None,
    llm_provider: str | None,
    passes: bool,
    offline: bool,
    summarise_gate: bool,
    as_json: bool,
    markdown: bool,
) -> None:
    """Measure consolidation on public datasets (timelines, numeric-updates, pairs, locomo,
    which also runs the hygiene passes unless --no-passes), on the scenarios, on the
    held-out drift cases and on the judge golden set (these two ask a real model when given
    one: `distill eval judge --llm ollama`), or all. Prints a table per suite and writes a
    JSON result."""
    names = list(SUITES) if suite == "all" else [suite]
    embedder = build_embedder(ctx)
    # Only the judge suite and locomo's judge pass ask a model; the others must run whatever
    # DISTILL_LLM says, so the model is built only for them.
    if llm_provider is not None:
        ctx.obj["llm"] = {**ctx.obj["llm"], "provider": llm_provider}
    asking = "judge" in names or ("locomo" in names and passes)
    llm = build_llm(ctx) if asking else None
    try:
        # The suites provoke failures on purpose (a 429, a malformed answer) and report them
        # in their tables; the engine's logs about them stay quiet unless --verbose asks.
        with _progress(enabled=not as_json) as progress:
            context = EvalContext(
                data_dir=(data_dir or default_data_dir()).resolve(),
                limit=limit,
                seed=seed,
                embedder=embedder,
                progress=progress,
                llm=llm,
                hygiene=passes,
                offline=offline,
                summarise_gate=summarise_gate,
            )
            results = [run_suite(name, context) for name in names]
    finally:
        close_embedder(embedder)
        close_llm(llm)
    document = _document(suite, results, context)
    target = out_file or Path("eval-results") / f"{suite}.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    if as_json:
        out.print_json(json.dumps(document, ensure_ascii=False))
        return
    if markdown:
        click.echo(to_markdown(document, results))
        return
    for result in results:
        render(result)
    if len(results) > 1:
        out.print(summary_table(results))
    err.print(f"result written to {target}")


def _document(suite: str, results: list[SuiteResult], ctx: EvalContext) -> dict[str, Any]:
    return {
        "suite": suite,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": _commit(),
        "machine": f"{platform.machine()} {platform.system()} python {platform.python_version()}",
        "embedder": ctx.embedder if isinstance(ctx.embedder, str) else ctx.embedder.model_id,
        "data": str(ctx.data_dir),
        "results": [r.to_dict() for r in results],
    }


def _commit() -> str | None:
    """The commit measured, marked `-dirty` when the working tree differs from it."""
    here = Path(__file__).resolve().parent

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", *args], capture_output=True, text=True, cwd=here, timeout=5, check=False
        )
        return done.stdout.strip()

    try:
        commit = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except OSError:
        return None
    return f"{commit}-dirty" if commit and dirty else commit or None


def render(result: SuiteResult) -> None:
    table = Table(title=f"{result.title} ({result.suite}, {result.seconds:g} s)")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_column("target")
    table.add_column("")
    table.add_column("note")
    for m in result.metrics:
        mark = {True: "met", False: "MISSED", None: ""}[m.met]
        table.add_row(m.name, format_value(m.value), m.target or "", mark, m.note)
    out.print(table)
    for extra in result.tables:
        shown = Table(title=extra.title)
        for column in extra.columns:
            shown.add_column(column)
        for row in extra.rows:
            shown.add_row(*(format_value(v) for v in row))
        out.print(shown)
    for note in result.notes:
        out.print(f"  • {note}")
    for dataset in result.datasets:
        out.print(f"  data: {dataset.name} — {dataset.license}")
    out.print()


def to_markdown(document: dict[str, Any], results: list[SuiteResult]) -> str:
    """The same tables as Markdown, headed by when, where and on which commit they ran."""
    lines = [
        f"`distill eval {document['suite']}` — {document['date']}, commit {document['commit']},"
        f" {document['machine']}, embedder {document['embedder']}",
        "",
    ]
    if len(results) > 1:
        lines += _md_table(
            ["suite", "targets met", "missed", "seconds"],
            [r.summary_row() for r in results],
        )
    for r in results:
        lines += [f"### {r.title} ({r.suite}, {r.seconds:g} s)", ""]
        lines += _md_table(
            ["metric", "value", "target", "", "note"],
            [
                [m.name, format_value(m.value), m.target or "",
                 {True: "met", False: "**missed**", None: ""}[m.met], m.note]
                for m in r.metrics
            ],
        )  # fmt: skip
        for extra in r.tables:
            lines += [f"*{extra.title}*", ""]
            lines += _md_table(
                extra.columns, [[format_value(v) for v in row] for row in extra.rows]
            )
        lines += [f"- {note}" for note in r.notes]
        lines += [f"- data: {d.name} — {d.license}" for d in r.datasets]
        lines.append("")
    return "\n".join(lines)


def _md_table(columns: list[str], rows: list[list[Any]]) -> list[str]:
    def cell(value: Any) -> str:
        return str(value).replace("|", "\\|").replace("\n", " ")

    return [
        "| " + " | ".join(cell(c) for c in columns) + " |",
        "|" + "---|" * len(columns),
        *("| " + " | ".join(cell(v) for v in row) + " |" for row in rows),
        "",
    ]


def summary_table(results: list[SuiteResult]) -> Table:
    table = Table(title="distill eval all — summary")
    table.add_column("suite")
    table.add_column("targets met", justify="right")
    table.add_column("missed")
    table.add_column("seconds", justify="right")
    for r in results:
        table.add_row(*r.summary_row())
    return table


@contextmanager
def _progress(enabled: bool) -> Iterator[ProgressFn]:
    if not enabled:
        yield lambda _label, _done, _total: None
        return
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    )
    tasks: dict[str, Any] = {}

    def update(label: str, done: int, total: int) -> None:
        if label not in tasks:
            tasks[label] = bar.add_task(label, total=total)
        bar.update(tasks[label], completed=done, total=total)

    with bar:
        yield update
