"""`distill worker` and `distill serve` as an operator runs them: the default trigger (20
events or 15 minutes) with what waits shown in the context, the worker's own Prometheus
metrics, and SIGHUP reloading the schedule of a running server."""

from __future__ import annotations

import json
import os
import re
import signal

import httpx

from tests.processes import Processes, wait_until

METRICS = re.compile(r"metrics: (http://\S+/metrics)")


def add(processes: Processes, db: str, count: int, start: int = 0) -> None:
    lines = [
        json.dumps(
            {
                "subject": "u1",
                "text": f"Remark {n}.",
                "occurred_at": f"2024-05-{1 + n:02d}T12:00:00+00:00",
                "claims": [{"predicate": f"remark_{n}", "value": {"n": n}}],
            }
        )
        for n in range(start, start + count)
    ]
    path = processes.tmp / f"events-{start}.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert processes.run(db, "add", "--file", str(path)).returncode == 0


def test_by_default_a_subject_waits_for_twenty_events_and_its_context_shows_them(
    processes: Processes,
) -> None:
    db = str(processes.tmp / "m.db")
    add(processes, db, 3)

    once = processes.run(db, "worker", "--once", "--no-schedule")
    assert once.returncode == 0, once.stderr
    assert "stopped: 0 job(s) done" in once.stderr  # 3 events: the trigger waits for 20
    context = processes.run(db, "context", "u1")
    assert "Said recently, not consolidated yet" in context.stdout
    assert "- Remark 2. (2024-05-03)" in context.stdout  # what was said is not hidden

    add(processes, db, 17, start=3)  # 20 now
    again = processes.run(db, "worker", "--once", "--no-schedule")
    assert "stopped: 1 job(s) done" in again.stderr, again.stderr
    facts = processes.run(db, "facts", "--subject", "u1", "--json")
    assert len(json.loads(facts.stdout)) == 20
    assert "Said recently" not in processes.run(db, "context", "u1").stdout

    # `distill consolidate` forces what waits, whatever it holds.
    add(processes, db, 1, start=20)
    assert processes.run(db, "consolidate").returncode == 0
    assert len(json.loads(processes.run(db, "facts", "--subject", "u1", "--json").stdout)) == 21


def test_a_worker_serves_its_metrics_while_it_runs(processes: Processes) -> None:
    db = str(processes.tmp / "m.db")
    processes.env["DISTILL_WORKER__MIN_EVENTS"] = "1"
    add(processes, db, 2)
    worker = processes.worker(db, "--interval", "0.1", "--metrics-port", "0")
    wait_until(lambda: METRICS.search(worker.text()) is not None, 30, "the metrics address")
    found = METRICS.search(worker.text())
    assert found is not None and found[1].startswith("http://127.0.0.1:")

    def scraped() -> str:
        return httpx.get(found[1], timeout=5).text

    wait_until(lambda: 'distill_pass_cycles_total{pass="extract"' in scraped(), 30, "a cycle")
    text = scraped()
    assert 'distill_facts{status="active"} 2.0' in text
    assert 'distill_worker_jobs_total{outcome="done"} 1.0' in text
    assert 'distill_backlog_events{project="default"} 0.0' in text
    assert 'distill_pass_cycles_total{pass="dedupe",result="clean"}' in text  # the schedule
    worker.popen.send_signal(signal.SIGTERM)
    assert processes.finish(worker) == 0, worker.text()


def test_sighup_makes_a_running_server_read_its_schedule_again(processes: Processes) -> None:
    config = processes.tmp / "distill.toml"
    config.write_text("[schedule.passes.judge]\ninterval_hours = 6\n", encoding="utf-8")
    db = str(processes.tmp / "m.db")
    serve = processes.distill(
        db, "serve", "--port", "0", "--interval", "0.1", "--config", str(config)
    )
    wait_until(lambda: "distill serve: http://" in serve.text(), 30, "distill serve to listen")
    # A new text with the old modification time: only the signal can make it read.
    stamp = config.stat()
    config.write_text("[schedule.passes.judge]\ninterval_hours = 2\n", encoding="utf-8")
    os.utime(config, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    serve.popen.send_signal(signal.SIGHUP)
    wait_until(lambda: "configuration reloaded from" in serve.text(), 30, "the reload")
    assert serve.popen.poll() is None  # reloaded, still serving
    # A file that no longer validates is refused by name; the settings in force stay.
    config.write_text("[schedule.passes.judge]\ninterval_hourz = 2\n", encoding="utf-8")
    serve.popen.send_signal(signal.SIGHUP)
    wait_until(
        lambda: "unknown setting schedule.passes.judge.interval_hourz" in serve.text(),
        30,
        "the refusal",
    )
    assert serve.popen.poll() is None
    serve.popen.send_signal(signal.SIGTERM)
    assert processes.finish(serve) == 0, serve.text()
