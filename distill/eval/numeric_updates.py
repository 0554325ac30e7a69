"""`numeric-updates`: Wikidata population series, each value a dated claim arriving shuffled.

A population is the textbook single-valued number that changes: every new figure supersedes
the one before it, a repeated figure is the same fact stated again, and an old figure must
never be served as the current one. Each value becomes one event with a `population` claim
(`action: supersede`, `valid_from` = its year). Arrival is shuffled per entity and each round
of arrivals is consolidated before the next, so older figures really arrive after newer ones.

Checked per entity, against the series itself:
- the final value: `facts()` serves exactly the latest year's figure;
- every older value closed at the next value's start (its `valid_to` is the next change);
- values lost: a distinct run of the series with no fact holding it (must be 0);
- same-value repeats kept as one fact (the repeat reinforces, it is not a new version);
- leakage: figures other than the latest served by `facts()`;
- `facts(as_of=...)` in the middle of every year of the series gives that year's figure.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from distill.core.models import Fact, FactStatus
from distill.eval.context import STATED_AT, ArrivalClock, EvalContext, year_start
from distill.eval.results import Dataset, Metric, SuiteResult, Table
from distill.memory import Memory

NAME = "numeric-updates"
TITLE = "Numeric updates: Wikidata population series, shuffled arrival"
DATA = ("wikidata_temporal", "population_timelines.json")
LICENSE = "BSD-3 (mmkb); Wikidata CC0"


def runs(values: list[dict[str, Any]]) -> list[tuple[int, int, int | None]]:
    """The series as (value, first year, first year of the next different value): consecutive
    equal values are one run, one fact."""
    ordered = sorted(values, key=lambda v: v["year"])
    found: list[tuple[int, int, int | None]] = []
    for v in ordered:
        if found and found[-1][0] == v["value"]:
            continue
        if found:
            value, start, _ = found[-1]
            found[-1] = (value, start, v["year"])
        found.append((v["value"], v["year"], None))
    return found


def arrival_rounds(entities: list[dict[str, Any]], rng: Any) -> list[list[tuple[str, Any]]]:
    rounds: list[list[tuple[str, Any]]] = []
    for entity in entities:
        values = list(entity["values"])
        rng.shuffle(values)
        for r, value in enumerate(values):
            if r == len(rounds):
                rounds.append([])
            rounds[r].append((entity["subject"], value))
    return rounds


def ingest(ctx: EvalContext, mem: Memory, clock: ArrivalClock, rounds: list[list[Any]]) -> int:
    errors = 0
    for number, batch in enumerate(rounds, start=1):
        clock.step()
        mem.add_events(
            {
                "subject": subject,
                "text": f"{subject} population {v['value']} in {v['year']}",
                "source": "wikidata",
                "occurred_at": STATED_AT,
                "claims": [
                    {
                        "predicate": "population",
                        "value": {"count": v["value"]},
                        "action": "supersede",
                        "valid_from": year_start(v["year"]).isoformat(),
                    }
                ],
            }
            for subject, v in batch
        )
        errors += len(mem.consolidate().errors)
        ctx.progress("numeric-updates", number, len(rounds))
    return errors


def count(fact: Fact) -> Any:
    return (fact.value or {}).get("count")


def check_entity(mem: Memory, entity: dict[str, Any]) -> dict[str, int]:
    """What went right and wrong for one entity's series."""
    series = runs(entity["values"])
    subject = entity["subject"]
    every = [f for f in mem.facts(subject=subject, include_retired=True) if f.value]
    versions = [f for f in every if f.status in (FactStatus.ACTIVE, FactStatus.SUPERSEDED)]
    by_start: dict[datetime, list[Fact]] = {}
    for f in versions:
        by_start.setdefault(f.valid_from, []).append(f)
    served = [count(f) for f in mem.facts(subject=subject) if f.value]
    latest = series[-1][0]

    closed = lost = 0
    for value, start, next_start in series:
        held = [f for f in by_start.get(year_start(start), []) if count(f) == value]
        if not held:
            lost += 1
            continue
        if next_start is not None and held[0].valid_to == year_start(next_start):
            closed += 1
    as_of_right = as_of_total = 0
    for point in sorted(entity["values"], key=lambda v: v["year"]):
        expected = next(
            v for v, s, e in series if s <= point["year"] and (e is None or point["year"] < e)
        )
        mid_year = year_start(point["year"]) + timedelta(days=181)
        got = [count(f) for f in mem.facts(subject=subject, as_of=mid_year) if f.value]
        as_of_right += got == [expected]
        as_of_total += 1
    return {
        "final_right": int(served == [latest]),
        "leaked": sum(1 for v in served if v != latest),
        "older": len(series) - 1,
        "closed": closed,
        "lost": lost,
        "runs": len(series),
        "repeats": len(entity["values"]) - len(series),
        "extra_versions": max(0, len(versions) - len(series)),
        "as_of_right": as_of_right,
        "as_of_total": as_of_total,
    }


def run(ctx: EvalContext) -> SuiteResult:
    entities = ctx.take(ctx.read_json(*DATA)["timelines"])
    clock = ArrivalClock()
    with ctx.memory(extractor="claims", clock=clock) as mem:
        errors = ingest(ctx, mem, clock, arrival_rounds(entities, ctx.rng(NAME)))
        checks = [check_entity(mem, e) for e in entities]
    total = {key: sum(c[key] for c in checks) for key in checks[0]} if checks else {}
    n = len(entities) or 1
    final = round(total.get("final_right", 0) / n, 4)
    closed = round(total.get("closed", 0) / (total.get("older", 0) or 1), 4)
    as_of = round(total.get("as_of_right", 0) / (total.get("as_of_total", 0) or 1), 4)
    result = SuiteResult(
        suite=NAME,
        title=TITLE,
        datasets=[
            Dataset("Wikidata temporal KG population (P1082)", LICENSE, str(ctx.path(*DATA)))
        ],
        params={"entities": len(entities), "values": sum(len(e["values"]) for e in entities)},
        metrics=[
            Metric.at_least("final value correct", final, 1.0),
            Metric.at_least("older values closed at the next value's start", closed, 1.0),
            Metric.at_most("values lost", total.get("lost", 0), 0),
            Metric.at_most(
                "same-value repeats stored as extra versions",
                total.get("extra_versions", 0),
                0,
                f"{total.get('repeats', 0)} repeats in the series",
            ),
            Metric.at_most("stale values served by facts()", total.get("leaked", 0), 0),
            Metric.at_least("facts(as_of) gives that year's value", as_of, 1.0),
            Metric.at_most("consolidation errors", errors, 0),
        ],
    )
    result.tables.append(
        Table(
            "series",
            ["entities", "values", "distinct runs", "repeats", "older values", "as_of queries"],
            [
                [
                    len(entities),
                    result.params["values"],
                    total.get("runs", 0),
                    total.get("repeats", 0),
                    total.get("older", 0),
                    total.get("as_of_total", 0),
                ]
            ],
        )
    )
    return result
