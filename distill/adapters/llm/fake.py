"""A scripted LLM for tests: answers are queued in advance and every prompt is recorded."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from distill.ports import Completion

Answer = str | dict[str, Any] | list[Any] | Exception | Callable[[str], str]


@dataclass
class Call:
    system: str
    prompt: str
    schema: dict[str, Any] | None


@dataclass
class FakeLLM:
    """Answers in order; an `Exception` in the queue is raised; a callable gets the prompt.

    When the queue is empty the `default` answer is used (no facts).
    """

    answers: deque[Answer] = field(default_factory=deque)
    default: Answer = '{"facts": []}'
    model_id: str = "fake"
    json_mode: bool = True
    calls: list[Call] = field(default_factory=list)

    def enqueue(self, *answers: Answer) -> FakeLLM:
        self.answers.extend(answers)
        return self

    def complete(
        self, system: str, prompt: str, schema: dict[str, Any] | None = None
    ) -> Completion:
        self.calls.append(Call(system, prompt, schema))
        answer = self.answers.popleft() if self.answers else self.default
        if isinstance(answer, Exception):
            raise answer
        if callable(answer):
            answer = answer(prompt)
        text = answer if isinstance(answer, str) else json.dumps(answer)
        return Completion(text, prompt_tokens=len(prompt) // 4, completion_tokens=len(text) // 4)
