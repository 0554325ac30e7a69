"""Calibrate the derive pass's clustering distance for an embedder, and record it.

The derive pass (`distill.core.votes`) clusters the observed values of one attribute by the
cosine distance of their surface forms: two forms within the distance count as one value
("Newcastle United F.C." / "Newcastle United FC"). This script measures the distance on the
calibration half of the YAGO15k playsFor clubs (`distill.eval.derive.split_of`), read from
the shared data folder: each club with its other forms (same) and every two clubs, as named
and bare (different). It picks the largest 0.01 step at which at most
`FALSE_MERGE_MAX` of the different pairs would be clustered, prints the figures of both
halves at that distance (the held-out half is what `distill eval derive` reports), and with
`--record` stores them beside the embedder's identity threshold in
distill/adapters/embed/calibrations.json (key `derive_cluster`).

    python scripts/calibrate_derive.py [--embedder local|hashing] [--data DIR] [--json]
        [--record [--registry FILE]]
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from distill.adapters.embed import close_embedder, make_embedder
from distill.adapters.embed.calibrations import REGISTRY, record_derive_cluster
from distill.eval import default_data_dir
from distill.eval.derive import (
    DATA,
    FALSE_MERGE_MAX,
    at_distance,
    choose_distance,
    clubs,
    pairs,
    split_of,
    texts_for,
)

REPORTED_DISTANCES = (0.05, 0.10, 0.15, 0.20, 0.25)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedder", default="local")
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--record", action="store_true")
    parser.add_argument("--registry", type=Path, default=REGISTRY)
    args = parser.parse_args()
    data_dir = args.data or default_data_dir()
    timelines = json.loads(data_dir.joinpath(*DATA).read_text(encoding="utf-8"))["timelines"]
    names = clubs(timelines)
    halves = {
        "calibration": [c for c in names if split_of(c) == "calibration"],
        "held-out": [c for c in names if split_of(c) == "held-out"],
    }
    embedder = make_embedder(args.embedder)
    try:
        texts = texts_for(names)
        vectors = dict(zip(texts, embedder.embed_batch(texts), strict=True))
        cal = pairs(halves["calibration"])
        held = pairs(halves["held-out"])
        distance = choose_distance(cal, vectors)
        measured = {
            "max_distance": distance,
            "calibration": at_distance(cal, vectors, distance),
            "held_out": at_distance(held, vectors, distance),
            "chosen_by": (
                f"largest 0.01 step with at most {FALSE_MERGE_MAX:g} of the calibration "
                "clubs' different pairs clustered"
            ),
            "calibration_split": "YAGO15k playsFor clubs, sha256(name)[0] even",
            "measured_on": datetime.now(UTC).date().isoformat(),
            "command": "python scripts/calibrate_derive.py "
            + shlex.join(["--embedder", args.embedder, "--record"]),
        }
        sweep = {
            f"{d:.2f}": {
                "calibration": at_distance(cal, vectors, d),
                "held_out": at_distance(held, vectors, d),
            }
            for d in REPORTED_DISTANCES
        }
        if args.json:
            print(json.dumps({"chosen": measured, "sweep": sweep}, indent=2))
        else:
            print(f"embedder {embedder.model_id}: derive cluster distance {distance:g}")
            for name in ("calibration", "held_out"):
                print(f"  {name}: {measured[name]}")
            for d, row in sweep.items():
                print(f"  at {d}: calibration {row['calibration']}")
                print(f"          held-out    {row['held_out']}")
        if args.record:
            record_derive_cluster(embedder.model_id, measured, args.registry)
            print(f"recorded in {args.registry}")
    finally:
        close_embedder(embedder)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
