"""Calibrate the offline tier's merge distance of an embedder, and record it in the registry.

The offline tier (`statements.offline_merge`) merges two free-text memories when the cosine
distance of their raw texts is within a distance and `merge_objections` finds nothing in
either direction. This script measures it on the calibration splits only, SICK TRAIN+TRIAL
and STS-B train+dev, read from the shared data folder (never copied here; the test splits
that `distill eval pairs` reports are not read), and picks the largest distance, in steps of
0.01, at which the tier merges at most 1% of the SICK contradiction pairs and at most 1% of
the STS-B pairs scored under 2 (STS-B has no contradiction label; its low-scored pairs are
the different statements it has). At that distance it prints, and with `--record` stores
beside the embedder's identity threshold in distill/adapters/embed/calibrations.json (key
`offline_merge`):

* contradiction and negation pairs merged, the scripted merge-everything judge's figures;
* paraphrase recall: SICK pairs entailing each other both ways (the target's figure) and
  STS-B pairs scored 4 or more (see distill/eval/offline.py for why both, and why the first
  carries the target).

When no distance keeps the bounds, `max_distance` is recorded as null: the tier stays off
for that embedder, and the entry says it was measured.

    python scripts/calibrate_offline_merge.py [--embedder local|hashing] [--data DIR]
        [--show N] [--json] [--record [--registry FILE]]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shlex
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from distill.adapters.embed import close_embedder, make_embedder
from distill.adapters.embed.calibrations import REGISTRY, record_offline_merge
from distill.eval import default_data_dir
from distill.eval.offline import (
    CONTRADICTIONS_MERGED_MAX,
    UNRELATED_MERGED_MAX,
    Probe,
    Sets,
    choose_distance,
    figures,
    measure,
)
from distill.eval.pairs import SICK_FILE, STS_DIR, read_sick, read_sts

SICK_SPLITS = ("TRAIN", "TRIAL")
STS_FILES = ("sts-train.csv", "sts-dev.csv")
SPLIT = "SICK TRAIN+TRIAL, STS-B train+dev"
REPORTED_DISTANCES = (0.05, 0.10, 0.15, 0.20, 0.25, 0.30)


def show(title: str, found: list[Probe], limit: int) -> None:
    print(f"\n{title}: {len(found)}")
    for p in sorted(found, key=lambda p: p.distance)[:limit]:
        why = ",".join(p.objections) or "-"
        print(f"  {p.distance:.3f} [{why}] {p.a!r} / {p.b!r}")


def line(f: dict[str, Any]) -> str:
    return (
        f"contradictions {f['contradictions_merged']:.4f}  negations {f['negations_merged']:.4f}"
        f"  SICK paraphrase recall {f['paraphrase_recall']:.4f}  STS-B 4–5 "
        f"{f['sts_paraphrase_recall']:.4f}  STS-B 0–2 {f['sts_unrelated_merged']:.4f}"
    )


def entry(sets: Sets, chosen: float | None, args: argparse.Namespace) -> dict[str, Any]:
    sick = args.data.joinpath(*SICK_FILE)
    command = ["python", "scripts/calibrate_offline_merge.py", "--embedder", args.embedder]
    return {
        **figures(sets, chosen),
        "chosen_by": (
            f"largest 0.01 step with SICK contradictions merged ≤ {CONTRADICTIONS_MERGED_MAX:g}"
            f" and STS-B pairs scored under 2 merged ≤ {UNRELATED_MERGED_MAX:g}"
        ),
        "calibration_split": SPLIT,
        "paraphrase": "SICK: entailment both ways; STS-B: score ≥ 4",
        "sick_sha256": hashlib.sha256(sick.read_bytes()).hexdigest(),
        "measured_on": datetime.now(UTC).date().isoformat(),
        "command": shlex.join([*command, "--record"]),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedder", choices=("local", "hashing"), default="local")
    parser.add_argument("--data", type=Path, default=default_data_dir())
    parser.add_argument("--show", type=int, default=15, help="pairs listed per kind")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--record", action="store_true", help="write the registry entry")
    parser.add_argument("--registry", type=Path, default=REGISTRY, help="the registry file")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    sick = read_sick(args.data.joinpath(*SICK_FILE), SICK_SPLITS)
    sts = [p for name in STS_FILES for p in read_sts(args.data / STS_DIR / name)]
    embedder = make_embedder(args.embedder)
    try:
        sets = measure(embedder, sick, sts, lambda done, total: None)
        model_id = embedder.model_id
    finally:
        close_embedder(embedder)
    chosen = choose_distance(sets)
    found = entry(sets, chosen, args)
    found["seconds"] = round(time.perf_counter() - started, 1)
    if args.record:
        record_offline_merge(
            model_id, {k: v for k, v in found.items() if k != "seconds"}, args.registry
        )
    if args.json:
        print(json.dumps({"model_id": model_id, **found}, indent=2, ensure_ascii=False))
        return 0

    print(f"model: {model_id}   calibration split: {SPLIT}")
    print(
        f"pairs: {len(sets.contradiction)} contradictions, {len(sets.negation)} negations, "
        f"{len(sets.paraphrase)} SICK paraphrases, {len(sets.sts_paraphrase)} STS-B 4–5, "
        f"{len(sets.sts_unrelated)} STS-B 0–2\n"
    )
    for at in REPORTED_DISTANCES:
        print(f"  at {at:.2f}: {line(figures(sets, at))}")
    print(f"  judge (every pair proposed, words only): {line(figures(sets, 2.0))}")
    if chosen is None:
        print("\nno distance keeps the bounds: the offline tier stays off for this embedder")
    else:
        print(f"\nchosen {chosen:.2f}: {line(figures(sets, chosen))}")
        show(
            "contradiction pairs merged at the chosen distance",
            [p for p in sets.contradiction if p.offline_merged(chosen)],
            args.show,
        )
        show(
            "paraphrase pairs within the distance that an objection refuses",
            [p for p in sets.paraphrase if p.distance <= chosen and p.objections],
            args.show,
        )
    print(f"\n{found['seconds']:.1f} s")
    if args.record:
        print(f"recorded in {args.registry}: {model_id} -> offline_merge {chosen}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
