"""A subject's rules as `Memory` methods: `rules` (read), `add_rule` (a person's) and
`promote_rules` (the pass that learns them from corroborated memories, with the configured
model, fail-soft). `Memory` is where they are called from; this is where they are put
together, so that `memory.py` stays the read-and-write API of facts. What a rule is, and
what may become one, is `distill.core.rules`; `Memory.context` shows the rules first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from distill.applier import apply_plan
from distill.arguments import subject_named as _subject
from distill.core import rules as cr
from distill.core.models import Rule, normalise_subject
from distill.core.passes import Scope
from distill.errors import InvalidInput
from distill.hygiene import model_for
from distill.passes.promote_rules import (
    RULES_MAX_CALLS,
    RULES_MAX_TOKENS,
    PromoteReport,
    run_promote_rules,
)

if TYPE_CHECKING:
    from distill.ports import LLM, Clock, Store


class Rulebook:
    """`Memory.rules`, `Memory.add_rule` and `Memory.promote_rules` (see the module
    docstring); `Memory` provides what they use."""

    store: Store
    clock: Clock
    llm: LLM | None
    _new_id: Callable[[], str]

    def rules(self, subject: str | None = None, project: str = "default") -> list[Rule]:
        """The subject's rules (of every subject of the project with None), learned and
        written: a person's first, then the learned ones, oldest first."""
        found = self.store.rules(project, _subject(subject))
        return sorted(cr.ordered(found), key=lambda r: r.subject)

    def add_rule(self, subject: str, text: str, project: str = "default") -> Rule:
        """Add a person's rule for `subject`: one line of at most `core.rules.RULE_MAX_CHARS`
        characters ("Always reply in British English"). No pass ever changes or removes it.
        A rule the subject has already (the same words, whatever the case and punctuation)
        is returned as it is, not added twice."""
        if not isinstance(subject, str) or not subject.strip():
            raise InvalidInput("subject: name whose rule it is")
        if not isinstance(text, str):
            raise InvalidInput("text: a rule is one line of text")
        subject = normalise_subject(subject)
        with self.store.serialised(project, subject):
            existing = self.store.rules(project, subject)
            now = self.clock.now()
            plan, rule = cr.written(project, subject, text, existing, now, self._new_id)
            scope = Scope(project, subject)
            apply_plan(self.store, plan, scope, job_id=None, now=now, new_id=self._new_id)
        return rule

    def promote_rules(
        self,
        projects: Sequence[str] = (),
        subject: str | None = None,
        dry_run: bool = False,
        max_calls: int | None = RULES_MAX_CALLS,
        max_tokens: int | None = RULES_MAX_TOKENS,
        corroboration_threshold: int = cr.PROMOTE_CORROBORATION_THRESHOLD,
    ) -> PromoteReport:
        """Put the memories re-observed at least `corroboration_threshold` times that the
        pass has not read as their words stand (the watermark) to the model, and add those it
        calls standing instructions to their subject's rules, once each (`core.rules`). At
        most `max_calls` model calls and `max_tokens` tokens per run; `dry_run` asks and
        reports, writing nothing. Needs a model (`Memory(llm=...)`)."""
        llm = model_for("promote_rules", self.llm)
        if not isinstance(corroboration_threshold, int) or corroboration_threshold < 0:
            raise InvalidInput("corroboration_threshold: a whole number of 0 or more")
        return run_promote_rules(
            self.store,
            llm,
            self.clock.now,
            self._new_id,
            projects=projects,
            subject=_subject(subject),
            dry_run=dry_run,
            max_calls=max_calls,
            max_tokens=max_tokens,
            threshold=corroboration_threshold,
        )
