"""The tables the commands print: facts, search hits, a fact's observations, conflicts, the
audit log, and what a consolidation run did.

An id is what a person copies into `history`, `pin` and `resolve`, so no table ever cuts
one: an id column is as wide as its ids and never wraps, and the room a narrow terminal
lacks is taken from the text columns, which wrap. At 80 columns every table keeps whole
ids: a cell that holds an id holds nothing else on its line, and the columns beside it are
short or wrap (dates on two lines, a pass above its action).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from rich import box
from rich.table import Table
from rich.text import Text

from distill.core.identity import fact_text
from distill.core.models import AuditEntry, ConflictSet, Fact, Observation, Resolver
from distill.core.recall import Hit

# The lighter box spends 2 columns per column boundary instead of 3: at 80 columns that is
# the room the text beside a 32-character id needs.
BOX = box.SIMPLE_HEAVY


def titled_table(title: str) -> Table:
    return Table(title=title, box=BOX, show_edge=False, pad_edge=False, title_justify="left")


def id_column(table: Table, header: str = "id") -> None:
    # min_width: rich's last resort when a table is too wide shrinks every column, even one
    # that does not wrap; the minimum keeps an id whole.
    table.add_column(header, no_wrap=True, min_width=len("0" * 32))


def _when(at: datetime) -> str:
    """Day and time on two lines, so a date column is 10 characters wide."""
    return at.strftime("%Y-%m-%d\n%H:%M")


def fact_table(found: Sequence[Fact], title: str) -> Table:
    """The fact's text, and under it when it was true and on how much evidence."""
    table = titled_table(title)
    id_column(table)
    table.add_column("subject", min_width=len("subject"), overflow="fold")
    table.add_column("status", no_wrap=True)
    table.add_column("fact", ratio=1, overflow="fold")
    for f in found:
        until = f"{f.valid_to:%Y-%m-%d %H:%M}" if f.valid_to else "now"
        sources = len(f.source_event_ids)
        evidence = f"{sources} source{'s' if sources != 1 else ''}"
        if f.reinforcement_count:
            evidence += f", reinforced {f.reinforcement_count}×"
        table.add_row(
            f.id,
            f.subject,
            f.status.value,
            Text.assemble(
                ("📌 " if f.pinned else "") + f.text,
                (f"\n{f.valid_from:%Y-%m-%d %H:%M} → {until}; {evidence}", "dim"),
            ),
        )
    return table


def hit_table(hits: Sequence[Hit], title: str) -> Table:
    """What `search` found, best first: the fact as `fact_table` shows it, with its score,
    the arms that found it and whether it is contested, and under it the evidence events
    (their dates and words; their ids are in `--json`) when the search was asked for them."""
    table = titled_table(title)
    table.add_column("score", no_wrap=True)
    id_column(table)
    table.add_column("subject", min_width=len("subject"), overflow="fold")
    table.add_column("fact", ratio=1, overflow="fold")
    for h in hits:
        f = h.fact
        until = f"{f.valid_to:%Y-%m-%d}" if f.valid_to else "now"
        found_by = ", ".join(f"{arm} #{part['rank']}" for arm, part in h.parts.items())
        lines: list[str | tuple[str, str]] = [
            ("📌 " if f.pinned else "") + f.text,
            (f"\n{f.valid_from:%Y-%m-%d} → {until}; found by {found_by}", "dim"),
        ]
        if h.contested:
            lines.append(("\ncontested: " + ", ".join(h.conflict_ids), "yellow"))
        for event in h.events:
            lines.append((f"\n· {event.occurred_at:%Y-%m-%d}: {event.text}", "dim"))
        table.add_row(f"{h.score:.3f}", f.id, f.subject, Text.assemble(*lines))
    return table


def observation_table(observations: Sequence[Observation], title: str) -> Table:
    table = titled_table(title)
    id_column(table, "event")
    table.add_column("occurred", no_wrap=True)
    table.add_column("claimed", ratio=1, overflow="fold")
    table.add_column("outcome", overflow="fold")
    for o in observations:
        claim = o.claim
        said = (
            fact_text(claim.predicate, claim.value, claim.qualifiers)
            if claim.predicate and claim.value is not None
            else claim.text or ""
        )
        table.add_row(
            o.event_id,
            _when(o.occurred_at),
            f"{said}\n({o.source}, {o.trust.value})",
            o.outcome.value,
        )
    return table


CLOSERS = {Resolver.PERSON: "a person", Resolver.MODEL: "the model", Resolver.CLAIM: "a claim"}


def conflict_table(found: Sequence[ConflictSet], members: dict[str, Fact]) -> Table:
    """One row for each set (its id, kind, status, who closed it and its reason), then one row
    for each member (its id, status, whether it was kept, and its text), so that every id
    stands alone in the id column."""
    table = titled_table("conflicts")
    id_column(table)
    table.add_column("subject", min_width=len("subject"), overflow="fold")
    table.add_column("what", no_wrap=True)
    table.add_column("fact or reason", ratio=1, overflow="fold")
    for c in found:
        what = f"{c.kind.value}, {c.status.value}"
        if c.resolved_by is not None:
            what += f"\nby {CLOSERS[c.resolved_by]}"
        table.add_row(c.id, c.subject, what, c.reason)
        for m in c.member_ids:
            fact = members[m]
            kept = ", kept" if m == c.kept_fact_id else ""
            table.add_row(m, "", f"└ {fact.status.value}{kept}", fact.text)
        table.add_section()
    return table


def audit_table(entries: Sequence[AuditEntry], title: str, subjects: bool = True) -> Table:
    """The fact an entry concerns stands above its reason, in a column as wide as an id."""
    table = titled_table(title)
    table.add_column("at", no_wrap=True)
    if subjects:
        table.add_column("subject", min_width=len("subject"), overflow="fold")
    table.add_column("pass / action", overflow="fold")
    table.add_column("fact / reason", ratio=1, min_width=32, overflow="fold")
    for e in entries:
        cells = [_when(e.at)]
        if subjects:
            cells.append(e.subject)
        cells.append(f"{e.pass_name}\n{e.action}")
        cells.append(f"{e.fact_id}\n{e.reason}" if e.fact_id else e.reason)
        table.add_row(*cells)
    return table


def run_table(counters: dict[str, int], dry_run: bool) -> Table:
    table = titled_table("dry run: nothing was written" if dry_run else "consolidation")
    table.add_column("counter")
    table.add_column("value", justify="right")
    for name, value in counters.items():
        if value:
            table.add_row(name, str(value))
    return table


def plan_summary(actions: Sequence[dict[str, Any]]) -> str:
    """A dry run's plan in one line: how many actions of each kind, most frequent first."""
    kinds = Counter(a["action"] for a in actions)
    return f"the plan has {len(actions)} action(s): " + ", ".join(
        f"{n} {kind}" for kind, n in kinds.most_common()
    )


def status_table(data: dict[str, Any]) -> Table:
    table = titled_table(f"distill — {data['database']}")
    table.add_column("what", no_wrap=True)
    table.add_column("", overflow="fold")
    table.add_row("events", str(data["events"]))
    for name, count in sorted(data["facts"].items()):
        table.add_row(f"facts {name}", str(count))
    for name, count in sorted(data["jobs"].items()):
        table.add_row(f"jobs {name}", str(count))
    waiting = ", ".join(f"{p} {n}" for p, n in (data.get("backlog") or {}).items() if n)
    table.add_row("events waiting", waiting or "none")
    kinds = ", ".join(f"{n} {kind}" for kind, n in data["open_conflicts_by_kind"].items() if n)
    shown = f"{data['open_conflicts']} ({kinds})" if kinds else str(data["open_conflicts"])
    table.add_row("open conflicts", shown)
    # The summarise pass's counts (`consolidations` and `facts_consolidated` in --json, as the
    # GrayMatter seed names them), said for what they are beside the other passes'.
    table.add_row(
        "summarise",
        f"{data.get('consolidations', 0)} summary(ies) written, "
        f"{data.get('facts_consolidated', 0)} memory(ies) consumed",
    )
    derived = data.get("derive") or {}
    table.add_row(
        "derive",
        f"{derived.get('cycles', 0)} cycle(s), {derived.get('facts_derived', 0)} fact(s) "
        f"derived, {derived.get('facts_invalidated', 0)} invalidated",
    )
    for name in ("procedures", "topics"):
        kept = data.get(name) or {}
        table.add_row(name, ", ".join(f"{n} {status}" for status, n in kept.items()) or "0")
    unstable = data.get("unstable_subjects") or []
    shown = ", ".join(f"{u['project']}/{u['subject']}" for u in unstable[:5])
    more = f" (+{len(unstable) - 5})" if len(unstable) > 5 else ""
    table.add_row("unstable subjects", f"{len(unstable)}: {shown}{more}" if unstable else "0")
    table.add_section()
    table.add_row("embedder", data["embedder"])
    table.add_row("extractor", data["extractor"])
    table.add_row("LLM", data["llm"])
    usage = data["llm_usage"]
    table.add_row("LLM calls (all models)", str(usage["calls"]))
    table.add_row("LLM prompt tokens", str(usage["prompt_tokens"]))
    table.add_row("LLM completion tokens", str(usage["completion_tokens"]))
    return table


def running_table(jobs: Sequence[dict[str, Any]]) -> Table:
    table = titled_table("running jobs")
    id_column(table, "job")
    for column in ("subject", "owner", "for"):
        table.add_column(column, overflow="fold")
    for job in jobs:
        table.add_row(job["id"], job["subject"], job["owner"] or "?", job["age"])
    return table


def schedule_table(rows: Sequence[dict[str, Any]], backlog: dict[str, int]) -> Table:
    """The scheduled passes: each one's last run, next due time, health and last report;
    the title says each project's backlog (events waiting for consolidation)."""
    waiting = ", ".join(f"{p} {n}" for p, n in backlog.items() if n)
    table = titled_table(f"scheduled passes (backlog: {waiting or 'none'})")
    for column in ("project", "pass", "last run", "next due", "health"):
        table.add_column(column, overflow="fold")
    table.add_column("last report / error", overflow="fold")
    for row in rows:
        report = row["last_report"] or {}
        said = row["last_error"] or ", ".join(
            f"{k} {v}" for k, v in report.items() if isinstance(v, int) and v and k != "pass"
        )
        # Month, day and minute, UTC: a row stays on one line at 80 columns.
        last = row["last_run_at"][5:16].replace("T", " ") if row["last_run_at"] else "never"
        due = row["due_at"][5:16].replace("T", " ")
        if row["retry_at"]:
            due += f" (retry {row['retry_at'][11:16]})"
        table.add_row(row["project"], row["pass"], last, due, row["health"], said or "-")
    return table
