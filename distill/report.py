"""What a consolidation run did (or, on a dry run, would do)."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from distill.core.extraction import MIN_SENTENCE_CHARS
from distill.core.grounding import HELD_UNGROUNDED
from distill.core.models import Outcome
from distill.core.plan import Rejection
from distill.ports import LLMUsage, Reclaimed


@dataclass
class Report:
    """What a consolidation run did (or, on a dry run, would do)."""

    dry_run: bool = False
    jobs_done: int = 0
    jobs_failed: int = 0
    jobs_released: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    rejections: list[Rejection] = field(default_factory=list)
    actions: list[dict[str, Any]] = field(default_factory=list)
    actions_total: int = 0
    # Batches are prepared on a second thread while the first decides: counters take turns.
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    errors: list[str] = field(default_factory=list)
    # Why the provider ended the run early (a rate limit, an outage); "" when it did not.
    stopped_by_provider: str = ""
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # Other runs' claims found at the start: taken back from runs that are gone, or left to
    # runs that are alive; and jobs this run lost to another while working on them.
    jobs_reclaimed: int = 0
    reclaimed_from: list[str] = field(default_factory=list)
    jobs_held: int = 0
    held_by: list[str] = field(default_factory=list)
    jobs_lost: int = 0
    # Extracted candidates with an unknown kind, kept with their default kind.
    kind_fallbacks: int = 0
    # Events the claims extractor read nothing from: they had a text and no claims.
    events_without_claims: int = 0
    # Events the text route found no sentence in worth a memory ("Hi", "OK"): kept as
    # events, nothing made of them.
    events_without_sentences: int = 0
    # Identity sets the model judged after the run: one attribute, or two.
    identities_same: int = 0
    identities_different: int = 0
    projects: set[str] = field(default_factory=set)
    # Why the identity judge stopped early (the sets stay open for the next run); "" if not.
    judge_stopped: str = ""

    def claims(self, found: Reclaimed) -> None:
        self.jobs_reclaimed = found.jobs
        self.reclaimed_from = [c.owner.describe() for c in found.gone]
        if found.stalled:
            self.reclaimed_from.append(f"{found.stalled} job(s) whose heartbeat stopped")
        self.jobs_held = sum(c.jobs for c in found.held)
        self.held_by = [c.owner.describe() for c in found.held]

    def reclaim_note(self) -> str | None:
        if not self.jobs_reclaimed:
            return None
        return (
            f"reclaimed {self.jobs_reclaimed} job(s) from a run that is no longer running "
            f"({'; '.join(self.reclaimed_from)})"
        )

    def held_note(self) -> str | None:
        if not self.jobs_held:
            return None
        return (
            f"{self.jobs_held} job(s) are being consolidated by another run "
            f"({', '.join(self.held_by)}); left to it"
        )

    def empty_notes(self) -> list[str]:
        """A line for events that gave nothing, and why: the run shows them, the events stay."""
        notes = []
        if self.events_without_claims:
            notes.append(
                f"{self.events_without_claims} event(s) produced nothing: the claims extractor "
                "(DISTILL_EXTRACTOR=claims) reads only an event's own claims, and these events "
                "had a text and no claims; DISTILL_EXTRACTOR=auto (the default) or text makes "
                "memories of their sentences, and llm asks a model"
            )
        if self.events_without_sentences:
            notes.append(
                f"{self.events_without_sentences} event(s) held no sentence worth a memory "
                f'(under {MIN_SENTENCE_CHARS} characters, such as "OK"): they are kept as '
                "events, and nothing was made of them"
            )
        return notes

    def claim_notes(self) -> list[str]:
        """What the run found of other runs, in lines a person reads."""
        return [n for n in (self.reclaim_note(), self.held_note()) if n]

    @property
    def idle(self) -> bool:
        """Nothing was due: no job was decided, failed, released or lost."""
        return not (self.jobs_done or self.jobs_failed or self.jobs_released or self.jobs_lost)

    def count_llm(self, usage: LLMUsage) -> None:
        with self.lock:
            self.llm_calls += usage.calls
            self.prompt_tokens += usage.prompt_tokens
            self.completion_tokens += usage.completion_tokens

    @property
    def created(self) -> int:
        return self.outcomes[Outcome.CREATED]

    @property
    def reinforced(self) -> int:
        return self.outcomes[Outcome.REINFORCED]

    @property
    def duplicates(self) -> int:
        return self.outcomes[Outcome.DUPLICATE]

    @property
    def superseded(self) -> int:
        return self.outcomes[Outcome.SUPERSEDED]

    @property
    def conflicts(self) -> int:
        return self.outcomes[Outcome.CONFLICT]

    @property
    def contested(self) -> int:
        return self.outcomes[Outcome.CONTESTED]

    @property
    def quarantined(self) -> int:
        return self.outcomes[Outcome.QUARANTINED]

    @property
    def rejected(self) -> int:
        return len(self.rejections)

    def counters(self) -> dict[str, int]:
        names = [o.value for o in Outcome if o is not Outcome.REJECTED]
        out = {name: self.outcomes[name] for name in names}
        out.update(
            rejected=self.rejected,
            # Of the quarantined: model answers that none of their message's words support.
            held_ungrounded=self.outcomes[HELD_UNGROUNDED],
            kind_fallbacks=self.kind_fallbacks,
            events_without_claims=self.events_without_claims,
            events_without_sentences=self.events_without_sentences,
            identities_judged_same=self.identities_same,
            identities_judged_different=self.identities_different,
            jobs_done=self.jobs_done,
            jobs_failed=self.jobs_failed,
            jobs_released=self.jobs_released,
            jobs_reclaimed=self.jobs_reclaimed,
            jobs_held=self.jobs_held,
            jobs_lost=self.jobs_lost,
            llm_calls=self.llm_calls,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
        )
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "counters": self.counters(),
            "rejections": [r.__dict__ for r in self.rejections],
            "errors": self.errors,
            "stopped_by_provider": self.stopped_by_provider,
            "judge_stopped": self.judge_stopped,
            "reclaimed_from": self.reclaimed_from,
            "held_by": self.held_by,
            "actions": self.actions,
            "actions_total": self.actions_total,
        }
