"""Adjudication: decide, for each accepted candidate, what happens to the facts.

Outcomes (DESIGN.md, "Adjudicate"): duplicate, reinforce, supersede, conflict, create, plus
two that keep low-trust and late input honest: quarantine and historical (an older state
that arrived after a newer one, filed into the timeline instead of displacing the present).

The pass works on a `Snapshot` the engine loaded for the subject and keeps its own working
copy as it goes, so the second event of a job sees what the first one did. It returns a
plan; it writes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from distill.core import timeline
from distill.core.identity import (
    content_hash,
    identity_key,
    identity_text,
    normalise_text,
    qualifiers_of_key,
    values_equal,
    veto,
)
from distill.core.late import LateArrivals
from distill.core.models import (
    Alias,
    ClaimAction,
    Fact,
    FactKind,
    FactStatus,
    Outcome,
    Trust,
)
from distill.core.passes import Decision
from distill.core.plan import (
    LearnAlias,
    Plan,
)
from distill.core.working import (
    Candidate,
    Identity,
    Snapshot,
    without_nulls,
)

# The cosine distance between the identity texts of two facts (`identity_text`: predicate and
# value) at or under which they are one attribute is a property of the embedding model, not of
# this pass: the caller gives the one calibrated for its embedder (the registry
# distill/adapters/embed/calibrations.json, measured by scripts/calibrate_threshold.py), or
# None for an embedder with no calibration, which turns matching by meaning off.
# How many nearest active facts are considered for a semantic identity match.
NEIGHBOURS = 5


class Adjudicator(LateArrivals):
    """Decides the outcome of each candidate of one job: see the module docstring."""

    def __init__(
        self,
        snapshot: Snapshot,
        now: datetime,
        new_id: Callable[[], str],
        max_distance: float | None = None,
    ) -> None:
        super().__init__(snapshot, now, new_id)
        self.max_distance = max_distance

    def run(self, candidates: Sequence[Candidate]) -> Plan:
        for cand in candidates:
            marker = (cand.event.id, cand.claim_hash)
            if marker in self.s.seen:
                self.plan.outcomes[Outcome.DUPLICATE] += 1
                continue
            self.s.seen.add(marker)
            kind = cand.claim.resolved_kind
            if kind is FactKind.MEMORY:
                decision = self._memory(cand)
            elif kind is FactKind.EVENT:
                decision = self._occurrence(cand)
            else:
                decision = self._state(cand)
            self.decisions.append(decision)
            self.plan.outcomes[decision.outcome] += 1
            self._observe(cand, decision)
        return self.plan

    def _memory(self, c: Candidate) -> Decision:
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
        fact = self._new_fact(c, FactKind.MEMORY, None, None, text)
        if c.event.trust is Trust.UNTRUSTED:
            return self._quarantine(c, fact, None, "untrusted source")
        self._create(fact, "new memory", norm_hash=norm)
        return Decision(Outcome.CREATED, fact.id, "new memory")

    def _occurrence(self, c: Candidate) -> Decision:
        assert c.claim.predicate is not None and c.claim.value is not None
        ident = Identity.of(c.claim.predicate, c.claim.qualifiers)
        fact = self._new_fact(c, FactKind.EVENT, ident, without_nulls(c.claim.value))
        if c.event.trust is Trust.UNTRUSTED:
            return self._quarantine(c, fact, None, "untrusted source")
        self._create(fact, "an occurrence; events never fuse")
        return Decision(Outcome.CREATED, fact.id, "an occurrence")

    def _state(self, c: Candidate) -> Decision:
        claim = c.claim
        assert claim.predicate is not None and claim.value is not None
        stated = Identity.of(claim.predicate, claim.qualifiers)
        predicate, how = self._resolve_predicate(claim.predicate, claim.value, stated.qualifiers)
        ident = Identity(predicate, stated.qualifiers, stated.said_by)
        key = ident.key
        versions = timeline.chain(self.s.facts.values(), key)
        t = self._time(c)

        # A replayed event that already supports a version with this value is a plain duplicate.
        for v in versions:
            if c.event.id in v.source_event_ids:
                return Decision(Outcome.DUPLICATE, v.id, "event already supports this fact")

        head = versions[-1] if versions and versions[-1].status is FactStatus.ACTIVE else None
        if head is None:
            return self._state_without_head(c, ident, key, how)

        if t < head.valid_from:
            return self._late(c, versions, t, ident)

        new_value = self._next_value(head, claim)
        if values_equal(new_value, head.value):
            return self._reinforce(head, c, f"same value ({how})")

        if head.pinned:
            return self._conflict(c, head, ident, new_value, "pinned fact")
        supersedes = claim.action is ClaimAction.SUPERSEDE or (
            claim.valid_from is not None and claim.valid_from > head.valid_from
        )
        if c.event.trust.rank < head.trust.rank or c.event.trust is Trust.UNTRUSTED:
            fact = self._new_fact(c, FactKind.STATE, ident, new_value)
            reason = f"{c.event.trust} source may not displace a {head.trust} fact"
            return self._quarantine(c, fact, head, reason)
        if supersedes:
            later = [s for s in self.s.support.get(head.id, ()) if s.at > t]
            if later:
                return self._change_inside(c, head, later, ident, new_value)
            return self._supersede(c, head, ident, new_value, how)
        return self._conflict(c, head, ident, new_value, "different value")

    def _state_without_head(
        self,
        c: Candidate,
        ident: Identity,
        key: str,
        how: str,
    ) -> Decision:
        value = without_nulls(c.claim.value or {})
        fact = self._new_fact(c, FactKind.STATE, ident, value)
        if c.event.trust is Trust.UNTRUSTED:
            return self._quarantine(c, fact, None, "untrusted source")
        # An unqualified value and a qualified different value contradict each other.
        for other in self._cross_qualified(ident.predicate, key):
            if not values_equal(other.value, value):
                reason = "contradicts a fact with other qualifiers"
                return self._conflict(c, other, ident, value, reason)
        self._create(fact, f"new identity ({how})", vector_text=self._query_text(c))
        return Decision(Outcome.CREATED, fact.id, "new identity")

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
        if self.max_distance is None:  # an uncalibrated embedder: no matching by meaning
            return None
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
                or veto(fact.predicate, predicate) is not None
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
