"""`distill dedupe` as a person runs it: a dry run that lists the groups and writes nothing,
then the run that retires the duplicates; in a subprocess, on a store that holds duplicates
(planted as an earlier version would have left them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from distill import Memory
from distill.adapters.embed.hashing import HashingEmbedder
from tests.acceptance.test_cli import Cli
from tests.contract.test_dedupe import plant


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    cli = Cli(tmp_path)
    with Memory(str(cli.db), embedder=HashingEmbedder(256)) as mem:
        plant(mem, "Publishes on Tuesday mornings.", count=2)
        plant(mem, "publishes on tuesday mornings", minutes=1)
        plant(mem, "The deploy runs on Fridays", minutes=2)
        plant(mem, "On Fridays the deploy runs", minutes=3)
    return cli


def test_a_dry_run_lists_every_group_then_the_run_retires_the_duplicate(cli: Cli) -> None:
    before = cli.ok_json("facts", "--subject", "u1")

    dry = cli.ok("dedupe", "--dry-run")

    assert "would retire 1 memory(ies) in 1 group(s)" in dry.stdout
    assert "1 word-order group(s) reported" in dry.stdout and "nothing written" in dry.stdout
    assert cli.ok_json("facts", "--subject", "u1") == before

    done = cli.ok_json("dedupe")

    assert done["retired"] == 1 and done["groups_report_only"] == 1
    [merged] = [g for g in done["groups"] if g["outcome"] == "merged"]
    live = {f["id"]: f for f in cli.ok_json("facts", "--subject", "u1")}
    assert merged["survivor"] in live and merged["retired"][0] not in live
    assert live[merged["survivor"]]["reinforcement_count"] == 3
    again = cli.ok_json("dedupe")
    assert again["retired"] == 0 and again["groups_report_only"] == 1


def test_an_unknown_project_finds_nothing_and_a_negative_cap_is_a_usage_error(cli: Cli) -> None:
    assert cli.ok_json("dedupe", "--project", "nobody")["retired"] == 0
    bad = cli("dedupe", "--max-supersedes", "-1")
    assert bad.code == 2 and "--max-supersedes" in bad.error
