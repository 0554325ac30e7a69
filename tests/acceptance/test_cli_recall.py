"""`distill search` and `distill context --query`, with both time axes, in a subprocess."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.acceptance.test_cli import Cli


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path)


def test_search_finds_the_current_value_and_the_past_one(cli: Cli) -> None:
    cli.add_claim("home_city", {"city": "Lyon"}, "2024-05-01T10:00:00Z")
    cli.ok("consolidate")
    believed = cli.ok_json("facts", "--subject", "u1")[0]["recorded_at"]
    cli.add_claim("home_city", {"city": "Paris"}, "2024-07-01T10:00:00Z", action="supersede")
    cli.ok("consolidate")

    now = cli.ok_json("search", "home city", "--subject", "u1")
    then = cli.ok_json("search", "home city", "--as-of", "2024-06-01T00:00:00Z")
    known = cli.ok_json("search", "home city", "--known-at", believed)

    assert [h["value"] for h in now] == [{"city": "Paris"}]
    assert now[0]["parts"]["lexical"]["rank"] == 1 and now[0]["contested"] is False
    assert [h["value"] for h in then] == [{"city": "Lyon"}]
    assert [h["value"] for h in known] == [{"city": "Lyon"}]
    table = cli.ok("search", "home city")
    assert table.stdout.startswith("search: home city") and "lexical" in table.stdout
    assert cli.ok_json("search", "home city", "--project", "other") == []
    refused = cli("search", "home city", "--limit", "0")
    assert refused.code == 2


def test_context_with_a_query_and_known_at(cli: Cli) -> None:
    cli.add_claim("home_city", {"city": "Lyon"}, "2024-05-01T10:00:00Z")
    cli.add_claim("allergy", {"substance": "penicillin"}, "2024-05-02T10:00:00Z")
    cli.ok("consolidate")

    block = cli.ok_json("context", "u1", "--query", "penicillin")
    assert block["facts"][0]["predicate"] == "allergy"
    text = cli.ok("context", "u1", "--known-at", "2000-01-01T00:00:00Z").stdout
    assert "nothing known yet" in text


def test_a_subject_nothing_is_known_of_is_said_on_stderr(cli: Cli) -> None:
    """A misspelt subject does not read as an empty memory (the HTTP API answers 404); the
    answer on stdout is what it was, so a script reading it is not broken."""
    cli.add_claim("home_city", {"city": "Lyon"}, "2024-05-01T10:00:00Z")
    cli.ok("consolidate")
    note = "note: nothing is stored about subject 'U1' in project 'default'"
    for args in (("context", "U1"), ("search", "home city", "--subject", "U1")):
        told = cli.ok(*args)
        assert note in " ".join(told.stderr.split()), args
    assert cli.ok_json("search", "home city", "--subject", "U1") == []
    for args in (("context", "u1"), ("search", "home city", "--subject", "u1")):
        assert "note:" not in cli.ok(*args).stderr, args
