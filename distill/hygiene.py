"""The passes that keep stored memory clean, as `Memory` methods: `dedupe` (no model),
`judge`, `judge_identities` and `summarise` (the configured model, fail-soft) and `prune`
(no model; with `weight`, what it decides on). `Memory` is where they are called from; this
is where they are put together, so that `memory.py` stays the read-and-write API.

Each runs over what is stored (not over what arrives), scope by scope, through the one
applier; each takes a project allowlist, one subject, `dry_run` and its per-run caps, and
returns a report that names everything it did or refused.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import nullcontext
from typing import TYPE_CHECKING

from distill.adapters.embed.calibrations import offline_merge_distance
from distill.adapters.llm.calls import AskedAs
from distill.arguments import subject_named as _subject
from distill.core.decay import HALF_LIFE_DAYS, MAX_PRUNES_PER_RUN, PRUNE_FLOOR
from distill.core.decay import weight as decayed_weight
from distill.core.statements import merge_objections
from distill.core.summarise import SUMMARISE_KEEP
from distill.errors import ConfigurationError, InvalidInput
from distill.passes.dedupe import MAX_SUPERSEDES_PER_RUN, DedupeReport, Offline, run_dedupe
from distill.passes.identity_judge import Judged, judge_projects
from distill.passes.memory_judge import JUDGE_MAX_CALLS, JUDGE_MAX_TOKENS, JudgeReport, run_judge
from distill.passes.prune import PruneReport, run_prune
from distill.passes.summarise import (
    SUMMARISE_ATTEMPTS,
    SUMMARISE_MAX_CALLS,
    SUMMARISE_MAX_TOKENS,
    SummariseReport,
    run_summarise,
)

if TYPE_CHECKING:
    from distill.core.models import Fact
    from distill.engine import Engine
    from distill.ports import LLM, Clock, Embedder, Store


def model_for(what: str, llm: LLM | None) -> LLM:
    """The model a pass asks, or the error that says how to give one."""
    if llm is None:
        raise ConfigurationError(
            f"{what} needs a model: Memory(llm='openai' | 'ollama' | 'anthropic' | an LLM), "
            "or --llm on the command line"
        )
    return llm


class Hygiene:
    """`Memory.dedupe`, `Memory.judge`, `Memory.judge_identities`, `Memory.summarise`,
    `Memory.prune` and `Memory.weight` (see the module docstring); `Memory` provides what
    they use."""

    store: Store
    clock: Clock
    llm: LLM | None
    embedder: Embedder
    engine: Engine
    _new_id: Callable[[], str]

    if TYPE_CHECKING:

        def fact(self, fact_id: str, project: str = "default") -> Fact: ...  # Memory's

    def dedupe(
        self,
        projects: Sequence[str] = (),
        subject: str | None = None,
        dry_run: bool = False,
        max_supersedes: int | None = MAX_SUPERSEDES_PER_RUN,
        offline: bool = False,
    ) -> DedupeReport:
        """Merge stored memories that say the same thing in the same words (`core.dedupe`):
        the survivor absorbs each duplicate's evidence, the duplicate is superseded by it.
        Only `projects` (all when empty), or one `subject`; at most `max_supersedes`
        retired per run (None: no cap). `dry_run` reports the same groups, writing nothing.
        `offline`: also the offline tier, memories within the embedder's calibrated
        offline-merge distance that every guard lets merge (off by default: its figures miss
        the targets for that; EVAL.md)."""
        tier = None
        if offline:
            distance = offline_merge_distance(self.embedder)
            if distance is None:
                raise ConfigurationError(
                    f"the offline tier needs an offline-merge distance calibrated for the "
                    f"embedder {self.embedder.model_id}: run "
                    "scripts/calibrate_offline_merge.py --record, or use the local embedder"
                )
            tier = Offline(self.engine.embed, self.embedder.model_id, distance)
        return run_dedupe(
            self.store,
            self.clock.now,
            self._new_id,
            projects=projects,
            subject=_subject(subject),
            dry_run=dry_run,
            max_supersedes=max_supersedes,
            offline=tier,
        )

    def judge(
        self,
        projects: Sequence[str] = (),
        subject: str | None = None,
        dry_run: bool = False,
        max_calls: int | None = JUDGE_MAX_CALLS,
        max_tokens: int | None = JUDGE_MAX_TOKENS,
        max_changes: int | None = MAX_SUPERSEDES_PER_RUN,
    ) -> JudgeReport:
        """Put the memories the judge has not read as their words stand (new, or their text
        changed: the watermark) to the model, beside their nearest stored ones, and apply
        the verdicts that pass the checks of `core.memory_judge` (merge, supersede, or
        nothing). At most `max_calls` model calls and `max_tokens` tokens per run, and
        `max_changes` memories retired. Needs a model
        (`Memory(llm=...)`)."""
        return run_judge(
            self.store,
            model_for("judge", self.llm),
            self.engine.embed,
            self.embedder.model_id,
            merge_objections,
            self.clock.now,
            self._new_id,
            projects=projects,
            subject=_subject(subject),
            dry_run=dry_run,
            max_calls=max_calls,
            max_tokens=max_tokens,
            max_changes=max_changes,
        )

    def judge_identities(
        self,
        projects: Sequence[str] = (),
        dry_run: bool = False,
        max_pairs: int | None = None,
        max_tokens: int | None = None,
    ) -> Judged:
        """Put the open identity sets (two names that are probably one attribute) of
        `projects` (all when empty) to the model, up to 20 pairs a call, and apply its
        verdicts as a person's resolution would be. `consolidate` does this after each run for
        the projects the run touched; this is for the others: a pair that waited for a value
        conflict a person has since decided, or sets a model that was down left open (the
        worker's `judge_identity` pass). Pairs a model may not settle (a pinned member, a less
        trusted newer fact) stay with a person. At most `max_pairs` pairs and no call begun
        once `max_tokens` are spent (None: no limit); what they leave is counted (`capped`).
        `dry_run` asks and reports, writing nothing. Needs a model (`Memory(llm=...)`)."""
        llm = model_for("judge_identities", self.llm)
        chosen = list(projects) or self.store.schedule_projects()
        with self.store.dry_run() if dry_run else nullcontext():
            judged = judge_projects(
                self.store, llm, chosen, self.clock.now, self._new_id, max_pairs, max_tokens
            )
        judged.dry_run = dry_run
        return judged

    def weight(
        self, fact_id: str, project: str = "default", half_life_days: float = HALF_LIFE_DAYS
    ) -> float:
        """A fact's weight now, in (0, 1]: `0.5 ** (days since its last reinforcement /
        half_life_days)` (`core.decay`). Derived, never stored: asking twice, or running
        prune, changes nothing; a reinforcement brings it back to 1. Takes an id or a
        unique prefix."""
        return decayed_weight(self.fact(fact_id, project), self.clock.now(), half_life_days)

    def prune(
        self,
        projects: Sequence[str] = (),
        subject: str | None = None,
        dry_run: bool = False,
        half_life_days: float = HALF_LIFE_DAYS,
        floor: float = PRUNE_FLOOR,
        max_prunes: int | None = MAX_PRUNES_PER_RUN,
    ) -> PruneReport:
        """Delete for good the tombstones (superseded or retracted facts) whose weight fell
        below `floor`, unpinned, outside any open conflict, that no receipt still names and
        whose evidence stays reachable from a fact that stays (the rule: `core.decay`).
        Events are never deleted; each deleted fact leaves an audit entry. Only `projects`
        (all when empty), or one `subject`; at most `max_prunes` per run (None: no cap).
        `dry_run` reports the same, writing nothing."""
        return run_prune(
            self.store,
            self.clock.now,
            self._new_id,
            projects=projects,
            subject=_subject(subject),
            dry_run=dry_run,
            half_life_days=half_life_days,
            floor=floor,
            max_prunes=max_prunes,
        )

    def summarise(
        self,
        projects: Sequence[str] = (),
        subject: str | None = None,
        dry_run: bool = False,
        max_calls: int | None = SUMMARISE_MAX_CALLS,
        max_tokens: int | None = SUMMARISE_MAX_TOKENS,
        keep: int = SUMMARISE_KEEP,
        attempts: int = SUMMARISE_ATTEMPTS,
    ) -> SummariseReport:
        """Put each subject's old memories (all but its `keep` most recently reinforced,
        unpinned, not yet read as their words stand: the watermark) to the model in batches,
        and write the summaries whose every consumed memory passes the checks of
        `core.summarise`: the summary first, then each consumed memory retired into it, its
        receipt. At most `max_calls` model calls and `max_tokens` tokens per run; `dry_run`
        asks and reports, writing nothing. Needs a model (`Memory(llm=...)`), asked for one
        JSON object (Ollama: `/api/generate` with `"format": "json"`) at most `attempts`
        times a call, transient failures only."""
        if not isinstance(keep, int) or keep < 0:
            raise InvalidInput("keep: a whole number of 0 or more")
        if not isinstance(attempts, int) or attempts < 1:
            raise InvalidInput("attempts: a whole number of 1 or more (2: one retry)")
        llm = AskedAs(model_for("summarise", self.llm), attempts, plain_json=True)
        return run_summarise(
            self.store,
            llm,
            self.clock.now,
            self._new_id,
            projects=projects,
            subject=_subject(subject),
            dry_run=dry_run,
            max_calls=max_calls,
            max_tokens=max_tokens,
            keep=keep,
            embed=self.engine.embed,
            model_id=self.embedder.model_id,
        )
