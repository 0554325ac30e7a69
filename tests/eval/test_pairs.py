"""The `pairs` suite on a tiny SICK / STS-B slice written in the datasets' own formats, its CLI,
the identity guard end to end with the real model, and (slow) the real data."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from distill import Memory
from distill.adapters.embed import make_embedder
from distill.adapters.embed.calibrations import match_distance, offline_merge_distance
from distill.core.identity import identity_text
from distill.eval import EvalContext, default_data_dir, offline, run_suite
from distill.eval.pairs import band_of, read_sts

SICK_HEADER = [
    "pair_ID",
    "sentence_A",
    "sentence_B",
    "entailment_label",
    "relatedness_score",
    "entailment_AB",
    "entailment_BA",
    "sentence_A_original",
    "sentence_B_original",
    "sentence_A_dataset",
    "sentence_B_dataset",
    "SemEval_set",
]
# (A, B, label, AB, BA, set)
SICK_ROWS = [
    # Equal after normalisation: a paraphrase every tier merges.
    (
        "A man is playing a guitar.",
        "a man is playing a GUITAR",
        "ENTAILMENT",
        "A_entails_B",
        "B_entails_A",
        "TEST",
    ),
    # A negated contradiction: the word-overlap deduper merges it, Distill must not.
    (
        "A man is playing a guitar",
        "A man is not playing a guitar",
        "CONTRADICTION",
        "A_contradicts_B",
        "B_contradicts_A",
        "TEST",
    ),
    # A paraphrase with no word in common beyond "are": no tier merges it.
    (
        "The kids are playing outside",
        "Children are frolicking outdoors",
        "ENTAILMENT",
        "A_entails_B",
        "B_entails_A",
        "TEST",
    ),
    # Unrelated.
    (
        "A dog is running in the snow",
        "Two women are slicing tomatoes",
        "NEUTRAL",
        "A_neutral_B",
        "B_neutral_A",
        "TEST",
    ),
    # Training pairs are never reported.
    (
        "Someone is cooking",
        "someone is cooking",
        "ENTAILMENT",
        "A_entails_B",
        "B_entails_A",
        "TRAIN",
    ),
    ("A cat sleeps", "No cat sleeps", "CONTRADICTION", "A_contradicts_B", "B_neutral_A", "TRIAL"),
]
# (genre, file, year, id, score, sentence1, sentence2, extra fields...)
STS_ROWS = [
    (
        "main-captions",
        "MSRvid",
        "2012",
        "0001",
        "5.000",
        "One woman is measuring an ankle.",
        "one woman is measuring an ankle",
    ),
    (
        "main-news",
        "headlines",
        "2015",
        "0002",
        "0.200",
        "Stock markets fell sharply today",
        "The cat sleeps on the sofa",
    ),
    # Extra trailing fields and a bare double quote, as some lines of the real files have.
    (
        "main-forum",
        "answers",
        "2015",
        "0003",
        "4.400",
        'He said "hello" to her',
        'he said "hello" to her!',
        "source-a",
        "source-b",
    ),
    (
        "main-captions",
        "MSRvid",
        "2012",
        "0004",
        "1.500",
        # The gate rejects the second as an instruction to the agent: one fact is left for
        # two different statements, which is no merge.
        "You should do it.",
        "You should never do it.",
    ),
]


def write_slice(root: Path) -> Path:
    (root / "sick").mkdir()
    lines = ["\t".join(SICK_HEADER)]
    for i, (a, b, label, ab, ba, split) in enumerate(SICK_ROWS, 1):
        lines.append(
            "\t".join([str(i), a, b, label, "3.0", ab, ba, a, b, "FLICKR", "FLICKR", split])
        )
    (root / "sick" / "SICK.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (root / "stsbenchmark").mkdir()
    sts = "".join("\t".join(row) + "\n" for row in STS_ROWS)
    (root / "stsbenchmark" / "sts-test.csv").write_text(sts, encoding="utf-8")
    return root


EXPECTED = {
    "SICK TEST: contradiction pairs merged": 0.0,
    "SICK TEST: negation pairs merged": 0.0,
    "SICK TEST: paraphrase recall": 0.5,
    "SICK TEST: contradiction pairs merged by word overlap": 1.0,
    "STS-B sts-test.csv: pairs scored 4–5 merged": 1.0,
    "STS-B sts-test.csv: pairs scored 0–2 merged": 0.0,
}


def test_slice_reports_what_the_tiers_do(tmp_path: Path) -> None:
    result = run_suite("pairs", EvalContext(data_dir=write_slice(tmp_path), embedder="hashing"))
    for name, value in EXPECTED.items():
        assert result.metric(name).value == value, name
    assert result.metric("SICK TEST: contradiction pairs merged").met is True
    sick_table = result.tables[0]
    counts = {row[0]: row[1] for row in sick_table.rows}
    assert counts["all"] == 4  # the TRAIN and TRIAL rows are left out
    assert counts["contradiction"] == 1
    assert counts["paraphrase (entailment both ways)"] == 2
    text_tier = {row[0]: row[2] for row in sick_table.rows}
    assert text_tier["paraphrase (entailment both ways)"] == 0.5
    bands = {row[0]: row[1] for row in result.tables[1].rows}
    assert bands == {"0–1": 1, "1–2": 1, "2–3": 0, "3–4": 0, "4–5": 2}


OFFLINE_EXPECTED = {
    # The negated contradiction is refused by the word guard, however close.
    "SICK TEST: offline tier, contradiction pairs merged": 0.0,
    "SICK TEST: offline tier, negation pairs merged": 0.0,
    "SICK TEST: merge-everything judge, contradiction pairs merged": 0.0,
    "SICK TEST: merge-everything judge, negation pairs merged": 0.0,
    # "Children are frolicking outdoors" names what the other does not ("Children", read as a
    # name at a sentence start) and does something else ("frolicking"): refused even for the
    # judge; the equal-after-normalising pair is merged by both.
    "SICK TEST: merge-everything judge, paraphrase pairs merged": 0.5,
    "SICK TEST: offline tier, paraphrase recall": 0.5,
}


def test_slice_reports_the_offline_tier_and_the_merge_everything_judge(tmp_path: Path) -> None:
    result = run_suite("pairs", EvalContext(data_dir=write_slice(tmp_path), embedder="hashing"))
    for name, value in OFFLINE_EXPECTED.items():
        assert result.metric(name).value == value, name
    assert result.metric("SICK TEST: offline tier, paraphrase recall").met is False
    assert result.metric("SICK TEST: merge-everything judge, negation pairs merged").met
    # Each figure carries the same figure on the calibration split, as recorded.
    note = result.metric("SICK TEST: offline tier, contradiction pairs merged").note
    assert "calibration split (SICK TRAIN+TRIAL, STS-B train+dev)" in note
    assert result.params["offline_max_distance"] == offline_merge_distance(make_embedder("hashing"))
    table = result.tables[-1]
    rows = {row[0]: dict(zip(table.columns, row, strict=True)) for row in table.rows}
    assert rows["SICK contradiction"]["negation"] == 1  # refused, and why
    assert rows["SICK paraphrase (entailment both ways)"]["n"] == 2


def test_the_offline_bands_are_the_suites_bands() -> None:
    assert {band_of(4.0)} == offline.STS_PARAPHRASE_BANDS
    assert {band_of(0.0), band_of(1.0)} == offline.STS_UNRELATED_BANDS


def test_sts_rows_with_extra_fields_and_quotes_are_read(tmp_path: Path) -> None:
    pairs = read_sts(write_slice(tmp_path) / "stsbenchmark" / "sts-test.csv")
    assert [p.group for p in pairs] == ["4–5", "0–1", "4–5", "1–2"]
    assert pairs[2].a == 'He said "hello" to her'


def test_cli_writes_the_same_figures(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    data = write_slice(tmp_path / "data")
    out = tmp_path / "pairs.json"
    command = [sys.executable, "-m", "distill", "--embedder", "hashing", "eval", "pairs"]
    command += ["--data", str(data), "--out", str(out), "--json"]
    subprocess.run(command, check=True, capture_output=True, cwd=Path(__file__).parents[2])
    document = json.loads(out.read_text(encoding="utf-8"))
    (suite,) = document["results"]
    metrics = {m["name"]: m["value"] for m in suite["metrics"]}
    for name, value in EXPECTED.items():
        assert metrics[name] == value, name


@pytest.mark.model
def test_always_and_never_are_kept_apart_by_the_negation_guard(tmp_path: Path) -> None:
    """Through Memory with the real model: the two identity texts sit within the threshold,
    so only the guard keeps them two facts, while a close paraphrase is still one fact."""
    embedder = make_embedder("local")
    mem = Memory(str(tmp_path / "m.db"), embedder=embedder, extractor="claims")
    try:
        texts = [
            identity_text(p, {"value": True})
            for p in ("always_publishes_on_monday", "never_publishes_on_monday")
        ]
        va, vb = embedder.embed_batch(texts)
        threshold = match_distance(embedder)
        assert threshold is not None
        assert 1.0 - float(np.dot(va, vb)) <= threshold
        when = datetime(2025, 1, 1, tzinfo=UTC)
        for subject, predicates in [
            ("alice", ("always_publishes_on_monday", "never_publishes_on_monday")),
            ("deploy", ("deploy_runs_on_fridays", "on_fridays_the_deploy_runs")),
        ]:
            mem.add_events(
                {
                    "subject": subject,
                    "occurred_at": when,
                    "claims": [{"predicate": p, "value": {"value": True}}],
                }
                for p in predicates
            )
        mem.consolidate()
        assert len(mem.facts(subject="alice")) == 2
        assert len(mem.facts(subject="deploy")) == 1
    finally:
        mem.close()


@pytest.mark.slow
def test_full_data_meets_the_negation_target() -> None:
    """SICK TEST with the real model: no pair with a negation on one side only is merged."""
    data = default_data_dir()
    if not (data / "sick" / "SICK.txt").exists():
        pytest.skip("SICK not found")
    result = run_suite("pairs", EvalContext(data_dir=data))
    assert result.metric("SICK TEST: negation pairs merged").met


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason="known gap (EVAL.md): 2.0% of SICK TEST contradictions merged, the target is 1%",
)
def test_full_data_meets_the_contradiction_target() -> None:
    """SICK TEST with the real model: at most 1% of contradiction pairs merged."""
    data = default_data_dir()
    if not (data / "sick" / "SICK.txt").exists():
        pytest.skip("SICK not found")
    result = run_suite("pairs", EvalContext(data_dir=data))
    assert result.metric("SICK TEST: contradiction pairs merged").met


@pytest.mark.slow
def test_full_data_offline_tier_meets_the_negation_and_recall_targets() -> None:
    """SICK TEST with the real model: the offline tier and the merge-everything judge merge
    no negation pair, and the offline tier keeps at least 60% of the paraphrases."""
    data = default_data_dir()
    if not (data / "sick" / "SICK.txt").exists():
        pytest.skip("SICK not found")
    result = run_suite("pairs", EvalContext(data_dir=data))
    assert result.metric("SICK TEST: offline tier, negation pairs merged").met
    assert result.metric("SICK TEST: merge-everything judge, negation pairs merged").met
    assert result.metric("SICK TEST: offline tier, paraphrase recall").met


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason="known gap (EVAL.md): the offline tier merges 1.5% of SICK TEST contradictions and "
    "the merge-everything judge 2.0%, the target is 1%; the offline tier stays off",
)
def test_full_data_offline_tier_meets_the_contradiction_target() -> None:
    data = default_data_dir()
    if not (data / "sick" / "SICK.txt").exists():
        pytest.skip("SICK not found")
    result = run_suite("pairs", EvalContext(data_dir=data))
    assert result.metric("SICK TEST: offline tier, contradiction pairs merged").met
    assert result.metric("SICK TEST: merge-everything judge, contradiction pairs merged").met


def test_calibrate_offline_merge_reads_only_the_calibration_splits_and_records(
    tmp_path: Path,
) -> None:
    """scripts/calibrate_offline_merge.py on a slice: the TRAIN and TRIAL rows and the STS-B
    train and dev files only (sts-test.csv is left out of the slice, so reading it would
    fail), and `--record` writes `offline_merge` beside the entry's identity threshold."""
    root = Path(__file__).parents[2]
    (tmp_path / "data").mkdir()
    data = write_slice(tmp_path / "data")
    sts = data / "stsbenchmark"
    (sts / "sts-test.csv").rename(sts / "sts-train.csv")
    (sts / "sts-dev.csv").write_text("", encoding="utf-8")
    registry = tmp_path / "calibrations.json"
    registry.write_text(
        (root / "distill" / "adapters" / "embed" / "calibrations.json").read_text("utf-8"),
        encoding="utf-8",
    )
    command = [sys.executable, "scripts/calibrate_offline_merge.py", "--embedder", "hashing"]
    command += ["--data", str(data), "--json", "--record", "--registry", str(registry)]
    run = subprocess.run(command, check=True, capture_output=True, text=True, cwd=root)
    found = json.loads(run.stdout)
    # The slice's calibration rows: one TRIAL contradiction ("A cat sleeps" / "No cat
    # sleeps", refused for its negation) and one TRAIN paraphrase equal after normalising.
    assert found["contradiction_pairs"] == 1
    assert found["paraphrase_pairs"] == 1
    assert found["contradictions_merged"] == 0.0
    assert found["paraphrase_recall"] == 1.0
    assert found["calibration_split"] == "SICK TRAIN+TRIAL, STS-B train+dev"
    assert found["max_distance"] == 1.0  # nothing in the slice bounds it: the last step
    entry = json.loads(registry.read_text("utf-8"))["hashing-256"]
    assert entry["offline_merge"]["max_distance"] == 1.0
    assert entry["max_distance"] == 0.12  # the identity threshold is left as it was
