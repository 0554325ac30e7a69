"""Who closed a conflict set, as the validator checks it and as `distill conflicts` shows it.

A set's closer tells a person's decision from what a claim or a model settled, so the one
validator refuses a plan that closes a set without naming who did, and one where a pass
names the wrong closer: only a person's pass (`api`) names a person, and no other pass does.
The stores' side is tests/contract/test_conflict_closers.py.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from rich.console import Console

from distill.core.apply import validate
from distill.core.models import ConflictStatus, Resolver
from distill.core.plan import Plan, ReviseConflict
from distill.errors import IntegrityViolation
from distill.service.tables import conflict_table
from tests.factories import PROJECT, SUBJECT, T0, make_conflict, make_fact


def closing(resolver: Resolver | None, pass_name: str, **after: object) -> Plan:
    held = make_conflict(["f1", "f2"])
    closed = held.model_copy(
        update={
            "status": ConflictStatus.RESOLVED,
            "resolved_at": T0 + timedelta(days=1),
            "kept_fact_id": "f2",
            "resolved_by": resolver,
            **after,
        }
    )
    return Plan([ReviseConflict(held, closed, "kept", pass_name)])


@pytest.mark.parametrize(
    ("resolver", "pass_name"),
    [
        (Resolver.PERSON, "api"),
        (Resolver.CLAIM, "adjudicate"),
        (Resolver.MODEL, "judge_identity"),
    ],
)
def test_a_set_closed_by_its_own_closer_is_valid(resolver: Resolver, pass_name: str) -> None:
    validate(closing(resolver, pass_name), PROJECT, SUBJECT)


@pytest.mark.parametrize(
    ("resolver", "pass_name", "says"),
    [
        (None, "adjudicate", "without naming who closed it"),
        (None, "api", "without naming who closed it"),
        (Resolver.PERSON, "adjudicate", "may not close it as person"),
        (Resolver.PERSON, "judge_identity", "may not close it as person"),
        (Resolver.CLAIM, "api", "may not close it as claim"),
    ],
)
def test_a_set_closed_without_its_closer_is_refused(
    resolver: Resolver | None, pass_name: str, says: str
) -> None:
    with pytest.raises(IntegrityViolation, match=says):
        validate(closing(resolver, pass_name), PROJECT, SUBJECT)


def test_an_open_set_names_no_closer() -> None:
    reopened = closing(Resolver.CLAIM, "adjudicate", status=ConflictStatus.OPEN)
    with pytest.raises(IntegrityViolation, match="open and names a closer"):
        validate(reopened, PROJECT, SUBJECT)


def reopening(resolver: Resolver) -> Plan:
    """A plan of the adjudicator's that reopens a set `resolver` closed."""
    [action] = closing(resolver, "adjudicate").actions
    assert isinstance(action, ReviseConflict)
    closed = action.after
    reopened = closed.model_copy(
        update={
            "status": ConflictStatus.OPEN,
            "resolved_at": None,
            "kept_fact_id": None,
            "resolved_by": None,
        }
    )
    return Plan([ReviseConflict(closed, reopened, "a later claim", "adjudicate")])


def test_only_a_claims_resolution_is_reopened() -> None:
    """A later claim may show that a claim's resolution never happened, and reopen the set
    (`Splits._adoption_undone`); a person's decision and the judge's stand."""
    validate(reopening(Resolver.CLAIM), PROJECT, SUBJECT)
    for resolver in (Resolver.PERSON, Resolver.MODEL):
        with pytest.raises(IntegrityViolation, match=f"closed by a {resolver.value}"):
            validate(reopening(resolver), PROJECT, SUBJECT)


def test_the_table_says_who_closed_a_set_and_which_member_was_kept() -> None:
    acme = make_fact(id="f1", value={"v": "Acme"}, text="employer is Acme")
    globex = make_fact(id="f2", value={"v": "Globex"}, text="employer is Globex")
    members = {f.id: f for f in (acme, globex)}
    [action] = closing(Resolver.PERSON, "api").actions
    assert isinstance(action, ReviseConflict)
    console = Console(width=160, record=True)
    console.print(conflict_table([action.after, make_conflict(["f1", "f2"])], members))
    shown = console.export_text()
    assert "by a person" in shown
    assert shown.count(", kept") == 1  # the open set kept nothing
    kept_line = next(line for line in shown.splitlines() if ", kept" in line)
    assert "f2" in kept_line and "Globex" in kept_line
