"""What a new user's mistakes with databases, files and the worker get: a clear error that
keeps the password to itself, never an empty success (found by a walk through the README's
PostgreSQL, worker, copy and export sections)."""

from __future__ import annotations

import json
import logging
import socket
from pathlib import Path

import pytest

from distill.adapters.store.urls import hide_passwords
from distill.errors import StoreError
from distill.service import worker as worker_module
from tests.acceptance.test_cli_copy_export import Cli


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path)


SECRET = "hunter2"


@pytest.mark.parametrize(
    "db",
    [
        f"mysql://distill:{SECRET}@127.0.0.1/distill",
        f"host=127.0.0.1 port=5432 user=distill password={SECRET} dbname=distill",
        f"distill:{SECRET}@127.0.0.1:5432/distill",
        f"distill:{SECRET}@127.0.0.1:5432",
    ],
)
def test_a_database_distill_cannot_read_is_refused_without_its_password(
    cli: Cli, tmp_path: Path, db: str
) -> None:
    before = set(tmp_path.iterdir())
    result = cli.raw("--db", db, "status")
    assert result.code == 1, result.stdout
    assert SECRET not in result.stdout + result.stderr
    assert "postgresql://" in result.stderr  # the form it takes
    assert set(tmp_path.iterdir()) == before  # no SQLite file named after the string


def test_a_file_with_such_a_name_is_still_a_file_when_written_as_a_path(cli: Cli) -> None:
    result = cli.raw("--db", "./a:b@c", "status", "--json")
    assert result.code == 0, result.stderr
    assert (cli.tmp / "a:b@c").exists()


def test_driver_messages_lose_their_passwords() -> None:
    said = hide_passwords(
        f"invalid connection string 'postgresql://distill:{SECRET}@[::1:5432/d': missing ]; "
        f"host=x password='{SECRET} x' dbname=y"
    )
    assert SECRET not in said
    assert "postgresql://distill:***@[::1:5432/d" in said and "password=***" in said


def test_copy_and_export_of_a_database_that_is_not_there_are_errors(cli: Cli) -> None:
    missing = cli.tmp / "nosuch.db"
    copied = cli.raw("--db", str(missing), "copy", "--to", str(cli.tmp / "copy.db"))
    exported = cli.raw("--db", str(missing), "export")
    for result in (copied, exported):
        assert result.code == 1
        assert f"no database at {missing}" in result.stderr
    assert not missing.exists() and not (cli.tmp / "copy.db").exists()


def test_exporting_a_subject_that_is_not_there_says_so(cli: Cli) -> None:
    cli.ok("add", "--subject", "ana", "--text", "I live in Lyon.")
    result = cli.ok("export", "--subject", "nobody")
    assert result.stdout == ""
    assert "nothing is stored about subject 'nobody'" in result.stderr


def test_an_export_into_a_folder_that_is_not_there_names_the_folder(cli: Cli) -> None:
    cli.ok("add", "--subject", "ana", "--text", "I live in Lyon.")
    result = cli("export", "--out", str(cli.tmp / "nope" / "x.jsonl"))
    assert result.code == 1
    assert f"there is no folder {cli.tmp / 'nope'}" in result.stderr and ".tmp" not in result.stderr


def test_a_copy_says_it_left_the_api_keys_behind(cli: Cli) -> None:
    cli.ok("add", "--subject", "ana", "--text", "I live in Lyon.")
    cli.ok("keys", "create", "--project", "default")
    result = cli.ok("copy", "--to", str(cli.tmp / "copy.db"))
    assert "1 API key(s) of the source were not copied" in result.stderr
    data = cli.on(cli.db, "copy", "--to", str(cli.tmp / "copy2.db"))
    assert data["api_keys_not_copied"] == 1


def test_json_after_a_command_without_json_output_says_so(cli: Cli) -> None:
    result = cli("worker", "--once", "--json")
    assert result.code == 2
    assert "distill worker has no JSON output" in result.stderr


def test_add_file_refuses_options_of_one_event_and_takes_the_project(cli: Cli) -> None:
    lines = cli.tmp / "events.jsonl"
    event = {"subject": "ana", "project": "old", "text": "I live in Lyon."}
    lines.write_text(json.dumps(event) + "\n" + json.dumps({**event, "text": "Hi there."}) + "\n")
    refused = cli("add", "--file", str(lines), "--subject", "bob", "--claim", "{}")
    assert refused.code == 1
    assert "--subject, --claim cannot go with --file" in refused.stderr
    added = cli.ok_json("add", "--file", str(lines), "--project", "new", "--trust", "third_party")
    assert [(e["project"], e["trust"]) for e in added] == [("new", "third_party")] * 2


def test_a_busy_metrics_port_is_an_error_not_a_usage_error(cli: Cli) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        result = cli("worker", "--once", "--metrics-port", str(port))
    assert result.code == 1
    assert f"cannot serve metrics on 127.0.0.1:{port}" in result.stderr
    assert "Usage:" not in result.stderr


def test_a_database_that_is_away_is_one_log_line_a_bug_its_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="distill")
    worker_module._log_failure("consolidation failed", StoreError("cannot connect to PostgreSQL"))
    worker_module._log_failure("consolidation failed", KeyError("a bug"))
    away, bug = caplog.records
    assert "cannot connect to PostgreSQL" in away.getMessage() and away.exc_info is None
    assert bug.exc_info is not None and bug.exc_info[0] is KeyError


def test_the_worker_says_when_a_subjects_events_are_extracted(cli: Cli) -> None:
    result = cli.ok("worker", "--once")
    assert "a subject's events wait for 20 of them or 15 min" in result.stderr


def test_status_shows_the_events_waiting_before_any_worker_ran(cli: Cli) -> None:
    cli.ok("add", "--subject", "ana", "--text", "I live in Lyon.")
    shown = cli.ok("status").stdout
    assert any(line.split() == ["events", "waiting", "default", "1"] for line in shown.splitlines())


def test_an_event_with_no_content_and_a_use_both_ways_are_usage_errors(cli: Cli) -> None:
    empty = cli("add", "--subject", "ana")
    assert empty.code == 2 and "give --text, --claim or --action" in empty.stderr
    both = cli("procedures", "use", "0" * 32, "--success", "--failure")
    assert both.code == 2 and "exactly one of --success and --failure" in both.stderr


def test_procedure_and_topic_tables_show_whole_ids(cli: Cli) -> None:
    for n in range(3):
        cli.ok("add", "--subject", "ana", "--text", f"Alice and Bob met in Paris on day {n}.")
    cli.ok("consolidate")
    cli.ok("topics", "detect")
    [topic] = cli.ok_json("topics", "list")
    assert topic["id"] in cli.ok("topics", "list").stdout


def test_a_stop_every_subject_gave_is_said_once(capsys: pytest.CaptureFixture[str]) -> None:
    from distill.passes.asking import ModelRun
    from distill.service.hygiene_command import run_notes

    budget = "the call budget (20) is spent"
    stops = [f"default/u{n}: {budget}" for n in range(9)] + ["default/u9: RateLimited: 429"]
    run_notes(ModelRun(stopped=stops), "judges")
    said = capsys.readouterr().out.splitlines()
    assert said == [f"stopped: {budget} (9 subjects)", "stopped: default/u9: RateLimited: 429"]


def test_no_unstable_subject_is_said_in_words(cli: Cli) -> None:
    cli.ok("add", "--subject", "ana", "--text", "I live in Lyon.")
    assert (
        cli.ok("subjects", "--unstable").stdout.strip()
        == "no unstable subjects in project 'default'"
    )


def test_consolidate_with_only_failed_jobs_left_says_they_wait(cli: Cli) -> None:
    from tests.llm_server import ScriptedServer, openai_error

    with ScriptedServer(default=lambda request: openai_error(404, "no model x")) as server:
        cli.use_model(server.url, "x")
        cli.env["DISTILL_EXTRACTOR"] = "llm"
        cli.ok("add", "--subject", "ana", "--text", "I live in Lyon.")
        assert cli("consolidate").code == 1
        again = cli("consolidate")
    assert "1 failed job(s) are waiting" in again.stdout, again.stdout + again.stderr
