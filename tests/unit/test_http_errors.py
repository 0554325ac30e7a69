"""The HTTP API's table from Distill's errors to statuses, and what counts as loopback."""

from __future__ import annotations

import inspect

import pytest

from distill import errors
from distill.service.http.errors import classify
from distill.service.http.state import is_loopback_address, is_loopback_host

EVERY_ERROR = [
    cls
    for _, cls in inspect.getmembers(errors, inspect.isclass)
    if issubclass(cls, errors.DistillError)
]


@pytest.mark.parametrize("cls", EVERY_ERROR, ids=lambda c: c.__name__)
def test_every_error_has_a_status_and_a_5xx_hides_its_message(cls: type) -> None:
    status, kind, message = classify(cls("secret detail at /srv/db"))
    assert 400 <= status < 600 and kind
    assert ("secret" in message) == (status < 500)


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (errors.InvalidInput("x"), 422),
        (errors.NotFound("x"), 404),
        (errors.AlreadyResolved("x"), 409),
        (errors.PinnedFact("x"), 409),
        (errors.IntegrityViolation("x"), 409),
        (errors.StoreError("x"), 503),
        (errors.RateLimited("x"), 503),
        (errors.MalformedAnswer("x"), 502),
        (errors.MissingDependency("x"), 500),
    ],
)
def test_bad_input_is_never_a_500(error: errors.DistillError, status: int) -> None:
    assert classify(error)[0] == status


def test_what_counts_as_this_machine() -> None:
    assert all(map(is_loopback_address, ["127.0.0.1", "::1", "[::1]", "localhost", "127.0.0.2"]))
    assert not any(map(is_loopback_address, ["0.0.0.0", "::", "10.0.0.1", "example.com"]))
    assert all(map(is_loopback_host, ["127.0.0.1:8420", "localhost", "[::1]:80", "LOCALHOST"]))
    assert not any(map(is_loopback_host, ["rebind.example", "127.0.0.1.nip.io:80", ""]))
