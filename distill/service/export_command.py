"""`distill export`: a project's or a subject's events, facts, rules, procedures and topics as
JSON Lines (the format is described in `distill.export`)."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import IO

import click

from distill.adapters.store import open_store
from distill.export import DERIVED, EVENT, export_lines
from distill.ports import Store
from distill.service.terminal import err, json_flag, note_unknown_subject, out


@click.command("export")
@click.option("--project", default="default", show_default=True)
@click.option("--subject", help="Only this subject (default: the whole project).")
@click.option(
    "--out",
    "out_file",
    type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
    help="Write the lines to this file (replaced whole once complete) instead of stdout.",
)
@json_flag("Print the summary as JSON.")
@click.pass_context
def export_cmd(
    ctx: click.Context, project: str, subject: str | None, out_file: Path | None, as_json: bool
) -> None:
    """Write events, facts, rules, procedures and topics as JSON Lines, one {"type": "event" |
    "fact" | "rule" | "procedure" | "topic", ...} object a line; `distill add --file` reads
    the event lines back."""
    if out_file is not None and str(out_file) != "-" and not out_file.parent.is_dir():
        raise click.ClickException(f"--out: there is no folder {out_file.parent}")
    store, _ = open_store(ctx.obj["db"], must_exist=True)
    try:
        if out_file is None or str(out_file) == "-":
            counts = _write(store, project, subject, sys.stdout)
            sys.stdout.flush()
        else:
            counts = _write_file(store, project, subject, out_file)
        if subject is not None and not any(counts.values()):
            note_unknown_subject(store, project, subject)
    finally:
        store.close()
    to_file = out_file is not None and str(out_file) != "-"
    summary = {
        "project": project,
        "subject": subject,
        **{f"{kind}s": counts[kind] for kind in (EVENT, *DERIVED)},
        "out": str(out_file) if to_file else None,
    }
    if as_json:
        if to_file:  # stdout holds the lines otherwise
            click.echo(json.dumps(summary, indent=2, ensure_ascii=False))
        return
    who = f"subject {subject!r} of project {project!r}" if subject else f"project {project!r}"
    where = f" to {out_file}" if to_file else ""
    shown = [f"{counts[k]} {k}(s)" for k in (EVENT, *DERIVED) if counts[k] or k in (EVENT, "fact")]
    what = ", ".join(shown[:-1]) + f" and {shown[-1]}"
    message = f"exported {what} of {who}{where}"
    (out if to_file else err).print(message)


def _write(store: Store, project: str, subject: str | None, stream: IO[str]) -> Counter[str]:
    counts: Counter[str] = Counter(dict.fromkeys((EVENT, *DERIVED), 0))
    for line in export_lines(store, project, subject):
        stream.write(json.dumps(line, ensure_ascii=False) + "\n")
        counts[line["type"]] += 1
    return counts


def _write_file(store: Store, project: str, subject: str | None, path: Path) -> Counter[str]:
    """Write beside the file, then put it in place: a failed export leaves no half a file.
    The file is readable by its owner only (mkstemp's mode), as befits a person's memory."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            counts = _write(store, project, subject, stream)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return counts
