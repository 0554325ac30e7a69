"""Calibrate the semantic-match threshold (SEMANTIC_MATCH_MAX_DISTANCE) of the default embedder.

A new claim is filed under an existing fact's predicate when the cosine distance between their
identity texts (`identity_text(predicate, value)`: "favorite color: blue") is at most the
threshold, unless `contrasting` vetoes the pair (the predicates differ in a numbered token,
"personal_best_5k" / "personal_best_10k"). This script embeds hand-written pairs of
(predicate, value) with the real LocalEmbedder. The pairs live in calibration_pairs.json:

* same, value equal: one attribute under two names, same value (a reinforcement);
* same, value changed: one attribute under two names, new value (an update);
* different: two close attributes (first/last name, step goal/step count), some with equal
  values ("bike count: 2" / "car count: 2"), which must not merge.

A vetoed pair never merges. A false merge (two attributes treated as one) can hide a real
value, a miss only leaves a second fact, so a false merge costs FALSE_MERGE_COST misses.
The script prints the pairs by distance, the threshold with the lowest cost (ties go to the
lowest), the largest threshold with no false merge and the error rates at a few thresholds.

    python scripts/calibrate_threshold.py [--json] [--pairs FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from distill.adapters.embed.local import LocalEmbedder
from distill.core.adjudicate import SEMANTIC_MATCH_MAX_DISTANCE
from distill.core.identity import contrasting, identity_text

PAIRS_FILE = Path(__file__).with_name("calibration_pairs.json")
FALSE_MERGE_COST = 3  # in misses
REPORTED_THRESHOLDS = (0.15, 0.20, 0.25, 0.27, 0.30)
MIN_SAME = 45
MIN_DIFFERENT = 45


@dataclass(frozen=True)
class Pair:
    same: bool  # one attribute under two names
    equal_values: bool  # both sides show the same value
    a: tuple[str, dict[str, Any]]
    b: tuple[str, dict[str, Any]]

    @property
    def text_a(self) -> str:
        return identity_text(*self.a)

    @property
    def text_b(self) -> str:
        return identity_text(*self.b)

    @property
    def vetoed(self) -> bool:
        return contrasting(self.a[0], self.b[0])

    @property
    def kind(self) -> str:
        return f"{'same' if self.same else 'diff'}{'=' if self.equal_values else '≠'}"


@dataclass(frozen=True)
class Measured:
    pair: Pair
    distance: float

    def merges(self, threshold: float) -> bool:
        # As the adjudicator does: vetoed pairs never merge; rounded so that "exactly at the
        # threshold" survives float noise.
        return not self.pair.vetoed and round(self.distance, 6) <= threshold


def _shown_value(predicate: str, value: dict[str, Any]) -> str:
    return identity_text(predicate, value).removeprefix(identity_text(predicate))


def load_pairs(path: Path) -> list[Pair]:
    data = json.loads(path.read_text(encoding="utf-8"))
    pairs: list[Pair] = []
    for group, same in (("same_value", True), ("changed_value", True), ("different", False)):
        for (pa, va), (pb, vb) in data[group]:
            equal = _shown_value(pa, va) == _shown_value(pb, vb)
            if same and equal != (group == "same_value"):
                raise SystemExit(f"{path}: {pa}/{pb} is filed under {group!r}")
            pairs.append(Pair(same, equal, (pa, va), (pb, vb)))
    n_same = sum(p.same for p in pairs)
    if n_same < MIN_SAME or len(pairs) - n_same < MIN_DIFFERENT:
        raise SystemExit(f"{path}: need {MIN_SAME} same and {MIN_DIFFERENT} different pairs")
    texts = [(p.text_a, p.text_b) for p in pairs]
    if len(set(texts)) != len(texts):
        raise SystemExit(f"{path}: a pair is listed twice")
    return pairs


def measure(embedder: LocalEmbedder, pairs: list[Pair]) -> list[Measured]:
    texts = sorted({t for p in pairs for t in (p.text_a, p.text_b)})
    vectors = dict(zip(texts, embedder.embed_batch(texts).astype("float64"), strict=True))
    return [Measured(p, 1.0 - float(vectors[p.text_a] @ vectors[p.text_b])) for p in pairs]


def summary(rows: list[Measured], threshold: float) -> dict[str, Any]:
    """Errors when non-vetoed pairs at distance <= threshold merge."""
    same = [r for r in rows if r.pair.same]
    diff = [r for r in rows if not r.pair.same]
    false_merges = [r for r in diff if r.merges(threshold)]
    misses = [r for r in same if not r.merges(threshold)]
    return {
        "threshold": threshold,
        "cost": FALSE_MERGE_COST * len(false_merges) + len(misses),
        "false_merges": len(false_merges),
        "false_merge_rate": round(len(false_merges) / len(diff), 4),
        "false_merges_equal_values": sum(r.pair.equal_values for r in false_merges),
        "misses": len(misses),
        "miss_rate": round(len(misses) / len(same), 4),
        "misses_equal_values": sum(r.pair.equal_values for r in misses),
        "misses_changed_values": sum(not r.pair.equal_values for r in misses),
    }


def calibrate(rows: list[Measured]) -> dict[str, Any]:
    live = [r for r in rows if not r.pair.vetoed]
    candidates = sorted({0.0, *(round(r.distance, 6) for r in live)})
    best = min(candidates, key=lambda t: (summary(rows, t)["cost"], t))
    safe = max(t for t in candidates if summary(rows, t)["false_merges"] == 0)
    closest = min((r for r in live if not r.pair.same), key=lambda r: r.distance)
    same_values = [r for r in rows if r.pair.same and r.pair.equal_values]
    changed_values = [r for r in rows if r.pair.same and not r.pair.equal_values]
    return {
        "same_pairs": len(same_values) + len(changed_values),
        "same_pairs_equal_values": len(same_values),
        "same_pairs_changed_values": len(changed_values),
        "different_pairs": sum(not r.pair.same for r in rows),
        "different_pairs_equal_values": sum(not r.pair.same and r.pair.equal_values for r in rows),
        "vetoed_pairs": len(rows) - len(live),
        "false_merge_cost": FALSE_MERGE_COST,
        "current_threshold": SEMANTIC_MATCH_MAX_DISTANCE,
        "min_cost": summary(rows, best),
        "zero_false_merges": summary(rows, safe),
        "closest_different_pair": {
            "distance": closest.distance,
            "a": closest.pair.text_a,
            "b": closest.pair.text_b,
        },
        "at": [summary(rows, t) for t in REPORTED_THRESHOLDS],
    }


def _line(s: dict[str, Any], result: dict[str, Any]) -> str:
    return (
        f"false merges {s['false_merges']:>2}/{result['different_pairs']} "
        f"({s['false_merge_rate']:6.1%}, {s['false_merges_equal_values']} with equal values)  "
        f"misses {s['misses']:>2}/{result['same_pairs']} ({s['miss_rate']:6.1%}: "
        f"{s['misses_equal_values']} reinforcements, {s['misses_changed_values']} updates)  "
        f"cost {s['cost']}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print everything as JSON")
    parser.add_argument("--pairs", type=Path, default=PAIRS_FILE, help="the pairs file")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    pairs = load_pairs(args.pairs)
    embedder = LocalEmbedder()
    rows = sorted(measure(embedder, pairs), key=lambda r: r.distance)
    result = calibrate(rows)
    result["model_id"] = embedder.model_id
    result["seconds"] = round(time.perf_counter() - started, 2)

    if args.json:
        result["pairs"] = [
            {
                "kind": "same" if r.pair.same else "different",
                "equal_values": r.pair.equal_values,
                "distance": r.distance,
                "vetoed": r.pair.vetoed,
                "a": {"predicate": r.pair.a[0], "value": r.pair.a[1], "text": r.pair.text_a},
                "b": {"predicate": r.pair.b[0], "value": r.pair.b[1], "text": r.pair.text_b},
            }
            for r in rows
        ]
        print(json.dumps(result, indent=2, ensure_ascii=False))
        return 0

    best = result["min_cost"]["threshold"]
    print(
        f"model: {result['model_id']}   a pair merges when not vetoed and distance <= threshold\n"
        "kind: same= reinforcement, same≠ update, diff= different attributes with equal "
        "values, diff≠ different attributes\n"
    )
    print(f"{'kind':<5}  {'distance':>8}  {'vetoed':<6}  {f'at {best:.4f}':<11}  pair")
    for r in rows:
        merged = r.merges(best)
        verdict = "" if merged == r.pair.same else ("FALSE MERGE" if merged else "miss")
        vetoed = "vetoed" if r.pair.vetoed else ""
        print(
            f"{r.pair.kind:<5}  {r.distance:8.4f}  {vetoed:<6}  {verdict:<11}  "
            f"{r.pair.text_a} / {r.pair.text_b}"
        )
    print(
        f"\n{result['same_pairs']} same pairs ({result['same_pairs_equal_values']} reinforcements,"
        f" {result['same_pairs_changed_values']} updates), {result['different_pairs']} different"
        f" pairs ({result['different_pairs_equal_values']} with equal values),"
        f" {result['vetoed_pairs']} vetoed by contrasting(); a false merge costs"
        f" {FALSE_MERGE_COST} misses\n"
    )
    s = result["min_cost"]
    print(f"(a) lowest cost (ties -> lowest):   threshold {s['threshold']:.4f}  {_line(s, result)}")
    s = result["zero_false_merges"]
    print(f"(b) largest with 0 false merges:    threshold {s['threshold']:.4f}  {_line(s, result)}")
    closest = result["closest_different_pair"]
    print(
        f"    closest non-vetoed different pair: {closest['distance']:.4f} "
        f"({closest['a']} / {closest['b']})"
    )
    print(
        "(c) at fixed thresholds"
        + f" (current SEMANTIC_MATCH_MAX_DISTANCE = {SEMANTIC_MATCH_MAX_DISTANCE}):"
    )
    for s in result["at"]:
        print(f"    threshold {s['threshold']:.2f}  {_line(s, result)}")
    print(f"\n{len(rows)} pairs in {result['seconds']:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
