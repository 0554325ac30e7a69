"""The model's answers for a job's events: kept ones first, then asked for, with the known
facts the model is shown beside the messages.

Part of a run's preparation (outside the subject's lock): the engine calls `for_job` for
each claimed job before it decides anything.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from distill.core.models import Event, Fact, FactStatus, Job
from distill.extractors import Extraction
from distill.ports import Clock, LLMUsage, Store, Vector

CONTEXT_FACTS = 20  # known facts shown with a batch of events, the most relevant first

Embed = Callable[[Sequence[str]], dict[str, Vector]]


class ModelAnswers:
    def __init__(
        self, store: Store, extraction: Extraction, embed: Embed, model_id: str, clock: Clock
    ) -> None:
        self.store = store
        self.extraction = extraction
        self.embed = embed
        self.model_id = model_id  # the embedder's, to rank facts by meaning
        self.clock = clock
        # Model answers of dry runs, by (extractor key, event id), until a real run stores them.
        self._dry_answers: dict[tuple[str, str], list[Any]] = {}

    def for_job(
        self,
        job: Job,
        events: Sequence[Event],
        vectors: dict[str, Vector],
        usage: LLMUsage,
        beat: Callable[[], None],
        dry_run: bool,
    ) -> dict[str, list[Any]]:
        """The model's raw candidates for each of the job's events that go to it. Answers
        are stored as each call returns, so a retried or replayed job asks only for the
        events that have none yet: nothing new, no call. A dry run's writes are rolled
        back, so its answers are also kept in memory: the real run that follows applies
        the plan the dry run showed, without asking again."""
        llm = self.extraction.llm
        asking = [e for e in events if self.extraction.route(e) == "llm"]
        if llm is None or not asking:
            return {}
        answers = self.store.cached_extractions(llm.key, [e.id for e in asking])
        kept = {
            e.id: self._dry_answers.pop((llm.key, e.id))
            for e in asking
            if e.id not in answers and (llm.key, e.id) in self._dry_answers
        }
        if kept:
            self.store.cache_extractions(llm.key, kept, self.clock.now())
            answers.update(kept)
        missing = [e for e in asking if e.id not in answers]
        if missing:

            def context(batch: Sequence[Event]) -> list[Fact]:
                return self._context(job, batch, vectors)

            for found in llm.propose(job.subject, missing, context, usage):
                self.store.cache_extractions(llm.key, found, self.clock.now())
                answers.update(found)
                if dry_run:
                    self._dry_answers.update({(llm.key, k): v for k, v in found.items()})
                beat()
        return answers

    def _context(self, job: Job, batch: Sequence[Event], vectors: dict[str, Vector]) -> list[Fact]:
        """What the model is shown so it can reuse a predicate or supersede: the subject's
        active state facts, all of them when they fit in CONTEXT_FACTS, else the ones nearest
        in meaning to any event of the batch, nearest first. Only then are the events'
        texts embedded: most subjects never pay for it."""
        recent = self.store.active_facts(job.project, job.subject, CONTEXT_FACTS + 1)
        if len(recent) <= CONTEXT_FACTS:
            return recent
        texts = [e.text for e in batch if e.text.strip()]
        vectors.update(self.embed([t for t in texts if t not in vectors]))
        rows = [vectors[t] for t in texts]
        if not rows:
            return recent[:CONTEXT_FACTS]
        hoods = self.store.nearest_facts(
            job.project, job.subject, np.stack(rows), CONTEXT_FACTS, self.model_id
        )
        best: dict[str, float] = {}
        for hood in hoods:
            for n in hood:
                best[n.fact_id] = min(best.get(n.fact_id, n.distance), n.distance)
        ranked = sorted(best, key=lambda fact_id: (best[fact_id], fact_id))[:CONTEXT_FACTS]
        shown = [self.store.fact(job.project, i) for i in ranked]
        shown = [f for f in shown if f.status is FactStatus.ACTIVE]
        # Facts without a vector of this embedder cannot be ranked: the newest fill the rest.
        ids = {f.id for f in shown}
        shown.extend(f for f in recent if f.id not in ids)
        return shown[:CONTEXT_FACTS]
