"""Adjudication: decide, for each accepted candidate, what happens to the facts.

Outcomes (DESIGN.md, "Adjudicate"): duplicate, reinforce, supersede, conflict, create, plus
two that keep low-trust and late input honest: quarantine and historical (an older state
that arrived after a newer one, filed into the timeline instead of displacing the present).

The pass works on a `Snapshot` the engine loaded for the subject and keeps its own working
copy as it goes, so the second event of a job sees what the first one did. It returns a
plan; it writes nothing.

The pass is built in layers, each a module: `WorkingSet` (working.py: the snapshot, the
plan, how an outcome is written), `Series` (series.py: a third distinct value makes the
held values dated events), `Rivals` (rivals.py: values held in conflict and what makes one
current), `Returns` (returns.py: what a late older version shows to be a return),
`Splits` (splits.py: a late change inside a version), `TrustOrder`
(trust_order.py: what a claim's trust changes, in order and late), `LateArrivals` (late.py:
claims dated before the current version) and `Adjudicator` here (a candidate's identity,
and the decision for claims in order).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from distill.core import timeline
from distill.core.attribute_match import Bands, Match, Verdict, judge
from distill.core.grounding import HELD_UNGROUNDED, ungrounded
from distill.core.identity import (
    content_hash,
    identity_key,
    identity_text,
    normalise_text,
    qualifiers_of_key,
    standing_instruction,
    values_equal,
    without_nulls,
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
from distill.core.votes import Policies
from distill.core.working import (
    Candidate,
    Identity,
    Snapshot,
)

# Whether a new predicate names a known attribute is decided by `attribute_match.judge`, with
# the distances calibrated for the embedder (the registry distill/adapters/embed/
# calibrations.json, measured by scripts/calibrate_threshold.py); an embedder with no
# calibration gets empty `Bands`, and only the words of the names decide.


class Adjudicator(LateArrivals):
    """Decides the outcome of each candidate of one job: see the module docstring."""

    def __init__(
        self,
        snapshot: Snapshot,
        now: datetime,
        new_id: Callable[[], str],
        bands: Bands | None = None,
        policies: Policies | None = None,
    ) -> None:
        super().__init__(snapshot, now, new_id)
        self.bands = bands or Bands()
        self.policies = policies or Policies()

    def run(self, candidates: Sequence[Candidate]) -> Plan:
        for cand in candidates:
            marker = (cand.event.id, cand.claim_hash)
            if marker in self.s.seen:
                self.plan.outcomes[Outcome.DUPLICATE] += 1
                continue
            self.s.seen.add(marker)
            kind = self._kind_of(cand)
            # Only a model's answer can say what its message does not (core.grounding).
            unsupported = (
                ungrounded(cand.claim, cand.event.text) if cand.extractor == "llm" else None
            )
            if cand.event.trust is not Trust.TRUSTED and standing_instruction(cand.claim):
                decision = self._held(
                    cand, kind, f"a standing instruction from a {cand.event.trust} source"
                )
            elif unsupported:
                decision = self._held(cand, kind, unsupported)
                self.plan.outcomes[HELD_UNGROUNDED] += 1
            elif kind is FactKind.MEMORY:
                decision = self._memory(cand)
            elif kind is FactKind.EVENT:
                decision = self._occurrence(cand)
            elif self.policies.votes(cand.claim.predicate):
                # Its value is the evidence's to decide (`core.votes`): a vote, no fact yet.
                decision = Decision(Outcome.VOTE, None, "a vote: the derive pass decides")
            else:
                decision = self._state(cand)
                if (fact := self.s.facts.get(decision.fact_id or "")) and fact.identity_key:
                    self._held_alone_meet_versions(fact.identity_key)
            self._sets_follow_the_current()
            decision = self._as_it_ended(decision)
            self.decisions.append(decision)
            self.plan.outcomes[decision.outcome] += 1
            self._observe(cand, decision)
        return self.plan

    def _kind_of(self, c: Candidate) -> FactKind:
        """The claim's kind; a claim that names none takes the kind of the identity it
        matches exactly (an attribute kept as dated event facts stays one)."""
        claim = c.claim
        if claim.kind is not None or claim.predicate is None:
            return claim.resolved_kind
        ident = Identity.of(claim.predicate, claim.qualifiers)
        alias = self.s.aliases.get(claim.predicate)
        keys = {ident.key} | ({identity_key(alias.canonical, ident.qualifiers)} if alias else set())
        kinds = {f.kind for key in keys for f in self._facts_of(key)}
        return FactKind.EVENT if kinds == {FactKind.EVENT} else FactKind.STATE

    def _held(self, c: Candidate, kind: FactKind, reason: str) -> Decision:
        """Held in quarantine, never active, whatever is known: a standing instruction for the
        agent from a source below `trusted` (the write gate catches the phrasings it knows;
        this catches the shape), or a model's answer its message does not support."""
        if kind is FactKind.MEMORY:
            fact = self._new_fact(c, kind, None, None, (c.claim.text or "").strip())
        else:
            assert c.claim.predicate is not None
            ident = Identity.of(c.claim.predicate, c.claim.qualifiers)
            fact = self._new_fact(c, kind, ident, without_nulls(c.claim.value or {}))
        return self._quarantine(c, fact, None, reason)

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
        predicate, how, probable = self._resolve_predicate(c, stated.qualifiers)
        ident = Identity(predicate, stated.qualifiers, stated.said_by)
        key = ident.key
        versions = timeline.chain(self._facts_of(key), key)
        t = self._time(c)

        # A replayed event that already supports a version with this value is a plain duplicate.
        for v in versions:
            if c.event.id in v.source_event_ids:
                return Decision(Outcome.DUPLICATE, v.id, "event already supports this fact")

        # The current version: the active one, wherever the chain puts it (a value a person
        # set aside for an older one keeps its later date: it comes after it in world time).
        active = [v for v in versions if v.status is FactStatus.ACTIVE]
        head = active[-1] if active else None
        if head is None:
            mark = self._mark()
            decision = self._state_without_head(c, ident, key, how, probable)
            self._end_retracted_gap(versions, decision)
            return self._unless_a_pin_changed(mark, decision, c, ident)

        # Before the head in world time (at the same instant, by its words: timeline.position).
        at = timeline.At(t, without_nulls(claim.value))
        if at < timeline.position(head):
            # Its change found what it replaced: a plain value of its own name, dated before
            # its first version (a change dated before it only moves where the change began).
            if (
                head.unpaired_change
                and not head.pinned
                and claim.action is not ClaimAction.SUPERSEDE
                and at < timeline.position(versions[0])
            ):
                self._revise(head, "pair", "an older value arrived", unpaired_change=False)
                versions = timeline.chain(self._facts_of(key), key)
            return self._late(c, versions, at, ident)

        new_value = self._next_value(head, claim)
        # The current value had ended by the claim's time (its stated end): whatever the
        # value, the claim begins a version of its own (the same value: a return after a gap).
        ended = head.valid_to is not None and head.valid_to <= t
        if values_equal(new_value, head.value) and not ended:
            # A change stated at the instant a create of its value held the first value in
            # quarantine: of the two, the change replaced that value (as it does arriving
            # first), so the held value was current until then.
            first = versions[0].id == head.id
            if first and head.valid_from == t and (held := self._held_first_value(c, head)):
                self._replaced_first_value(held, head, t)
                head = self.s.facts[head.id]
            return self._reinforce(head, c, f"same value ({how})")

        if head.pinned:
            return self._conflict(c, head, ident, new_value, "pinned fact")
        # Back to a value the identity held before (Acme, Globex, then Acme again) is a
        # return, not a contradiction: the older value is current again.
        returns = any(
            v.status is FactStatus.SUPERSEDED and values_equal(v.value, new_value)
            for v in versions[:-1]
        )
        # A value that begins after the current one ended follows it: they were never true at
        # once, so nothing contradicts.
        supersedes = (
            claim.action is ClaimAction.SUPERSEDE
            or returns
            or (claim.valid_from is not None and claim.valid_from > head.valid_from)
            or ended
        )
        # The head as the claim met it in world time: a restatement dated after the claim
        # that raised its trust had not been made yet (`_change_inside` files the claim).
        less = c.event.trust.rank < head.trust.rank
        met = self._trust_then(head, at) if less else head.trust
        # After its stated end the head is displaced by nothing: a less trusted value then
        # follows it (an untrusted one is held whatever it meets).
        if c.event.trust.yields_to(met) and not (ended and c.event.trust is not Trust.UNTRUSTED):
            if (repeated := self._repeated(c, head, new_value)) is not None:
                return repeated
            fact = self._new_fact(c, FactKind.STATE, ident, new_value)
            reason = f"{c.event.trust} source may not displace a {met} fact"
            return self._quarantine(c, fact, head, reason)
        if not supersedes and self._held_back_by_less_trusted(c, head, at):
            return self._over_less_trusted(c, head, ident, new_value, at)
        if supersedes:
            later = self._restated_after(head, at)
            if later and self._adoption_undone(head, at, later):
                return self._late(c, timeline.chain(self._facts_of(key), key), at, ident)
            if later:
                return self._change_inside(c, head, later, ident, new_value)
            rival = self._held_rival(head, new_value, c.event.trust)
            # One that began after the change's stated end restates nothing: it follows it.
            if rival is not None and not (claim.valid_to and claim.valid_to <= rival[0].valid_from):
                reason = f"a change to the value held in conflict ({how})"
                adopted = self._adopt(c, head, *rival, reason)
                return Decision(Outcome.SUPERSEDED, adopted.id, reason)
            return self._supersede(c, head, ident, new_value, how)
        return self._conflict(c, head, ident, new_value, "different value")

    def _end_retracted_gap(self, versions: list[Fact], decision: Decision) -> None:
        """A value made current while no version is active (a person retracted the one that
        was) is filed among the versions by its date, so that no two are true at once: the
        version it falls inside ends at its date (superseded by it, no longer by the
        retracted one), and a version that began after it ends it there (no value is
        current then, as the retraction left it)."""
        fact = self.s.facts.get(decision.fact_id or "")
        if not versions or fact is None or fact.status is not FactStatus.ACTIVE:
            return
        t, at = fact.valid_from, timeline.position(fact)
        # By position: a version of the same instant is before or after it by its words.
        later = [v for v in versions if at < timeline.position(v)]
        after = {v.id for v in later}
        inside = [
            v for v in versions if v.id not in after and (v.valid_to is None or v.valid_to > t)
        ]
        for v in inside:  # its receipt: the fact that holds from its end (not the retracted)
            self._revise(
                v, "retime", f"{fact.id} holds from its date", valid_to=t, superseded_by=fact.id
            )
        if inside:
            fact = self._revise(fact, "link", "the version before it", supersedes_id=inside[-1].id)
        if later:
            following = min(later, key=lambda v: v.valid_from)
            self._revise(
                fact,
                "retire",
                f"a later version ({following.id}) began after it",
                status=FactStatus.SUPERSEDED,
                valid_to=following.valid_from,
                retired_at=self.now,
                superseded_by=following.id,
            )

    def _state_without_head(
        self,
        c: Candidate,
        ident: Identity,
        key: str,
        how: str,
        probable: tuple[Fact, Match] | None = None,
    ) -> Decision:
        value = without_nulls(c.claim.value or {})
        fact = self._new_fact(c, FactKind.STATE, ident, value)
        if c.event.trust is Trust.UNTRUSTED:
            if (repeated := self._repeated_alone(c, key, value)) is not None:
                return repeated
            return self._quarantine(c, fact, None, "untrusted source")
        if probable is not None:
            return self._contest_identity(c, fact, *probable)
        # An unqualified value and a qualified different value contradict each other.
        for other in self._cross_qualified(ident.predicate, key):
            if not values_equal(other.value, value):
                reason = "contradicts a fact with other qualifiers"
                return self._conflict(c, other, ident, value, reason)
        if c.claim.action is ClaimAction.SUPERSEDE and not self._state_versions(key):
            # A change of nothing known: the value it replaced may still arrive, under another
            # name, and is then judged against this fact (`_match`), as if it had come first.
            fact = fact.model_copy(update={"unpaired_change": True})
        fact = self._create_version(c, fact, f"new identity ({how})", self._query_text(c))
        return Decision(Outcome.CREATED, fact.id, "new identity")

    def _resolve_predicate(
        self, c: Candidate, qualifiers: dict[str, Any]
    ) -> tuple[str, str, tuple[Fact, Match] | None]:
        """Which attribute the claim is about, and how that was decided: its exact predicate
        when it names an active fact; else a learned alias that leads to a name this subject
        has, or the predicate's own history (either way, a name this subject resolved into
        another follows it); else the known fact its extractor says it `updates`; else a
        known fact judged the same by `attribute_match` (an alias is learned). A known fact
        judged probably the same comes back third: the claim keeps its own predicate and is
        contested against it."""
        predicate, value = c.claim.predicate, c.claim.value
        assert predicate is not None
        key = identity_key(predicate, qualifiers)
        own = self._state_versions(key)
        if any(f.status is FactStatus.ACTIVE for f in own):
            return predicate, "exact predicate", None
        # A learned alias wins over the name's own past: once a person (or the judge) said
        # `bike_count` is `bike_class_count`, the old name's superseded versions are history.
        # An alias is the project's, learned on some subject: it is followed here only when
        # this subject has facts under the name it points to.
        alias = self.s.aliases.get(predicate)
        named, how = predicate, "exact predicate"
        if alias is not None and self._state_versions(identity_key(alias.canonical, qualifiers)):
            named, how = alias.canonical, f"learned alias of {alias.canonical}"
        elif not own:
            named = ""
        if named:
            versions = self._state_versions(identity_key(named, qualifiers))
            moved = timeline.renamed_to(versions, self.s.facts.get)
            if moved is not None and moved.predicate is not None:
                return moved.predicate, f"'{named}' was resolved into {moved.predicate}", None
            return named, how, None
        updated = self._updated_fact(c.claim.updates, qualifiers)
        if updated is not None and updated.predicate is not None:
            reason = f"the extractor says it updates '{updated.predicate}'"
            self._learn_alias(predicate, updated.predicate, 0.0, reason)
            return updated.predicate, reason, None
        asserted = c.claim.action is ClaimAction.SUPERSEDE
        found = self._match(predicate, value, qualifiers, asserted, c.event.trust, self._time(c))
        if found is None:
            return predicate, "exact predicate", None
        other, match = found
        assert other.predicate is not None
        if match.verdict is Verdict.PROBABLE:
            return predicate, "exact predicate", found
        self._learn_alias(predicate, other.predicate, match.distance, match.reason)
        return other.predicate, f"same attribute as {other.predicate}: {match.reason}", None

    def _state_versions(self, key: str) -> list[Fact]:
        return [f for f in self._facts_of(key) if f.kind is FactKind.STATE]

    def _learn_alias(self, alias: str, canonical: str, distance: float, reason: str) -> None:
        """Learn `alias` → `canonical` for the project, unless the name already means
        something (one meaning per name and project: the first one learned stays)."""
        if alias in self.s.aliases:
            return
        learned = Alias(
            project=self.s.project,
            alias=alias,
            canonical=canonical,
            distance=distance,
            learned_at=self.now,
        )
        self.s.aliases[alias] = learned
        self.plan.add(LearnAlias(learned, f"'{alias}' means '{canonical}': {reason}"))

    def _updated_fact(self, updates: str | None, qualifiers: dict[str, Any]) -> Fact | None:
        """The active state fact named by a claim's `updates` reference, if there is one with
        the claim's qualifiers; a reference to anything else is ignored."""
        if not updates:
            return None
        key = identity_key(updates, qualifiers)
        found = [
            f
            for f in self._facts_of(key)
            if f.kind is FactKind.STATE and f.status is FactStatus.ACTIVE
        ]
        return found[0] if found else None

    def _match(
        self,
        predicate: str,
        value: dict[str, Any] | None,
        qualifiers: dict[str, Any],
        asserted: bool,
        trust: Trust,
        at: datetime,
    ) -> tuple[Fact, Match] | None:
        """The known active state fact (same qualifiers, another predicate) that the claim
        most probably names: the closest judged the same, else the closest judged probably
        the same on some evidence (words or distances), else the closest a judge model is
        to be asked about only because one of the two is a change (never a pinned fact, nor
        a replaced value from a better-trusted source than its replacement's: a model may
        not settle those), else None. Ties go to the lower distance, then the predicate, so
        the choice does not depend on the order facts were loaded in.

        A change replaces a value dated no later than itself: the claim (`asserted`, said
        `at`) replaces a known attribute that had a value by then (its first version dated no
        later, whatever its current one); a known fact created from a change that
        matched nothing (`Fact.unpaired_change`, unpinned) is judged against a claim dated no
        later, as it would have been against that value had they come the other way round
        (DESIGN invariant 8). A pinned change is a person's word: not paired automatically."""
        wanted = qualifiers_of_key(identity_key(predicate, qualifiers))
        name = self.s.vectors.get(identity_text(predicate))
        full = self.s.vectors.get(identity_text(predicate, value))
        found: list[tuple[int, float, str, Fact, Match]] = []
        for fact in self.s.facts.values():
            if (
                fact.status is not FactStatus.ACTIVE
                or fact.kind is not FactKind.STATE
                or fact.predicate is None
                or fact.predicate == predicate
                or fact.identity_key is None
                or qualifiers_of_key(fact.identity_key) != wanted
            ):
                continue
            # (the attribute's first version is read only for a claim dated before its current one)
            claim_changes = asserted and (fact.valid_from <= at or self._began(fact) <= at)
            fact_changes = fact.unpaired_change and not fact.pinned and at <= self._began(fact)
            match = judge(
                (fact.predicate, fact.value),
                (predicate, value),
                self.bands,
                _distance(name, self.s.vectors.get(identity_text(fact.predicate))),
                _distance(full, self.s.vectors.get(identity_text(fact.predicate, fact.value))),
                claim_changes or fact_changes,
            )
            # The replaced value's source against the replacement's.
            replaced, replacing = (fact.trust, trust) if claim_changes else (trust, fact.trust)
            # Two changes of one instant: which replaced which is unknown, so neither source
            # may be let replace the other's by a model.
            unsure = claim_changes and fact_changes and trust is not fact.trust
            if match.unsupported and (fact.pinned or replaced.rank > replacing.rank or unsure):
                continue  # a model may not settle it (passes.identity_judge): not asked
            if match.verdict is not Verdict.DIFFERENT:
                rank = 0 if match.verdict is Verdict.SAME else 2 if match.unsupported else 1
                found.append((rank, match.distance, fact.predicate, fact, match))
        if not found:
            return None
        _, _, _, fact, match = min(found, key=lambda item: item[:3])
        return fact, match

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


def _distance(a: npt.NDArray[np.float32] | None, b: npt.NDArray[np.float32] | None) -> float | None:
    """Cosine distance of two unit vectors, None when either is unknown."""
    if a is None or b is None:
        return None
    return float(1.0 - float(np.dot(a, b)))
