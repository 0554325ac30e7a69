"""The `scenarios` suite: SCENARIOS.md as the cases file shipped in the package. Every built
case passes with the hashing embedder, the not-built ones are counted apart, a wrong case is
reported as failed with its reason, and a malformed file names the bad case."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from distill.errors import ConfigurationError
from distill.eval import EvalContext, run_suite
from distill.eval.scenarios import CASES_FILE, FAILED, NOT_BUILT, PASSED, load_cases, run_cases

REPO = Path(__file__).resolve().parents[2]

FR = {"predicate": "language", "value": {"lang": "fr"}}
EN = {"predicate": "language", "value": {"lang": "en"}}


def write_cases(tmp_path: Path, *cases: dict[str, Any]) -> Path:
    path = tmp_path / "cases.json"
    path.write_text(json.dumps({"cases": list(cases)}))
    return path


def case(case_id: str, *steps: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """A section-B case (scenario 13 unless told) with these steps."""
    return {
        "id": case_id,
        "section": "B",
        "scenario": 13,
        "title": case_id,
        "steps": list(steps),
    } | fields


def test_the_shipped_file_covers_every_numbered_scenario() -> None:
    cases = load_cases(CASES_FILE)
    assert {c["scenario"] for c in cases} == set(range(1, 45))
    # Every scenario is built now (a case not built would carry `needs` and never run).
    assert [c["id"] for c in cases if "needs" in c] == []
    built = {c["id"] for c in cases if "steps" in c}
    assert {"G38.dry-run", "G38.scheduled", "G40", "G40.fail-soft"} <= built
    assert {"D21", "D21.api", "D25", "D28"} <= built
    assert {"E30", "E30b", "E30c", "E31", "E32", "E32b", "E33", "E33b", "E34"} <= built
    assert {"F35", "F36", "F37", "F37.any-order"} <= built


def test_every_built_case_passes_with_the_hashing_embedder(tmp_path: Path) -> None:
    """The suite on the shipped file: nothing failed, and the numbers add up per section."""
    result = run_suite("scenarios", EvalContext(data_dir=tmp_path, embedder="hashing"))

    got = {m.name: m.value for m in result.metrics}
    cases = load_cases(CASES_FILE)
    assert got[FAILED] == 0, result.tables[1].rows
    assert got[NOT_BUILT] == sum("needs" in c for c in cases) == 0
    assert got[PASSED] == sum("steps" in c for c in cases) > 0
    assert got["scenarios covered"] == 44
    sections = result.tables[0]
    assert sections.columns == ["section", PASSED, FAILED, NOT_BUILT]
    assert [row[0] for row in sections.rows] == list("ABCDEFG")
    by_section = {row[0]: row[1:] for row in sections.rows}
    assert by_section["E"] == [9, 0, 0]  # derivation: every case built and passing
    assert all(row[2:] == [0, 0] for row in sections.rows)  # none failed, none not built
    assert sum(row[1] for row in sections.rows) == got[PASSED]
    assert result.tables[1].rows == []
    assert any("test embedder" in note and "A5" in note for note in result.notes)


def test_a_wrong_expectation_is_reported_as_failed_with_its_reason(tmp_path: Path) -> None:
    """A4 with a wrong belief (the changed value reinforces) fails; the right one passes."""
    steps = [
        {"do": "add", "name": "E1", "claim": FR},
        {"do": "consolidate"},
        {"do": "add", "name": "E2", "at": 60, "claim": EN},
        {"do": "consolidate"},
    ]
    wrong = case("wrong", *steps, {"check": "report", "counts": {"reinforced": 1}})
    right = case("right", *steps, {"check": "report", "counts": {"reinforced": 0, "conflict": 1}})
    later = {**case("later"), "section": "E", "scenario": 30, "needs": "derivation pass"}
    del later["steps"]

    results = {r.id: r for r in run_cases(write_cases(tmp_path, wrong, right, later))}

    assert results["wrong"].verdict == FAILED
    assert results["wrong"].reason == "step 5 (report): report last: reinforced is 0, expected 1"
    assert results["right"].verdict == PASSED
    assert (results["later"].verdict, results["later"].reason) == (NOT_BUILT, "derivation pass")


def test_an_unexpected_error_and_a_missing_error_are_failures(tmp_path: Path) -> None:
    """Resolving a set that does not exist raises; expecting an error that never comes
    fails too."""
    resolve_nothing = case("crash", {"do": "resolve", "conflict": "no-such-set", "keep": None})
    quiet = case(
        "quiet",
        {"do": "add", "claim": FR},
        {"do": "consolidate", "raises": "RateLimited"},
    )
    results = {r.id: r for r in run_cases(write_cases(tmp_path, resolve_nothing, quiet))}

    assert results["crash"].verdict == FAILED
    assert results["crash"].reason.startswith("step 1 (resolve) raised NotFound")
    assert (
        results["quiet"].reason == "step 2 (consolidate): expected RateLimited, nothing was raised"
    )


@pytest.mark.parametrize(
    ("placed_at", "verdict"), [("threshold / 2", PASSED), ("threshold + 0.001", FAILED)]
)
def test_the_case_file_places_predicates_at_the_distance_it_says(
    tmp_path: Path, placed_at: str, verdict: str
) -> None:
    """A6 through the test embedder: within the threshold the alias is learned; the same
    case with the pair placed just outside fails on exactly that."""
    old = {"predicate": "running_pace", "value": {"min_per_km": 5.5}}
    new = {"predicate": "jogging_pace", "value": {"min_per_km": 5.0}}
    pair = {
        "distance": placed_at,
        "a": ["running_pace", old["value"]],
        "b": ["jogging_pace", new["value"]],
    }
    semantic = case(
        "semantic",
        {"do": "add", "claim": old},
        {"do": "consolidate"},
        {"do": "add", "at": 60, "claim": new},
        {"do": "consolidate"},
        {"check": "report", "aliases": [["jogging_pace", "running_pace"]]},
        section="A",
        scenario=6,
        memory={"vectors": [pair]},
    )
    [result] = run_cases(write_cases(tmp_path, semantic))
    assert result.verdict == verdict
    if verdict == FAILED:
        assert result.reason == (
            "step 5 (report): report last: learned aliases is [], "
            "expected [['jogging_pace', 'running_pace']]"
        )


def test_a_wrong_fact_selector_names_what_it_found(tmp_path: Path) -> None:
    bad = case(
        "selector",
        {"do": "add", "claim": FR},
        {"do": "consolidate"},
        {"check": "fact", "where": {"value": {"lang": "de"}}, "is": {"status": "active"}},
    )
    [result] = run_cases(write_cases(tmp_path, bad))
    assert result.reason == "step 3 (fact): 0 facts match value={'lang': 'de'}, expected 1"


@pytest.mark.parametrize(
    ("broken", "message"),
    [
        (case("B1", {"do": "consolidat"}), "case B1: step 1: unknown operation 'consolidat'"),
        (case("B2", {"check": "fact", "where": {}}), "case B2: step 1: fact: missing is"),
        (case("B3", {"do": "add", "claimz": FR}), "case B3: step 1: add: unknown keys claimz"),
        (case("B4", {"do": "replay"}, scenario=3), "case B4: scenario 3 is not in section B"),
        (case("B5"), "case B5: `steps` is a non-empty list"),
        ({**case("B6", {"do": "replay"}), "needs": "x"}, "case B6: give either `steps`"),
        ({"section": "B", "scenario": 11, "title": "t", "steps": []}, "case #2: missing id"),
        (
            case("B7", {"do": "replay"}, memory={"llm": {"answers": [{"raise": "Oops"}]}}),
            "case B7: memory: llm: 'Oops' is not a distill error",
        ),
        (
            case("B8", {"do": "replay"},
                 memory={"vectors": [{"distance": "near", "a": ["x", {}], "b": ["y", {}]}]}),
            "case B8: memory: vectors: distance 'near'",
        ),
    ],
    ids=["operation", "required", "unknown-key", "section", "no-steps", "both", "no-id", "llm",
         "distance"],
)  # fmt: skip
def test_a_malformed_case_is_a_clear_error_naming_it(
    tmp_path: Path, broken: dict[str, Any], message: str
) -> None:
    path = write_cases(tmp_path, case("fine", {"do": "replay"}), broken)
    with pytest.raises(ConfigurationError, match=re.escape(message)):
        run_cases(path)


def test_an_unreadable_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "cases.json"
    path.write_text("{not json")
    with pytest.raises(ConfigurationError, match="cannot read scenario cases from"):
        load_cases(path)
    path.write_text("[]")
    with pytest.raises(ConfigurationError, match=re.escape('expected an object {"cases"')):
        load_cases(path)


def test_the_cli_prints_the_section_table(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "distill", "--embedder", "hashing", "eval", "scenarios",
         "--data", str(tmp_path), "--out", str(tmp_path / "out.json")],
        capture_output=True, text=True, cwd=REPO, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Cases by section" in done.stdout
    assert "│ E       │ 9      │ 0      │ 0 " in done.stdout
    assert "Not built" in done.stdout
    written = json.loads((tmp_path / "out.json").read_text())
    [result] = written["results"]
    assert result["targets"]["missed"] == []
    assert {m["name"]: m["value"] for m in result["metrics"]}[FAILED] == 0


def test_a_summarise_step_writes_its_proposal_with_the_prompts_aliases(tmp_path: Path) -> None:
    """A proposal given by texts consumes what the prompt showed; a wrong count of what
    it consumed, or of the prompts sent, is a failure with its reason."""
    steps = [
        {"do": "plant", "text": "User has 3 bikes"},
        {"do": "plant", "text": "User likes green tea", "at": 1},
        {"do": "plant", "text": "User plays chess", "at": 2},
        {
            "do": "summarise",
            "keep": 1,
            "answers": [{"summary": "The user has 3 bikes.", "consumes": ["User has 3 bikes"]}],
        },
    ]
    memory = {"llm": {}}
    right = case(
        "right",
        *steps,
        {"check": "summarise", "counts": {"consumed": 1}, "refused": []},
        {"check": "receipts", "retired": 1},
        {"check": "prompts", "count": 1, "retired_shown": 0},
        memory=memory,
    )
    wrong = case("wrong", *steps, {"check": "summarise", "counts": {"consumed": 2}}, memory=memory)
    prompts = case("prompts", *steps, {"check": "prompts", "count": 2}, memory=memory)

    results = {r.id: r for r in run_cases(write_cases(tmp_path, right, wrong, prompts))}

    assert results["right"].verdict == PASSED, results["right"].reason
    assert (
        results["wrong"].reason == "step 5 (summarise): summarise last: consumed is 1, expected 2"
    )
    assert (
        results["prompts"].reason == "step 5 (prompts): prompts sent to the model is 1, expected 2"
    )
