"""The offline tier and a merge-everything judge, measured on sentence pairs (a part of
`distill eval pairs` and of scripts/calibrate_offline_merge.py).

The offline tier merges two free-text memories with no model in the loop: their raw texts
are embedded with the run's embedder and the pair merges when the cosine distance is within
the embedder's calibrated offline-merge distance and `statements.merge_objections` finds
nothing in either direction (`statements.offline_merge`). Either sentence may survive, so
both directions must be clean.

The merge-everything judge is the worst model the judge pass could be given: it proposes a
merge for every pair it is shown. What stops it is only the validator's word guard
(`merge_objections`, both directions); its merge rate on contradictions is what the guard
alone lets through.

What "paraphrase" means for the recall figure: on SICK, a pair whose sentences entail each
other (entailment_AB = A_entails_B and entailment_BA = B_entails_A). A merge asserts that
either text can stand for both; one-way entailment ("A man is playing a guitar" / "A person
is playing an instrument") loses a detail, which is exactly what the guard refuses, so it is
no paraphrase here. On STS-B, pairs scored 4 or more ("mostly equivalent"; 4 allows
"unimportant details differ"): reported beside it as a second view, with no target, because
the guard rightly refuses some of the details annotators found unimportant.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from distill.core.statements import CODES, merge_objections, offline_merge
from distill.eval.results import Metric, Table
from distill.ports import Embedder

CONTRADICTIONS_MERGED_MAX = 0.01  # share of SICK contradiction pairs, the target
NEGATIONS_MERGED_MAX = 0.0  # "always"/"never" is never merged by any tier (SCENARIOS 22)
PARAPHRASE_RECALL_MIN = 0.60  # share of SICK pairs that entail each other, the target
UNRELATED_MERGED_MAX = 0.01  # share of STS-B pairs scored under 2, a second calibration bound
# Candidate distances, in steps of 0.01 (cosine distance): two significant digits, so the
# value read in a table is the value used.
DISTANCE_STEPS = tuple(round(0.01 * i, 2) for i in range(0, 101))
# STS-B score bands (as `pairs.band_of` names them) read as paraphrases and as unrelated.
STS_PARAPHRASE_BANDS = frozenset({"4–5"})
STS_UNRELATED_BANDS = frozenset({"0–1", "1–2"})


class Labelled(Protocol):
    """A sentence pair with its dataset's labels (`pairs.Pair`)."""

    @property
    def a(self) -> str: ...
    @property
    def b(self) -> str: ...
    @property
    def group(self) -> str: ...
    @property
    def paraphrase(self) -> bool: ...
    @property
    def negation(self) -> bool: ...


@dataclass(frozen=True)
class Probe:
    """One pair as the offline tier and the scripted judge see it."""

    a: str
    b: str
    distance: float  # cosine distance of the two raw texts, rounded to 6 places
    objections: tuple[str, ...]  # objection codes, both directions, first one first

    def offline_merged(self, max_distance: float | None) -> bool:
        """Merged by the offline tier at `max_distance` (None: the tier is off)."""
        if max_distance is None:
            return False
        return offline_merge(self.a, self.b, self.distance, max_distance).merge

    @property
    def judge_merged(self) -> bool:
        """Merged by the judge that proposes every pair, once the word guard has spoken."""
        return not self.objections


def probe(
    embedder: Embedder, pairs: list[tuple[str, str]], progress: Callable[[int, int], None]
) -> list[Probe]:
    """Distance and objections of every pair; each distinct text is embedded once."""
    texts = sorted({t for pair in pairs for t in pair})
    vectors: dict[str, np.ndarray] = {}
    for start in range(0, len(texts), embedder.max_batch):
        chunk = texts[start : start + embedder.max_batch]
        vectors.update(zip(chunk, embedder.embed_batch(chunk), strict=True))
        progress(min(start + embedder.max_batch, len(texts)), len(texts))
    found = []
    for a, b in pairs:
        codes = [o.code for o in (*merge_objections(a, b), *merge_objections(b, a))]
        distance = round(1.0 - float(np.dot(vectors[a], vectors[b])), 6)
        found.append(Probe(a, b, distance, tuple(dict.fromkeys(codes))))
    return found


def rate(probes: list[Probe], merged: Callable[[Probe], bool]) -> float:
    return round(sum(map(merged, probes)) / len(probes), 4) if probes else 0.0


def merged_at(probes: list[Probe], max_distance: float | None) -> float:
    """Share of `probes` the offline tier merges at `max_distance`."""
    return rate(probes, lambda p: p.offline_merged(max_distance))


@dataclass(frozen=True)
class Sets:
    """The pair sets every figure is given on."""

    contradiction: list[Probe]
    negation: list[Probe]
    paraphrase: list[Probe]  # SICK, entailment both ways
    neutral: list[Probe]
    sts_paraphrase: list[Probe]  # STS-B, scored 4 or more
    sts_unrelated: list[Probe]  # STS-B, scored under 2

    def named(self) -> dict[str, list[Probe]]:
        return {
            "SICK contradiction": self.contradiction,
            "SICK negation (no/not on one side)": self.negation,
            "SICK paraphrase (entailment both ways)": self.paraphrase,
            "SICK neutral": self.neutral,
            "STS-B scored 4–5": self.sts_paraphrase,
            "STS-B scored 0–2": self.sts_unrelated,
        }


def figures(sets: Sets, max_distance: float | None) -> dict[str, float | int | None]:
    """The offline tier at `max_distance` and the scripted judge, as recorded and reported."""
    at = max_distance

    def offline(ps: list[Probe]) -> float:
        return rate(ps, lambda p: p.offline_merged(at))

    def judge(ps: list[Probe]) -> float:
        return rate(ps, lambda p: p.judge_merged)

    return {
        "max_distance": max_distance,
        "contradiction_pairs": len(sets.contradiction),
        "contradictions_merged": offline(sets.contradiction),
        "negation_pairs": len(sets.negation),
        "negations_merged": offline(sets.negation),
        "paraphrase_pairs": len(sets.paraphrase),
        "paraphrase_recall": offline(sets.paraphrase),
        "sts_paraphrase_pairs": len(sets.sts_paraphrase),
        "sts_paraphrase_recall": offline(sets.sts_paraphrase),
        "sts_unrelated_pairs": len(sets.sts_unrelated),
        "sts_unrelated_merged": offline(sets.sts_unrelated),
        "judge_contradictions_merged": judge(sets.contradiction),
        "judge_negations_merged": judge(sets.negation),
        "judge_paraphrase_recall": judge(sets.paraphrase),
    }


def choose_distance(sets: Sets) -> float | None:
    """The largest step at which the offline tier merges at most CONTRADICTIONS_MERGED_MAX
    of the contradiction pairs and UNRELATED_MERGED_MAX of the STS-B pairs scored under 2;
    None when not even 0.0 does. Both rates only grow with the distance."""
    best = None
    for step in DISTANCE_STEPS:
        contradictions = merged_at(sets.contradiction, step)
        unrelated = merged_at(sets.sts_unrelated, step)
        if contradictions > CONTRADICTIONS_MERGED_MAX or unrelated > UNRELATED_MERGED_MAX:
            break
        best = step
    return best


def metrics(
    where: str,
    sts_where: str,
    sets: Sets,
    max_distance: float | None,
    calibration: dict[str, Any] | None,
) -> list[Metric]:
    """The offline tier's and the scripted judge's figures on the reported split, each with
    the same figure on the calibration split beside it (from the registry)."""
    got = figures(sets, max_distance)
    cal = calibration or {}
    within = f"distance ≤ {max_distance:g}" if max_distance is not None else "no distance: off"

    def beside(key: str) -> str:
        value = cal.get(key)
        split = cal.get("calibration_split", "the calibration split")
        return (
            f"; calibration split ({split}): {value:.4f}" if isinstance(value, float | int) else ""
        )

    return [
        Metric.at_most(
            f"{where}: offline tier, contradiction pairs merged",
            float(got["contradictions_merged"] or 0.0),
            CONTRADICTIONS_MERGED_MAX,
            f"{got['contradiction_pairs']} pairs, {within}, no objection"
            + beside("contradictions_merged"),
        ),
        Metric.at_most(
            f"{where}: offline tier, negation pairs merged",
            float(got["negations_merged"] or 0.0),
            NEGATIONS_MERGED_MAX,
            f"{got['negation_pairs']} pairs{beside('negations_merged')}",
        ),
        Metric.at_least(
            f"{where}: offline tier, paraphrase recall",
            float(got["paraphrase_recall"] or 0.0),
            PARAPHRASE_RECALL_MIN,
            f"{got['paraphrase_pairs']} pairs entailing each other{beside('paraphrase_recall')}",
        ),
        Metric.info(
            f"{sts_where}: offline tier, pairs scored 4–5 merged",
            float(got["sts_paraphrase_recall"] or 0.0),
            f"{got['sts_paraphrase_pairs']} pairs{beside('sts_paraphrase_recall')}",
        ),
        Metric.info(
            f"{sts_where}: offline tier, pairs scored 0–2 merged",
            float(got["sts_unrelated_merged"] or 0.0),
            f"{got['sts_unrelated_pairs']} pairs{beside('sts_unrelated_merged')}",
        ),
        Metric.at_most(
            f"{where}: merge-everything judge, contradiction pairs merged",
            float(got["judge_contradictions_merged"] or 0.0),
            CONTRADICTIONS_MERGED_MAX,
            "every pair proposed, merge_objections both ways"
            + beside("judge_contradictions_merged"),
        ),
        Metric.at_most(
            f"{where}: merge-everything judge, negation pairs merged",
            float(got["judge_negations_merged"] or 0.0),
            NEGATIONS_MERGED_MAX,
            f"every pair proposed{beside('judge_negations_merged')}",
        ),
        Metric.info(
            f"{where}: merge-everything judge, paraphrase pairs merged",
            float(got["judge_paraphrase_recall"] or 0.0),
            f"what the guard leaves a judge to merge{beside('judge_paraphrase_recall')}",
        ),
    ]


def table(where: str, sets: Sets, max_distance: float | None) -> Table:
    """Share merged by the offline tier and the judge per set, and what the guard refused."""
    rows = []
    for name, probes in sets.named().items():
        close = [p for p in probes if max_distance is not None and p.distance <= max_distance]
        refused = Counter(p.objections[0] for p in close if p.objections)
        rows.append(
            [
                name,
                len(probes),
                rate(probes, lambda p: max_distance is not None and p.distance <= max_distance),
                rate(probes, lambda p: p.offline_merged(max_distance)),
                rate(probes, lambda p: p.judge_merged),
                *[refused.get(code, 0) for code in CODES],
            ]
        )
    return Table(
        f"{where}: offline tier and merge-everything judge (share merged; refusals of pairs "
        "within the distance, by first objection)",
        ["pairs", "n", "close", "offline", "judge", *CODES],
        rows,
    )


def measure(
    embedder: Embedder,
    sick: Sequence[Labelled],
    sts: Sequence[Labelled],
    progress: Callable[[int, int], None],
) -> Sets:
    """Probe the SICK pairs of every reported set and the STS-B pairs of the two bands."""
    sick_kept = [
        p for p in sick if p.group in ("CONTRADICTION", "NEUTRAL") or p.paraphrase or p.negation
    ]
    sts_kept = [p for p in sts if p.group in STS_PARAPHRASE_BANDS | STS_UNRELATED_BANDS]
    probes = probe(embedder, [(p.a, p.b) for p in [*sick_kept, *sts_kept]], progress)
    on_sick = list(zip(sick_kept, probes[: len(sick_kept)], strict=True))
    on_sts = list(zip(sts_kept, probes[len(sick_kept) :], strict=True))
    return Sets(
        contradiction=[o for p, o in on_sick if p.group == "CONTRADICTION"],
        negation=[o for p, o in on_sick if p.negation],
        paraphrase=[o for p, o in on_sick if p.paraphrase],
        neutral=[o for p, o in on_sick if p.group == "NEUTRAL"],
        sts_paraphrase=[o for p, o in on_sts if p.group in STS_PARAPHRASE_BANDS],
        sts_unrelated=[o for p, o in on_sts if p.group in STS_UNRELATED_BANDS],
    )


NOTES = [
    "Offline tier (statements.offline_merge): the two raw texts embedded, merged when their "
    "cosine distance is within the embedder's offline-merge distance (params."
    "offline_max_distance, calibrated by scripts/calibrate_offline_merge.py on SICK "
    "TRAIN+TRIAL and STS-B train+dev only) and merge_objections finds nothing in either "
    "direction. Merge-everything judge: a scripted judge proposing a merge for every pair, "
    "filtered only by merge_objections both ways. Each figure's note gives the same figure "
    "on the calibration split, as recorded with the distance.",
    "Offline-tier paraphrases: SICK pairs entailing each other both ways (the target's "
    "figure: a merge says either text stands for both, which one-way entailment does not); "
    "STS-B pairs scored 4–5 beside it, where annotators allow 'unimportant details' that the "
    "guard refuses (a name or a number on one side only), so it has no target.",
    "The offline table: n pairs, the share within the distance (close), merged by the "
    "offline tier and by the judge, and the pairs within the distance that each objection "
    "refused (by first objection).",
]
