"""`distill prune` as a person runs it, in a subprocess: a dry run that reports and writes
nothing, then the run that deletes the stale tombstone a dedupe left, then nothing left to
do; a tombstone retired today is kept; bad knobs are usage errors. The memories are planted,
deduped and retracted at T0 (2024), so by the real clock their tombstones are far below the
default floor and older than a receipt's month."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from distill import Memory
from distill.adapters.embed.hashing import HashingEmbedder
from tests.acceptance.test_cli import Cli
from tests.conftest import FakeClock
from tests.contract.test_dedupe import plant
from tests.factories import T0


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    cli = Cli(tmp_path)
    clock = FakeClock(T0 + timedelta(days=1))
    with Memory(str(cli.db), embedder=HashingEmbedder(256), clock=clock) as mem:
        plant(mem, "Publishes on Tuesday mornings.", count=2)
        plant(mem, "publishes on tuesday mornings", minutes=1)
        kayak = plant(mem, "Owns a red kayak", minutes=2)
        mem.retract(kayak.id, "wrong person")
        assert mem.dedupe().retired == 1
    return cli


def test_a_dry_run_reports_then_the_run_deletes_the_stale_merged_tombstone(cli: Cli) -> None:
    before = cli.ok_json("facts", "--subject", "u1", "--all")

    dry = cli.ok("prune", "--dry-run")

    assert "would delete 1 tombstone(s) in 1 subject(s)" in dry.stdout
    assert "1 evidence unreachable" in dry.stdout and "nothing written" in dry.stdout
    assert cli.ok_json("facts", "--subject", "u1", "--all") == before

    done = cli.ok_json("prune", "--project", "default")

    assert done["pruned"] == 1 and done["kept"] == {"evidence_unreachable": 1}
    assert done["half_life_days"] == 90.0 and done["floor"] == 0.05
    [gone] = done["facts"]
    left = {f["id"] for f in cli.ok_json("facts", "--subject", "u1", "--all")}
    assert gone["fact_id"] not in left and len(left) == len(before) - 1
    assert cli.ok_json("prune")["pruned"] == 0


def test_a_long_half_life_keeps_everything_and_bad_knobs_are_usage_errors(cli: Cli) -> None:
    kept = cli.ok_json("prune", "--half-life-days", "100000", "--max-prunes", "5")
    assert kept["pruned"] == 0 and kept["kept"]["weight_above_floor"] == 2
    for bad in (["--floor", "2"], ["--half-life-days", "0"], ["--max-prunes", "-1"]):
        result = cli("prune", *bad)
        assert result.code == 2 and bad[0] in result.error


def test_a_tombstone_retired_today_is_kept_as_a_receipt(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    with Memory(str(cli.db), embedder=HashingEmbedder(256)) as mem:  # the real clock
        plant(mem, "Publishes on Tuesday mornings.", count=2)
        plant(mem, "publishes on tuesday mornings", minutes=1)
    assert cli.ok_json("dedupe")["retired"] == 1  # retired now, its weight from 2024
    kept = cli.ok_json("prune")
    assert kept["pruned"] == 0 and kept["kept"] == {"retired_recently": 1}
