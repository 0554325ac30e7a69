"""The `timelines` suite on a slice written here in playsFor_timelines.json's format: what
it reports must follow from the spells it was given (issue 5)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from distill.eval import EvalContext, run_suite

SPELLS: list[dict[str, Any]] = [
    {
        # A plain succession, then an open spell.
        "subject": "Ann",
        "relation": "playsFor",
        "facts": [
            {"object": "Reading F.C.", "since": 2001, "until": 2005},
            {"object": "Fulham F.C.", "since": 2005, "until": None},
        ],
    },
    {
        # A loan inside a longer spell: both clubs are true in 2010.
        "subject": "Bob",
        "relation": "playsFor",
        "facts": [
            {"object": "Reading F.C.", "since": 2008, "until": 2012},
            {"object": "Port Vale F.C.", "since": 2010, "until": 2011},
            {"object": "Luton Town F.C.", "since": 2012, "until": 2014},
        ],
    },
    {
        # A record that ends before it begins (YAGO has five), then a spell within one year
        # followed by the next club in the following year.
        "subject": "Cy",
        "relation": "playsFor",
        "facts": [
            {"object": "Wycombe Wanderers F.C.", "since": 2011, "until": 1997},
            {"object": "Wolves", "since": 1938, "until": 1938},
            {"object": "Southampton F.C.", "since": 1939, "until": 1949},
        ],
    },
]
PAIRS = [
    {"subject": "Ann", "t": 2005, "prev": "Reading F.C.", "next": "Fulham F.C.",
     "kind": "succession", "gold_active": ["Fulham F.C."]},
    {"subject": "Bob", "t": 2010, "prev": "Reading F.C.", "next": "Port Vale F.C.",
     "kind": "concurrent", "gold_active": ["Port Vale F.C.", "Reading F.C."]},
    {"subject": "Bob", "t": 2012, "prev": "Reading F.C.", "next": "Luton Town F.C.",
     "kind": "succession", "gold_active": ["Luton Town F.C."]},
    {"subject": "Cy", "t": 2012, "prev": "Wycombe Wanderers F.C.", "next": "Southampton F.C.",
     "kind": "succession", "gold_active": ["Southampton F.C."]},
    {"subject": "Cy", "t": 1938, "prev": "Wolves", "next": "Southampton F.C.",
     "kind": "succession", "gold_active": ["Wolves"]},
    {"subject": "Cy", "t": 1939, "prev": "Wolves", "next": "Southampton F.C.",
     "kind": "succession", "gold_active": ["Southampton F.C."]},
]  # fmt: skip


def write_slice(root: Path) -> Path:
    folder = root / "yago15k_temporal"
    folder.mkdir(parents=True)
    document = {"source": "written by the test", "timelines": SPELLS, "pair_items": PAIRS}
    (folder / "playsFor_timelines.json").write_text(json.dumps(document))
    return root


def values(result: Any) -> dict[str, Any]:
    return {m.name: m.value for m in result.metrics}


def test_club_as_identity_answers_every_pair_in_both_orders(tmp_path: Path) -> None:
    """Each club its own identity with its stated interval: successions, a one-year spell and
    the loan are all right, in order and shuffled, and no ended spell is served as current."""
    result = run_suite("timelines", EvalContext(write_slice(tmp_path), embedder="hashing"))
    got = values(result)
    for order in ("in order", "shuffled"):
        assert got[f"successions (club as identity, {order})"] == 1.0
        assert got[f"concurrent (club as identity, {order})"] == 1.0
        assert got[f"ended spells served as current (club as identity, {order})"] == 0
        # The record that ends before it begins is refused by add_event, never stored.
        assert got[f"spells ending before they begin, accepted (club as identity, {order})"] == 0
    assert got["same answers in both orders (club as identity)"] == 1.0
    # The item naming the record that ends before it begins is counted, not scored.
    assert result.params == {
        "players": 3,
        "pair_items": 5,
        "pair_items_not_scored": 1,
        "limit": None,
        "seed": 0,
    }


def test_one_attribute_supersedes_so_the_loan_closes_the_club(tmp_path: Path) -> None:
    """As a single-valued attribute, Port Vale supersedes Reading in 2010, so the
    concurrent pair is wrong by construction while both successions are right."""
    got = values(run_suite("timelines", EvalContext(write_slice(tmp_path), embedder="hashing")))
    for order in ("in order", "shuffled"):
        assert got[f"successions (one attribute, {order})"] == 1.0
        assert got[f"concurrent (one attribute, {order})"] == 0.0


def test_limit_takes_the_first_players_only(tmp_path: Path) -> None:
    """--limit 1 keeps Ann's spells and only the pair items about her."""
    result = run_suite("timelines", EvalContext(write_slice(tmp_path), limit=1, embedder="hashing"))
    assert result.params["players"] == 1
    assert result.params["pair_items"] == 1


def test_missing_data_names_the_file_and_the_option(tmp_path: Path) -> None:
    """Without the dataset the suite stops with an error that says where it looked."""
    from distill.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match=r"playsFor_timelines\.json.*--data"):
        run_suite("timelines", EvalContext(tmp_path, embedder="hashing"))


def test_cli_prints_the_table_and_writes_the_json(tmp_path: Path) -> None:
    """`distill eval timelines` prints its table, names the license, and writes the JSON
    result where --out says."""
    data = write_slice(tmp_path / "data")
    out = tmp_path / "result.json"
    done = subprocess.run(
        [sys.executable, "-m", "distill", "--embedder", "hashing", "eval", "timelines",
         "--data", str(data), "--out", str(out), "--seed", "3"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "exact-set accuracy on the pair items" in done.stdout
    assert "CC BY" in done.stdout
    document = json.loads(out.read_text())
    (suite,) = document["results"]
    assert suite["suite"] == "timelines"
    assert suite["params"]["seed"] == 3
    assert "concurrent (club as identity, shuffled)" not in suite["targets"]["missed"]


def test_cli_markdown_is_a_report_to_paste(tmp_path: Path) -> None:
    """`--markdown` prints the run's date and commit line, then Markdown tables."""
    data = write_slice(tmp_path / "data")
    done = subprocess.run(
        [sys.executable, "-m", "distill", "--embedder", "hashing", "eval", "timelines",
         "--data", str(data), "--out", str(tmp_path / "r.json"), "--markdown"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    first, *rest = done.stdout.splitlines()
    assert first.startswith("`distill eval timelines` — ") and "commit" in first
    assert "| metric | value | target |  | note |" in rest
    assert any(
        line.startswith("| successions (club as identity, shuffled) | 1.000 |") for line in rest
    )


@pytest.mark.slow
def test_full_data_meets_the_targets_of_the_faithful_model() -> None:
    """All of playsFor_timelines.json (hashing embedder): club-as-identity answers every
    scored pair item in both orders, and no ended spell is served as current."""
    from distill.eval import default_data_dir

    data = default_data_dir()
    if not (data / "yago15k_temporal" / "playsFor_timelines.json").exists():
        pytest.skip("YAGO15k data not found")
    result = run_suite("timelines", EvalContext(data, embedder="hashing"))
    missed = {m.name for m in result.targets_missed}
    assert not {name for name in missed if "club as identity" in name}
    assert result.params["pair_items"] == 1350


def test_a_slice_without_concurrent_items_misses_no_target(tmp_path: Path) -> None:
    """--limit 1 keeps only Ann, who has no concurrent spells: that kind gets no target
    rather than a missed 0.0."""
    result = run_suite("timelines", EvalContext(write_slice(tmp_path), limit=1, embedder="hashing"))
    assert not [m.name for m in result.targets_missed if "club as identity" in m.name]
    concurrent = result.metric("concurrent (club as identity, in order)")
    assert concurrent.met is None and "no concurrent item" in concurrent.note
