"""Summaries: a model proposes one memory that stands for several old ones, and code decides
what the proposal may consume.

The graymatter seed's propose/apply consolidation. **What is offered** (`offered`): per
scope, the unpinned live memories the summariser has not read as they are now (the
extraction watermark, `core.watermark`: new, or their text changed), least recently
reinforced first. The `SUMMARISE_KEEP` most recently reinforced of them are never offered:
what a subject said lately stays verbatim. So a subject with little new memory is never
asked about, and a run over memory that did not change asks nothing. Pinned memories never reach
the model (invariant 6), whatever the store holds.

**The proposal** is one JSON object `{"summary": "...", "consumes": ["M1", ...],
"contradictions": [{"memories": ["M2", "M3"], "reason": "..."}]}`. Memories are named by
per-batch aliases (`M1`, `M2`, ...), so the model cannot name anything it was not shown.
`read` refuses as `Unreadable` what is not that object after a fence is stripped; an object
with an empty summary, or whose `consumes` is empty or not a list, is a proposal that
`check` refuses whole (`empty_summary`, `no_consumes`). An answer without the `consumes` key
at all consumes the whole batch when the caller says so (`whole_batch`: the seed's Anthropic
path, which predates structured proposals), and every consumed memory is checked as any.

**What is checked** (`check`), because the model is not trusted:

1. `consumes` is clamped to the batch shown: an alias not shown is ignored (`not_shown`,
   reported), a duplicate consumes once; a memory an open conflict set holds is never
   offered, and one a set came to hold since it was offered is not consumed (`held`): the
   set decides it first;
2. a memory named in a contradiction is not summarised: the contradiction opens a conflict
   set of the memories it names (two at least, shown, not already in one open set together)
   and those memories stay live (`contradiction`);
3. **faithfulness**: every number, date and named entity a consumed memory states must be in
   the summary, and a negated memory needs a negation in the summary (`statements.read`);
   a memory whose words the summary shares none of is not summarised either. A memory that
   fails is dropped from `consumes` with its code (`lost_number`, `lost_date`,
   `lost_entity`, `lost_negation`, `lost_words`) and stays live;
4. a proposal left consuming nothing is refused whole (`nothing_consumed`): nothing is
   written, no counter moves.

**What is written** (`plan`), in this order, in one plan through the one applier: the summary
first, a new memory whose evidence is the union of the consumed memories' events, valid from
the earliest of them, stated as many times as they were together (a memory stated k+1 times
has `reinforcement_count` k: `dedupe.merge_into` counts the same way); then each consumed
memory retired into it (`consolidate`: superseded, `superseded_by` the summary, its validity
kept as it was, since a summary is a receipt, not a correction). Nothing stores a weight:
decay derives it from the timestamps, which the retirement leaves as they were, so a prune in
the same cycle cannot delete a receipt just written.

Pure: offering, rendering, reading and checking.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from distill.core.answers import Unreadable, answer_object, one_line
from distill.core.identity import content_hash, normalise_text
from distill.core.memory_judge import contest
from distill.core.models import (
    ConflictSet,
    Fact,
    FactKind,
    FactStatus,
    Trust,
)
from distill.core.plan import CreateFact, Plan, ReviseFact
from distill.core.recall import recall_text
from distill.core.statements import read as read_statement

PASS_NAME = "summarise"
# The most recently changed live memories of a subject that are never offered: a person's
# recent words are what an agent quotes back, and a summary of last week is a loss, not a
# saving. Thirty is about a month of daily remarks.
SUMMARISE_KEEP = 30
SUMMARISE_BATCH = 10  # memories per model call: the seed's batches of 8 to 12
SUMMARISE_MIN_BATCH = 2  # a batch of one has nothing to summarise it with: it waits
SUMMARY_MAX_CHARS = 2000  # characters of a summary: a paragraph, not a document
REASON_MAX = 300  # characters of a contradiction's reason kept in the conflict set
CODES = (
    "not_shown", "contradiction", "lost_number", "lost_date", "lost_entity", "lost_negation",
    "lost_words", "edited_meanwhile", "empty_summary", "no_consumes", "nothing_consumed",
    "too_long",
)  # fmt: skip

SYSTEM = (
    "You keep the long-term memory of an AI agent small. The MEMORIES below are old "
    "memories of one person. Write one short paragraph that says what they say together, "
    "and list the memories it replaces. Keep every number, date, name and negation of a "
    "memory you replace, in its own words where you can; leave out a memory you cannot "
    "summarise without losing one. If two memories contradict each other, do not "
    "summarise them: list them under contradictions.\n"
    "Name memories only by their aliases (M1, M2, ...). Answer with one JSON object and "
    'nothing else: {"summary": "one paragraph", "consumes": ["M1", "M2"], '
    '"contradictions": [{"memories": ["M3", "M4"], "reason": "one short sentence"}]}.'
)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "summary": {"type": "string"},
        "consumes": {"type": "array", "items": {"type": "string"}},
        "contradictions": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "memories": {"type": "array", "items": {"type": "string"}},
                    "reason": {"type": "string"},
                },
                "required": ["memories"],
            },
        },
    },
    "required": ["summary", "consumes"],
}


def offered(
    changed: Sequence[Fact], keep: int = SUMMARISE_KEEP, held: frozenset[str] = frozenset()
) -> list[Fact]:
    """The memories of `changed` (a scope's live memories not yet read by the summariser,
    least recently reinforced first) that may be summarised: unpinned memories that no open
    conflict set holds (`held`), all but the `keep` most recently reinforced of them."""
    eligible = [
        f
        for f in changed
        if f.kind is FactKind.MEMORY
        and f.status is FactStatus.ACTIVE
        and not f.pinned
        and f.id not in held
    ]
    return eligible[: max(0, len(eligible) - keep)]


@dataclass(frozen=True)
class Shown:
    """A batch as the model saw it: its prompt and what each alias stands for."""

    prompt: str
    aliases: dict[str, Fact]


@dataclass(frozen=True)
class Contradiction:
    memory_ids: tuple[str, ...]
    reason: str


@dataclass(frozen=True)
class Proposal:
    """What the model proposed for one batch, by fact id: `consumes` already clamped to the
    batch (in order, once each), `not_shown` the aliases it named that were not."""

    shown: tuple[Fact, ...]
    summary: str
    consumes: tuple[str, ...]
    not_shown: tuple[str, ...] = ()
    contradictions: tuple[Contradiction, ...] = ()


@dataclass(frozen=True)
class Recall:
    """The recall vectors of the summaries' texts (`recall_text`), by text, and the model
    that made them: a summary is written with its vector, so search finds it by meaning as
    it found the memories it stands for."""

    model_id: str
    vectors: Mapping[str, npt.NDArray[np.float32]]


@dataclass(frozen=True)
class Refusal:
    memory_id: str | None  # None: the whole proposal
    code: str
    detail: str


@dataclass
class Checked:
    """The run's proposals once checked: the plan, the summaries written and the memories
    they consume, the conflict sets opened, and what was refused."""

    plan: Plan = field(default_factory=Plan)
    summaries: list[Fact] = field(default_factory=list)
    consumed: list[str] = field(default_factory=list)
    contested: list[ConflictSet] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)


def render(batch: Sequence[Fact]) -> Shown:
    """The prompt for one batch, and its aliases: one line a memory, whatever its text
    holds (a line break in a memory must not write a line of the prompt)."""
    aliases = {f"M{n}": f for n, f in enumerate(batch, 1)}
    lines = [
        f"{a} (stated {f.valid_from.date().isoformat()}): {one_line(f.text)}"
        for a, f in aliases.items()
    ]
    lines.append("")
    lines.append("One summary of the memories it can keep whole, and the contradictions.")
    return Shown("\n".join(lines), aliases)


def asked(prompt: str) -> list[tuple[str, str]]:
    """What a rendered prompt shows: (alias, text) per memory; what a scripted summariser
    (tests) reads to answer."""
    found = []
    for line in prompt.splitlines():
        head, sep, text = line.partition("): ")
        alias = head.split(" ", 1)[0]
        if sep and alias.startswith("M") and alias[1:].isdigit():
            found.append((alias, text))
    return found


def read(
    text: str, shown: Shown, truncated: bool = False, whole_batch: bool = False
) -> list[Proposal]:
    """The proposal of an answer, by fact id (one, in a list: `asking.Reader`). `Unreadable`
    if it is not the JSON object asked for, after a fence is stripped, or was cut off."""
    data = answer_object(text, truncated)
    if "summary" not in data:
        raise Unreadable('the answer is not {"summary": ..., "consumes": [...]}')
    summary = data.get("summary")
    summary = " ".join(summary.split()) if isinstance(summary, str) else ""
    given = "consumes" in data
    raw = data.get("consumes") if given else list(shown.aliases) if whole_batch else []
    consumes: dict[str, None] = {}
    not_shown: dict[str, None] = {}
    for alias in raw if isinstance(raw, list) else []:
        fact = shown.aliases.get(str(alias))
        if fact is None:
            not_shown[str(alias)[:20]] = None
        else:
            consumes[fact.id] = None
    contradictions = []
    found = data.get("contradictions")
    for entry in found if isinstance(found, list) else []:
        names = entry.get("memories") if isinstance(entry, dict) else entry
        if not isinstance(names, list):
            continue
        ids = tuple(
            dict.fromkeys(shown.aliases[str(a)].id for a in names if str(a) in shown.aliases)
        )
        reason = entry.get("reason") if isinstance(entry, dict) else None
        reason = " ".join(str(reason or "").split())[:REASON_MAX]
        contradictions.append(Contradiction(ids, reason))
    return [
        Proposal(
            tuple(shown.aliases.values()),
            summary,
            tuple(consumes),
            tuple(not_shown),
            tuple(contradictions),
        )
    ]


def faithfulness(memory: str, summary: str) -> Refusal | None:
    """What the summary loses of `memory`, or None: a number, a date, a named entity, a
    negation, or every word (see the module docstring)."""
    m, s = read_statement(memory), read_statement(summary)
    for code, mine, theirs in (
        ("lost_number", m.numbers, s.numbers),
        ("lost_date", m.dates, s.dates),
        ("lost_entity", m.entities, s.entities),
    ):
        lost = sorted(mine - theirs)
        if lost:
            return Refusal(None, code, f"the summary lacks {', '.join(lost)}")
    if m.negations and not s.negations:
        return Refusal(
            None, "lost_negation", f"the memory says {m.negations[0]!r}; the summary no negation"
        )
    if m.content and not set(m.content) & set(s.content):
        return Refusal(None, "lost_words", "the summary shares none of the memory's words")
    return None


def check(
    proposals: Sequence[Proposal],
    now: datetime,
    new_id: Callable[[], str],
    contested: frozenset[frozenset[str]] = frozenset(),
    checked: Checked | None = None,
    recall: Recall | None = None,
    held: frozenset[str] = frozenset(),
) -> Checked:
    """Turn proposals into a plan of what they may do (module docstring); everything else
    is refused with a code. `contested` are the pairs of facts already in an open conflict
    set; `new_id` names the summaries and the conflict sets; `recall` holds the summaries'
    recall vectors (what search's vector arm finds a memory by), embedded by the caller."""
    out = checked if checked is not None else Checked()
    for p in proposals:
        by_id = {f.id: f for f in p.shown}
        out.refused.extend(
            Refusal(None, "not_shown", f"{a} was not a memory of this batch") for a in p.not_shown
        )
        in_conflict: set[str] = set()
        for c in p.contradictions:
            ids = [i for i in c.memory_ids if i in by_id and not by_id[i].pinned]
            if len(ids) < 2:
                continue
            in_conflict.update(ids)
            pairs = {frozenset((a, b)) for a in ids for b in ids if a < b}
            if pairs <= contested:
                continue
            said = c.reason or "the model says these contradict each other"
            opened = contest(
                [by_id[i] for i in ids],
                f"summarise: {said} (kept, contested)",
                now,
                new_id(),
                PASS_NAME,
            )
            out.plan.add(opened)
            out.contested.append(opened.conflict)
            contested = contested | pairs
        if not p.summary:
            out.refused.append(Refusal(None, "empty_summary", "the proposal has no summary"))
            continue
        if len(p.summary) > SUMMARY_MAX_CHARS:
            out.refused.append(
                Refusal(None, "too_long", f"a summary is at most {SUMMARY_MAX_CHARS} characters")
            )
            continue
        if not p.consumes:
            out.refused.append(Refusal(None, "no_consumes", "it consumes no memory it was shown"))
            continue
        keep: list[Fact] = []
        for i in p.consumes:
            memory = by_id[i]
            if i in in_conflict:
                out.refused.append(Refusal(i, "contradiction", "a contradiction names it"))
                continue
            if i in held:  # held since it was offered: its set decides it first
                out.refused.append(Refusal(i, "held", "an open conflict set holds it"))
                continue
            lost = faithfulness(memory.text, p.summary)
            if lost is not None:
                out.refused.append(Refusal(i, lost.code, lost.detail))
                continue
            keep.append(memory)
        if not keep:
            out.refused.append(
                Refusal(None, "nothing_consumed", "no memory it consumes is kept whole by it")
            )
            continue
        summary = _summary(keep, p.summary, now, new_id())
        norm = content_hash(normalise_text(summary.text))
        reason = f"summary of {len(keep)} memory(ies)"
        said = recall_text(None, None, summary.text)
        vector = recall.vectors.get(said) if recall is not None else None
        out.plan.add(
            CreateFact(
                summary,
                reason,
                PASS_NAME,
                vector=vector,
                vector_model=recall.model_id if recall is not None and vector is not None else None,
                norm_hash=norm,
                vector_text_hash=content_hash(said) if vector is not None else None,
            )
        )
        for memory in keep:
            retired = memory.model_copy(
                update={
                    "status": FactStatus.SUPERSEDED,
                    "superseded_by": summary.id,
                    "retired_at": now,
                }
            )
            out.plan.add(
                ReviseFact(
                    memory, retired, "consolidate", f"summarised into {summary.id}", PASS_NAME
                )
            )
        out.summaries.append(summary)
        out.consumed.extend(m.id for m in keep)
    return out


def _summary(consumed: Sequence[Fact], text: str, now: datetime, fact_id: str) -> Fact:
    """The summary memory: the evidence and the statements of what it consumes."""
    first = consumed[0]
    sources: dict[str, None] = {}
    for f in consumed:
        sources.update(dict.fromkeys(f.source_event_ids))
    return Fact(
        id=fact_id,
        project=first.project,
        subject=first.subject,
        kind=FactKind.MEMORY,
        predicate=None,
        value=None,
        text=text,
        identity_key=None,
        status=FactStatus.ACTIVE,
        valid_from=min(f.valid_from for f in consumed),
        recorded_at=now,
        source_event_ids=tuple(sources),
        reinforcement_count=sum(f.reinforcement_count + 1 for f in consumed) - 1,
        last_reinforced_at=max(f.last_reinforced_at for f in consumed),
        # As trusted as the least trusted memory it stands for.
        trust=max((f.trust for f in consumed), key=list(Trust).index),
        confidence=min(f.confidence for f in consumed),
    )
