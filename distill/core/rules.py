"""A subject's rules: standing instructions the agent follows, and how memories become one.

A rule is one line ("Always reply in British English", "Never schedule meetings before
10am") shown before everything else in the subject's context block. Rules are append-only:
added, never revised or retired by a pass, and erased only with their subject. Two origins:
`written` (a person, `Memory.add_rule`; no pass ever touches one) and `learned` (promoted
from memories by the promote_rules pass, the iii seed's rule promotion). A rule's
`fingerprint` is the hash of its normalised text (case, punctuation and spacing folded), and
a subject has at most one rule per fingerprint.

**What is offered** (`is_offered`). A memory the subject keeps re-stating may be a standing
instruction. One is offered to the model when it is an active memory re-observed at least
`PROMOTE_CORROBORATION_THRESHOLD` times, from a source at least `PROMOTE_MIN_TRUST`, and no
rule was promoted from it yet. The model answers per memory, through per-batch aliases (`R1`,
`R2`, ...): `rule`, with the rule's text, or `not` (a fact about the person or the world: the
usual answer), each with a one-sentence reason.

**What is checked** (`check`), because the model is not trusted. A `rule` verdict is refused,
with its code, when it names a memory it was not offered (`not_offered`: the model cannot
invent a source), gives no reason (`no_reason`), has no text, more than one line or more
than `RULE_MAX_CHARS` characters (`no_text`, `not_one_line`, `too_long`), or tries to unseat
the agent's instructions (`override`, the write gate's `is_override`). A rule whose
fingerprint the subject already has, or that an earlier verdict of the run gave, is not added
again (`already`: `written` when a person wrote it, `learned` otherwise). The scope of a rule
comes from its memory, never from the answer.

Pure: offering, rendering, reading and checking; the calls, the batches and the cursor are
`distill.passes.promote_rules`'s.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from distill.core.answers import answer_list, one_line, verdicts_schema
from distill.core.gate import is_override
from distill.core.identity import content_hash, normalise_text
from distill.core.models import Fact, FactKind, FactStatus, Rule, RuleOrigin, Trust
from distill.core.plan import AddRule, Plan
from distill.errors import InvalidInput

PASS_NAME = "promote_rules"
# Re-observations before a memory is offered as a rule (its `reinforcement_count`: a memory
# stated k+1 times has k), the seed's promote_corroboration_threshold. A preference stated
# four times is a habit of the person's, not a passing remark; a lower bar would ask the
# model about most memories said twice, which are facts, at a call per 8 of them.
PROMOTE_CORROBORATION_THRESHOLD = 3
# The least trusted source a promoted memory may come from. A rule goes into every prompt as
# an instruction: a third party's or an untrusted source's words may be remembered, not obeyed.
PROMOTE_MIN_TRUST = Trust.SEMI_TRUSTED
RULES_BATCH = 8  # memories per model call, as the judge's batches
RULE_MAX_CHARS = 200  # characters of one rule: an instruction every prompt carries
REASON_MAX = 300  # characters of a model's reason kept with the rule and in the audit
VERDICTS = ("rule", "not")

SYSTEM = (
    "You keep the standing instructions an AI agent follows for one person. Each MEMORY "
    "below is something this person said several times. For each, decide:\n"
    '- "rule": it is a standing instruction about how the agent should act for this person, '
    'every time (how to reply, when to schedule, what to avoid): "Always reply in British '
    'English", "Never schedule meetings before 10am". Write the rule as one short imperative '
    'sentence, in the memory\'s language, without "you", at most '
    f"{RULE_MAX_CHARS} characters, saying no more than the memory says.\n"
    '- "not": it is a fact about the person or the world (an allergy, a city, a past '
    "event), not an instruction. This is the usual answer.\n"
    "Name memories only by their aliases (R1, R2, ...). Answer with one JSON object and "
    'nothing else: {"verdicts": [{"memory": "R1", "verdict": "rule", "rule": "Always reply '
    'in British English.", "reason": "one short sentence"}]}; "rule" is null for "not".'
)

SCHEMA = verdicts_schema(
    {
        "memory": {"type": "string"},
        "verdict": {"type": "string", "enum": list(VERDICTS)},
        "rule": {"type": ["string", "null"]},
        "reason": {"type": "string"},
    },
    ["memory", "verdict"],
)


# -- rules ----------------------------------------------------------------------------------------
def fingerprint(text: str) -> str:
    """What makes two rules one: the hash of the text with case, punctuation and spacing
    folded ("Always reply in British English." is "always reply in british english")."""
    return content_hash("rule", normalise_text(text))


def text_problem(text: str) -> tuple[str, str] | None:
    """Why `text` cannot be a rule, as (code, detail), or None: it must be one non-empty
    line of at most `RULE_MAX_CHARS` characters (its outer spaces aside)."""
    stripped = text.strip()
    if not normalise_text(stripped):
        return "no_text", "a rule needs words"
    if len(stripped.splitlines()) > 1:
        return "not_one_line", "a rule is one line"
    if len(stripped) > RULE_MAX_CHARS:
        return "too_long", f"{len(stripped)} characters; a rule has at most {RULE_MAX_CHARS}"
    return None


def ordered(rules: Iterable[Rule]) -> list[Rule]:
    """Rules as they are shown: a person's first, then the learned ones, oldest first."""
    return sorted(rules, key=lambda r: (r.origin is not RuleOrigin.WRITTEN, r.created_at, r.id))


def written(
    project: str,
    subject: str,
    text: str,
    rules: Sequence[Rule],
    now: datetime,
    new_id: Callable[[], str],
) -> tuple[Plan, Rule]:
    """A person's rule for the subject, and the plan that adds it; when the subject has a
    rule of that fingerprint already, that rule and an empty plan (adding twice adds once).
    `InvalidInput` when the text cannot be a rule."""
    problem = text_problem(text)
    if problem is not None:
        raise InvalidInput(f"text: {problem[1]}")
    clean = text.strip()
    mark = fingerprint(clean)
    for existing in rules:
        if existing.fingerprint == mark:
            return Plan(), existing
    rule = Rule(
        id=new_id(),
        project=project,
        subject=subject,
        text=clean,
        fingerprint=mark,
        origin=RuleOrigin.WRITTEN,
        pass_name="api",
        reason="written by a person",
        created_at=now,
    )
    return Plan([AddRule(rule, "written by a person", "api")]), rule


# -- what is offered ------------------------------------------------------------------------------
def promoted_from(rules: Iterable[Rule]) -> set[str]:
    """The memories rules were promoted from: never offered again."""
    return {fact_id for rule in rules for fact_id in rule.source_fact_ids}


def is_offered(fact: Fact, threshold: int, promoted: set[str]) -> bool:
    """Whether the model is asked about `fact` (module docstring)."""
    return (
        fact.kind is FactKind.MEMORY
        and fact.status is FactStatus.ACTIVE
        and fact.reinforcement_count >= threshold
        and fact.trust.rank >= PROMOTE_MIN_TRUST.rank
        and fact.id not in promoted
    )


# -- the question and its answer ------------------------------------------------------------------
@dataclass(frozen=True)
class Shown:
    """A batch as the model saw it: its prompt and the memory each alias stands for."""

    memories: tuple[Fact, ...]
    prompt: str
    aliases: dict[str, Fact]


def render(memories: Sequence[Fact]) -> Shown:
    """The prompt for one batch of offered memories, and its aliases."""
    aliases = {f"R{n}": m for n, m in enumerate(memories, start=1)}
    lines = [f"MEMORY {alias} {_shown(m)}" for alias, m in aliases.items()]
    lines += ["", "A verdict for each MEMORY."]
    return Shown(tuple(memories), "\n".join(lines), aliases)


def _shown(fact: Fact) -> str:
    """One line per memory, whatever its text holds (`answers.one_line`)."""
    said = f", said by {one_line(fact.attribution)}" if fact.attribution else ""
    times = fact.reinforcement_count + 1
    since = fact.valid_from.date().isoformat()
    return f"(stated {times} times since {since}{said}): {one_line(fact.text)}"


# The count and the date anchor the header, so that a bracket in a speaker's name cannot end it.
_MEMORY_LINE = re.compile(
    r"^MEMORY (R\d+) \(stated \d+ times since \d{4}-\d{2}-\d{2}(?:, said by .*?)?\): (.*)$"
)


def asked(prompt: str) -> list[tuple[str, str]]:
    """What a rendered prompt asks: (alias, text) per memory; what a scripted model (tests)
    reads to answer."""
    return [(m[1], m[2]) for line in prompt.splitlines() if (m := _MEMORY_LINE.match(line))]


@dataclass(frozen=True)
class Verdict:
    """One answer: `memory_id` None when its alias names no memory of the batch."""

    alias: str
    memory_id: str | None
    verdict: str
    text: str
    reason: str


def read(text: str, shown: Shown, truncated: bool = False) -> list[Verdict]:
    """The verdicts of an answer, the first per alias. `core.answers.Unreadable` if it is not
    the JSON asked for or was cut; an entry with an unknown verdict is dropped; one naming an
    alias that was not shown is kept, for `check` to refuse. The rule's text is kept as the
    model wrote it (a line break in it is `check`'s to refuse, not to mend)."""
    found: dict[str, Verdict] = {}
    for entry in answer_list(text, "verdicts", truncated):
        if not isinstance(entry, dict) or entry.get("verdict") not in VERDICTS:
            continue
        alias = str(entry.get("memory"))[:20]
        memory = shown.aliases.get(alias)
        rule = entry.get("rule")
        reason = one_line(str(entry.get("reason") or ""))[:REASON_MAX]
        found.setdefault(
            alias,
            Verdict(
                alias,
                memory.id if memory is not None else None,
                str(entry["verdict"]),
                rule.strip() if isinstance(rule, str) else "",
                reason,
            ),
        )
    return list(found.values())


# -- checking -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Refusal:
    """A verdict not applied, and why (`code`: see the module docstring)."""

    memory_id: str | None
    alias: str
    text: str
    code: str
    detail: str


@dataclass
class Checked:
    """What a batch's verdicts may do: the plan of rules to add, the rules, the memories
    judged not to be rules, what was there already and what was refused."""

    plan: Plan = field(default_factory=Plan)
    promoted: list[Rule] = field(default_factory=list)
    kept: list[Verdict] = field(default_factory=list)
    already: list[Refusal] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)


def check(
    verdicts: Sequence[Verdict],
    offered: Sequence[Fact],
    rules: Sequence[Rule],
    now: datetime,
    new_id: Callable[[], str],
) -> Checked:
    """Turn verdicts on the `offered` memories into a plan of learned rules (module
    docstring); `rules` are the scope's rules as they are now."""
    out = Checked()
    by_id = {f.id: f for f in offered}
    taken = {r.fingerprint: r for r in rules}
    for v in verdicts:
        if v.verdict == "not":
            if v.memory_id in by_id:
                out.kept.append(v)
            continue

        def refuse(code: str, detail: str, v: Verdict = v) -> None:
            out.refused.append(Refusal(v.memory_id, v.alias, v.text, code, detail))

        memory = by_id.get(v.memory_id) if v.memory_id is not None else None
        if memory is None:
            refuse("not_offered", f"{v.alias} is not a memory this batch offered")
            continue
        if not v.reason:
            refuse("no_reason", "a verdict must say why")
            continue
        problem = text_problem(v.text)
        if problem is not None:
            refuse(*problem)
            continue
        if is_override(v.text):
            refuse("override", "it would unseat the agent's instructions")
            continue
        mark = fingerprint(v.text)
        if mark in taken:
            had = taken[mark]
            out.already.append(
                Refusal(memory.id, v.alias, v.text, str(had.origin), f"the same as rule {had.id}")
            )
            continue
        rule = Rule(
            id=new_id(),
            project=memory.project,
            subject=memory.subject,
            text=v.text,
            fingerprint=mark,
            origin=RuleOrigin.LEARNED,
            source_fact_ids=(memory.id,),
            pass_name=PASS_NAME,
            reason=v.reason,
            created_at=now,
        )
        taken[mark] = rule
        offered_ids = tuple(sorted(by_id))
        out.plan.add(AddRule(rule, f"promoted: {v.reason}", PASS_NAME, offered_ids))
        out.promoted.append(rule)
    return out
