"""Asking a model about a batch within a run's budget, halving what it cannot answer.

What every pass that calls a model shares (the memory judge, rule promotion), written once:

* **A budget per run**: at most `max_calls` calls and `max_tokens` tokens (prompt and answer,
  as the provider reported them). A call is made only when the budget can still pay for it:
  fewer calls made than the cap, and the tokens spent plus the prompt's own (estimated
  before it is sent) within the cap. Otherwise the run stops (`Stop`), and `usage` says what
  it spent. An answer's length is known only once it has arrived, so the last call of a run
  may take it past the token cap by that one answer, never by another call.
* **Halving**: an answer that cannot be read (`core.answers.Unreadable`: not the JSON asked
  for, or cut off at the output limit; or the provider's own `MalformedAnswer`) is asked
  again in halves, down to one item, which is then listed in `failed` and skipped: one item
  the model cannot answer does not wedge the pass.
* **A provider error** (transport, auth, quota, a timeout: `ProviderError`) stops the run
  (`Stop`): nothing more is asked this run, and what was not asked about waits for the next.

What a batch's prompt is and how its answer is read is the pass's (`render`, which gives the
prompt and the reader of its answer); the decisions on what was read are its own as well.
Every such pass reports what `ModelRun` holds beside its own counts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from distill.core.answers import Unreadable
from distill.core.extraction import estimate_tokens
from distill.errors import MalformedAnswer, ProviderError
from distill.ports import LLM, Completion, LLMUsage

T = TypeVar("T")
V = TypeVar("V")
# How a batch's answer is read: (the answer's text, whether it was cut off) -> what it says;
# raises `Unreadable`.
Reader = Callable[[str, bool], list[V]]


@dataclass
class ModelRun:
    """What a run of a pass that asks a model reports beside its own counts: whether it was
    a dry run, the scopes it looked at, the items no answer could be read for, where and why
    it stopped, whether more waited than one run takes, and what it spent."""

    dry_run: bool = False
    scopes: int = 0
    failed: list[str] = field(default_factory=list)
    stopped: list[str] = field(default_factory=list)
    capped: bool = False
    usage: LLMUsage = field(default_factory=LLMUsage)
    provider_down: str | None = None  # the provider error that stopped it, if one did

    def run_dict(self) -> dict[str, Any]:
        """The shared part of the report's `to_dict`."""
        return {
            "failed": list(self.failed),
            "stopped": list(self.stopped),
            "capped": self.capped,
            "provider_down": self.provider_down,
            "calls": self.usage.calls,
            "tokens": self.usage.tokens,
        }


class Stop(Exception):
    """The run asks nothing more: a provider error, or the budget is spent."""


@dataclass
class Budget:
    """What one run may spend on a model (None: no cap), and what it has spent."""

    max_calls: int | None
    max_tokens: int | None
    usage: LLMUsage = field(default_factory=LLMUsage)

    @property
    def tokens(self) -> int:
        return self.usage.tokens

    def afford(self, prompt_tokens: int) -> None:
        """Raise `Stop` unless a call with a prompt of about `prompt_tokens` fits."""
        calls = self.usage.calls
        if self.max_calls is not None and calls >= self.max_calls:
            raise Stop(f"budget: {calls} call(s) of {self.max_calls} spent")
        if self.max_tokens is not None and self.tokens + prompt_tokens > self.max_tokens:
            raise Stop(
                f"budget: {self.tokens:,} token(s) of {self.max_tokens:,} spent, and the next "
                f"call's prompt takes about {prompt_tokens:,}"
            )


@dataclass
class Asker(Generic[T, V]):
    """Asks `llm` about batches of items within `budget` (see the module docstring)."""

    llm: LLM
    system: str
    schema: dict[str, Any]
    render: Callable[[Sequence[T]], tuple[str, Reader[V]]]
    budget: Budget
    answered: int = 0  # items whose answer was read
    failed: list[T] = field(default_factory=list)  # items no answer could be read for
    down: str | None = None  # the provider error that stopped the asking, if one did

    def ask(self, batch: Sequence[T]) -> list[V]:
        """What the model says about `batch`, halving it while the answer cannot be read;
        `Stop` on a provider error or when the budget cannot pay for the next call."""
        prompt, read = self.render(batch)
        self.budget.afford(estimate_tokens(self.system + prompt))
        answer = self._complete(prompt)
        if answer is not None:
            self.budget.usage.add(answer)
            try:
                found = read(answer.text, answer.truncated)
            except Unreadable:
                pass
            else:
                self.answered += len(batch)
                return found
        if len(batch) == 1:
            self.failed.append(batch[0])
            return []
        half = len(batch) // 2
        return self.ask(batch[:half]) + self.ask(batch[half:])

    def _complete(self, prompt: str) -> Completion | None:
        try:
            return self.llm.complete(self.system, prompt, self.schema)
        except MalformedAnswer:
            # The provider could not parse its own answer: unreadable, as ours, and a call.
            self.budget.usage.calls += 1
            return None
        except ProviderError as exc:
            self.down = f"{type(exc).__name__}: {exc}"
            raise Stop(self.down) from exc
