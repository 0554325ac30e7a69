"""The semantic-match threshold of each embedder, as measured: a registry keyed by `model_id`.

A new claim is filed under an existing fact of another predicate when the cosine distance of
their identity texts is at most a threshold. That distance is a property of one model: the
same pair of texts is 0.12 apart for all-MiniLM-L6-v2 and 0.03 for multilingual-e5-small,
whose distances are compressed. So the threshold is not a constant of the engine but an entry
per embedder in ``calibrations.json`` (shipped next to this module), written by
``scripts/calibrate_threshold.py --record`` with the numbers behind it: the false merges and
missed paraphrases on the hand-written pairs at that threshold, the pairs file's hash, the
date and the command.

An embedder with no entry gets no threshold: matching by meaning is off for it (exact
predicate and learned aliases still work) and one warning says which command calibrates it.
Guessing another model's number would either merge different attributes (a false merge can
hide a real value) or never match at all, silently; off and said is the honest default.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import tempfile
import threading
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from distill.core.attribute_match import Bands
from distill.errors import ConfigurationError
from distill.ports import Embedder

log = logging.getLogger("distill.embed")

REGISTRY = Path(__file__).with_name("calibrations.json")
SCRIPT = "python scripts/calibrate_threshold.py"
_COMMENT = (
    "Semantic-match thresholds per embedder model_id, written by "
    "scripts/calibrate_threshold.py --record. max_distance is a cosine distance; the counts "
    "are the pairs of scripts/calibration_pairs.json (pairs_sha256) merged wrongly or missed "
    "at that threshold. An embedder missing here matches by exact predicate and aliases only."
)

# Sections of an entry that other scripts measure and record (calibrate_offline_merge.py,
# calibrate_derive.py): an entry recorded without one keeps the one it had.
OTHER_SCRIPTS = ("offline_merge", "derive_cluster")

_warned: set[str] = set()
_warned_lock = threading.Lock()


@dataclass(frozen=True)
class Calibration:
    """One embedder's threshold and the measurement it was chosen from."""

    model_id: str
    max_distance: float  # cosine distance at or under which two identity texts are one attribute
    false_merges: int  # different-attribute pairs that would merge at max_distance
    different_pairs: int
    misses: int  # same-attribute pairs that would not merge at max_distance
    same_pairs: int
    closest_different: float  # distance of the closest different pair no guard vetoes
    chosen_by: str  # the rule that gave max_distance, or "given" with the reason in `note`
    pairs_sha256: str
    measured_on: str  # ISO date
    command: str
    note: str = ""
    # The band of "probably the same attribute" (contested, not merged): names alone this
    # close, or identity texts this close (cosine distances; None: that test is off). Chosen
    # by the script as the widest band that keeps different-attribute pairs contested under
    # BAND_CONTESTED_MAX of them; `band_*` counts are measured with the name guards on.
    band_name: float | None = None
    band_full: float | None = None
    band_same_flagged: int | None = None  # same-attribute pairs merged or contested
    band_different_contested: int | None = None  # different-attribute pairs contested
    # The wider band used when a judge model decides the contested pairs (a model's time, not
    # a person's): chosen the same way under JUDGE_BAND_CONTESTED_MAX; None: the band above.
    judge_band_name: float | None = None
    judge_band_full: float | None = None
    judge_band_same_flagged: int | None = None
    judge_band_different_asked: int | None = None
    # The offline tier's merge distance for free-text memories (cosine distance of the raw
    # texts) with the figures it was chosen from, written by
    # scripts/calibrate_offline_merge.py --record; None: not calibrated, the tier is off.
    # `max_distance` inside it may itself be None: calibrated, and no distance is safe.
    offline_merge: dict[str, Any] | None = None
    # The derive pass's clustering distance for observed values (cosine distance of their
    # surface forms: "adoption agencies" / "adoption agency") with the figures it was chosen
    # from, written by scripts/calibrate_derive.py --record; None: not calibrated, every
    # value is its own cluster (the exact mode).
    derive_cluster: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if not 0.0 <= self.max_distance <= 2.0:
            raise ConfigurationError(
                f"calibration of {self.model_id!r}: max_distance {self.max_distance} is not "
                "a cosine distance between 0 and 2"
            )

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        del data["model_id"]  # the registry's key
        return {k: v for k, v in data.items() if v is not None and v != ""}

    @classmethod
    def from_dict(cls, model_id: str, data: dict[str, Any]) -> Calibration:
        try:
            return cls(model_id=model_id, **data)
        except TypeError as exc:
            raise ConfigurationError(f"calibration of {model_id!r} is malformed: {exc}") from exc

    def summary(self) -> str:
        return (
            f"{self.max_distance:g} ({self.false_merges}/{self.different_pairs} false merges, "
            f"{self.misses}/{self.same_pairs} missed, {self.measured_on})"
        )


def load(path: Path = REGISTRY) -> dict[str, Calibration]:
    """Every calibration of a registry file, by model id."""
    return dict(_load(str(path), _mtime(path)))


@functools.lru_cache(maxsize=8)
def _load(path: str, mtime: float) -> tuple[tuple[str, Calibration], ...]:
    # Keyed by modification time too: a `--record` in this process is seen at once.
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return ()
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"cannot read the calibrations {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigurationError(f"{path}: expected an object keyed by model id")
    return tuple(
        (model_id, Calibration.from_dict(model_id, entry))
        for model_id, entry in sorted(data.items())
        if not model_id.startswith("_")
    )


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def calibration_for(model_id: str, path: Path = REGISTRY) -> Calibration | None:
    return load(path).get(model_id)


def record(calibration: Calibration, path: Path = REGISTRY) -> None:
    """Write (or replace) one embedder's entry; the others are kept as they are. An entry
    written without an offline-merge or derive calibration keeps the one it had: the
    scripts measure different things and none should erase another's."""
    entries = load(path)
    old = entries.get(calibration.model_id)
    if old is not None:
        kept = {
            section: getattr(old, section)
            for section in OTHER_SCRIPTS
            if getattr(calibration, section) is None and getattr(old, section) is not None
        }
        calibration = replace(calibration, **kept)
    entries[calibration.model_id] = calibration
    document: dict[str, Any] = {"_comment": _COMMENT}
    document.update({k: entries[k].to_dict() for k in sorted(entries)})
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    # Written beside the target and renamed over it: a reader never sees half a file.
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".calibrations-", suffix=".json")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def calibrate_command(embedder: Embedder) -> str:
    """The command that measures and records this embedder's threshold. An adapter names its
    own arguments of the script in `calibrate_args` (``("--embedder", "ollama", ...)``)."""
    args = getattr(embedder, "calibrate_args", None)
    if not args:
        return f"{SCRIPT} --embedder NAME --record (see its --help)"
    return " ".join([SCRIPT, *map(str, args), "--record"])


def match_bands(embedder: Embedder, path: Path = REGISTRY, judged: bool = False) -> Bands:
    """The calibrated distances of `embedder`, or empty `Bands` (matching by meaning off,
    names matched by their words only) with one warning per model id and process saying
    how to calibrate it. `judged`: a judge model decides the contested pairs, so the wider
    judge band applies (when one was calibrated) and `Bands.judged` is set. A claim stated as
    a change is contested within the judge band either way (`Bands.change_name`)."""
    found = calibration_for(embedder.model_id, path)
    if found is not None:
        name, full = found.band_name, found.band_full
        if judged and (found.judge_band_name, found.judge_band_full) != (None, None):
            name, full = found.judge_band_name, found.judge_band_full
        return Bands(
            same=found.max_distance,
            name=name,
            full=full,
            judged=judged,
            change_name=found.judge_band_name,
            change_full=found.judge_band_full,
        )
    with _warned_lock:
        first = embedder.model_id not in _warned
        _warned.add(embedder.model_id)
    if first:
        log.warning("%s", uncalibrated(embedder))
    return Bands(judged=judged)


def match_distance(embedder: Embedder, path: Path = REGISTRY) -> float | None:
    """The calibrated merge threshold of `embedder` alone (None: uncalibrated)."""
    return match_bands(embedder, path).same


def record_offline_merge(model_id: str, measured: dict[str, Any], path: Path = REGISTRY) -> None:
    """Set the offline-merge calibration of an embedder that already has an entry."""
    found = calibration_for(model_id, path)
    if found is None:
        raise ConfigurationError(
            f"{model_id} has no calibration entry in {path}; run `{SCRIPT} --record` for it "
            "first, the offline-merge distance is recorded beside its identity threshold"
        )
    record(replace(found, offline_merge=dict(measured)), path)


def offline_merge_distance(embedder: Embedder, path: Path = REGISTRY) -> float | None:
    """The offline tier's calibrated merge distance for `embedder`; None when it has none
    (not calibrated, or calibrated with no safe distance): the tier is then off."""
    found = calibration_for(embedder.model_id, path)
    if found is None or not found.offline_merge:
        return None
    value = found.offline_merge.get("max_distance")
    return float(value) if value is not None else None


def uncalibrated(embedder: Embedder) -> str:
    """What matching does for an embedder without a calibration, and how to give it one."""
    return (
        f"the embedder {embedder.model_id} has no calibrated threshold, so claims are matched "
        "to facts by exact predicate and learned aliases only, not by meaning. Calibrate it "
        f"with `{calibrate_command(embedder)}`, or pass Memory(max_distance=...)"
    )


def record_derive_cluster(model_id: str, measured: dict[str, Any], path: Path = REGISTRY) -> None:
    """Set the derive pass's clustering calibration of an embedder that has an entry."""
    found = calibration_for(model_id, path)
    if found is None:
        raise ConfigurationError(
            f"{model_id} has no calibration entry in {path}; run `{SCRIPT} --record` for it "
            "first, the derive clustering distance is recorded beside its identity threshold"
        )
    record(replace(found, derive_cluster=dict(measured)), path)


def derive_cluster_distance(embedder: Embedder, path: Path = REGISTRY) -> float | None:
    """The cosine distance within which the derive pass clusters two observed values as
    paraphrases, calibrated for `embedder` by scripts/calibrate_derive.py; None when it has
    none: each value is then its own cluster (the exact mode)."""
    found = calibration_for(embedder.model_id, path)
    if found is None or not found.derive_cluster:
        return None
    value = found.derive_cluster.get("max_distance")
    return float(value) if value is not None else None
