"""Adjudication: decide, for each accepted candidate, what happens to the facts.

Outcomes (DESIGN.md, "Adjudicate"): duplicate, reinforce, supersede, conflict, create, plus
two that keep low-trust and late input honest: quarantine and historical (an older state
that arrived after a newer one, filed into the timeline instead of displacing the present).

The pass works on a `Snapshot` the engine loaded for the subject and keeps its own working
copy as it goes, so the second event of a job sees what the first one did. It returns a
plan; it writes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from distill.core import timeline
from distill.core.identity import (
    content_hash,
    contrasting,
    fact_text,
    identity_key,
    identity_text,
    normalise_text,
    qualifiers_of_key,
    split_qualifiers,
    values_equal,
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
    Trust,
)
from distill.core.plan import (
    CreateFact,
    LearnAlias,
    OpenConflict,
    Plan,
    RecordObservation,
    ReviseConflict,
    ReviseFact,
)

# Cosine distance between the identity texts of two facts (`identity_text`: predicate and
# value) at or under which they are one attribute. Calibrated by scripts/calibrate_threshold.py
# on 54 same-attribute and 58 different-attribute pairs with the default embedder: 0.12 is the
# largest value with no false merge (the closest different pair sits at 0.1203), and merges
# 14 of 54 paraphrases. Higher values trade misses for false merges: 0.27 merges 9 of 58
# different pairs ("home city: Lyon" / "birth city: Lyon" at 0.270).
SEMANTIC_MATCH_MAX_DISTANCE = 0.12
# How many nearest active facts are considered for a semantic identity match.
NEIGHBOURS = 5
# A conflict set holds at most this many members; a further distinct value reclassifies the
# candidates as event facts ("the user said X on date D") instead of growing the set forever.
CONFLICT_MAX_MEMBERS = 2


@dataclass(frozen=True)
class Candidate:
    """A validated claim that passed the write gate, with where it came from."""

    event: Event
    claim: Claim
    claim_hash: str
    extractor: str


@dataclass(frozen=True)
class Support:
    """One event that supports a fact, and when and how far it is believed."""

    event_id: str
    at: datetime
    trust: Trust


@dataclass(frozen=True)
class Neighbourhood:
    """Nearest stored active state facts for one identity text, nearest first."""

    fact_ids: tuple[str, ...]
    distances: tuple[float, ...]


@dataclass
class Snapshot:
    """What the adjudicator may see of one (project, subject), loaded before the pass."""

    project: str
    subject: str
    facts: dict[str, Fact]
    aliases: dict[str, Alias]
    conflicts: dict[str, ConflictSet]
    seen: set[tuple[str, str]]
    # Identity embeddings of candidate predicates, by identity text.
    vectors: dict[str, npt.NDArray[np.float32]] = field(default_factory=dict)
    neighbours: dict[str, Neighbourhood] = field(default_factory=dict)
    vector_model: str | None = None
    # Supporting events of reinforced active facts, for changes that arrive late.
    support: dict[str, tuple[Support, ...]] = field(default_factory=dict)


class IdGenerator:
    """Deterministic ids for dry runs and tests are injected; production uses uuid4."""

    def __init__(self, make: Any) -> None:
        self._make = make

    def __call__(self) -> str:
        return str(self._make())


class Adjudicator:
    def __init__(
        self,
        snapshot: Snapshot,
        now: datetime,
        new_id: IdGenerator,
        max_distance: float = SEMANTIC_MATCH_MAX_DISTANCE,
    ) -> None:
        self.s = snapshot
        self.now = now
        self.new_id = new_id
        self.max_distance = max_distance
        self.plan = Plan()
        # Identity vectors of state facts created during this pass (not yet in the store).
        self._new_vectors: dict[str, npt.NDArray[np.float32]] = {}

    # -- entry point ---------------------------------------------------------------------------
    def run(self, candidates: Sequence[Candidate]) -> Plan:
        for cand in candidates:
            marker = (cand.event.id, cand.claim_hash)
            if marker in self.s.seen:
                self.plan.outcomes[Outcome.DUPLICATE] += 1
                continue
            self.s.seen.add(marker)
            kind = cand.claim.resolved_kind
            if kind is FactKind.MEMORY:
                outcome, fact_id, reason = self._memory(cand)
            elif kind is FactKind.EVENT:
                outcome, fact_id, reason = self._occurrence(cand)
            else:
                outcome, fact_id, reason = self._state(cand)
            self.plan.outcomes[outcome] += 1
            self._observe(cand, outcome, fact_id, reason)
        return self.plan

    # -- memories (free text) ------------------------------------------------------------------
    def _memory(self, c: Candidate) -> tuple[Outcome, str | None, str]:
        text = (c.claim.text or "").strip()
        norm = content_hash(normalise_text(text))
        same = [
            f
            for f in self._live()
            if f.kind is FactKind.MEMORY and content_hash(normalise_text(f.text)) == norm
        ]
        if same:
            target = min(
                same, key=lambda f: (f.status is not FactStatus.ACTIVE, f.valid_from, f.id)
            )
            # A memory has no timeline: an earlier statement of it moves its start back.
            return self._reinforce(
                target, c, "same text after normalisation", valid_from=self._time(c)
            )
        fact = self._new_fact(c, FactKind.MEMORY, None, None, {}, None, text)
        if c.event.trust is Trust.UNTRUSTED:
            return self._quarantine(c, fact, None, "untrusted source"), fact.id, "untrusted source"
        self._create(fact, "new memory", norm_hash=norm)
        return Outcome.CREATED, fact.id, "new memory"

    # -- occurrences (event facts never fuse) --------------------------------------------------
    def _occurrence(self, c: Candidate) -> tuple[Outcome, str | None, str]:
        assert c.claim.predicate is not None and c.claim.value is not None
        qualifiers, said_by = split_qualifiers(c.claim.qualifiers)
        value = _without_nulls(c.claim.value)
        fact = self._new_fact(c, FactKind.EVENT, c.claim.predicate, value, qualifiers, said_by)
        if c.event.trust is Trust.UNTRUSTED:
            return self._quarantine(c, fact, None, "untrusted source"), fact.id, "untrusted source"
        self._create(fact, "an occurrence; events never fuse")
        return Outcome.CREATED, fact.id, "an occurrence"

    # -- state facts ---------------------------------------------------------------------------
    def _state(self, c: Candidate) -> tuple[Outcome, str | None, str]:
        claim = c.claim
        assert claim.predicate is not None and claim.value is not None
        qualifiers, said_by = split_qualifiers(claim.qualifiers)
        predicate, how = self._resolve_predicate(claim.predicate, claim.value, qualifiers)
        key = identity_key(predicate, qualifiers)
        versions = timeline.chain(self.s.facts.values(), key)
        t = self._time(c)

        # A replayed event that already supports a version with this value is a plain duplicate.
        for v in versions:
            if c.event.id in v.source_event_ids:
                return Outcome.DUPLICATE, v.id, "event already supports this fact"

        head = versions[-1] if versions and versions[-1].status is FactStatus.ACTIVE else None
        if head is None:
            return self._state_without_head(c, predicate, qualifiers, said_by, key, how)

        if t < head.valid_from:
            return self._late(c, versions, t, predicate, qualifiers, said_by)

        new_value = self._next_value(head, claim)
        if values_equal(new_value, head.value):
            return self._reinforce(head, c, f"same value ({how})")

        if head.pinned:
            return self._conflict(c, head, predicate, qualifiers, said_by, new_value, "pinned fact")
        supersedes = claim.action is ClaimAction.SUPERSEDE or (
            claim.valid_from is not None and claim.valid_from > head.valid_from
        )
        if c.event.trust.rank < head.trust.rank or c.event.trust is Trust.UNTRUSTED:
            fact = self._new_fact(c, FactKind.STATE, predicate, new_value, qualifiers, said_by)
            reason = f"{c.event.trust} source may not displace a {head.trust} fact"
            return self._quarantine(c, fact, head, reason), fact.id, reason
        if supersedes:
            later = [s for s in self.s.support.get(head.id, ()) if s.at > t]
            if later:
                return self._change_inside(
                    c, head, later, predicate, qualifiers, said_by, new_value
                )
            return self._supersede(c, head, predicate, qualifiers, said_by, new_value, how)
        return self._conflict(c, head, predicate, qualifiers, said_by, new_value, "different value")

    def _state_without_head(
        self,
        c: Candidate,
        predicate: str,
        qualifiers: dict[str, Any],
        said_by: str | None,
        key: str,
        how: str,
    ) -> tuple[Outcome, str | None, str]:
        value = _without_nulls(c.claim.value or {})
        fact = self._new_fact(c, FactKind.STATE, predicate, value, qualifiers, said_by)
        if c.event.trust is Trust.UNTRUSTED:
            return self._quarantine(c, fact, None, "untrusted source"), fact.id, "untrusted source"
        # An unqualified value and a qualified different value contradict each other.
        for other in self._cross_qualified(predicate, key):
            if not values_equal(other.value, value):
                reason = "contradicts a fact with other qualifiers"
                return self._conflict(c, other, predicate, qualifiers, said_by, value, reason)
        self._create(fact, f"new identity ({how})", vector_text=self._query_text(c))
        return Outcome.CREATED, fact.id, "new identity"

    def _late(
        self,
        c: Candidate,
        versions: list[Fact],
        t: datetime,
        predicate: str,
        qualifiers: dict[str, Any],
        said_by: str | None,
    ) -> tuple[Outcome, str | None, str]:
        """A claim about a time before the current version began: file it into history."""
        where = timeline.place(versions, t)
        following = where.following
        assert following is not None  # t < head.valid_from
        base = where.version
        value = self._next_value(base, c.claim) if base else _without_nulls(c.claim.value or {})
        if base is not None and values_equal(value, base.value):
            return self._reinforce(base, c, "same value as the version in force then")
        if values_equal(value, following.value):
            # The next version was already true at t: it starts earlier than we knew.
            if base is not None:
                self._revise(base, "retime", "the next version started earlier", valid_to=t)
            return self._reinforce(following, c, "same value, stated earlier", valid_from=t)
        around = [f for f in (base, following) if f is not None]
        trust = c.event.trust
        if trust is Trust.UNTRUSTED or any(trust.rank < f.trust.rank for f in around):
            fact = self._new_fact(c, FactKind.STATE, predicate, value, qualifiers, said_by)
            reason = f"{trust} source may not rewrite the history of a more trusted fact"
            if trust is Trust.UNTRUSTED:
                reason = "untrusted source"
            return self._quarantine(c, fact, following, reason), fact.id, reason
        if any(f.pinned for f in around):
            return self._conflict(
                c, following, predicate, qualifiers, said_by, value, "pinned fact"
            )
        if self._first_of_competing_creates(c, base, following):
            return self._earlier_create(c, following, predicate, qualifiers, said_by, value)
        stated_end = c.claim.valid_to
        fact = self._new_fact(
            c,
            FactKind.STATE,
            predicate,
            value,
            qualifiers,
            said_by,
            status=FactStatus.SUPERSEDED,
            valid_to=timeline.end_of(stated_end, following.valid_from),
            retired_at=self.now,
            supersedes_id=base.id if base else None,
            superseded_by=following.id,
        )
        self._create(fact, "an older state that arrived late")
        if base is not None:
            self._revise(
                base,
                "link",
                "a later-arriving version began inside it",
                valid_to=timeline.end_of(
                    base.valid_to if base.valid_to != following.valid_from else None, t
                ),
                superseded_by=fact.id,
            )
        self._revise(
            following, "link", "an older version was filed before it", supersedes_id=fact.id
        )
        self._carry_forward_from(fact, [v for v in versions if v.valid_from > t])
        return Outcome.HISTORICAL, fact.id, "older state filed into history"

    def _first_of_competing_creates(self, c: Candidate, base: Fact | None, following: Fact) -> bool:
        """Two undated creates with different values conflict, and the earlier one is the
        active one: in order, the later create would have been held against it. So when the
        earlier create arrives second, the facts swap places instead of becoming history."""
        return (
            c.claim.action is ClaimAction.CREATE
            and c.claim.valid_from is None
            and base is None
            and following.status is FactStatus.ACTIVE
            and following.supersedes_id is None
            and following.stated is None
            and self._open_set(following.id) is None
        )

    def _earlier_create(
        self,
        c: Candidate,
        following: Fact,
        predicate: str,
        qualifiers: dict[str, Any],
        said_by: str | None,
        value: dict[str, Any],
    ) -> tuple[Outcome, str | None, str]:
        reason = "different value"
        self._revise(
            following,
            "hold",
            "an earlier, different value arrived late: held in conflict as if it came second",
            status=FactStatus.CANDIDATE,
        )
        fact = self._new_fact(c, FactKind.STATE, predicate, value, qualifiers, said_by)
        self._create(fact, f"the earlier of two competing values ({reason})", self._query_text(c))
        key = identity_key(predicate, qualifiers)
        self._open_conflict(key, (fact.id, following.id), ConflictKind.CONFLICT, reason)
        return Outcome.CONFLICT, fact.id, reason

    def _carry_forward_from(self, inserted: Fact, later: list[Fact]) -> None:
        """Versions that carried keys forward are recomputed from the version filed before
        them, so late arrival ends in the same values as arrival in order."""
        previous = inserted
        for version in later:
            current = self.s.facts[version.id]
            if current.stated is not None and previous.value is not None:
                value = _without_nulls({**previous.value, **current.stated})
                if not values_equal(value, current.value):
                    assert current.predicate is not None
                    current = self._revise(
                        current,
                        "recompute",
                        "an older version arrived late; carried-forward keys recomputed",
                        value=value,
                        text=fact_text(current.predicate, value, current.qualifiers),
                    )
            previous = current

    # -- the outcomes --------------------------------------------------------------------------
    def _reinforce(
        self, fact: Fact, c: Candidate, reason: str, valid_from: datetime | None = None
    ) -> tuple[Outcome, str | None, str]:
        if c.event.id in fact.source_event_ids:
            return Outcome.DUPLICATE, fact.id, "event already supports this fact"
        if fact.pinned:
            return Outcome.DUPLICATE, fact.id, "pinned facts are not changed by consolidation"
        t = self._time(c)
        _, when = timeline.freshest(
            (fact.trust.rank, fact.last_reinforced_at), (c.event.trust.rank, t)
        )
        trust = fact.trust if fact.trust.rank >= c.event.trust.rank else c.event.trust
        self._revise(
            fact,
            "reinforce",
            reason,
            source_event_ids=(*fact.source_event_ids, c.event.id),
            reinforcement_count=fact.reinforcement_count + 1,
            last_reinforced_at=when,
            trust=trust,
            valid_from=min(fact.valid_from, valid_from or fact.valid_from),
        )
        if fact.id in self.s.support:
            self.s.support[fact.id] = (
                *self.s.support[fact.id],
                Support(c.event.id, t, c.event.trust),
            )
        return Outcome.REINFORCED, fact.id, reason

    def _supersede(
        self,
        c: Candidate,
        head: Fact,
        predicate: str,
        qualifiers: dict[str, Any],
        said_by: str | None,
        value: dict[str, Any],
        how: str,
    ) -> tuple[Outcome, str | None, str]:
        t = self._time(c)
        fact = self._new_fact(
            c,
            FactKind.STATE,
            predicate,
            value,
            qualifiers,
            said_by,
            supersedes_id=head.id,
        )
        reason = f"new value replaces the old one ({how})"
        self._revise(
            head,
            "retire",
            reason,
            status=FactStatus.SUPERSEDED,
            valid_to=timeline.end_of(head.valid_to, t),
            retired_at=self.now,
            superseded_by=fact.id,
        )
        self._create(fact, reason, vector_text=self._query_text(c))
        return Outcome.SUPERSEDED, fact.id, reason

    def _change_inside(
        self,
        c: Candidate,
        head: Fact,
        later: list[Support],
        predicate: str,
        qualifiers: dict[str, Any],
        said_by: str | None,
        value: dict[str, Any],
    ) -> tuple[Outcome, str | None, str]:
        """A change dated before some of the current fact's restatements arrived late: in
        world time the value changed at t and was restated afterwards. The current fact
        splits into the version before t and a restated version from the first later
        statement; the change sits between them, as it would had everything come in order."""
        t = self._time(c)
        later_ids = {s.event_id for s in later}
        early = [s for s in self.s.support[head.id] if s.event_id not in later_ids]
        restart = min(s.at for s in later)
        restated_id = self.new_id()
        change = self._new_fact(
            c,
            FactKind.STATE,
            predicate,
            value,
            qualifiers,
            said_by,
            status=FactStatus.SUPERSEDED,
            valid_to=timeline.end_of(c.claim.valid_to, restart),
            retired_at=self.now,
            supersedes_id=head.id,
            superseded_by=restated_id,
        )
        reason = "a change that arrived late, between a value and its restatement"
        self._revise(
            head,
            "retire",
            reason,
            status=FactStatus.SUPERSEDED,
            valid_to=timeline.end_of(head.valid_to, t),
            retired_at=self.now,
            superseded_by=change.id,
            **_supported_by(early, head),
        )
        self._create(change, reason)
        restated = head.model_copy(
            update={
                "id": restated_id,
                "status": FactStatus.ACTIVE,
                "valid_from": restart,
                "valid_to": head.valid_to if head.valid_to and head.valid_to > restart else None,
                "recorded_at": self.now,
                "retired_at": None,
                "supersedes_id": change.id,
                "superseded_by": None,
                "stated": None,
                **_supported_by(later, head),
            }
        )
        self._create(restated, "the value restated after the change", vector_from=head.id)
        return Outcome.HISTORICAL, change.id, reason

    def _conflict(
        self,
        c: Candidate,
        existing: Fact,
        predicate: str,
        qualifiers: dict[str, Any],
        said_by: str | None,
        value: dict[str, Any],
        reason: str,
    ) -> tuple[Outcome, str | None, str]:
        key = identity_key(predicate, qualifiers)
        open_set = self._open_set(existing.id)
        if open_set is not None:
            for member_id in open_set.member_ids:
                member = self.s.facts[member_id]
                if member.status is FactStatus.CANDIDATE and values_equal(member.value, value):
                    return self._reinforce(member, c, "repeats a value already in conflict")
            if len(open_set.member_ids) >= CONFLICT_MAX_MEMBERS:
                return self._reclassify(c, open_set, predicate, qualifiers, said_by, value)
        fact = self._new_fact(
            c,
            FactKind.STATE,
            predicate,
            value,
            qualifiers,
            said_by,
            status=FactStatus.CANDIDATE,
        )
        self._create(fact, f"held in conflict: {reason}")
        if open_set is not None:
            self._revise_conflict(
                open_set, f"another value: {reason}", member_ids=(*open_set.member_ids, fact.id)
            )
        else:
            self._open_conflict(key, (existing.id, fact.id), ConflictKind.CONFLICT, reason)
        return Outcome.CONFLICT, fact.id, reason

    def _reclassify(
        self,
        c: Candidate,
        open_set: ConflictSet,
        predicate: str,
        qualifiers: dict[str, Any],
        said_by: str | None,
        value: dict[str, Any],
    ) -> tuple[Outcome, str | None, str]:
        """A third distinct value: these are statements made at different times, not one
        attribute. The held candidates become event facts; the active fact stays."""
        reason = "a third distinct value: the statements are kept as dated events"
        for member_id in open_set.member_ids:
            member = self.s.facts[member_id]
            if member.status is FactStatus.CANDIDATE:
                self._revise(
                    member,
                    "reclassify",
                    reason,
                    kind=FactKind.EVENT,
                    status=FactStatus.ACTIVE,
                    text=_stated(member.text, member.valid_from),
                )
        fact = self._new_fact(c, FactKind.EVENT, predicate, value, qualifiers, said_by)
        fact = fact.model_copy(update={"text": _stated(fact.text, fact.valid_from)})
        self._create(fact, reason)
        self._revise_conflict(
            open_set, reason, status=ConflictStatus.RECLASSIFIED, resolved_at=self.now
        )
        return Outcome.RECLASSIFIED, fact.id, reason

    def _quarantine(
        self, c: Candidate, fact: Fact, held_against: Fact | None, reason: str
    ) -> Outcome:
        held = fact.model_copy(update={"status": FactStatus.CANDIDATE})
        self._create(held, f"quarantined: {reason}")
        members = (held_against.id, held.id) if held_against else (held.id,)
        self._open_conflict(held.identity_key, members, ConflictKind.QUARANTINE, reason)
        return Outcome.QUARANTINED

    # -- identity ------------------------------------------------------------------------------
    def _resolve_predicate(
        self, predicate: str, value: dict[str, Any], qualifiers: dict[str, Any]
    ) -> tuple[str, str]:
        """Exact predicate, then a learned alias, then the nearest active fact by meaning."""
        key = identity_key(predicate, qualifiers)
        if any(f.identity_key == key and f.kind is FactKind.STATE for f in self.s.facts.values()):
            return predicate, "exact predicate"
        alias = self.s.aliases.get(predicate)
        if alias is not None:
            return alias.canonical, f"learned alias of {alias.canonical}"
        match = self._nearest(predicate, value, qualifiers)
        if match is None:
            return predicate, "exact predicate"
        other, distance = match
        assert other.predicate is not None
        learned = Alias(
            project=self.s.project,
            alias=predicate,
            canonical=other.predicate,
            distance=distance,
            learned_at=self.now,
        )
        self.s.aliases[predicate] = learned
        self.plan.add(
            LearnAlias(
                learned, f"'{predicate}' means '{other.predicate}' (distance {distance:.3f})"
            )
        )
        return other.predicate, f"same meaning as {other.predicate}, distance {distance:.3f}"

    def _nearest(
        self, predicate: str, value: dict[str, Any], qualifiers: dict[str, Any]
    ) -> tuple[Fact, float] | None:
        text = identity_text(predicate, value)
        wanted = qualifiers_of_key(identity_key(predicate, qualifiers))
        options: list[tuple[float, str]] = []
        hood = self.s.neighbours.get(text)
        if hood is not None:
            options.extend(zip(hood.distances, hood.fact_ids, strict=True))
        query = self.s.vectors.get(text)
        if query is not None:
            for fact_id, vector in self._new_vectors.items():
                options.append((float(1.0 - float(np.dot(query, vector))), fact_id))
        for distance, fact_id in sorted(options):
            fact = self.s.facts.get(fact_id)
            if (
                fact is None
                or fact.status is not FactStatus.ACTIVE
                or fact.kind is not FactKind.STATE
                or fact.predicate is None
                or fact.predicate == predicate
                or contrasting(fact.predicate, predicate)
                or fact.identity_key is None
                or qualifiers_of_key(fact.identity_key) != wanted
            ):
                continue
            # Rounded so that "exactly at the threshold" survives float noise.
            if round(distance, 6) <= self.max_distance:
                return fact, distance
            return None
        return None

    def _cross_qualified(self, predicate: str, key: str) -> list[Fact]:
        unqualified = identity_key(predicate, {})
        return [
            f
            for f in self.s.facts.values()
            if f.kind is FactKind.STATE
            and f.status is FactStatus.ACTIVE
            and f.predicate == predicate
            and f.identity_key != key
            and (key == unqualified or f.identity_key == unqualified)
        ]

    # -- helpers -------------------------------------------------------------------------------
    def _query_text(self, c: Candidate) -> str:
        """The candidate's identity text as embedded by the engine (its own predicate)."""
        assert c.claim.predicate is not None
        return identity_text(c.claim.predicate, c.claim.value)

    def _time(self, c: Candidate) -> datetime:
        return c.claim.valid_from or c.event.occurred_at

    def _next_value(self, base: Fact, claim: Claim) -> dict[str, Any]:
        """Supersede carries unstated keys forward; an explicit null deletes a key."""
        stated = claim.value or {}
        if claim.action is ClaimAction.SUPERSEDE and base.value:
            return _without_nulls({**base.value, **stated})
        return _without_nulls(stated)

    def _live(self) -> list[Fact]:
        return [f for f in self.s.facts.values() if f.live]

    def _open_set(self, fact_id: str) -> ConflictSet | None:
        for cs in self.s.conflicts.values():
            if cs.status is ConflictStatus.OPEN and fact_id in cs.member_ids:
                return cs
        return None

    def _new_fact(
        self,
        c: Candidate,
        kind: FactKind,
        predicate: str | None,
        value: dict[str, Any] | None,
        qualifiers: dict[str, Any],
        said_by: str | None,
        text: str | None = None,
        **overrides: Any,
    ) -> Fact:
        t = self._time(c)
        if text is None:
            assert predicate is not None and value is not None
            text = c.claim.text or fact_text(predicate, value, qualifiers)
        fields: dict[str, Any] = {
            "id": self.new_id(),
            "project": c.event.project,  # scope always comes from the event
            "subject": c.event.subject,
            "kind": kind,
            "predicate": predicate,
            "value": value,
            "text": text,
            "qualifiers": qualifiers,
            "attribution": said_by,
            "identity_key": identity_key(predicate, qualifiers) if predicate else None,
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
        return Fact(**fields)

    def _create(
        self,
        fact: Fact,
        reason: str,
        vector_text: str | None = None,
        norm_hash: str | None = None,
        vector_from: str | None = None,
    ) -> None:
        vector = self.s.vectors.get(vector_text) if vector_text else None
        if vector is not None and fact.status is FactStatus.ACTIVE:
            self._new_vectors[fact.id] = vector
        if fact.kind is FactKind.MEMORY and norm_hash is None:
            norm_hash = content_hash(normalise_text(fact.text))
        self.s.facts[fact.id] = fact
        if fact.kind is FactKind.STATE and vector_from is None and fact.status is FactStatus.ACTIVE:
            self.s.support[fact.id] = (
                Support(fact.source_event_ids[0], fact.valid_from, fact.trust),
            )
        self.plan.add(
            CreateFact(
                fact,
                reason,
                vector=vector,
                vector_model=self.s.vector_model if vector is not None else None,
                norm_hash=norm_hash,
                vector_from=vector_from,
            )
        )

    def _revise(self, fact: Fact, op: str, reason: str, **changes: Any) -> Fact:
        after = fact.model_copy(update=changes)
        if after == fact:
            return fact
        self.s.facts[fact.id] = after
        if after.status is not FactStatus.ACTIVE:
            self._new_vectors.pop(fact.id, None)
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
        self.s.conflicts[cs.id] = cs
        self.plan.add(OpenConflict(cs, reason))

    def _revise_conflict(self, cs: ConflictSet, reason: str, **changes: Any) -> None:
        after = cs.model_copy(update=changes)
        self.s.conflicts[cs.id] = after
        self.plan.add(ReviseConflict(cs, after, reason))

    def _observe(self, c: Candidate, outcome: Outcome, fact_id: str | None, reason: str) -> None:
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
                reason=f"{outcome}: {reason}",
            )
        )


def _supported_by(support: list[Support], fact: Fact) -> dict[str, Any]:
    """The provenance fields of a version backed by exactly these supporting events."""
    if not support:
        return {}
    trust = max((s.trust for s in support), key=lambda r: r.rank)
    freshest = max((s.trust.rank, s.at) for s in support)[1]
    ordered = [e for e in fact.source_event_ids if e in {s.event_id for s in support}]
    return {
        "source_event_ids": tuple(ordered),
        "reinforcement_count": len(ordered) - 1,
        "last_reinforced_at": freshest,
        "trust": trust,
    }


def _stated(text: str, when: datetime) -> str:
    """An event fact made from a reclassified statement says when it was said."""
    return f"{text} (stated {when.date().isoformat()})"


def _without_nulls(value: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in value.items() if v is not None}
