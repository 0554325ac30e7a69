"""Bad input to `add`, refused with the field (and, in a file, the line) it is at.

The models (`EventIn`, `Claim`), the JSONL reader and the flags of `distill add`, with no
database: every case here was a silent change or a traceback before. What the stores keep is
tested on both backends in tests/contract/test_event_evidence.py, the command line in
tests/acceptance/test_cli_add.py.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from distill import Memory
from distill.core.event_in import EVENT_MAX_BYTES, FUTURE_MARGIN, FUTURE_MARGIN_KEY, EventIn
from distill.core.extraction import parse_answer, validate_candidates
from distill.core.json_data import JSON_MAX_DEPTH, JsonProblem, check_json
from distill.core.models import NOW, Claim, normalise_predicate, normalise_subject
from distill.core.names import NameRelation, compare_names, name_words
from distill.errors import ConfigurationError, InvalidInput
from distill.export import event_line
from distill.memory import explain_validation
from distill.service.event_input import (
    FUTURE_MARGIN_VARIABLE,
    event_from_flags,
    future_margin_setting,
    read_jsonl,
)
from tests.factories import make_event

NOW_T = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)
CONTEXT = {NOW: NOW_T, FUTURE_MARGIN_KEY: FUTURE_MARGIN}


def problem(item: dict[str, Any], context: dict[str, Any] | None = None) -> str:
    """What validating the event says, as `add` says it."""
    with pytest.raises(ValidationError) as caught:
        EventIn.model_validate(item, context=context)
    return explain_validation(caught.value)


def nested(depth: int, leaf: Any = 1) -> dict[str, Any]:
    value: dict[str, Any] = {"a": leaf}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


def claim_event(value: Any, **claim: Any) -> dict[str, Any]:
    return {"subject": "u1", "claims": [{"predicate": "p", "value": value, **claim}]}


# -- JSON data -------------------------------------------------------------------------------------
class Opaque:
    pass


@pytest.mark.parametrize(
    ("value", "where", "says"),
    [
        ({"v": float("nan")}, "claims.0.value.v", "nan is not a number JSON can hold"),
        ({"v": float("inf")}, "claims.0.value.v", "inf is not a number JSON can hold"),
        ({"v": {"w": [0, -float("inf")]}}, "claims.0.value.v.w.1", "-inf is not a number"),
        ({"v": 1e300}, "claims.0.value.v", "a float beyond ±2^53"),
        ({"v": 10**5000}, "claims.0.value.v", "an integer of more than 4300 digits"),
        ({"v": {1, 2}}, "claims.0.value.v", "a value of type set is not JSON data"),
        ({"v": b"bytes"}, "claims.0.value.v", "a value of type bytes is not JSON data"),
        ({"v": datetime(2024, 1, 1)}, "claims.0.value.v", "type datetime is not JSON"),
        ({"v": dt.date(2024, 1, 1)}, "claims.0.value.v", "type date is not JSON"),
        ({"v": Opaque()}, "claims.0.value.v", "type Opaque is not JSON"),
        ({"v": {3: "three"}}, "claims.0.value.v", "the key 3 is not a string"),
        ({"v": "a\x00b"}, "claims.0.value.v", "contains a NUL character"),
        ({"v": "lone \ud800"}, "claims.0.value.v", "not valid Unicode (a lone surrogate"),
        (nested(500), "claims.0.value", f"nested more than {JSON_MAX_DEPTH} levels deep"),
    ],
)
def test_a_claim_value_json_cannot_keep_is_refused_naming_where_it_is(
    value: Any, where: str, says: str
) -> None:
    said = problem(claim_event(value))
    assert said.startswith(f"{where}: ") and says in said


def test_every_part_of_an_event_is_json_data_not_only_values() -> None:
    assert problem(claim_event({"v": 1}, qualifiers={"q": float("nan")})).startswith(
        "claims.0.qualifiers.q: nan is not"
    )
    assert problem(claim_event({"v": 1}, confidence=float("nan"))).startswith(
        "claims.0.confidence: nan is not"
    )
    assert problem(claim_event({"v": 1}, evidence_span=b"raw")).startswith(
        "claims.0.evidence_span: a value of type bytes"
    )
    assert problem({"subject": b"u1", "text": "x"}).startswith("subject: a value of type bytes")
    assert problem({"subject": "u1", "text": "x\x00"}).startswith("text: contains a NUL")


def test_a_cyclic_value_is_refused_without_recursing_for_ever() -> None:
    cycle: dict[str, Any] = {}
    cycle["self"] = cycle
    assert "nested more than" in problem(claim_event(cycle))


def test_json_data_is_checked_without_recursion_whatever_the_depth() -> None:
    deep: list[Any] = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(JsonProblem, match="nested more than"):
        check_json(deep, ("value",))
    check_json(nested(JSON_MAX_DEPTH - 1), ("value",))  # one level less is fine


def test_json_data_as_given_passes_and_tuples_are_arrays() -> None:
    value = {"s": "é", "i": -(2**63), "f": 0.5, "b": True, "n": None, "l": [1, "x"], "t": (1, 2)}
    claim = Claim(predicate="p", value=value)
    assert claim.value == value


def test_claims_an_earlier_version_stored_can_still_be_read() -> None:
    """A NUL (SQLite kept it), a float of 1e300 or 40 levels of nesting were stored before
    they were refused: a stored event is read back through `Claim`, and must still read."""
    value = {"v": "a\x00b", "f": 1e300, "deep": nested(40)}
    event = make_event(claims=[{"predicate": "p", "value": value}])
    assert event.claims[0].value == value
    cycle: dict[str, Any] = {}
    cycle["self"] = cycle
    with pytest.raises(ValidationError, match="nested more than 1000 levels"):
        Claim(predicate="p", value=cycle)  # never stored, and never looped over for ever


def test_a_claim_object_given_to_add_is_held_to_the_rules_of_new_input() -> None:
    claim = Claim(predicate="p", value={"v": "a\x00b"})
    said = problem({"subject": "u1", "claims": [claim]})
    assert said.startswith("claims.0.value.v: contains a NUL character")


def test_through_the_api_the_error_is_invalid_input_and_names_the_field(
    make_memory: Callable[..., Memory],
) -> None:
    mem = make_memory()
    for value, where in [
        (nested(500), "claims.0.value"),
        ({"v": {1, 2}}, "claims.0.value.v"),
        ({"v": Opaque()}, "claims.0.value.v"),
        ({"v": float("nan")}, "claims.0.value.v"),
    ]:
        with pytest.raises(InvalidInput, match=f"^event 0: {re.escape(where)}: "):
            mem.add_event(subject="u1", claims=[{"predicate": "p", "value": value}])
    assert mem.status().counts.events == 0


# -- keys of a claim -------------------------------------------------------------------------------
def test_a_misspelt_claim_key_is_refused_naming_the_key_and_the_likely_one() -> None:
    said = claim_event({"v": 1}, vaild_from="2024-01-01T00:00:00Z")
    assert problem(said).startswith(
        "claims.0.vaild_from: not a claim field (did you mean 'valid_from'?)"
    )
    assert problem({"subject": "u1", "text": "x", "ocurred_at": "2024"}).startswith(
        "ocurred_at: Extra inputs are not permitted"
    )


def test_a_model_answer_may_carry_keys_a_claim_ignores() -> None:
    answer = '[{"predicate": "bike_count", "value": {"n": 3}, "reasoning": "said so"}]'
    parsed = parse_answer(answer)
    assert Claim.model_validate(parsed[0]) == Claim(predicate="bike_count", value={"n": 3})


def test_an_exported_event_line_is_a_valid_event_to_add() -> None:
    event = make_event(claims=[Claim(predicate="bike_count", value={"count": 3}, valid_from=NOW_T)])
    line = json.loads(json.dumps(event_line(event)))
    fields = {k: v for k, v in line.items() if k not in ("type", "id")}
    assert EventIn.model_validate(fields).claims == event.claims


# -- size ------------------------------------------------------------------------------------------
def test_one_limit_bounds_the_whole_event() -> None:
    text = "t" * 20_000
    fits = "x" * (EVENT_MAX_BYTES - 21_000)
    EventIn.model_validate({"subject": "u1", "text": text, **claim_event({"v": fits})})
    said = problem({"subject": "u1", "text": text, **claim_event({"v": fits + "x" * 2_000})})
    assert re.match(rf"event: [\d,]+ bytes as JSON, over the limit of {EVENT_MAX_BYTES:,}", said)
    many = [{"predicate": f"p{i}", "value": {"v": "x" * 1_000}} for i in range(300)]
    assert "over the limit" in problem({"subject": "u1", "claims": many})


# -- times -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "when", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00", "0001-01-01T00:30:00+00:45"]
)
def test_a_time_with_no_instant_in_utc_is_refused(when: str) -> None:
    says = f"{datetime.fromisoformat(when).isoformat()} has no instant in UTC (it falls outside"
    said = problem({"subject": "u1", "text": "x", "occurred_at": when})
    assert said.startswith(f"occurred_at: {says}")
    assert problem(claim_event({"v": 1}, valid_from=when)).startswith(
        f"claims.0.valid_from: {says}"
    )
    assert problem(claim_event({"v": 1}, valid_to=when)).startswith(f"claims.0.valid_to: {says}")


def test_the_ends_of_time_in_utc_are_accepted() -> None:
    for when in ("0001-01-01T00:00:00+00:00", "9999-12-31T23:59:59+00:00"):
        EventIn.model_validate({"subject": "u1", "text": "x", "occurred_at": when})


def test_an_event_time_past_the_margin_is_refused_and_a_claim_time_is_not() -> None:
    far = {"subject": "u1", "text": "x", "occurred_at": "2204-01-01T00:00:00Z"}
    assert problem(far, CONTEXT).startswith(
        "occurred_at: 2204-01-01T00:00:00+00:00 is more than 1 day past the present "
        "(2025-01-01T12:00:00+00:00)"
    )
    EventIn.model_validate(far)  # without a present (a stored event read back): not checked
    soon = {**far, "occurred_at": NOW_T + FUTURE_MARGIN}
    EventIn.model_validate(soon, context=CONTEXT)
    wider = {NOW: NOW_T, FUTURE_MARGIN_KEY: timedelta(days=365 * 200)}
    EventIn.model_validate(far, context=wider)
    claim = claim_event({"v": 1}, valid_from="2204-01-01T00:00:00Z")
    EventIn.model_validate(claim, context=CONTEXT)


def test_memory_refuses_a_negative_or_odd_margin(make_memory: Callable[..., Memory]) -> None:
    with pytest.raises(ConfigurationError, match="future_margin"):
        make_memory(future_margin=timedelta(seconds=-1))
    with pytest.raises(ConfigurationError, match="future_margin"):
        make_memory(future_margin=3600)


# -- names -----------------------------------------------------------------------------------------
def test_subjects_are_trimmed_and_nfc_and_not_blank() -> None:
    assert normalise_subject("  Jose\u0301 ") == "José" == normalise_subject("José")
    spelt = EventIn.model_validate({"subject": "\tJose\u0301\n", "text": "x"})
    assert spelt.subject == "José"
    for blank in (" ", "\t\n", "\u3000\u00a0"):
        assert (
            problem({"subject": blank, "text": "x"}) == "subject: is blank: name whose memory it is"
        )


@pytest.mark.parametrize(
    ("raw", "predicate"),
    [
        ("Bike Count", "bike_count"),
        ("bike-count", "bike_count"),
        ("bikeCount", "bike_count"),
        ("5kPB", "5k_pb"),
        ("prénom", "prénom"),
        ("Pre\u0301nom", "prénom"),
        ("PRÉNOM", "prénom"),
        ("Straße", "strasse"),
        ("nombreDeHermanos", "nombre_de_hermanos"),
        ("город_рождения", "город_рождения"),
        ("好きな 食べ物", "好きな_食べ物"),
        ("हिन्दी नाम", "हिन्दी_नाम"),
        ("__weird -- name__", "weird_name"),
    ],
)
def test_predicates_keep_unicode_letters(raw: str, predicate: str) -> None:
    assert normalise_predicate(raw) == predicate
    assert Claim(predicate=raw, value={"v": 1}).predicate == predicate


def test_a_unicode_predicate_no_longer_collides_with_its_ascii_mangling() -> None:
    assert normalise_predicate("prénom") != normalise_predicate("pr_nom")
    assert name_words("prénom") == {"prénom"}
    assert compare_names("prénom", "pr_nom").relation is NameRelation.DISJOINT
    assert compare_names("prénom_usuel", "prénom").relation is NameRelation.EXTENSION


@pytest.mark.parametrize("raw", ["2024", "___", "١٢٣", "🚲"])
def test_a_predicate_without_letters_is_refused(raw: str) -> None:
    with pytest.raises(ValidationError, match="predicate"):
        Claim(predicate=raw, value={"v": 1})


# -- the JSONL reader and the flags ----------------------------------------------------------------
def write(tmp_path: Path, *lines: str | bytes) -> Path:
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"".join((x if isinstance(x, bytes) else x.encode()) + b"\n" for x in lines))
    return path


GOOD = json.dumps({"subject": "u1", "text": "fine"})


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ('{"subject":"u1","claims":[{"predicate":"x","value":{"v":NaN}}]}', "claims.0.value.v"),
        ('{"subject":"u1","claims":[{"predicate":"x","value":{"v":1e400}}]}', "claims.0.value.v"),
        ('{"subject":"u1","claims":[{"predicate":"x","value":{"v":-Infinity}}]}', "value.v"),
        ('{"subject":"u1","text":"a\\u0000b"}', "text: contains a NUL character"),
        ('{"subject":"u1","text":"x","occurred_at":"2204-01-01T00:00:00Z"}', "more than 1 day"),
        ('{"subject":"u1","text":"x","occurred_at":"0001-01-01T00:00:00+01:00"}', "no instant"),
        ('{"subject":"u1","claims":[{"predicate":"x","value":{},"vaild_to":"2024"}]}', "vaild_to"),
        (json.dumps(claim_event(nested(500))), "nested more than"),
        ("[" * 100_000 + "]" * 100_000, "not JSON (nested too deeply)"),
        ('{"subject":"u1","text":"x","n":' + "1" * 5000 + "}", "an integer of more than 4300"),
        ('{"subject":"   ","text":"x"}', "subject: is blank"),
    ],
)
def test_a_refused_line_of_a_file_names_its_number(tmp_path: Path, line: str, says: str) -> None:
    path = write(tmp_path, GOOD, "", line, GOOD)
    with pytest.raises(InvalidInput, match=rf"^{re.escape(str(path))}:3: ") as caught:
        read_jsonl(path)
    assert says in str(caught.value)
    assert str(caught.value).endswith("nothing was added")


def test_invalid_utf8_names_the_line_and_the_byte(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD, b'{"subject": "u1", "text": "\xff\xfe"}')
    with pytest.raises(InvalidInput) as caught:
        read_jsonl(path)
    assert str(caught.value) == (
        f"{path}:2: not UTF-8 (byte 0xff at byte 28 of the line); nothing was added"
    )


def test_the_reader_checks_times_against_the_margin_it_is_given(tmp_path: Path) -> None:
    soon = (datetime.now(UTC) + timedelta(hours=30)).isoformat()
    path = write(tmp_path, json.dumps({"subject": "u1", "text": "x", "occurred_at": soon}))
    with pytest.raises(InvalidInput, match=":1: invalid event \\(occurred_at: "):
        read_jsonl(path)
    assert len(read_jsonl(path, future_margin=timedelta(days=2))) == 1


def test_the_reader_reports_progress_in_lines(tmp_path: Path) -> None:
    path = write(tmp_path, *[GOOD] * 1_200)
    seen: list[int] = []
    assert len(read_jsonl(path, progress=seen.append)) == 1_200
    assert seen == [500, 1_000]


def test_a_claim_flag_too_deep_or_too_long_is_an_error_not_a_traceback() -> None:
    fields: dict[str, Any] = {"subject": "u1", "text": "", "claims": ()}
    with pytest.raises(InvalidInput, match="--claim is not JSON: nested too deeply"):
        event_from_flags({**fields, "claims": ("[" * 100_000 + "]" * 100_000,)})
    with pytest.raises(InvalidInput, match="--claim is not JSON: an integer of more than"):
        event_from_flags({**fields, "claims": ('{"v": ' + "9" * 5000 + "}",)})
    deep = json.dumps({"predicate": "p", "value": nested(500)})
    flagged = event_from_flags({**fields, "claims": (deep,)})
    with pytest.raises(ValidationError, match="nested more than"):
        EventIn.model_validate(flagged)


def test_the_margin_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(FUTURE_MARGIN_VARIABLE, raising=False)
    assert future_margin_setting() == FUTURE_MARGIN
    monkeypatch.setenv(FUTURE_MARGIN_VARIABLE, "3600")
    assert future_margin_setting() == timedelta(hours=1)
    for bad in ("-1", "an hour", "nan", "inf", "1e300"):
        monkeypatch.setenv(FUTURE_MARGIN_VARIABLE, bad)
        with pytest.raises(ConfigurationError, match=FUTURE_MARGIN_VARIABLE):
            future_margin_setting()


def test_a_period_that_ended_before_it_was_told_needs_its_start() -> None:
    """A fact starts at its `valid_from`, else when it was told: "lived in Paris until 2019",
    told in 2024 with no start, would end before it began (an interval no query can serve,
    that still held later values in conflict). It is refused with what to add; with a start,
    or ending after it was told, it is accepted."""
    told = {"occurred_at": "2024-03-01T00:00:00Z"}
    ended = {**claim_event({"city": "Paris"}, valid_to="2019-01-01T00:00:00Z"), **told}
    assert problem(ended, CONTEXT).endswith(
        "claims.0: valid_to (2019-01-01T00:00:00+00:00) is not after the event's time "
        "(2024-03-01T00:00:00+00:00) and no valid_from is given: a period that ended before "
        "it was told needs its start (valid_from)"
    )
    # Without an occurred_at the event is told now: the present is the bound.
    assert "is not after the event's time (2025-01-01T12:00:00+00:00)" in problem(
        claim_event({"city": "Paris"}, valid_to="2024-06-01T00:00:00Z"), CONTEXT
    )
    for fine in (
        claim_event(
            {"city": "Paris"}, valid_to="2019-01-01T00:00:00Z", valid_from="2015-01-01T00:00:00Z"
        ),
        claim_event({"city": "Paris"}, valid_to="2027-01-01T00:00:00Z"),
    ):
        EventIn.model_validate({**fine, **told}, context=CONTEXT)


def test_a_model_candidate_that_ended_before_it_was_told_is_rejected_not_stored() -> None:
    """The same rule for an extractor's candidates, one at a time: the bad one is a rejection
    with its reason, the others go on."""
    event = make_event(text="I lived in Paris until 2019 and now live in Lyon")
    raw = [
        {"predicate": "home_city", "value": {"city": "Paris"}, "valid_to": "2000-01-01T00:00:00Z"},
        {"predicate": "home_city", "value": {"city": "Lyon"}},
    ]
    found = validate_candidates(raw, event, "claims", require_evidence=False)
    assert [c.value for c, _ in found.claims] == [{"city": "Lyon"}]
    [rejected] = found.rejections
    assert rejected.reason == "invalid_candidate"
    assert "needs its start (valid_from)" in rejected.detail
