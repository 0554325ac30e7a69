"""The memory judge: a model looks at new memories beside their nearest stored ones, and code
decides what its verdicts may do.

The iii seed's semantic tier, after Hindsight's consolidator. Each new or changed memory is
shown with a few candidates from each recall arm, interleaved (`interleave`: a fused rank
would bury the near-duplicate one arm finds and the other misses), in batches of
`JUDGE_BATCH` memories per call. Every fact in a batch gets a short alias (`F1`, `F2`, ...),
and aliases are the only way the model can name anything: it cannot invent a target, nor
reach a fact it was not shown for that memory. For each memory it answers `merge` (the same
fact: a paraphrase, another language), `supersede` (a state that changed: moved, switched,
rescheduled) or `nothing` (distinct facts on one topic, the usual answer), with a one-sentence
reason.

`check` is where the model is not trusted. A verdict is refused, with its code, when:

* it has no reason, or its target was not shown with that memory (`no_reason`,
  `target_not_shown`); or it is a supersede of two memories stated at one instant, where
  "the one stated last" means nothing (`no_order`);
* either fact was already changed by an earlier verdict of the run (`already_changed`);
* it would retire a pinned fact (`pinned`);
* it is a merge and merging would lose or distort something (`statements.merge_objections`:
  a number, a negation, a named entity, a date, a condition the survivor lacks; opposite
  words; two arguments swapped, "Alice manages Bob" / "Bob manages Alice"; "yesterday" or
  "last week" said on two different days, `statements.time_objection`), in the only
  direction(s) the pins allow. When both directions are clean the older memory survives (it
  carries the first provenance), unless the newer says clearly more (`MORE_WORDS` more
  content words the older lacks than the other way round: "piano player here, mostly jazz
  standards" over "I play the piano"); otherwise the one that keeps every detail does.

A supersede keeps the memory stated last, whichever way round the model put it, and closes
the older one's validity where the newer begins (its receipt: `superseded_by`), but only when
the words show the change themselves (`changes.replacement_evidence`: "moved", a negation,
another number). Otherwise the two are put in a conflict set instead (`contested`): both
stay live, served as contested with the model's reason, until a person keeps one. Code
cannot tell a changed seat preference from a second allergy; a model that supersedes
everything then costs questions, not facts. A pair already contested is neither merged nor
contested again (`already_contested`), and a memory an open set holds with another is left
to that set (`held`: merged or superseded away, it would leave the set holding a fact it can
no longer keep). A merge retires the loser into the survivor exactly as dedupe does
(`dedupe.merge_into`).

Pure: rendering, reading and checking; the calls, the batching with its bisection on an
unreadable answer, and the cursor are `distill.passes.memory_judge`'s.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from distill.core.answers import answer_list, one_line, verdicts_schema
from distill.core.changes import replacement_evidence
from distill.core.dedupe import merge_into
from distill.core.models import ConflictKind, ConflictSet, ConflictStatus, Fact, FactStatus
from distill.core.plan import OpenConflict, Plan, ReviseFact
from distill.core.statements import read as read_statement
from distill.core.statements import time_objection

PASS_NAME = "judge"
JUDGE_BATCH = 8  # memories per model call (the seed's semantic_batch)
CANDIDATES_PER_ARM = 4  # neighbours per recall arm shown with each memory (semantic_candidates)
REASON_MAX = 300  # characters of a model's reason kept in the audit
ACTIONS = ("merge", "supersede", "nothing")
# Content words one memory must have beyond the other's for it to survive a clean merge when
# it is the newer: a paraphrase trades a word or two ("prefer" / "rather drink", "5 km" /
# "five kilometre", a filler or two), a memory that says more adds several, which the older
# record would drop. Only between memories that share a content word: across languages the
# counts mean nothing.
MORE_WORDS = 3

SYSTEM = (
    "You keep the long-term memory of an AI agent clean. Each NEW memory below is shown with "
    "stored memories of the same person that are close to it. For each NEW memory, decide:\n"
    '- "merge": it states the same fact as one candidate (a paraphrase, another language). '
    "Merge only when nothing would be lost: a number, a date, a name, a negation or a "
    "condition that one states and the other lacks makes them different.\n"
    '- "supersede": it replaces a candidate that is no longer true (the person moved, '
    "switched, changed a plan or a date).\n"
    '- "nothing": they are distinct facts, even on one topic (two allergies, two projects). '
    "This is the usual answer.\n"
    "Name memories only by their aliases (F1, F2, ...). Answer with one JSON object and "
    'nothing else: {"verdicts": [{"memory": "F1", "action": "merge", "target": "F3", '
    '"reason": "one short sentence"}]}; "target" is null for "nothing".'
)

SCHEMA = verdicts_schema(
    {
        "memory": {"type": "string"},
        "action": {"type": "string", "enum": list(ACTIONS)},
        "target": {"type": ["string", "null"]},
        "reason": {"type": "string"},
    },
    ["memory", "action"],
)


@dataclass(frozen=True)
class Item:
    """A memory to judge and the candidates shown with it."""

    memory: Fact
    candidates: tuple[Fact, ...]


@dataclass(frozen=True)
class Shown:
    """A batch as the model saw it: its prompt and what each alias stands for."""

    items: tuple[Item, ...]
    prompt: str
    aliases: dict[str, Fact]

    @property
    def alias_of(self) -> dict[str, str]:
        return {f.id: a for a, f in self.aliases.items()}


@dataclass(frozen=True)
class Verdict:
    memory_id: str
    action: str
    target_id: str | None
    reason: str


@dataclass(frozen=True)
class Refusal:
    memory_id: str
    target_id: str | None
    action: str
    code: str
    detail: str


@dataclass
class Checked:
    """The run's verdicts once checked: the plan of what may be done, and what was refused."""

    plan: Plan = field(default_factory=Plan)
    applied: list[Verdict] = field(default_factory=list)  # merges and supersedes written
    contested: list[Verdict] = field(default_factory=list)  # supersedes put to a person
    refused: list[Refusal] = field(default_factory=list)
    touched: set[str] = field(default_factory=set)


def interleave(arms: Iterable[Sequence[Fact]], exclude: str, per_arm: int) -> tuple[Fact, ...]:
    """The first `per_arm` facts of each arm, taken in turn (first of each, then second of
    each, ...), each fact once, never `exclude`."""
    heads = [[f for f in arm if f.id != exclude][:per_arm] for arm in arms]
    shown: dict[str, Fact] = {}
    for rank in range(per_arm):
        for arm in heads:
            if rank < len(arm):
                shown.setdefault(arm[rank].id, arm[rank])
    return tuple(shown.values())


def render(items: Sequence[Item]) -> Shown:
    """The prompt for one batch, and its aliases."""
    aliases: dict[str, Fact] = {}
    alias_of: dict[str, str] = {}

    def alias(fact: Fact) -> str:
        if fact.id not in alias_of:
            alias_of[fact.id] = f"F{len(alias_of) + 1}"
            aliases[alias_of[fact.id]] = fact
        return alias_of[fact.id]

    lines = []
    for item in items:
        lines.append(f"NEW {alias(item.memory)} {_shown(item.memory)}")
        for c in item.candidates:
            lines.append(f"  candidate {alias(c)} {_shown(c)}")
        lines.append("")
    lines.append("A verdict for each NEW memory.")
    return Shown(tuple(items), "\n".join(lines), aliases)


def _shown(fact: Fact) -> str:
    """One line per fact, whatever its text holds: a line break in a memory must not write
    a line of the prompt (a fake candidate, say)."""
    said = f", said by {one_line(fact.attribution)}" if fact.attribution else ""
    return f"(stated {fact.valid_from.date().isoformat()}{said}): {one_line(fact.text)}"


# The date anchors the header, so that a bracket in a speaker's name cannot end it early.
_HEADER = r"\(stated \d{4}-\d{2}-\d{2}(?:, said by .*?)?\): (.*)$"
_NEW_LINE = re.compile(r"^NEW (F\d+) " + _HEADER)
_CANDIDATE_LINE = re.compile(r"^  candidate (F\d+) " + _HEADER)


def asked(prompt: str) -> list[tuple[str, str, list[tuple[str, str]]]]:
    """What a rendered prompt asks: (alias, text, [(candidate alias, text)]) per new memory;
    what a scripted judge (tests, the golden set, benches) reads to answer."""
    found: list[tuple[str, str, list[tuple[str, str]]]] = []
    for line in prompt.splitlines():
        if m := _NEW_LINE.match(line):
            found.append((m[1], m[2], []))
        elif (m := _CANDIDATE_LINE.match(line)) and found:
            found[-1][2].append((m[1], m[2]))
    return found


def read(text: str, shown: Shown, truncated: bool = False) -> list[Verdict]:
    """The verdicts of an answer, by fact id. `Unreadable` if it is not the JSON asked for or
    was cut; a verdict for a memory that was not asked about, or with an unknown action, is
    dropped; one naming a target not shown with its memory is kept, for `check` to refuse."""
    items = answer_list(text, "verdicts", truncated)
    asked_about = {shown.alias_of[i.memory.id]: i.memory for i in shown.items}
    verdicts: dict[str, Verdict] = {}
    for entry in items:
        if not isinstance(entry, dict):
            continue
        memory = asked_about.get(str(entry.get("memory")))
        action = entry.get("action")
        if memory is None or action not in ACTIONS:
            continue
        target_alias = entry.get("target")
        target = shown.aliases.get(str(target_alias)) if target_alias is not None else None
        target_id = target.id if target is not None else None
        if target_alias is not None and target is None:
            target_id = f"unknown alias {str(target_alias)[:20]}"
        reason = " ".join(str(entry.get("reason") or "").split())[:REASON_MAX]
        verdicts.setdefault(memory.id, Verdict(memory.id, str(action), target_id, reason))
    return list(verdicts.values())


class Objection(Protocol):
    """Why a merge would lose or distort something (`statements.Objection`)."""

    @property
    def code(self) -> str: ...
    @property
    def detail(self) -> str: ...


# `statements.merge_objections`: (survivor's text, loser's text) -> what merging would lose.
Objections = Callable[[str, str], Sequence[Objection]]
# `changes.replacement_evidence`: (older text, newer text) -> what shows the change, or None.
Evidence = Callable[[str, str], str | None]


@dataclass(frozen=True)
class Guards:
    """What `check` holds a verdict against, besides its own checks: the merge guards, the
    words' evidence of a change, and the pairs of facts already in an open conflict set."""

    objections: Objections
    evidence: Evidence = replacement_evidence
    contested: frozenset[frozenset[str]] = frozenset()
    held: frozenset[str] = frozenset()  # facts an open conflict set holds (`held_facts`)


def held_facts(conflicts: Iterable[ConflictSet]) -> frozenset[str]:
    """The facts an open conflict set holds. They stay live until whoever decides the set
    (a person, a model, a claim) does: no pass merges, supersedes or summarises them away,
    which would leave the set holding what it no longer can keep (the judge, the summariser
    and dedupe all hold to it; prune's rule 4 is the same)."""
    return frozenset(m for c in conflicts if c.status is ConflictStatus.OPEN for m in c.member_ids)


def contested_pairs(conflicts: Iterable[ConflictSet]) -> frozenset[frozenset[str]]:
    """The pairs of facts that share an open conflict set."""
    return frozenset(
        frozenset((a, b))
        for c in conflicts
        if c.status is ConflictStatus.OPEN
        for a in c.member_ids
        for b in c.member_ids
        if a < b
    )


def check(
    verdicts: Sequence[Verdict],
    items: Sequence[Item],
    now: datetime,
    guards: Guards,
    new_id: Callable[[], str],
    max_changes: int | None = None,
    checked: Checked | None = None,
) -> Checked:
    """Turn verdicts into a plan of what they may do (module docstring); everything else is
    refused with a reason. `max_changes` caps the facts retired (None: no cap); `checked`
    carries the run's earlier batches, so that no fact is changed twice; `new_id` names the
    conflict sets opened."""
    out = checked if checked is not None else Checked()
    shown_with = {i.memory.id: i for i in items}

    def capped() -> bool:  # checked last, so that a verdict refused otherwise says why
        return max_changes is not None and len(out.applied) >= max_changes

    for v in verdicts:
        if v.action == "nothing":
            continue
        item = shown_with.get(v.memory_id)
        target = next((c for c in item.candidates if c.id == v.target_id), None) if item else None

        def refuse(code: str, detail: str, v: Verdict = v) -> None:
            out.refused.append(Refusal(v.memory_id, v.target_id, v.action, code, detail))

        if item is None or target is None:
            refuse("target_not_shown", f"{v.target_id} was not a candidate of this memory")
            continue
        if not v.reason:
            refuse("no_reason", "a verdict must say why")
            continue
        memory = item.memory
        if {memory.id, target.id} & out.touched:
            refuse("already_changed", "an earlier verdict of this run changed one of them")
            continue
        if not (memory.status is FactStatus.ACTIVE and target.status is FactStatus.ACTIVE):
            refuse("not_live", "only active memories are merged or superseded")
            continue
        if frozenset((memory.id, target.id)) in guards.contested:
            refuse("already_contested", "the two are in an open conflict set already")
            continue
        if held := sorted({memory.id, target.id} & guards.held):
            refuse("held", f"{' and '.join(held)}: in an open conflict set, decided there first")
            continue
        if v.action == "supersede":
            older, newer = sorted((memory, target), key=_stated)
            if _stated(older)[:2] == _stated(newer)[:2]:
                refuse("no_order", "both were stated and recorded at one instant: which is last?")
                continue
            if older.pinned:
                refuse("pinned", f"{older.id} is pinned and may not be retired")
                continue
            unshown = guards.evidence(older.text, newer.text) is None
            # The write gate, as adjudication keeps it: a less trusted memory retires nothing.
            if unshown or newer.trust.yields_to(older.trust):
                why = (
                    "the words show no change"
                    if unshown
                    else f"a {newer.trust} memory may not retire a {older.trust} one"
                )
                out.plan.add(_contest(older, newer, f"{v.reason}; {why}", now, new_id()))
                out.touched |= {memory.id, target.id}
                out.contested.append(v)
                continue
            if capped():
                refuse("capped", f"the run's cap of {max_changes} changes was reached")
                continue
            retired = older.model_copy(
                update={
                    "status": FactStatus.SUPERSEDED,
                    "superseded_by": newer.id,
                    "valid_to": max(newer.valid_from, older.valid_from),
                    "retired_at": now,
                }
            )
            out.plan.add(ReviseFact(older, retired, "retire", f"judge: {v.reason}", PASS_NAME))
        else:
            chosen = _survivor(memory, target, guards.objections)
            if isinstance(chosen, Refusal):
                refuse(chosen.code, chosen.detail)
                continue
            if capped():
                refuse("capped", f"the run's cap of {max_changes} changes was reached")
                continue
            survivor, loser = chosen
            merge_into(out.plan, survivor, [loser], now, f"judge: {v.reason}", PASS_NAME)
        out.touched |= {memory.id, target.id}
        out.applied.append(v)
    return out


def _contest(older: Fact, newer: Fact, reason: str, now: datetime, set_id: str) -> OpenConflict:
    """A supersede the words do not show, or from a less trusted memory (`reason` says
    which): both served, contested, until a person keeps one (keeping the newer retires the
    older, as the supersede would have)."""
    said = f"judge: {reason} (kept both, contested)"
    return contest((older, newer), said, now, set_id, PASS_NAME)


def contest(
    members: Sequence[Fact], said: str, now: datetime, set_id: str, pass_name: str
) -> OpenConflict:
    """An open conflict set of memories a model says cannot both stand (of the first one's
    scope): all stay live and are served as contested, with `said`, until a person keeps
    one."""
    conflict = ConflictSet(
        id=set_id,
        project=members[0].project,
        subject=members[0].subject,
        identity_key=None,
        kind=ConflictKind.CONFLICT,
        status=ConflictStatus.OPEN,
        member_ids=tuple(m.id for m in members),
        reason=said,
        created_at=now,
    )
    return OpenConflict(conflict, said, pass_name)


def _stated(fact: Fact) -> tuple[datetime, datetime, str]:
    return (fact.valid_from, fact.recorded_at, fact.id)


def _survivor(a: Fact, b: Fact, objections: Objections) -> tuple[Fact, Fact] | Refusal:
    """(survivor, loser) of a merge, or why there may be none."""
    options = []
    found: list[Objection] = []
    for survivor, loser in sorted([(a, b), (b, a)], key=lambda p: _stated(p[0])):
        if loser.pinned:
            continue
        against = objections(survivor.text, loser.text)
        if against:
            found.extend(against)
        else:
            options.append((survivor, loser))
    apart = time_objection(a.text, a.valid_from.date(), b.text, b.valid_from.date())
    if apart is not None:
        options, found = [], [apart]
    if not options:
        if a.pinned and b.pinned:
            return Refusal(a.id, b.id, "merge", "pinned", "both memories are pinned")
        details = "; ".join(sorted({f"{o.code}: {o.detail}" for o in found})) or "pinned"
        code = found[0].code if found else "pinned"
        return Refusal(a.id, b.id, "merge", f"merge_{code}", details)
    if len(options) == 2 and _says_more(options[1][0], options[0][0]):
        options.reverse()  # the newer says clearly more: it keeps what the older would drop
    # A pinned survivor first; then the older record (options are in that order already).
    options.sort(key=lambda p: not p[0].pinned)
    return options[0]


def _says_more(a: Fact, b: Fact) -> bool:
    """`a` shares a content word with `b` and has at least `MORE_WORDS` more that `b` lacks
    than `b` has that `a` lacks."""
    words_a, words_b = set(read_statement(a.text).content), set(read_statement(b.text).content)
    if not words_a & words_b:
        return False
    return len(words_a - words_b) - len(words_b - words_a) >= MORE_WORDS
