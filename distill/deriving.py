"""`Memory.derive` and `Memory.subjects`: facts elected by votes, and which subjects drift.

Where the policy is declared: `Memory(policies={"employer": "vote"})` (the CLI's
`--policy employer=vote`, the service's `DISTILL_POLICIES`), beside the extractor and the
thresholds, as configuration. Every process of a deployment (the worker that adjudicates,
the one that derives, the CLI) reads the same configuration, as they already do for the
extractor; a predicate switched from `latest` to `vote` starts voting from its next claim,
against the fact adjudication left (and back again, adjudication takes the derived fact).

Which extractor gets which policy (README, "Derive and drift"): every extractor's claims
follow their predicate's policy, and every predicate is `latest` unless declared. The
`claims` extractor carries what a caller states (first hand: `latest` fits); the `text`
extractor makes free-text memories, which have no predicate and never vote; the `llm`
extractor reads what people said (first hand: `latest`), but a deployment that feeds it
documents from many sources about one subject declares those predicates `vote`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from distill.adapters.embed.calibrations import derive_cluster_distance
from distill.arguments import subject_named as _subject
from distill.core import drift
from distill.core.derive import DERIVE_BATCH
from distill.core.identity import identity_key, split_qualifiers
from distill.core.models import Fact, Observation, Outcome
from distill.errors import InvalidInput
from distill.passes.derive import DeriveReport, run_derive

if TYPE_CHECKING:
    from distill.core.votes import Policies
    from distill.engine import Engine
    from distill.ports import Clock, Embedder, Store


@dataclass(frozen=True)
class SubjectState:
    """A subject of a project, and whether its derived facts drift (`core.drift`)."""

    project: str
    subject: str
    unstable: bool
    invalidations: int  # by the derive pass, in the trailing drift window

    def to_dict(self) -> dict[str, Any]:
        return {
            "project": self.project,
            "subject": self.subject,
            "unstable": self.unstable,
            "invalidations": self.invalidations,
            "window_days": drift.DRIFT_WINDOW.days,
        }


class Deriving:
    """`Memory.derive`, `Memory.subjects` and the drift flag recall reads; `Memory`
    provides what they use."""

    store: Store
    clock: Clock
    embedder: Embedder
    engine: Engine
    policies: Policies
    _new_id: Callable[[], str]

    def derive(
        self,
        projects: Sequence[str] = (),
        subject: str | None = None,
        dry_run: bool = False,
        cluster: bool = True,
        batch: int = DERIVE_BATCH,
        cluster_distance: float | None = None,
    ) -> DeriveReport:
        """One derive cycle per scope holding votes (claims of predicates whose policy is
        `vote`): each identity's new votes elect its value (`core.derive`), reinforce or
        invalidate its open fact; the report has processed, untrusted (votes read and not
        counted), created, reinforced, invalidated and drift_alerts. Only `projects` (all
        when empty), or one `subject`.
        `cluster=False` counts exact values only (no paraphrase clustering);
        `cluster_distance` (a cosine distance) replaces the one calibrated for the embedder
        (`calibrations.json`, `derive_cluster`; none calibrated: exact values only). `batch`
        votes at most per scope, the rest left for the next cycle. `dry_run` reports the
        same, writing nothing."""
        if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
            raise InvalidInput("batch: a whole number of 1 or more")
        if cluster_distance is not None and not 0.0 <= cluster_distance <= 2.0:
            raise InvalidInput("cluster_distance: a cosine distance between 0 and 2")
        distance = cluster_distance
        if distance is None:
            distance = derive_cluster_distance(self.embedder)
        if not cluster:
            distance = None
        return run_derive(
            self.store,
            self.engine.embed,
            self.embedder.model_id,
            distance,
            self.clock.now,
            self._new_id,
            projects=projects,
            subject=_subject(subject),
            dry_run=dry_run,
            batch=batch,
        )

    def votes_of(self, versions: Sequence[Fact]) -> list[Observation]:
        """The votes behind derived versions of one identity: the observations with outcome
        `vote` of their source events that name the identity (they name no fact: the derive
        pass decided after they were recorded), oldest first."""
        if not versions:
            return []
        keys = {f.identity_key for f in versions if f.identity_key}
        events = sorted({e for f in versions for e in f.source_event_ids})
        found = self.store.observations_for_events(versions[0].project, events)
        return [
            o
            for o in found
            if o.outcome is Outcome.VOTE
            and o.claim.predicate is not None
            and identity_key(o.claim.predicate, split_qualifiers(o.claim.qualifiers)[0]) in keys
        ]

    def subjects(self, project: str = "default") -> list[SubjectState]:
        """The project's subjects, each with its drift flag: unstable while more than
        `DRIFT_THRESHOLD` of its facts were invalidated by derive in the trailing
        `DRIFT_WINDOW` of world time (stable again when the window slides past them)."""
        counts = self._drift_counts(project, None)
        return [
            SubjectState(
                project,
                s,
                counts.get((project, s), 0) > drift.DRIFT_THRESHOLD,
                counts.get((project, s), 0),
            )
            for s in self.store.subjects(project)
        ]

    def unstable_subjects(
        self, project: str | None = None, subject: str | None = None
    ) -> list[tuple[str, str]]:
        """(project, subject) of every unstable subject (of one project, or one subject)."""
        counts = self._drift_counts(project, subject)
        return sorted(k for k, n in counts.items() if n > drift.DRIFT_THRESHOLD)

    def _drift_counts(self, project: str | None, subject: str | None) -> dict[tuple[str, str], int]:
        now = self.clock.now()
        found = self.store.derive_invalidations(project, subject, now - drift.DRIFT_WINDOW)
        counts: dict[tuple[str, str], int] = {}
        for p, s, at in found:
            if at <= now:
                counts[(p, s)] = counts.get((p, s), 0) + 1
        return counts
