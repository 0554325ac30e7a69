"""`distill add`, run in a subprocess as a user runs it, with bad input and with retries.

Every refusal is `Error: ...` on stderr with exit 1, names the field (and in a file the line),
and adds nothing; none is a traceback. A retried add is counted as "already stored".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.acceptance.test_cli import Cli

PLAIN = {"subject": "u1", "text": "fine", "occurred_at": "2024-05-01T10:00:00Z"}


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path)


def write(cli: Cli, *lines: str | bytes) -> str:
    """A JSONL file in the command's working directory; its name as a command names it."""
    path = cli.tmp / "events.jsonl"
    path.write_bytes(b"".join((x if isinstance(x, bytes) else x.encode()) + b"\n" for x in lines))
    return path.name


def refused(cli: Cli, *args: str, env: dict[str, str] | None = None) -> str:
    """The one-line error of a command that must fail cleanly and add nothing."""
    before = cli.ok_json("status")["events"]
    result = cli.raw("--db", str(cli.db), *args, env={**cli.env, **(env or {})})
    assert result.code == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert result.error.startswith("Error: "), result.stderr
    assert cli.ok_json("status")["events"] == before
    return result.error


# -- retries -------------------------------------------------------------------------------------
def test_a_retried_add_without_a_time_is_already_stored_not_a_second_event(cli: Cli) -> None:
    claim = json.dumps({"predicate": "bike_count", "value": {"count": 3}})
    said = ("add", "--subject", "u1", "--text", "I have 3 bikes", "--claim", claim)
    assert "added 1 event(s); run `distill consolidate`" in cli.ok(*said).stdout
    cli.ok("consolidate")
    again = cli.ok(*said).stdout
    assert "added 0 event(s), 1 already stored: nothing new to consolidate" in again
    assert cli.ok_json("add", *said[1:])[0]["already_stored"] is True
    assert cli.ok_json("status")["events"] == 1
    assert cli.ok_json("consolidate")["counters"]["jobs_done"] == 0
    [fact] = cli.ok_json("facts", "--subject", "u1")
    assert fact["reinforcement_count"] == 0


def test_a_file_added_again_counts_what_was_already_stored(cli: Cli) -> None:
    first = write(cli, json.dumps(PLAIN))
    cli.ok("add", "--file", first)
    more = {**PLAIN, "text": "new"}
    path = write(cli, json.dumps(PLAIN), json.dumps(more), json.dumps(PLAIN))
    shown = cli.ok("add", "--file", path).stdout
    assert "added 1 event(s), 2 already stored; run `distill consolidate`" in shown
    added = cli.ok_json("add", "--file", path)
    assert [e["already_stored"] for e in added] == [True, True, True]
    assert [e["text"] for e in added] == ["fine", "new", "fine"]


def test_another_trust_or_source_is_another_event(cli: Cli) -> None:
    said = ("add", "--subject", "u1", "--text", "the sky is green")
    cli.ok(*said)
    assert "added 1 event(s)" in cli.ok(*said, "--trust", "untrusted").stdout
    assert "added 1 event(s)" in cli.ok(*said, "--source", "web").stdout
    assert cli.ok_json("status")["events"] == 3


# -- values a store would change -------------------------------------------------------------------
@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_a_number_json_cannot_hold_is_refused_with_its_line(cli: Cli, number: str) -> None:
    bad = '{"subject":"u1","claims":[{"predicate":"x","value":{"v":NUMBER}}]}'
    bad = bad.replace("NUMBER", number)
    error = refused(cli, "add", "--file", write(cli, json.dumps(PLAIN), bad))
    assert error.startswith("Error: events.jsonl:2: invalid event (claims.0.value.v: ")
    assert "is not a number JSON can hold" in error and "nothing was added" in error


def test_a_nul_character_is_refused_with_its_line(cli: Cli) -> None:
    bad = json.dumps({"subject": "u1", "text": "a\x00b"})
    error = refused(cli, "add", "--file", write(cli, json.dumps(PLAIN), bad))
    assert error.startswith("Error: events.jsonl:2: invalid event (text: contains a NUL")
    assert "nothing was added" in error
    claim = json.dumps({"text": "a\x00b"})  # a command line cannot hold NUL; JSON can
    flag = refused(cli, "add", "--subject", "u1", "--claim", claim)
    assert flag.startswith("Error: event 0: claims.0.text: contains a NUL")


def test_invalid_utf8_is_an_error_with_its_line(cli: Cli) -> None:
    path = write(cli, json.dumps(PLAIN), b'{"subject": "u1", "text": "caf\xe9"}')
    error = refused(cli, "add", "--file", path)
    assert error == (
        "Error: events.jsonl:2: not UTF-8 (byte 0xe9 at byte 31 of the line); nothing was added"
    )


def test_json_nested_hundreds_of_levels_deep_is_an_error(cli: Cli) -> None:
    deep: Any = 1
    for _ in range(500):
        deep = {"a": deep}
    claim = json.dumps({"predicate": "x", "value": deep})
    line = json.dumps({"subject": "u1", "claims": [json.loads(claim)]})
    error = refused(cli, "add", "--file", write(cli, line))
    assert "events.jsonl:1: invalid event (claims.0.value: nested more than 32 levels" in error
    flag = refused(cli, "add", "--subject", "u1", "--claim", claim)
    assert flag.startswith("Error: event 0: claims.0.value: nested more than 32 levels deep")
    deeper = '{"subject":"u1","text":"x","v":' + "[" * 50_000 + "]" * 50_000 + "}"
    error = refused(cli, "add", "--file", write(cli, deeper))
    assert error.startswith("Error: events.jsonl:1: not JSON (nested too deeply)")


def test_a_misspelt_claim_key_is_refused_naming_it(cli: Cli) -> None:
    claim = {"predicate": "x", "value": {"v": 1}, "vaild_from": "2024-01-01T00:00:00Z"}
    error = refused(cli, "add", "--subject", "u1", "--claim", json.dumps(claim))
    assert error.startswith(
        "Error: event 0: claims.0.vaild_from: not a claim field (did you mean 'valid_from'?)"
    )
    line = json.dumps({**PLAIN, "claims": [claim]})
    error = refused(cli, "add", "--file", write(cli, line))
    assert "events.jsonl:1: invalid event (claims.0.vaild_from: not a claim field" in error


def test_an_event_over_the_size_limit_is_refused(cli: Cli) -> None:
    huge = {"predicate": "notes", "value": {"v": "x" * 300_000}}
    line = json.dumps({**PLAIN, "claims": [huge]})
    error = refused(cli, "add", "--file", write(cli, json.dumps(PLAIN), line))
    assert "events.jsonl:2: invalid event (event: 300," in error
    assert "bytes as JSON, over the limit of 262,144 for an event" in error


def test_a_blank_subject_is_refused_and_a_spelling_of_it_is_one_subject(cli: Cli) -> None:
    error = refused(cli, "add", "--subject", "   ", "--text", "who?")
    assert error == "Error: event 0: subject: is blank: name whose memory it is"
    cli.ok("add", "--subject", "Jose\u0301 ", "--text", "one")
    cli.ok("add", "--subject", "José", "--text", "two")
    events = cli.ok_json("add", "--subject", " José", "--text", "one")
    assert events[0]["already_stored"] is True and events[0]["subject"] == "José"


# -- times -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("when", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"])
def test_a_time_with_no_instant_in_utc_is_an_error(cli: Cli, when: str) -> None:
    error = refused(cli, "add", "--subject", "u1", "--text", "x", "--occurred-at", when)
    assert error.startswith(f"Error: event 0: occurred_at: {when} has no instant in UTC")
    claim = json.dumps({"predicate": "x", "value": {"v": 1}, "valid_from": when})
    error = refused(cli, "add", "--subject", "u1", "--claim", claim)
    assert error.startswith(f"Error: event 0: claims.0.valid_from: {when} has no instant in UTC")


def test_a_time_far_in_the_future_is_refused_and_the_margin_is_a_setting(cli: Cli) -> None:
    far = ("add", "--subject", "u1", "--text", "x", "--occurred-at", "2204-01-01T00:00:00Z")
    error = refused(cli, *far)
    assert error.startswith("Error: event 0: occurred_at: 2204-01-01T00:00:00+00:00 is more")
    assert "than 1 day past the present" in error
    line = json.dumps({**PLAIN, "occurred_at": "2204-01-01T00:00:00Z"})
    path = write(cli, json.dumps(PLAIN), line)
    error = refused(cli, "add", "--file", path)
    assert error.startswith("Error: events.jsonl:2: invalid event (occurred_at: 2204-01-01")
    wide = {"DISTILL_FUTURE_MARGIN": str(200 * 365 * 86_400)}
    assert cli.raw("--db", str(cli.db), *far, env={**cli.env, **wide}).code == 0
    assert (
        cli.raw("--db", str(cli.db), "add", "--file", str(path), env={**cli.env, **wide}).code == 0
    )
    error = refused(cli, *far, env={"DISTILL_FUTURE_MARGIN": "a week"})
    assert error.startswith("Error: DISTILL_FUTURE_MARGIN is a number of seconds")
    assert "DISTILL_FUTURE_MARGIN" in cli.ok("--help").stdout


def test_a_claim_may_name_the_future(cli: Cli) -> None:
    claim = {"predicate": "lease", "value": {"ends": 2204}, "valid_to": "2204-01-01T00:00:00Z"}
    cli.ok("add", "--subject", "u1", "--claim", json.dumps(claim))


# -- progress --------------------------------------------------------------------------------------
def test_add_file_shows_progress_on_a_terminal_only(cli: Cli) -> None:
    path = write(cli, *(json.dumps({**PLAIN, "text": f"event {i}"}) for i in range(1_200)))
    tty = {**cli.env, "TTY_COMPATIBLE": "1"}  # rich draws as it would on a terminal
    shown = cli.raw("--db", str(cli.db), "add", "--file", str(path), env=tty)
    assert shown.code == 0, shown.stderr
    assert "storing 1,200 event(s)" in shown.stderr
    again = cli.raw("--db", str(cli.db), "add", "--file", str(path), "--json", env=tty)
    assert again.code == 0 and again.stderr == ""
    piped = cli("add", "--file", path)
    assert piped.code == 0 and piped.stderr == ""
    assert "added 0 event(s), 1200 already stored" in piped.stdout


# -- on every backend ------------------------------------------------------------------------------
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_every_backend_refuses_the_same_lines_with_their_numbers(
    cli: Cli, backend: str, request: pytest.FixtureRequest
) -> None:
    """PostgreSQL refused a NUL itself, with no line number; SQLite stored it."""
    db = str(cli.db) if backend == "sqlite" else str(request.getfixturevalue("postgres_database"))
    for bad, says in [
        (json.dumps({"subject": "u1", "text": "a\x00b"}), "text: contains a NUL character"),
        ('{"subject":"u1","claims":[{"predicate":"x","value":{"v":NaN}}]}', "claims.0.value.v"),
    ]:
        path = write(cli, json.dumps(PLAIN), bad)
        result = cli.raw("--db", db, "add", "--file", path)
        assert result.code == 1 and "Traceback" not in result.stderr
        assert result.error.startswith(f"Error: events.jsonl:2: invalid event ({says}")
    path = write(cli, json.dumps(PLAIN))
    assert "added 1 event(s)" in cli.raw("--db", db, "add", "--file", path).stdout
    again = cli.raw("--db", db, "add", "--file", path).stdout
    assert "added 0 event(s), 1 already stored" in again
    status = cli.raw("--db", db, "status", "--json")
    assert json.loads(status.stdout)["events"] == 1


def test_an_added_line_is_exported_as_it_was_given(cli: Cli) -> None:
    value = {"name": "Zoé 東京", "ratio": 0.1, "big": 2**63, "tiny": 5e-324, "list": [True, None]}
    given = {**PLAIN, "claims": [{"predicate": "p", "value": value, "qualifiers": {"q": 1.5}}]}
    cli.ok("add", "--file", write(cli, json.dumps(given)))
    [line] = [json.loads(x) for x in cli.ok("export").stdout.splitlines()]
    assert line["claims"][0]["value"] == value
    assert line["claims"][0]["qualifiers"] == {"q": 1.5}
    assert (line["subject"], line["text"], line["occurred_at"]) == (
        "u1",
        "fine",
        PLAIN["occurred_at"],
    )


# -- paths ---------------------------------------------------------------------------------------
def test_a_missing_file_is_a_usage_error_and_a_folder_is_no_database(cli: Cli) -> None:
    """`--file` naming no file is a mistake in the command (exit 2, as click says one);
    `--db` naming a folder says so, not SQLite's "disk I/O error"."""
    missing = cli("add", "--file", "nosuch.jsonl")
    assert missing.code == 2 and "File 'nosuch.jsonl' does not exist" in missing.stderr
    folder = cli.raw("--db", str(cli.tmp), "facts", env=cli.env)
    assert folder.code == 1 and "Traceback" not in folder.stderr
    assert folder.error == (
        f"Error: {cli.tmp} is a folder: give the SQLite database a file name in it "
        f"({cli.tmp / 'memory.db'}, say)"
    )


def test_a_line_that_names_no_source_is_from_the_command_line(cli: Cli) -> None:
    """From a file as from flags, an event that does not say where it came from is `cli`'s
    (or `--source`'s); one that says keeps its own."""
    sourced = {**PLAIN, "text": "from a bot", "source": "slack"}
    cli.ok("add", "--file", write(cli, json.dumps(PLAIN), json.dumps(sourced)))
    cli.ok("add", "--file", write(cli, json.dumps({**PLAIN, "text": "x"})), "--source", "import")
    cli.ok("add", "--subject", "u1", "--text", "typed")
    sources = {
        e["text"]: e["source"] for e in map(json.loads, cli.ok("export").stdout.split("\n")[:-1])
    }
    assert sources == {"fine": "cli", "from a bot": "slack", "x": "import", "typed": "cli"}
