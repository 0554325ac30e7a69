"""The working set of one adjudication pass: what it may see, and how outcomes are written.

`WorkingSet` holds the subject's snapshot and the plan being built. Each outcome
(reinforce, supersede, conflict, reclassify, quarantine) updates the working copy of the
facts and adds the matching actions, so the next candidate of the same job sees what the
previous one did. Nothing here reads or writes storage.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from distill.core import timeline
from distill.core.attribute_match import Match
from distill.core.identity import (
    carried_forward,
    content_hash,
    fact_text,
    identity_key,
    identity_text,
    normalise_text,
    split_qualifiers,
    without_nulls,
)
from distill.core.models import (
    Alias,
    Claim,
    ClaimAction,
    ConflictKind,
    ConflictSet,
    ConflictStatus,
    Event,
    Fact,
    FactKind,
    FactStatus,
    Observation,
    Outcome,
    Resolver,
    Scalar,
    Trust,
)
from distill.core.passes import Decision
from distill.core.plan import (
    CreateFact,
    OpenConflict,
    Plan,
    RecordObservation,
    ReviseConflict,
    ReviseFact,
)
from distill.core.recall import recall_text
from distill.core.support import Support, first_said, held_until, support_of

# A conflict set holds at most this many members; a further distinct value reclassifies the
# candidates as event facts ("the user said X on date D") instead of growing the set forever
# (unless a person pinned a member: then the set grows until they decide it).
CONFLICT_MAX_MEMBERS = 2


@dataclass(frozen=True)
class Candidate:
    """A validated claim that passed the write gate, with where it came from."""

    event: Event
    claim: Claim
    claim_hash: str
    extractor: str

    @cached_property
    def identity_texts(self) -> tuple[str, ...]:
        """The texts embedded for it: for a state claim, to match it to a known attribute
        by meaning, its name alone and its name with its value; for any claim, what its
        fact's recall vector embeds (`core.recall.recall_text`), which search reads. Worked
        out once: the preparation thread embeds them, the deciding thread looks them up."""
        claim = self.claim
        if claim.predicate and claim.resolved_kind is FactKind.STATE:
            return identity_text(claim.predicate), identity_text(claim.predicate, claim.value)
        recall = recall_text(claim.predicate, claim.value, claim.text or "")
        return (recall,) if recall else ()


@dataclass
class Snapshot:
    """What the adjudicator may see of one (project, subject), loaded before the pass."""

    project: str
    subject: str
    facts: dict[str, Fact]
    aliases: dict[str, Alias]
    conflicts: dict[str, ConflictSet]
    seen: set[tuple[str, str]]
    # The identity texts' embeddings (`identity_text`): the candidates' and the active facts'.
    vectors: dict[str, npt.NDArray[np.float32]] = field(default_factory=dict)
    vector_model: str | None = None
    # Statements of the versions a late claim may be decided by (`passes.adjudication`).
    support: dict[str, tuple[Support, ...]] = field(default_factory=dict)


class Mark(NamedTuple):
    """A point in a working set's plan that `WorkingSet._undo` can return to."""

    actions: int  # how many actions the plan held
    support: dict[str, tuple[Support, ...]]  # the supporting statements then


@dataclass(frozen=True)
class Identity:
    """What a structured candidate is about, once its predicate is resolved: the attribute,
    the qualifiers that are part of its identity, and who said it (which is not)."""

    predicate: str
    qualifiers: dict[str, Scalar]
    said_by: str | None = None

    @property
    def key(self) -> str:
        return identity_key(self.predicate, self.qualifiers)

    @classmethod
    def of(cls, predicate: str, qualifiers: dict[str, Scalar]) -> Identity:
        """Split attribution off a claim's qualifiers."""
        identity, said_by = split_qualifiers(qualifiers)
        return cls(predicate, identity, said_by)


class WorkingSet:
    """The snapshot being worked on and the plan that records every change made to it."""

    def __init__(self, snapshot: Snapshot, now: datetime, new_id: Callable[[], str]) -> None:
        self.s = snapshot
        self.now = now
        self.new_id = new_id
        self.plan = Plan()
        self.decisions: list[Decision] = []
        self._stated: dict[str, Claim] = {}  # the claim each new state fact was made from
        self._open_at_load = {i for i, f in snapshot.facts.items() if f.valid_to is None}
        # The ids of the snapshot's facts by identity key, in its order (a scan of every fact
        # per candidate was a fifth of the adjudicator's time on a 100-event job). Built on
        # first use, kept by `_create` and `_revise`, the only writers of `s.facts`.
        self._by_key: dict[str | None, list[str]] | None = None
        # The ids of the open sets holding each fact, of the open identity sets and of the open
        # sets of one member (a scan of every set per question was a tenth of the
        # adjudicator's time on the 10,000-event bench). Built on first use, dropped by
        # `_put_conflict` and `_undo`, the writers.
        self._open_sets: tuple[dict[str, list[str]], list[str], list[str]] | None = None

    def _reinforce(
        self, fact: Fact, c: Candidate, reason: str, valid_from: datetime | None = None
    ) -> Decision:
        if c.event.id in fact.source_event_ids:
            return Decision(Outcome.DUPLICATE, fact.id, "event already supports this fact")
        if fact.pinned:
            return Decision(
                Outcome.DUPLICATE, fact.id, "pinned facts are not changed by consolidation"
            )
        t = self._time(c)
        _, when = timeline.freshest(
            (fact.trust.rank, fact.last_reinforced_at), (c.event.trust.rank, t)
        )
        trust = fact.trust if fact.trust.rank >= c.event.trust.rank else c.event.trust
        # An end is a change to the version: only a source that could change it states one
        # (an untrusted or less trusted restatement supports the value, and ends nothing).
        end = None if c.event.trust.yields_to(fact.trust) else c.claim.valid_to
        start = min(fact.valid_from, valid_from or fact.valid_from)
        until = self._stated_end(fact, end, start)
        raised = trust.rank > fact.trust.rank and fact.status is not FactStatus.SUPERSEDED
        if raised and until and not self._kept_by_decision(fact.id):
            # Made more trusted: an end only a less trusted source stated ends nothing now
            # (one a person kept stands, as their decision does).
            until = self._end_kept(fact, trust, end)
        self._revise(
            fact,
            "reinforce",
            reason,
            source_event_ids=(*fact.source_event_ids, c.event.id),
            reinforcement_count=fact.reinforcement_count + 1,
            last_reinforced_at=when,
            trust=trust,
            valid_from=start,
            valid_to=until,
        )
        if fact.id not in self.s.support and len(fact.source_event_ids) == 1:
            # A version of one statement, not loaded (the job's claims came after it began):
            # that statement, so that a later claim of this job finds the restatement.
            self.s.support[fact.id] = (self._first_support(fact),)
        if fact.id in self.s.support:
            self.s.support[fact.id] += (support_of(c.event.id, t, c.event.trust, c.claim),)
        if end is not None and (fact.valid_to is None or end < fact.valid_to):
            self._given_an_end(self.s.facts[fact.id], end, fact.valid_to)
        if trust is not fact.trust:
            self._made_more_trusted(self.s.facts[fact.id])
        return Decision(Outcome.REINFORCED, fact.id, reason)

    def _end_kept(self, fact: Fact, trust: Trust, end: datetime | None) -> datetime | None:
        """The end of `fact`, current, once a statement of `trust` that states `end` (or none)
        supports it: the latest end stated by a source that could change it at that trust."""
        supports = self.s.support.get(fact.id) or (self._first_support(fact),)
        kept = held_until([s for s in supports if not s.trust.yields_to(trust)])
        return max((e for e in (kept, end) if e is not None), default=None)

    def _given_an_end(self, version: Fact, end: datetime, until: datetime | None) -> None:
        """What a stated `end` before the `until` of `version` does to what follows it."""

    def _made_more_trusted(self, version: Fact) -> None:
        """What a restatement that made `version` more trusted does to the sets holding it."""

    def _stated_end(
        self, fact: Fact, end: datetime | None, start: datetime | None = None
    ) -> datetime | None:
        """`fact`'s end once a claim of its value that states `end` supports it: an open
        version ends there, an ended one at the later of the two ends, never after the next
        version began. One that ends where the next begins may not have stated that end: its
        statements (when loaded) say, or its being open when loaded; if none did, `end` comes
        first. One never true (overruled where it began) that the claim dates earlier, to
        `start`, had no end of its own: it ends where the claim says, never after the next
        version from `start`."""
        overruled = fact.valid_to
        moved = start is not None and fact.never_true and start < fact.valid_from
        if moved:
            fact = fact.model_copy(update={"valid_from": start, "valid_to": None})
        elif end is None:
            return fact.valid_to
        current = fact.valid_to
        following = None
        if fact.status is FactStatus.SUPERSEDED and fact.identity_key is not None:
            # The next version in world time: its receipt may be a version a person
            # retracted since, which bounds nothing.
            at = timeline.position(fact)
            versions = timeline.chain(self._facts_of(fact.identity_key), fact.identity_key)
            later = (v for v in versions if v.id != fact.id and at < timeline.position(v))
            following = next(later, None)
        if following is not None and current == following.valid_from:
            if fact.id in self.s.support:
                current = max((s.until for s in self.s.support[fact.id] if s.until), default=None)
            elif fact.id in self._open_at_load:
                current = None  # loaded open: no statement of it stated an end, the job did
        if end is None:  # (`moved`) until the next version from `start`, or as it was
            return overruled if following is None else following.valid_from
        if current is not None:
            end = max(end, current)
        return end if following is None else min(end, following.valid_from)

    def _retire(self, version: Fact, reason: str, at: datetime, by: str, **changes: Any) -> Fact:
        """`version` superseded by fact `by` from `at` (or its own stated end, if earlier);
        a mark it carried (`unpaired_change`) goes to the version after it."""
        return self._revise(
            version,
            "retire",
            reason,
            **{
                "status": FactStatus.SUPERSEDED,
                "valid_to": timeline.end_of(version.valid_to, at),
                "retired_at": self.now,
                "superseded_by": by,
                "unpaired_change": False,
                **changes,
            },
        )

    def _contest_identity(self, c: Candidate, fact: Fact, known: Fact, match: Match) -> Decision:
        """A new fact whose predicate probably names `known`'s attribute: both stay active,
        held together in an identity conflict set until somebody says whether they are one
        attribute."""
        assert known.predicate is not None and fact.predicate is not None
        reason = f"'{fact.predicate}' may be '{known.predicate}' ({match.reason})"
        self._create(fact, f"contested: {reason}", vector_text=self._query_text(c))
        self._open_conflict(None, (known.id, fact.id), ConflictKind.IDENTITY, reason)
        # Paired with what its change replaced (a value dated no later): a later-dated name
        # contested on its own words leaves the change waiting for that value.
        if known.unpaired_change and not known.pinned and fact.valid_from <= self._began(known):
            self._revise(known, "pair", f"paired with '{fact.predicate}'", unpaired_change=False)
        return Decision(Outcome.CONTESTED, fact.id, reason)

    def _quarantine(
        self, c: Candidate, fact: Fact, held_against: Fact | None, reason: str
    ) -> Decision:
        held = fact.model_copy(update={"status": FactStatus.CANDIDATE})
        self._create(held, f"quarantined: {reason}")
        members = (held_against.id, held.id) if held_against else (held.id,)
        self._open_conflict(held.identity_key, members, ConflictKind.QUARANTINE, reason)
        return Decision(Outcome.QUARANTINED, held.id, reason)

    def _time(self, c: Candidate) -> datetime:
        return c.claim.valid_from or c.event.occurred_at

    def _next_value(self, base: Fact, claim: Claim) -> dict[str, Any]:
        """Supersede carries unstated keys forward (`carried_forward`)."""
        stated = claim.value or {}
        if claim.action is ClaimAction.SUPERSEDE:
            return carried_forward(base.value, stated, claim.predicate == base.predicate)
        return without_nulls(stated)

    def _began(self, fact: Fact) -> datetime:
        """When `fact`'s attribute began: the date of its first version (what a change dated
        before the current version may have replaced; where a marked change's window closes,
        since the mark moves to each next version). The snapshot loads the earlier versions of
        facts a claim of the job is dated no later than (`passes.adjudication`); the fact's
        own date when none is known."""
        versions = self._facts_of(fact.identity_key) if fact.identity_key else []
        return min(
            (v.valid_from for v in versions if v.kind is FactKind.STATE), default=fact.valid_from
        )

    def _facts_of(self, key: str) -> list[Fact]:
        """The facts of identity `key`, in the order `s.facts` holds them."""
        if self._by_key is None:
            index: dict[str | None, list[str]] = {}
            for f in self.s.facts.values():
                index.setdefault(f.identity_key, []).append(f.id)
            self._by_key = index
        return [self.s.facts[i] for i in self._by_key.get(key, ())]

    def _live(self) -> list[Fact]:
        return [f for f in self.s.facts.values() if f.live]

    def _open_set(self, fact_id: str) -> ConflictSet | None:
        """The first open value conflict (or quarantine) set holding `fact_id`, if any."""
        return next(iter(self._value_sets(fact_id)), None)

    def _value_sets(self, fact_id: str) -> list[ConflictSet]:
        """Every open value conflict and quarantine set holding `fact_id`: a version may be
        held against in several (a value quarantined for its source is held apart from a
        value conflict, and from another quarantined value)."""
        return [cs for cs in self._sets_holding(fact_id) if cs.kind is not ConflictKind.IDENTITY]

    def _value_decisions(self) -> Iterator[ConflictSet]:
        """The value conflict and quarantine sets the snapshot holds that a person (or the
        judge, whose verdict is applied as theirs) resolved. A set closed with no closer
        named counts as a decision; an identity set's decides a name, not a value."""
        return (
            cs
            for cs in self.s.conflicts.values()
            if cs.status is ConflictStatus.RESOLVED
            and cs.kind is not ConflictKind.IDENTITY
            and cs.resolved_by is not Resolver.CLAIM
        )

    def _kept_by_decision(self, fact_id: str) -> bool:
        """Whether `fact_id` is the value a decision kept (`_value_decisions`; the snapshot
        holds the resolved sets whose kept fact it loads): as with a pin, no claim's rule
        makes it a candidate again."""
        return any(cs.kept_fact_id == fact_id for cs in self._value_decisions())

    def _accepted(self) -> set[str]:
        """The statements a decision accepted by making a held value current
        (`ConflictSet.accepted_event_ids`): served whatever their sources' trust, in any
        fact that carries them."""
        return {e for cs in self._value_decisions() for e in cs.accepted_event_ids}

    def _sets_holding(self, fact_id: str) -> list[ConflictSet]:
        """The open conflict sets of any kind holding `fact_id`, in the snapshot's order."""
        return [self.s.conflicts[i] for i in self._open_index()[0].get(fact_id, ())]

    def _open_identity_sets(self) -> list[ConflictSet]:
        """The open identity sets, in the snapshot's order."""
        return [self.s.conflicts[i] for i in self._open_index()[1]]

    def _open_alone(self) -> list[ConflictSet]:
        """The open sets of one member (a value held alone), in the snapshot's order."""
        return [self.s.conflicts[i] for i in self._open_index()[2]]

    def _open_index(self) -> tuple[dict[str, list[str]], list[str], list[str]]:
        if self._open_sets is None:
            members: dict[str, list[str]] = {}
            identity: list[str] = []
            alone: list[str] = []
            for cs in self.s.conflicts.values():
                if cs.status is ConflictStatus.OPEN:
                    for m in cs.member_ids:
                        members.setdefault(m, []).append(cs.id)
                    if cs.kind is ConflictKind.IDENTITY:
                        identity.append(cs.id)
                    if len(cs.member_ids) == 1:
                        alone.append(cs.id)
            self._open_sets = members, identity, alone
        return self._open_sets

    def _put_conflict(self, cs: ConflictSet) -> None:
        self.s.conflicts[cs.id] = cs
        self._open_sets = None  # rebuilt on next use

    def _query_text(self, c: Candidate) -> str:
        """The candidate's identity text as embedded by the engine (its own predicate)."""
        assert c.claim.predicate is not None
        texts = c.identity_texts
        if len(texts) == 2:  # a state claim's: its name with its value, worked out already
            return texts[1]
        return identity_text(c.claim.predicate, c.claim.value)

    def _new_fact(
        self,
        c: Candidate,
        kind: FactKind,
        ident: Identity | None,
        value: dict[str, Any] | None,
        text: str | None = None,
        **overrides: Any,
    ) -> Fact:
        """A new fact from candidate `c`: a memory when `ident` is None."""
        t = self._time(c)
        if text is None:
            assert ident is not None and value is not None
            text = c.claim.text or fact_text(ident.predicate, value, ident.qualifiers)
        fields: dict[str, Any] = {
            "id": self.new_id(),
            "project": c.event.project,  # scope always comes from the event
            "subject": c.event.subject,
            "kind": kind,
            "predicate": ident.predicate if ident else None,
            "value": value,
            "text": text,
            "qualifiers": ident.qualifiers if ident else {},
            "attribution": ident.said_by if ident else None,
            "identity_key": ident.key if ident else None,
            "status": FactStatus.ACTIVE,
            "valid_from": t,
            "valid_to": c.claim.valid_to,
            "recorded_at": self.now,
            "source_event_ids": (c.event.id,),
            "last_reinforced_at": t,
            "trust": c.event.trust,
            "confidence": c.claim.confidence,
            # A supersede's own words, so its carried-forward value can be recomputed when an
            # older version arrives late.
            "stated": dict(c.claim.value)
            if c.claim.action is ClaimAction.SUPERSEDE and kind is FactKind.STATE and c.claim.value
            else None,
        }
        fields.update(overrides)
        fact = Fact(**fields)
        if kind is FactKind.STATE:
            self._stated[fact.id] = c.claim
        return fact

    def _first_support(self, fact: Fact) -> Support:
        claim = self._stated.get(fact.id)
        if claim is None:  # a copy made from a version (`_change_inside`): its own record
            return Support(fact.source_event_ids[0], fact.valid_from, fact.trust)
        return support_of(fact.source_event_ids[0], fact.valid_from, fact.trust, claim)

    def _first_said(self, fact: Fact) -> Support:
        """`fact`'s earliest statement in world time (`said_order`; its own record when its
        statements were not loaded)."""
        supports = self.s.support.get(fact.id)
        if not supports:
            return self._first_support(fact)
        return first_said(supports)

    def _began_as_change(
        self,
        fact: Fact,
        before: datetime,
        *,
        restated: bool = False,
        by: Trust | None = None,
        until: timeline.At | None = None,
    ) -> bool:
        """Whether `fact`'s earliest statement in world time (`_first_said`) would have
        replaced a value of time `before` in world order (`Support`): a change, or dated
        later by its own date; with `restated`, any of its statements (a create held against
        that value is made current by a later change to it: `Rivals._adopt`), or any said
        before position `until` (a restatement of the value there came first: a change
        after it adopts nothing); when that value is from a source of trust `by`, none from
        a source that yields to it (held against the value, it replaces and adopts nothing).
        By its own record (a change keeps what it `stated`) when its statements were not
        loaded."""
        supports = self.s.support.get(fact.id)
        if not supports:
            return fact.stated is not None
        if by is not None:  # what yields to that value would have been held against it
            supports = tuple(s for s in supports if not s.trust.yields_to(by))
        if until is not None:
            stated = timeline.position(fact).stated
            supports = tuple(s for s in supports if timeline.At(s.at, stated) < until)
        if not restated and supports:
            supports = (first_said(supports),)
        return any(s.supersede or (s.dated and s.at > before) for s in supports)

    def _create(
        self,
        fact: Fact,
        reason: str,
        vector_text: str | None = None,
        norm_hash: str | None = None,
        vector_from: str | None = None,
    ) -> None:
        if vector_text is None and vector_from is None:  # its recall vector, if embedded
            vector_text = recall_text(fact.predicate, fact.value, fact.text)
        vector = self.s.vectors.get(vector_text) if vector_text else None
        if fact.kind is FactKind.MEMORY and norm_hash is None:
            norm_hash = content_hash(normalise_text(fact.text))
        if self._by_key is not None and fact.id not in self.s.facts:
            self._by_key.setdefault(fact.identity_key, []).append(fact.id)
        self.s.facts[fact.id] = fact
        if fact.kind is FactKind.STATE and fact.source_event_ids:
            self.s.support[fact.id] = (self._first_support(fact),)
        self.plan.add(
            CreateFact(
                fact,
                reason,
                vector=vector,
                vector_model=self.s.vector_model if vector is not None else None,
                norm_hash=norm_hash,
                vector_from=vector_from,
                vector_text_hash=content_hash(vector_text)
                if vector_text and vector is not None
                else None,
            )
        )

    def _mark(self) -> Mark:
        """Where the plan stands, for `_undo`: every change to the working copy is an action
        of the plan, except the supporting statements, which are copied."""
        return Mark(len(self.plan.actions), dict(self.s.support))

    def _undo(self, mark: Mark) -> None:
        """Take back every change made since `mark`, the newest first."""
        for action in reversed(self.plan.actions[mark.actions :]):
            if isinstance(action, ReviseFact):
                self.s.facts[action.before.id] = action.before
            elif isinstance(action, CreateFact):
                del self.s.facts[action.fact.id]
                self._stated.pop(action.fact.id, None)
            elif isinstance(action, OpenConflict):
                del self.s.conflicts[action.conflict.id]
            elif isinstance(action, ReviseConflict):
                self.s.conflicts[action.before.id] = action.before
            else:  # nothing else is written while a claim is decided
                raise AssertionError(f"cannot undo {type(action).__name__}")
        del self.plan.actions[mark.actions :]
        self.s.support = mark.support
        self._by_key = None
        self._open_sets = None

    def _revise(self, fact: Fact, op: str, reason: str, **changes: Any) -> Fact:
        after = fact.model_copy(update=changes)
        if after == fact:
            return fact
        if after.identity_key != fact.identity_key:
            self._by_key = None  # rebuilt on next use
        self.s.facts[fact.id] = after
        self.plan.add(ReviseFact(fact, after, op, reason))
        return after

    def _open_conflict(
        self, key: str | None, members: tuple[str, ...], kind: ConflictKind, reason: str
    ) -> None:
        cs = ConflictSet(
            id=self.new_id(),
            project=self.s.project,
            subject=self.s.subject,
            identity_key=key,
            kind=kind,
            status=ConflictStatus.OPEN,
            member_ids=members,
            reason=reason,
            created_at=self.now,
        )
        self._put_conflict(cs)
        self.plan.add(OpenConflict(cs, reason))

    def _revise_conflict(self, cs: ConflictSet, reason: str, **changes: Any) -> None:
        after = cs.model_copy(update=changes)
        self._put_conflict(after)
        self.plan.add(ReviseConflict(cs, after, reason))

    def _observe(self, c: Candidate, decision: Decision) -> None:
        outcome, fact_id, reason = decision.outcome, decision.fact_id, decision.reason
        self.plan.add(
            RecordObservation(
                Observation(
                    id=self.new_id(),
                    project=c.event.project,
                    subject=c.event.subject,
                    event_id=c.event.id,
                    fact_id=fact_id,
                    extractor=c.extractor,
                    claim=c.claim,
                    claim_hash=c.claim_hash,
                    source=c.event.source,
                    trust=c.event.trust,
                    occurred_at=c.event.occurred_at,
                    outcome=outcome,
                    reason=reason,
                ),
            )
        )
