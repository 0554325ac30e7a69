"""Bytes on disk per event: a fresh SQLite store, N events, one consolidation, then every
table and index measured.

    python bench/storage.py                             # 50,000 events, the default embedder
    python bench/storage.py --n 5000 --embedder hashing --json

A fresh process opens `Memory(path)` as a user would (the local embedder unless told
otherwise; event texts not embedded), adds N events in batches of 1,000, runs one
`consolidate()` and closes the store. The file is then measured through SQLite's `dbstat`
virtual table: the pages of every b-tree (each table, each index, SQLite's automatic
indexes of PRIMARY KEY and UNIQUE), grouped under the table they belong to, in bytes per
event. Also: the file's size (after a WAL checkpoint; free pages included), the raw event
text (the UTF-8 bytes of the events' `text`) and the file's ratio to it.

Target: ≤ 120 MB (10^6 bytes) for 50,000 events, 2,400 bytes per event; at another N the
same bytes per event.

The events (`--mix`):
- `claims` (default): bench/consolidate.py's claim events, as a user's agent writes them
  with `distill add --file`: "I have 3 bikes now (note 17)" with the structured claim
  `bike_count = {"count": 3}`, over N/100 subjects; 8 attributes with a few values each, so
  repeats (reinforcements), changes (half as `supersede`, half as `create`: conflicts, then
  dated events) and returns to an earlier value. Every claim is a state fact with an
  identity vector. This mix gave the user's figure (296 MB at 50,000; see BENCHMARKS.md).
- `chat`: short chat messages through the `text` extractor, each sentence a free-text
  memory (no vector): small talk that repeats ("Thanks, that helps.") and first-person
  statements that recur now and then.
- `mixed`: each event a chat message or a claim event, half and half.
"""

from __future__ import annotations

import json
import random
import sqlite3
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from itertools import islice
from pathlib import Path
from typing import Any

import click

# Measure the checkout this file is in, not whichever `distill` is installed: a schema change
# is what this bench exists to compare.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from consolidate import iter_events, machine  # bench/ is on the path when run as a script
from rich.console import Console
from rich.table import Table

TARGET_MB_AT_50K = 120.0  # MB for 50,000 events: what a user asked for (they measured 296)
TARGET_BYTES_PER_EVENT = TARGET_MB_AT_50K * 1e6 / 50_000  # 2,400 bytes
MIXES = ("claims", "chat", "mixed")
BATCH = 1_000  # events per add_events call, as bench/rss.py

SMALL_TALK = [
    "Thanks, that helps.",
    "Sounds good!",
    "Good morning!",
    "Can you remind me later?",
    "Never mind, I found it.",
    "Haha, true.",
    "Let me think about it.",
    "See you tomorrow.",
]
STATEMENTS = [
    "I had {food} for lunch today.",
    "My sister lives in {city} now.",
    "We watched {film} last night.",
    "I'm reading {book} at the moment.",
    "I need to call the dentist on {day}.",
    "The meeting with {name} moved to {day}.",
    "I'm trying to cut down on {food}.",
    "Remember that {name} is allergic to {food}.",
]
FILLS = {
    "food": ["pasta", "sushi", "ramen", "salad", "tacos", "curry", "coffee", "cheese"],
    "city": ["Lyon", "Paris", "Berlin", "Oslo", "Lisbon", "Austin", "Kyoto", "Turin"],
    "film": ["Heat", "Alien", "Arrival", "Amelie", "Up", "Jaws", "Psycho", "Ran"],
    "book": ["Dune", "Emma", "Ulysses", "Beloved", "Middlemarch", "Solaris", "Kindred"],
    "day": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"],
    "name": ["Anna", "Tom", "Priya", "Kenji", "Lena", "Omar", "Sofia", "Marc"],
}


def chat_message(rng: random.Random) -> str:
    """One or two short sentences: small talk (a third of them) or a first-person statement."""
    if rng.random() < 1 / 3:
        return rng.choice(SMALL_TALK)
    sentence = rng.choice(STATEMENTS)
    text = sentence.format(**{k: rng.choice(v) for k, v in FILLS.items()})
    if rng.random() < 0.25:
        text = f"{rng.choice(SMALL_TALK)} {text}"
    return text


def iter_mix(mix: str, n: int, seed: int = 11) -> Iterator[dict[str, Any]]:
    """N events of a mix, generated as they are added (the bench holds none of them)."""
    if mix == "claims":
        yield from iter_events(n)
        return
    rng = random.Random(seed)
    claims = iter_events(n, seed)
    subjects = max(1, n // 100)
    start = datetime(2024, 1, 1, tzinfo=UTC)
    for i in range(n):
        claim_event = next(claims)
        if mix == "mixed" and rng.random() < 0.5:
            yield claim_event
            continue
        yield {
            "subject": f"user-{rng.randrange(subjects)}",
            "text": chat_message(rng),
            "occurred_at": (start + timedelta(minutes=i)).isoformat(),
        }


def measure_btrees(path: Path) -> list[dict[str, Any]]:
    """Every b-tree of the file with the table it belongs to and its bytes (whole pages)."""
    db = sqlite3.connect(path)
    try:
        owners = {
            name: table for name, table in db.execute("SELECT name, tbl_name FROM sqlite_schema")
        }
        try:
            found = db.execute(
                "SELECT name, sum(pgsize) AS bytes FROM dbstat GROUP BY name"
            ).fetchall()
        except sqlite3.OperationalError as exc:
            raise click.ClickException(
                f"this Python's SQLite ({sqlite3.sqlite_version}) has no dbstat table ({exc}): "
                "it was built without SQLITE_ENABLE_DBSTAT_VTAB; use a Python whose SQLite "
                "has it (CPython's official builds do)"
            ) from exc
    finally:
        db.close()
    return [
        {"table": owners.get(name, name), "btree": name, "bytes": int(size)} for name, size in found
    ]


def event_text_bytes(path: Path) -> int:
    db = sqlite3.connect(path)
    try:
        query = "SELECT coalesce(sum(length(CAST(text AS BLOB))), 0) FROM events"
        return int(db.execute(query).fetchone()[0])
    finally:
        db.close()


def run(n: int, embedder: str, mix: str, keep: Path | None) -> dict[str, Any]:
    from distill import Memory

    with tempfile.TemporaryDirectory() as tmp:
        path = keep if keep is not None else Path(tmp) / "storage.db"
        for leftover in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
            leftover.unlink(missing_ok=True)
        began = time.perf_counter()
        with Memory(path, embedder=embedder) as mem:
            events = iter_mix(mix, n)
            while batch := list(islice(events, BATCH)):
                mem.add_events(batch)
            report = mem.consolidate()
            model_id = mem.embedder.model_id
        seconds = time.perf_counter() - began
        db = sqlite3.connect(path)
        try:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            free_pages, page_size = (
                db.execute("PRAGMA freelist_count").fetchone()[0],
                db.execute("PRAGMA page_size").fetchone()[0],
            )
            version = db.execute("SELECT max(version) FROM schema_migrations").fetchone()[0]
        finally:
            db.close()
        file_bytes = path.stat().st_size
        btrees = measure_btrees(path)
        text_bytes = event_text_bytes(path)
    return summarise(
        n=n,
        mix=mix,
        embedder=model_id,
        schema_version=version,
        seconds=round(seconds, 1),
        counters={k: v for k, v in report.counters().items() if v},
        file_bytes=file_bytes,
        free_bytes=free_pages * page_size,
        text_bytes=text_bytes,
        btrees=btrees,
    )


def summarise(btrees: list[dict[str, Any]], **run: Any) -> dict[str, Any]:
    n, file_bytes, text_bytes = run["n"], run["file_bytes"], run["text_bytes"]
    tables: dict[str, dict[str, Any]] = {}
    for b in sorted(btrees, key=lambda b: -b["bytes"]):
        table = tables.setdefault(b["table"], {"table": b["table"], "bytes": 0, "btrees": []})
        table["bytes"] += b["bytes"]
        table["btrees"].append(
            {"btree": b["btree"], "bytes": b["bytes"], "per_event": round(b["bytes"] / n, 1)}
        )
    ordered = sorted(tables.values(), key=lambda t: -t["bytes"])
    for t in ordered:
        t["mb"] = round(t["bytes"] / 1e6, 2)
        t["per_event"] = round(t["bytes"] / n, 1)
    per_event = file_bytes / n
    met = per_event <= TARGET_BYTES_PER_EVENT
    target = f"≤ {TARGET_BYTES_PER_EVENT:,.0f} B/event (≤ {TARGET_MB_AT_50K:.0f} MB at 50,000)"
    return {
        **run,
        "file_mb": round(file_bytes / 1e6, 2),
        "bytes_per_event": round(per_event, 1),
        "text_mb": round(text_bytes / 1e6, 2),
        "ratio_to_text": round(file_bytes / text_bytes, 1) if text_bytes else None,
        "target_bytes_per_event": TARGET_BYTES_PER_EVENT,
        "met": met,
        "tables": ordered,
        "summary": [
            {
                "metric": f"SQLite file, {n:,} {run['mix']} events, bytes/event",
                "value": round(per_event, 1),
                "target": target,
                "met": met,
            },
            {
                "metric": f"SQLite file, {n:,} {run['mix']} events, MB",
                "value": round(file_bytes / 1e6, 1),
                "target": f"≤ {TARGET_BYTES_PER_EVENT * n / 1e6:,.1f}",
                "met": met,
            },
        ],
    }


def print_table(result: dict[str, Any], detail: bool) -> None:
    n = result["n"]
    title = (
        f"SQLite bytes per event: {n:,} {result['mix']} events, {result['embedder']}, "
        f"schema v{result['schema_version']}"
    )
    table = Table(title=title)
    for column in ("table / index", "MB", "bytes/event", "share"):
        table.add_column(column, justify="left" if column == "table / index" else "right")
    total = result["file_bytes"]
    for t in result["tables"]:
        table.add_row(
            f"[bold]{t['table']}[/]",
            f"{t['mb']:.2f}",
            f"{t['per_event']:,.0f}",
            f"{t['bytes'] / total:.0%}",
        )
        if detail and len(t["btrees"]) > 1:
            for b in t["btrees"]:
                table.add_row(
                    f"  {b['btree']}", f"{b['bytes'] / 1e6:.2f}", f"{b['per_event']:,.0f}", ""
                )
    table.add_row(
        "free pages", f"{result['free_bytes'] / 1e6:.2f}", f"{result['free_bytes'] / n:,.0f}", ""
    )
    table.add_row(
        "[bold]file[/]",
        f"[bold]{result['file_mb']:.2f}[/]",
        f"[bold]{result['bytes_per_event']:,.0f}[/]",
        "100%",
    )
    console = Console(width=120)
    console.print(table)
    verdict = "met" if result["met"] else "missed"
    console.print(
        f"event text {result['text_mb']:.2f} MB; file ÷ text = {result['ratio_to_text']}× · "
        f"target {result['summary'][0]['target']}: [bold]{verdict}[/] · "
        f"{result['seconds']} s · {machine()}"
    )


@click.command()
@click.option("--n", default=50_000, show_default=True, help="Events to add.")
@click.option(
    "--embedder", default="local", type=click.Choice(["local", "hashing"]), show_default=True
)
@click.option("--mix", default="claims", type=click.Choice(MIXES), show_default=True)
@click.option("--indexes/--tables-only", default=True, help="Show each b-tree under its table.")
@click.option(
    "--keep", type=click.Path(dir_okay=False, path_type=Path), help="Keep the database here."
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def main(n: int, embedder: str, mix: str, indexes: bool, keep: Path | None, as_json: bool) -> None:
    if n < 1:
        raise click.BadParameter("must be at least 1", param_hint="--n")
    result = {"machine": machine(), **run(n, embedder, mix, keep)}
    if as_json:
        print(json.dumps(result, indent=2))
        return
    print_table(result, indexes)


if __name__ == "__main__":
    main()
