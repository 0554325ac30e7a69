"""What a consolidation run did (or, on a dry run, would do)."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from distill.core.models import Outcome
from distill.core.plan import Rejection
from distill.ports import LLMUsage


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
            jobs_done=self.jobs_done,
            jobs_failed=self.jobs_failed,
            jobs_released=self.jobs_released,
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
            "actions": self.actions,
            "actions_total": self.actions_total,
        }
