"""The one applier: the only way a plan reaches the store.

Every writer of facts (the engine's passes, a person resolving a conflict or pinning a
fact through `Memory`, and every pass to come) calls `apply_plan` and nothing else, so no
path can skip a step:

1. `core.apply.validate`: scope, pinned facts, one active fact per identity, a receipt for
   everything that leaves the live set; a plan that breaks one raises and writes nothing;
2. `core.apply.audit_entries`: one entry per action and per rejected candidate;
3. `Store.apply`: actions and audit in one transaction (the caller's, when it holds the
   scope's lock).

A dry run needs nothing here: it is a transaction that the store always rolls back
(`Store.dry_run`), inside which the same plans are applied the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from distill.core.apply import audit_entries, validate
from distill.core.passes import Scope
from distill.core.plan import Plan
from distill.ports import Store


def apply_plan(
    store: Store,
    plan: Plan,
    scope: Scope,
    *,
    job_id: str | None,
    now: datetime,
    new_id: Callable[[], str],
) -> None:
    """Validate `plan` for `scope`, audit every action and rejection, and write it all."""
    if not plan.actions and not plan.rejections:
        return
    validate(plan, scope.project, scope.subject)
    store.apply(plan, job_id, audit_entries(plan, scope, job_id, now, new_id))
