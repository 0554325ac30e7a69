"""Decisions a person makes through the API: resolving a conflict set, pinning a fact,
retracting a wrong one, erasing a subject.

They produce plans like any pass (pass name `api`), so the same validator and audit apply.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from distill.core.identity import content_hash, identity_text
from distill.core.models import (
    Alias,
    ConflictKind,
    ConflictSet,
    ConflictStatus,
    Event,
    Fact,
    FactStatus,
    Observation,
    Resolver,
)
from distill.core.plan import EraseScope, LearnAlias, Plan, ReviseConflict, ReviseFact
from distill.errors import AlreadyResolved, InvalidInput, InvalidOperation, PinnedFact


def resolve_conflict(
    conflict: ConflictSet,
    members: Mapping[str, Fact],
    keep: str | None,
    now: datetime,
    current: Fact | None = None,
    by: str = "a person",
    pass_name: str = "api",
    resolver: Resolver = Resolver.PERSON,
    aliases: Mapping[str, str] | None = None,
    others: Sequence[ConflictSet] = (),
    history: Sequence[Fact] = (),
) -> Plan:
    """Keep one member (or none of the held candidates when `keep` is None).

    The kept fact becomes active; every other live member is superseded by it (its receipt),
    and so is `current`, the identity's active fact, when it is not a member (a quarantine
    set may hold only the candidate). A member that was only ever a candidate gets an empty
    validity interval: it was never true. With `keep=None` the held candidates are retracted
    and the active fact stays. A pinned fact is never superseded: unpin it first.

    The identity keeps one value at any instant (DESIGN invariant 8). A candidate held
    against an older version (a late, less trusted claim dated inside it; `current` is not
    in the set), or one whose stated end came before `current` began (even held against
    `current` itself: the two never met), is filed where arrival in world order would have
    put it: the version it falls inside ends at its date, it holds until the next version
    of `history` (the identity's retired versions) or `current` began, and the current
    fact stays current.
    Any other kept fact becomes current from its own `valid_from`: a version still true then
    ends there, and one that began later gets an empty interval, as `current` does. Keeping
    the older version instead (the held claim was wrong) leaves it history and the current
    fact current. A member kept that is no longer live (an older version, or a value a
    decision turned down since) changes no version either: only the held candidates are
    turned down.

    An identity set (two predicates that may name one attribute) resolved by keeping one
    member says they are one: the other is superseded by it and its predicate is learned as
    an alias of the kept one, so the next claim under that name is filed exactly. Resolved
    with `keep=None` it says they are two attributes: both stay, the set is closed. A name
    that already means something in the project (`aliases`: alias → canonical) keeps its
    meaning: one meaning per name.

    `others`: the subject's other open sets. An identity set holding a fact this resolution
    supersedes holds the kept fact instead (the question goes on with the current value, as
    `Rivals._follow_identity_sets` does for a new version); one left with a single
    member is closed, its question answered by this one. A candidate retracted (`keep=None`)
    leaves the identity sets that held it the same way, with nothing in its place. An
    identity set whose resolution would retire a fact that an open value conflict or
    quarantine set holds, or holds a rival value for, is refused: that set's candidates stand
    against that fact's attribute, and moving them to another would make one set span two
    attributes. Resolve that set first. A value or quarantine set among `others` that
    held a candidate this turns down goes on without it, or is closed when it holds no
    candidate then (`_follow`): no open set weighs a value nobody holds.
    """
    if conflict.status is not ConflictStatus.OPEN:
        raise AlreadyResolved(f"conflict {conflict.id} is already {conflict.status}")
    if keep is not None and keep not in conflict.member_ids:
        raise InvalidInput(
            f"fact {keep} is not a member of conflict {conflict.id} "
            f"(members: {', '.join(conflict.member_ids)})"
        )
    kept = members[keep] if keep is not None else None
    # Only this set's members: `members` may hold the facts of other sets (the judge pass
    # loads a subject's sets together), and those are not decided here.
    involved = {m: members[m] for m in conflict.member_ids if m in members}
    # A held claim weighed against an older version, kept, is filed into history before the
    # version that followed that one (`_later_version`); the current fact stays current.
    later = _later_version(kept, current, history, conflict) if kept is not None else None
    # A retired member kept (the older version was right) stays history: the present is not
    # its to displace either.
    if (
        kept is not None
        and kept.live
        and later is None
        and current is not None
        and current.id != kept.id
    ):
        involved[current.id] = current
    losers = [f for f in involved.values() if f.live and f.id != keep]
    if later is not None and current is not None:  # filed into history: the present stays
        losers = [f for f in losers if f.id != current.id]
    if kept is None or not kept.live:  # only the held candidates are turned down
        losers = [f for f in losers if f.status is FactStatus.CANDIDATE]
    overlapped = _overlapped(kept, history, {f.id for f in losers}) if kept and kept.live else []
    if kept is not None and later is not None:  # only the version it falls inside ends
        overlapped = [f for f in overlapped if f.valid_from <= kept.valid_from]
    for fact in [*losers, *overlapped]:
        if fact.pinned:
            raise PinnedFact(f"fact {fact.id} is pinned; unpin it before resolving its conflict")
    blocking = held_elsewhere(conflict, losers, others) if kept else []
    if conflict.kind is ConflictKind.IDENTITY and blocking:
        raise InvalidOperation(
            f"an open {blocking[0].kind} set ({blocking[0].id}) holds a value of an attribute "
            "this would retire; resolve that set first"
        )

    plan = Plan()
    reason = f"conflict {conflict.id} resolved by {by}"
    # A change still waiting for the value it replaced (`Fact.unpaired_change`) waits as its
    # attribute's current version: a kept rival of the same attribute takes the mark over
    # (not a pinned one: a pinned change is left to its person, and keeping it changes
    # nothing else of it).
    carried = (
        kept is not None
        and not kept.pinned
        and any(
            f.unpaired_change
            and f.status is FactStatus.ACTIVE
            and f.identity_key == kept.identity_key
            for f in losers
        )
    )
    # Retire first, so that the store never sees two active facts for one identity.
    for fact in losers:
        if kept is None:
            after = fact.model_copy(
                update={
                    "status": FactStatus.RETRACTED,
                    "retired_at": now,
                    "valid_to": fact.valid_from,
                }
            )
            plan.add(ReviseFact(fact, after, "resolve", f"{reason}: not kept", pass_name))
            continue
        was_true = fact.status is FactStatus.ACTIVE
        after = fact.model_copy(
            update={
                "status": FactStatus.SUPERSEDED,
                "retired_at": now,
                "superseded_by": kept.id,
                "valid_to": _end(fact, kept) if was_true else fact.valid_from,
                "unpaired_change": fact.unpaired_change and not carried,
            }
        )
        plan.add(ReviseFact(fact, after, "resolve", f"{reason}: replaced by {kept.id}", pass_name))
    for fact in overlapped:  # (none unless a fact is kept)
        assert kept is not None
        # It ends where the kept fact begins: that is its receipt now.
        ended = {"valid_to": max(fact.valid_from, kept.valid_from), "superseded_by": kept.id}
        after = fact.model_copy(update=ended)
        said = f"{reason}: {kept.id} holds from {kept.valid_from.isoformat()}"
        plan.add(ReviseFact(fact, after, "retime", said, pass_name))
    if kept is not None and later is not None:
        end = _kept_until(kept, later)
        follows = kept.supersedes_id
        if overlapped:  # the version it falls inside, or the one before a version it empties
            follows = _turned_down(
                overlapped[0], kept, overlapped, history, plan, reason, pass_name
            )
        after = kept.model_copy(
            update={
                "status": FactStatus.SUPERSEDED,
                "valid_to": end,
                "retired_at": now,
                "superseded_by": later.id,
                "supersedes_id": follows,
            }
        )
        plan.add(ReviseFact(kept, after, "resolve", f"{reason}: kept, until {later.id}", pass_name))
    elif kept is not None and kept.status is FactStatus.CANDIDATE:
        previous = [f for f in losers if f.status is FactStatus.ACTIVE]
        before = previous[0].id if previous else kept.supersedes_id
        if previous and _end(previous[0], kept) == previous[0].valid_from:
            before = _turned_down(previous[0], kept, overlapped, history, plan, reason, pass_name)
        after = kept.model_copy(
            update={
                "status": FactStatus.ACTIVE,
                "supersedes_id": before,
                "unpaired_change": kept.unpaired_change or carried,
            }
        )
        plan.add(ReviseFact(kept, after, "resolve", f"{reason}: kept", pass_name))
    if conflict.kind is ConflictKind.IDENTITY and kept is not None and kept.predicate:
        for fact in losers:
            if (
                fact.predicate
                and fact.predicate != kept.predicate
                and fact.predicate not in (aliases or {})
            ):
                alias = Alias(
                    project=conflict.project,
                    alias=fact.predicate,
                    canonical=kept.predicate,
                    distance=0.0,
                    learned_at=now,
                )
                said = f"{reason}: '{fact.predicate}' means '{kept.predicate}'"
                plan.add(LearnAlias(alias, said, pass_name))
    # What the person accepted: the statements of a held value they made current. Keeping
    # the current value, or filing a held one into history, serves no held statement.
    made_current = kept is not None and kept.status is FactStatus.CANDIDATE and later is None
    accepted = kept.source_event_ids if kept is not None and made_current else ()
    closed = _closed(conflict, keep, now, resolver, accepted)
    plan.add(ReviseConflict(conflict, closed, reason, pass_name))
    # The candidates turned down were never true: a set that held them against another
    # version has its question answered for them.
    rejected = {f.id for f in losers if f.status is FactStatus.CANDIDATE}
    # The versions that end where the kept fact begins (a current one it replaced, too).
    replaced = [*overlapped, *(f for f in losers if f.status is FactStatus.ACTIVE)]
    for other in others:
        moved = _follow(
            other, conflict, {f.id for f in losers}, rejected, members, kept, now, resolver
        )
        said = _followed(reason, moved, kept) if moved is not None else ""
        if kept is not None and replaced:
            held = _held_against_kept(moved or other, replaced, kept, later, members)
            if held is not None:
                moved, said = held, f"{reason}: {kept.id} holds where its members were said"
        if moved is not None:
            plan.add(ReviseConflict(other, moved, said, pass_name))
    return plan


def _held_against_kept(
    other: ConflictSet,
    versions: Sequence[Fact],
    kept: Fact,
    later: Fact | None,
    members: Mapping[str, Fact],
) -> ConflictSet | None:
    """An open value or quarantine set that holds candidates against one of the `versions`
    that now end where the kept fact begins (the current one it replaced, those it
    overlaps: `_overlapped`), when every candidate is dated inside the kept fact's
    interval (to `later`, the version it is filed before, if any): in world order each met
    the kept fact as the version in force, so the set holds it in that version's place. So
    too when the decision turned that version down (it began no earlier than the kept
    fact): a value nobody holds holds nothing, and its question passes to the kept value
    (seed 1561424: a value of the instant the kept one ends, whose words sort before the
    next version's, met the kept one). A quarantine only while each candidate's source
    yields to the kept fact's; else a value conflict, theirs to decide. None otherwise: a
    candidate dated before stays held against the version it met."""
    ended = [f for f in versions if f.id in other.member_ids]
    if (
        other.status is not ConflictStatus.OPEN
        or other.kind is ConflictKind.IDENTITY
        or kept.id in other.member_ids
        or len(ended) != 1
    ):
        return None
    loaded = [members.get(m) for m in other.member_ids if m != ended[0].id]
    held = [f for f in loaded if f is not None and f.status is FactStatus.CANDIDATE]
    if not held or len(held) != len(loaded):
        return None
    until = kept.valid_to if later is None else _kept_until(kept, later)
    inside = all(
        kept.valid_from <= f.valid_from and (until is None or f.valid_from < until) for f in held
    )
    turned_down = kept.valid_from <= ended[0].valid_from
    if not (inside or turned_down):
        return None
    trusts = [f.trust for f in held]
    quarantined = other.kind is ConflictKind.QUARANTINE and all(
        t.yields_to(kept.trust) for t in trusts
    )
    source = max(trusts, key=lambda t: t.rank)
    return other.model_copy(
        update={
            "member_ids": tuple(kept.id if m == ended[0].id else m for m in other.member_ids),
            "kind": ConflictKind.QUARANTINE if quarantined else ConflictKind.CONFLICT,
            "reason": f"{source} source may not displace a {kept.trust} fact"
            if quarantined
            else "different value",
        }
    )


def _kept_until(kept: Fact, later: Fact) -> datetime:
    """Where a kept candidate filed into history before `later` ends."""
    return later.valid_from if kept.valid_to is None else min(kept.valid_to, later.valid_from)


def _followed(reason: str, moved: ConflictSet, kept: Fact | None) -> str:
    if kept is None:
        return f"{reason}: a member was retracted" + (
            "" if moved.status is ConflictStatus.OPEN else ", the question is gone"
        )
    if moved.status is ConflictStatus.OPEN:
        return f"{reason}: a member was superseded by {kept.id}"
    return f"{reason}: its members are one fact now"


def _follow(
    other: ConflictSet,
    resolved: ConflictSet,
    retired: set[str],
    rejected: set[str],
    members: Mapping[str, Fact],
    kept: Fact | None,
    now: datetime,
    resolver: Resolver,
) -> ConflictSet | None:
    """`other` once `resolved` retired `retired` in favour of `kept`; None when it is not
    touched. Whatever changes, a set it closes is closed by `resolver`, whose decision
    answered it.

    An open identity set holding a retired fact holds the kept one instead, or is closed
    when that leaves it one member. With `kept` None the retired facts were retracted: the
    set goes on without them, and one left with a single member is closed with nothing
    kept (whether two names are one attribute is no question once one of them holds
    nothing).

    An open value or quarantine set holding a `rejected` candidate (turned down: never
    true) goes on without it while it still holds a candidate (`members` has the facts of
    the sets it shares); otherwise its question is answered, and the set is closed keeping
    the version it held them against, if it holds one still served."""
    if other.id == resolved.id or other.status is not ConflictStatus.OPEN:
        return None
    if other.kind is not ConflictKind.IDENTITY:
        if not rejected & set(other.member_ids):
            return None
        held = tuple(m for m in other.member_ids if m not in rejected)
        still = [members.get(m) for m in held if m not in retired]
        # (a member whose fact was not loaded may be a candidate: the set stays open)
        if any(f is None or (f.status is FactStatus.CANDIDATE and f is not kept) for f in still):
            return other.model_copy(update={"member_ids": held})
        served = [f.id for f in still if f is not None and f.live]
        return _closed(other, served[0] if len(served) == 1 else None, now, resolver)
    if not retired & set(other.member_ids):
        return None
    instead = () if kept is None else (kept.id,)
    held = tuple(
        dict.fromkeys(n for m in other.member_ids for n in (instead if m in retired else (m,)))
    )
    if len(held) > 1:
        return other.model_copy(update={"member_ids": held})
    return _closed(other, kept.id if kept is not None else None, now, resolver)


def _closed(
    conflict: ConflictSet,
    kept: str | None,
    now: datetime,
    resolver: Resolver,
    accepted: tuple[str, ...] = (),
) -> ConflictSet:
    closed = {
        "status": ConflictStatus.RESOLVED,
        "resolved_at": now,
        "kept_fact_id": kept,
        "resolved_by": resolver,
        "accepted_event_ids": accepted,
    }
    return conflict.model_copy(update=closed)


def held_elsewhere(
    conflict: ConflictSet, facts: Sequence[Fact], others: Sequence[ConflictSet]
) -> list[ConflictSet]:
    """The open value conflicts and quarantine sets, other than `conflict`, that hold one of
    `facts` or a rival value of one of their attributes (a set on the same identity key: a
    candidate held against that attribute, whichever version of it the set names)."""
    ids = {f.id for f in facts}
    keys = {f.identity_key for f in facts if f.identity_key is not None}
    return [
        o
        for o in others
        if o.id != conflict.id
        and o.status is ConflictStatus.OPEN
        and o.kind is not ConflictKind.IDENTITY
        and (ids & set(o.member_ids) or o.identity_key in keys)
    ]


def _later_version(
    kept: Fact, current: Fact | None, history: Sequence[Fact], conflict: ConflictSet
) -> Fact | None:
    """When the kept fact is a candidate held against an older version (the current fact
    is not in the set), or one whose stated end came before the current fact began, and
    dated before the current fact began: the first version that began after it, which it
    holds until. None when it becomes the current fact."""
    if (
        kept.status is not FactStatus.CANDIDATE
        or kept.pinned  # a person's pin: it is kept as it is, and becomes current
        or current is None
        or current.id == kept.id
        or current.valid_from <= kept.valid_from
    ):
        return None
    # Held against the current fact itself, it replaces it, unless its stated end came
    # before the current fact began: then the two never met, and it is history before it.
    ended_before = kept.valid_to is not None and kept.valid_to <= current.valid_from
    if current.id in conflict.member_ids and not ended_before:
        return None
    versions = [
        f
        for f in [*history, current]
        if f.status in (FactStatus.ACTIVE, FactStatus.SUPERSEDED)
        and f.identity_key == kept.identity_key
        and f.valid_from > kept.valid_from
        and not f.never_true
    ]
    return min(versions, key=lambda f: f.valid_from) if versions else None


def _overlapped(kept: Fact, history: Sequence[Fact], retired: set[str]) -> list[Fact]:
    """The retired versions of the kept fact's identity that were true after it began."""
    return [
        f
        for f in history
        if f.id != kept.id
        and f.id not in retired
        and f.status is FactStatus.SUPERSEDED
        and f.kind is kept.kind
        and f.identity_key == kept.identity_key
        and f.subject == kept.subject
        and (f.valid_to is None or f.valid_to > kept.valid_from)
        and not f.never_true
    ]


def _turned_down(
    current: Fact,
    kept: Fact,
    overlapped: Sequence[Fact],
    history: Sequence[Fact],
    plan: Plan,
    reason: str,
    pass_name: str,
) -> str | None:
    """The version the kept fact follows when it began no later than `current`, which it
    replaces: `current` is left with an empty interval, a value turned down, not a version
    (`timeline.overruled` tells it from the earlier of two versions of one instant because
    no version names it). The kept fact follows the version true when it began (of
    `overlapped`, the one that began before it: one that began with it is emptied too), or
    the one `current` followed and that ended where both began, which is linked to it. A
    value filed into history turns down, as `current`, the version it began with."""
    if inside := [f for f in overlapped if f.valid_from < kept.valid_from]:
        return inside[0].id
    prior = next((f for f in history if f.id == current.supersedes_id), None)
    if (
        prior is None
        or prior.status is not FactStatus.SUPERSEDED
        or prior.superseded_by != current.id
        or prior.valid_to != kept.valid_from
    ):
        return None
    after = prior.model_copy(update={"superseded_by": kept.id})
    plan.add(ReviseFact(prior, after, "link", f"{reason}: followed by {kept.id}", pass_name))
    return prior.id


def _end(old: Fact, kept: Fact) -> datetime:
    """An active fact replaced by a person's choice was true until the kept one began."""
    if kept.valid_from > old.valid_from:
        return kept.valid_from
    return old.valid_from


def pin(fact: Fact, pinned: bool) -> Plan:
    plan = Plan()
    if fact.pinned != pinned:
        after = fact.model_copy(update={"pinned": pinned})
        plan.add(
            ReviseFact(fact, after, "pin", "pinned by a person" if pinned else "unpinned", "api")
        )
    return plan


def retract(fact: Fact, reason: str, now: datetime, open_sets: Sequence[ConflictSet]) -> Plan:
    """A person says a fact is wrong: it is retracted (never served again, its receipt the
    audit entry with their reason) and its validity emptied, for it was never true. The
    version it superseded stays superseded: which value is right instead is not guessed; the
    identity gets a new fact from the next claim. A pinned fact must be unpinned first, and
    a member of an open conflict set is decided by resolving the set."""
    if not reason.strip():
        raise InvalidInput("reason: say why the fact is retracted (it is kept in the audit)")
    if not fact.live:
        raise InvalidOperation(
            f"fact {fact.id} is already {fact.status}: only a live fact is retracted"
        )
    if fact.pinned:
        raise PinnedFact(f"fact {fact.id} is pinned; unpin it before retracting it")
    holding = [c.id for c in open_sets if fact.id in c.member_ids]
    if holding:
        raise InvalidOperation(
            f"fact {fact.id} is in open conflict set {', '.join(holding)}: resolve the set "
            "instead (keep another member, or none)"
        )
    after = fact.model_copy(
        update={"status": FactStatus.RETRACTED, "retired_at": now, "valid_to": fact.valid_from}
    )
    return Plan([ReviseFact(fact, after, "retract", f"retracted by a person: {reason}", "api")])


def erase(
    project: str,
    subject: str | None,
    counts: Mapping[str, int],
    events: Sequence[Event],
    facts: Sequence[Fact],
    observations: Sequence[Observation],
) -> Plan:
    """Forget a subject (or, with `subject` None, a whole project): one `EraseScope` with the
    rows counted under the lock and the hashes of every text of the scope that may have been
    embedded (events' texts; the name, the name with its value, and the text of every claim
    and fact), so that their cached vectors go too. Nothing to erase, no plan: an erase of
    an unknown subject leaves no trace of its name either."""
    if not any(counts.values()):
        return Plan()
    texts = {e.text for e in events}
    claims = [c for e in events for c in e.claims] + [o.claim for o in observations]
    for claim in claims:
        texts |= _embedded(claim.predicate, claim.value, claim.text)
    for fact in facts:
        texts |= _embedded(fact.predicate, fact.value, fact.text)
    keys = tuple(sorted({content_hash(t) for t in texts if t}))
    reason = "erased by a person: every row of " + (
        f"subject {subject!r}" if subject is not None else f"project {project!r}"
    )
    return Plan([EraseScope(project, subject, dict(counts), keys, reason)])


def _embedded(
    predicate: str | None, value: Mapping[str, object] | None, text: str | None
) -> set[str]:
    found = {text} if text else set()
    if predicate:
        found |= {identity_text(predicate), identity_text(predicate, dict(value or {}))}
    return found
