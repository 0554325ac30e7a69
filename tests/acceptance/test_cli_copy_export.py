"""`distill copy` and `distill export`, run in a subprocess as a user runs them.

The subprocess runs this checkout's `distill` (PYTHONPATH names it): the installed script may
be an editable install of another checkout.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.acceptance.test_cli import Cli as InstalledCli

ROOT = Path(__file__).resolve().parents[2]
TABLES = [
    "events",
    "jobs",
    "job_events",
    "facts",
    "fact_sources",
    "embedding_cache",
    "fact_vectors",
    "conflicts",
    "observations",
    "aliases",
    "audit",
    "rules",
    "procedures",
    "mentions",
    "topics",
    "extractions",
    "pass_cursors",
]


class Cli(InstalledCli):
    def __init__(self, tmp_path: Path) -> None:
        super().__init__(tmp_path)
        self.env["PYTHONPATH"] = str(ROOT)

    def on(self, db: Path | str, *args: str) -> Any:
        """`distill --db DB ARGS --json`, which must succeed; its JSON."""
        result = self.raw("--db", str(db), *args, "--json")
        assert result.code == 0, result.stderr
        return result.json()


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path)


def line(subject: str, text: str, day: int, **claim: Any) -> dict[str, Any]:
    event: dict[str, Any] = {
        "subject": subject,
        "text": text,
        "occurred_at": f"2024-05-{day:02d}T10:00:00Z",
    }
    if claim:
        event["claims"] = [claim]
    return event


EVENTS = [
    line("u1", "I have 3 bikes", 1, predicate="bike_count", value={"count": 3}),
    line("u1", "I live in Lyon", 2, predicate="home_city", value={"city": "Lyon"}),
    line("u1", "Bought a bike", 3, predicate="bike_count", value={"count": 4}, action="supersede"),
    line("u2", "I speak French", 1, predicate="language", value={"lang": "fr"}),
    line("u2", "I speak English", 2, predicate="language", value={"lang": "en"}),
    line("u2", "I like tea. I walk daily.", 4),
]


def write_lines(path: Path, items: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")
    return path


def consolidated(cli: Cli) -> None:
    cli.ok("add", "--file", str(write_lines(cli.tmp / "events.jsonl", EVENTS)))
    cli.ok("consolidate")


def every_fact(cli: Cli, db: Path | str) -> list[Any]:
    return list(cli.on(db, "facts", "--all"))


# -- copy --------------------------------------------------------------------------------------
def test_copy_to_a_new_sqlite_file_copies_everything_and_reports_rows_per_table(cli: Cli) -> None:
    consolidated(cli)
    target = cli.tmp / "backup" / "copy.db"
    target.parent.mkdir()
    summary = cli.ok_json("copy", "--to", str(target))
    assert summary["source"] == str(cli.db) and summary["target"] == str(target)
    assert list(summary["rows"]) == TABLES
    assert summary["rows"]["events"] == len(EVENTS)
    assert summary["rows"]["facts"] == len(every_fact(cli, cli.db))
    assert summary["total_rows"] == sum(summary["rows"].values())
    assert summary["running_jobs_made_pending"] == 0
    assert every_fact(cli, target) == every_fact(cli, cli.db)
    for command in (["conflicts", "--status", "all"], ["audit", "--limit", "1000"], ["status"]):
        source, copy = cli.on(cli.db, *command), cli.on(target, *command)
        if command == ["status"]:
            assert source.pop("database") != copy.pop("database")
        assert copy == source


def test_copy_prints_a_table_of_rows_per_table(cli: Cli) -> None:
    consolidated(cli)
    shown = cli.ok("copy", "--to", str(cli.tmp / "copy.db")).stdout
    assert "copied" in shown and "total" in shown
    for name in TABLES:
        assert name in shown


def test_copy_shows_a_progress_bar_per_table_on_a_terminal(cli: Cli) -> None:
    consolidated(cli)
    env = {**cli.env, "TTY_COMPATIBLE": "1"}  # rich draws as it would on a terminal
    result = cli.raw("--db", str(cli.db), "copy", "--to", str(cli.tmp / "copy.db"), env=env)
    assert result.code == 0, result.stderr
    assert f"{len(EVENTS)}/{len(EVENTS)}" in result.stderr
    for name in TABLES:
        assert name in result.stderr


def test_copy_into_a_database_that_holds_rows_fails_and_writes_nothing(cli: Cli) -> None:
    consolidated(cli)
    target = cli.tmp / "other.db"
    cli.on(target, "add", "--subject", "z9", "--text", "already here")
    before = cli.on(target, "status")
    result = cli("copy", "--to", str(target))
    assert result.code == 1
    assert result.error.startswith("Error: the target database at")
    assert "is not empty (rows in events: 1, jobs: 1, job_events: 1)" in result.error
    assert "nothing was written" in result.error
    assert cli.on(target, "status") == before


@pytest.mark.parametrize(
    ("to", "says"),
    [
        ("mysql://db.internal/distill", "unsupported database URL 'mysql://db.internal/distill'"),
        ("/nonexistent-distill-dir/copy.db", "cannot open the SQLite database"),
    ],
    ids=["scheme", "folder"],
)
def test_copy_to_an_unusable_url_exits_1_and_says_which_url(cli: Cli, to: str, says: str) -> None:
    consolidated(cli)
    result = cli("copy", "--to", to, "--json")
    assert (result.code, result.stdout) == (1, "")
    assert result.error.startswith("Error: cannot open the target (--to): ")
    assert says in result.error


def test_copy_from_an_unusable_url_exits_1(cli: Cli) -> None:
    result = cli.raw("--db", "mysql://db.internal/x", "copy", "--to", str(cli.tmp / "copy.db"))
    assert result.code == 1
    assert result.error.startswith("Error: unsupported database URL")
    assert not (cli.tmp / "copy.db").exists()


def test_copy_without_a_target_is_a_usage_error(cli: Cli) -> None:
    result = cli("copy")
    assert result.code == 2
    assert "Missing option '--to'" in result.stderr


def test_copy_to_postgres_and_back_from_the_command_line(
    cli: Cli, make_postgres_database: Callable[[], str]
) -> None:
    consolidated(cli)
    pg, back = make_postgres_database(), cli.tmp / "back.db"
    there = cli.ok_json("copy", "--to", pg)
    assert there["target"].startswith("postgresql://") and ":@" not in there["target"]
    again = cli.on(pg, "copy", "--to", str(back))
    assert again["rows"] == there["rows"]
    assert every_fact(cli, pg) == every_fact(cli, back) == every_fact(cli, cli.db)
    refused = cli("copy", "--to", pg)
    assert refused.code == 1 and "is not empty" in refused.error


# -- export ------------------------------------------------------------------------------------
def exported(cli: Cli, *args: str) -> list[dict[str, Any]]:
    result = cli.ok("export", *args)
    return [json.loads(text) for text in result.stdout.splitlines()]


def current(facts: list[dict[str, Any]]) -> Counter[str]:
    """Facts without their ids (and their events', which are new in another store)."""
    ignored = {"id", "source_event_ids", "recorded_at", "supersedes_id", "superseded_by"}
    return Counter(json.dumps({k: v for k, v in f.items() if k not in ignored}) for f in facts)


def test_export_then_add_file_into_a_fresh_store_gives_the_same_current_facts(cli: Cli) -> None:
    consolidated(cli)
    lines = exported(cli)
    assert Counter(item["type"] for item in lines) == {
        "event": len(EVENTS),
        "fact": len(every_fact(cli, cli.db)),
    }
    path = write_lines(cli.tmp / "export.jsonl", lines)

    fresh = cli.tmp / "fresh.db"
    added = cli.on(fresh, "add", "--file", str(path))
    assert len(added) == len(EVENTS)  # the fact lines were skipped
    cli.on(fresh, "consolidate")
    assert current(cli.on(fresh, "facts")) == current(cli.on(cli.db, "facts"))
    again = cli.on(fresh, "add", "--file", str(path))  # the same events: stored once
    assert [e.pop("already_stored") for e in again] == [True] * len(EVENTS)
    assert [e.pop("already_stored") for e in added] == [False] * len(EVENTS)
    assert again == added
    assert cli.on(fresh, "status")["events"] == len(EVENTS)


def test_export_of_one_subject_to_a_file_prints_a_summary(cli: Cli) -> None:
    consolidated(cli)
    out = cli.tmp / "u2.jsonl"
    summary = cli.ok_json("export", "--subject", "u2", "--out", str(out))
    lines = [json.loads(text) for text in out.read_text(encoding="utf-8").splitlines()]
    assert {item["subject"] for item in lines} == {"u2"}
    counts = Counter(item["type"] for item in lines)
    assert summary == {
        "project": "default",
        "subject": "u2",
        "events": counts["event"],
        "facts": counts["fact"],
        "rules": counts["rule"],
        "procedures": counts["procedure"],
        "topics": counts["topic"],
        "out": str(out),
    }
    assert counts["event"] == 3 and counts["fact"] >= 4  # fr, en (held), two memories
    shown = cli.ok("export", "--subject", "u2", "--out", str(out)).stdout
    assert f"exported 3 event(s) and {counts['fact']} fact(s) of subject 'u2'" in shown


def test_export_to_stdout_keeps_stdout_for_the_lines(cli: Cli) -> None:
    consolidated(cli)
    result = cli.ok("export", "--project", "default")
    assert all(json.loads(text)["type"] in ("event", "fact") for text in result.stdout.splitlines())
    assert "exported" in result.stderr
    assert cli.ok("export", "--json").stdout == result.stdout  # no summary among the lines
    assert cli.ok("export", "--project", "nobody").stdout == ""


def test_export_into_a_missing_folder_is_an_error(cli: Cli) -> None:
    consolidated(cli)
    result = cli("export", "--out", str(cli.tmp / "missing" / "x.jsonl"))
    assert result.code == 1 and result.error.startswith("Error: ")


def test_add_file_refuses_a_line_of_an_unknown_type_and_adds_nothing(cli: Cli) -> None:
    path = write_lines(
        cli.tmp / "lines.jsonl",
        [{"type": "event", "id": "e1", **EVENTS[0]}, {"type": "fact", "id": "f1"}, {"type": "x"}],
    )
    result = cli("add", "--file", str(path))
    assert result.code == 1
    kinds = '"event", "fact", "rule", "procedure", "topic"'
    said = f"{path}:3: \"type\" is 'x': a line holds one of {kinds}"
    assert said in result.error
    assert "nothing was added" in result.error
    assert cli.ok_json("status")["events"] == 0
