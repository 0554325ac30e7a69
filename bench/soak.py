"""Soak: ingest faster than the worker can consolidate, under backpressure, then drain.

    python bench/soak.py                       # 120 s at 60 events/s, a 0.5 s model, bound 300
    python bench/soak.py --fail-every 5        # the same with a model failing 1 call in 5
    python bench/soak.py --seconds 300 --rate 80 --bound 500 --json

`distill serve` runs in its own process on 127.0.0.1 (a fresh SQLite file, the hashing
embedder, one background worker thread, the `llm` extractor) with a configuration file that
bounds each project's backlog (`[backlog] max_events = --bound`, `retry_after_seconds = 1`)
and keeps the worker's trigger (20 events a subject) with a 6 s timer instead of 15 minutes.
Its model is an OpenAI-compatible server in this process (`tests/llm_server.py`) that
answers each event with one memory after `--delay` seconds; with `--fail-every N`, every
Nth call answers 500 (the provider client retries it, as it would a real outage).

`--clients` threads post single events at `--rate` events/s in all, paced, over 20
subjects, for `--seconds`. A 429 is push-back: the client waits the `Retry-After` it was
given and sends the same event again. A sampler reads `/metrics` every half second for the
backlog. When the time is up the clients stop (an event still being pushed back is never
accepted, and counted as such), the worker drains, the server stops, and the database is
read: every accepted event must be the source of a fact, and no fact may come from an event
that was not accepted. Exit status 1 otherwise, or when the backlog passed its bound by more
than one event per client (the bound is soft by the requests admitted at the same instant).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import click
import httpx
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.llm_server import Model, Reply, Request, ScriptedServer, memory_of

SUBJECTS = 20
READY_TIMEOUT = 60.0  # seconds for the server to start
DRAIN_TIMEOUT = 900.0  # seconds for the worker to consolidate what was accepted
SAMPLE_S = 0.5  # seconds between two reads of the backlog
_BACKLOG = re.compile(r'^distill_backlog_events\{project="default"\} (\S+)$', re.MULTILINE)


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def event(n: int) -> dict[str, Any]:
    return {"subject": f"u{n % SUBJECTS}", "text": f"Person {n} keeps locker {n * 7919 % 99991}."}


class FlakyModel:
    """The scripted model, answering 500 on every `fail_every`th call (0: never)."""

    def __init__(self, delay: float, fail_every: int) -> None:
        self.model = Model(memory_of, delay=delay)
        self.fail_every = fail_every
        self.calls = 0
        self.failed = 0
        self.lock = threading.Lock()

    def __call__(self, request: Request) -> Reply:
        with self.lock:
            self.calls += 1
            failing = self.fail_every and self.calls % self.fail_every == 0
            self.failed += bool(failing)
        if failing:
            body = {"error": {"message": "injected outage", "type": "server_error"}}
            return Reply(500, body, delay=self.model.delay)
        return replace(self.model(request))


def backlog_of(client: httpx.Client) -> int | None:
    try:
        found = _BACKLOG.search(client.get("/metrics").text)
    except httpx.HTTPError:
        return None
    return int(float(found.group(1))) if found else 0


@click.command()
@click.option("--seconds", default=120.0, show_default=True, type=click.FloatRange(min=5))
@click.option("--rate", default=60.0, show_default=True, help="Events per second, all clients.")
@click.option("--clients", default=4, show_default=True, type=click.IntRange(min=1))
@click.option("--delay", default=0.5, show_default=True, help="Seconds per model call.")
@click.option("--bound", default=300, show_default=True, help="The backlog's bound (events).")
@click.option("--fail-every", default=0, show_default=True, help="A 500 every Nth call (0: none).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def main(
    seconds: float,
    rate: float,
    clients: int,
    delay: float,
    bound: int,
    fail_every: int,
    as_json: bool,
) -> None:
    """Soak the worker under backpressure (see the module docstring)."""
    tmp = Path(tempfile.mkdtemp(prefix="distill-soak-"))
    db, config = tmp / "soak.db", tmp / "distill.toml"
    config.write_text(
        f"[backlog]\nmax_events = {bound}\nretry_after_seconds = 1\n\n"
        # The default trigger (20 events a subject); its 15-minute timer is 6 s here, so that
        # the drain does not wait a quarter of an hour for the last few events of a subject.
        "[worker]\nmax_wait_minutes = 0.1\n\n"
        # The judge would ask the scripted model about every memory: not what is measured.
        "[schedule.passes.judge]\nenabled = false\n",
        encoding="utf-8",
    )
    model = FlakyModel(delay, fail_every)
    port = free_port()
    accepted: list[str] = []
    pushed_back = 0
    abandoned = 0
    posted = 0
    samples: list[int] = []
    lock = threading.Lock()
    ending = threading.Event()
    with ScriptedServer(default=model, keep_alive=True) as llm:
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("DISTILL_")},
            "DISTILL_DATABASE_URL": str(db),
            "DISTILL_EMBEDDER": "hashing",
            "DISTILL_LLM": "openai",
            "DISTILL_LLM_BASE_URL": llm.url + "/v1",
            "DISTILL_LLM_API_KEY": "soak",
            "DISTILL_EXTRACTOR": "llm",
            "DISTILL_CONFIG": str(config),
        }
        server = subprocess.Popen(
            [sys.executable, "-m", "distill", "serve", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            with httpx.Client(base_url=base, timeout=10.0) as probe:
                deadline = time.monotonic() + READY_TIMEOUT
                while backlog_of(probe) is None:
                    if time.monotonic() > deadline or server.poll() is not None:
                        raise SystemExit("the server did not start")
                    time.sleep(0.2)

                counter = iter(range(10**9))

                def client_loop(index: int) -> None:
                    nonlocal pushed_back, abandoned, posted
                    period = clients / rate
                    next_at = time.monotonic() + index * period / clients
                    with httpx.Client(base_url=base, timeout=60.0) as client:
                        while not ending.is_set():
                            time.sleep(max(0.0, next_at - time.monotonic()))
                            next_at += period
                            with lock:
                                n = next(counter)
                            while True:
                                answer = client.post("/v1/events", json=event(n))
                                with lock:
                                    posted += 1
                                if answer.status_code == 202:
                                    with lock:
                                        accepted.extend(answer.json()["ids"])
                                    break
                                if answer.status_code != 429:
                                    raise SystemExit(f"{answer.status_code} {answer.text}")
                                with lock:
                                    pushed_back += 1
                                if ending.wait(float(answer.headers["Retry-After"])):
                                    with lock:
                                        abandoned += 1
                                    return
                                next_at = time.monotonic()  # paced again from now

                def sampler() -> None:
                    with httpx.Client(base_url=base, timeout=10.0) as client:
                        while not ending.is_set():
                            found = backlog_of(client)
                            if found is not None:
                                samples.append(found)
                            ending.wait(SAMPLE_S)

                began = time.perf_counter()
                threads = [threading.Thread(target=client_loop, args=(i,)) for i in range(clients)]
                threads.append(threading.Thread(target=sampler))
                for t in threads:
                    t.start()
                time.sleep(seconds)
                ending.set()
                for t in threads:
                    t.join()
                ingest_s = time.perf_counter() - began
                deadline = time.monotonic() + DRAIN_TIMEOUT
                while backlog_of(probe) != 0:
                    if time.monotonic() > deadline:
                        raise SystemExit("the worker did not drain the backlog")
                    time.sleep(0.5)
                drain_s = time.perf_counter() - began - ingest_s
        finally:
            server.send_signal(signal.SIGTERM)
            _, stderr = server.communicate(timeout=60)

    from distill import Memory

    with Memory(db, embedder="hashing") as mem:
        facts = mem.facts(subject=None, include_retired=True)
        stored = sum(1 for _ in mem.store.iter_events("default"))
    sourced = {e for f in facts for e in f.source_event_ids}
    lost = sorted(set(accepted) - sourced)
    strays = sorted(sourced - set(accepted))
    peak = max(samples, default=0)
    result = {
        "seconds": seconds,
        "rate_asked": rate,
        "clients": clients,
        "model_delay_s": delay,
        "fail_every": fail_every,
        "bound": bound,
        "posted": posted,
        "accepted": len(accepted),
        "pushed_back": pushed_back,
        "push_back_rate": round(pushed_back / max(posted, 1), 3),
        "abandoned_at_end": abandoned,
        "accepted_per_s": round(len(accepted) / ingest_s, 1),
        "backlog_peak": peak,
        "backlog_samples": len(samples),
        "drain_s": round(drain_s, 1),
        "model_calls": model.calls,
        "model_failures": model.failed,
        "events_stored": stored,
        "facts": len(facts),
        "accepted_without_fact": len(lost),
        "facts_from_unaccepted": len(strays),
        "server_errors_logged": stderr.count("Traceback"),
    }
    over = peak > bound + clients
    if as_json:
        print(json.dumps(result, indent=2))
    else:
        table = Table(title="soak: ingest above the worker's rate, then drain")
        table.add_column("measure")
        table.add_column("value", justify="right")
        for key, value in result.items():
            table.add_row(key, str(value))
        Console().print(table)
    if lost or strays or over or stored != len(accepted):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
