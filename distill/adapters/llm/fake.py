"""A scripted LLM for tests: answers are queued in advance and every prompt is recorded.

`FakeLLM.sentences()` is the scripted model the CLI offers as ``DISTILL_LLM=fake``: it reads
the messages of an extraction prompt and proposes each sentence as a memory, so the whole LLM
path (batching, attribution, validation, the write gate, accounting) runs without a model.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from distill.core.extraction import estimate_tokens, split_sentences
from distill.ports import Completion

Answer = str | dict[str, Any] | list[Any] | Exception | Completion | Callable[[str], str]


@dataclass
class Call:
    system: str
    prompt: str
    schema: dict[str, Any] | None


@dataclass
class FakeLLM:
    """Answers in order; an `Exception` in the queue is raised; a `Completion` is returned as
    it is (to script token counts or a truncated answer); a callable gets the prompt.

    When the queue is empty the `default` answer is used (no facts).
    """

    answers: deque[Answer] = field(default_factory=deque)
    default: Answer = '{"facts": []}'
    model_id: str = "fake"
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
        if isinstance(answer, Completion):
            return answer
        if callable(answer):
            answer = answer(prompt)
        text = answer if isinstance(answer, str) else json.dumps(answer)
        return Completion(text, estimate_tokens(system + prompt), estimate_tokens(text))

    @classmethod
    def sentences(cls) -> FakeLLM:
        """A fake whose every answer makes each sentence of each message a memory."""
        return cls(default=sentence_memories, model_id="fake-sentences")


_MESSAGE = re.compile(r"^\[(\d+)\] \S+ from .*$", re.MULTILINE)


def sentence_memories(prompt: str) -> str:
    """The answer `FakeLLM.sentences()` gives: one memory per sentence of every message."""
    facts: list[dict[str, Any]] = []
    headers = list(_MESSAGE.finditer(prompt))
    for index, header in enumerate(headers):
        end = headers[index + 1].start() if index + 1 < len(headers) else len(prompt)
        body = prompt[header.end() : end].strip()
        if index + 1 == len(headers):  # the prompt's closing instruction follows the last one
            body = body.rsplit("\n\n", 1)[0] if "\n\n" in body else body
        facts.extend(
            {
                "message": int(header.group(1)),
                "kind": "memory",
                "text": sentence,
                "action": "create",
                "evidence_span": sentence,
            }
            for sentence in split_sentences(body)
        )
    return json.dumps({"facts": facts})
