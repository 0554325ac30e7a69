"""What a person decides from the command line (retract, erase), and times a person types
that no calendar holds; each in a subprocess."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.acceptance.test_cli import Cli


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path)


def test_retract_retires_a_wrong_fact_with_its_reason(cli: Cli) -> None:
    cli.add_claim("home_city", {"city": "Paris"}, "2024-05-01T10:00:00Z")
    cli.ok("consolidate")
    [fact] = cli.ok_json("facts", "--subject", "u1")

    done = cli.ok("retract", fact["id"][:16], "--reason", "never lived there")

    assert f"retracted {fact['id']}" in done.stdout
    assert cli.ok_json("facts", "--subject", "u1") == []
    audit = cli.ok_json("audit")
    assert any(e["action"] == "retract_fact" and "never lived there" in e["reason"] for e in audit)
    again = cli("retract", fact["id"], "--reason", "twice")
    assert again.code == 1 and "already retracted" in again.error
    other = cli("retract", fact["id"], "--reason", "x", "--project", "other")
    assert other.code == 1 and f"no fact {fact['id']}" in other.error
    missing = cli("retract", fact["id"])
    assert missing.code == 2 and "--reason" in missing.error


@pytest.mark.parametrize(
    "when",
    ["0001-01-01T00:30:00+01:00", "9999-12-31T23:30:00-01:00", "5", "yesterday"],
)
def test_an_as_of_outside_the_calendar_is_an_error_not_a_traceback(cli: Cli, when: str) -> None:
    result = cli("facts", "--as-of", when)
    assert result.code == 1
    assert result.error.startswith("Error: as_of:")
    assert "Traceback" not in result.stderr


def test_erase_forgets_a_subject_and_says_what_went(cli: Cli, tmp_path: Path) -> None:
    cli.add_claim("home_city", {"city": "Zanzibar7731"}, "2024-05-01T10:00:00Z")
    cli.add_claim("home_city", {"city": "Lisbon"}, "2024-05-01T10:00:00Z", subject="u2")
    cli.ok("consolidate")

    unconfirmed = cli("erase", "--subject", "u1")
    assert unconfirmed.code == 2 and "--yes" in unconfirmed.error
    neither = cli("erase", "--yes")
    assert neither.code == 2 and "--all-subjects" in neither.error

    done = cli.ok_json("erase", "--subject", "u1", "--yes")
    assert done["erased"]["events"] == 1 and done["erased"]["facts"] == 1
    assert [f["subject"] for f in cli.ok_json("facts")] == ["u2"]
    assert "Zanzibar7731" not in cli.ok("export").stdout
    again = cli.ok("erase", "--subject", "u1", "--yes")
    assert "nothing to erase" in again.stdout
    everyone = cli.ok("erase", "--all-subjects", "--yes")
    assert "erased every subject of project 'default'" in everyone.stdout
    assert cli.ok_json("facts") == []


def test_facts_known_at_shows_what_was_believed_then(cli: Cli) -> None:
    cli.add_claim("bike_count", {"count": 3}, "2024-05-01T10:00:00Z")
    cli.ok("consolidate")
    [first] = cli.ok_json("facts")
    cli.add_claim("bike_count", {"count": 4}, "2024-06-01T10:00:00Z", action="supersede")
    cli.ok("consolidate")
    then = cli.ok_json("facts", "--known-at", first["recorded_at"])
    assert [f["value"] for f in then] == [{"count": 3}]
    assert [f["value"] for f in cli.ok_json("facts")] == [{"count": 4}]
    before = cli("facts", "--known-at", "2000-01-01T00:00:00Z")
    assert before.code == 0 and "as known at 2000-01-01T00:00:00Z" in before.stdout
    bad = cli("facts", "--known-at", "soon")
    assert bad.code == 1 and bad.error.startswith("Error: known_at:")


def test_context_prints_the_block_and_its_data(cli: Cli) -> None:
    cli.add_claim("bike_count", {"count": 3}, "2024-05-01T10:00:00Z")
    cli.ok("consolidate")
    text = cli.ok("context", "u1").stdout
    assert text.splitlines() == [
        "What is known about u1:",
        "- bike count: count=3 (since 2024-05-01)",
    ]
    data = cli.ok_json("context", "u1", "--budget", "200")
    assert data["budget_tokens"] == 200 and [f["value"] for f in data["facts"]] == [{"count": 3}]
    small = cli("context", "u1", "--budget", "3")
    assert small.code == 1 and small.error.startswith("Error: budget_tokens")


def test_status_counts_open_sets_by_kind(cli: Cli) -> None:
    cli.add_claim("language", {"lang": "fr"}, "2024-05-01T10:00:00Z")
    cli.add_claim("language", {"lang": "de"}, "2024-05-01T10:00:00Z")
    cli.ok("consolidate")
    data = cli.ok_json("status")
    assert data["open_conflicts"] == 1
    assert data["open_conflicts_by_kind"] == {"conflict": 1, "quarantine": 0, "identity": 0}
    assert "1 (1 conflict)" in cli.ok("status").stdout
