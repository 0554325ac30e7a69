"""`distill derive` and `distill subjects` as a person runs them, in a subprocess: votes
wait for derive (`--policy uses=vote`, or DISTILL_POLICIES), a dry run reports and writes
nothing, the run elects the value, a second run reads nothing new; a bad policy is an
error that says what to give."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.acceptance.test_cli import Cli

VOTE = ("--policy", "uses=vote")


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    cli = Cli(tmp_path)
    for day, value in enumerate(["rust", "go", "rust"], start=1):
        claim = json.dumps({"predicate": "uses", "value": {"language": value}})
        cli.ok(
            *VOTE,
            "add",
            "--subject",
            "alex",
            "--trust",
            "third_party",
            "--source",
            f"site-{day}",
            "--occurred-at",
            f"2025-01-0{day}T10:00:00Z",
            "--claim",
            claim,
        )
    cli.ok(*VOTE, "consolidate")
    return cli


def test_derive_reports_then_elects_and_then_has_nothing_new(cli: Cli) -> None:
    assert cli.ok_json("facts", "--subject", "alex") == []  # votes, no fact yet

    dry = cli.ok(*VOTE, "derive", "--dry-run")
    assert "processed 3 vote(s); created 1" in dry.stdout and "nothing written" in dry.stdout
    assert "would elect" in dry.stdout and "language=rust" in dry.stdout  # the value, shown
    assert cli.ok_json("facts", "--subject", "alex") == []

    done = cli.ok_json(*VOTE, "derive", "--project", "default", "--subject", "alex")
    assert (done["processed"], done["created"], done["invalidated"]) == (3, 1, 0)
    [fact] = cli.ok_json("facts", "--subject", "alex")
    assert fact["value"] == {"language": "rust"}
    again = cli.ok_json(*VOTE, "derive")
    assert again["processed"] == 0 and again["scopes"] == 1

    [subject] = cli.ok_json("subjects")
    assert subject == {
        "project": "default",
        "subject": "alex",
        "unstable": False,
        "invalidations": 0,
        "window_days": 30,
    }
    assert cli.ok_json("status")["unstable_subjects"] == []


def test_the_policy_from_the_environment_and_bad_policies(cli: Cli) -> None:
    env = {**cli.env, "DISTILL_POLICIES": "uses=vote other=latest"}
    result = cli.raw("--db", str(cli.db), "derive", "--json", env=env)
    assert result.code == 0 and json.loads(result.stdout)["created"] == 1

    unknown = cli("--policy", "uses=majority", "derive")
    assert unknown.code == 1 and "'latest' or 'vote'" in unknown.error
    malformed = cli("--policy", "uses", "derive")
    assert malformed.code == 2 and "PREDICATE=latest" in malformed.error
