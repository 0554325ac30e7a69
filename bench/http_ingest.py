"""Sustained ingest over the HTTP API while its worker consolidates.

    python bench/http_ingest.py                      # 4 clients, 2,000 events, SQLite
    python bench/http_ingest.py --clients 8 --events 5000 --embedder local

`distill serve` runs in its own process on 127.0.0.1 (a fresh SQLite file, no keys: the
loopback default project) with its background worker. `--clients` threads each post single
events (`POST /v1/events`, one claim each, over 50 subjects) as fast as the server answers,
each on its own keep-alive connection, until `--events` are accepted. The bench reports the
latency of `POST /v1/events` (p50, p99), the accepted events per second while the worker was
consolidating behind them, how long the worker took to catch up after the last one, and
whether every accepted event became the source of a fact (read from the database itself
once the server has stopped). Exit status 1 if any event was lost.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import click
import httpx
from rich.console import Console
from rich.table import Table

SUBJECTS = 50
READY_TIMEOUT = 60.0  # seconds for the server (and its model) to start
CATCH_UP_TIMEOUT = 600.0  # seconds for the worker to consolidate what was accepted


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def event(n: int) -> dict[str, Any]:
    return {
        "subject": f"u{n % SUBJECTS}",
        "text": f"Note {n}: the locker code is {n * 7919 % 100000}.",
        "occurred_at": "2024-05-01T10:00:00Z",
        "claims": [{"predicate": f"locker_code_{n}", "value": {"code": n * 7919 % 100000}}],
    }


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def wait_until(ready: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.1)


def pending_jobs(client: httpx.Client) -> int:
    jobs = client.get("/v1/status").json().get("jobs", {})
    return int(jobs.get("pending", 0)) + int(jobs.get("running", 0))


@click.command()
@click.option("--clients", default=4, show_default=True, type=click.IntRange(min=1))
@click.option("--events", default=2000, show_default=True, type=click.IntRange(min=10))
@click.option(
    "--embedder", default="hashing", show_default=True, type=click.Choice(["hashing", "local"])
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def main(clients: int, events: int, embedder: str, as_json: bool) -> None:
    """Measure ingest over HTTP (see the module docstring)."""
    db = Path(tempfile.mkdtemp(prefix="distill-bench-http-")) / "bench.db"
    port = free_port()
    env = {**os.environ, "DISTILL_DATABASE_URL": str(db), "DISTILL_EMBEDDER": embedder}
    server = subprocess.Popen(
        [sys.executable, "-m", "distill", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    latencies: list[float] = []
    accepted: list[str] = []
    lock = threading.Lock()
    counter = iter(range(events))
    try:
        with httpx.Client(base_url=base, timeout=5.0) as probe:

            def up() -> bool:
                try:
                    return probe.get("/healthz").status_code == 200
                except httpx.HTTPError:
                    return False

            wait_until(up, READY_TIMEOUT, "the server")

            def client_loop() -> None:
                with httpx.Client(base_url=base, timeout=30.0) as client:
                    while True:
                        with lock:
                            n = next(counter, None)
                        if n is None:
                            return
                        began = time.perf_counter()
                        answer = client.post("/v1/events", json=event(n))
                        took = (time.perf_counter() - began) * 1000
                        if answer.status_code != 202:
                            raise SystemExit(f"event {n}: {answer.status_code} {answer.text}")
                        with lock:
                            latencies.append(took)
                            accepted.extend(answer.json()["ids"])

            began = time.perf_counter()
            threads = [threading.Thread(target=client_loop) for _ in range(clients)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            ingest_s = time.perf_counter() - began
            wait_until(lambda: pending_jobs(probe) == 0, CATCH_UP_TIMEOUT, "consolidation")
            catch_up_s = time.perf_counter() - began - ingest_s
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)

    from distill import Memory

    with Memory(db, embedder="hashing") as mem:
        facts = mem.facts(include_retired=True)
    sourced = {e for f in facts for e in f.source_event_ids}
    lost = sorted(set(accepted) - sourced)
    result = {
        "clients": clients,
        "events": len(accepted),
        "embedder": embedder,
        "post_p50_ms": round(statistics.median(latencies), 2),
        "post_p99_ms": round(percentile(latencies, 0.99), 2),
        "events_per_s": round(len(accepted) / ingest_s, 1),
        "ingest_s": round(ingest_s, 2),
        "catch_up_s": round(catch_up_s, 2),
        "facts": len(facts),
        "events_without_fact": len(lost),
        "summary": [
            {
                "metric": "accepted events that became no fact",
                "value": len(lost),
                "target": "0",
                "met": not lost,
            }
        ],
    }
    if as_json:
        print(json.dumps(result, indent=2))
    else:
        table = Table(title=f"POST /v1/events on loopback, {clients} clients, {embedder} embedder")
        for name in ("events", "post_p50_ms", "post_p99_ms", "events_per_s", "catch_up_s",
                     "facts", "events_without_fact"):  # fmt: skip
            table.add_column(name, justify="right")
        table.add_row(*(str(result[k]) for k in (
            "events", "post_p50_ms", "post_p99_ms", "events_per_s", "catch_up_s", "facts",
            "events_without_fact")))  # fmt: skip
        Console().print(table)
    if lost:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
