"""Calibrate the identity guards (identity.veto) on the training side of SICK and STS-B.

Runs the `pairs` evaluation on SICK TRAIN+TRIAL and STS-B train+dev (never on the test sets
the suite reports), prints its tables, then the pairs a guard list would be tuned from:
contradiction and negation pairs the identity tier still matches, and paraphrase pairs
(entailment both ways) or STS-B pairs scored 4–5 that a guard vetoes.

    python scripts/calibrate_pairs.py [--data DIR] [--embedder local|hashing] [--show N]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from distill.core.identity import GUARDS
from distill.eval import EvalContext, default_data_dir
from distill.eval.pairs import Outcome, Pair, measure_all, summarise
from distill.service.eval_command import render

SICK_SPLITS = ("TRAIN", "TRIAL")
STS_FILES = ("sts-train.csv", "sts-dev.csv")


def show(title: str, found: list[tuple[Pair, Outcome]], limit: int) -> None:
    print(f"\n{title}: {len(found)}")
    for pair, outcome in found[:limit]:
        vetoes = ",".join(sorted(outcome.vetoed_by)) or "-"
        print(f"  {outcome.distance:.3f} [{vetoes}] {pair.a!r} / {pair.b!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=default_data_dir())
    parser.add_argument("--embedder", default="local")
    parser.add_argument("--show", type=int, default=25, help="pairs listed per kind")
    args = parser.parse_args()
    ctx = EvalContext(data_dir=args.data, embedder=args.embedder)
    measured = measure_all(ctx, SICK_SPLITS, STS_FILES)
    render(summarise(ctx, measured))
    sick_both, sts_both = measured.sick, measured.sts
    show(
        "SICK contradiction or negation pairs still matched",
        [(p, o) for p, o in sick_both if (p.group == "CONTRADICTION" or p.negation) and o.merged],
        args.show,
    )
    for guard in GUARDS:
        show(
            f"SICK paraphrase pairs within the threshold that {guard} vetoes",
            [
                (p, o)
                for p, o in sick_both
                if p.paraphrase and o.identity_merged(()) and guard in o.vetoed_by
            ],
            args.show,
        )
        show(
            f"STS-B 4–5 pairs within the threshold that {guard} vetoes",
            [
                (p, o)
                for p, o in sts_both
                if p.group == "4–5" and o.identity_merged(()) and guard in o.vetoed_by
            ],
            args.show,
        )


if __name__ == "__main__":
    main()
