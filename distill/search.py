"""`Memory.search`: the facts that answer a question, for an agent to read back; and
`Memory.context`, which reads what the block of `distill.core.context` is made of.

The ranking is `distill.core.recall`'s (two arms, fused by reciprocal rank); this module
checks the question, asks the store for each arm, and dresses the result: each fact with its
score, the parts it came from, whether it is contested and its evidence.

What may be served is decided before anything is ranked:

- **now** (no `as_of`, no `known_at`): active facts only, and of those, none whose stated
  end has passed. Superseded, retracted, candidate (held in a conflict or in quarantine)
  facts are never ranked, so never served as current;
- **`as_of` / `known_at`**: exactly the facts `Memory.facts` serves for those times (a fact
  superseded since is served if it was true then; with `known_at`, as it read then), and the
  arms rank only those.

A fact in an open conflict set (two values, or two names that may be one attribute) is
served with `contested` set and the set's ids, never silently as settled. The question is
embedded with the Memory's embedder and not cached in the store: a search writes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from distill.core.context import (
    CONTESTING,
    CONTEXT_TOKENS_MIN,
    WAITING_SHOWN,
    Context,
    build_context,
)
from distill.core.drift import DRIFT_DEPTH_FACTOR
from distill.core.models import (
    ConflictSet,
    ConflictStatus,
    Event,
    Fact,
    FactKind,
    FactStatus,
    normalise_subject,
)
from distill.core.recall import (
    ARM_DEPTH,
    MAX_QUERY_CHARS,
    MAX_SEARCH_LIMIT,
    Fused,
    Hit,
    Ranked,
    fuse,
    order,
    query_terms,
)
from distill.errors import InvalidInput
from distill.ports import RecallScope

if TYPE_CHECKING:
    from distill.memory import Memory

INCLUDES = ("events",)  # what a search may attach to each hit besides the fact itself


def search(
    memory: Memory,
    query: str,
    subject: str | None,
    project: str,
    as_of: datetime | None,
    known_at: datetime | None,
    limit: int,
    kinds: Iterable[str] | None,
    include: Iterable[str],
) -> list[Hit]:
    """See `Memory.search`; `as_of` and `known_at` are already parsed."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("query: give the question to search for (a non-empty string)")
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidInput(f"query: at most {MAX_QUERY_CHARS:,} characters")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_SEARCH_LIMIT:
        raise InvalidInput(f"limit: a whole number from 1 to {MAX_SEARCH_LIMIT}")
    wanted_kinds = _kinds(kinds)
    extras = _include(include)
    store = memory.store
    # The question is embedded beside the reads that do not need its vector (`embedding_pool`).
    embedded = memory.embedding_pool.start(memory.embedder, query)

    visible: dict[str, Fact] | None = None
    if as_of is not None or known_at is not None:
        served = memory.facts(subject, project, as_of=as_of, known_at=known_at)
        visible = {f.id: f for f in served if wanted_kinds is None or f.kind.value in wanted_kinds}
        if not visible:
            return []
    scope = RecallScope(
        project,
        subject,
        memory.embedder.model_id,
        wanted_kinds,
        tuple(sorted(visible)) if visible is not None else None,
    )
    depth = max(ARM_DEPTH, limit)
    if memory.unstable_subjects(project, subject):
        # A subject whose facts keep being invalidated (`core.drift`): its current value is
        # the least settled and its past ones the likeliest asked about: read deeper.
        depth *= DRIFT_DEPTH_FACTOR
    words = store.recall_words(scope, query_terms(query), depth)
    # One subject: its open sets are the only ones its hits can sit in; read them meanwhile.
    open_sets = {subject: _contesting(memory, project, subject)} if subject is not None else {}
    read: dict[str, Fact] = {}
    if visible is None and embedded.beside:
        # And the rows of the lexical arm's best, which most served facts are, while the
        # model works: after the vector arm only the others are read.
        read = {f.id: f for f in store.facts_by_ids(project, [i for i, _ in words[: 2 * limit]])}
    # The pending question, not its vector: a store reads what needs none while it embeds.
    nearest = store.recall_nearest(scope, lambda: embedded()[0], depth)
    fused = fuse(
        {
            "lexical": [Ranked(i, n, s) for n, (i, s) in enumerate(words, start=1)],
            "vector": [Ranked(h.fact_id, n, h.distance) for n, h in enumerate(nearest, start=1)],
        }
    )
    if visible is not None:
        facts = {i: visible[i] for i in fused if i in visible}
    else:
        facts = _served(memory, project, fused, limit, read)
    ranked = sorted(facts.values(), key=lambda f: order(f, fused[f.id].score))[:limit]
    contested = _open_sets(memory, project, ranked, open_sets)
    events = _evidence(memory, project, ranked) if "events" in extras else {}
    return [
        Hit(
            fact,
            fused[fact.id].score,
            fused[fact.id].parts,
            contested.get(fact.id, ()),
            tuple(events[e] for e in fact.source_event_ids if e in events),
        )
        for fact in ranked
    ]


def _served(
    memory: Memory, project: str, fused: dict[str, Fused], limit: int, read: dict[str, Fact]
) -> dict[str, Fact]:
    """The best `limit` of the fused facts that are served now (and every fact tied with the
    last of them), read from the store a slice at a time, best first: reading the rows of
    all of both arms' finds would cost more than the ranking. `read`: rows read already."""
    best = sorted(fused, key=lambda i: -fused[i].score)
    now = memory.clock.now()
    found: dict[str, Fact] = {}
    start = 0
    while len(found) < limit and start < len(best):
        end = min(len(best), start + 2 * limit)
        while end < len(best) and fused[best[end]].score == fused[best[end - 1]].score:
            end += 1
        wanted = best[start:end]
        missing = [i for i in wanted if i not in read]
        rows = [read[i] for i in wanted if i in read]
        for f in [*rows, *memory.store.facts_by_ids(project, missing)]:
            if f.status is FactStatus.ACTIVE and (f.valid_to is None or f.valid_to > now):
                found[f.id] = f
        start = end
    return found


def _kinds(kinds: Iterable[str] | None) -> tuple[str, ...] | None:
    if kinds is None:
        return None
    if isinstance(kinds, str):
        kinds = [kinds]
    known = {k.value for k in FactKind}
    found = tuple(sorted({str(getattr(k, "value", k)) for k in kinds}))
    if not found or not set(found) <= known:
        raise InvalidInput(f"kinds: some of {', '.join(sorted(known))} (or None for all)")
    return found


def _include(include: Iterable[str]) -> set[str]:
    found = {include} if isinstance(include, str) else set(include)
    unknown = found - set(INCLUDES)
    if unknown:
        raise InvalidInput(f"include: {sorted(unknown)} unknown; choose from {list(INCLUDES)}")
    return found


def _contesting(memory: Memory, project: str, subject: str) -> list[ConflictSet]:
    """The subject's open sets that contest a value (those a hit is marked with)."""
    found = memory.store.conflicts(project, subject, ConflictStatus.OPEN)
    return [s for s in found if s.kind in CONTESTING]


def _open_sets(
    memory: Memory, project: str, facts: Sequence[Fact], read: dict[str, list[ConflictSet]]
) -> dict[str, tuple[str, ...]]:
    """For each fact in an open contesting set, the ids of its sets; `read`: the contesting
    sets of the subjects read already."""
    found: dict[str, list[str]] = {}
    ids = {f.id for f in facts}
    for subject in sorted({f.subject for f in facts}):
        if subject not in read:
            read[subject] = _contesting(memory, project, subject)
        for open_set in read[subject]:
            for member in ids.intersection(open_set.member_ids):
                found.setdefault(member, []).append(open_set.id)
    return {k: tuple(v) for k, v in found.items()}


def _evidence(memory: Memory, project: str, facts: Sequence[Fact]) -> dict[str, Event]:
    wanted = list(dict.fromkeys(e for f in facts for e in f.source_event_ids))
    return {e.id: e for e in memory.store.events(project, wanted)}


def context(
    memory: Memory,
    subject: str,
    query: str | None,
    project: str,
    when: datetime | None,
    believed: datetime | None,
    budget_tokens: int,
) -> Context:
    """See `Memory.context`; `when` (as_of) and `believed` (known_at) are already parsed."""
    if not isinstance(budget_tokens, int) or budget_tokens < CONTEXT_TOKENS_MIN:
        raise InvalidInput(f"budget_tokens: give a whole number of at least {CONTEXT_TOKENS_MIN}")
    if not isinstance(subject, str) or not subject.strip():
        raise InvalidInput("subject: the context is about one subject; give it")
    subject = normalise_subject(subject)
    if query is not None:
        hits = memory.search(query, subject, project, when, believed, MAX_SEARCH_LIMIT)
        served = [h.fact for h in hits]
    else:
        served = memory.facts(subject, project, as_of=when, known_at=believed)
    store = memory.store
    open_sets = store.conflicts(project, subject, ConflictStatus.OPEN)
    wanted = sorted({m for c in open_sets for m in c.member_ids})
    members = {f.id: f for f in store.facts_by_ids(project, wanted)}
    rules = memory.rules(subject, project)
    if believed is not None:  # the rules Distill had then (they are never revised)
        rules = [r for r in rules if r.created_at <= believed]
    waiting: list[Event] = []  # what was said and is not a fact yet: a read of now only
    if when is None and believed is None:
        waiting = store.waiting_events(project, subject, WAITING_SHOWN + 1)
    return build_context(
        subject,
        project,
        served,
        open_sets,
        members,
        budget_tokens,
        when,
        query is not None,
        rules,
        waiting,
    )
