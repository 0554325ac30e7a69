"""The semantic-match threshold per embedder: the shipped registry, how Memory picks its
threshold from it, what an uncalibrated embedder does, how the calibration script records an
entry, and the guards that refuse to compare vectors of two models."""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import logging
import subprocess
import sys
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from distill.adapters.embed import make_embedder
from distill.adapters.embed.calibrations import (
    REGISTRY,
    Calibration,
    calibration_for,
    load,
    match_bands,
    match_distance,
    offline_merge_distance,
    record,
    record_derive_cluster,
    record_offline_merge,
)
from distill.adapters.embed.hashing import HashingEmbedder, vectors_at_distance
from distill.adapters.store.vector_search import exact_nearest
from distill.core.attribute_match import Bands
from distill.core.identity import identity_text
from distill.core.models import JobStatus
from distill.errors import ConfigurationError, EmbeddingMismatch
from distill.ports import Vector
from tests.conftest import MemoryFactory
from tests.unit.scenario_support import SUBJECT, at, every_fact, say

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "calibrate_threshold.py"
PAIRS = ROOT / "scripts" / "calibration_pairs.json"
OLD = ("running_pace", {"min_per_km": 5.5})
NEW = ("jogging_pace", {"min_per_km": 5.5})


@functools.cache
def calibration_script() -> ModuleType:
    """scripts/calibrate_threshold.py as a module (registered: its dataclasses need it)."""
    spec = importlib.util.spec_from_file_location("calibrate_threshold", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def same_vectors(*claims: tuple[str, dict[str, object]]) -> dict[str, list[float]]:
    """Overrides giving the identity texts of every claim one vector: distance 0."""
    vector, _ = vectors_at_distance(0.0, 256)
    return {t: vector for c in claims for t in (identity_text(*c), identity_text(c[0]))}


class Uncalibrated(HashingEmbedder):
    """The hashing embedder under a model id no registry knows (a fresh one per test: the
    warning is given once per model id and process)."""

    def __init__(self, overrides: Mapping[str, Sequence[float]] | None = None) -> None:
        super().__init__(256, overrides=overrides)
        self.model_id = f"uncalibrated-{uuid.uuid4().hex[:8]}"
        self.calibrate_args = ("--embedder", "test-only", "--model", "m")


def entry(model_id: str, max_distance: float = 0.2, **changes: object) -> Calibration:
    fields: dict[str, object] = {
        "model_id": model_id,
        "max_distance": max_distance,
        "false_merges": 0,
        "different_pairs": 58,
        "misses": 30,
        "same_pairs": 54,
        "closest_different": max_distance + 0.01,
        "chosen_by": "test",
        "pairs_sha256": "0" * 64,
        "measured_on": "2025-01-01",
        "command": "python scripts/calibrate_threshold.py --record",
    }
    fields.update(changes)
    return Calibration(**fields)  # type: ignore[arg-type]


# -- the shipped registry ------------------------------------------------------------------------


def test_the_local_model_is_recorded_at_its_measured_threshold() -> None:
    """The default embedder's entry is the measurement the README quotes: merged at 0.12
    with no false merge among 297 different pairs; contested within 0.16 (names) or 0.30
    (identity texts), which flags all but 46 of 357 same-attribute pairs and contests 23
    different ones."""
    found = calibration_for("all-MiniLM-L6-v2/int8-onnx")

    assert found is not None
    assert found.max_distance == 0.12
    assert (found.false_merges, found.different_pairs) == (0, 297)
    assert (found.misses, found.same_pairs) == (151, 357)
    assert (found.band_name, found.band_full) == (0.16, 0.3)
    assert (found.band_same_flagged, found.band_different_contested) == (311, 23)
    # with a judge model: within 0.31 (names) or 0.48 (texts), 330 flagged, 73 asked
    assert (found.judge_band_name, found.judge_band_full) == (0.31, 0.48)
    assert (found.judge_band_same_flagged, found.judge_band_different_asked) == (330, 73)
    assert found.command == "python scripts/calibrate_threshold.py --embedder local --record"


def test_a_judge_model_gets_the_judge_band_and_no_model_the_plain_one(tmp_path: Path) -> None:
    registry = tmp_path / "calibrations.json"
    embedder = Uncalibrated()
    record(entry(embedder.model_id, 0.1, band_name=0.16, band_full=0.3), registry)
    assert match_bands(embedder, registry) == Bands(0.1, 0.16, 0.3)
    # no judge band recorded: a judge model gets the plain band, judged
    assert match_bands(embedder, registry, judged=True) == Bands(0.1, 0.16, 0.3, judged=True)
    record(
        entry(embedder.model_id, 0.1, band_name=0.16, band_full=0.3, judge_band_name=0.31,
              judge_band_full=0.48),
        registry,
    )  # fmt: skip
    # a claim stated as a change is contested within the judge band, with a model or not
    change = {"change_name": 0.31, "change_full": 0.48}
    assert match_bands(embedder, registry) == Bands(0.1, 0.16, 0.3, **change)
    assert match_bands(embedder, registry, judged=True) == Bands(
        0.1, 0.31, 0.48, judged=True, **change
    )


def test_recording_the_identity_threshold_keeps_the_other_scripts_sections(
    tmp_path: Path,
) -> None:
    """calibrate_offline_merge.py and calibrate_derive.py record their own sections of an
    entry; calibrate_threshold.py --record after them keeps both (it once dropped derive's)."""
    registry = tmp_path / "calibrations.json"
    record(entry("m", 0.1), registry)
    record_offline_merge("m", {"max_distance": 0.27}, registry)
    record_derive_cluster("m", {"max_distance": 0.24}, registry)
    record(entry("m", 0.11), registry)

    found = calibration_for("m", registry)
    assert found is not None and found.max_distance == 0.11
    assert found.offline_merge == {"max_distance": 0.27}
    assert found.derive_cluster == {"max_distance": 0.24}


def test_every_entry_was_measured_on_the_current_pairs_file() -> None:
    """An edited pairs file makes every recorded number stale: each entry names the file's
    hash, so this fails until the embedders are measured again."""
    digest = hashlib.sha256(PAIRS.read_bytes()).hexdigest()
    entries = load()

    assert entries, "the registry is empty"
    for model_id, found in entries.items():
        assert found.pairs_sha256 == digest, model_id
        assert 0 <= found.false_merges <= found.different_pairs, model_id
        assert 0 <= found.misses <= found.same_pairs, model_id
        if found.false_merges == 0:
            assert found.max_distance < found.closest_different, model_id


def test_the_registry_is_shipped_as_package_data() -> None:
    """The wheel carries the registry: pyproject lists it as package data."""
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert REGISTRY == ROOT / "distill" / "adapters" / "embed" / "calibrations.json"
    assert '"adapters/embed/calibrations.json"' in pyproject


# -- Memory's threshold --------------------------------------------------------------------------


def test_memory_takes_the_recorded_threshold_of_its_embedder(make_memory: MemoryFactory) -> None:
    """With no max_distance, Memory uses its embedder's entry; an explicit value wins."""
    recorded = calibration_for(HashingEmbedder().model_id)
    assert recorded is not None

    assert make_memory().max_distance == recorded.max_distance
    assert make_memory("other.db", max_distance=0.3).max_distance == 0.3
    assert make_memory("zero.db", max_distance=0.0).max_distance == 0.0


def test_uncalibrated_embedder_matches_by_exact_predicate_only_and_says_so_once(
    make_memory: MemoryFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """Two predicates whose identity texts have one vector (distance 0) stay two facts when
    the embedder has no calibration: matching by meaning is off, not run at another model's
    threshold. One warning, however many Memory objects, names the model and the command."""
    embedder = Uncalibrated(overrides=same_vectors(OLD, NEW))
    with caplog.at_level(logging.WARNING, logger="distill.embed"):
        mem = make_memory(embedder=embedder)
        make_memory("second.db", embedder=embedder)
    say(mem, *OLD, when=at(0))
    mem.consolidate()
    say(mem, *NEW, when=at(60))
    report = mem.consolidate()

    assert mem.max_distance is None
    assert report.created == 1
    assert sorted(f.predicate for f in every_fact(mem)) == ["jogging_pace", "running_pace"]
    warnings = [r for r in caplog.records if embedder.model_id in r.getMessage()]
    assert len(warnings) == 1
    message = warnings[0].getMessage()
    assert "exact predicate and learned aliases only" in message
    assert "calibrate_threshold.py --embedder test-only --model m --record" in message


def test_the_same_pair_merges_once_a_threshold_is_given(make_memory: MemoryFactory) -> None:
    """The control of the test above: with a threshold, the same two claims are one fact
    under the first name (an alias is learned)."""
    mem = make_memory(embedder=Uncalibrated(overrides=same_vectors(OLD, NEW)), max_distance=0.05)
    say(mem, *OLD, when=at(0))
    mem.consolidate()
    say(mem, *NEW, when=at(60))
    report = mem.consolidate()

    assert report.reinforced == 1
    assert [f.predicate for f in every_fact(mem)] == ["running_pace"]


def test_match_distance_reads_a_given_registry(tmp_path: Path) -> None:
    """`match_distance` is the entry of the embedder's model id, None without one."""
    registry = tmp_path / "calibrations.json"
    embedder = Uncalibrated()
    assert match_distance(embedder, registry) is None
    record(entry(embedder.model_id, 0.07), registry)

    assert match_distance(embedder, registry) == 0.07


# -- the registry file ---------------------------------------------------------------------------


def test_record_adds_or_replaces_one_entry_and_keeps_the_others(tmp_path: Path) -> None:
    registry = tmp_path / "calibrations.json"
    record(entry("model-a", 0.10), registry)
    record(entry("model-b", 0.20, note="why"), registry)
    record(entry("model-a", 0.11), registry)

    entries = load(registry)
    assert {k: v.max_distance for k, v in entries.items()} == {"model-a": 0.11, "model-b": 0.20}
    assert entries["model-b"].note == "why"
    document = json.loads(registry.read_text(encoding="utf-8"))
    assert list(document) == ["_comment", "model-a", "model-b"]
    assert "model_id" not in document["model-a"]  # the key says it
    assert [p.name for p in tmp_path.iterdir()] == ["calibrations.json"]  # no temporary left


def test_the_offline_merge_distance_sits_beside_the_identity_threshold(tmp_path: Path) -> None:
    """scripts/calibrate_offline_merge.py records under `offline_merge` of an existing entry;
    re-recording the identity threshold keeps it; no entry, or a null distance, is off."""
    registry = tmp_path / "calibrations.json"
    embedder = Uncalibrated()
    assert offline_merge_distance(embedder, registry) is None
    with pytest.raises(ConfigurationError, match=r"calibrate_threshold\.py --record"):
        record_offline_merge(embedder.model_id, {"max_distance": 0.2}, registry)
    record(entry(embedder.model_id, 0.07), registry)
    assert offline_merge_distance(embedder, registry) is None

    record_offline_merge(embedder.model_id, {"max_distance": 0.27, "recall": 0.8}, registry)
    assert offline_merge_distance(embedder, registry) == 0.27
    record(entry(embedder.model_id, 0.08), registry)
    assert match_distance(embedder, registry) == 0.08
    assert offline_merge_distance(embedder, registry) == 0.27
    document = json.loads(registry.read_text(encoding="utf-8"))
    assert document[embedder.model_id]["offline_merge"] == {"max_distance": 0.27, "recall": 0.8}

    record_offline_merge(embedder.model_id, {"max_distance": None}, registry)
    assert offline_merge_distance(embedder, registry) is None


def test_the_shipped_offline_merge_distances_were_measured_on_the_calibration_split() -> None:
    for model_id in ("all-MiniLM-L6-v2/int8-onnx", "hashing-256"):
        found = calibration_for(model_id)
        assert found is not None and found.offline_merge is not None, model_id
        measured = found.offline_merge
        assert measured["calibration_split"] == "SICK TRAIN+TRIAL, STS-B train+dev"
        assert "scripts/calibrate_offline_merge.py" in measured["command"]
        if measured["max_distance"] is not None:
            assert measured["contradictions_merged"] <= 0.01
            assert measured["sts_unrelated_merged"] <= 0.01
            assert measured["negations_merged"] == 0.0


@pytest.mark.parametrize(
    "content",
    ["{not json", "[]", '{"m": {"max_distance": 0.1}}', '{"m": {"max_distance": 3, "x": 1}}'],
)
def test_a_malformed_registry_is_a_configuration_error(tmp_path: Path, content: str) -> None:
    registry = tmp_path / "calibrations.json"
    registry.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigurationError, match="calibration"):
        load(registry)


def test_a_threshold_outside_cosine_range_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="between 0 and 2"):
        entry("m", 2.5)


# -- the calibration script ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("closest", "expected"),
    [(0.120338, 0.12), (0.0266, 0.026), (0.292893, 0.29), (0.12, 0.11), (0.5, 0.49), (0.0, 0.0)],
)
def test_the_recommended_threshold_is_just_under_the_closest_different_pair(
    closest: float, expected: float
) -> None:
    """Two significant digits, strictly under the closest different pair: a pair exactly on
    a round value would merge, so the value below is taken."""
    assert calibration_script().recommended(closest) == pytest.approx(expected, abs=1e-9)


def test_the_script_measures_and_records_an_embedder(tmp_path: Path) -> None:
    """`--record` writes the measured entry into the registry given, with the counts it
    printed, the pairs file's hash and the command that reproduces it."""
    registry = tmp_path / "calibrations.json"
    arguments = ["--embedder", "hashing", "--record", "--json", "--registry", str(registry)]
    run = subprocess.run(
        [sys.executable, str(SCRIPT), *arguments],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr

    result = json.loads(run.stdout)
    found = calibration_for("hashing-256", registry)
    assert found is not None
    assert found.max_distance == result["recommended"]["threshold"] == 0.17
    assert found.false_merges == result["recommended"]["false_merges"] == 0
    assert (found.band_name, found.band_full) == (result["band"]["name"], result["band"]["full"])
    assert found.band_different_contested == result["band"]["different_contested"]
    assert result["band"]["different_contested"] <= 0.08 * found.different_pairs
    assert found.misses == result["recommended"]["misses"]
    assert found.max_distance < found.closest_different
    assert found.pairs_sha256 == hashlib.sha256(PAIRS.read_bytes()).hexdigest()
    assert found.command == "python scripts/calibrate_threshold.py --embedder hashing --record"
    assert result["recorded"]["hashing-256"]["max_distance"] == 0.17


def test_the_script_records_a_given_threshold_with_its_errors_and_reason(tmp_path: Path) -> None:
    """`--threshold` records a chosen value, measured at that value, with the note saying
    why: what the hashing embedder's shipped entry is."""
    registry = tmp_path / "calibrations.json"
    script = calibration_script()
    arguments = ["--embedder", "hashing", "--threshold", "0.12", "--no-bands", "--note", "tests"]
    code = script.main([*arguments, "--record", "--registry", str(registry)])

    assert code == 0
    found = calibration_for("hashing-256", registry)
    assert found is not None
    assert (found.max_distance, found.false_merges, found.misses) == (0.12, 0, 194)
    assert (found.band_name, found.band_full) == (None, None)
    assert found.chosen_by == "given (--threshold)"
    assert found.note == "tests"
    assert "--threshold 0.12 --note tests --no-bands --record" in found.command


@pytest.mark.model
def test_the_script_reproduces_the_local_models_threshold(tmp_path: Path) -> None:
    """Measured again with the real model: 0.12, 0 of 297 false merges, 151 of 357 missed,
    the same band as shipped."""
    registry = tmp_path / "calibrations.json"
    assert calibration_script().main(["--record", "--registry", str(registry)]) == 0

    found = calibration_for("all-MiniLM-L6-v2/int8-onnx", registry)
    shipped = calibration_for("all-MiniLM-L6-v2/int8-onnx")
    assert found is not None and shipped is not None
    assert (found.max_distance, found.false_merges, found.misses) == (0.12, 0, 151)
    assert (found.band_name, found.band_full) == (shipped.band_name, shipped.band_full)
    assert found.closest_different == pytest.approx(shipped.closest_different, abs=1e-4)


def test_the_script_fails_cleanly_on_a_bad_embedder_setting(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert calibration_script().main(["--embedder", "local", "--model", "x"]) == 1
    assert "Error: the local embedder has one model" in capsys.readouterr().err


# -- vectors of two models -----------------------------------------------------------------------


def test_exact_search_refuses_vectors_of_another_size() -> None:
    """A query of 384 values against stored rows of 256 is two models: refused with a clear
    error instead of a numpy broadcasting error or a wrong distance."""
    stored = np.eye(2, 256, dtype=np.float32)
    query = np.eye(1, 384, dtype=np.float32)
    with pytest.raises(EmbeddingMismatch, match="two embedding models"):
        exact_nearest(["a", "b"], stored, query, 1)


class Impostor(HashingEmbedder):
    """Another model (128 values) under the hashing embedder's model id."""

    def __init__(self) -> None:
        super().__init__(128)
        self.model_id = "hashing-256"


def test_two_models_under_one_id_fail_the_job_instead_of_comparing(
    make_memory: MemoryFactory,
) -> None:
    """A model swapped under the same id meets the old model's cached vectors: the job fails
    with an error that names the cause, its events stay, and no fact is written from it."""
    first = make_memory()
    say(first, "bike_count", {"count": 3}, when=at(0))
    first.consolidate()
    first.close()

    swapped = make_memory(embedder=Impostor())
    swapped.add_event(
        subject=SUBJECT,
        text="two claims",
        occurred_at=at(60),
        claims=[
            {"predicate": "bike_count", "value": {"count": 3}},  # cached: 256 values
            {"predicate": "car_count", "value": {"count": 1}},  # new: 128 values
        ],
    )
    report = swapped.consolidate()

    assert report.jobs_failed == 1
    failed = [j for j in swapped.jobs() if j.status is JobStatus.FAILED]
    assert len(failed) == 1 and failed[0].error is not None
    assert "two models have used this id" in failed[0].error
    assert [f.predicate for f in every_fact(swapped)] == ["bike_count"]


class Short(HashingEmbedder):
    """An embedder whose vectors are not the size it declares."""

    def embed_batch(self, texts: Sequence[str]) -> Vector:
        return super().embed_batch(texts)[:, :100]


def test_an_embedder_whose_vectors_break_its_declared_size_fails_the_job(
    make_memory: MemoryFactory,
) -> None:
    mem = make_memory(embedder=Short())
    say(mem, "bike_count", {"count": 3}, when=at(0))
    report = mem.consolidate()

    assert report.jobs_failed == 1
    assert "says its vectors have 256 values" in (mem.jobs()[0].error or "")
    assert every_fact(mem) == []


def test_make_embedder_refuses_settings_it_would_ignore() -> None:
    with pytest.raises(ConfigurationError, match="one model"):
        make_embedder("hashing", model="bge-small")
    with pytest.raises(ConfigurationError, match="unknown embedder"):
        make_embedder("word2vec")
