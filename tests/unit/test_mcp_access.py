"""How `distill mcp` over HTTP reads a request's key and answers a refusal (the decisions on
real keys are tested through the server itself, in tests/acceptance/test_mcp_http.py)."""

from __future__ import annotations

import json

from distill.service.mcp_access import INVALID_KEY, MISSING_KEY, token_of


def headers(**named: str) -> list[tuple[bytes, bytes]]:
    return [(k.replace("_", "-").encode(), v.encode()) for k, v in named.items()]


def test_the_key_is_read_as_the_http_api_reads_it() -> None:
    assert token_of(headers(Authorization="Bearer dk_a")) == "dk_a"
    assert token_of(headers(authorization="bearer   dk_a ")) == "dk_a"
    assert token_of(headers(X_API_Key="dk_b")) == "dk_b"
    # Bearer wins over X-API-Key, as in the HTTP API.
    assert token_of(headers(Authorization="Bearer dk_a", X_API_Key="dk_b")) == "dk_a"
    # Another scheme, or a bare header, carries no key of ours.
    assert token_of(headers(Authorization="Basic dXNlcjpwYXNz")) is None
    assert token_of(headers(Authorization="Bearer ", X_API_Key=" ")) is None
    assert token_of([]) is None


def test_a_refusal_is_the_http_apis_error_body() -> None:
    for refusal in (MISSING_KEY, INVALID_KEY):
        assert refusal.status == 401
        assert json.loads(refusal.body()) == {
            "error": {"type": "unauthorized", "message": refusal.message}
        }
    assert "distill keys create" in MISSING_KEY.message
