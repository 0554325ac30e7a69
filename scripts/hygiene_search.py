"""A random search over histories that mix claims, a person's decisions and the hygiene
passes, checking the invariants after every step.

Each seed plays one history (`history`): six to thirty steps about one or two subjects.
Claims under two or three of four names (`bike_count` and `bike_class_count` half apart for
the embedder, so an identity set opens between them; `home_city`; `employer`, a `vote`
predicate in three histories of ten), a `create` or a `supersede`, a fifth stating the
period it held, some undated or told late, from every trust level; free-text memories
(repeats, near repeats, a negation, numbers, some said by a third party); consolidation (a
fifth of them dry, half of those followed by the same run for real); a person's decisions
(resolve an open set keeping a member or none, pin any fact, unpin, retract a live one);
the passes (dedupe online or offline, prune after the clock moved up to 500 days,
summarise, judge, judge_identities, derive), three in ten dry, mostly after a
consolidation. A last consolidation and three passes end it. The model is scripted from the
prompt with each step's own seed: a judge, a summariser and an identity judge that answer
at random within what they were asked; 4 % of calls find it down, 6 % get malformed JSON,
3 % a cut-off answer, and some answers name aliases the prompt never showed (a verdict's
target, a consumed memory, a member of a contradiction, a pair not asked about).

After every step it checks the invariants `hygiene_checks` lists (scripts/hygiene_checks.py;
scripts/hygiene_record.md keeps the record of what the search found), and the first
violation ends the history.

    python scripts/hygiene_search.py --minutes 40 [--start 0]   # seeds from 0 until then
    python scripts/hygiene_search.py --histories 2000 [--start 0]
    python scripts/hygiene_search.py --replay 506   # one history: its steps, state, violation

It prints the histories and steps played and a table of the violations by invariant and the
step they followed, with the first seed of each; the exit status is 1 when there was one.

tests/unit/test_hygiene_histories.py replays the seeds that found a class of violation.
"""

from __future__ import annotations

import itertools
import json
import logging
import random
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

import click
from hygiene_checks import (  # scripts/ is on the path when run as a script
    Violation,
    check_step,
    every_fact,
    line,
    written,
)
from rich.console import Console
from rich.table import Table

from distill import Memory
from distill.adapters.embed.hashing import HashingEmbedder, vectors_at_distance
from distill.core import identity_judge, memory_judge, summarise
from distill.core.identity import identity_text
from distill.errors import InvalidOperation, PinnedFact, TransientProviderError
from distill.ports import Completion

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
TRUSTS = ["trusted", "trusted", "semi_trusted", "third_party", "untrusted"]
NAMES = ["bike_count", "bike_class_count", "home_city", "employer"]
MEMORY_TEXTS = [  # repeats, near repeats, a negation, numbers, places, a name
    "I like green tea.", "I like green tea.", "I like green tea a lot.", "I really like green tea.",
    "i like green tea", "I do not like green tea.", "I live in Paris.", "I moved to Lyon.",
    "I live in Paris now.", "I have 3 bikes.", "I have 4 bikes.", "My cat is called Miso.",
    "My cat is named Miso.", "I run on Sundays.", "I run on Sundays",
]  # fmt: skip
PASSES = ["dedupe", "prune", "summarise", "judge", "judge", "judge_identities", "derive"]
Step = tuple[str, dict[str, Any]]


class Setting(NamedTuple):
    subjects: list[str]
    names: list[str]
    vote: bool  # `employer` is a `vote` predicate


class Clock:
    def __init__(self) -> None:
        self.current = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)

    def now(self) -> datetime:
        return self.current


class ScriptedModel:
    """The judge, the summariser and the identity judge, answering from the prompt at
    random with the seed of the step that asks; it is down, malformed or cut off at times,
    and names aliases it was not shown. Extraction is never asked (claims are given)."""

    model_id = "scripted"

    def __init__(self) -> None:
        self.rng = random.Random(0)
        self.down = False  # every call fails (the replay step: jobs alone decide)

    def complete(
        self, system: str, prompt: str, schema: dict[str, Any] | None = None
    ) -> Completion:
        if self.down:
            raise TransientProviderError("scripted: model down for the replay")
        if system not in (memory_judge.SYSTEM, summarise.SYSTEM, identity_judge.SYSTEM):
            return Completion('{"facts": []}', 1, 1)
        roll = self.rng.random()
        if roll < 0.04:
            raise TransientProviderError("scripted: model down")
        if roll < 0.10:
            return Completion(
                self.rng.choice(["not json at all", '{"verdicts": "x"', "[]", "{}"]), 1, 1
            )
        if roll < 0.13:
            return Completion(self.answer(system, prompt), 1, 1, truncated=True)
        return Completion(self.answer(system, prompt), 10, 10)

    def answer(self, system: str, prompt: str) -> str:
        if system == memory_judge.SYSTEM:
            return self.verdicts(prompt)
        if system == summarise.SYSTEM:
            return self.summary(prompt)
        r = self.rng
        asked = identity_judge.asked(prompt)
        pairs: list[dict[str, Any]] = [
            {"pair": n, "same": r.random() < 0.6, "reason": "scripted"} for n, _ in asked
        ]
        if r.random() < 0.1:
            pairs.append({"pair": len(asked) + 3, "same": True, "reason": "unasked"})
        if r.random() < 0.05:
            pairs.append({"pair": 1, "same": "yes"})
        return json.dumps({"pairs": pairs})

    def verdicts(self, prompt: str) -> str:
        r = self.rng
        asked = memory_judge.asked(prompt)
        aliases = [a for a, _, _ in asked] + [c for _, _, cands in asked for c, _ in cands]
        verdicts = []
        for alias, _, cands in asked:
            action = r.choice(["merge", "merge", "supersede", "supersede", "nothing"])
            roll = r.random()
            target: str | None
            if roll < 0.15:
                target = r.choice(["F99", "F0", alias])  # never shown, or itself
            elif roll < 0.25 and aliases:
                target = r.choice(aliases)  # shown, maybe beside another memory
            elif cands:
                target = r.choice([c for c, _ in cands])
            else:
                target = None
            if action == "nothing":
                target = None
            reason = "" if r.random() < 0.05 else "scripted reason"
            verdicts.append({"memory": alias, "action": action, "target": target, "reason": reason})
        if r.random() < 0.1 and asked:  # a verdict about a memory not asked about
            verdicts.append(
                {"memory": "F77", "action": "merge", "target": asked[0][0], "reason": "x"}
            )
        return json.dumps({"verdicts": verdicts})

    def summary(self, prompt: str) -> str:
        r = self.rng
        asked = summarise.asked(prompt)
        aliases = [a for a, _ in asked]
        chosen = [a for a in aliases if r.random() < 0.7] or aliases[:1]
        texts = [t for a, t in asked if a in chosen]
        summary = " and ".join(texts) if r.random() < 0.85 else "The user said some things."
        consumes = list(chosen)
        if r.random() < 0.2:
            consumes.append(r.choice(["M99", "M0", "X"]))
        answer: dict[str, Any] = {"summary": summary, "consumes": consumes}
        if r.random() < 0.2 and len(aliases) >= 2:
            members = r.sample(aliases, 2) + (["M42"] if r.random() < 0.3 else [])
            answer["contradictions"] = [{"memories": members, "reason": "scripted contradiction"}]
        return json.dumps(answer)


def history(seed: int) -> tuple[Setting, list[Step]]:
    """The setting and the steps of `seed`'s history."""
    r = random.Random(seed)
    subjects = ["alice", "bob"][: r.choice([1, 1, 2])]
    names = r.sample(NAMES, r.choice([2, 3]))
    vote = r.random() < 0.3
    if r.random() < 0.5 and not {"bike_count", "bike_class_count"} <= set(names):
        names = ["bike_count", "bike_class_count", *[n for n in names if n[:4] != "bike"][:1]]
    steps: list[Step] = []
    for _ in range(r.randint(6, 30)):
        roll = r.random()
        subject = r.choice(subjects)
        if roll < 0.62:
            steps.append(("event", said(r, subject, names, roll < 0.42)))
        elif roll < 0.70:
            params: dict[str, Any] = {"dry": r.random() < 0.2, "seed": r.randrange(10**9)}
            steps.append(("consolidate", params))
            if params["dry"] and r.random() < 0.5:  # the same run for real
                steps.append(("consolidate", params | {"dry": False, "twin": True}))
        elif roll < 0.76:
            steps.append(("resolve", {"c": r.randrange(6), "k": r.randint(-1, 3)}))
        elif roll < 0.80:
            steps.append(("pin", {"f": r.randrange(50), "any": r.random() < 0.2}))
        elif roll < 0.82:
            steps.append(("unpin", {"f": r.randrange(50)}))
        elif roll < 0.85:
            steps.append(("retract", {"f": r.randrange(50)}))
        else:
            kind = r.choice(PASSES)
            params = {"dry": r.random() < 0.3, "seed": r.randrange(10**9)}
            if kind == "prune":
                params["advance_days"] = r.choice([0, 31, 120, 400, 500])
                params["half_life"] = r.choice([90.0, 90.0, 1.0])
            if kind == "summarise":
                params["keep"] = r.choice([0, 0, 1, 2])
            if kind == "dedupe":
                params["offline"] = r.random() < 0.5
            if r.random() < 0.7:  # mostly after a consolidation, to see what was said
                steps.append(("consolidate", {"dry": False, "seed": r.randrange(10**9)}))
            steps.append((kind, params))
            if params["dry"] and r.random() < 0.5:  # the same pass for real
                steps.append((kind, params | {"dry": False, "twin": True, "advance_days": 0}))
    steps.append(("consolidate", {"dry": False, "seed": r.randrange(10**9)}))
    for kind in r.sample(["dedupe", "summarise", "judge", "judge_identities", "prune"], 3):
        params = {"dry": r.random() < 0.3, "seed": r.randrange(10**9)}
        if kind == "prune":
            params |= {"advance_days": 500, "half_life": 1.0}
        if kind == "summarise":
            params["keep"] = 0
        steps.append((kind, params))
    steps.append(("replay", {}))  # every job again: DESIGN invariant 4 (draws nothing from r)
    return Setting(subjects, names, vote), steps


def said(r: random.Random, subject: str, names: list[str], structured: bool) -> dict[str, Any]:
    """An event: a claim under one of `names`, or a free-text memory."""
    claim: dict[str, Any]
    if structured:
        name = r.choice(names)
        if name.startswith("bike"):
            value: dict[str, Any] = {"count": r.choice([3, 4, 5])}
        else:
            value = {"v": r.choice(["red", "green", "blue"])}
        claim = {"predicate": name, "value": value, "action": r.choice(["create", "supersede"])}
        if r.random() < 0.2:
            start = r.randint(0, 30)
            claim |= {"valid_from": start, "valid_to": start + r.randint(1, 10)}
        text = "As I told you before." if r.random() < 0.15 else f"{name} is {value}"
    else:
        text = r.choice(MEMORY_TEXTS)
    day = None if r.random() < 0.1 else r.randint(0, 40)
    trust = r.choice(TRUSTS)
    if not structured:
        claim = {"text": text, "kind": "memory"}
        if r.random() < 0.25:
            claim["qualifiers"] = {"said_by": r.choice(["Sam", "Kim"])}
    return {"subject": subject, "text": text, "day": day, "trust": trust, "claims": [claim]}


def on(day: int) -> datetime:
    return T0 + timedelta(days=day)


class Found(NamedTuple):
    seed: int
    step: int  # the index of the step after which a check failed
    kind: str
    invariant: str
    message: str


def open_memory(setting: Setting) -> tuple[Memory, Clock, ScriptedModel]:
    close, apart = vectors_at_distance(0.5, 256)
    overrides: dict[str, list[float]] = {}
    for name, vector in (("bike_count", close), ("bike_class_count", apart)):
        overrides[identity_text(name)] = vector
        for n in (3, 4, 5):
            overrides[identity_text(name, {"count": n})] = vector
    counter = itertools.count()
    clock, model = Clock(), ScriptedModel()
    mem = Memory(
        ":memory:",
        embedder=HashingEmbedder(256, overrides=overrides),
        llm=model,
        clock=clock,
        new_id=lambda: f"id{next(counter):06d}",
        policies={"employer": "vote"} if setting.vote else None,
    )
    return mem, clock, model


def run_step(
    mem: Memory, clock: Clock, kind: str, p: dict[str, Any], events: dict[str, Any]
) -> set[str]:
    """Play one step (an event is kept in `events` as stored); the ids of the facts it
    reports deleting (prune)."""
    dry = p.get("dry", False)
    if kind == "event":
        fields = {k: p[k] for k in ("subject", "text", "trust")}
        if p["day"] is not None:
            fields["occurred_at"] = on(p["day"])
        claims = [
            c | {"valid_from": on(c["valid_from"]), "valid_to": on(c["valid_to"])}
            if "valid_from" in c
            else c
            for c in p["claims"]
        ]
        event = mem.add_event(**fields, claims=claims)
        events.setdefault(event.id, event.model_dump())
    elif kind == "consolidate":
        report = mem.consolidate(dry_run=dry)
        if report.errors or report.jobs_failed:
            raise Violation("no failed job", f"consolidate: {report.errors}")
    elif kind == "replay":
        for run in ("consolidate", "replay"):  # what is pending first, then every job again
            if run == "replay":
                facts, sets = every_fact(mem), mem.conflicts(status=None)
                mem.replay()
            report = mem.consolidate()
            if report.errors or report.jobs_failed:
                raise Violation("no failed job", f"{run}: {report.errors}")
        if every_fact(mem) != facts or mem.conflicts(status=None) != sets:
            changed = [line(f) for f in every_fact(mem) if f not in facts]
            changed += [
                f"set {c.id} {c.member_ids}" for c in mem.conflicts(status=None) if c not in sets
            ]
            raise Violation("a replay changes nothing", f"changed: {changed}")
    elif kind in ("pin", "unpin", "retract", "resolve"):
        decide(mem, kind, p)
    elif kind == "dedupe":
        if errors := mem.dedupe(dry_run=dry, offline=p.get("offline", False)).errors:
            raise Violation("no failed job", f"dedupe: {errors}")
    elif kind == "prune":
        clock.current += timedelta(days=p.get("advance_days", 0))
        pruned = mem.prune(dry_run=dry, half_life_days=p["half_life"])
        if pruned.errors:
            raise Violation("no failed job", f"prune: {pruned.errors}")
        return set() if dry else {x.fact_id for x in pruned.pruned}
    elif kind == "summarise":
        mem.summarise(dry_run=dry, keep=p["keep"])
    else:  # judge, judge_identities, derive
        getattr(mem, kind)(dry_run=dry)
    return set()


def decide(mem: Memory, kind: str, p: dict[str, Any]) -> None:
    """A person's decision about the fact or open set the step's number picks, if any."""
    every = every_fact(mem)
    before = [f.model_dump() for f in every]
    try:
        if kind == "resolve":
            sets = mem.conflicts(status="open")
            if not sets:
                return
            chosen = sets[p["c"] % len(sets)]
            members = chosen.member_ids
            keep = None if p["k"] < 0 else members[p["k"] % len(members)]
            mem.resolve_conflict(chosen.id, keep=keep)
            return
        if kind == "pin" and p.get("any"):
            pool = every
        elif kind == "unpin":
            pool = [f for f in every if f.pinned]
        else:
            pool = [f for f in every if f.live]
        if not pool:
            return
        fact = pool[p["f"] % len(pool)]
        if kind == "pin":
            mem.pin(fact.id)
        elif kind == "unpin":
            mem.unpin(fact.id)
        else:
            mem.retract(fact.id, "wrong")
    except (PinnedFact, InvalidOperation):
        after = [f.model_dump() for f in every_fact(mem)]
        if after != before:
            raise Violation("nothing lost", f"a refused {kind} changed facts") from None


def play(seed: int, echo: bool = False) -> tuple[Found | None, int]:
    """Play `seed`'s history, checking after every step: the first violation, if any, and
    how many steps were played. `echo` prints each step, and the state at a violation."""
    setting, steps = history(seed)
    if echo:
        print(setting)
    mem, clock, model = open_memory(setting)
    events: dict[str, Any] = {}
    accepted: set[str] = set()
    try:
        facts = {f.id: f for f in mem.facts(include_retired=True)}
        for index, (kind, p) in enumerate(steps):
            if echo:
                print(index, kind, json.dumps(p))
            if not p.get("twin"):
                clock.current += timedelta(minutes=1)
            if "seed" in p:
                model.rng = random.Random(p["seed"])
            # A consolidation asks the identity judge about open sets: not during the replay,
            # whose check is that the jobs run again decide nothing new.
            model.down = kind == "replay"
            dry_before = written(mem) if p.get("dry") else None
            try:
                deleted = run_step(mem, clock, kind, p, events)
                facts = check_step(mem, kind, p, facts, deleted, dry_before, events, accepted)
            except Violation as v:
                found = Found(seed, index, kind, v.invariant, str(v))
            except Exception as exc:
                found = Found(seed, index, kind, "no step raises", f"{type(exc).__name__}: {exc}")
            else:
                continue
            if echo:
                show(mem)
            return found, index + 1
        return None, len(steps)
    finally:
        mem.close()


def show(mem: Memory) -> None:
    for f in every_fact(mem):
        print(" ", line(f))
    for c in mem.conflicts(status=None):
        print(f"  set {c.id} {c.kind.value} {c.status.value} {c.member_ids}: {c.reason[:80]}")


def report(found: list[Found], histories: int, steps: int, seeds: str, minutes: float) -> None:
    console = Console()
    if not console.is_terminal:  # a log: whole messages, not 80 columns
        console.width = 200
    console.print(
        f"{histories} histories (seeds {seeds}), {steps} steps in {minutes:.1f} minutes: "
        f"{len(found)} with a violation"
    )
    if not found:
        return
    classes: dict[tuple[str, str], list[Found]] = defaultdict(list)
    for f in found:
        classes[(f.invariant, f.kind)].append(f)
    table = Table("invariant", "after", "histories", "first seed", "first message")
    for (invariant, kind), those in sorted(classes.items()):
        first = those[0]
        table.add_row(
            invariant, kind, str(len(those)), f"{first.seed} (step {first.step})", first.message
        )
    console.print(table)


@click.command()
@click.option("--minutes", type=float, help="Play seeds until this many minutes pass.")
@click.option("--histories", type=int, help="Play this many seeds.")
@click.option("--start", type=int, default=0, show_default=True, help="The first seed.")
@click.option("--replay", type=int, help="Play this seed, printing its steps.")
def main(minutes: float | None, histories: int | None, start: int, replay: int | None) -> None:
    logging.disable(logging.CRITICAL)  # the passes log every outage of the scripted model
    if replay is not None:
        found, _ = play(replay, echo=True)
        if found:
            print(f"after step {found.step} ({found.kind}): [{found.invariant}] {found.message}")
        else:
            print("no violation")
        raise SystemExit(1 if found else 0)
    if minutes is None and histories is None:
        raise click.UsageError("give --minutes, --histories or --replay")
    began = time.monotonic()
    deadline = began + 60 * minutes if minutes is not None else float("inf")
    seed, steps, violations = start, 0, []
    with Console().status("searching") as status:
        while time.monotonic() < deadline and (histories is None or seed - start < histories):
            found, played = play(seed)
            steps += played
            violations += [found] if found else []
            seed += 1
            status.update(f"{seed - start} histories, {len(violations)} with a violation")
    took = (time.monotonic() - began) / 60
    report(violations, seed - start, steps, f"{start} to {seed - 1}", took)
    raise SystemExit(1 if violations else 0)


if __name__ == "__main__":
    main()
